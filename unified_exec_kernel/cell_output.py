"""The one output a `%%uexec` cell shows, updated while the session prints.

A cell that prints two million lines must not send two million messages (the
kernel's iopub socket drops past 1000 queued, the server rate-limits at 1 MB/s
and 1000 messages/s). So the cell owns a single display (a `display_id`),
updated at most ~10 times a second at first and less often as a wait drags
on, each update carrying only a bounded tail of the output; the final update
shows the whole result and a status line.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque

from IPython.display import display

from .core.models import UnifiedExecResult
from .render import render_terminal_text

TAIL_BYTES = 16 * 1024
TAIL_LINES = 40


def _update_interval(elapsed: float) -> float:
    """Fast while a person watches closely, slower as a long wait goes on."""
    if elapsed < 2:
        return 0.1
    if elapsed < 10:
        return 0.5
    return 1.0


class CellOutput:
    def __init__(self, *, raw: bool = False):
        self.raw = raw
        self._tail: deque[str] = deque()
        self._tail_chars = 0
        self._dirty = False
        self._handle = None
        self._loop = asyncio.get_running_loop()
        self._started = self._loop.time()
        self._last_update = self._started
        self._timer: asyncio.TimerHandle | None = None
        # Output arrives in the PTY reader's callback, which runs in the context
        # of the cell that started the session; ipykernel keeps the parent
        # message in a contextvar, so updates must run in this cell's context
        # or they land in that older cell.
        self._context = contextvars.copy_context()
        self.updates = 0

    def feed(self, text: str) -> None:
        """Take new output (called for every chunk; cheap, never sends)."""
        self._tail.append(text)
        self._tail_chars += len(text)
        while self._tail_chars - len(self._tail[0]) >= TAIL_BYTES:
            self._tail_chars -= len(self._tail.popleft())
        self._dirty = True
        if self._timer is None:
            now = self._loop.time()
            due = self._last_update + _update_interval(now - self._started)
            self._timer = self._loop.call_at(max(due, now), self._flush, context=self._context)

    def _flush(self) -> None:
        self._timer = None
        if not self._dirty:
            return
        self._dirty = False
        self._last_update = self._loop.time()
        self._show(self._tail_text() + "\n[…running]")

    def _tail_text(self) -> str:
        text = "".join(self._tail)[-TAIL_BYTES:]
        if self.raw:
            return text
        lines = render_terminal_text(text).splitlines()
        return "\n".join(lines[-TAIL_LINES:])

    def finish(self, result: UnifiedExecResult, *, interrupted: bool = False) -> None:
        """The final update: the whole result, rendered, and its status line."""
        body = result.output if self.raw else render_terminal_text(result.output)
        if body and not body.endswith("\n"):
            body += "\n"
        self.finish_text(body + status_line(result, interrupted=interrupted))

    def finish_text(self, text: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._show(text)

    def _show(self, text: str) -> None:
        bundle = {"text/plain": text}
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)
        self.updates += 1


def status_line(result: UnifiedExecResult, *, interrupted: bool = False) -> str:
    if result.session_id is not None:
        state = f"session {result.session_id} running"
    elif result.exit_code is not None:
        state = f"exited with code {result.exit_code}"
    else:
        state = "exited"
    parts = [state, f"{result.wall_time:.2f} s"]
    if result.dropped_bytes:
        parts.append(f"{result.dropped_bytes:,} earlier bytes dropped (buffer full)")
    if interrupted and result.session_id is not None:
        sid = result.session_id
        parts.append(f"wait interrupted; the program still runs: stop it with %uexec_kill {sid} or %uexec -s {sid} --keys C-c")
    return "[" + " · ".join(parts) + "]"
