"""One program in a pseudo-terminal, driven from the running asyncio loop.

The session owns the master fd from spawn to `close`, and nothing else may
close it. Output is read with `loop.add_reader` (no thread, no polling),
decoded once as UTF-8 so a character split across reads survives, and fanned
out to: the request sink while a request waits (else the drop-oldest request
buffer), the scrollback, and live subscribers, each of which sees every byte
once and in order. Writes are queued and flushed with `add_writer`, so a huge
paste never blocks the loop. The child's exit is noticed through a pidfd,
again without a thread.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from . import procs
from .buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES, OutputBuffer, utf8_len
from .errors import WriteToStdinError
from .spawn import get_winsize, set_winsize, spawn_pty

log = logging.getLogger(__name__)

SCROLLBACK_BYTES = 256 * 1024
# After the program exits, a grandchild may still hold the terminal open, so
# EOF may never come: the output counts as drained once it has been quiet
# this long.
EXIT_GRACE_S = 0.1
CLOSE_GRACE_S = 1.0
# One callback reads until EAGAIN (a PTY gives ~4 KB a read), but not forever:
# other sessions and the kernel's own work must get their turn.
_READ_SIZE = 64 * 1024
_MAX_READS_PER_CALLBACK = 16

Subscriber = Callable[[str, int, int], None]
"""Called with (text, offset, end): its UTF-8 byte range in the session's whole output."""


class PtySession:
    """A running program and its terminal; see the module docstring."""

    def __init__(
        self,
        session_id: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        rows: int = 24,
        cols: int = 80,
        buffer_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES,
        scrollback_bytes: int = SCROLLBACK_BYTES,
        backend: str = "auto",
    ):
        self.session_id = session_id
        self.argv = list(argv)
        self.started = time.time()
        self.exit_code: int | None = None
        self.offset = 0
        self.buffer = OutputBuffer(buffer_bytes)
        self.scrollback = OutputBuffer(scrollback_bytes)
        self._loop = asyncio.get_running_loop()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._sink: Callable[[str], None] | None = None
        self._subscribers: list[Subscriber] = []
        self._exit_callbacks: list[Callable[[PtySession], None]] = []
        self._pending_writes: deque[memoryview] = deque()
        self._exited = False
        self._eof = False
        self._finished = asyncio.Event()
        self._grace_timer: asyncio.TimerHandle | None = None
        self._closing: asyncio.Future[None] | None = None
        self._released = False

        spawned = spawn_pty(self.argv, env, rows, cols, backend)
        self.pid = spawned.pid
        self._fd = spawned.master_fd
        self._loop.add_reader(self._fd, self._on_readable)
        self._watch_exit()

    # -- state ---------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self._exited

    @property
    def finished(self) -> bool:
        """The program has exited and its output is drained (or quiet past the grace)."""
        return self._finished.is_set()

    async def wait_finished(self) -> None:
        await self._finished.wait()

    @property
    def size(self) -> tuple[int, int]:
        if self._released:
            return (0, 0)
        return get_winsize(self._fd)

    # -- output --------------------------------------------------------------

    def set_sink(self, sink: Callable[[str], None] | None) -> None:
        """Route output to a waiting request instead of the buffer (None: back to the buffer)."""
        self._sink = sink

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Receive all output from now on; returns the function that stops it."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def scrollback_snapshot(self) -> tuple[int, str]:
        """The kept scrollback and the offset of its first byte."""
        return self.offset - self.scrollback.total_bytes, self.scrollback.text()

    def add_exit_callback(self, callback: Callable[[PtySession], None]) -> None:
        """Called once the program has exited and its output is drained."""
        if self.finished:
            self._loop.call_soon(callback, self)
        else:
            self._exit_callbacks.append(callback)

    def _on_readable(self) -> None:
        reads = []
        eof = False
        for _ in range(_MAX_READS_PER_CALLBACK):
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                break
            except OSError:
                # Linux answers EIO once every slave fd is closed: that is EOF.
                eof = True
                break
            if not data:
                eof = True
                break
            reads.append(data)
        if reads:
            self._emit(self._decoder.decode(b"".join(reads)))
        if eof:
            self._on_eof()
        elif reads and self._exited:
            self._restart_grace()

    def _emit(self, text: str) -> None:
        if not text:
            return
        nbytes = utf8_len(text)
        start = self.offset
        self.offset += nbytes
        self.scrollback.push_chunk(text, nbytes)
        if self._sink is not None:
            self._sink(text)
        else:
            self.buffer.push_chunk(text, nbytes)
        for subscriber in list(self._subscribers):
            try:
                subscriber(text, start, self.offset)
            except Exception:
                log.exception("uexec: a subscriber of session %s failed", self.session_id)

    def _on_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        self._emit(self._decoder.decode(b"", final=True))
        self._loop.remove_reader(self._fd)
        self._maybe_finish()

    # -- exit ----------------------------------------------------------------

    def _watch_exit(self) -> None:
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            # No pidfd (old kernel, not Linux): one waiting thread per session.
            threading.Thread(target=self._wait_in_thread, daemon=True, name=f"uexec-wait-{self.pid}").start()
            return

        def on_pidfd() -> None:
            self._loop.remove_reader(pidfd)
            os.close(pidfd)
            self._on_exit(self._reap(os.WNOHANG))

        self._loop.add_reader(pidfd, on_pidfd)

    def _wait_in_thread(self) -> None:
        status = self._reap(0)
        try:
            self._loop.call_soon_threadsafe(self._on_exit, status)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting any more

    def _reap(self, flags: int) -> int | None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            return None  # somebody else reaped it; the status is lost
        return os.waitstatus_to_exitcode(status) if pid else None

    def _on_exit(self, exit_code: int | None) -> None:
        self._exited = True
        self.exit_code = exit_code
        if self._eof:
            self._maybe_finish()
        else:
            self._restart_grace()

    def _restart_grace(self) -> None:
        if self._grace_timer is not None:
            self._grace_timer.cancel()
        self._grace_timer = self._loop.call_later(EXIT_GRACE_S, self._on_grace)

    def _on_grace(self) -> None:
        self._grace_timer = None
        self._finish()

    def _maybe_finish(self) -> None:
        if self._exited and self._eof:
            self._finish()

    def _finish(self) -> None:
        if self._finished.is_set():
            return
        if self._grace_timer is not None:
            self._grace_timer.cancel()
            self._grace_timer = None
        self._finished.set()
        callbacks, self._exit_callbacks = self._exit_callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                log.exception("uexec: an exit callback of session %s failed", self.session_id)

    # -- input ---------------------------------------------------------------

    def write(self, data: str | bytes) -> None:
        """Queue `data` for the terminal; never blocks. Raises WriteToStdinError if it cannot."""
        if self._exited or self._released:
            raise WriteToStdinError(self.session_id, ProcessLookupError("the process has exited"))
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if not data:
            return
        was_idle = not self._pending_writes
        self._pending_writes.append(memoryview(data))
        if was_idle:
            try:
                self._flush_writes()
            except OSError as error:
                self._pending_writes.clear()
                raise WriteToStdinError(self.session_id, error) from error

    def _flush_writes(self) -> None:
        while self._pending_writes:
            chunk = self._pending_writes[0]
            try:
                written = os.write(self._fd, chunk)
            except BlockingIOError:
                self._loop.add_writer(self._fd, self._on_writable)
                return
            if written < len(chunk):
                self._pending_writes[0] = chunk[written:]
            else:
                self._pending_writes.popleft()
        self._loop.remove_writer(self._fd)

    def _on_writable(self) -> None:
        try:
            self._flush_writes()
        except OSError as error:
            # The program went away with input still queued: nobody can read it.
            log.debug("uexec: session %s dropped queued input: %s", self.session_id, error)
            self._pending_writes.clear()
            self._loop.remove_writer(self._fd)

    @property
    def pending_write_bytes(self) -> int:
        return sum(len(chunk) for chunk in self._pending_writes)

    # -- control -------------------------------------------------------------

    def resize(self, rows: int, cols: int) -> None:
        if not (1 <= rows <= 1000 and 1 <= cols <= 1000):
            raise ValueError(f"terminal size must be 1..1000 rows and columns, not {rows}x{cols}")
        if not self._released:
            set_winsize(self._fd, rows, cols)  # the kernel sends SIGWINCH itself

    def send_signal(self, sig: int) -> None:
        """Signal the terminal's foreground process group, as a key like Ctrl-C would."""
        if self._exited:
            raise ProcessLookupError(f"session {self.session_id} has exited")
        try:
            group = os.tcgetpgrp(self._fd)
        except OSError:
            group = self.pid
        os.killpg(group, sig)

    async def close(self, grace: float = CLOSE_GRACE_S) -> None:
        """End every process of the session (hangup, then kill) and release the terminal."""
        if self._closing is None:
            self._closing = self._loop.create_future()
            try:
                # After EOF no process holds the terminal: a closing terminal hangs
                # up nobody, and what was detached from it (nohup) lives on, as it
                # would in a real terminal. Only a terminal still held needs ending.
                if not (self._exited and self._eof):
                    await self._terminate(grace)
            finally:
                self._release()
                self._closing.set_result(None)
        else:
            await asyncio.shield(self._closing)

    async def _terminate(self, grace: float) -> None:
        # Only live members are signalled: a reaped leader's pid may already
        # belong to somebody else.
        members = procs.session_members([self.pid])[self.pid]
        procs.signal_pids(members, procs.HANGUP_SIGNALS)
        deadline = self._loop.time() + grace
        delay = 0.005
        while members and self._loop.time() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
            members = procs.session_members([self.pid])[self.pid]
        for _ in range(20):
            if not members:
                break
            procs.signal_pids(members, [signal.SIGKILL])
            await asyncio.sleep(0.01)
            members = procs.session_members([self.pid])[self.pid]
        if not self._exited:
            # The pidfd callback reaps the leader; a SIGKILLed process goes promptly.
            waiter = asyncio.ensure_future(self._finished.wait())
            try:
                await asyncio.wait_for(waiter, timeout=1.0)
            except asyncio.TimeoutError:
                log.warning("uexec: session %s (pid %s) did not exit", self.session_id, self.pid)

    def _release(self) -> None:
        if self._released:
            return
        self._released = True
        if self._grace_timer is not None:
            self._grace_timer.cancel()
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self._pending_writes.clear()
        os.close(self._fd)
        # If the leader has not been reaped yet, the exit watcher still holds
        # its pidfd and finishes the session when it goes.
        self._eof = True
        if self._exited:
            self._finish()


def terminate_sessions(leader_pids: Sequence[int], grace: float = 0.2) -> None:
    """Hang up, then kill, every process of these sessions. Blocking: never call it on the loop."""
    members = procs.session_members(leader_pids)
    for pids in members.values():
        procs.signal_pids(pids, procs.HANGUP_SIGNALS)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        members = procs.session_members(leader_pids)
        if not any(members.values()):
            return
        time.sleep(0.01)
    for _ in range(10):
        members = procs.session_members(leader_pids)
        survivors = [pid for pids in members.values() for pid in pids]
        if not survivors:
            return
        procs.signal_pids(survivors, [signal.SIGKILL])
        time.sleep(0.01)
