"""Notice a child's exit without a thread and without polling.

A pidfd becomes readable when the process exits, so the loop watches it like
any other fd and reaps the child then. Where pidfds are missing (old Linux,
other systems) one waiting thread per session does the same.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable

ExitCallback = Callable[[int | None], None]
"""Called once, on the loop, with the exit code (minus the signal if killed; None if lost)."""


def watch_exit(pid: int, loop: asyncio.AbstractEventLoop, on_exit: ExitCallback) -> None:
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        threading.Thread(target=_wait_in_thread, args=(pid, loop, on_exit), daemon=True, name=f"uexec-wait-{pid}").start()
        return

    def on_readable() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        on_exit(_reap(pid, os.WNOHANG))

    loop.add_reader(pidfd, on_readable)


def _wait_in_thread(pid: int, loop: asyncio.AbstractEventLoop, on_exit: ExitCallback) -> None:
    status = _reap(pid, 0)
    try:
        loop.call_soon_threadsafe(on_exit, status)
    except RuntimeError:
        pass  # the loop is closed: nobody is waiting any more


def _reap(pid: int, flags: int) -> int | None:
    try:
        reaped, status = os.waitpid(pid, flags)
    except ChildProcessError:
        return None  # somebody else reaped it; the status is lost
    return os.waitstatus_to_exitcode(status) if reaped else None
