"""What one session hands its journal: output, resizes, commands, the exit (input only if asked).

It runs on the engine's loop as the session's subscriber and listener, and
does no more there than timestamp and queue (`writer.py` does the writing).
Output is gathered into pieces of up to `MAX_EVENT_BYTES` (or what came
within `GATHER_S`) before it is queued: a flood then wakes the writer's
thread a few times a second per 64 KB instead of once per 4 KB read, and
each wake-up takes the GIL from this loop. Anything else the session tells
(a command, a resize, the exit) sends what was gathered first, so the order
holds; `flush` sends it now (a reader's barrier does).
A command's text is what the terminal echoed between the shell's prompt end
(B) and its command start (C): that covers a line a cell typed, one typed
into a live view key by key, and one pasted, in the shell's own words.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

from ..agent_format import shell_exit_status
from ..completion.semantic_prompt import PromptEvent
from ..session import PtySession
from .writer import MAX_EVENT_BYTES, JournalFile, JournalWriter

MAX_ECHO_BYTES = 4096
GATHER_S = 0.02
MAX_LABEL_CHARS = 1000
_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")


class SessionRecorder:
    session: PtySession | None

    def __init__(self, session: PtySession, writer: JournalWriter, journal: JournalFile, *, record_input: bool = False):
        self.session = session
        self.writer = writer
        self.journal = journal
        self._echo: bytearray | None = None  # what the terminal echoed since the prompt ended
        self._command_open = False
        self._gathered = bytearray()
        self._gathered_at = (0.0, 0)  # the time and offset of its first byte
        self._timer = None
        self._stops: list[Callable[[], None]] = [
            session.subscribe(self._on_output),
            session.on_prompt(self._on_prompt),
            session.on_resize(self._on_resize),
            session.on_exit(self._on_exit),
        ]
        if record_input:
            self._stops.append(session.on_input(self._on_input))

    def _on_output(self, data: bytes, offset: int) -> None:
        gathered = self._gathered
        if gathered and (self._gathered_at[1] + len(gathered) != offset or len(gathered) + len(data) > MAX_EVENT_BYTES):
            self.flush()
            gathered = self._gathered
        if not gathered:
            self._gathered_at = (time.monotonic(), offset)
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(GATHER_S, self.flush)
        gathered += data
        if len(gathered) >= MAX_EVENT_BYTES:
            self.flush()
        if self._echo is not None and len(self._echo) < MAX_ECHO_BYTES:
            self._echo += data[: MAX_ECHO_BYTES - len(self._echo)]

    def flush(self) -> None:
        """Queue the output gathered so far (on the loop)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._gathered:
            monotonic, offset = self._gathered_at
            self.writer.output(self.journal, monotonic, bytes(self._gathered), offset)
            self._gathered = bytearray()

    def _on_prompt(self, mark: PromptEvent) -> None:
        if not mark.ours:
            return
        self.flush()
        now = time.monotonic()
        if mark.kind == "B":
            self._echo = bytearray()
        elif mark.kind == "C":
            label = command_text(bytes(self._echo or b""))
            self._echo = None
            self._command_open = True
            self.writer.put(("m", self.journal, now, label, mark.index))
        elif mark.kind == "D" and self._command_open:
            self._command_open = False
            self.writer.put(("end", self.journal, now, mark.exit_status, mark.index))
        elif mark.kind == "A":
            self._echo = None

    def _on_resize(self, rows: int, cols: int) -> None:
        self.flush()
        self.writer.put(("r", self.journal, time.monotonic(), f"{cols}x{rows}"))

    def _on_input(self, data: bytes) -> None:
        self.flush()
        self.writer.put(("i", self.journal, time.monotonic(), data.decode("utf-8", "replace")))

    def _on_exit(self, session: PtySession) -> None:
        self.flush()
        status = None if session.exit_code is None else shell_exit_status(session.exit_code)
        self.writer.put(("x", self.journal, time.monotonic(), status, session.offset))
        self.stop()

    @property
    def recording(self) -> bool:
        return bool(self._stops)

    def stop(self) -> None:
        """Stop recording; the journal is complete and may be evicted from now on."""
        if not self._stops:
            return
        self.flush()
        for stop in self._stops:
            stop()
        self._stops = []
        # The journal outlives the session; its buffers (hundreds of KB) must not live on with it.
        self.session = None
        self.writer.put(("close", self.journal))


def command_text(echo: bytes) -> str:
    """The command line a terminal echoed: escapes and line editing out, continuation prompts too.

    Each line is replayed on a cursor, as the terminal drew it: a character
    overwrites, `\b` and `ESC[nD` move left, `ESC[nC` right, `ESC[K` erases to
    the end, and `\r` goes back to the start of the row. A line longer than
    the terminal is wide wraps, and the line editor marks the new row: bash
    writes a space there and `\r`, zsh a space, `\r`, `ESC[K`; the space is
    overwritten by what follows (it read as a space in the command), and from
    then on `\r` returns to that row's start.
    """
    lines = []
    for number, raw in enumerate(echo.split(b"\n")):
        cleaned = _replay_line(raw.decode("utf-8", "replace")).rstrip()
        if number and cleaned.startswith("> "):
            cleaned = cleaned[2:]  # the shell's continuation prompt (PS2)
        if cleaned.strip():
            lines.append(cleaned)
    return "\n".join(lines)[:MAX_LABEL_CHARS]


_CURSOR = re.compile(r"\x1b\[([0-9]*)([CDK])")
_OTHER_ESCAPE = re.compile(_ESCAPE.pattern.decode())


def _replay_line(raw: str) -> str:
    cells: list[str] = []
    cursor = row = 0  # row: where the cursor's row starts (0 until a wrap is seen)
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\x1b":
            move = _CURSOR.match(raw, index)
            if move is not None:
                count = int(move[1] or 1)
                if move[2] == "C":
                    cursor = min(cursor + count, len(cells))
                elif move[2] == "D":
                    cursor = max(cursor - count, row)
                elif move[1] in ("", "0"):
                    del cells[cursor:]
                index = move.end()
                continue
            other = _OTHER_ESCAPE.match(raw, index)
            index = other.end() if other is not None else index + 1
            continue
        index += 1
        if char == "\r":
            if cursor and cells[cursor - 1] == " " and cursor == len(cells) and cursor - 1 >= row:
                row = cursor - 1  # the wrap's mark: the new row starts at that space
            cursor = row
        elif char == "\b":
            cursor = max(cursor - 1, 0)
        elif (char < " " and char != "\t") or char == "\x7f":
            continue  # a terminal draws none of them
        elif cursor < len(cells):
            cells[cursor] = char
            cursor += 1
        else:
            cells.append(char)
            cursor += 1
    return "".join(cells)
