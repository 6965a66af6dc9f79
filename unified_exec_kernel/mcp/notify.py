"""Telling the client what happened without being asked: a session's exit, lines that matched a watch.

Batched and capped as Codex's monitors are: matching lines wait a moment
and go together (at most BATCH_LINES a notification), a session sends at
most SESSION_LINES lines in all (then one count of what was left out), and
its exit is always delivered, after any lines still waiting, unless an
answer told the agent already: while a call that may report a session's
exit waits (`answering`), its exit is held, and dropped if the answer said
it (`told`). The client
gets each as one MCP `notifications/message` (logger "uexec"), whose `data`
is an object: `event` ("output" or "exited"), `session_id`, `lines`, and
for an exit `exit_code` (a shell's status) and `closed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

BATCH_LINES = 40
SESSION_LINES = 200
BATCH_DELAY_S = 0.25


class Notifier:
    def __init__(self, send: Callable[[dict], Awaitable[None]]):
        self._send = send
        self._pending: dict[int, list[str]] = {}
        self._sent: dict[int, int] = {}
        self._left_out: dict[int, int] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()
        self._answering: dict[int, int] = {}  # session id -> calls waiting that may report its exit
        self._held: dict[int, dict] = {}  # exits that came while such a call waited
        self._told: set[int] = set()  # sessions whose exit an answer reported

    def line(self, session_id: int, text: str) -> None:
        """A line that matched a watch of this session."""
        if self._sent.get(session_id, 0) + len(self._pending.get(session_id, ())) >= SESSION_LINES:
            self._left_out[session_id] = self._left_out.get(session_id, 0) + 1
            return
        pending = self._pending.setdefault(session_id, [])
        pending.append(text)
        if len(pending) >= BATCH_LINES:
            self._flush(session_id)
        elif session_id not in self._timers:
            self._timers[session_id] = asyncio.get_running_loop().call_later(BATCH_DELAY_S, self._flush, session_id)

    def exited(self, session_id: int, exit_code: int | None, closed: bool, last_lines: list[str]) -> None:
        """The session's program ended: what still waits goes first, then the exit (never capped)."""
        self._flush(session_id)
        for table in (self._sent, self._left_out):
            table.pop(session_id, None)
        if session_id in self._told:
            return
        message = {"event": "exited", "session_id": session_id, "exit_code": exit_code, "closed": closed, "lines": last_lines}
        if self._answering.get(session_id):
            self._held[session_id] = message
        else:
            self._emit(message)

    @contextlib.contextmanager
    def answering(self, session_id: int):
        """Around a call whose answer may report the session's exit (a `write_stdin`): the exit waits for it."""
        self._answering[session_id] = self._answering.get(session_id, 0) + 1
        try:
            yield
        finally:
            waiting = self._answering.pop(session_id) - 1
            if waiting:
                self._answering[session_id] = waiting
            elif session_id in self._held:
                self._emit(self._held.pop(session_id))

    def told(self, session_id: int) -> None:
        """An answer reported the session's exit: no notification says it again, now or later."""
        self._told.add(session_id)
        self._held.pop(session_id, None)

    def _flush(self, session_id: int) -> None:
        timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()
        lines = self._pending.pop(session_id, [])
        left_out = self._left_out.pop(session_id, 0)
        if not lines and not left_out:
            return
        self._sent[session_id] = self._sent.get(session_id, 0) + len(lines)
        message = {"event": "output", "session_id": session_id, "lines": lines}
        if left_out:
            message["left_out"] = left_out  # lines past the session's cap, not sent
        self._emit(message)

    def _emit(self, message: dict) -> None:
        task = asyncio.ensure_future(self._deliver(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, message: dict) -> None:
        try:
            await self._send(message)
        except Exception:  # noqa: BLE001 - a client gone away loses a notification, not the server
            log.debug("uexec mcp: a notification was not delivered", exc_info=True)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
