"""One request, whichever face makes it: start or type, then wait, on the engine's loop."""

from __future__ import annotations

import asyncio

import pytest

from unified_exec_kernel.notebook.turns import Turn, finish_turn, open_turn, take_turn
from unified_exec_kernel.protocol.notices import noticeboard


async def test_a_start_runs_to_its_end_and_its_wall_time_counts_from_the_spawn(manager):
    seen = []
    opened = await open_turn(manager, Turn(argv=["bash", "-c", "echo started; sleep 0.2; echo done"]), watch=lambda s: seen.append(s.session_id) or (lambda: None))
    assert seen == [opened.session_id] and opened.spawned is not None  # watched from its first byte
    await asyncio.sleep(0.3)  # a live view shown in between: the result's time still runs from the spawn
    result = await finish_turn(manager, Turn(argv=["bash"]), opened)
    assert "started" in result.output and "done" in result.output and result.exit_code == 0
    assert result.wall_time >= 0.3


async def test_typing_into_a_session_by_name_waits_for_the_pattern(manager):
    started = await take_turn(manager, Turn(argv=["bash", "--norc", "-i"], name="sh", integration=False, timeout_ms=300))
    assert started.session_id is not None
    typed = await take_turn(manager, Turn(session="sh", text="echo MARK-$((6*7))\n", until=r"^MARK-42", timeout_ms=10_000))
    assert typed.ended_by == "match" and "MARK-42" in typed.output


async def test_a_bad_pattern_is_refused_before_anything_starts(manager):
    with pytest.raises(ValueError, match="until"):
        await open_turn(manager, Turn(argv=["bash", "-c", "echo never"], until="("))
    assert manager.list_sessions() == []


async def test_a_match_is_told_to_whoever_listens_for_notices(manager):
    heard = []
    stop = noticeboard(manager).listen(heard.append)
    try:
        await take_turn(manager, Turn(argv=["bash", "-c", "echo READY; sleep 5"], until="READY", timeout_ms=10_000))
    finally:
        stop()
    matched = [notice for notice in heard if notice.get("event") == "matched"]
    assert len(matched) == 1 and matched[0]["type"] == "session_event" and "READY" in str(matched[0]), heard
