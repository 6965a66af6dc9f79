"""Collecting a session's output until a wait ends: one request's, or one watch's.

A request and an agent's watch do the same thing: keep what the session
prints (flat memory, `collector.py`), type the request's input if any, and
wait for the first condition (`waits.py`). They differ only in what comes
before (a request drains the session's unread buffer and holds its lock) and
after (a request may report the exit and forget the session); the manager
does those parts.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from ..output.collector import HeadTailCollector
from ..session import PtySession
from .waits import EndedBy, Wait, WaitFor


@dataclass(frozen=True)
class Collected:
    output: str  # middle-truncated
    token_count: int  # of everything collected, before truncation
    ended_by: EndedBy
    command_exit_code: int | None
    seconds: float


async def collect(
    session: PtySession,
    wait_for: WaitFor,
    *,
    max_bytes: int,
    text: str = "",
    already: bytes = b"",
    prompted: bool = False,
    stop: asyncio.Event | None = None,
) -> Collected:
    """Subscribe, type `text`, wait, truncate. `already`: earlier output this wait counts as its own."""
    started = time.monotonic()
    collector = HeadTailCollector(max_bytes)
    collector.push(already)
    unsubscribe = session.subscribe(collector.push)
    wait = Wait(session, wait_for, stop, already=already, prompted=prompted)
    try:
        # A program that exited while a grandchild holds the terminal cannot
        # read: collect its last words instead (as Codex does).
        if text and session.alive:
            session.write(text)
        ended_by = await wait.ended if not session.finished else EndedBy.EXIT
        if ended_by is EndedBy.COMMAND:
            # The shell prints its prompt right after saying so: show it when it is already there.
            session.terminal.read_pending()
    finally:
        wait.close()
        unsubscribe()
    output, _ = collector.truncated()
    return Collected(output, collector.token_count, ended_by, wait.command_exit_code, time.monotonic() - started)
