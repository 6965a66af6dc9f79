"""A session's end, or the line a wait was for, told once to every listener (issue 34, 5).

Real sessions in real PTYs, a real endpoint for the waits; the listener
stands for a page's comm or direct channel. Every wait is for a condition.
"""

from __future__ import annotations

import asyncio

import pytest

from unified_exec_kernel import UnifiedExecSessionManager
from unified_exec_kernel.protocol.endpoint import Endpoint
from unified_exec_kernel.protocol.notices import matched_line, noticeboard

from .test_endpoint import answer


@pytest.fixture
async def heard():
    manager = UnifiedExecSessionManager()
    events: list[dict] = []
    stop = noticeboard(manager).listen(events.append)
    try:
        yield manager, events
    finally:
        stop()
        await manager.close_all()


async def event_of(events, predicate, timeout: float = 10) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = [event for event in events if predicate(event)]
        if found:
            return found[0]
        assert loop.time() < deadline, f"no such event: {events}"
        await asyncio.sleep(0.02)


async def test_a_session_that_ends_is_told_once_with_its_name_code_and_time(heard):
    manager, events = heard
    sid = manager.spawn(["sh", "-c", "sleep 0.3; exit 3"], name="train")
    event = await event_of(events, lambda e: e["session_id"] == sid)
    assert event["type"] == "session_event" and event["event"] == "exited"
    assert (event["name"], event["exit_code"], event["command"]) == ("train", 3, ["sh", "-c", "sleep 0.3; exit 3"])
    assert 0.3 <= event["seconds"] < 10
    # Collecting its exit (a cell, a request) removes it: still one event.
    assert (await manager.write(sid, "", timeout_ms=2000)).exit_code == 3
    other = manager.spawn(["true"])
    await event_of(events, lambda e: e["session_id"] == other)
    assert [e["session_id"] for e in events].count(sid) == 1


async def test_a_session_closed_on_purpose_is_not_news(heard):
    manager, events = heard
    killed = manager.spawn(["sleep", "30"])
    await manager.kill(killed)
    ended = manager.spawn(["sh", "-c", "exit 0"])
    await event_of(events, lambda e: e["session_id"] == ended)
    assert [e for e in events if e["session_id"] == killed] == []


async def test_one_that_ended_before_anyone_listened_is_not_told():
    manager = UnifiedExecSessionManager()
    try:
        old = manager.spawn(["true"])
        while manager.session(old).alive:
            await asyncio.sleep(0.02)
        events: list[dict] = []
        stop = noticeboard(manager).listen(events.append)
        new = manager.spawn(["true"])
        await event_of(events, lambda e: e["session_id"] == new)
        assert [e["session_id"] for e in events] == [new]
        # A listener that stopped hears nothing more; one still listening does.
        stop()
        later: list[dict] = []
        stop_later = noticeboard(manager).listen(later.append)
        last = manager.spawn(["true"])
        await event_of(later, lambda e: e["session_id"] == last)
        assert [e["session_id"] for e in events] == [new]
        stop_later()
    finally:
        await manager.close_all()


async def test_the_line_a_watch_or_an_until_waited_for(heard):
    manager, events = heard
    sent = []
    endpoint = Endpoint(manager, sent.append)
    try:
        endpoint.receive({"type": "exec", "request_id": "s", "session_id": None, "name": "dev",
                          "input_chunks": ["sh", "-c", "read go; printf '\\033[32mListening on port 8000\\033[0m\\n'; read more; echo epoch 10 done; sleep 30"],
                          "until": "Listening", "timeout_ms": 0})
        sid = (await answer(sent, "result", "s"))["session_id"]
        endpoint.receive({"type": "watch", "request_id": "w", "session_id": sid, "until": r"epoch \d+ done", "timeout_ms": 20000})
        await answer(sent, "watching", "w")
        endpoint.receive({"type": "exec", "request_id": "u", "session_id": sid, "input_chunks": ["go\n"], "until": "Listening on", "timeout_ms": 10000})
        assert (await answer(sent, "result", "u"))["ended_by"] == "match"
        until = await event_of(events, lambda e: e["by"] == "until")
        assert (until["event"], until["name"], until["line"]) == ("matched", "dev", "Listening on port 8000")
        endpoint.receive({"type": "input", "session_id": sid, "data": "more\n"})
        await answer(sent, "fired", "w")
        watch = await event_of(events, lambda e: e["by"] == "watch")
        assert (watch["event"], watch["session_id"], watch["line"]) == ("matched", sid, "epoch 10 done")
        assert watch["exit_code"] is None
    finally:
        endpoint.close()


def test_a_matched_line_is_what_a_person_reads():
    assert matched_line("ready", "boot\r\n\x1b[1mserver ready\x1b[0m at :80\r\nmore") == "server ready at :80"
    assert len(matched_line("x", "x" * 500)) == 200
    # Matched only across a redrawn line: the pattern stands for it.
    assert matched_line("a.b", "a\r\nb") == "a.b"


async def test_a_cull_tells_each_running_session_once_and_notes_why(heard):
    manager, events = heard
    train = manager.spawn(["sleep", "30"], name="train")
    ended = manager.spawn(["true"])
    await event_of(events, lambda e: e["session_id"] == ended)  # ended before the cull: not among its sessions
    ending = noticeboard(manager).culled(600.4)
    assert [session.session_id for session in ending] == [train]
    event = await event_of(events, lambda e: e["event"] == "culled")
    assert (event["session_id"], event["name"], event["exit_code"], event["idle_seconds"]) == (train, "train", None, 600.4)
    assert manager.session(train).note == "ended: its kernel was culled as idle after 10 min"
    await manager.kill(train)  # the shutdown that follows: no second word of it
    assert [e["event"] for e in events if e["session_id"] == train] == ["culled"]
