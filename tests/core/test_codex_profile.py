"""The Codex profile: its parameters, defaults, clamps, shell, environment, pipes and token budget."""

import asyncio
import time

import pytest

from unified_exec_kernel.core import codex_profile as codex
from unified_exec_kernel.core.codex_profile import ExecCommand, ProfileError, WriteStdin
from unified_exec_kernel.core.errors import StdinClosedError

from .test_agent_format import parse


async def run(manager, **arguments):
    return await codex.exec_command(manager, ExecCommand.from_arguments(arguments))


def test_defaults_are_codex_ones():
    request = ExecCommand.from_arguments({"cmd": "echo hi"})
    assert (request.tty, request.yield_time_ms, request.max_output_tokens, request.login) == (False, 10_000, None, None)
    assert request.argv()[1:] == ["-lc", "echo hi"]
    assert ExecCommand.from_arguments({"cmd": "x", "login": False}).argv()[1] == "-c"
    assert ExecCommand.from_arguments({"cmd": "x", "shell": "/bin/sh"}).argv()[0] == "/bin/sh"
    poll = WriteStdin.from_arguments({"session_id": 3})
    assert (poll.chars, poll.yield_time_ms, poll.max_output_tokens) == ("", 250, None)
    assert codex.output_bytes(None) == 40_000


def test_yields_are_clamped_as_codex_clamps_them():
    assert [codex.exec_yield_ms(ms) for ms in (0, 250, 1_000, 30_000, 10**9)] == [250, 250, 1_000, 30_000, 30_000]
    assert [codex.write_yield_ms(ms, "x") for ms in (0, 5_000, 10**9)] == [250, 5_000, 30_000]
    assert [codex.write_yield_ms(ms, "") for ms in (0, 250, 60_000, 10**9)] == [5_000, 5_000, 60_000, 300_000]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({}, "cmd must be a non-empty string"),
        ({"cmd": 5}, "cmd must be a non-empty string"),
        ({"cmd": "x", "yield_time_ms": -1}, "yield_time_ms must be a non-negative integer, not -1"),
        ({"cmd": "x", "yield_time_ms": "10"}, "yield_time_ms must be a non-negative integer"),
        ({"cmd": "x", "tty": "yes"}, "tty must be a boolean"),
        ({"cmd": "x", "max_output_tokens": True}, "max_output_tokens must be a non-negative integer"),
        ({"cmd": "x", "sudo": True}, "unknown argument 'sudo'"),
    ],
)
def test_bad_exec_arguments_are_one_line(arguments, message):
    with pytest.raises(ProfileError, match=message):
        ExecCommand.from_arguments(arguments)


def test_bad_write_arguments_are_one_line():
    with pytest.raises(ProfileError, match="session_id is required"):
        WriteStdin.from_arguments({"chars": "x"})
    with pytest.raises(ProfileError, match="chars is too long"):
        WriteStdin.from_arguments({"session_id": 1, "chars": "x" * (codex.MAX_CHARS_BYTES + 1)})
    assert WriteStdin.from_arguments({"session_id": 1.0, "yield_time_ms": 300.0}).yield_time_ms == 300


async def test_a_quick_command_reports_its_exit_in_codex_grammar(manager):
    result = await run(manager, cmd="echo hi; exit 3")
    fields = parse(codex.render(result))
    assert (fields["exit"], fields["session"], fields["output"]) == ("3", None, "hi\n")
    assert manager.list_sessions() == []  # reported, then forgotten


async def test_agent_calls_get_the_agent_environment(manager):
    names = " ".join(codex.AGENT_ENV)
    result = await run(manager, cmd=f'for v in {names}; do echo "$v=${{!v-unset}}"; done', shell="/bin/bash")
    assert result.output.splitlines() == [f"{name}={value}" for name, value in codex.AGENT_ENV.items()]


async def test_the_default_shell_is_a_login_shell(manager):
    login = await run(manager, cmd="shopt -q login_shell && echo login || echo plain", shell="/bin/bash")
    plain = await run(manager, cmd="shopt -q login_shell && echo login || echo plain", shell="/bin/bash", login=False)
    assert (login.output, plain.output) == ("login\n", "plain\n")


async def test_workdir_is_where_the_command_runs(manager, tmp_path):
    assert (await run(manager, cmd="pwd", workdir=str(tmp_path))).output == f"{tmp_path}\n"


async def test_a_yield_below_the_minimum_still_waits_250ms(manager):
    started = time.monotonic()
    result = await run(manager, cmd="sleep 20", yield_time_ms=0)
    assert result.session_id is not None and 0.24 <= time.monotonic() - started < 5
    await manager.kill(result.session_id)


async def test_tty_false_runs_on_pipes_with_stdin_closed(manager):
    result = await run(manager, cmd="test -t 1 && echo tty || echo pipes; sleep 20", login=False, yield_time_ms=1000)
    assert result.output == "pipes\n" and result.session_id is not None
    with pytest.raises(StdinClosedError, match="rerun exec_command with tty=true"):
        await codex.write_stdin(manager, WriteStdin(result.session_id, "hello\n"))
    interrupted = await codex.write_stdin(manager, WriteStdin(result.session_id, "\x03", yield_time_ms=5_000))
    assert interrupted.session_id is None and parse(codex.render(interrupted))["exit"] == "130"


async def test_tty_true_keeps_stdin_open(manager):
    result = await run(manager, cmd="test -t 1 && echo tty; cat", tty=True, login=False, yield_time_ms=1000)
    assert result.output.startswith("tty") and result.session_id is not None
    echoed = await codex.write_stdin(manager, WriteStdin(result.session_id, "ping\n", yield_time_ms=500))
    assert echoed.output.count("ping") == 2  # the terminal's echo, then cat's


async def test_an_empty_write_polls_at_least_5_seconds_unless_the_program_exits(manager):
    result = await run(manager, cmd="sleep 1; echo done", yield_time_ms=250)
    started = time.monotonic()
    polled = await codex.write_stdin(manager, WriteStdin(result.session_id, "", yield_time_ms=0))
    assert polled.output == "done\n" and polled.exit_code == 0 and time.monotonic() - started < 4.5
    slow = await run(manager, cmd="sleep 30", yield_time_ms=250)
    started = time.monotonic()
    await codex.write_stdin(manager, WriteStdin(slow.session_id, "", yield_time_ms=0))
    assert time.monotonic() - started >= 4.9
    await manager.kill(slow.session_id)


async def test_max_output_tokens_cuts_the_middle_and_counts_everything(manager):
    result = await run(manager, cmd="seq 1 20000", max_output_tokens=20)
    fields = parse(codex.render(result))
    assert int(fields["tokens"]) == -(-len("".join(f"{n}\n" for n in range(1, 20001))) // 4)
    assert fields["output"].startswith("1\n") and fields["output"].endswith("20000\n")
    assert "tokens truncated" in fields["output"] and len(fields["output"].encode()) <= 20 * 4 + 1


async def test_output_unread_between_calls_is_kept_up_to_1_mib(manager):
    result = await run(manager, cmd="sleep 0.5; head -c 900000 /dev/zero | tr '\\0' x; sleep 30", yield_time_ms=250)
    assert result.output == ""
    await asyncio.sleep(2)  # printed while nobody collects
    session = manager.session(result.session_id)
    assert session.buffer.max_bytes == codex.OUTPUT_MAX_BYTES
    polled = await codex.write_stdin(manager, WriteStdin(result.session_id, "\x03", yield_time_ms=2_000, max_output_tokens=300_000))
    assert (polled.original_token_count, polled.dropped_bytes) == (900_000 // 4, 0)


async def test_a_session_is_listed_by_the_cmd_the_agent_gave_not_its_shell(manager):
    session_id = codex.spawn(manager, ExecCommand.from_arguments({"cmd": "sleep 30 # build"}))
    try:
        (info,) = [info for info in manager.list_sessions() if info.session_id == session_id]
        assert info.command == ["sleep 30 # build"]
        assert manager.session(session_id).argv[1:] == ["-lc", "sleep 30 # build"]  # what runs is still the login shell
    finally:
        await manager.kill(session_id)
