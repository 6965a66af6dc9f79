"""The plain form of every call: the same coroutine, run to its end on a loop of its own, on the calling thread.

A cell that awaits (`%uexec` at the top of a cell) runs on the kernel's
loop. Code that cannot await cannot: `%time`, `%timeit` and `%%capture`
compile or run their body themselves (an `await` there is a SyntaxError, or
"This event loop is already running"), a loop calls
`run_line_magic('uexec', ...)`, a script has no loop. There the coroutine
runs on a fresh loop on this thread while the caller's loop (if any) waits:
blocking the kernel's main thread stops no session, since every session is
read on the engine's own thread. Its display updates come back to this loop
(`Bridge.to_caller`), so they run here, in the caller's cell and under the
caller's `capture_output()`, in order, before the final one.

An interrupt (SIGINT on the main thread) cancels the coroutine, as ipykernel
cancels an awaiting cell: the cell's code then stops its wait and reports,
and the session lives on.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end on a new loop on this thread, even while another loop runs here; its result."""
    __tracebackhide__ = True  # IPython: a failing call shows the caller's line, not this plumbing
    outer = asyncio._get_running_loop()
    loop = asyncio.new_event_loop()
    task = loop.create_task(coroutine)
    restore = _cancel_on_sigint(loop, task)
    # The caller's loop is running (we are inside one of its callbacks) but
    # does not run while this one does: asyncio allows one running loop per
    # thread, so it is set aside and put back.
    asyncio._set_running_loop(None)
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None  # interrupted (only an interrupt cancels it), and nothing handled it
    finally:
        restore()
        try:
            _close(loop)
        finally:
            asyncio._set_running_loop(outer)


def _cancel_on_sigint(loop: asyncio.AbstractEventLoop, task: asyncio.Task) -> Callable[[], None]:
    """On the main thread, an interrupt cancels `task`, whatever handler the kernel had; returns the undo.

    A signal may land on any of the kernel's threads; Python runs the handler
    on the main thread once it wakes, and this loop sleeps in its selector. The
    signal's wakeup fd is pointed at a socket the loop reads for as long as it
    runs (the kernel's loop has its own there: put back after).
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    handler = signal.getsignal(signal.SIGINT)
    if handler in (signal.SIG_IGN, None):
        return lambda: None
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    loop.add_reader(reader.fileno(), _drain, reader)
    wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)

    def interrupt(_signum, _frame) -> None:
        task.cancel()

    signal.signal(signal.SIGINT, interrupt)

    def restore() -> None:
        signal.signal(signal.SIGINT, handler)
        signal.set_wakeup_fd(wakeup)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()

    return restore


def _drain(reader: socket.socket) -> None:
    try:
        while reader.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def _close(loop: asyncio.AbstractEventLoop) -> None:
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
