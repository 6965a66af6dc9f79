"""What one session hands its journal: output, resizes, commands, the exit (input only if asked).

It runs on the engine's loop as the session's subscriber and listener, and
does no more there than timestamp and queue (`writer.py` does the writing).
Output is gathered into pieces of up to `MAX_EVENT_BYTES` (or what came
within `GATHER_S`) before it is queued: a flood then wakes the writer's
thread a few times a second per 64 KB instead of once per 4 KB read, and
each wake-up takes the GIL from this loop. Anything else the session tells
(a command, a resize, the exit) sends what was gathered first, so the order
holds; `flush` sends it now (a reader's barrier does).
A command's text is what the terminal showed between the shell's prompt end
(B) and its command start (C), the echo replayed from the prompt's start (A)
as a terminal draws it (`command_line.py`): that covers a line a cell typed,
one typed into a live view key by key and edited, and one pasted, in the
shell's own words. A kept session taken back by a new kernel may be waiting
at a prompt the last kernel saw: its echo so far is read back from the
journal (`take_up`), so the first command typed after a restart has its text
whoever types it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ..agent_format import shell_exit_status
from ..completion.semantic_prompt import PromptEvent
from ..session import PtySession
from .command_line import command_text
from .writer import MAX_EVENT_BYTES, JournalFile, JournalWriter

MAX_ECHO_BYTES = 8 * 1024
"""What is kept of a prompt and its echo: a background job printing at the prompt must not grow it, and
the replay at the command's start runs on the loop (~1 ms per KB of escapes or wide characters)."""
GATHER_S = 0.02


class SessionRecorder:
    session: PtySession | None

    def __init__(self, session: PtySession, writer: JournalWriter, journal: JournalFile, *, record_input: bool = False):
        self.session = session
        self.writer = writer
        self.journal = journal
        self._echo: bytearray | None = None  # what the terminal drew since the prompt started (A)
        self._prompt_end: int | None = None  # where in it the prompt ended (the last B)
        self._cols = session.size[1]
        self._taken_up: tuple[str, int] | None = None  # a kept session's journal, until the first output heard
        self._seeded: tuple[int, int | None] | None = None
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
        if self._taken_up is not None:
            self._heard()
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
        if self._taken_up is not None:
            self._heard()
        self.flush()
        now = time.monotonic()
        if mark.kind == "A":
            self._echo, self._prompt_end = bytearray(), None
        elif mark.kind == "B":
            if self._echo is None:  # no start seen: the prompt's width is unknown, counted from here
                self._echo = bytearray()
            self._prompt_end = len(self._echo)
        elif mark.kind == "C":
            label = "" if self._echo is None else command_text(bytes(self._echo), self._prompt_end, cols=self._cols)
            self._echo = self._prompt_end = None
            self._command_open = True
            self.writer.put(("m", self.journal, now, label, mark.index))
        elif mark.kind == "D" and self._command_open:
            self._command_open = False
            self.writer.put(("end", self.journal, now, mark.exit_status, mark.index))

    def take_up(self, path: str, journaled_until: int) -> None:
        """A kept session taken back: its journal at `path` holds its output up to `journaled_until`.

        If the shell waits at a prompt the last kernel saw, what the terminal drew since that
        prompt started is read back, so the command typed there gets its text. The prompt
        is the one the keeper's last acknowledgement knew; markers the keeper sends again
        (past that point) reach the session but not its listeners, so the first thing this
        recorder hears checks the prompt again and reads once more if it moved.
        """
        self._taken_up = (path, journaled_until)
        self._seed_from_journal()

    def _seed_from_journal(self) -> None:
        from .reader import open_journal  # a session taken up is the only one a recorder reads

        path, end = self._taken_up
        prompt = self._seeded = self.session.prompt
        if prompt is None or prompt[0] >= end:
            return
        start, prompt_end = prompt
        try:
            with open_journal(path) as journal:
                echo = journal.read(start, end, limit=MAX_ECHO_BYTES)
        except (OSError, ValueError):
            return  # the text of that one command stays empty; nothing else depends on it
        self._echo = bytearray(echo)
        self._prompt_end = None if prompt_end is None else prompt_end - start

    def _heard(self) -> None:
        """The first output or marker after a take-back: the prompt may have moved in what was sent again."""
        if self._taken_up is not None:
            if self.session.prompt is not None and self.session.prompt != self._seeded:
                self._seed_from_journal()
            self._taken_up = None

    def _on_resize(self, rows: int, cols: int) -> None:
        self.flush()
        self._cols = cols
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
