"""Sessions from Python (`from unified_exec_kernel import sessions`): in real kernels, a script and an nbclient run.

Each call is tried in its plain form (blocks the calling thread) and its
awaitable twin; results are the engine's `UnifiedExecResult`s; errors are
the engine's, one line each.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time

import nbformat
import psutil
import pytest
from nbclient import NotebookClient

from ..kernel_harness import Kernel

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    k.run("import os\nos.environ['PS1'] = '$ '\nfrom unified_exec_kernel import sessions")
    yield k
    k.shutdown()


def value(kernel, expression: str):
    """What `expression` is in the kernel, through its repr."""
    text = kernel.run(f"print(repr({expression}))")
    return eval(text)  # noqa: S307 - our own kernel's reprs of plain values


def test_a_shell_started_from_python_runs_commands_and_reports_each_exit_code(kernel):
    kernel.run("sh = sessions.start('bash --norc -i', name='pysh')")
    assert re.fullmatch(r"<Session \d+ 'pysh': bash --norc -i, running>\n", kernel.run("sh"))
    kernel.run("r = sh.run('ls /no/such/dir')")
    assert value(kernel, "r.command_exit_code") == 2
    assert value(kernel, "r.session_id is not None and r.exit_code is None and not r.timed_out") is True
    assert "No such file or directory" in value(kernel, "r.output")
    assert "\r" not in value(kernel, "r.output")  # as a cell shows it; raw=True keeps the terminal's text
    assert "\r\n" in value(kernel, "sh.run('echo x', raw=True).output")
    # the loop a notebook would write: one result per command, each with its own status
    codes = value(kernel, "[sh.run(f'(exit {n})').command_exit_code for n in range(4)]")
    assert codes == [0, 1, 2, 3]


def test_a_typed_commands_output_is_what_it_printed_and_raw_keeps_the_whole_transcript(kernel):
    kernel.run("said = sessions.start('bash --norc -i', name='said')")
    kernel.run("r = said.run(\"printf 'a\\\\nb\\\\n'; echo c; (exit 3)\")")
    # no echoed command line, no next prompt: what a check compares
    assert value(kernel, "(r.output, r.command_output, r.command_exit_code)") == ("a\nb\nc\n", "a\nb\nc\n", 3)
    assert value(kernel, "said.run('true').output") == ""
    assert value(kernel, "said.run('for i in 1 2; do echo line-$i; done').output") == "line-1\nline-2\n"
    # `raw=True`: the engine's result as it came, the transcript the cell shows around it
    transcript = value(kernel, "said.run('echo y', raw=True).output")
    assert transcript.startswith("echo y\r\n") and "y\r\n" in transcript[8:] and transcript.endswith("$ "), transcript
    assert value(kernel, "said.run('echo z', raw=True).command_output").endswith("z\r\n")
    # a program, not a command typed into a shell: all it printed, its lines ending in \n too
    assert value(kernel, "sessions.run(['printf', 'one\\\\r\\\\ntwo']).output") == "one\ntwo"
    kernel.run("said.kill()")


def test_out_keeps_the_result_as_a_sessions_call_returns_it(kernel):
    kernel.run("%%uexec --out shot\nuname -s\n")
    assert value(kernel, "(shot.output, sessions.run(['uname', '-s']).output)") == ("Linux\n", "Linux\n")
    kernel.run("%%uexec --name outsh --out begun\nbash --norc -i\n")
    kernel.run("%%uexec -s outsh --out typed\necho done\n")
    assert value(kernel, "(typed.output, typed.command_exit_code)") == ("done\n", 0)
    assert value(kernel, "typed.output == sessions.get('outsh').run('echo done').output") is True
    kernel.run("%%uexec -s outsh --raw --out raw\necho done\n")
    assert value(kernel, "raw.output").startswith("echo done\r\n")
    kernel.run("%uexec_kill outsh")


def test_an_ended_or_killed_session_says_how_it_ended(kernel):
    kernel.run("ends = sessions.start(['bash', '-c', 'echo bye; exit 3'])\nlast = ends.wait_for()")
    # its exit was reported (the engine has forgotten it): the object still says how it ended
    assert value(kernel, "(last.exit_code, ends.info.alive, ends.info.exit_code)") == (3, False, 3)
    assert re.fullmatch(r"<Session \d+: bash -c 'echo bye; exit 3', exited with code 3>\n", kernel.run("ends"))
    kernel.run("killed = sessions.start('bash --norc -i', name='killed')\nkilled.kill()")
    # its hangup, or the kill after the grace (a machine under load may not let bash exit within it)
    assert value(kernel, "(killed.info.alive, killed.info.exit_code in (-1, -9), killed.info.name)") == (False, True, "killed")
    assert re.fullmatch(r"<Session \d+ 'killed': bash --norc -i, exited with code -(1|9)>\n", kernel.run("killed"))
    # whoever ended it: a handle from `get`, the session closed by the magic
    kernel.run("sessions.start('bash --norc -i', name='other-hand')\nhandle = sessions.get('other-hand')")
    kernel.run("%uexec_kill other-hand")
    assert value(kernel, "(handle.info.alive, handle.info.exit_code in (-1, -9))") == (False, True)


def test_commands_lists_each_typed_command_with_its_exit_code_start_and_duration(kernel):
    kernel.run("import time\nlisted = sessions.start('bash --norc -i', name='listed')\nt0 = time.time()")
    kernel.run("for line in ['true', '(exit 3)', 'sleep 0.3']:\n    listed.run(line)")
    kernel.run("busy = listed.write('sleep 30\\n', timeout=0.3)\ncommands = listed.commands()\nt1 = time.time()")
    assert value(kernel, "[(c.number, c.text, c.exit_code, c.running) for c in commands]") == [
        (1, "true", 0, False), (2, "(exit 3)", 3, False), (3, "sleep 0.3", 0, False), (4, "sleep 30", None, True),
    ]
    assert value(kernel, "all(t0 <= c.started <= t1 for c in commands)") is True
    assert value(kernel, "0.3 <= commands[2].seconds < 5 and commands[0].seconds < 0.3") is True
    # as `%uexec_output --commands` lists them, and also once the session has ended
    listed = kernel.run("%uexec_output listed --commands").splitlines()
    assert [line.split()[:2] for line in listed] == [["1", "exit"], ["2", "exit"], ["3", "exit"], ["4", "running"]], listed
    kernel.run("listed.kill()")
    assert value(kernel, "[c.text for c in listed.commands()]") == ["true", "(exit 3)", "sleep 0.3", "sleep 30"]


def test_the_result_repr_says_what_happened_and_shows_the_output(kernel):
    text = kernel.run("sessions.run(['echo', 'hello repr'])")
    assert re.fullmatch(r"UnifiedExecResult\(session_id=None, exit_code=0, wall_time=\d+\.\d\d, .*ended_by='exit', output='hello repr\\n'\)\n", text), text


def test_awaitable_twins_give_the_same_results(kernel):
    kernel.run(
        "ash = await sessions.start_async(['bash', '--norc', '-i'], name='apysh')\n"
        "ar = await ash.run_async('echo $((6*7)); (exit 5)')\n"
        "aw = await ash.write_async('echo ready\\n', until='^ready')\n"
        "listed = [info.name for info in await sessions.list_async()]\n"
        "again = await sessions.get_async('apysh')\n"
        "page = await ash.output_async(grep='^42$')\n"
        "await ash.kill_async()\n"
        "one = await sessions.run_async('bash -c \"exit 7\"')\n"
    )
    assert value(kernel, "ar.command_exit_code") == 5 and value(kernel, "ar.output") == "42\n"
    assert value(kernel, "aw.ended_by") in ("match", "command")
    assert "apysh" in value(kernel, "listed")
    assert value(kernel, "again.id == ash.id") is True
    assert re.search(r"^\d+:42$", value(kernel, "page"), re.M), value(kernel, "page")
    assert value(kernel, "one.exit_code") == 7
    assert "apysh" not in value(kernel, "[info.name for info in sessions.list()]")


def test_a_one_shot_program_runs_to_its_exit(kernel):
    assert value(kernel, "[sessions.run(['bash', '-c', f'exit {n}']).exit_code for n in range(3)]") == [0, 1, 2]
    kernel.run("r = sessions.run(['sleep', '30'], timeout=0.3)")
    # it timed out and runs on: its id says so, and it can be stopped
    assert value(kernel, "r.timed_out and r.session_id is not None") is True
    kernel.run("sessions.get(r.session_id).kill()")
    assert value(kernel, "r.session_id in [info.session_id for info in sessions.list()]") is False


def test_wait_for_a_pattern_or_quiet_and_type_keys(kernel):
    kernel.run("py = sessions.start('python3 -q -i', until='>>> $')")
    assert value(kernel, "py.started.ended_by") == "match"
    kernel.run("w = py.write('print(6 * 7)\\n', until='>>> $')")
    assert "\n42\n" in value(kernel, "w.output")
    kernel.run("py.write('import time; time.sleep(0.2); print(\"late\")\\n', timeout=0)")
    assert "late" in value(kernel, "py.wait_for('^late$').output")
    kernel.run("q = py.write('print(1)\\n', quiet=0.3)")
    assert value(kernel, "q.ended_by") == "quiet"
    kernel.run("gone = py.write(keys=['C-d'], timeout=10)")
    assert value(kernel, "gone.exit_code") == 0


def test_a_program_started_without_a_wait_keeps_its_first_words_for_the_next_call(kernel):
    kernel.run("e = sessions.start(['bash', '-c', 'echo early; sleep 30'])")
    assert value(kernel, "e.started") is None
    assert "early" in value(kernel, "e.wait_for('^early$').output")
    kernel.run("e.kill()")


def test_its_journal_is_read_after_the_program_ended(kernel):
    kernel.run("s = sessions.start(['bash', '-c', 'seq 1 50'], name='seq50')\ns.wait_for()")
    assert value(kernel, "s.output(tail=2)") == "49\n50\n"
    assert value(kernel, "s.output(lines='3:4')") == "3\n4\n"


def test_a_live_view_is_a_widget_of_the_session(kernel):
    kernel.run("v = sessions.start('bash --norc -i', name='viewed')")
    assert value(kernel, "type(v.view()).__name__") == "TerminalWidget"
    kernel.run("v.kill()")


def test_a_signal_reaches_the_foreground_program(kernel):
    # the program says it runs (then becomes `sleep`, in the same process group): it holds the terminal.
    kernel.run("sg = sessions.start('bash --norc -i', name='signalled')\nsg.write(\"bash -c 'echo begun; exec sleep 100'\\n\", until='^begun$')")
    kernel.run("sg.kill('INT')")
    assert value(kernel, "sg.run('echo $?').output") == "130\n"
    kernel.run("sg.kill()")


def test_a_plain_call_blocks_only_its_own_thread(kernel, tmp_path):
    # Two calls from two threads at once: each program waits for the other's file, so
    # calls that took turns would both run to their timeout.
    a, b = tmp_path / "a", tmp_path / "b"
    kernel.run(
        "from concurrent.futures import ThreadPoolExecutor\n"
        f"def meet(mine, theirs):\n"
        f"    return sessions.run(['bash', '-c', f'touch {{mine}}; while [ ! -e {{theirs}} ]; do sleep 0.02; done'], timeout=30)\n"
        f"with ThreadPoolExecutor(2) as pool:\n"
        f"    met = list(pool.map(meet, [{str(a)!r}, {str(b)!r}], [{str(b)!r}, {str(a)!r}]))\n"
    )
    assert value(kernel, "[(r.exit_code, r.timed_out) for r in met]") == [(0, False), (0, False)]


def test_a_thread_waiting_for_a_line_sees_the_one_another_threads_command_prints_and_neither_waits_behind_the_other(kernel):
    # The watcher's wait begins first (its collector subscribed); the main thread's command
    # then goes in at once, and its line ends the watcher's wait.
    kernel.run(
        "import threading, time\n"
        "from unified_exec_kernel.jupyter.current import magics_of\n"
        "engine = magics_of(get_ipython())\n"
        "marked = sessions.start('bash --norc -i', name='threads')\n"
        "def listeners():\n"
        "    return engine.bridge.call(lambda: len(engine.manager.session(marked.id)._subscribers))\n"
        "before, seen = listeners(), {}\n"
        "watcher = threading.Thread(target=lambda: seen.update(watched=marked.wait_for(r'^MARK-42$', timeout=20)))\n"
        "watcher.start()\n"
        "deadline = time.monotonic() + 20\n"
        "while listeners() < before + 2 and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "typed_at = time.monotonic()\n"
        "ran = marked.run('echo MARK-$((6*7))', timeout=20)\n"
        "ran_for = time.monotonic() - typed_at\n"
        "watcher.join(30)\n"
    )
    assert value(kernel, "(seen['watched'].ended_by, 'MARK-42' in seen['watched'].output)") == ("match", True)
    assert value(kernel, "(ran.command_exit_code, 'MARK-42' in ran.output)") == (0, True)
    assert value(kernel, "ran_for < 15 and ran.wall_time <= ran_for") is True  # not behind the watcher's 20 s


def test_many_objects_of_one_session_share_one_record_of_its_end(kernel):
    kernel.run("named = sessions.start('sleep 60', name='many-handles')\nhandles = [sessions.get('many-handles') for _ in range(200)]")
    count = "engine.bridge.call(lambda: len(engine.manager.session(named.id)._exit_callbacks))"
    kernel.run("from unified_exec_kernel.jupyter.current import magics_of\nengine = magics_of(get_ipython())")
    assert value(kernel, count) < 10  # not one a handle
    kernel.run("named.kill()")
    assert value(kernel, "{h.info.alive for h in handles}") == {False}


ERRORS = [
    ("sessions.get('nope')", "UnknownSessionIdError", "no session named 'nope'"),
    ("sessions.get(9999).run('true')", "UnknownSessionIdError", "no session with id 9999"),
    ("sessions.run('no-such-program-here --flag')", "CreateSessionError", "no-such-program-here: command not found"),
    ("sessions.start([])", "MissingCommandLineError", "Missing command line"),
    ("sessions.start('bash', name='1abc')", "InvalidSessionNameError", "'1abc' cannot name a session"),
    ("sessions.run('echo x', cwd='/no/such/dir')", "CreateSessionError", "no such directory"),
    ("sessions.run('sleep 1', timeout=-1)", "ValueError", "timeout must be 0 or more seconds"),
    ("sessions.run('sleep 1', timeout=float('nan'))", "ValueError", "timeout must be 0 or more seconds, not nan"),
    ("sessions.run('true', env={'RETRIES': 3})", "CreateSessionError", "true: environment variable 'RETRIES' must be a str (or os.PathLike), not int"),
    ("sessions.get(True)", "TypeError", "a session is its id (an int) or its name (a str), not True"),
    ("sessions.start('sleep 100', until='(' * 600)", "ValueError", "until is not a valid regular expression: nested too deeply"),
    ("sessions.start('sleep 100', until='x' * 1001)", "ValueError", "until is too long: 1001 characters, at most 1000"),
]


@pytest.mark.parametrize("code,ename,message", ERRORS, ids=[e[1] + "-" + str(i) for i, e in enumerate(ERRORS)])
def test_errors_are_the_engines_one_line_each(kernel, code, ename, message):
    execution = kernel.execute(code)
    assert execution.reply["status"] == "error"
    assert execution.reply["ename"] == ename
    assert message in execution.reply["evalue"] and "\n" not in execution.reply["evalue"]
    if ename not in ("ValueError", "TypeError"):
        family = f"issubclass(getattr(errors, {ename!r}), errors.UnifiedExecError)"
        assert value(kernel, f"__import__('unified_exec_kernel.core.errors', fromlist=['_']).__dict__ and (lambda errors: {family})(__import__('unified_exec_kernel.core.errors', fromlist=['_']))") is True
    # the traceback is the cell's line and the call, not the engine's insides
    frames = [line for line in execution.error.splitlines() if re.search(r"(Cell In|File )", line)]
    assert len(frames) <= 2, execution.error


def test_python_inputs_are_taken_as_python_gives_them(kernel, tmp_path):
    kernel.run(f"import pathlib\nhere = pathlib.Path({str(tmp_path)!r})")
    assert value(kernel, "sessions.run('pwd', cwd=here).output") == f"{tmp_path}\n"
    assert value(kernel, "sessions.run(['printenv', 'WHERE'], env={'WHERE': here / 'x'}).output") == f"{tmp_path}/x\n"
    kernel.run("typist = sessions.start(['sed', '-u', 's/^/got /'], cwd=here)")
    typed = value(kernel, "typist.write(b'bytes as bytes \\xc3\\xa9\\n', until='^got ').output")
    assert typed == "bytes as bytes é\ngot bytes as bytes é\n"  # the terminal's echo, then what the program read
    kernel.run("typist.kill()")


def test_an_endless_timeout_is_clamped_with_the_engines_warning(kernel):
    for timeout in ("float('inf')", "1e308"):
        output = value(kernel, f"sessions.run(['echo', 'done'], timeout={timeout}).output")
        assert output == "Warning: requested timeout infms exceeds maximum of 60000ms; clamping to 60000ms.\ndone\n"


def kernel_processes(kernel, argv: list[str]) -> list[int]:
    """The kernel's descendants running `argv`."""
    found = []
    for child in psutil.Process(kernel.pid).children(recursive=True):
        try:
            if child.cmdline() == argv:
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("pattern", ["'('", "'(' * 600"], ids=["invalid", "nested-too-deeply"])
def test_a_bad_until_starts_no_program(kernel, pattern):
    listed = value(kernel, "[info.session_id for info in sessions.list()]")
    execution = kernel.execute(f"sessions.start('sleep 4242', until={pattern})")
    assert execution.reply["ename"] == "ValueError" and "\n" not in execution.reply["evalue"]
    assert len([line for line in execution.error.splitlines() if re.search(r"(Cell In|File )", line)]) <= 2, execution.error
    assert kernel_processes(kernel, ["sleep", "4242"]) == []
    assert value(kernel, "[info.session_id for info in sessions.list()]") == listed


def test_a_closed_stdin_is_told_in_python_terms(kernel):
    kernel.run("piped = sessions.start('sleep 30', tty=False)")  # cat would read the closed stdin's end and exit
    execution = kernel.execute("piped.write('typed\\n')")
    kernel.run("piped.kill()")
    assert execution.reply["ename"] == "StdinClosedError"
    assert execution.reply["evalue"] == "stdin is closed for this session; start it with sessions.start(..., tty=True) to keep stdin open"


def test_in_a_plain_ipython_kernel_after_load_ext():
    k = Kernel("python3")
    try:
        execution = k.execute("from unified_exec_kernel import sessions\nsessions.list()")
        assert execution.reply["status"] == "error"
        assert execution.reply["evalue"] == "load the extension first: %load_ext unified_exec_kernel"
        k.run("%load_ext unified_exec_kernel")
        text = k.run("s = sessions.start(['bash', '--norc', '-i'])\nr = s.run('echo from-python3; (exit 4)')\nprint(r.command_exit_code, r.output)")
        assert text == "4 from-python3\n\n"
        text = k.run("r = await s.run_async('echo awaited')\nprint(r.command_exit_code, r.output)")
        assert text == "0 awaited\n\n"
    finally:
        k.shutdown()


SCRIPT = textwrap.dedent(
    """
    import os, sys
    from unified_exec_kernel import sessions

    codes = [sessions.run(["bash", "-c", f"exit {n}"]).exit_code for n in range(3)]
    sh = sessions.start(["bash", "--norc", "-i"], env={"PS1": "$ "})
    done = sh.run("echo $((6*7)); (exit 9)")
    stays = sessions.start(["bash", "-c", "trap '' HUP; sleep 100"])
    print(codes, done.command_exit_code, done.output.strip(), sh.output(grep="^42$").strip(), sep="|")
    print(stays.info.pid)
    try:
        sh.view()
    except Exception as error:
        print(type(error).__name__, error, sep="|")
    """
)


def test_a_script_gets_an_engine_of_its_own_that_ends_with_it(tmp_path):
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    first, pid, error = done.stdout.splitlines()
    assert re.fullmatch(r"\[0, 1, 2\]\|9\|42\|\d+:42", first), first
    assert error == "UnifiedExecError|a live view needs a notebook kernel: %load_ext unified_exec_kernel"
    # a session that ignores the hangup still ends with the program
    deadline = time.monotonic() + 10
    while psutil.pid_exists(int(pid)) and psutil.Process(int(pid)).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the script's session outlived it"
        time.sleep(0.05)
    assert [name for name in os.listdir(tmp_path) if "python-" in name] == []  # its journals went with it


PIPELINE = [
    "from unified_exec_kernel import sessions",
    "hosts = ['alpha', 'beta', 'gamma']\n"
    "results = {host: sessions.run(['bash', '-c', f'echo checked {host}; [ {host} != beta ]']) for host in hosts}\n"
    "{host: r.exit_code for host, r in results.items()}",
    "sh = await sessions.start_async('bash --norc -i', name='sh')\n(await sh.run_async('test -d /tmp')).command_exit_code",
    "%uexec -s sh echo typed-by-magic",
    "sh.kill()",
]


def test_an_nbclient_run_of_a_notebook_that_uses_it(tmp_path):
    # What papermill does: a notebook executed top to bottom by nbclient, outputs saved.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in PIPELINE])
    client = NotebookClient(nb, kernel_name="uexec", timeout=60, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    shown = [
        "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs) for cell in nb.cells
    ]
    assert shown[1] == "{'alpha': 0, 'beta': 1, 'gamma': 0}"
    assert shown[2] == "0"
    assert "\ntyped-by-magic\n" in shown[3] and "command exited with code 0" in shown[3]


BIG_CALLS = [
    "sessions.run([big])",
    "sessions.start(['true'], name='-' + big)",
    "sessions.get(big)",
    "sessions.run(['true'], cwd='/' + big)",
    "sessions.run(['true'], env={big + '\\0': 'v'})",
    "sessions.run(['true'], until=')' + big)",
    "refuser.write('x', until=')' + big)",
    "refuser.write('', keys=[big])",
    "refuser.kill(big)",
    "refuser.output(lines=big)",
    "refuser.output(grep=')' + big)",
]


@pytest.mark.parametrize("size", [1024 * 1024, 10 * 1024 * 1024])
def test_every_refused_call_is_one_short_line_whatever_its_input(kernel, size):
    kernel.run(f"big = 'x' * {size}\nrefuser = sessions.start(['bash', '--norc', '-i'], name='refuser')")
    try:
        for call in BIG_CALLS:
            execution = kernel.execute(call, timeout=120)
            shown = execution.reply.get("evalue", "")
            assert execution.reply["status"] == "error", (call, execution.reply)
            assert len(shown) <= 1024 and "\n" not in shown, (call, execution.reply["ename"], len(shown), shown[:300])
    finally:
        kernel.run("refuser.kill()\ndel big")
