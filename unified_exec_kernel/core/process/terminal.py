"""The master side of a session's pseudo-terminal, read and written on the loop.

It owns the master fd from spawn to `release`, and nothing else may close it.
Reading uses `loop.add_reader` (no thread, no polling) and drains until EAGAIN
in each callback, because a PTY gives ~4 KB a read and one read per callback
costs a quarter of the throughput. Writes are queued and flushed with
`add_writer`, so a huge paste never blocks the loop.

The master is in packet mode (TIOCPKT): each read starts with a status
byte, so the terminal says exactly when the program's output is stopped by
XOFF (Ctrl+S, with IXON on) and started again (Ctrl+Q): `stopped`, and
`on_flow` is called on each change. The status costs a slice per read
(~64 KiB), nothing per byte.

Reading can be paused (counted: every `pause_reading` needs its
`resume_reading`), which is how a reader slower than the program paces it:
the PTY's buffer fills and the program's next write blocks, as under a
terminal window that draws slowly. Writing goes on meanwhile (a Ctrl-C
still reaches the program).

A kept session (keeper.py) is read from a socket its keeper relays the
master's output to (`output_fd`), while keys and sizes still go to the
master itself; `raw_read` counts what was read, in the keeper's terms.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import struct
import termios
from collections import deque
from collections.abc import Callable

from .spawn import get_winsize, set_winsize
from ..output.utf8 import Utf8Stream

log = logging.getLogger(__name__)

_READ_SIZE = 64 * 1024
# Read until EAGAIN, but not forever: other sessions and the kernel's own
# work must get their turn.
_MAX_READS_PER_CALLBACK = 16
# Packet mode's status byte: 0 before data; else a control packet of flags.
_TIOCPKT = getattr(termios, "TIOCPKT", 0x5420)
_TIOCPKT_STOP = 0x04
_TIOCPKT_START = 0x08


class Terminal:
    __slots__ = (
        "_fd", "_out", "_loop", "_on_output", "_on_eof", "_utf8", "_pending_writes", "eof", "released", "_size_at_release", "_pauses",
        "_packets", "stopped", "_on_flow", "raw_read",
    )

    def __init__(
        self,
        master_fd: int,
        *,
        on_output: Callable[[bytes], None],
        on_eof: Callable[[], None],
        on_flow: Callable[[bool], None] | None = None,
        output_fd: int | None = None,
        raw_read: int = 0,
    ):
        """`on_flow(stopped)`: the program's output was stopped (XOFF) or started again.
        `output_fd`: read the output there, not from the master (a kept session's keeper relays it);
        `raw_read`: how much of it came before (the keeper's count)."""
        self._fd = master_fd
        self._out = master_fd if output_fd is None else output_fd
        self.raw_read = raw_read
        self.stopped = False
        self._on_flow = on_flow
        self._packets = False
        if output_fd is None:  # packet mode changes what the master's reader gets: only ours
            try:
                fcntl.ioctl(master_fd, _TIOCPKT, struct.pack("i", 1))
                self._packets = True
            except OSError:  # not a Linux-like PTY: no flow status, plain reads
                pass
        self._loop = asyncio.get_running_loop()
        self._on_output = on_output
        self._on_eof = on_eof
        self._utf8 = Utf8Stream()
        self._pending_writes: deque[memoryview] = deque()
        self.eof = False
        self.released = False
        self._pauses = 0
        self._loop.add_reader(self._out, self._on_readable)

    # -- output ----------------------------------------------------------------

    def read_pending(self) -> None:
        """Read what the terminal already holds, now (as if the loop had said it was readable); not while paused."""
        if not self.eof and not self._pauses:
            self._on_readable()

    @property
    def paused(self) -> bool:
        return self._pauses > 0

    def pause_reading(self) -> None:
        """Read nothing more until `resume_reading` has been called as often as this."""
        self._pauses += 1
        if self._pauses == 1 and not self.eof:
            self._loop.remove_reader(self._out)

    def resume_reading(self) -> None:
        if not self._pauses:
            raise RuntimeError("resume_reading without pause_reading")
        self._pauses -= 1
        if not self._pauses and not self.eof:
            self._loop.add_reader(self._out, self._on_readable)

    def _on_readable(self) -> None:
        reads = []
        eof = False
        for _ in range(_MAX_READS_PER_CALLBACK):
            try:
                data = os.read(self._out, _READ_SIZE)
            except BlockingIOError:
                break
            except OSError:
                eof = True  # Linux answers EIO once every slave fd is closed
                break
            if not data:
                eof = True
                break
            if self._packets:
                if data[0]:
                    self._control(data[0])
                    continue
                data = memoryview(data)[1:]
            reads.append(data)
        if reads:
            data = b"".join(reads)
            self.raw_read += len(data)
            self._emit(self._utf8.feed(data))
        if eof:
            self._end_of_output()

    def _control(self, status: int) -> None:
        stopped = bool(status & _TIOCPKT_STOP) or (self.stopped and not status & _TIOCPKT_START)
        if stopped != self.stopped:
            self.stopped = stopped
            if self._on_flow is not None:
                self._on_flow(stopped)

    def _emit(self, data: bytes) -> None:
        if data:
            self._on_output(data)

    def _end_of_output(self) -> None:
        if self.eof:
            return
        self.eof = True
        self._emit(self._utf8.feed(b"", final=True))
        self._loop.remove_reader(self._out)
        self._on_eof()

    # -- input -----------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Queue `data`; never blocks. Raises OSError when the terminal refuses it."""
        if not data:
            return
        was_idle = not self._pending_writes
        self._pending_writes.append(memoryview(data))
        if was_idle:
            try:
                self._flush_writes()
            except OSError:
                self._pending_writes.clear()
                raise

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
            log.debug("uexec: dropped queued input: %s", error)
            self._pending_writes.clear()
            self._loop.remove_writer(self._fd)

    @property
    def holding(self) -> bool:
        """Part of a character was read and waits for the rest."""
        return self._utf8.holding

    @property
    def pending_write_bytes(self) -> int:
        return sum(len(chunk) for chunk in self._pending_writes)

    # -- control ---------------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        return self._size_at_release if self.released else get_winsize(self._fd)

    def resize(self, rows: int, cols: int) -> None:
        if not self.released:
            set_winsize(self._fd, rows, cols)  # the kernel sends SIGWINCH itself

    def foreground_group(self) -> int | None:
        """The process group a key like Ctrl-C would signal."""
        try:
            return os.tcgetpgrp(self._fd)
        except OSError:
            return None

    def reads_keys(self) -> bool:
        """Whether the program at the terminal reads it key by key or without echo.

        A shell's line editor, a REPL, ssh, an editor switch canonical mode off;
        a password prompt switches echo off. A command that is merely busy
        leaves the terminal as the shell set it for commands: canonical, echoing.
        """
        try:
            local_modes = termios.tcgetattr(self._fd)[3]
        except (OSError, termios.error):
            return False
        return not (local_modes & termios.ICANON and local_modes & termios.ECHO)

    def read_master(self) -> None:
        """Read the master itself from now on: a kept session whose keeper is gone (what it relayed is read first)."""
        if self.released or self._out == self._fd:
            return
        while not self.eof:  # what the keeper sent before it went
            before = self.raw_read
            self._on_readable()
            if self.raw_read == before:
                break
        if not self.eof and not self._pauses:
            self._loop.remove_reader(self._out)
        os.close(self._out)
        self._out = self._fd
        self.eof = False
        if not self._pauses:
            self._loop.add_reader(self._out, self._on_readable)

    def release(self) -> None:
        """Stop reading and writing and close the master fd (once)."""
        if self.released:
            return
        # What the program last drew on, for a last screen shown after its end.
        try:
            self._size_at_release = get_winsize(self._fd)
        except OSError:
            self._size_at_release = (0, 0)
        self.released = True
        self.eof = True
        self._loop.remove_reader(self._out)
        self._loop.remove_writer(self._fd)
        self._pending_writes.clear()
        os.close(self._fd)
        if self._out != self._fd:
            os.close(self._out)
