"""The one thread that writes every journal of a kernel.

Why a thread: the engine's loop reads every PTY, and a write to disk can
take milliseconds (a busy disk, a network home) or fail (a full disk); no
write may happen there. asyncio has no non-blocking file I/O, and a thread
per session would be dozens of threads for what one does at disk speed. So
the loop only appends a tuple to a `queue.SimpleQueue` (C, lock-free for the
producer, ~0.2 us) and this thread does the rest: JSON, the writes, the
index, the caps, eviction and deletion. Every file is touched by this thread
alone, so the accounting (bytes per journal and per kernel) needs no lock.

The thread starts with the first item and is joined by `close` (which waits
for everything queued to be written). What the loop queued but this thread
has not written yet is bounded (`MAX_BACKLOG_BYTES`): past it, the loop drops
output instead of growing the kernel's memory, and the journal says so.
Output that arrives in a burst is coalesced into events of at most
`MAX_EVENT_BYTES` (what a terminal shows in one frame anyway), which keeps
the journal, its index and this thread's work small under a flood.
"""

from __future__ import annotations

import concurrent.futures
import errno
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..output.utf8 import boundary_at_or_before
from . import format as cast
from .index import INDEX_SUFFIX, MARKS_SUFFIX, RECORD, mark_line

if TYPE_CHECKING:
    from .resume import JournalEnd

log = logging.getLogger(__name__)

MAX_BACKLOG_BYTES = 64 * 1024 * 1024
MAX_EVENT_BYTES = 64 * 1024
# This thread holds the GIL while it encodes; the loop that reads the PTYs waits for it
# meanwhile (a full PTY stops its program). So it works in short stretches: at most this
# many items a round, and a write (which lets the GIL go) after each full event.
MAX_ITEMS = 256
COALESCE_US = 20_000
DISK_FULL = "the disk is full"
# A disk that refused an event takes output again only with this much free: room for a whole
# event (escapes make its line longer) with its index and marks. The room a refused event did not
# fit is free again once its write is cut back: under load a burst's tail came as a small event
# of its own (the coalescing window closed mid-burst), fitted there, ended the loss with its
# note, and the next event began another, so one loss read as two.
RESUME_FREE_BYTES = 2 * MAX_EVENT_BYTES
GATHER_IDLE_S = 0.0  # how long an idle writer woken by an item waits for more (a barrier does not wait); off: at 0.02 s reads raced it in CI
FILE_MODE = 0o600


class JournalFile:
    """One session's journal as the writer thread sees it (the loop only queues for it)."""

    def __init__(self, path: str, header: dict, *, monotonic_start: float, session_bytes: int):
        self.path = path
        self.header = header
        self.monotonic_start = monotonic_start
        self.session_bytes = session_bytes
        # Written by the writer thread only; read by others as a hint.
        self.size = 0  # bytes on disk: journal + index + marks
        self.position = 0  # end of the journal file
        self.lines = 0
        self.last_us = 0
        self.commands = 0
        self.dropping: list | None = None  # [offset, bytes, reason] while output is being dropped
        self.drops: list[tuple[int, int, str]] = []  # every finished drop (the marks file has them too)
        self.finished = False  # no more events will come: evictable
        self.removed: str | None = None  # why its files are gone
        self._fds: tuple[int, int, int] | None = None
        # Written by the loop only.
        self.loop_lost: list | None = None  # [offset, bytes] dropped before the queue (backlog full)
        self.resumed: JournalEnd | None = None  # a kept session's journal, written on after a kernel restart

    @classmethod
    def resume(cls, path: str, *, session_bytes: int) -> JournalFile:
        """A journal the last kernel wrote, to be written on from where it ends (resume.py)."""
        from .resume import journal_end  # with the first session taken back, not with every kernel

        end = journal_end(path)
        journal = cls(path, {}, monotonic_start=end.monotonic_start(), session_bytes=session_bytes)
        journal.resumed = end
        return journal

    def us(self, monotonic: float) -> int:
        return max(0, round((monotonic - self.monotonic_start) * 1_000_000))

    @property
    def index_path(self) -> str:
        return self.path + INDEX_SUFFIX

    @property
    def marks_path(self) -> str:
        return self.path + MARKS_SUFFIX


class JournalWriter:
    """Writes queued journal events on its own thread; see the module docstring."""

    def __init__(self, *, kernel_bytes: int, max_backlog_bytes: int = MAX_BACKLOG_BYTES, on_remove: Callable[[JournalFile], None] | None = None):
        self.kernel_bytes = kernel_bytes
        self.max_backlog_bytes = max_backlog_bytes
        self.on_remove = on_remove  # told (on this thread) when a cap evicted a journal
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._urgent = threading.Event()  # somebody waits for the disk (a barrier, the close): no gathering
        self._start_lock = threading.Lock()
        self._journals: list[JournalFile] = []  # oldest first; the writer thread's own
        self.total_bytes = 0
        self.queued_bytes = 0  # written by producers
        self.taken_bytes = 0  # written by the writer thread
        self.closed = False

    # -- any thread ------------------------------------------------------------

    def put(self, item: tuple) -> None:
        if self.closed:
            return
        self._queue.put(item)
        if self._thread is None:
            self._start()

    def output(self, journal: JournalFile, monotonic: float, data: bytes, offset: int) -> None:
        """Queue output; past the backlog bound it is dropped (and the journal will say so)."""
        if self.queued_bytes - self.taken_bytes > self.max_backlog_bytes:
            if journal.loop_lost is None:
                journal.loop_lost = [offset, 0]
            journal.loop_lost[1] += len(data)
            return
        if journal.loop_lost is not None:
            lost, journal.loop_lost = journal.loop_lost, None
            self.put(("lost", journal, lost[0], lost[1], f"the journal's writer fell behind (more than {self.max_backlog_bytes:,} bytes waited for the disk)"))
        self.queued_bytes += len(data)
        self.put(("o", journal, monotonic, data, offset))

    def flushed(self) -> concurrent.futures.Future:
        """A future done once everything queued before this call is on disk (or dropped)."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if self._thread is None or self.closed:
            future.set_result(None)
        else:
            self._queue.put(("barrier", future))
            self._urgent.set()
        return future

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, close every file, end the thread and join it. Blocks: not on a loop."""
        with self._start_lock:
            if self.closed:
                return
            self.closed = True
            thread = self._thread
        if thread is not None:
            done: concurrent.futures.Future = concurrent.futures.Future()
            self._queue.put(("stop", done))
            self._urgent.set()
            thread.join(timeout)
            if thread.is_alive():
                log.warning("uexec: the journal writer did not finish within %ss", timeout)

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self.closed:
                self._thread = threading.Thread(target=self._run, name="uexec-journal", daemon=True)
                self._thread.start()

    # -- the writer thread -----------------------------------------------------

    def _run(self) -> None:
        stop = None
        while stop is None:
            items = [self._queue.get()]
            if items[0][0] not in ("barrier", "stop") and not self._urgent.is_set():
                # Woken from idle: let a moment's items gather (a short command's open, output,
                # exit and close come within milliseconds), so the work and its GIL hand-overs
                # come after, not while, the program and the call that started it run.
                self._urgent.wait(GATHER_IDLE_S)
            self._urgent.clear()
            try:
                while len(items) < MAX_ITEMS:
                    items.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            try:
                stop = self._handle(items)
            except Exception:  # noqa: BLE001 - the thread must outlive any one bad write
                log.exception("uexec: the journal writer failed")
        for journal in self._journals:
            self._finish(journal)
        stop.set_result(None)

    def _handle(self, items: list[tuple]) -> concurrent.futures.Future | None:
        pending: dict[JournalFile, _Batch] = {}
        barriers = []
        stop = None
        for item in items:
            kind = item[0]
            if kind == "barrier":
                barriers.append(item[1])
                continue
            if kind == "stop":
                stop = item[1]
                continue
            journal = item[1]
            if kind == "open":
                self._open(journal)
                continue
            if kind == "o":
                self.taken_bytes += len(item[3])
            if journal.removed is not None:
                continue
            batch = pending.get(journal)
            if batch is None:
                batch = pending[journal] = _Batch(journal)
            if kind == "close" or kind == "delete":
                self._flush(batch)
                del pending[journal]
                if kind == "close":
                    self._finish(journal)
                else:
                    self._remove(journal, item[2])
                continue
            batch.add(item)
            if batch.output_bytes >= MAX_EVENT_BYTES:
                self._flush(batch)
                batch.clear()
        for batch in pending.values():
            self._flush(batch)
        for barrier in barriers:
            barrier.set_result(None)
        return stop

    def _open(self, journal: JournalFile) -> None:
        if journal.resumed is not None:
            self._reopen(journal)
            return
        try:
            fds = tuple(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
                        for path in (journal.path, journal.index_path, journal.marks_path))
        except OSError as error:
            journal.removed = f"its journal could not be created: {error.strerror or error}"
            log.warning("uexec: cannot create the journal %s: %s", journal.path, error)
            return
        journal._fds = fds
        self._journals.append(journal)
        header = cast.header_line(journal.header)
        try:
            os.write(fds[0], header)
        except OSError as error:
            journal.removed = f"its journal could not be written: {error.strerror or error}"
            return
        journal.position = journal.size = len(header)
        self.total_bytes += len(header)

    def _reopen(self, journal: JournalFile) -> None:
        end = journal.resumed
        try:
            fds = tuple(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
                        for path in (journal.path, journal.index_path, journal.marks_path))
        except OSError as error:
            journal.removed = f"its journal could not be opened again: {error.strerror or error}"
            return
        journal._fds = fds
        self._journals.append(journal)
        journal.position, journal.size, journal.lines = end.position, end.size, end.lines
        journal.last_us, journal.commands = end.last_us, end.commands
        self.total_bytes += end.size

    def _flush(self, batch: _Batch) -> None:
        journal = batch.journal
        if journal._fds is None:
            return
        batch.close_output()
        for kind, payload, _, drop in batch.parts:
            if drop is not None:  # a drop before the queue: say it where it happened
                self._drop(journal, *drop)
                continue
            self._write_events(journal, payload)

    def _write_events(self, journal: JournalFile, events: list[tuple]) -> None:
        """Write events (o, r, i, m, x, notes and their marks) as one write per file, within the caps."""
        outputs = [(offset, len(data)) for code, _, data, offset, _ in events if code == "o"]
        text, records, marks = bytearray(), bytearray(), bytearray()
        position, lines, last_us = journal.position, journal.lines, journal.last_us
        ended = None  # the drop whose note heads this write
        if journal.dropping is not None and outputs:
            if self._over_cap(journal, RECORD.size + 2 * outputs[0][1]) is not None or not self._disk_has_room(journal):
                for offset, size in outputs:
                    self._drop(journal, offset, size, journal.dropping[2])
                events = [event for event in events if event[0] != "o"]
            else:
                # Output resumes: the note on what went missing comes first, where it happened, in
                # the same write as the output: a note written alone (small, it fits a full disk's
                # last page) before output that then fails made one note per event, not per loss.
                ended = journal.dropping
                fields = {"offset": ended[0], "bytes": ended[1], "reason": ended[2]}
                text += cast.note_line(cast.NOTE_DROPPED, fields)
                marks += mark_line(kind="dropped", **fields, pos=position, line=lines)
                position += len(text)
        dropped: list[tuple[int, int, str]] = []
        capped: str | None = None
        for code, t_us, data, offset, mark in events:
            if code == "o":
                line = cast.event_line(t_us - last_us, "o", data.decode("utf-8", "replace"))
                if capped is not None:
                    dropped.append((offset, len(data), capped))
                    continue
                used = len(text) + len(records) + len(marks) + RECORD.size
                capped = self._over_cap(journal, len(line) + used)
                if capped is not None:
                    # Keep the part that fits: a cap keeps the head of the output, to the character.
                    kept = self._fitting(journal, data, t_us - last_us, used)
                    dropped.append((offset + len(kept), len(data) - len(kept), capped))
                    if not kept:
                        continue
                    data = kept
                    line = cast.event_line(t_us - last_us, "o", data.decode("utf-8", "replace"))
                records += RECORD.pack(offset, position, lines, t_us)
                lines += data.count(b"\n")
            elif code == "#":
                line = data  # a note: a comment line, which has no time of its own
            else:
                line = cast.event_line(t_us - last_us, code, data)
            if mark is not None:
                marks += mark_line(**mark, pos=position, line=lines)
            text += line
            position += len(line)
            if code != "#":
                last_us = t_us
        if text and not self._write_all(journal, text, records, marks):
            dropped = [(offset, size, self._disk_reason()) for offset, size in outputs if journal.dropping is None or offset >= journal.dropping[0] + journal.dropping[1]]
        elif text:
            journal.lines, journal.last_us = lines, last_us
            if ended is not None:
                journal.dropping = None
                journal.drops.append(tuple(ended))
        for offset, size, reason in dropped:
            self._drop(journal, offset, size, reason)

    def _fitting(self, journal: JournalFile, data: bytes, interval_us: int, used: int) -> bytes:
        """The longest head of `data` whose event still fits under both caps (whole characters)."""
        room = min(journal.session_bytes - journal.size, self.kernel_bytes - self.total_bytes) - used
        size = room - 32
        for _ in range(6):
            if size <= 0:
                return b""
            size = boundary_at_or_before(data, min(size, len(data)))
            piece = data[:size]
            length = len(cast.event_line(interval_us, "o", piece.decode("utf-8", "replace")))
            if length <= room:
                return piece
            size = size * room // length - 1  # escapes made it longer: shrink in proportion
        return b""

    def _disk_has_room(self, journal: JournalFile) -> bool:
        """Whether a loss to a full disk may end: not on room only a small event fits (`RESUME_FREE_BYTES`)."""
        if journal.dropping[2] != DISK_FULL:
            return True
        try:
            disk = os.fstatvfs(journal._fds[0])
        except OSError:
            return True  # cannot tell: the write says
        free = disk.f_bfree if os.geteuid() == 0 else disk.f_bavail  # root may write the reserved blocks
        return free * disk.f_frsize >= RESUME_FREE_BYTES

    def _disk_reason(self) -> str:
        if self._last_errno == errno.ENOSPC:
            return DISK_FULL
        return f"writing the journal failed ({os.strerror(self._last_errno)})"

    _last_errno = 0

    def _write_all(self, journal: JournalFile, text: bytes, records: bytes, marks: bytes) -> bool:
        """All three writes, or none (each file cut back to where it was): a reader never sees half an event."""
        done: list[tuple[int, int]] = []
        for fd, data in zip(journal._fds, (text, records, marks)):
            if not data:
                continue
            before = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as error:
                self._last_errno = error.errno or errno.EIO
                for undo_fd, size in [*done, (fd, before)]:
                    try:
                        os.ftruncate(undo_fd, size)
                    except OSError:
                        pass
                return False
            done.append((fd, before))
        added = len(text) + len(records) + len(marks)
        journal.position += len(text)
        journal.size += added
        self.total_bytes += added
        return True

    def _over_cap(self, journal: JournalFile, cost: int) -> str | None:
        """None if `cost` more bytes fit; else which cap stops them (after the kernel's cap made what room it could).

        Eviction comes first, for as much as the session's own cap lets this journal take: checking
        the session's cap first returned before it, so a new journal got only what was left (or
        nothing) while old finished ones stayed, and its note blamed the wrong cap."""
        session_room = journal.session_bytes - journal.size
        wanted = max(0, min(cost, session_room))
        if self.total_bytes + wanted > self.kernel_bytes:
            self._evict(wanted)
        kernel_room = self.kernel_bytes - self.total_bytes
        if cost <= session_room and cost <= kernel_room:
            return None
        if kernel_room < session_room:
            return f"the kernel's journals reached their cap (c.UnifiedExec.journal_kernel_bytes = {self.kernel_bytes:,})"
        return f"the session's journal reached its cap (c.UnifiedExec.journal_session_bytes = {journal.session_bytes:,})"

    def _evict(self, cost: int) -> None:
        """Remove finished journals, oldest first, until `cost` more bytes fit under the kernel's cap."""
        for journal in list(self._journals):
            if self.total_bytes + cost <= self.kernel_bytes:
                return
            if journal.finished and journal.removed is None:
                self._remove(journal, f"it was removed to keep this kernel's journals under c.UnifiedExec.journal_kernel_bytes = {self.kernel_bytes:,}")
                if self.on_remove is not None:
                    self.on_remove(journal)

    def _drop(self, journal: JournalFile, offset: int, size: int, reason: str) -> None:
        if journal.dropping is not None and journal.dropping[2] == reason and journal.dropping[0] + journal.dropping[1] <= offset:
            journal.dropping[1] = offset + size - journal.dropping[0]
            return
        if journal.dropping is not None:
            self._end_drop(journal)
        journal.dropping = [offset, size, reason]

    def _end_drop(self, journal: JournalFile) -> bool:
        """Write the note on the drop that just ended; False (still dropping) if the disk refused it."""
        offset, size, reason = journal.dropping
        fields = {"offset": offset, "bytes": size, "reason": reason}
        if not self._write_note(journal, cast.note_line(cast.NOTE_DROPPED, fields), {"kind": "dropped", **fields}):
            return False
        journal.dropping = None
        journal.drops.append((offset, size, reason))
        return True

    def _write_note(self, journal: JournalFile, line: bytes, mark: dict) -> bool:
        # Notes are small and say what went missing: the caps do not apply to them.
        return self._write_all(journal, line, b"", mark_line(**mark, pos=journal.position, line=journal.lines))

    def _finish(self, journal: JournalFile) -> None:
        if journal.dropping is not None and journal._fds is not None:
            self._end_drop(journal)
        journal.finished = True
        if journal._fds is not None:
            for fd in journal._fds:
                os.close(fd)
            journal._fds = None

    def _remove(self, journal: JournalFile, reason: str) -> None:
        self._finish(journal)
        journal.removed = reason
        for path in (journal.path, journal.index_path, journal.marks_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.total_bytes -= journal.size
        journal.size = 0
        if journal in self._journals:
            self._journals.remove(journal)


class _Batch:
    """One journal's share of a drained queue: output runs coalesced, everything in order."""

    def __init__(self, journal: JournalFile):
        self.journal = journal
        self.parts: list[tuple] = []  # ("events", [event...], None, None) | ("lost", None, None, drop)
        self._events: list[tuple] = []
        self._run: list = []  # [t_us, bytearray, offset] of the output event being coalesced
        self.output_bytes = 0  # output taken since the last clear

    def clear(self) -> None:
        """Forget what was flushed (the run being coalesced went with it)."""
        self.parts, self._events, self._run, self.output_bytes = [], [], [], 0

    def add(self, item: tuple) -> None:
        kind, journal = item[0], self.journal
        if kind == "o":
            _, _, monotonic, data, offset = item
            self.output_bytes += len(data)
            t_us = journal.us(monotonic)
            run = self._run
            if run and t_us - run[0] < COALESCE_US and len(run[1]) + len(data) <= MAX_EVENT_BYTES and run[2] + len(run[1]) == offset:
                run[1] += data
            else:
                self.close_output()
                self._run = [t_us, bytearray(data), offset]
            return
        self.close_output()
        if kind == "lost":
            self._close_events()
            self.parts.append(("lost", None, None, item[2:5]))
        elif kind in ("r", "i"):
            self._events.append((kind, journal.us(item[2]), item[3], None, None))
        elif kind == "m":
            _, _, monotonic, label, offset = item
            journal.commands += 1
            t_us = journal.us(monotonic)
            self._events.append(("m", t_us, label, offset, {"kind": "command", "n": journal.commands, "offset": offset, "t": t_us, "text": label}))
        elif kind == "restart":
            _, _, monotonic, label, offset = item
            t_us = journal.us(monotonic)
            self._events.append(("m", t_us, label, offset, {"kind": "restart", "offset": offset, "t": t_us, "text": label}))
        elif kind == "end":
            _, _, monotonic, status, offset = item
            fields = {"command": journal.commands, "exit": status}
            t_us = journal.us(monotonic)
            self._events.append(("#", t_us, cast.note_line(cast.NOTE_COMMAND_END, fields), offset,
                                 {"kind": "end", "n": journal.commands, "offset": offset, "t": t_us, "exit": status}))
        elif kind == "x":
            _, _, monotonic, status, offset = item
            t_us = journal.us(monotonic)
            self._events.append(("x", t_us, str(status if status is not None else ""), offset,
                                 {"kind": "exit", "offset": offset, "t": t_us, "status": status}))

    def close_output(self) -> None:
        if self._run:
            t_us, data, offset = self._run
            self._events.append(("o", t_us, bytes(data), offset, None))
            self._run = []
        self._close_events()

    def _close_events(self) -> None:
        if self._events:
            self.parts.append(("events", self._events, None, None))
            self._events = []
