"""What must reach into ipykernel's and IPython's internals, in one place, with the version each is for.

`UnifiedExecKernel` (kernel.py) overrides what a subclass can; these are for
what it cannot, and for `%load_ext unified_exec_kernel` in any kernel.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sys
from collections.abc import Callable


def end_sessions_on_shutdown(kernel, terminate: Callable[[bool], None] | None) -> None:
    """Run `terminate(restart)` before the kernel's `do_shutdown` (None: nothing any more, unloaded).

    Any kernel, ours too (kernel.py composes the extension and knows nothing of
    its sessions). ipykernel 6 and 7: `do_shutdown` is the one hook of shutdown
    and restart; 7 runs it on the control thread, so `terminate` must be
    thread-safe. Patched once per kernel: a reload replaces `terminate`.
    """
    kernel._uexec_terminate = terminate
    if getattr(kernel, "_uexec_shutdown_patched", False):
        return
    original = kernel.do_shutdown

    def do_shutdown(restart):
        terminate_now = kernel._uexec_terminate
        if terminate_now is not None:
            terminate_now(restart)
        return original(restart)

    kernel.do_shutdown = do_shutdown
    kernel._uexec_shutdown_patched = True


def flush_only_pending_streams(display_pub) -> Callable[[], None]:
    """ipykernel 6.29-7: a display flushes stdout and stderr first, so text printed before it
    shows before it. Each flush is a round trip to the IOPub thread (~0.3 ms on a loaded core)
    even when nothing waits, and a `%%uexec` cell's one display paid two of them: a quarter of
    what it adds to an empty cell. A stream holding unsent text says so (`_flush_pending`, set
    by its `write` on the writing thread before it returns, cleared by its flush), so only such
    a stream is flushed; a stream that is not ipykernel's is flushed as before. Returns the undo.
    """
    if not callable(getattr(display_pub, "_flush_streams", None)):
        return lambda: None

    def _flush_streams() -> None:
        for stream in (sys.stdout, sys.stderr):
            if getattr(stream, "_flush_pending", True) or getattr(stream, "_subprocess_flush_pending", False):
                stream.flush()

    display_pub._flush_streams = _flush_streams

    def undo() -> None:
        if display_pub.__dict__.get("_flush_streams") is _flush_streams:
            del display_pub._flush_streams

    return undo


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


def atomic_message_ids(session) -> None:
    """jupyter_client 8.10: give a kernel's `Session` message ids that threads cannot repeat.

    `Session.msg_id` reads `message_count`, then adds one: two threads
    publishing at once (the engine's live output beside a cell's, or
    ipykernel's subshells) can read the same count and send two messages
    with one id. A C-level counter hands each caller its own number.
    """
    if getattr(type(session), "_uexec_atomic_ids", False):
        return
    counter = itertools.count(session.message_count)

    class AtomicIdSession(type(session)):
        _uexec_atomic_ids = True

        @property
        def msg_id(self) -> str:
            return f"{self.session}_{os.getpid()}_{next(counter)}"

    AtomicIdSession.__name__ = AtomicIdSession.__qualname__ = type(session).__name__
    session.__class__ = AtomicIdSession


def route_by_own_subshell(comm) -> None:
    """ipykernel 7.4: deliver a front end's messages on `comm` to the subshell it sent them on.

    7.4 remembers the subshell of whatever parent the kernel last published
    under on a comm, and routes the front end's later messages on it there,
    overriding the subshell the front end chose. Our handlers run on any
    thread (they hand the work to the engine), so the front end's own choice
    is right, and the remembered one is wrong twice over: a live view's
    output, published under the cell that showed it, would pin keystrokes to
    the main shell (waiting for any busy cell), and a subshell deleted when a
    notebook closes would make every later message fail.
    """
    if hasattr(comm, "_reply_subshell_for"):
        comm._reply_subshell_for = lambda _data, default: default
