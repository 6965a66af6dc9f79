"""The one crossing between the kernel's threads and the engine's loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from unified_exec_kernel.jupyter.bridge import Bridge
from unified_exec_kernel.jupyter.engine_thread import THREAD_NAME

PARENT = contextvars.ContextVar("parent", default=None)  # stands for ipykernel's parent header


@pytest.fixture
def bridge():
    made = Bridge()
    yield made
    made.stop()


def on_engine() -> bool:
    return threading.current_thread().name == THREAD_NAME


async def test_run_does_the_work_on_the_engine_and_answers_on_the_callers_loop(bridge):
    async def work(x):
        await asyncio.sleep(0)
        return x * 2, on_engine()

    assert await bridge.run(work, 21) == (42, True)
    assert await bridge.run(lambda: on_engine()) is True  # a plain function too


async def test_run_carries_the_callers_context(bridge):
    PARENT.set("cell-7")
    assert await bridge.run(PARENT.get) == "cell-7"


async def test_cancelling_the_caller_cancels_the_work_on_the_engine(bridge):
    started, cancelled = threading.Event(), threading.Event()

    async def wait_forever():
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    caller = asyncio.ensure_future(bridge.run(wait_forever))
    await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert await asyncio.get_running_loop().run_in_executor(None, cancelled.wait, 10)


async def test_errors_cross_back_as_they_are(bridge):
    def fail():
        raise KeyError("no such session")

    with pytest.raises(KeyError, match="no such session"):
        await bridge.run(fail)
    with pytest.raises(KeyError):
        bridge.call(fail)


def test_call_waits_for_a_short_lookup_from_another_thread(bridge):
    PARENT.set("widget")
    assert bridge.call(lambda: (on_engine(), PARENT.get())) == (True, "widget")


def test_post_runs_in_order_and_in_the_posters_context(bridge):
    seen, done = [], threading.Event()

    def handle(message):
        seen.append((message, PARENT.get(), on_engine()))

    def from_a_subshell():
        PARENT.set("comm_msg")
        for n in range(3):
            bridge.post(handle, n)
        bridge.post(done.set)

    thread = threading.Thread(target=from_a_subshell)
    thread.start()
    thread.join()
    assert done.wait(10)
    assert seen == [(0, "comm_msg", True), (1, "comm_msg", True), (2, "comm_msg", True)]


def test_post_starts_a_coroutine_function_as_a_task(bridge):
    done = threading.Event()

    async def handler():
        await asyncio.sleep(0)
        done.set()

    bridge.post(handler)
    assert done.wait(10)


async def test_to_kernel_runs_on_the_kernels_loop_in_the_engines_callers_context(bridge):
    kernel_loop = asyncio.get_running_loop()
    arrived = kernel_loop.create_future()

    def show(batch):
        arrived.set_result((batch, asyncio.get_running_loop() is kernel_loop, PARENT.get()))

    PARENT.set("cell-9")

    async def on_the_engine():
        bridge.to_kernel(show, "batch")  # what a cell's display update does

    await bridge.run(on_the_engine)
    assert await asyncio.wait_for(arrived, 10) == ("batch", True, "cell-9")


def test_stop_joins_the_thread_and_the_bridge_can_start_it_again(bridge):
    bridge.call(lambda: None)
    assert bridge.stop() is True and not bridge.engine.running
    assert bridge.call(on_engine) is True


async def test_to_caller_runs_the_callback_on_the_loop_that_asked_in_the_engines_context(bridge):
    deliver = bridge.to_caller()
    arrived = asyncio.get_running_loop().create_future()

    def engine_side():
        PARENT.set("engine-side")
        deliver(lambda: arrived.set_result((threading.current_thread() is threading.main_thread(), PARENT.get())))

    await bridge.run(engine_side)
    assert await asyncio.wait_for(arrived, 10) == (True, "engine-side")


def test_to_caller_drops_what_comes_after_its_loop_closed(bridge):
    async def ask():
        return bridge.to_caller()

    deliver = asyncio.run(ask())  # its loop is closed once this returns
    bridge.call(deliver, lambda: None)  # no error on the engine's thread, nothing to run it
