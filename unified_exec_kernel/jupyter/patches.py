"""What must reach into ipykernel's and IPython's internals, in one place, with the version each is for.

`UnifiedExecKernel` (kernel.py) overrides what a subclass can; these are for
what it cannot, and for `%load_ext unified_exec_kernel` in a plain kernel.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable


def end_sessions_on_shutdown(kernel, terminate: Callable[[], None]) -> None:
    """A plain ipykernel (not ours): run `terminate` before its `do_shutdown`.

    ipykernel 6 and 7: `do_shutdown` is the one hook of shutdown and restart;
    7 runs it on the control thread, so `terminate` must be thread-safe.
    """
    original = kernel.do_shutdown

    def do_shutdown(restart):
        terminate()
        return original(restart)

    kernel.do_shutdown = do_shutdown


def reset_last_traceback(_info=None) -> None:
    """ipykernel 7 (checked with 7.4): give its error reply a clean slate before every cell.

    It resets `shell._last_traceback` only on its synchronous path; an
    awaiting cell (ours) that ends in a UsageError (one line, no traceback)
    would otherwise make `do_execute` fail on the missing attribute, or reply
    with an older cell's traceback. Registered for `pre_run_cell`.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell._last_traceback = None


_woken: set[int] = set()


def wake_on_signals() -> None:
    """ipykernel 7.4: let an interrupt reach an idle loop at once.

    ipykernel cancels an awaiting cell from a Python SIGINT handler, which only
    runs when the main thread wakes up; an idle loop sleeps in its selector
    until its next timer (seconds). Any asyncio signal handler installs the
    loop's wakeup fd, so every signal then wakes the selector within
    milliseconds. SIGWINCH is one a kernel (which has no terminal) never
    otherwise gets.
    """
    loop = asyncio.get_running_loop()
    if id(loop) in _woken:
        return
    try:
        loop.add_signal_handler(signal.SIGWINCH, lambda: None)
    except (RuntimeError, ValueError, NotImplementedError):
        return  # not the main thread, or a loop without signal support
    _woken.add(id(loop))
