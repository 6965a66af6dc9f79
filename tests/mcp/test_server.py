"""The MCP server, standalone, through the official SDK's client over stdio: every tool, as an agent calls it."""

import asyncio
import json
import os

import pytest

from unified_exec_kernel.core import codex_profile as codex

from ..core.test_agent_format import parse
from .client import connected


async def test_the_tools_are_listed_with_codex_names_descriptions_and_parameters():
    async with connected() as agent:
        tools = {tool.name: tool.model_dump(by_alias=True) for tool in (await agent.session.list_tools()).tools}
    assert set(tools) == {"exec_command", "write_stdin", "list_sessions", "read_output", "kill_session", "watch_output"}
    assert tools["exec_command"]["description"] == "Runs a command in a PTY, returning output or a session ID for ongoing interaction."
    assert tools["write_stdin"]["description"] == "Writes characters to an existing unified exec session and returns recent output."
    assert set(tools["exec_command"]["inputSchema"]["properties"]) == {"cmd", "workdir", "shell", "tty", "login", "yield_time_ms", "max_output_tokens"}
    assert tools["exec_command"]["inputSchema"]["required"] == ["cmd"]
    assert set(tools["write_stdin"]["inputSchema"]["properties"]) == {"session_id", "chars", "yield_time_ms", "max_output_tokens"}


async def test_exec_command_and_write_stdin_answer_in_codex_grammar_and_tell_the_exit():
    async with connected() as agent:
        quick = parse(await agent.text("exec_command", cmd="echo hi; exit 7"))
        assert (quick["exit"], quick["session"], quick["output"]) == ("7", None, "hi\n")
        running = parse(await agent.text("exec_command", cmd="echo start; sleep 1; echo done", login=False, yield_time_ms=250))
        assert running["exit"] is None and running["output"] == "start\n"
        session_id = int(running["session"])
        polled = parse(await agent.text("write_stdin", session_id=session_id))  # an empty write polls
        assert (polled["exit"], polled["output"]) == ("0", "done\n")


async def test_an_exit_is_told_once_when_no_answer_reported_it_and_not_when_a_poll_did():
    async with connected() as agent:
        parse(await agent.text("exec_command", cmd="echo hi; exit 7"))  # answered with its exit: not told
        polled_id = int(parse(await agent.text("exec_command", cmd="echo start; sleep 0.5; echo done", login=False, yield_time_ms=250))["session"])
        polled = parse(await agent.text("write_stdin", session_id=polled_id))  # an empty write waits for the exit
        assert (polled["exit"], polled["output"]) == ("0", "done\n")
        # Nobody polls this one: its end is told. Notifications keep their order, so once this one is
        # here, the polled session's exit (which came first) would be here too had it been sent.
        left_id = int(parse(await agent.text("exec_command", cmd="sleep 0.5; echo bye; exit 3", login=False, yield_time_ms=250))["session"])
        told = await agent.notification(lambda n: n["event"] == "exited" and n["session_id"] == left_id)
        assert told["exit_code"] == 3 and told["lines"] == ["bye"] and told["closed"] is False
        assert [n["session_id"] for n in agent.notifications if n["event"] == "exited"] == [left_id]


async def test_tty_false_has_stdin_closed_but_ctrl_c_and_tty_true_takes_input():
    async with connected() as agent:
        pipes = parse(await agent.text("exec_command", cmd="test -t 0 || echo pipes; sleep 30", login=False, yield_time_ms=1000))
        assert pipes["output"] == "pipes\n"
        refused, error = await agent.call("write_stdin", session_id=int(pipes["session"]), chars="x\n")
        assert error and refused == "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"
        interrupted = parse(await agent.text("write_stdin", session_id=int(pipes["session"]), chars="\u0003", yield_time_ms=5000))
        assert interrupted["exit"] == "130"
        repl = parse(await agent.text("exec_command", cmd="python3 -i -q", tty=True, login=False, yield_time_ms=1000))
        answer = parse(await agent.text("write_stdin", session_id=int(repl["session"]), chars="6*7\n", yield_time_ms=1000))
        assert "42" in answer["output"] and answer["session"] == repl["session"]


async def test_a_watch_pattern_python_cannot_compile_is_refused_in_one_line():
    async with connected() as agent:
        running = parse(await agent.text("exec_command", cmd="sleep 30", login=False, yield_time_ms=250))
        refused, error = await agent.call("watch_output", session_id=int(running["session"]), pattern="(" * 600)
        assert error and refused == "watch_output failed: pattern is not a valid regular expression: nested too deeply"


async def test_yields_are_clamped_and_max_output_tokens_cuts():
    async with connected() as agent:
        short = parse(await agent.text("exec_command", cmd="sleep 5", yield_time_ms=0, login=False))
        assert float(short["wall"]) >= 0.25 and short["session"] is not None
        cut = parse(await agent.text("exec_command", cmd="seq 1 5000", max_output_tokens=10, login=False))
        assert cut["output"].startswith("1\n") and cut["output"].endswith("5000\n") and "tokens truncated" in cut["output"]
        assert len(cut["output"].encode()) <= 41 and int(cut["tokens"]) > 5000


async def test_agent_calls_get_the_agent_environment():
    async with connected(env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "PAGER": "less", "LANG": "de_DE.UTF-8"}) as agent:
        names = " ".join(codex.AGENT_ENV)
        shown = parse(await agent.text("exec_command", cmd=f'for v in {names}; do echo "$v=${{!v-unset}}"; done', shell="/bin/bash"))
    assert shown["output"].splitlines() == [f"{name}={value}" for name, value in codex.AGENT_ENV.items()]


async def test_64_sessions_at_most_the_8_newest_protected_the_oldest_exited_pruned_first():
    async with connected() as agent:
        for number in range(64):
            # Session 1 exits on its own, unreported; so does 62, among the 8 newest.
            cmd = "sleep 0.5" if number in (1, 62) else "sleep 60"
            assert parse(await agent.text("exec_command", cmd=cmd, login=False, yield_time_ms=250))["session"] == str(number)
        await asyncio.sleep(0.6)
        await agent.text("exec_command", cmd="sleep 60", login=False, yield_time_ms=250)
        ids = {entry["session_id"] for entry in await agent.sessions()}
        assert len(ids) == 64 and 1 not in ids and 0 in ids  # the exited one went, not the oldest
        await agent.text("exec_command", cmd="sleep 60", login=False, yield_time_ms=250)
        ids = {entry["session_id"] for entry in await agent.sessions()}
        assert len(ids) == 64 and 0 not in ids and 62 in ids  # then the oldest; the newest 8 stay, exited or not


async def test_list_sessions_shows_what_codex_ps_shows():
    program = "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print('port', s.getsockname()[1], flush=True); print('a'); print('b'); print('c', flush=True); time.sleep(60)"
    async with connected() as agent:
        started = parse(await agent.text("exec_command", cmd=f'python3 -c "{program}"', login=False, yield_time_ms=2000))
        port = int(started["output"].split()[1])
        (entry,) = await agent.sessions()
    assert entry["session_id"] == int(started["session"]) and entry["running"] and entry["exit_code"] is None
    assert entry["listening_ports"] == [port] and entry["last_lines"] == ["a", "b", "c"]
    assert entry["rss_bytes"] > 1_000_000 and entry["cpu_percent"] >= 0 and entry["age_seconds"] >= 0 and entry["cwd"]
    assert entry["command"].startswith("python3 -c") and entry["pid"] > 0 and entry["tty"] is False  # its cmd, not the shell around it


async def test_read_output_pages_the_journal_and_kill_session_ends_a_session():
    async with connected() as agent:
        done = parse(await agent.text("exec_command", cmd="seq 1 100", login=False))
        assert done["exit"] == "0"
        assert await agent.text("read_output", session_id=0, tail=2) == "99\n100\n"
        assert await agent.text("read_output", session_id=0, grep="^5[05]$") == "50:50\n55:55\n"  # line numbers, as grep -n
        running = parse(await agent.text("exec_command", cmd="sleep 60", login=False, yield_time_ms=250))
        assert await agent.text("kill_session", session_id=int(running["session"])) == f"session {running['session']}: closed"
        told = await agent.notification(lambda n: n["event"] == "exited" and n["session_id"] == int(running["session"]))
        assert told["closed"] is True
        assert await agent.sessions() == []


async def test_journals_live_in_a_locked_directory_of_the_runtime_dir_and_go_with_the_server(tmp_path):
    """Made as a kernel's are: a server killed hard leaves a directory the next one sweeps (not /tmp litter)."""
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    leftover = tmp_path / "uexec-journals-mcp-1-0000000000000000"  # a dead server's: its lock is free
    leftover.mkdir(mode=0o700)
    (leftover / ".owner").write_text("1\n")
    (leftover / "session-0.cast").write_text("x")
    async with connected(env=env) as agent:
        await agent.text("exec_command", cmd="echo kept", login=False)
        [directory] = [path for path in tmp_path.iterdir() if path.name.startswith("uexec-journals-mcp-")]
        assert directory != leftover and {".owner", "session-0.cast"} <= {path.name for path in directory.iterdir()}
        assert "kept" in await agent.text("read_output", session_id=0)
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("uexec-journals-")] == []


async def test_a_watched_pattern_notifies_matching_lines_in_batches():
    async with connected() as agent:
        started = parse(await agent.text("exec_command", cmd="sleep 0.5; for i in $(seq 1 300); do echo line $i; done; echo READY", login=False, yield_time_ms=250))
        session_id = int(started["session"])
        await agent.text("watch_output", session_id=session_id, pattern=r"^(READY|line \d+)$")
        await agent.notification(lambda n: n["event"] == "exited")
        batches = [n for n in agent.notifications if n["event"] == "output"]
        assert agent.notifications[-1]["event"] == "exited"  # after what still waited; the count of what the cap left out with it
        assert all(len(n["lines"]) <= 40 for n in batches)
        assert sum(len(n["lines"]) for n in batches) == 200 and batches[-1]["left_out"] == 101
        assert batches[0]["lines"][0] == "line 1"


@pytest.mark.parametrize(
    "tool, arguments, message",
    [
        ("write_stdin", {"session_id": 12345}, "write_stdin failed: no session with id 12345"),
        ("write_stdin", {"session_id": "zero"}, "write_stdin failed: session_id must be a non-negative integer, not 'zero'"),
        ("exec_command", {"cmd": ["ls"]}, "exec_command failed: cmd must be a non-empty string"),
        ("exec_command", {"cmd": "true", "yield_time_ms": -1}, "exec_command failed: yield_time_ms must be a non-negative integer, not -1"),
        ("write_stdin", {"session_id": 0, "chars": "x" * (2 * 1024 * 1024)}, "write_stdin failed: chars is too long"),
        ("read_output", {"session_id": 7}, "read_output failed:"),
        ("kill_session", {"session_id": 3, "signal": "SIGNOPE"}, "kill_session failed:"),
        ("rm_rf", {}, "unknown tool 'rm_rf'"),
    ],
)
async def test_bad_input_is_one_line_and_the_server_lives_on(tool, arguments, message):
    async with connected() as agent:
        text, error = await agent.call(tool, **arguments)
        assert error and text.startswith(message) and "\n" not in text
        assert parse(await agent.text("exec_command", cmd="echo alive", login=False))["output"] == "alive\n"


async def test_every_refused_call_is_one_short_line_whatever_its_input():
    async with connected() as agent:
        session_id = int(parse(await agent.text("exec_command", cmd="cat", tty=True, login=False, yield_time_ms=250))["session"])
        for size in (1024 * 1024, 10 * 1024 * 1024):
            big = "x" * size
            calls = [
                ("exec_command", {"cmd": big, "login": False}),
                ("exec_command", {"cmd": "true", "workdir": "/" + big}),
                ("exec_command", {"cmd": "true", "shell": big}),
                ("exec_command", {"cmd": "true", "yield_time_ms": big}),
                ("exec_command", {"cmd": "true", big: 1}),
                ("write_stdin", {"session_id": big}),
                ("write_stdin", {"session_id": 99999, "chars": big}),
                ("read_output", {"session_id": big}),
                ("read_output", {"session_id": session_id, "lines": big}),
                ("read_output", {"session_id": session_id, "grep": ")" + big}),
                ("kill_session", {"session_id": session_id, "signal": big}),
                ("watch_output", {"session_id": session_id, "pattern": ")" + big}),
                (big, {}),
            ]
            for tool, arguments in calls:
                text, error = await agent.call(tool, **arguments)
                assert error and len(text) <= 1024 and "\n" not in text, (tool[:20], list(arguments)[-1][:20], len(text), text[:300])
        assert parse(await agent.text("exec_command", cmd="echo alive", login=False))["output"] == "alive\n"
