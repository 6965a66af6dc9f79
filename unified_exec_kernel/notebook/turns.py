"""One request to a session, however it is made: start a program or type into one, then wait.

`Turn` is what a `%%uexec` cell (cell_run.py) and every call of sessions.py
send; `open_turn` and `finish_turn` run it on the engine's loop, in one trip
or two (a live view is shown in between). Its own module, so that a kernel's
first cell loads this much and not the Python API beside it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from ..core.completion.collect import compile_until
from ..core.manager import UnifiedExecSessionManager
from ..core.models import UnifiedExecResult


@dataclass(frozen=True)
class Turn:
    """Start `argv` in a new session, or type `text` into `session` (an id or a name); then wait.

    `timeout_ms` None: the manager's default (a typed command's or a shell's
    first prompt's: its maximum).
    """

    argv: Sequence[str] | None = None
    session: int | str | None = None
    text: str = ""
    timeout_ms: int | None = None
    until: str | None = None
    quiet_ms: int | None = None
    name: str | None = None
    cwd: str | os.PathLike | None = None
    env: Mapping[str, str | os.PathLike] | None = None
    integration: bool | None = None
    keep: bool | None = None
    tty: bool = True
    reader: Hashable = None  # who asks: a person's cells (None), a `Session` object (its own cursor)


@dataclass(frozen=True)
class Opened:
    session_id: int
    spawned: float | None  # when a new session started (the engine's clock is this process's)
    stop_watching: Callable[[], None]


async def open_turn(manager: UnifiedExecSessionManager, turn: Turn, watch=None) -> Opened:
    """On the engine's loop: start the session or find it; `watch(session)` sees it from its first byte.

    In one step once it is open: the engine reads a new session at once, so a
    watcher added a trip later would miss its first words. A bad `until`
    is refused before anything starts or is typed.
    """
    compile_until(turn.until)
    spawned = time.monotonic() if turn.argv is not None else None
    if turn.argv is not None:
        session_id = await manager.launch(
            turn.argv, name=turn.name, cwd=turn.cwd, env=turn.env, integration=turn.integration, keep=turn.keep, tty=turn.tty
        )
    else:
        session_id = manager.session(turn.session).session_id
    stop_watching = watch(manager.session(session_id)) if watch is not None else (lambda: None)
    return Opened(session_id, spawned, stop_watching)


async def finish_turn(manager: UnifiedExecSessionManager, turn: Turn, opened: Opened, stop: asyncio.Event | None = None) -> UnifiedExecResult:
    """On the engine's loop: type the turn's text and wait (`stop`: an interrupt ends the wait early)."""
    waited_from = time.monotonic()
    session = manager.session(opened.session_id)
    try:
        result = await manager.write(
            opened.session_id,
            turn.text,
            timeout_ms=turn.timeout_ms,
            stop=stop,
            until=turn.until,
            quiet_ms=turn.quiet_ms,
            # What its own input produced, not what came before (an empty write shows that).
            earlier_output=not turn.text,
            # A new session's wait is a start's: an integrated shell waits for its first prompt.
            first_prompt=turn.argv is not None,
            reader=turn.reader,
        )
    finally:
        opened.stop_watching()
    if result.ended_by == "match":  # a person away from the page hears of it (protocol/notices.py)
        from ..protocol.notices import noticeboard  # with the first match: the protocol is a page's, not every kernel's

        noticeboard(manager).matched(session, turn.until, result.output, "until")
    if opened.spawned is None:
        return result
    # A start's time runs from the spawn (a live view may have been shown in between).
    return dataclasses.replace(result, wall_time=result.wall_time + waited_from - opened.spawned)


async def take_turn(manager: UnifiedExecSessionManager, turn: Turn, watch=None, stop: asyncio.Event | None = None) -> UnifiedExecResult:
    """`open_turn` then `finish_turn`, in one trip to the engine."""
    return await finish_turn(manager, turn, await open_turn(manager, turn, watch), stop)
