"""The endpoint both carriers share: each message one manager call, each failure one `error`."""

import asyncio
import contextlib

import pytest

from unified_exec_kernel import UnifiedExecSessionManager
from unified_exec_kernel.protocol.endpoint import Endpoint


@contextlib.asynccontextmanager
async def speaking_to(manager: UnifiedExecSessionManager):
    """An endpoint on `manager` and the list of what it sends; both closed after."""
    sent = []
    endpoint = Endpoint(manager, sent.append)
    try:
        yield endpoint, sent
    finally:
        endpoint.close()
        await manager.close_all()


@pytest.fixture
async def peer():
    async with speaking_to(UnifiedExecSessionManager()) as both:
        yield both


async def answer(sent, kind, rid, timeout=10):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = [m for m in sent if m.get("type") == kind and m.get("request_id") == rid]
        if found:
            return found[-1]
        assert loop.time() < deadline, f"no {kind} for {rid}; sent {sent[-5:]}"
        await asyncio.sleep(0.01)


async def test_exec_streams_output_events_with_offsets_then_the_result(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": 1, "session_id": None, "input_chunks": ["bash", "-c", "echo one; sleep 0.3; echo two"], "timeout_ms": 5000})
    result = await answer(sent, "result", 1)
    outputs = [m for m in sent if m["type"] == "output"]
    assert "".join(m["data"] for m in outputs) == result["output"] == "one\r\ntwo\r\n"
    end = 0
    for event in outputs:
        assert event["offset"] - event["skipped"] == end
        end = event["end"]


async def test_a_flood_of_output_events_says_what_it_skipped(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": 2, "session_id": None, "input_chunks": ["bash", "-c", "head -c 3000000 /dev/zero | tr '\\0' z"], "timeout_ms": 30_000})
    await answer(sent, "result", 2, timeout=30)
    outputs = [m for m in sent if m["type"] == "output"]
    assert all(len(m["data"].encode()) <= 16 * 1024 for m in outputs)
    assert outputs[-1]["end"] == 3_000_000
    assert sum(len(m["data"]) + m["skipped"] for m in outputs) == 3_000_000


async def test_a_request_id_that_cannot_be_echoed_is_answered_with_null(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "list", "request_id": [1]})
    assert sent[-1]["type"] == "error" and sent[-1]["request_id"] is None
    assert sent[-1]["error"] == "BadRequest"


@pytest.mark.parametrize("sig", [99, -1, 99999999999999, "99999999999999", True])
async def test_a_signal_out_of_range_is_a_bad_request(peer, sig):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": "s", "session_id": None, "input_chunks": ["sleep", "30"], "timeout_ms": 0})
    sid = (await answer(sent, "result", "s"))["session_id"]
    endpoint.receive({"type": "kill", "request_id": "k", "session_id": sid, "signal": sig})
    error = await answer(sent, "error", "k")
    assert error["error"] == "BadRequest" and "unknown signal" in error["message"]


async def test_a_finished_session_releases_what_watched_it(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": 3, "session_id": None, "input_chunks": ["bash", "--norc", "-i"], "timeout_ms": 0})
    sid = (await answer(sent, "result", 3))["session_id"]
    endpoint.receive({"type": "attach", "request_id": 4, "session_id": sid})
    assert sid in endpoint.streams
    await endpoint.manager.kill(sid)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while sid in endpoint.streams:
        assert loop.time() < deadline, "the stream outlived its session"
        await asyncio.sleep(0.01)
    assert sent[-1] == {"type": "exited", "session_id": sid, "exit_code": sent[-1]["exit_code"], "closed": True, "reason": "closed"}


async def test_a_carrier_only_takes_its_own_types_and_its_own_session(peer):
    endpoint, _ = peer
    manager = endpoint.manager
    sid = manager.spawn(["bash", "--norc", "-i"])
    widget_sent = []
    widget = Endpoint(manager, widget_sent.append, session=manager.session(sid), types=("attach", "input", "resize"))
    widget.receive({"type": "list", "request_id": 1})
    assert widget_sent[-1]["error"] == "BadRequest" and "unknown message type 'list'" in widget_sent[-1]["message"]
    widget.receive({"type": "resize", "request_id": 2, "rows": 30, "cols": 100})
    assert widget_sent[-1] == {"type": "ok", "request_id": 2, "session_id": sid}
    assert manager.session(sid).size == (30, 100)
    widget.close()


async def test_sessions_list_shows_the_command_the_user_gave():
    async with speaking_to(UnifiedExecSessionManager(shell_integration=True)) as (endpoint, sent):
        endpoint.receive({"type": "exec", "request_id": 1, "session_id": None, "input_chunks": ["bash", "-i"], "timeout_ms": 10_000})
        assert (await answer(sent, "result", 1))["ended_by"] == "command"
        endpoint.receive({"type": "list", "request_id": 2})
        assert [info["command"] for info in (await answer(sent, "sessions", 2))["sessions"]] == [["bash", "-i"]]


@pytest.fixture
async def journaled_peer(tmp_path):
    from unified_exec_kernel.core.journal import JournalStore

    async with speaking_to(UnifiedExecSessionManager(shell_integration=True, journals=JournalStore(str(tmp_path / "k")))) as both:
        yield both


async def test_read_pages_a_finished_sessions_output_by_bytes(journaled_peer):
    endpoint, sent = journaled_peer
    endpoint.receive({"type": "exec", "request_id": 1, "session_id": None, "input_chunks": ["bash", "-c", "seq 1 20000"], "name": "s", "timeout_ms": 30000})
    assert (await answer(sent, "result", 1))["session_id"] is None  # exited: only the journal has it
    whole = b"".join(b"%d\r\n" % n for n in range(1, 20001))
    got, start = b"", 0
    for rid in range(10, 20):
        endpoint.receive({"type": "read", "request_id": rid, "session_id": "s", "start": start, "max_bytes": 50_000})
        reply = await answer(sent, "journal", rid)
        assert reply["start"] == start and reply["output_end"] == len(whole)
        got += reply["data"].encode()
        start = reply["end"]
        if not reply["more"]:
            break
    assert got == whole and reply["notes"] == []


async def test_read_of_a_command_gives_its_output_and_exit_code(journaled_peer):
    endpoint, sent = journaled_peer
    endpoint.receive({"type": "exec", "request_id": 1, "session_id": None, "input_chunks": ["bash", "-i"], "name": "sh"})
    await answer(sent, "result", 1)
    endpoint.receive({"type": "exec", "request_id": 2, "session_id": "sh", "input_chunks": ["printf 'x\\ny\\n'; false\n"]})
    await answer(sent, "result", 2)
    endpoint.receive({"type": "read", "request_id": 3, "session_id": "sh", "command": -1})
    reply = await answer(sent, "journal", 3)
    assert reply["data"] == "x\r\ny\r\n" and not reply["more"]
    assert reply["command"]["number"] == 1 and reply["command"]["exit_code"] == 1
    assert reply["command"]["text"] == "printf 'x\\ny\\n'; false"


@pytest.mark.parametrize(
    "fields, error, message",
    [
        ({"session_id": "nope"}, "UnknownJournal", "no journal for session 'nope' (journals: s)"),
        ({"session_id": "s", "start": -1}, "BadRequest", "start must be 0 or more"),
        ({"session_id": "s", "start": 10**9}, "BadRequest", "start 1000000000 is past the end of the output (4)"),
        ({"session_id": "s", "command": 1}, "BadRequest", "no command 1: the session ran 0"),
        ({"session_id": "s", "max_bytes": 0}, "BadRequest", "max_bytes must be 1 to 1048576"),
        ({"session_id": "s", "start": 5, "end": 2}, "BadRequest", "end must not be before start"),
    ],
)
async def test_a_bad_read_gets_one_line(journaled_peer, fields, error, message):
    endpoint, sent = journaled_peer
    endpoint.receive({"type": "exec", "request_id": 1, "session_id": None, "input_chunks": ["echo", "hi"], "name": "s"})
    await answer(sent, "result", 1)
    endpoint.receive({"type": "read", "request_id": 2, **fields})
    reply = await answer(sent, "error", 2)
    assert (reply["error"], reply["message"]) == (error, message)


async def test_read_without_journals_says_they_are_off(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "read", "request_id": 1, "session_id": 0})
    reply = await answer(sent, "error", 1)
    assert reply["message"] == "journals are off in this kernel (c.UnifiedExec.journal = False)"


async def test_exec_keep_says_in_one_line_when_it_cannot_keep(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": "k", "session_id": None, "input_chunks": ["true"], "keep": True})
    error = await answer(sent, "error", "k")
    assert (error["error"], error["message"]) == ("CreateSession", "Failed to create session: true: kept sessions are off in this kernel (they need a kernel started by Jupyter, with its connection file)")
    endpoint.receive({"type": "exec", "request_id": "s", "session_id": None, "input_chunks": ["sleep", "30"], "timeout_ms": 0})
    session_id = (await answer(sent, "result", "s"))["session_id"]
    endpoint.receive({"type": "exec", "request_id": "w", "session_id": session_id, "input_chunks": ["x"], "keep": True})
    error = await answer(sent, "error", "w")
    assert error["message"] == "keep is chosen when a session starts; a running session cannot become kept"


# -- the codex profile (core/codex_profile.py) --------------------------------


async def test_the_codex_profile_runs_exec_command_on_pipes_and_answers_in_codex_text(peer):
    from ..core.test_agent_format import parse

    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": "c1", "profile": "codex", "cmd": "echo $TERM; test -t 1 || echo pipes; sleep 30", "login": False, "yield_time_ms": 2000})
    result = await answer(sent, "result", "c1")
    fields = parse(result["output"])
    assert fields["output"] == "dumb\npipes\n" and fields["session"] == str(result["session_id"])
    endpoint.receive({"type": "exec", "request_id": "c2", "profile": "codex", "session_id": result["session_id"], "chars": "y\n"})
    refused = await answer(sent, "error", "c2")
    assert (refused["error"], refused["message"]) == ("StdinClosed", "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open")
    endpoint.receive({"type": "exec", "request_id": "c3", "profile": "codex", "session_id": result["session_id"], "chars": "\u0003", "yield_time_ms": 5000, "format": "text"})
    interrupted = await answer(sent, "result", "c3")
    assert (interrupted["session_id"], interrupted["exit_code"], interrupted["output"]) == (None, -2, "")


async def test_an_until_python_cannot_compile_is_a_bad_request_and_starts_nothing(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": "deep", "input_chunks": ["sleep", "100"], "until": "(" * 600})
    endpoint.receive({"type": "exec", "request_id": "long", "input_chunks": ["sleep", "100"], "until": "x" * 1001})
    deep, long = await answer(sent, "error", "deep"), await answer(sent, "error", "long")
    assert (deep["error"], deep["message"]) == ("BadRequest", "until is not a valid regular expression: nested too deeply")
    assert (long["error"], long["message"]) == ("BadRequest", "until is too long: 1001 characters, at most 1000")
    assert endpoint.manager.list_sessions() == []


async def test_the_codex_profile_refuses_bad_arguments_in_one_line(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": 1, "profile": "codex", "cmd": "true", "yield_time_ms": -5})
    endpoint.receive({"type": "exec", "request_id": 2, "profile": "bash", "cmd": "true"})
    endpoint.receive({"type": "exec", "request_id": 3, "profile": "codex", "session_id": 99, "chars": ""})
    assert (await answer(sent, "error", 1))["message"] == "yield_time_ms must be a non-negative integer, not -5"
    assert (await answer(sent, "error", 2))["message"] == "profile must be 'codex' or null"
    assert (await answer(sent, "error", 3))["error"] == "UnknownSessionId"


async def test_a_view_of_a_pipes_session_is_told_it_has_no_terminal_and_its_keys_are_refused(peer):
    endpoint, sent = peer
    endpoint.receive({"type": "exec", "request_id": "p", "profile": "codex", "cmd": "echo out; sleep 30", "login": False, "yield_time_ms": 500})
    session_id = (await answer(sent, "result", "p"))["session_id"]
    endpoint.receive({"type": "attach", "request_id": "a", "session_id": session_id})
    assert (await answer(sent, "attached", "a"))["tty"] is False
    endpoint.receive({"type": "input", "request_id": "i", "session_id": session_id, "data": "typed"})
    assert (await answer(sent, "error", "i"))["error"] == "StdinClosed"
    endpoint.receive({"type": "exec", "request_id": "t", "profile": "codex", "cmd": "cat", "tty": True, "login": False, "yield_time_ms": 250})
    endpoint.receive({"type": "attach", "request_id": "b", "session_id": (await answer(sent, "result", "t"))["session_id"]})
    assert (await answer(sent, "attached", "b"))["tty"] is True


@pytest.mark.parametrize("size", [1024 * 1024, 10 * 1024 * 1024])
async def test_every_error_is_one_short_line_whatever_the_input(journaled_peer, size):
    endpoint, sent = journaled_peer
    big = "x" * size
    endpoint.receive({"type": "exec", "request_id": "s", "session_id": None, "input_chunks": ["cat"], "name": "s", "timeout_ms": 0})
    await answer(sent, "result", "s")
    refused = [
        {"type": big},
        {"type": "exec", "session_id": None, "input_chunks": [big]},
        {"type": "exec", "session_id": None, "input_chunks": ["true"], "name": "-" + big},
        {"type": "exec", "session_id": None, "input_chunks": ["true"], "cwd": "/" + big},
        {"type": "exec", "session_id": None, "input_chunks": ["true"], "env": {big + "\0": "v"}},
        {"type": "exec", "session_id": None, "input_chunks": ["true"], "until": ")" + big},
        {"type": "exec", "session_id": big, "input_chunks": ["x"]},
        {"type": "exec", "session_id": "s", "input_chunks": ["x"], "until": ")" + big},
        {"type": "input", "session_id": big, "data": "x"},
        {"type": "kill", "session_id": big},
        {"type": "kill", "session_id": "s", "signal": big},
        {"type": "attach", "session_id": big},
        {"type": "watch", "session_id": "s", "until": ")" + big},
        {"type": "unwatch", "watch_id": big},
        {"type": "read", "session_id": big},
    ]
    for number, message in enumerate(refused):
        endpoint.receive({**message, "request_id": number})
        reply = await answer(sent, "error", number)
        assert len(reply["message"]) <= 1024 and "\n" not in reply["message"], (number, len(reply["message"]), reply["message"][:300])
