"""A kernel's journals: one per session, found by the session's id or name, kept past its program.

The directory is the kernel's own (0700, made here; its files 0600), passed
in by whoever knows where a kernel keeps runtime files (the Jupyter face
puts it under Jupyter's runtime dir); core knows no Jupyter. A journal lives
until the store closes (the kernel ends: the directory goes, unless asked to
keep it), the user drops it, or the kernel's cap needs its room (finished
journals go first, oldest first). A read of a journal that went says why.

The table is read from any thread (a cell reads while the engine's loop
records), so it has a lock; the files belong to the writer's thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from dataclasses import dataclass, field

from ..errors import MESSAGE_LIMIT, UnifiedExecError, one_line, quoted
from ..process.forks import close_fd, drop_in_child
from ..session import PtySession
from . import format as cast
from .lifetime import JournalDirError, remove_kernel_journals, sweep_dead_kernels
from .recorder import SessionRecorder
from .writer import JournalFile, JournalWriter

DEFAULT_SESSION_BYTES = 256 * 1024 * 1024
DEFAULT_KERNEL_BYTES = 1024 * 1024 * 1024
DIRECTORY_MODE = 0o700


class JournalNotFound(UnifiedExecError, LookupError):
    """No journal answers to this key, or it is gone (the message says why)."""

    name = "UnknownJournal"


@dataclass
class JournalEntry:
    """One session's journal as the store lists it."""

    session_id: int
    name: str | None
    command: list[str]
    file: JournalFile
    started: float
    recorder: SessionRecorder | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def label(self) -> str:
        return self.name if self.name is not None else str(self.session_id)

    @property
    def finished(self) -> bool:
        return self.recorder is None or not self.recorder.recording

    def notes(self) -> list[str]:
        """One line per thing a read should know: output the journal did not keep."""
        lines = [f"{size:,} bytes of output from byte {offset:,} were not kept: {reason}" for offset, size, reason in self.file.drops]
        dropping = self.file.dropping
        if dropping is not None:
            lines.append(f"{dropping[1]:,} bytes of output from byte {dropping[0]:,} were not kept: {dropping[2]}")
        lost = self.file.loop_lost
        if lost is not None:
            lines.append(f"{lost[1]:,} bytes of output from byte {lost[0]:,} were not kept: the journal's writer fell behind")
        return lines


class JournalStore:
    def __init__(
        self,
        directory: str,
        *,
        session_bytes: int = DEFAULT_SESSION_BYTES,
        kernel_bytes: int = DEFAULT_KERNEL_BYTES,
        record_input: bool = False,
        keep: bool = False,
        owner_fd: int | None = None,
    ):
        """`directory`: this kernel's own (lifetime.make_kernel_dir makes it fresh; else made 0700 if
        missing). `record_input`: add `i` events (typed input, passwords included). `keep`: leave
        the directory when the store closes. `owner_fd`: the directory's owner lock, held until then."""
        if session_bytes < 1 or kernel_bytes < 1:
            raise ValueError("journal caps must be at least 1 byte")
        os.makedirs(directory, mode=DIRECTORY_MODE, exist_ok=True)
        if not os.path.isdir(directory) or os.path.islink(directory):
            raise JournalDirError(f"the journal directory {directory} is not a directory")
        os.chmod(directory, DIRECTORY_MODE)
        self.directory = directory
        self._owner_fd = owner_fd
        self._also: list[str] = []  # other directories whose journals are ours (a dead keeper's)
        self.session_bytes = session_bytes
        self.kernel_bytes = kernel_bytes
        self.record_input = record_input
        self.keep = keep
        self.writer = JournalWriter(kernel_bytes=kernel_bytes)
        self._lock = threading.Lock()
        self._by_id: dict[int, JournalEntry] = {}
        self._by_name: dict[str, int] = {}
        self._gone: dict[int | str, str] = {}  # dropped journals: why, by id and name
        self._loop: asyncio.AbstractEventLoop | None = None  # where sessions are recorded
        self.closed = False
        drop_in_child(self)

    def forked_child(self) -> None:
        """A forked child holds neither the directory's owner lock (a sweep must see the owner's end)
        nor the journals: its exit removes and closes nothing (the writer's thread is the parent's)."""
        close_fd(self._owner_fd)
        self._owner_fd = None
        self.keep = self.closed = True

    # -- recording (the engine's loop) -------------------------------------------

    def record(self, session: PtySession, directory: str | None = None) -> JournalEntry:
        """Start the journal of a session that was just spawned (before its first output is read).

        `directory`: somewhere else than the kernel's own (a kept session's journal lives with its
        keeper, so that it outlives this kernel, and the next one writes on: `adopt`)."""
        self._loop = asyncio.get_running_loop()
        rows, cols = session.size
        header = cast.header_v3(
            cols=cols,
            rows=rows,
            timestamp=session.started,
            command=" ".join(session.command),
            title=f"session {session.session_id}" + (f" ({session.name})" if session.name else ""),
        )
        file = JournalFile(
            os.path.join(directory or self.directory, f"session-{session.session_id}.cast"),
            header,
            # Times count from the session's start, its header's timestamp: from now they were early by
            # the time its spawn took, and so was each command's start (`started` + its time).
            monotonic_start=time.monotonic() - max(0.0, time.time() - session.started),
            session_bytes=self.session_bytes,
        )
        return self._start(session, file)

    def adopt(self, session: PtySession, path: str, *, marker: str) -> JournalEntry:
        """Write on in the journal a kept session had under the last kernel, from its end; `marker`
        labels a chapter there (the restart). Raises OSError or ValueError if it cannot be read."""
        self._loop = asyncio.get_running_loop()
        file = JournalFile.resume(path, session_bytes=self.session_bytes)
        entry = self._start(session, file)
        self.writer.put(("restart", file, time.monotonic(), marker, file.resumed.output_end))
        entry.recorder.take_up(path, file.resumed.output_end)
        return entry

    def mark(self, session: PtySession, label: str) -> None:
        """A chapter at the session's current output, labelled: something happened to it (its keeper died)."""
        with self._lock:
            entry = self._by_id.get(session.session_id)
        if entry is not None and entry.recorder is not None and entry.recorder.recording:
            entry.recorder.flush()
            self.writer.put(("restart", entry.file, time.monotonic(), label, session.offset))

    def _start(self, session: PtySession, file: JournalFile) -> JournalEntry:
        entry = JournalEntry(session.session_id, session.name, list(session.command), file, session.started)
        with self._lock:
            self._by_id[session.session_id] = entry
            self._gone.pop(session.session_id, None)
            if session.name is not None:
                self._by_name[session.name] = session.session_id
                self._gone.pop(session.name, None)
        self.writer.put(("open", file))
        entry.recorder = SessionRecorder(session, self.writer, file, record_input=self.record_input)
        return entry

    # -- reading (any thread) ------------------------------------------------------

    def find(self, key: int | str) -> JournalEntry:
        """The journal of the session with this id, or the newest with this name. Raises JournalNotFound."""
        with self._lock:
            session_id = self._by_name.get(key) if isinstance(key, str) else key
            entry = self._by_id.get(session_id)
            gone = self._gone.get(key)
            known = [entry.label for entry in self._by_id.values()]
        if entry is not None and entry.file.removed is not None:
            gone, entry = entry.file.removed, None
        if entry is None:
            shown = quoted(key) if isinstance(key, str) else str(key)
            if gone is not None:
                raise JournalNotFound(f"the journal of session {shown} is gone: {gone}")
            listing = one_line(", ".join(known), MESSAGE_LIMIT // 2) if known else "none"
            raise JournalNotFound(f"no journal for session {shown} (journals: {listing})")
        return entry

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return [entry for entry in self._by_id.values() if entry.file.removed is None]

    def flushed(self) -> concurrent.futures.Future:
        """Done once everything recorded so far is on disk: read after it. From any thread.

        Recorders gather output on the recording loop for a moment: the barrier goes
        in from that loop, after they hand on what they hold."""
        loop = self._loop
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if loop is None or on_loop or not loop.is_running():
            self._flush_recorders()
            return self.writer.flushed()
        future: concurrent.futures.Future = concurrent.futures.Future()

        def barrier() -> None:
            self._flush_recorders()
            chain(self.writer.flushed(), future)

        try:
            loop.call_soon_threadsafe(barrier)
        except RuntimeError:  # the loop closed meanwhile: nothing is gathered any more
            return self.writer.flushed()
        return future

    def _flush_recorders(self) -> None:
        for entry in self.entries():
            if entry.recorder is not None and entry.recorder.recording:
                entry.recorder.flush()

    def drop(self, key: int | str) -> JournalEntry:
        """Forget a journal and delete its files (it keeps recording nothing more)."""
        entry = self.find(key)
        if entry.recorder is not None:
            entry.recorder.stop()
        reason = "it was dropped"
        with self._lock:
            self._by_id.pop(entry.session_id, None)
            self._gone[entry.session_id] = reason
            if entry.name is not None and self._by_name.get(entry.name) == entry.session_id:
                del self._by_name[entry.name]
                self._gone[entry.name] = reason
        self.writer.put(("delete", entry.file, reason))
        return entry

    # -- the end -----------------------------------------------------------------

    def close(self) -> None:
        """Write what is queued, end the writer's thread, remove the directory unless kept. Blocks."""
        if self.closed:
            return
        self.closed = True
        # The writer finishes every journal it has; recorders still subscribed queue into nothing.
        self.writer.close()
        self.remove_now()
        owner, self._owner_fd = self._owner_fd, None
        if owner is not None:
            os.close(owner)  # the lock goes: a sweep may take what is left (kept journals) once they are let go

    def own_directory(self, directory: str) -> None:
        """Journals there are this kernel's now (a dead keeper's): removed with its own."""
        self._also.append(directory)

    def remove_now(self) -> None:
        """Remove the journals (not `keep`, not kept sessions') without waiting for the writer: for a
        kernel about to die (SIGTERM). Any thread; what the writer still writes goes to unlinked files."""
        if not self.keep:
            for directory in (self.directory, *self._also):
                remove_kernel_journals(directory)
            # And what dead ones left beside it (a keeper this kernel had to end as stalled).
            sweep_dead_kernels(os.path.dirname(self.directory))

    def close_soon(self) -> concurrent.futures.Future:
        """`close` without blocking the caller (for a loop): a future done when it has."""
        future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            try:
                self.close()
            finally:
                future.set_result(None)

        threading.Thread(target=run, name="uexec-journal-close", daemon=True).start()
        return future


def chain(source: concurrent.futures.Future, target: concurrent.futures.Future) -> None:
    source.add_done_callback(lambda done: target.set_result(done.result()))
