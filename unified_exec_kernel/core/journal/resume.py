"""Where a journal left off: so a restarted kernel appends to a kept session's journal.

A kept session (core/process/keeper.py) keeps its journal across kernels.
The next kernel must write on where the last one stopped: the same output
offsets, line count, time base and command numbers, or paging, chapters and
players would break at the restart. All of it is in the files already: the
last index record says where the last output event starts, and only the few
lines after it (that event and any marks, notes, resizes) need reading. So
taking a journal back reads a few KB, however long it is.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from .index import INDEX_SUFFIX, MARKS_SUFFIX, RECORD


@dataclass(frozen=True)
class JournalEnd:
    """A journal's state at its end, as the writer keeps it for a journal it writes."""

    position: int  # bytes in the journal file
    size: int  # bytes of journal, index and marks together
    lines: int  # newlines in its output
    last_us: int  # the time of its last event
    commands: int  # command marks so far
    output_end: int  # the output offset after its last byte of output
    timestamp: float  # the header's start (seconds since the epoch)

    def monotonic_start(self) -> float:
        """A time base that goes on from the last event: never before it, and about now in real time."""
        now = time.monotonic()
        by_clock = now - max(0.0, time.time() - self.timestamp)
        return min(by_clock, now - self.last_us / 1_000_000)


def journal_end(path: str) -> JournalEnd:
    """Read where the journal at `path` ends. Raises OSError or ValueError for a broken one."""
    with open(path, "rb") as journal:
        header_line = journal.readline()
        header = json.loads(header_line)
        if not isinstance(header, dict):
            raise ValueError(f"{path}: the first line is not an asciicast header")
        position = journal.seek(0, os.SEEK_END)
        index_size = os.path.getsize(path + INDEX_SUFFIX)
        records = index_size // RECORD.size
        if records:
            with open(path + INDEX_SUFFIX, "rb") as index:
                index.seek((records - 1) * RECORD.size)
                offset, start, lines, last_us = RECORD.unpack(index.read(RECORD.size))
        else:
            offset, start, lines, last_us = 0, len(header_line), 0, 0
        journal.seek(start)
        tail = journal.read()
    events = [json.loads(line) for line in tail.splitlines() if line and not line.startswith(b"#")]
    output_end = offset
    for number, (interval, code, data) in enumerate(events):
        # The indexed event's time is its record's; every later one is an interval after the last.
        if number or not records:
            last_us += round(float(interval) * 1_000_000)
        if code == "o":  # only the indexed one: every output event has a record
            lines += data.count("\n")
            output_end = offset + len(data.encode("utf-8", "surrogatepass"))
    size = position + index_size + os.path.getsize(path + MARKS_SUFFIX)
    return JournalEnd(position, size, lines, last_us, _commands(path + MARKS_SUFFIX), output_end, float(header.get("timestamp", 0)))


def _commands(marks_path: str) -> int:
    count = 0
    with open(marks_path, "rb") as marks:
        for line in marks:
            try:
                if json.loads(line).get("kind") == "command":
                    count += 1
            except (ValueError, AttributeError):
                continue
    return count
