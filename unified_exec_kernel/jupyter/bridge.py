"""The one place where work crosses between the kernel's threads and the engine's loop.

Sessions live on the engine's loop (engine_thread.py); cells await on the
kernel's main loop; comm and widget messages arrive on ipykernel's subshell
threads (or the main one). Everything that goes from one to the other goes
through a `Bridge`, so the rules are kept in one file:

- Work is handed over with the caller's `contextvars` context. ipykernel
  keeps a message's parent in a context variable that falls back to the most
  recent request, so work carried with its context publishes under the
  message that caused it (a cell's output lands in that cell); a bare thread
  callback would not.
- A caller's cancellation crosses with the work (`run`): an interrupted cell
  cancels its wait on the engine, and the session lives on.
- What must happen on the kernel's main thread comes back through `to_kernel`:
  ipywidgets has no locks, so a widget's traits change on that thread only,
  and a cell's display is updated there (its handle and IPython's display
  machinery are the main thread's).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .engine_thread import EngineThread

T = TypeVar("T")

CALL_TIMEOUT_S = 30.0
"""A blocking `call` waits at most this long: short lookups only, so a wedged engine is an error, not a hang."""


class Bridge:
    """Hands work to the engine's loop and results back; see the module docstring."""

    def __init__(self, engine: EngineThread | None = None, kernel_loop: Callable[[], asyncio.AbstractEventLoop | None] | None = None):
        """`kernel_loop()`: the kernel's main loop, where `to_kernel` callbacks run (it may exist
        only once the kernel has started); without one, the loop of the first caller of `run`."""
        self.engine = engine or EngineThread()
        self._kernel_loop_of = kernel_loop
        self._first_caller_loop: asyncio.AbstractEventLoop | None = None

    # -- into the engine -------------------------------------------------------

    async def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run `function(*args)` (plain or a coroutine function) on the engine; await it from any loop.

        Cancelling the caller cancels the work on the engine.
        """
        if self.on_engine():
            return await _as_coroutine(function, *args)
        if self._first_caller_loop is None:
            self._first_caller_loop = asyncio.get_running_loop()
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(function, *args), self.engine.loop())
        return await asyncio.wrap_future(future)

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run a short `function(*args)` on the engine and wait for it, from a thread that is not the engine's.

        For the synchronous faces (a widget's constructor, `%uexec_sessions`):
        a lookup of microseconds, never a wait on a program.
        """
        if self.on_engine():
            return function(*args)
        future: concurrent.futures.Future = concurrent.futures.Future()
        context = contextvars.copy_context()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(context.run(function, *args))
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                future.set_exception(error)

        self.engine.loop().call_soon_threadsafe(run)
        return future.result(CALL_TIMEOUT_S)

    def wait(self, function: Callable[..., Any], *args: Any, timeout: float) -> Any:
        """Run `function(*args)` (plain or a coroutine function) on the engine and block this thread until
        it is done: for a thread that may block, never a loop's (the extension's load, before the
        kernel's loop runs)."""
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(function, *args), self.engine.loop())
        return future.result(timeout)

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        """Run `function(*args)` on the engine soon, in the caller's context; from any thread.

        For messages from a front end: the handler returns at once (ipykernel
        calls it synchronously on a subshell's thread), the work happens on
        the engine, and what it publishes carries the message as its parent.
        A coroutine function runs as a task.
        """
        context = contextvars.copy_context()
        loop = self.engine.loop()
        if inspect.iscoroutinefunction(function):
            loop.call_soon_threadsafe(functools.partial(_start_task, loop, function, args), context=context)
        else:
            loop.call_soon_threadsafe(function, *args, context=context)

    def on_engine(self) -> bool:
        return self.engine.running and threading.get_ident() == self.engine.ident

    # -- back to the kernel ----------------------------------------------------

    def to_kernel(self, function: Callable[..., Any], *args: Any) -> None:
        """Run `function(*args)` on the kernel's main loop soon, in the caller's context; from any thread.

        It runs once the main thread is free: a widget's traits and a cell's
        display belong to it. What must not wait for a busy cell (a live
        view's output) is sent from the engine directly instead.
        """
        loop = self.kernel_loop()
        if loop is None or loop.is_closed():
            return  # no kernel loop (yet, or any more): nobody is there to show it
        loop.call_soon_threadsafe(function, *args, context=contextvars.copy_context())

    def to_caller(self) -> Callable[..., None]:
        """A `to_kernel` for the loop that calls this: what a wait shows runs where the wait is awaited.

        A cell awaits on the kernel's loop; a blocking call (`%time %uexec ...`,
        the plain form of notebook/sessions.py) on a loop of its own on the
        same thread, while the kernel's loop waits for it: its display updates
        must run on that loop, or they would arrive after the final one.
        """
        loop = asyncio.get_running_loop()

        def deliver(function: Callable[..., Any], *args: Any) -> None:
            try:
                loop.call_soon_threadsafe(function, *args, context=contextvars.copy_context())
            except RuntimeError:
                pass  # the wait is over and its loop closed: nobody is there to show it

        return deliver

    def kernel_loop(self) -> asyncio.AbstractEventLoop | None:
        loop = self._kernel_loop_of() if self._kernel_loop_of is not None else None
        return loop or self._first_caller_loop

    # -- lifecycle -------------------------------------------------------------

    def stop(self, before: Callable[[], Any] | None = None) -> bool:
        """Run `before()` on the engine, then end its thread and join it (blocks; from a thread that shuts down)."""
        return self.engine.stop(before)

    async def stop_async(self, before: Callable[[], Any] | None = None) -> None:
        """`stop` from a coroutine on another loop, without blocking that loop."""
        await self.engine.stop_async(before)


async def _as_coroutine(function: Callable[..., Any], *args: Any) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _start_task(loop: asyncio.AbstractEventLoop, function, args) -> None:
    task = loop.create_task(function(*args))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


_tasks: set[asyncio.Task] = set()  # posted coroutines, kept alive until done
