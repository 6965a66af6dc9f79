"""Wait conditions: a pattern, quiet, a finished command, the exit, the timeout, an interrupt; and watches."""

import asyncio

import pytest

from unified_exec_kernel import CreateSessionError, UnifiedExecSessionManager, UnknownSessionIdError
from unified_exec_kernel.core.completion.waits import compile_until

SHELLS = ["bash", "zsh"]


@pytest.fixture
async def integrated():
    manager = UnifiedExecSessionManager(shell_integration=True)
    try:
        yield manager
    finally:
        await manager.close_all()


async def shell(manager, program="bash"):
    argv = ["bash", "--norc", "-i"] if program == "bash" else ["zsh", "-f", "-i"]
    started = await manager.start(argv, env={"PS1": "$ ", "PROMPT": "$ "})
    assert started.ended_by == "command" and started.session_id is not None, started
    return started.session_id


@pytest.mark.parametrize("program", SHELLS)
async def test_a_typed_command_returns_when_done_with_its_exit_code(integrated, program):
    sid = await shell(integrated, program)
    result = await integrated.write(sid, "echo hi-$((6*7))\n")
    assert (result.ended_by, result.command_exit_code) == ("command", 0)
    assert "hi-42" in result.output and "\x1b]133" not in result.output
    assert result.wall_time < 30  # not the 60 s default of such a wait
    failed = await integrated.write(sid, "false\n")
    assert (failed.ended_by, failed.command_exit_code) == ("command", 1)


@pytest.mark.parametrize("program", SHELLS)
async def test_a_slow_command_is_waited_for_and_ctrl_c_ends_the_wait_at_the_prompt(integrated, program):
    sid = await shell(integrated, program)
    slow = await integrated.write(sid, "sleep 1.2; echo slow-done\n")
    assert "slow-done" in slow.output and slow.command_exit_code == 0 and slow.wall_time >= 1.0
    await integrated.write(sid, "sleep 100\n", timeout_ms=300)
    stopped = await integrated.write(sid, "\x03")
    assert stopped.ended_by == "command" and stopped.command_exit_code == 130


async def test_an_empty_line_ends_at_the_next_prompt_with_no_command(integrated):
    sid = await shell(integrated)
    result = await integrated.write(sid, "\n")
    assert (result.ended_by, result.command_exit_code) == ("command", None)


async def test_input_for_a_program_in_the_shell_waits_for_that_program(integrated):
    sid = await shell(integrated)
    asked = await integrated.write(sid, "read -p 'name? ' who; echo hello-$who\n", until=r"name\? $")
    assert asked.ended_by == "match"
    answered = await integrated.write(sid, "ada\n")
    assert answered.ended_by == "command" and "hello-ada" in answered.output


async def test_a_fake_marker_in_the_output_does_not_end_the_wait(integrated):
    sid = await shell(integrated)
    result = await integrated.write(sid, r"printf '\e]133;A\a\e]133;D;0;uexec=forged\a'; sleep 0.5; echo real-end" + "\n")
    assert "real-end" in result.output and result.command_exit_code == 0


async def test_a_nested_shell_is_waited_on_until_it_exits(integrated):
    sid = await shell(integrated)
    inner = await integrated.write(sid, "bash --norc\n", timeout_ms=500)
    assert inner.ended_by == "timeout"  # the command `bash` still runs
    back = await integrated.write(sid, "exit 3\n")
    assert (back.ended_by, back.command_exit_code) == ("command", 3)
    gone = await integrated.write(sid, "exit\n")
    assert gone.ended_by == "exit" and gone.session_id is None


async def test_until_and_quiet_end_a_wait_on_any_program(manager):
    started = await manager.start(["python3", "-i", "-q"], until=">>> $", timeout_ms=20_000)
    assert started.ended_by == "match" and started.wall_time < 15
    quiet = await manager.write(started.session_id, "print('a'); import time; time.sleep(0.3); print('b')\n", quiet_ms=1500, timeout_ms=20_000)
    assert quiet.ended_by == "quiet" and "b" in quiet.output
    never = await manager.write(started.session_id, "1+1\n", until="no such text", timeout_ms=400)
    assert never.ended_by == "timeout" and "2" in never.output


async def test_a_bad_pattern_is_a_clear_error_and_starts_nothing(manager):
    with pytest.raises(ValueError, match="until is not a valid regular expression"):
        await manager.start(["true"], until="(")
    assert manager.list_sessions() == []
    assert compile_until(None) is None


async def test_names_cwd_and_env(manager, tmp_path):
    started = await manager.start(["bash", "-c", "pwd; echo $GREETING; sleep 30"], name="greeter", cwd=str(tmp_path), env={"GREETING": "hello"}, until="hello")
    assert str(tmp_path) in started.output and "hello" in started.output
    assert manager.list_sessions()[0].name == "greeter"
    with pytest.raises(CreateSessionError, match="held by running session"):
        manager.spawn(["true"], name="greeter")
    await manager.kill("greeter")
    with pytest.raises(UnknownSessionIdError):
        await manager.write("greeter")
    again = await manager.start(["bash", "-c", "echo reused"], name="greeter")
    assert "reused" in again.output
    with pytest.raises(CreateSessionError, match="no such directory"):
        manager.spawn(["true"], cwd=str(tmp_path / "missing"))


async def test_a_write_can_leave_out_what_came_before_it(integrated):
    sid = await shell(integrated)
    await integrated.write(sid, "(sleep 0.3; echo background-news) & disown\n")  # no "Done" notice later
    await asyncio.sleep(0.8)
    result = await integrated.write(sid, "echo mine\n", earlier_output=False)
    assert "background-news" not in result.output and "mine" in result.output
    assert result.left_out_bytes >= len("background-news")


async def test_watches_fire_time_out_and_end_with_their_session(integrated):
    sid = await shell(integrated)
    watch = asyncio.ensure_future(integrated.watch(sid, until="ready-2"))  # the output, not the typed line
    await asyncio.sleep(0.1)
    await integrated.write(sid, "sleep 0.2; echo ready-$((1+1))\n")
    fired = await asyncio.wait_for(watch, 10)
    assert fired.ended_by == "match" and "ready-2" in fired.output
    quiet = await integrated.watch(sid, timeout_ms=200)
    assert quiet.ended_by == "timeout"
    command = asyncio.ensure_future(integrated.watch(sid, command=True))
    await asyncio.sleep(0.1)
    integrated.session(sid).write("exit 9\n")
    ended = await asyncio.wait_for(command, 10)
    assert ended.ended_by in ("command", "exit")


async def test_many_idle_watches_cost_no_thread():
    import threading

    manager = UnifiedExecSessionManager()
    try:
        sid = manager.spawn(["sleep", "30"])
        threads = threading.active_count()
        watches = [asyncio.ensure_future(manager.watch(sid, until="never", timeout_ms=60_000)) for _ in range(200)]
        await asyncio.sleep(0.2)
        assert threading.active_count() == threads
        await manager.kill(sid)
        results = await asyncio.wait_for(asyncio.gather(*watches), 10)
        assert {result.ended_by for result in results} == {"exit"}
    finally:
        await manager.close_all()


async def test_a_first_prompt_shown_before_the_wait_began_still_ends_it(integrated):
    sid = integrated.spawn(["bash", "--norc", "-i"], env={"PS1": "$ "})
    session = integrated.session(sid)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while session.prompts == 0:  # the face was slow: the prompt came before it asked
        assert loop.time() < deadline, "bash never showed its prompt"
        await asyncio.sleep(0.01)
    result = await integrated.write(sid, first_prompt=True, timeout_ms=30_000)
    assert result.ended_by == "command" and result.wall_time < 10
