"""A SIGTERM to the kernel closes every session the graceful way, then ends the kernel as SIGTERM would.

ipykernel installs no SIGTERM handler: the kernel dies at once and neither
its shutdown hook nor `atexit` runs. The guardian (core/guardian.py) would
still end the sessions, but this gives their programs the hangup and grace
from the kernel itself, and works with `c.UnifiedExec.guardian = False`.

Why a plain `signal.signal` handler rather than `loop.add_signal_handler`:
the loop's callback only runs once the loop is free, so a kernel busy in a
synchronous cell (`time.sleep(100)`, a long computation) would ignore SIGTERM
until the cell ended. A Python handler runs at the main thread's next
bytecode, busy or idle (an idle selector wakes up on the signal). It ends the
sessions as the `do_shutdown` hook does (`terminate_all_threadsafe`: by pid,
touching no loop state; it blocks for at most the grace, while the process
ends), then restores the default and raises SIGTERM again: the kernel's exit
status still says SIGTERM, as supervisors and jupyter_client saw before.

One limit, CPython's: Python handlers run on the main thread only, and a
signal that lands on another thread while the main thread sits in a long
blocking call (a cell's `time.sleep(600)`) may wait for that call to return.
jupyter_client then escalates to SIGKILL, and the guardian ends the sessions.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

GRACE_S = 1.0
"""How long session programs get after the hangup before SIGKILL (as closing a session)."""
_ATTR = "_uexec_sigterm_handler"


def close_sessions_on_sigterm(ipython, manager, also: Callable[[], None] | None = None) -> None:
    """Install the handler, unless the process already has its own SIGTERM handler.

    `also()`: what else must not outlive the kernel (the direct channel's socket file).
    """
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return  # somebody chose what SIGTERM does here: theirs wins

    owner = os.getpid()

    def on_sigterm(_signum, _frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the kernel at once
        if os.getpid() != owner:  # a forked child (multiprocessing's terminate()): it ends as by default, alone
            os.kill(os.getpid(), signal.SIGTERM)
            return
        try:
            if also is not None:
                also()
            manager.terminate_all_threadsafe(grace=GRACE_S)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
            os._exit(128 + signal.SIGTERM)  # only if SIGTERM is blocked in every thread

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:
        return  # not the main thread: nothing can be installed
    setattr(ipython, _ATTR, on_sigterm)


def restore_sigterm(ipython) -> None:
    """Undo `close_sessions_on_sigterm` (the extension is unloaded)."""
    handler = getattr(ipython, _ATTR, None)
    if handler is None:
        return
    setattr(ipython, _ATTR, None)
    if signal.getsignal(signal.SIGTERM) is handler:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
