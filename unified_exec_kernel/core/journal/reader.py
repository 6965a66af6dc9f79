"""Reading a journal, or any asciicast recording (v3, or the v2 the asciinema CLI on PyPI writes).

`open_journal(path)` answers every question a reader asks without reading
the whole file when an index is beside it (`index.py`): the output between
two byte offsets, where a line starts, the commands as chapters. A file
without one (asciinema's own recordings) is scanned once into the same
structures. For a player: `events()` yields every event with its absolute
time, `chapters()` the commands (text, exit code, times, byte ranges).

Anything that is not a readable asciicast file raises `JournalError` with
one line saying what is wrong with it: a FIFO, a device or a directory
before anything is read, a line longer than the reader takes (`source.py`)
before it is held whole.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

from . import format as cast
from .index import INDEX_SUFFIX, LINES, MARKS_SUFFIX, OFFSET, RECORD, Command, Drop, Marks, Records
from .source import MAX_HEADER_BYTES, JournalError, bounded_lines, open_file, read_line


@dataclass(frozen=True)
class Event:
    time: float  # seconds since the recording began
    code: str  # o, i, r, m, x (and e/other codes a newer format may add)
    data: str


class Journal:
    """An open recording; see the module docstring. Cheap to open: read, then let it go."""

    def __init__(self, path: str, *, indexed: bool = True):
        """`indexed=False`: for `events()` alone (chapters, bytes and lines are then empty)."""
        self.path = path
        self._file = open_file(path)
        try:
            first = read_line(self._file, path, MAX_HEADER_BYTES, "its first line (the header)")
            self.header = _header(path, first)
            self.version = self.header["version"]
            index_path, marks_path = path + INDEX_SUFFIX, path + MARKS_SUFFIX
            if not indexed:
                # Only `events()` will be asked for (an export): it checks every line as it goes, and
                # nothing held grows with the file (an index holds 32 bytes per event).
                self.records, self.marks, self.end = Records(b""), Marks(), 0
            elif self.version == 3 and os.path.isfile(index_path) and os.path.isfile(marks_path):
                with open_file(index_path) as index:
                    self.records = Records(index.read())
                self.marks = Marks.read(marks_path)
            else:
                self.records, self.marks = self._scan(len(first))
            if indexed:
                self.end = self._end_offset()
        except BaseException:
            self._file.close()
            raise

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- what a player wants -----------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        """The terminal's columns and rows at the start."""
        if self.version == 3:
            term = self.header.get("term") or {}
            return int(term.get("cols", 80)), int(term.get("rows", 24))
        return int(self.header.get("width", 80)), int(self.header.get("height", 24))

    def events(self, *, comments: bool = False) -> Iterator[Event]:
        """Every event in order, with its absolute time. `comments`: v3's comment lines too
        (code `#`, data the whole line; ours carry commands' exit codes and drops)."""
        self._file.seek(0)
        read_line(self._file, self.path, MAX_HEADER_BYTES, "its first line (the header)")
        now = 0.0
        for number, line in enumerate(bounded_lines(self._file, self.path), start=2):
            if not line.strip():
                continue
            if line.startswith(b"#"):
                text = line.decode("utf-8", "replace").rstrip("\n")
                note = cast.parse_note(text) if self.version == 3 else None
                if note is not None:
                    _check_note(self.path, number, note)  # as the scan does: an unindexed export checks here
                if comments and line.endswith(b"\n"):
                    yield Event(now, "#", text)
                continue
            event = _event(self.path, number, line)
            if event is None:
                return  # a last line still being written
            time, code, data = event
            now = _advance(self.path, number, self.version, now, time)
            yield Event(now, code, data)

    def chapters(self) -> list[Command]:
        """The commands, in order: for a journal of an integrated shell, one per command it ran;
        for another recording, one per marker (its label, no exit code)."""
        return list(self.marks.commands)

    @property
    def drops(self) -> list[Drop]:
        return list(self.marks.drops)

    # -- bytes and lines ---------------------------------------------------------

    @property
    def start(self) -> int:
        return self.records[0][OFFSET] if len(self.records) else 0

    def read(self, start: int, end: int, limit: int | None = None) -> bytes:
        """The output bytes in [start, end) (at most `limit`), skipping what the journal did not keep."""
        if limit is not None:
            end = min(end, start + limit)
        return b"".join(self.chunks(start, end))

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        """The output bytes in [start, end), an event at a time (a scan holds one event, not the range)."""
        end = min(end, self.end)
        if start >= end:
            return
        first = max(self.records.last_at_or_before(OFFSET, start), 0)
        for offset, data in self._outputs_from(first):
            if offset >= end:
                break
            if offset + len(data) > start:
                yield data[max(0, start - offset) : end - offset]

    def read_span(self, start: int, end: int, limit: int) -> tuple[int, bytes]:
        """At most `limit` contiguous output bytes from the first kept byte at or after `start`
        (stopping before `end` and at a stretch the journal did not keep), and their offset."""
        end = min(end, self.end)
        pieces: list[bytes] = []
        first = expected = None
        for offset, data in self._outputs_from(max(self.records.last_at_or_before(OFFSET, start), 0)):
            if offset >= end or (expected is not None and offset != expected):
                break
            if offset + len(data) <= start:
                continue
            piece = data[max(0, start - offset) : end - offset]
            if first is None:
                first = expected = max(start, offset)
            pieces.append(piece)
            expected += len(piece)
            if expected - first >= limit:
                break
        if first is None:
            return start, b""
        return first, b"".join(pieces)[:limit]

    def newlines_before(self, offset: int) -> int:
        """How many line ends the kept output has before `offset`."""
        index = self.records.last_at_or_before(OFFSET, offset - 1)
        if index < 0:
            return 0
        event_offset, position, lines, _ = self.records[index]
        return lines + self._output_at(position)[: offset - event_offset].count(b"\n")

    def line_start(self, line: int) -> int | None:
        """The offset where 1-based `line` starts; None past the end."""
        if line <= 1:
            return self.start
        wanted = line - 1  # the newline that ends the line before it
        index = self.records.last_before(LINES, wanted)
        if index < 0:
            return None
        event_offset, position, lines, _ = self.records[index]
        data = self._output_at(position)
        at = -1
        for _ in range(wanted - lines):
            at = data.find(b"\n", at + 1)
            if at < 0:
                return None
        after = event_offset + at + 1
        return after if after < self.end else None

    def line_count(self) -> int:
        """Lines in the kept output: its line ends, plus an unfinished last line."""
        newlines = self.newlines_before(self.end)
        if self.end <= self.start:
            return 0
        return newlines + (0 if self.read(self.end - 1, self.end) == b"\n" else 1)

    # -- internals ---------------------------------------------------------------

    def _outputs_from(self, index: int) -> Iterator[tuple[int, bytes]]:
        if index >= len(self.records):
            return
        offset = self.records[index][OFFSET]
        self._file.seek(self.records[index][1])
        record = index
        for line in bounded_lines(self._file, self.path):
            if line.startswith(b"#") or not line.strip():
                continue
            event = _event(self.path, 0, line, strict=False)
            if event is None:
                return
            if event[1] != "o":
                continue
            if record < len(self.records):
                offset = self.records[record][OFFSET]  # exact across what was dropped
            data = event[2].encode("utf-8", "surrogatepass")
            yield offset, data
            offset += len(data)
            record += 1

    def _output_at(self, position: int) -> bytes:
        self._file.seek(position)
        event = _event(self.path, 0, read_line(self._file, self.path), strict=False)
        return event[2].encode("utf-8", "surrogatepass") if event and event[1] == "o" else b""

    def _end_offset(self) -> int:
        if self.marks.end_offset is not None:
            return int(self.marks.end_offset)
        if not len(self.records):
            return 0
        offset, position, _, _ = self.records[-1]
        return offset + len(self._output_at(position))

    def _scan(self, header_length: int) -> tuple[Records, Marks]:
        """Build the index of a file that has none: one pass."""
        records, marks = bytearray(), Marks()
        position, offset, lines, now = header_length, 0, 0, 0.0
        self._file.seek(header_length)
        for number, line in enumerate(bounded_lines(self._file, self.path), start=2):
            at, position = position, position + len(line)
            if not line.strip():
                continue
            if line.startswith(b"#"):
                note = cast.parse_note(line.decode("utf-8", "replace").rstrip("\n")) if self.version == 3 else None
                if note is not None:
                    _check_note(self.path, number, note)
                    _scan_note(marks, note, offset, now)
                    if note[0] == cast.NOTE_DROPPED:
                        offset = max(offset, note[1]["offset"] + note[1]["bytes"])
                continue
            event = _event(self.path, number, line)
            if event is None:
                break
            time, code, data = event
            now = _advance(self.path, number, self.version, now, time)
            if code == "o":
                encoded = data.encode("utf-8", "surrogatepass")
                records += RECORD.pack(offset, at, lines, round(now * 1e6))
                offset += len(encoded)
                lines += encoded.count(b"\n")
            elif code == "m":
                marks.add({"kind": "command", "text": data, "offset": offset, "t": round(now * 1e6)})
            elif code == "x":
                status = int(data) if data.lstrip("-").isdigit() else None
                marks.add({"kind": "exit", "status": status, "offset": offset})
        if self.version == 2 and marks.commands:
            # A player's markers are points, not commands: each one lasts until the next.
            for current, following in zip(marks.commands, marks.commands[1:]):
                current.end, current.end_time = following.start, following.time
        return Records(bytes(records)), marks


def _check_note(path: str, number: int, note: tuple[str, dict]) -> None:
    """Our notes' fields are what the writer writes, or the file was made by something else."""
    kind, fields = note
    if kind == cast.NOTE_DROPPED:
        good = all(isinstance(fields.get(key), int) and not isinstance(fields.get(key), bool) and fields[key] >= 0 for key in ("offset", "bytes"))
    elif kind == cast.NOTE_COMMAND_END:
        exit_code = fields.get("exit")
        good = exit_code is None or (isinstance(exit_code, int) and not isinstance(exit_code, bool))
    else:
        return  # a kind a newer version writes: skipped, as players skip comments
    if not good:
        raise JournalError(f"{os.path.basename(path)} line {number}: a malformed #uexec {kind} note")


def _scan_note(marks: Marks, note: tuple[str, dict], offset: int, now: float) -> None:
    kind, fields = note
    try:
        if kind == cast.NOTE_COMMAND_END:
            marks.add({"kind": "end", "offset": offset, "t": round(now * 1e6), "exit": fields.get("exit")})
        elif kind == cast.NOTE_DROPPED:
            marks.add({"kind": "dropped", **fields})
    except (KeyError, TypeError, ValueError):
        pass


UNEXPECTED = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError)
"""What reading a recording may still raise on input no check foresaw: the faces turn it into `unreadable`."""


def unreadable(path: str, error: BaseException) -> JournalError:
    """One line for a recording that broke a reader in a way no check foresaw (never a traceback)."""
    if isinstance(error, JournalError):
        return error
    return JournalError(f"{os.path.basename(path)} cannot be read: {type(error).__name__}: {error}".splitlines()[0])


def as_given(message: str, path: str, given: str | None) -> str:
    """A refusal naming the file as the user named it (the reader names its base name)."""
    base = os.path.basename(path)
    if given is not None and message.startswith(base + " "):
        return given + message[len(base) :]
    if given is not None and message.startswith(base + ":"):
        return given + message[len(base) :]
    return message


def open_journal(path: str, *, indexed: bool = True) -> Journal:
    """Open a journal or asciicast recording; raises JournalError (one line) if it is not one.
    `indexed=False`: only its events will be read, in order (see `Journal`)."""
    return Journal(path, indexed=indexed)


def _header(path: str, line: bytes) -> dict:
    name = os.path.basename(path)
    if not line.strip():
        raise JournalError(f"{name} is not an asciicast recording: it is empty")
    try:
        header = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise JournalError(f"{name} is not an asciicast recording: its first line is not a JSON header") from None
    if not isinstance(header, dict) or "version" not in header:
        raise JournalError(f"{name} is not an asciicast recording: its header has no version")
    if header["version"] not in (2, 3):
        raise JournalError(f"{name} is asciicast version {header['version']!r}; only versions 2 and 3 can be read")
    if header["version"] == 3 and not isinstance(header.get("term"), dict):
        raise JournalError(f"{name} is not a valid asciicast v3 recording: its header has no term")
    if header["version"] == 2 and not all(_dimension(header.get(key)) for key in ("width", "height")):
        raise JournalError(f"{name} is not a valid asciicast v2 recording: its header has no width and height (whole numbers from 1 to {MAX_DIMENSION:,})")
    if header["version"] == 3:
        term = header["term"]
        if not all(_dimension(term.get(key, 1)) for key in ("cols", "rows")):
            raise JournalError(f"{name} is not a valid asciicast v3 recording: its term's cols and rows must be whole numbers from 1 to {MAX_DIMENSION:,}")
        if not isinstance(term.get("type", ""), str):
            raise JournalError(f"{name} is not a valid asciicast v3 recording: its term's type is not text")
    if not isinstance(header.get("env", {}), dict) or not all(isinstance(value, str) for value in header.get("env", {}).values()):
        raise JournalError(f"{name} is not a valid asciicast recording: its header's env is not an object of text values")
    limit = header.get("idle_time_limit")
    if limit is not None and not (_number(limit) and limit >= 0):
        raise JournalError(f"{name} is not a valid asciicast recording: its header's idle_time_limit is not a number of seconds")
    return header


MAX_DIMENSION = 10_000
MAX_TIME_S = 10.0**10
"""Times past this (three centuries) are no recording's: refused rather than overflowing a player."""


def _dimension(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_DIMENSION


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _event(path: str, number: int, line: bytes, *, strict: bool = True) -> tuple[float, str, str] | None:
    """One event line; None for an unfinished last line (a journal still being written)."""
    if not line.endswith(b"\n"):
        return None
    try:
        event = json.loads(line)
        if not isinstance(event, list):
            raise TypeError
        time, code, data = event
        if not isinstance(code, str):
            raise TypeError
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError):
        if not strict:
            return None
        raise JournalError(f"{os.path.basename(path)} line {number} is not an asciicast event") from None
    if not _number(time) or not 0 <= time <= MAX_TIME_S:
        if not strict:
            return None
        raise JournalError(f"{os.path.basename(path)} line {number}: the event's time {json.dumps(time)} is not a number of seconds from 0 to {MAX_TIME_S:.0e}")
    return float(time), code, data if isinstance(data, str) else json.dumps(data)


def _advance(path: str, number: int, version: int, now: float, time: float) -> float:
    """The event's absolute time: v3 adds an interval, v2 gives it (and must not go back)."""
    if version == 3:
        now += time
        if now > MAX_TIME_S:
            raise JournalError(f"{os.path.basename(path)} line {number}: the recording's time passes {MAX_TIME_S:.0e} seconds")
        return now
    if time < now:
        raise JournalError(f"{os.path.basename(path)} line {number}: the event's time {time:g} goes back (the one before was {now:g})")
    return time
