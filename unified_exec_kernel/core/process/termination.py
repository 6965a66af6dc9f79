"""Ending every process of a session: hang up, wait a grace, then kill.

Written once as a sequence of steps that yields how long to wait before the
next look, so the loop (`terminate`, awaiting) and a thread that must not
touch the loop (`terminate_blocking`: ipykernel's control thread, atexit)
run the very same escalation. Only live members are signalled: a reaped
leader's pid may already belong to somebody else, but a session id is not
reused while any member of the session lives, and each signal goes through a
pidfd checked against the session (`procs.signal_members`, as the guardian does).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator, Sequence

from . import procs
from .procs import HANGUP_SIGNALS
KILL_ROUNDS = 20


def _steps(leaders: Sequence[int], grace: float) -> Iterator[float]:
    members = procs.session_members(leaders)
    _signal(members, HANGUP_SIGNALS)
    deadline = time.monotonic() + grace
    delay = 0.005
    while _any(members) and time.monotonic() < deadline:
        yield min(delay, max(deadline - time.monotonic(), 0))
        delay = min(delay * 2, 0.05)
        members = procs.session_members(leaders)
    for _ in range(KILL_ROUNDS):
        if not _any(members):
            return
        _signal(members, [signal.SIGKILL])
        yield 0.01
        members = procs.session_members(leaders)


def _signal(members: dict[int, list[int]], signals) -> None:
    # Checked against the session through a pidfd: the guardian signals the same way.
    for session_id, pids in members.items():
        procs.signal_members(session_id, pids, signals)


def _any(members: dict[int, list[int]]) -> bool:
    return any(members.values())


async def terminate(leaders: Sequence[int], grace: float) -> None:
    """End these sessions from the loop, without blocking it."""
    for delay in _steps(leaders, grace):
        await asyncio.sleep(delay)


def terminate_blocking(leaders: Sequence[int], grace: float) -> None:
    """End these sessions from any thread. Blocks: never call it on the loop."""
    for delay in _steps(leaders, grace):
        time.sleep(delay)
