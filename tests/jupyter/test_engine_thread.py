"""The engine's loop thread: started on first use, one at a time, stopped and joined, startable again."""

from __future__ import annotations

import asyncio
import threading

import pytest

from unified_exec_kernel.jupyter.engine_thread import THREAD_NAME, EngineThread


def engine_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == THREAD_NAME]


@pytest.fixture
def engine():
    thread = EngineThread()
    yield thread
    thread.stop()


def test_the_thread_starts_on_first_use_and_only_once(engine):
    before = len(engine_threads())
    assert not engine.running
    loop = engine.loop()
    assert engine.running and loop.is_running()
    assert engine.loop() is loop
    assert len(engine_threads()) == before + 1


def test_stop_runs_the_closing_work_on_the_loop_then_joins(engine):
    loop = engine.loop()
    seen = []

    async def closing():
        seen.append(asyncio.get_running_loop() is loop and threading.current_thread().name == THREAD_NAME)

    assert engine.stop(closing) is True
    assert seen == [True]
    assert not engine.running and loop.is_closed()


def test_tasks_left_pending_end_cancelled_when_it_stops(engine):
    loop = engine.loop()
    outcome = []

    async def forever():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    asyncio.run_coroutine_threadsafe(forever(), loop)
    started = asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop)
    started.result(5)
    engine.stop()
    assert outcome == ["cancelled"]


def test_it_can_start_again_after_a_stop(engine):
    first = engine.loop()
    engine.stop()
    second = engine.loop()
    assert second is not first and second.is_running()


async def test_stop_async_waits_without_blocking_the_callers_loop(engine):
    engine.loop()
    caller_ran = threading.Event()

    async def closing():
        # Ends only once the caller's loop has run something meanwhile: a
        # stop that blocked that loop would never get here.
        while not caller_ran.is_set():
            await asyncio.sleep(0.005)

    async def mark():
        caller_ran.set()

    marker = asyncio.ensure_future(mark())
    await asyncio.wait_for(engine.stop_async(closing), 30)
    await marker
    assert not engine.running


def test_stopping_an_engine_that_never_started_is_a_no_op(engine):
    assert engine.stop() is True and not engine.running
