"""The index beside a journal: where each output event is, and where each command starts and ends.

Paging a 1 GB journal must not read it: `--lines 400000:400020` or the last
command of a long session should cost a few reads. So, beside `NAME.cast`:

- `NAME.cast.idx`: one fixed record per `o` event, in order (the session's
  output offset of its first byte, its line's file position, how many
  newlines came before it, its time in microseconds). Every field grows
  with the record number, so a binary search on any of them finds the event
  holding a byte, a line start or a moment: a line-number checkpoint at every
  event (an event holds at most `MAX_EVENT_BYTES`, so the scan inside one is short).
- `NAME.cast.marks`: one JSON line per command start and end, drop and exit
  (a few per command, so it is read whole).

A file without an index (a recording asciinema made, a journal whose index
went missing) gets the same structures built in memory by one scan
(`reader.py`), so every read goes through this one shape.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from .source import bounded_lines, open_file

RECORD = struct.Struct("<QQQQ")  # output offset, file position, newlines before, time (us)
INDEX_SUFFIX = ".idx"
MARKS_SUFFIX = ".marks"


@dataclass
class Command:
    """A command typed into an integrated shell: its text, where its output starts and ends."""

    number: int  # 1-based, in the order the shell ran them
    text: str
    start: int  # output offset where its output begins (the shell's C marker)
    time: float  # seconds since the journal began
    end: int | None = None  # where it finished (its D marker); None while it runs
    end_time: float | None = None
    exit_code: int | None = None
    restart: bool = False  # no command: where a kernel restart left a kept session (a chapter all the same)


@dataclass(frozen=True)
class Drop:
    """Output the journal could not keep, and why."""

    offset: int
    size: int
    reason: str

    def describe(self) -> str:
        return f"{self.size:,} bytes of output from byte {self.offset:,} were not kept: {self.reason}"


class Records:
    """The fixed records, over any bytes-like buffer (a mapped `.idx` file or a built bytearray)."""

    def __init__(self, buffer) -> None:
        self._buffer = buffer
        self.count = len(buffer) // RECORD.size

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[int, int, int, int]:
        if index < 0:
            index += self.count
        return RECORD.unpack_from(self._buffer, index * RECORD.size)

    def last_at_or_before(self, field: int, value: int) -> int:
        """The last record whose `field` is <= value (-1 if none): `field` never decreases."""
        low, high = 0, self.count
        while low < high:
            middle = (low + high) // 2
            if RECORD.unpack_from(self._buffer, middle * RECORD.size)[field] <= value:
                low = middle + 1
            else:
                high = middle
        return low - 1

    def last_before(self, field: int, value: int) -> int:
        """The last record whose `field` is < value (-1 if none)."""
        return self.last_at_or_before(field, value - 1)


OFFSET, POSITION, LINES, TIME = range(4)


class Marks:
    """Commands, drops and the exit, from the marks lines in order."""

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.drops: list[Drop] = []
        self.exit_status: int | None = None
        self.end_offset: int | None = None  # the output's end, once the program exited

    def add(self, mark: dict) -> None:
        kind = mark.get("kind")
        if kind == "command":
            self.commands.append(Command(len(self.commands) + 1, str(mark.get("text", "")), int(mark["offset"]), mark.get("t", 0) / 1e6))
        elif kind == "restart":
            offset, t = int(mark["offset"]), mark.get("t", 0) / 1e6
            self.commands.append(Command(len(self.commands) + 1, str(mark.get("text", "")), offset, t, offset, t, restart=True))
        elif kind == "end":
            command = next((command for command in reversed(self.commands) if not command.restart), None)
            if command is not None and command.end is None:
                command.end, command.end_time, command.exit_code = int(mark["offset"]), mark.get("t", 0) / 1e6, mark.get("exit")
        elif kind == "dropped":
            self.drops.append(Drop(int(mark["offset"]), int(mark["bytes"]), str(mark.get("reason", ""))))
        elif kind == "exit":
            self.exit_status, self.end_offset = mark.get("status"), mark.get("offset")

    @classmethod
    def read(cls, path: str) -> Marks:
        marks = cls()
        with open_file(path) as file:
            for line in bounded_lines(file, path):
                if not line.endswith(b"\n"):
                    break  # the writer is in the middle of this one
                try:
                    marks.add(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    continue
        return marks


def mark_line(kind: str, **fields) -> bytes:
    return json.dumps({"kind": kind, **fields}, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
