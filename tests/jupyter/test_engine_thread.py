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


class Recorder:
    """A service that notes where and in what order its hooks run."""

    def __init__(self, log: list):
        self.log = log

    def start(self, loop):
        self.log.append(("start", threading.current_thread().name == THREAD_NAME and asyncio.get_running_loop() is loop))

    async def stop(self):
        self.log.append(("stop", threading.current_thread().name == THREAD_NAME))

    def release(self):
        self.log.append(("release", threading.current_thread().name != THREAD_NAME))


def test_a_service_lives_with_the_loop_each_time_it_runs(engine):
    log = []
    engine.add_service(Recorder(log))
    assert log == []  # nothing starts the loop but its first use
    loop = engine.loop()
    # started before any work handed over
    asyncio.run_coroutine_threadsafe(_note(log, "work"), loop).result(5)
    assert log == [("start", True), ("work", True)]

    async def closing():
        log.append(("closing", True))

    engine.stop(closing)
    assert log[2:] == [("closing", True), ("stop", True), ("release", True)]
    engine.loop()
    assert log[5:] == [("start", True)]  # and again when it starts again


async def test_a_service_added_while_the_loop_runs_starts_at_once_and_stop_async_ends_it(engine):
    log = []
    engine.loop()
    engine.add_service(Recorder(log))
    asyncio.run_coroutine_threadsafe(_note(log, "work"), engine.loop()).result(5)
    assert log == [("start", True), ("work", True)]
    await asyncio.wait_for(engine.stop_async(), 30)
    assert log[2:] == [("stop", True), ("release", True)]


async def _note(log: list, what: str) -> None:
    log.append((what, True))
