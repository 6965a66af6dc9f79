"""What of a manager's sessions counts as activity (issue 38, 1): real sessions in real PTYs, waits on conditions."""

from __future__ import annotations

import asyncio

import pytest

from unified_exec_kernel import UnifiedExecSessionManager
from unified_exec_kernel.core.activity import ActivityWatch


async def printed(manager: UnifiedExecSessionManager, session_id: int, at_least: int = 1, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while manager.session(session_id).offset < at_least:
        assert loop.time() < deadline, "the session printed nothing"
        await asyncio.sleep(0.02)


async def test_output_counts_a_session_that_printed_since_the_last_look_once(manager):
    watch = ActivityWatch(manager, "output")
    assert not watch.active()  # no session
    sid = manager.spawn(["sh", "-c", "echo tick; read line; echo tock; sleep 30"])
    await printed(manager, sid)
    assert watch.active()
    assert not watch.active()  # nothing new since
    manager.session(sid).write(b"go\n")
    await printed(manager, sid, manager.session(sid).offset + 1)
    assert watch.active()


async def test_output_does_not_count_a_silent_session_and_running_does(manager):
    silent = manager.spawn(["sleep", "30"])
    output, running = ActivityWatch(manager, "output"), ActivityWatch(manager, "running")
    assert manager.session(silent).offset == 0
    assert not output.active() and running.active()
    assert running.active()  # as long as it runs


async def test_a_session_that_printed_its_last_words_and_ended_counts_once(manager):
    sid = manager.spawn(["sh", "-c", "echo bye"])
    watch = ActivityWatch(manager, "output")
    await asyncio.wait_for(manager.session(sid).wait_finished(), 10)
    assert watch.active() and not watch.active()
    assert not ActivityWatch(manager, "running").active()


async def test_none_never_counts(manager):
    sid = manager.spawn(["sh", "-c", "echo tick; sleep 30"])
    await printed(manager, sid)
    assert not ActivityWatch(manager, "none").active()


def test_an_unknown_mode_is_refused_in_one_line():
    with pytest.raises(ValueError, match="activity must be one of output, running, none, not 'busy'"):
        ActivityWatch(UnifiedExecSessionManager(), "busy")
