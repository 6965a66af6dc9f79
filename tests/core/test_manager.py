"""The manager: the seed's seven tests one for one, then what goes beyond the seed."""

import asyncio
import os
import re

import pytest

from unified_exec_kernel.core.errors import InvalidSessionNameError
from unified_exec_kernel import (
    CreateSessionError,
    MissingCommandLineError,
    UnifiedExecRequest,
    UnifiedExecSessionManager,
    UnknownSessionIdError,
)

from ..conftest import session_processes


def request(session_id=None, chunks=(), timeout_ms=None):
    return UnifiedExecRequest(session_id=session_id, input_chunks=list(chunks), timeout_ms=timeout_ms)


# -- the seed's tests --------------------------------------------------------


async def test_unified_exec_persists_across_requests(manager):
    open_shell = await manager.handle_request(request(None, ["bash", "-i"], 1_500))
    session_id = open_shell.session_id
    assert session_id is not None
    await manager.handle_request(request(session_id, ["export", "CODEX_INTERACTIVE_SHELL_VAR=codex\n"], 2_500))
    out_2 = await manager.handle_request(request(session_id, ["echo $CODEX_INTERACTIVE_SHELL_VAR\n"], 1_500))
    assert "codex" in out_2.output


async def test_multi_unified_exec_sessions(manager):
    shell_a = await manager.handle_request(request(None, ["/bin/bash", "-i"], 1_500))
    session_a = shell_a.session_id
    await manager.handle_request(request(session_a, ["export CODEX_INTERACTIVE_SHELL_VAR=codex\n"], 1_500))
    out_2 = await manager.handle_request(request(None, ["echo", "$CODEX_INTERACTIVE_SHELL_VAR\n"], 1_500))
    assert "codex" not in out_2.output
    out_3 = await manager.handle_request(request(session_a, ["echo $CODEX_INTERACTIVE_SHELL_VAR\n"], 1_500))
    assert "codex" in out_3.output


async def test_unified_exec_timeouts(manager):
    open_shell = await manager.handle_request(request(None, ["bash", "-i"], 1_500))
    session_id = open_shell.session_id
    await manager.handle_request(request(session_id, ["export", "CODEX_INTERACTIVE_SHELL_VAR=codex\n"], 1_500))
    out_2 = await manager.handle_request(
        request(session_id, ["sleep 5 && echo $CODEX_INTERACTIVE_SHELL_VAR\n"], 10)
    )
    assert "codex" not in out_2.output
    await asyncio.sleep(7)
    out_3 = await manager.handle_request(request(session_id, [], 100))
    assert "codex" in out_3.output


async def test_requests_with_large_timeout_are_capped(manager):
    result = await manager.handle_request(request(None, ["echo", "codex"], 120_000))
    assert result.output.startswith(
        "Warning: requested timeout 120000ms exceeds maximum of 60000ms; clamping to 60000ms.\n"
    )
    assert "codex" in result.output


async def test_completed_commands_do_not_persist_sessions(manager):
    result = await manager.handle_request(request(None, ["/bin/echo", "codex"], 1_500))
    assert result.session_id is None
    assert "codex" in result.output
    assert manager.list_sessions() == []


async def test_reusing_completed_session_returns_unknown_session(manager):
    open_shell = await manager.handle_request(request(None, ["/bin/bash", "-i"], 1_500))
    session_id = open_shell.session_id
    await manager.handle_request(request(session_id, ["exit\n"], 1_500))
    await asyncio.sleep(0.2)
    with pytest.raises(UnknownSessionIdError) as caught:
        await manager.handle_request(request(session_id, [], 100))
    assert caught.value.session_id == session_id
    assert session_id not in [info.session_id for info in manager.list_sessions()]


# (The seed's seventh, push_chunk_trims_only_excess_bytes, is in test_buffer.py.)

# -- beyond the seed ---------------------------------------------------------


async def test_ids_count_up_from_zero(manager):
    ids = [(await manager.handle_request(request(None, ["sleep", "5"], 0))).session_id for _ in range(3)]
    assert ids == [0, 1, 2]


@pytest.mark.parametrize("command, code", [("exit 0", 0), ("exit 3", 3), ("kill -KILL $$", -9)])
async def test_result_reports_the_exit_code(manager, command, code):
    result = await manager.handle_request(request(None, ["bash", "-c", command], 5_000))
    assert (result.session_id, result.exit_code) == (None, code)


async def test_returns_as_soon_as_the_program_has_exited(manager):
    result = await manager.handle_request(request(None, ["/bin/echo", "hi"], 60_000))
    assert result.output == "hi\r\n"
    assert result.wall_time < 5  # not the 60 s timeout (a generous bound for a loaded machine)


async def test_returns_after_exit_even_if_a_grandchild_holds_the_terminal(manager):
    result = await manager.handle_request(request(None, ["bash", "-c", "sleep 30 & echo parent-done"], 60_000))
    assert result.exit_code == 0 and "parent-done" in result.output
    assert result.wall_time < 5
    await asyncio.sleep(0)  # the forgotten session is closed in the background
    await manager.close_all()


async def test_running_session_has_no_exit_code_and_reports_wall_time(manager):
    result = await manager.handle_request(request(None, ["sleep", "5"], 200))
    assert result.session_id == 0 and result.exit_code is None
    assert result.wall_time >= 0.2


async def test_missing_program_is_a_create_session_error(manager):
    with pytest.raises(CreateSessionError, match="no-such-program: command not found"):
        await manager.handle_request(request(None, ["no-such-program"], 100))
    # The manager lives on and the id was used, as in the seed.
    result = await manager.handle_request(request(None, ["echo", "still here"], 1000))
    assert "still here" in result.output


@pytest.mark.parametrize("argv", [[], [""]])
async def test_empty_command_is_a_missing_command_line(manager, argv):
    with pytest.raises(MissingCommandLineError):
        await manager.handle_request(request(None, argv, 100))


async def test_unknown_session_id_is_refused(manager):
    with pytest.raises(UnknownSessionIdError, match="^no session with id 42; no session is open$"):
        await manager.handle_request(request(42, ["hello\n"], 100))


async def test_an_unknown_name_is_refused_with_the_names_there_are(manager):
    await manager.start(["bash", "--norc", "-i"], name="sh", timeout_ms=0)
    unnamed = await manager.start(["cat"], timeout_ms=0)
    with pytest.raises(UnknownSessionIdError) as refused:
        await manager.write("nosuchsession", "hello\n")
    assert str(refused.value) == f"no session named 'nosuchsession'; open sessions: sh, {unnamed.session_id}"
    assert refused.value.session_id == "nosuchsession"


async def test_exited_session_hands_its_unread_output_to_the_next_request(manager):
    started = await manager.handle_request(request(None, ["bash", "-c", "sleep 0.3; echo last words; exit 7"], 10))
    session_id = started.session_id
    assert session_id is not None
    await asyncio.sleep(0.8)
    result = await manager.handle_request(request(session_id, [], 1000))
    assert "last words" in result.output
    assert (result.session_id, result.exit_code) == (None, 7)
    with pytest.raises(UnknownSessionIdError):
        await manager.handle_request(request(session_id, [], 100))


async def test_burst_between_polls_keeps_the_newest_bytes_and_counts_the_dropped(manager):
    started = await manager.handle_request(request(None, ["bash", "--norc", "-i"], 500))
    session_id = started.session_id
    script = "head -c 1000000 /dev/zero | tr '\\0' a; echo; echo THE-END\n"
    await manager.handle_request(request(session_id, [script], 0))
    await asyncio.sleep(2)
    result = await manager.handle_request(request(session_id, [], 100))
    assert "THE-END" in result.output
    assert result.dropped_bytes > 1_000_000 - 128 * 1024 - 1000
    assert result.original_token_count * 4 >= 128 * 1024 - 4


async def test_every_byte_reaches_exactly_one_poll(manager):
    started = await manager.handle_request(
        request(None, ["bash", "-c", "for i in $(seq 1 60); do echo line-$i; sleep 0.01; done"], 30)
    )
    collected = started.output
    session_id = started.session_id
    while session_id is not None:
        result = await manager.handle_request(request(session_id, [], 25))
        collected += result.output
        session_id = result.session_id
    assert re.findall(r"line-\d+", collected) == [f"line-{i}" for i in range(1, 61)]


async def test_a_write_goes_in_while_another_caller_waits_and_each_wait_sees_what_the_other_caused(manager):
    started = await manager.handle_request(request(None, ["bash", "--norc", "-i"], 500))
    session_id = started.session_id
    # Each waits (up to 20 s) for the line the other's input prints: held one behind the other,
    # the first would wait out its time for a line typed only after it.
    first, second = await asyncio.wait_for(asyncio.gather(
        manager.write(session_id, "echo one-$((1+1))\n", until="^two-4$", timeout_ms=20_000, reader="a"),
        manager.write(session_id, "echo two-$((2+2))\n", until="^one-2$", timeout_ms=20_000, reader="b"),
    ), 30)
    assert (first.ended_by, second.ended_by) == ("match", "match")
    assert "one-2" in first.output and "two-4" in first.output
    assert "one-2" in second.output
    assert first.wall_time < 20 and second.wall_time < 20


async def test_each_caller_reads_on_from_where_it_left_off(manager):
    started = await manager.start(["bash", "--norc", "-i"], timeout_ms=500)
    sh = started.session_id
    await manager.write(sh, reader="person")
    await manager.write(sh, reader="agent")
    await manager.write(sh, "echo said-$((6*7))\n", until="^said-42$", timeout_ms=20_000, reader="typist")
    person = await manager.write(sh, reader="person", timeout_ms=0)
    agent = await manager.write(sh, reader="agent", timeout_ms=0)
    assert "said-42" in person.output and "said-42" in agent.output
    again = await manager.write(sh, reader="person", timeout_ms=0)
    assert "said-42" not in again.output  # read once by each


async def test_a_caller_new_to_a_session_starts_where_the_latest_call_left_off(manager):
    started = await manager.start(["bash", "-c", "echo early; read line; echo \"got $line\"; read line"], timeout_ms=10_000, until="^early$")
    sh = started.session_id
    assert "early" in started.output
    late = await manager.write(sh, "x\n", until="^got x$", timeout_ms=10_000, reader="late")
    assert "early" not in late.output and "got x" in late.output
    # The first caller goes on after its own call: it did not read what the later one caused.
    first = await manager.write(sh, timeout_ms=0)
    assert "got x" in first.output and "early" not in first.output


async def test_what_every_caller_read_is_let_go(manager):
    started = await manager.start(["bash", "-c", "seq 1 5000; read line; echo done; read line"], timeout_ms=10_000, until="^5000$", reader="a")
    sh = started.session_id
    session = manager.session(sh)
    assert session.buffer.total_bytes == 0  # the only caller read it all
    await manager.write(sh, timeout_ms=0, reader="b")
    await manager.write(sh, "\n", until="^done$", timeout_ms=10_000, reader="b")
    assert b"done" in session.buffer.data()  # kept for a, which has not read it
    assert "done" in (await manager.write(sh, timeout_ms=0, reader="a")).output
    assert session.buffer.total_bytes == 0


async def test_stop_ends_the_wait_early_and_keeps_the_session(manager):
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, stop.set)
    result = await manager.handle_request(request(None, ["bash", "-c", "echo begun; sleep 30"], 30_000), stop=stop)
    assert result.session_id == 0 and "begun" in result.output
    assert result.wall_time < 5
    assert manager.list_sessions()[0].alive


async def test_a_subscriber_sees_the_output_as_it_arrives(manager):
    seen = []
    session_id = manager.spawn(["bash", "-c", "echo a; sleep 0.2; echo b"])
    manager.session(session_id).subscribe(lambda data, _offset: seen.append(data.decode()))
    result = await manager.write(session_id, timeout_ms=5000)
    assert "".join(seen) == result.output == "a\r\nb\r\n"
    assert len(seen) >= 2


async def test_kill_closes_a_session_and_signal_only_signals():
    manager = UnifiedExecSessionManager()
    started = await manager.handle_request(request(None, ["bash", "--norc", "-i"], 500))
    session_id = started.session_id
    await manager.handle_request(request(session_id, ["sleep 100\n"], 200))
    import signal

    await manager.kill(session_id, signal.SIGINT)
    result = await manager.handle_request(request(session_id, ["echo status-$?\n"], 500))
    assert "status-130" in result.output
    pid = manager.list_sessions()[0].pid
    await manager.kill(session_id)
    assert manager.list_sessions() == []
    assert session_processes(pid) == []
    with pytest.raises(UnknownSessionIdError):
        await manager.kill(session_id)


async def test_cap_prunes_least_recently_used_exited_first_never_the_newest():
    manager = UnifiedExecSessionManager(max_sessions=10)
    try:
        for _ in range(10):
            await manager.handle_request(request(None, ["sleep", "30"], 0))
        # Session 1 exits without anyone polling it: it is the first to go.
        await manager.kill(1, 9)
        await asyncio.sleep(0.3)
        await manager.handle_request(request(None, ["sleep", "30"], 0))
        assert [info.session_id for info in manager.list_sessions()] == [0, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        # Then the least recently used live one (0), never one of the 8 newest.
        await manager.handle_request(request(0, [], 0))  # 0 is now the most recent
        await manager.handle_request(request(None, ["sleep", "30"], 0))
        assert [info.session_id for info in manager.list_sessions()] == [0, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    finally:
        await manager.close_all()


async def test_warning_from_sixty_open_sessions():
    manager = UnifiedExecSessionManager()
    try:
        for _ in range(59):
            result = await manager.handle_request(request(None, ["sleep", "30"], 0))
            assert not result.output.startswith("Warning")
        result = await manager.handle_request(request(None, ["sleep", "30"], 0))
        assert result.output.startswith("Warning: 60 sessions are open; at 64 the least recently used")
    finally:
        await manager.close_all()


async def test_closing_leaves_no_process_of_any_session():
    manager = UnifiedExecSessionManager()
    await manager.handle_request(request(None, ["bash", "-c", "sleep 300 & sleep 300 & wait"], 200))
    started = await manager.handle_request(request(None, ["bash", "--norc", "-i"], 500))
    await manager.handle_request(request(started.session_id, ["sleep 300 &\n"], 300))
    pids = [info.pid for info in manager.list_sessions()]
    assert all(len(session_processes(pid)) >= 2 for pid in pids)
    await manager.close_all()
    assert [session_processes(pid) for pid in pids] == [[], []]


async def test_spawn_exit_cycles_leave_the_fd_count_where_it_began(manager):
    await manager.handle_request(request(None, ["true"], 1000))  # warm up lazily opened fds
    # The warm-up session's close may still hold its fds (a loaded machine): the
    # baseline is an upper bound, and a leak of even one fd per cycle is 500 over it.
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(500):
        result = await manager.handle_request(request(None, ["true"], 5000))
        assert result.exit_code == 0
    for _ in range(500):
        await asyncio.sleep(0.02)
        if len(os.listdir("/proc/self/fd")) <= before:
            break
    assert len(os.listdir("/proc/self/fd")) <= before


async def test_killing_a_session_while_a_request_waits_on_it_answers_that_request(manager):
    started = await manager.handle_request(request(None, ["bash", "--norc", "-i"], 300))
    waiting = asyncio.ensure_future(manager.handle_request(request(started.session_id, [], 5000)))
    await asyncio.sleep(0.2)
    await manager.kill(started.session_id)
    result = await asyncio.wait_for(waiting, 5)
    assert result.session_id is None and result.exit_code is not None
    assert manager.list_sessions() == []


async def test_input_sent_while_a_grandchild_holds_the_terminal_gets_the_exit_code(manager, monkeypatch):
    # A long grace keeps the session draining until the grandchild lets go of
    # the terminal (EOF), so the input surely arrives after the program exited.
    from unified_exec_kernel.core import session as session_module

    monkeypatch.setattr(session_module, "EXIT_GRACE_S", 30)
    started = await manager.start(["bash", "-c", "trap '' HUP; sleep 4 & echo leader-done; exit 4"], timeout_ms=0)
    session = manager.session(started.session_id)
    while session.alive:
        await asyncio.sleep(0.01)
    assert session.state is session_module.Lifecycle.DRAINING
    result = await manager.write(started.session_id, "anyone there?\n", timeout_ms=10_000)
    assert (result.session_id, result.exit_code) == (None, 4)
    assert "leader-done" in started.output + result.output  # whichever request read it first


async def test_env_remove_keeps_named_and_matching_variables_from_sessions(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "secret-token")
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    monkeypatch.setenv("UEXEC_KEPT", "kept")
    manager = UnifiedExecSessionManager(env_remove=["JUPYTERHUB_*"], env={"ADDED": "yes"})
    try:
        result = await manager.start(["bash", "-c", "echo ${JUPYTERHUB_API_TOKEN:-none} ${JUPYTERHUB_USER:-none} $UEXEC_KEPT $ADDED"], timeout_ms=5000)
        assert result.output == "none none kept yes\r\n"
    finally:
        await manager.close_all()


async def test_a_nul_byte_anywhere_in_a_command_is_a_create_session_error_and_starts_nothing(manager):
    for argv, options in (
        (["echo", "a\0b"], {}),
        (["echo", "ok"], {"cwd": "/tmp\0x"}),
        (["echo", "ok"], {"env": {"GREETING": "hel\0lo"}}),
    ):
        with pytest.raises(CreateSessionError, match="NUL byte"):
            manager.spawn(argv, **options)
    assert manager.list_sessions() == []


async def test_a_working_directory_may_be_any_path_like(manager, tmp_path):
    started = await manager.start(["pwd"], cwd=tmp_path, timeout_ms=10_000)
    assert started.output == f"{tmp_path}\r\n"
    started = await manager.start(["pwd"], cwd=os.fsencode(tmp_path), timeout_ms=10_000)
    assert started.output == f"{tmp_path}\r\n"


async def test_an_environment_value_may_be_a_path_and_is_else_a_string(manager, tmp_path):
    started = await manager.start(["printenv", "WHERE"], env={"WHERE": tmp_path}, timeout_ms=10_000)
    assert started.output == f"{tmp_path}\r\n"
    for options, reason in (
        ({"env": {"RETRIES": 3}}, "environment variable 'RETRIES' must be a str (or os.PathLike), not int"),
        ({"env": {"OK": "1", "FLAG": None}}, "environment variable 'FLAG' must be a str (or os.PathLike), not NoneType"),
        ({"env": {3: "x"}}, "an environment variable's name must be a str, not int"),
        ({"env": [("A", "b")]}, "env must be a mapping of names to strings, not list"),
        ({"cwd": 3}, "the working directory must be a path (str or os.PathLike), not int"),
    ):
        with pytest.raises(CreateSessionError) as refused:
            manager.spawn(["sleep", "100"], **options)
        assert str(refused.value) == f"Failed to create session: sleep: {reason}"
    assert manager.list_sessions() == []  # the printenv exited; the refused started nothing


async def test_a_bool_is_no_session_id(manager):
    """Python counts True as 1: `session(True)` was session 1."""
    manager.spawn(["sleep", "100"])
    second = manager.spawn(["sleep", "100"])
    assert manager.session(second).session_id == 1
    for key, shown in ((True, "True"), (False, "False"), (1.0, "a float"), (None, "a NoneType")):
        with pytest.raises(TypeError, match=f"^a session is its id \\(an int\\) or its name \\(a str\\), not {shown}$"):
            manager.session(key)
        with pytest.raises(TypeError):
            await manager.write(key, "x")
        with pytest.raises(TypeError):
            await manager.kill(key)
    assert [info.alive for info in manager.list_sessions()] == [True, True]


@pytest.mark.parametrize("name", ["-5", "5", "--all", "", " sh", "a b", "٣x", "a/b"])
async def test_a_name_that_could_read_as_an_id_or_an_option_is_refused(manager, name):
    with pytest.raises(InvalidSessionNameError, match="starts with a letter") as refused:
        manager.spawn(["true"], name=name)
    assert not isinstance(refused.value, CreateSessionError)  # the request's fault, not the program failing
    assert str(refused.value).startswith(f"{name!r} cannot name a session")
    assert manager.list_sessions() == []


async def test_a_refused_request_takes_no_session_id(manager):
    """Ids count sessions that started: a bad name, a missing directory or no command leave no gap."""
    first = manager.spawn(["true"])
    with pytest.raises(InvalidSessionNameError):
        manager.spawn(["true"], name="a b")
    manager.spawn(["sleep", "30"], name="x")
    with pytest.raises(InvalidSessionNameError, match="held by running session"):
        manager.spawn(["true"], name="x")
    with pytest.raises(CreateSessionError, match="no such directory"):
        manager.spawn(["true"], cwd="/no/such/dir")
    assert manager.spawn(["true"]) == first + 2  # "x" took one; the refusals none


@pytest.mark.parametrize("name", ["sh", "build-1", "py3.12", "_tmp", "café", "é", "Σ2", "日本"])
async def test_names_of_words_digits_dots_and_dashes_are_taken(manager, name):
    session_id = manager.spawn(["true"], name=name)
    assert manager.session(name).session_id == session_id


@pytest.mark.parametrize("argv", [["bash", "-i"], ["zsh", "-f"]])
async def test_a_session_is_listed_by_the_command_the_user_gave_not_the_one_integration_runs(argv):
    manager = UnifiedExecSessionManager(shell_integration=True)
    try:
        started = await manager.start(argv, timeout_ms=10_000)
        assert started.ended_by == "command"  # integrated: it reported its first prompt
        session = manager.session(started.session_id)
        assert session.argv != argv  # what runs carries our integration (--rcfile, or no -f)
        assert session.command == argv
        assert [info.command for info in manager.list_sessions()] == [argv]
    finally:
        await manager.close_all()


async def _unread_ends_with(session, tail: bytes, timeout: float = 10) -> None:
    """Wait until what no request has read yet ends with `tail` (the shell's prompt, say)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not session.buffer.data().endswith(tail):
        assert asyncio.get_running_loop().time() < deadline, session.buffer.data()
        await asyncio.sleep(0.01)


async def _integrated_shell_at_its_prompt(monkeypatch) -> tuple[UnifiedExecSessionManager, int]:
    """A shell whose first prompt no request has read (spawned, not started: nothing waits on it)."""
    monkeypatch.setenv("PS1", "$ ")
    manager = UnifiedExecSessionManager(shell_integration=True)
    sh = manager.spawn(["bash", "--norc", "-i"])
    await _unread_ends_with(manager.session(sh), b"\x1b[?2004h$ ")
    assert manager.session(sh).buffer.data() == b"\x1b[?2004h$ "  # the prompt, and nothing before it
    return manager, sh


async def test_a_typed_command_does_not_count_the_prompt_it_was_typed_at_as_hidden_output(monkeypatch):
    manager, sh = await _integrated_shell_at_its_prompt(monkeypatch)
    try:
        typed = await manager.write(sh, "echo hi\n", earlier_output=False)
        assert typed.ended_by == "command" and "hi\r\n" in typed.output
        assert not typed.output.startswith("\x1b[?2004h$ ")  # left out, and not counted:
        assert typed.left_out_bytes == 0
    finally:
        await manager.close_all()


async def test_output_before_the_prompt_still_counts_as_hidden(monkeypatch):
    manager, sh = await _integrated_shell_at_its_prompt(monkeypatch)
    try:
        # The request ends at "early" (its echoed line reads ear""ly) while `read` waits; the
        # Enter typed past any request then lets "later" and the next prompt come, unread.
        await manager.write(sh, 'echo ear""ly; read; echo later\n', until="early")
        manager.session(sh).write("\n")
        await _unread_ends_with(manager.session(sh), b"\r\nlater\r\n\x1b[?2004h$ ")
        typed = await manager.write(sh, "echo next\n", earlier_output=False)
        assert "later" not in typed.output
        assert typed.left_out_bytes == len("\r\nlater\r\n")  # the prompt after it is not counted
    finally:
        await manager.close_all()


async def test_a_closed_session_says_it_was_closed_and_one_that_ended_alone_does_not(manager):
    started = await manager.start(["bash", "--norc", "-i"], timeout_ms=0)
    waiting = asyncio.ensure_future(manager.write(started.session_id, timeout_ms=10_000))
    session = manager.session(started.session_id)
    while len(session._subscribers) < 4:  # the request's collector and wait have subscribed
        await asyncio.sleep(0)
    await manager.kill(started.session_id)
    closed = await asyncio.wait_for(waiting, 10)
    assert session.closed and closed.closed and closed.exit_code < 0  # its hangup, or the kill after the grace
    alone = await manager.start(["bash", "-c", "kill -HUP $$"], timeout_ms=10_000)
    assert (alone.exit_code, alone.closed) == (-1, False)


@pytest.mark.parametrize("timeout_ms", [-1, float("nan")])
async def test_a_negative_or_nan_timeout_is_refused_before_anything_starts(manager, timeout_ms):
    with pytest.raises(ValueError, match="timeout must be 0 or more milliseconds"):
        await manager.start(["sleep", "60"], timeout_ms=timeout_ms)
    assert manager.list_sessions() == []


async def test_an_infinite_timeout_is_clamped_with_the_warning(manager):
    result = await manager.start(["true"], timeout_ms=float("inf"))
    assert result.output.startswith("Warning: requested timeout infms exceeds maximum of 60000ms; clamping to 60000ms.\n")
    assert result.exit_code == 0


@pytest.mark.parametrize("size", [1024 * 1024, 10 * 1024 * 1024])
async def test_a_refused_request_is_one_short_line_whatever_its_size(manager, size):
    big = "x" * size
    session_id = (await manager.start(["bash", "--norc", "-i"], timeout_ms=200, integration=False)).session_id
    refusals = [
        manager.start([big]),
        manager.start(["/no/such/dir/" + big]),
        manager.start([big + "\0"]),
        manager.start(["true"], name="-" + big),
        manager.start(["true"], cwd="/" + big),
        manager.start(["true"], env={big + "\0": "v"}),
        manager.start(["true"], until=")" + big),
        manager.write(big, "x"),
        manager.write(session_id, "x", until=")" + big),
        manager.kill(big),
    ]
    for refusal in refusals:
        with pytest.raises((ValueError, LookupError, OSError)) as refused:
            await refusal
        text = str(refused.value)
        assert len(text) <= 1024 and "\n" not in text, (type(refused.value).__name__, len(text), text[:200])
    await manager.kill(session_id)
