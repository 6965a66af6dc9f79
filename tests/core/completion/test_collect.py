"""Collecting until a request is done: the rule over an integrated shell's markers, each
condition on real programs in real PTYs (bash and zsh), and watches."""

import asyncio

import pytest

from unified_exec_kernel import CreateSessionError, UnifiedExecSessionManager, UnknownSessionIdError
from unified_exec_kernel.core.completion.collect import MAX_UNTIL_CHARS, CommandEnd, EndedBy, WaitFor, collect, compile_until
from unified_exec_kernel.core.errors import InvalidSessionNameError
from unified_exec_kernel.core.completion.semantic_prompt import PromptEvent

from ..helpers import Reader, spawn
from ..shells import Shell


# -- the rule over markers ------------------------------------------------------


def ev(kind: str, status: int | None = None, ours: bool = True, typeahead: bool = False) -> PromptEvent:
    return PromptEvent(kind, 0, ours, status, typeahead)


def feed(wait: CommandEnd, events: list[PromptEvent], prompt_end_comes: bool = True) -> bool:
    for event in events:
        wait.feed(event, prompt_end_comes)
    return wait.done


def test_a_command_ends_at_the_prompt_with_its_status():
    wait = CommandEnd()
    assert not feed(wait, [ev("B"), ev("C")])
    assert not feed(wait, [ev("D", 3), ev("A")])  # the prompt has started, not yet been drawn
    assert feed(wait, [ev("B")])
    assert (wait.exit_code, wait.commands, wait.prompt) == (3, 1, ev("A"))


def test_a_line_that_ran_nothing_ends_without_a_status():
    wait = CommandEnd()
    assert feed(wait, [ev("A"), ev("B")])
    assert wait.exit_code is None and wait.commands == 0


def test_a_shell_whose_prompts_carry_no_end_marker_is_done_at_the_prompt_start():
    wait = CommandEnd()
    assert feed(wait, [ev("D", 0), ev("A")], prompt_end_comes=False)
    assert wait.exit_code == 0


def test_a_prompt_that_started_before_the_wait_ends_it_at_its_end_marker():
    wait = CommandEnd()
    wait.prompt_started()
    assert not wait.done and feed(wait, [ev("B")]) and wait.exit_code is None


def test_a_prompt_passed_by_for_a_command_is_no_end():
    wait = CommandEnd()  # a typed line the shell took at once without flagging it
    assert not feed(wait, [ev("D", 0), ev("A"), ev("C"), ev("B")])
    assert feed(wait, [ev("D", 4), ev("A"), ev("B")]) and wait.exit_code == 4


def test_a_typeahead_prompt_is_passed_over_and_the_last_status_counts():
    wait = CommandEnd()
    assert not feed(wait, [ev("D", 0), ev("A", typeahead=True), ev("C")])
    assert feed(wait, [ev("D", 1), ev("A"), ev("B")])
    assert (wait.exit_code, wait.commands) == (1, 2)


def test_foreign_markers_never_end_a_wait_nor_give_a_status():
    wait = CommandEnd()
    assert not feed(wait, [ev("D", 0, ours=False), ev("A", ours=False), ev("B", ours=False)])
    assert feed(wait, [ev("A"), ev("B")])
    assert wait.exit_code is None


def test_nothing_after_the_prompt_changes_the_answer():
    wait = CommandEnd()
    feed(wait, [ev("D", 2), ev("A"), ev("B"), ev("C"), ev("D", 0), ev("A"), ev("B")])
    assert (wait.exit_code, wait.commands) == (2, 1)


@pytest.fixture
def real_shell(tmp_path, request):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("PS1='$ '\n")
    (home / ".zshrc").write_text("PS1='$ '\n")
    sh = Shell([request.param], home)
    yield sh
    sh.close()


@pytest.mark.parametrize("real_shell", ["bash", "zsh"], indirect=True)
def test_starting_a_shell_ends_at_its_first_prompt(real_shell):
    wait = CommandEnd()
    real_shell.wait_for(lambda: feed(wait, real_shell.events), "the first prompt")
    assert wait.exit_code is None and wait.commands == 0


@pytest.mark.parametrize("real_shell", ["bash", "zsh"], indirect=True)
def test_two_lines_in_one_write_end_after_both(real_shell):
    real_shell.started()
    result = real_shell.run("true\n(exit 7)")
    assert result.status == 7
    assert [e.kind for e in result.events if e.ours and e.kind in "CDA"] == ["C", "D", "A", "C", "D", "A"]
    assert [e.typeahead for e in result.events if e.ours and e.kind == "A"] == [True, False]


# -- one collection -------------------------------------------------------------


async def test_input_is_typed_and_its_output_collected_until_the_pattern():
    session = spawn(["bash", "-c", "stty -echo; echo ready; read line; echo got-$line; sleep 30"])
    await Reader(session).until("ready")
    collected = await collect(session, WaitFor(20, until=compile_until("got-x")), max_bytes=1024, text="x\n", already=b"earlier\n")
    assert collected.ended_by is EndedBy.MATCH
    assert collected.output.startswith("earlier\n") and "got-x" in collected.output
    await session.close()


async def test_a_flood_is_truncated_and_counted_and_the_exit_ends_it():
    session = spawn(["bash", "-c", "head -c 100000 /dev/zero | tr '\\0' a"])
    collected = await collect(session, WaitFor(30), max_bytes=1000)
    assert collected.ended_by is EndedBy.EXIT
    assert collected.token_count == 25_000 and "tokens truncated" in collected.output
    await session.close()


async def test_a_program_that_has_exited_is_not_written_to():
    session = spawn(["bash", "-c", "exit 3"])
    await asyncio.wait_for(session.wait_finished(), 10)
    collected = await collect(session, WaitFor(5), max_bytes=100, text="too late\n")
    assert collected.ended_by is EndedBy.EXIT and session.exit_code == 3
    await session.close()


# -- every condition, through the manager -------------------------------------------


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
async def test_what_a_typed_command_printed_is_kept_apart_from_its_echo_and_the_next_prompt(integrated, program):
    sid = await shell(integrated, program)
    result = await integrated.write(sid, "echo hi-$((6*7)); echo there\n")
    assert result.command_output == "hi-42\r\nthere\r\n", result
    assert "echo hi-" in result.output and "$ " in result.output  # the whole transcript stays
    # an unfinished last line: zsh's `%` mark for it (PROMPT_SP) is the shell's, not the command's
    assert (await integrated.write(sid, "printf 'no newline'\n")).command_output == "no newline"
    both = await integrated.write(sid, "echo one\necho two\n")  # two lines: each one's output, no prompt between
    assert both.command_output == "one\r\ntwo\r\n", both
    assert (await integrated.write(sid, "true\n")).command_output == ""
    assert (await integrated.write(sid, "", timeout_ms=100)).command_output is None  # no command ran in this wait


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


async def test_a_nested_shell_ends_the_wait_once_it_waits_for_keys_and_its_exit_ends_at_the_prompt(integrated):
    sid = await shell(integrated)
    inner = await integrated.write(sid, "PS1='inner$ ' bash --norc\n")
    # The command `bash` still runs, so the outer shell reports no end: the inner one reads keys.
    assert inner.ended_by == "input" and inner.wall_time < 30 and "inner$ " in inner.output, inner
    typed = await integrated.write(sid, "echo in-$((6*7))\n")
    assert typed.ended_by == "input" and "in-42" in typed.output, typed
    back = await integrated.write(sid, "exit 3\n")
    assert (back.ended_by, back.command_exit_code) == ("command", 3)
    gone = await integrated.write(sid, "exit\n")
    assert gone.ended_by == "exit" and gone.session_id is None


@pytest.mark.parametrize("program", SHELLS)
async def test_after_exec_a_typed_command_ends_when_the_new_shell_waits_for_keys(integrated, program):
    sid = await shell(integrated, program)
    replaced = await integrated.write(sid, "exec bash --norc\n")
    assert replaced.ended_by == "input" and replaced.wall_time < 30, replaced
    for n in (1, 2):
        typed = await integrated.write(sid, f"echo after-exec-{n}\n")
        assert typed.ended_by == "input" and f"after-exec-{n}" in typed.output, typed
    slow = await integrated.write(sid, "sleep 0.5; echo slept\n")
    assert slow.ended_by == "input" and "slept" in slow.output, "a busy command is no wait for keys"


async def test_a_repl_and_a_password_prompt_started_from_the_shell_end_the_wait_when_they_read(integrated):
    sid = await shell(integrated)
    repl = await integrated.write(sid, "python3 -q\n")
    assert repl.ended_by == "input" and ">>> " in repl.output, repl
    answer = await integrated.write(sid, "print(6*7)\n")
    assert answer.ended_by == "input" and "42" in answer.output, answer
    back = await integrated.write(sid, "exit()\n")
    assert (back.ended_by, back.command_exit_code) == ("command", 0)
    secret = await integrated.write(sid, "read -s -p 'password? ' pw; echo got-${#pw}\n")
    assert secret.ended_by == "input" and "password? " in secret.output, secret
    given = await integrated.write(sid, "hunter2\n")
    assert (given.ended_by, given.command_exit_code) == ("command", 0) and "got-7" in given.output


async def test_until_matches_a_terminal_line_with_anchors(manager):
    # The terminal ends lines with \r\n; `$` must still match at a line's end.
    started = await manager.start(["bash", "-c", "echo not-ready; echo ready; sleep 30"], until="^ready$", timeout_ms=20_000)
    assert started.ended_by == "match" and started.output.replace("\r", "").endswith("ready\n")


async def test_until_matches_a_line_as_the_terminal_shows_it(integrated):
    """bash starts a command's output with ESC[?2004l and \\r: `^begun` still meets the line `begun`."""
    sid = await shell(integrated)
    begun = await integrated.write(sid, "echo begun; sleep 30\n", until="^begun$", timeout_ms=20_000)
    assert begun.ended_by == "match", begun
    painted = await integrated.start(["bash", "-c", "printf '\\033[1;32mready\\033[0m\\n'; sleep 30"], until="^ready$", timeout_ms=20_000)
    assert painted.ended_by == "match", painted


async def test_until_sees_a_long_line_whole_though_it_came_in_pieces(manager):
    long_line = "import sys, time; sys.stdout.write('start' + 'x' * 10000); sys.stdout.flush(); time.sleep(0.3); print('end'); time.sleep(30)"
    started = await manager.start(["python3", "-c", long_line], until="^startx+end$", timeout_ms=20_000)
    assert started.ended_by == "match"


async def test_until_does_not_match_across_a_line_end(manager):
    started = await manager.start(["bash", "-c", "echo one; echo two; sleep 30"], until="one\\s+two", timeout_ms=1500)
    assert started.ended_by == "timeout" and "two" in started.output


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


@pytest.mark.parametrize(
    "pattern, reason",
    [
        ("(" * 600, "until is not a valid regular expression: nested too deeply"),  # Python's compiler recurses
        ("a{99999999999}", "until is not a valid regular expression: the repetition number is too large"),  # OverflowError
        ("x" * (MAX_UNTIL_CHARS + 1), f"until is too long: {MAX_UNTIL_CHARS + 1} characters, at most {MAX_UNTIL_CHARS}"),
        (b"ready", "until must be a string (a regular expression), not bytes"),
    ],
    ids=["deep", "huge-repeat", "long", "bytes"],
)
async def test_a_pattern_python_cannot_compile_is_one_line_and_starts_nothing(manager, pattern, reason):
    with pytest.raises(ValueError) as refused:
        await manager.start(["sleep", "100"], until=pattern)
    assert str(refused.value) == reason and refused.value.__context__ is None
    assert manager.list_sessions() == []


def test_a_pattern_names_the_field_its_face_calls_it():
    with pytest.raises(ValueError, match="^--until is not a valid regular expression: nested too deeply$"):
        compile_until("(" * 600, "--until")
    assert compile_until("x" * MAX_UNTIL_CHARS).pattern == "x" * MAX_UNTIL_CHARS


async def test_names_cwd_and_env(manager, tmp_path):
    started = await manager.start(["bash", "-c", "pwd; echo $GREETING; sleep 30"], name="greeter", cwd=str(tmp_path), env={"GREETING": "hello"}, until="hello")
    assert str(tmp_path) in started.output and "hello" in started.output
    assert manager.list_sessions()[0].name == "greeter"
    with pytest.raises(InvalidSessionNameError, match="held by running session"):
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


@pytest.mark.parametrize("program", SHELLS)
async def test_stopped_output_ends_a_wait_at_once_saying_paused_and_ctrl_q_resumes(integrated, program):
    sid = await shell(integrated, program)
    paused = await integrated.write(sid, "\x13")  # what `--keys C-s` sends
    assert paused.ended_by == "paused" and paused.wall_time < 5, paused
    # Typed while stopped: nothing can come, so the wait says why at once instead of in 60 s.
    held = await integrated.write(sid, "echo ping-$((6*7))\n")
    assert held.ended_by == "paused" and held.wall_time < 5 and "ping-42\r\n" not in held.output, held
    resumed = await integrated.write(sid, "\x11")
    assert resumed.ended_by == "command" and "ping-42" in resumed.output, resumed
    # Ctrl+S then Ctrl+Q in one request pauses nothing.
    both = await integrated.write(sid, "\x13\x11echo fine\n")
    assert both.ended_by == "command" and "fine" in both.output, both
