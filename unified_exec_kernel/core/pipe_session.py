"""A session whose program runs on pipes instead of a terminal (Codex's `tty=false`).

Everything a PTY session has past the spawn is the same object: the fan-out
to subscribers, the request buffer and scrollback, the lifecycle (exit,
drain, grace), journals, watches, names, kill and the Sessions panel all see
a `PtySession`. Only three things differ, and they are here: how the program
starts (process/pipes.py), that its stdin is closed (a write is refused with
Codex's words, except Ctrl-C, which interrupts it as a terminal would), and
that it has no terminal to size (a live view of it can only watch).
"""

from __future__ import annotations

import signal
from collections.abc import Mapping

from .errors import StdinClosedError, WriteToStdinError
from .process.pipes import PipeOutput, spawn_pipes
from .process.terminal import Terminal
from .session import PtySession

INTERRUPT = "\x03"
"""The one input a pipes session takes: Codex sends it to interrupt the program."""


class PipeSession(PtySession):
    tty = False

    def _start(self, env: Mapping[str, str], rows: int, cols: int, backend: str, cwd: str | None, handoff: bytes | None) -> tuple[int, Terminal]:
        spawned = spawn_pipes(self.argv, env, cwd=cwd)
        return spawned.pid, PipeOutput(spawned.read_fd, on_output=self._on_output, on_eof=self._on_eof)

    def write(self, data: str | bytes) -> None:
        """Ctrl-C interrupts the program (SIGINT to its group); any other input is refused: stdin is closed."""
        if not self.alive or self.terminal.released:
            raise WriteToStdinError(self.session_id, ProcessLookupError("the process has exited"))
        if data in (INTERRUPT, INTERRUPT.encode()):
            self.send_signal(signal.SIGINT)
            return
        raise StdinClosedError(self.session_id)
