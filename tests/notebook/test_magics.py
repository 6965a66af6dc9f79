"""The magics in a real uexec kernel, read through iopub as a notebook would."""

from __future__ import annotations

import re
import time

import psutil
import pytest

from unified_exec_kernel.notebook.magics import UnifiedExecMagics, parser_of, split_line_magic

from ..kernel_harness import Kernel


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    k.run("%env PS1=$ ")
    yield k
    k.shutdown()


def start_shell(kernel) -> int:
    text = kernel.run("%%uexec -t 1500\nbash --norc -i\n")
    return int(re.search(r"session (\d+) running", text).group(1))


def test_seed_scenario_state_persists_across_cells(kernel):
    sid = start_shell(kernel)
    kernel.run(f"%%uexec -s {sid}\nexport CODEX_INTERACTIVE_SHELL_VAR=codex\n")
    text = kernel.run(f"%%uexec -s {sid}\necho $CODEX_INTERACTIVE_SHELL_VAR\n")
    assert "\ncodex\n" in text
    assert f"[session {sid} running" in text


def test_two_sessions_are_isolated(kernel):
    a = start_shell(kernel)
    kernel.run(f"%uexec -s {a} export ONLY_IN_A=yes")
    b = start_shell(kernel)
    assert "yes" not in kernel.run(f"%uexec -s {b} echo ${{ONLY_IN_A:-unset}}")
    assert "\nyes\n" in kernel.run(f"%uexec -s {a} echo $ONLY_IN_A")


def test_slow_command_then_a_later_poll(kernel):
    sid = start_shell(kernel)
    first = kernel.run(f"%%uexec -s {sid} -t 100\nsleep 1.5; echo finally-$((6*7))\n")
    assert "finally-42" not in first
    time.sleep(2)
    assert "finally-42" in kernel.run(f"%%uexec -s {sid} -t 200\n")


def test_status_line_reports_the_exit_code_and_wall_time(kernel):
    text = kernel.run("%%uexec --shell\necho out; exit 3\n")
    assert re.search(r"out\n\[exited with code 3 · \d+\.\d\d s\]", text), text


def test_line_magic_types_the_rest_of_the_line_exactly(kernel):
    sid = start_shell(kernel)
    text = kernel.run(f"""%uexec -s {sid} printf '[%s]\\n' "a  b"   'c'""")
    assert "[a  b]" in text and "[c]" in text


def test_wait_is_cooperative_the_loop_keeps_running(kernel):
    kernel.run(
        "import asyncio, time\n"
        "ticks = []\n"
        "def _tick():\n"
        "    ticks.append(time.monotonic())\n"
        "    if len(ticks) < 400: asyncio.get_running_loop().call_later(0.02, _tick)\n"
        "_tick()\n"
    )
    before = time.monotonic()
    kernel.run("%%uexec -t 1500\nsleep 5\n")
    waited = time.monotonic() - before
    text = kernel.run("gaps = [b - a for a, b in zip(ticks, ticks[1:])]\nprint(len(ticks), max(gaps))")
    count, max_gap = text.split()
    assert waited >= 1.5
    assert int(count) >= 40  # ~75 ticks fit in the 1.5 s wait; a blocked loop gives ~1
    assert float(max_gap) < 0.5


def test_two_million_lines_send_few_iopub_messages(kernel):
    execution = kernel.execute("%%uexec --timeout 60000\nseq 1 2000000\n", timeout=120)
    assert execution.reply["status"] == "ok"
    assert execution.iopub_count <= 50, execution.iopub_count
    text = execution.text
    assert "bytes left out of the middle" in text and "tokens" not in text and "\n2000000\n" in text
    assert "[exited with code 0" in text


def test_progress_bar_ends_as_its_last_state(kernel):
    text = kernel.run("%%uexec --shell\nfor i in $(seq 1 100); do printf '\\rprogress %3d%%' $i; done; echo\n")
    assert "progress 100%" in text
    assert "progress  50%" not in text


def test_raw_shows_the_terminal_text_untouched(kernel):
    text = kernel.run("%%uexec --raw --shell\nprintf 'a\\rb\\n'\n")
    assert "a\rb\r\n" in text


def test_keys_ctrl_c_stops_a_foreground_sleep(kernel):
    sid = start_shell(kernel)
    kernel.run(f"%uexec -s {sid} -t 300 sleep 100")
    text = kernel.run(f"%%uexec -s {sid} --keys C-c\n")
    assert "^C" in text
    assert "\n130\n" in kernel.run(f"%uexec -s {sid} echo $?")


BAD_INPUTS = [
    ("%%uexec --bogus\nls\n", "unrecognized arguments: --bogus"),
    ("%%uexec -s abc\n", "no session named 'abc'"),
    ("%%uexec -s 9999\n", "no session with id 9999"),
    ("%%uexec -t -5\nls\n", "--timeout must be 0 or more"),
    ("%%uexec --until '('\nls\n", "--until is not a valid regular expression: missing ), unterminated subpattern"),
    ("%%uexec --name café\nnever-run\n", "never-run: command not found"),  # a name of any alphabet is taken
    ("%%uexec\n\n", "empty command"),
    ("%%uexec\nno-such-program-here --flag\n", "no-such-program-here: command not found"),
    ("%%uexec -s 0 --keys C-c Hyper-x\n", "unknown key 'Hyper-x'"),
    ("%%uexec --shell -s 0\necho hi\n", "--shell starts a new session; it cannot go with --session"),
    ("%%uexec --keep -s 0\necho hi\n", "--keep is chosen when a session starts; a running session cannot become kept (start a new one with --keep)"),
    ("%%uexec\necho 'unterminated\n", "cannot split the command line"),
    ("%uexec_kill", "give a session id or --all"),
    ("%%uexec --out 2bad\necho never-run\n", "--out needs a variable name, not '2bad'"),
    ("%uexec_kill 0 --signal NOPE", "unknown signal 'NOPE'"),
    ("%%uexec --out 'x\necho never-run\n", "cannot read the options"),
    ('%uexec -s "0 echo hi', "cannot read the options"),
    ("%uexec_kill 'x", "cannot read the options"),
    ("%uexec_kill 0 --signal 99", "unknown signal '99'"),
    ("%uexec_kill 0 --signal -1", "unknown signal '-1'"),
    ("%uexec_kill 0 --signal 99999999999999", "unknown signal '99999999999999'"),
]


@pytest.mark.parametrize("code, message", BAD_INPUTS, ids=[code.split("\n")[0] for code, _ in BAD_INPUTS])
def test_bad_input_is_one_clear_line_and_nothing_is_lost(kernel, code, message):
    survivor = start_shell(kernel)
    execution = kernel.execute(code)
    assert execution.reply["status"] == "error"
    assert execution.outputs == [("stream", f"UsageError: {execution.reply['evalue']}\n")]
    assert message in execution.reply["evalue"]
    assert "\n" not in execution.reply["evalue"]
    assert "\nstill-alive\n" in kernel.run(f"%uexec -s {survivor} echo still-alive")


@pytest.mark.parametrize("pattern, reason", [
    ("(" * 600, "--until is not a valid regular expression: nested too deeply"),  # was a RecursionError, 14 KB of traceback
    ("x" * 1001, "--until is too long: 1001 characters, at most 1000"),
], ids=["nested-too-deeply", "too-long"])
def test_an_until_python_cannot_compile_is_one_line_and_starts_nothing(kernel, pattern, reason):
    for code in (f"%%uexec --until '{pattern}'\nsleep 4343\n", f"%uexec --until '{pattern}' sleep 4343"):
        execution = kernel.execute(code)
        assert execution.outputs == [("stream", f"UsageError: {reason}\n")]
    sleeping = [child for child in psutil.Process(kernel.pid).children(recursive=True) if child.cmdline() == ["sleep", "4343"]]
    assert sleeping == []


def test_typing_into_a_session_on_pipes_is_refused_in_the_magics_terms(kernel):
    kernel.run("from unified_exec_kernel import sessions\npiped = sessions.start('sleep 30', tty=False)")
    execution = kernel.execute("%%uexec -s piped.id\ntyped\n".replace("piped.id", kernel.run("print(piped.id)").strip()))
    kernel.run("piped.kill()")
    assert execution.outputs == [("stream", "UsageError: stdin is closed for this session; it runs on pipes (started with tty=False); %%uexec starts one in a terminal\n")]


def test_out_stores_the_result_in_the_namespace(kernel):
    kernel.run("%%uexec --out r --shell\necho stored; exit 4\n")
    assert kernel.run("print(r.exit_code, r.session_id, 'stored' in r.output)").strip() == "4 None True"


def test_run_cell_magic_and_autoawait_off_wait_in_place_with_out_set_for_the_next_line(kernel):
    # As docs/troubleshooting.md says: no cell awaits here, so the magic waits in place; the cell ends with the command.
    execution = kernel.execute(
        "get_ipython().run_cell_magic('uexec', '-t 10000 --out placed', \"bash -c 'sleep 0.5; echo done'\")\n"
        "print('after', repr(placed.output))"
    )
    assert execution.reply["status"] == "ok" and execution.seconds >= 0.5
    assert re.search(r"^done\n\[exited with code 0 · \d\.\d\d s\]\nafter 'done\\n'\n$", execution.text), execution.text
    kernel.run("%autoawait off")
    try:
        execution = kernel.execute("%%uexec -t 10000 --out late\nbash -c 'sleep 0.5; echo late'\n")
        assert execution.reply["status"] == "ok" and execution.seconds >= 0.5 and execution.text.startswith("late\n")
        assert kernel.run("print(repr(late.output))") == "'late\\n'\n"
    finally:
        kernel.run("%autoawait on")


def test_agent_format_reports_as_codex_does(kernel):
    text = kernel.run("%%uexec --format agent\necho hi\n")
    assert re.match(r"Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nhi\n", text), text
    raw = kernel.run("%%uexec --format agent --raw\necho hi\n")
    assert raw.endswith("Output:\nhi\r\n"), raw  # --raw: the terminal's bytes


def test_agent_format_in_a_notebook_shows_a_shell_as_a_cell_does(kernel):
    # bash's bracketed-paste switches (ESC[?2004l after the typed line, ESC[?2004h at the
    # prompt) and its CRs stayed in the page and the saved notebook, a blank line after the command
    sid = start_shell(kernel)
    text = kernel.run(f"%%uexec -s {sid} --format agent\nprintf 'one\\033[32mtwo\\033[0m\\n'\n")
    output = text.split("Output:\n", 1)[1]
    assert "\x1b[?2004" not in output and "\r" not in output, repr(output)
    lines = output.splitlines()
    assert lines[0].endswith("printf 'one\\033[32mtwo\\033[0m\\n'") and lines[1] == "one\x1b[32mtwo\x1b[0m", lines


def test_help_documents_every_option(kernel):
    execution = kernel.execute("%%uexec?")
    help_text = execution.reply["payload"][0]["data"]["text/plain"]
    for option in ["--session", "--timeout", "--shell", "--keys", "--no-newline", "--raw", "--out", "--format"]:
        assert option in help_text
    assert "::" not in help_text.split("%%uexec")[0]  # no reST marker before the usage line


def test_a_kernel_makes_a_magics_parser_when_it_is_first_used_and_its_help_is_whole_before_that():
    fresh = Kernel("uexec")  # the module's kernel has used every magic
    made = (
        "from unified_exec_kernel.notebook.magics import UnifiedExecMagics as M\n"
        "print([n for n in ('uexec', 'uexec_kill', 'uexec_output', 'uexec_record', 'uexec_replay') if 'parser' in vars(getattr(M, n))])"
    )
    try:
        assert fresh.run(made) == "[]\n"
        help_text = fresh.execute("%uexec_kill?").reply["payload"][0]["data"]["text/plain"]
        assert "--all" in help_text and "--signal" in help_text and "::" not in help_text, help_text
        failed = fresh.execute("%uexec_output --head x 1")  # parsed, and refused by the parser
        assert failed.reply["status"] == "error" and "--head: invalid int value" in failed.reply["evalue"], failed.reply
        assert fresh.run(made) == "['uexec_kill', 'uexec_output']\n"
    finally:
        fresh.shutdown()


def test_sessions_table_and_kill(kernel):
    sid = start_shell(kernel)
    table = kernel.run("%uexec_sessions")
    assert re.search(rf"\n{sid} +bash --norc -i +\d+ +running", table)
    assert kernel.run(f"%uexec_kill {sid}").strip() == f"closed session {sid}"
    assert not re.search(rf"\n{sid} +bash", kernel.run("%uexec_sessions"))
    other = start_shell(kernel)
    assert kernel.run(f"%uexec_kill {other} --signal INT").strip() == f"sent SIGINT to session {other}"
    start_shell(kernel)  # two at least, whatever the tests before this one left
    assert "closed sessions" in kernel.run("%uexec_kill --all")
    assert "no uexec sessions" in kernel.run("%uexec_sessions")
    assert kernel.run("%uexec_kill --all").strip() == "no sessions to close"


@pytest.mark.parametrize(
    "line, options, body",
    [
        ("-s 3 ls -la", "-s 3 ", "ls -la"),
        ("-s 3 -t 10 echo  two  spaces", "-s 3 -t 10 ", "echo  two  spaces"),
        ("-s 3 --keys C-c Enter", "-s 3 --keys C-c Enter", ""),
        ("-s 3 -- -dash-first", "-s 3 ", "-dash-first"),
        ("--raw", "--raw", ""),
        ("echo hi", "", "echo hi"),
    ],
)
def test_line_magic_options_split_from_the_body(line, options, body):
    assert split_line_magic(parser_of(UnifiedExecMagics.uexec), line) == (options, body)


def test_a_live_view_that_could_not_be_built_leaves_no_trace(kernel):
    execution = kernel.execute("%%uexec --live -s 999\n")
    assert execution.reply["evalue"].startswith("no session with id 999; ")
    later = kernel.execute("import gc\ngc.collect()\nprint('clean')")
    assert later.text == "clean\n"


def test_a_named_integrated_shell_answers_each_command_with_its_status(kernel):
    started = kernel.execute("%%uexec --name sh1\nbash --norc -i\n")
    assert started.reply["status"] == "ok" and started.seconds < 10
    done = kernel.execute("%uexec -s sh1 sleep 0.5; echo typed-$((1+1))")
    assert "typed-2" in done.text and "command exited with code 0" in done.text
    assert done.seconds < 10  # waited for the command, not for the 60 s maximum
    failed = kernel.run("%uexec -s sh1 (exit 4)")
    assert "command exited with code 4" in failed
    assert re.search(r"\n\d+ +sh1 +bash --norc -i", kernel.run("%uexec_sessions"))
    taken = kernel.execute("%%uexec --name sh1\nbash --norc -i\n")
    assert "held by running session" in taken.reply["evalue"]
    assert "closed session" in kernel.run("%uexec_kill sh1")
    assert "reused" in kernel.run("%%uexec --name sh1\nbash -c 'echo reused'\n")


def test_check_fails_the_cell_after_its_output(kernel):
    execution = kernel.execute("%%uexec --check --shell\necho shown-first; exit 3\n")
    assert execution.reply["status"] == "error"
    assert execution.reply["evalue"] == "the program exited with code 3"
    assert "shown-first" in execution.text and execution.error is None  # one line, no traceback
    kernel.run("%%uexec --name checked\nbash --norc -i\n")
    typed = kernel.execute("%%uexec -s checked --check\nfalse\n")
    assert typed.reply["evalue"] == "the command exited with code 1"
    assert kernel.execute("%%uexec -s checked --check\ntrue\n").reply["status"] == "ok"
    kernel.run("%uexec_kill checked")


def test_until_quiet_cwd_env_and_no_integration(kernel, tmp_path):
    repl = kernel.execute("%%uexec --name py --until '>>> $' -t 20000\npython3 -i -q\n")
    assert repl.seconds < 15 and "--until matched" in repl.text
    kernel.run("%uexec_kill py")
    text = kernel.run(f"%%uexec --cwd {tmp_path} --env GREETING=hi --env OTHER=x=y\nbash -c 'pwd; echo $GREETING $OTHER'\n")
    assert str(tmp_path) in text and "hi x=y" in text
    missing = kernel.execute(f"%%uexec --cwd {tmp_path}/missing\ntrue\n")
    assert "no such directory" in missing.reply["evalue"]
    plain = kernel.run("%%uexec --name plain --no-integration -t 500\nbash --norc -i\n")
    assert "session" in plain
    waited = kernel.execute("%uexec -s plain -t 700 echo waits-its-timeout")
    assert "waits-its-timeout" in waited.text and waited.seconds >= 0.6
    kernel.run("%uexec_kill plain")


def test_a_cell_shows_only_what_its_own_input_produced(kernel):
    kernel.run("%%uexec --name bg\nbash --norc -i\n")
    kernel.run("%uexec -s bg (sleep 0.2; echo from-the-background) & disown")
    time.sleep(1)
    own = kernel.run("%uexec -s bg echo my-own")
    assert "my-own" in own and "from-the-background" not in own and "earlier bytes not shown" in own
    kernel.run("%uexec_kill bg")


def test_a_refused_option_starts_nothing(kernel, tmp_path):
    marker = tmp_path / "started"
    before = kernel.run("%uexec_sessions")
    for line in ("%%uexec --until '('", "%%uexec --name=-5", "%%uexec --quiet -1"):
        execution = kernel.execute(f"{line}\ntouch {marker}\n")
        assert execution.reply["status"] == "error" and execution.reply["ename"] == "UsageError", line
        assert "\n" not in execution.reply["evalue"]
    assert not marker.exists()
    assert kernel.run("%uexec_sessions") == before


def test_a_nul_byte_in_the_command_is_one_line_not_a_traceback(kernel):
    execution = kernel.execute('%%uexec --shell\necho "a\x00b"\n')
    assert execution.reply["ename"] == "UsageError" and "NUL byte" in execution.reply["evalue"], execution.reply
    assert "Traceback" not in execution.text


# -- %uexec_output / %uexec_record: a session's journal ------------------------


@pytest.fixture(scope="module")
def journaled_shell(kernel):
    """An integrated bash named `jsh` that ran `seq 1 100000` and a failing `printf`."""
    kernel.run("%%uexec --name jsh -t 5000\nbash -i\n")
    kernel.run("%%uexec -s jsh\nseq 1 100000\n", timeout=60)
    kernel.run("%%uexec -s jsh\nprintf 'alpha\\nbeta\\n'; (exit 3)\n")
    return "jsh"


def test_output_pages_the_whole_output_of_a_command_rendered_as_a_cell(kernel, journaled_shell):
    text = kernel.run(f"%uexec_output {journaled_shell} --command 1 --tail 3")
    assert text == "99998\n99999\n100000\n[session jsh · command 1 (exit 0): seq 1 100000 · lines 99998-100000 of 100000]\n"
    text = kernel.run(f"%uexec_output {journaled_shell} --command -1")
    assert text.startswith("alpha\nbeta\n[session jsh · command 2 (exit 3): printf")


def test_output_lines_are_sed_style_and_grep_shows_numbers_and_context(kernel, journaled_shell):
    # line 1 of the whole output is the prompt with `seq 1 100000`
    assert kernel.run(f"%uexec_output {journaled_shell} --lines 50001:50002").startswith("50000\n50001\n[session jsh · lines 50001-50002 of ")
    text = kernel.run(f"%uexec_output {journaled_shell} --command 1 --grep '^7777[0-1]$' -C 1")
    assert text.startswith("77769-77769\n77770:77770\n77771:77771\n77772-77772\n")


def test_output_grep_numbers_every_line_even_a_progress_bar_that_erases_itself(kernel):
    kernel.run("%%uexec --name bar --shell\nprintf 'step 1\\n\\033[2K\\rstep 2\\nold\\rstep 3\\n'\n")
    text = kernel.run("%uexec_output bar --grep step")
    assert text == "1:step 1\n2:step 2\n3:step 3\n[session bar · lines 1-3 of 3]\n", text


def test_output_lists_the_commands_with_their_exit_codes(kernel, journaled_shell):
    text = kernel.run(f"%uexec_output {journaled_shell} --commands")
    assert re.search(r"^ +1  exit 0 +seq 1 100000\n +2  exit 3 +printf", text, re.M), text


def test_a_finished_one_shot_command_is_readable_after_it_is_forgotten(kernel):
    kernel.run("%%uexec --name once --shell\nfor i in $(seq 1 5000); do echo line-$i; done\n")
    assert "no session named 'once'" in kernel.execute("%uexec -s once echo").reply["evalue"]  # the manager forgot it
    assert kernel.run("%uexec_output once --head 2").startswith("line-1\nline-2\n[session once · lines 1-2 of 5000]")


def test_record_writes_v2_that_asciinema_cat_plays(kernel, journaled_shell, tmp_path):
    import subprocess
    import sys

    target = tmp_path / "jsh.cast"
    text = kernel.run(f"%uexec_record {journaled_shell} {target} --v2")
    assert text.startswith(f"wrote {target}: asciicast v2, ")
    shown = subprocess.run([sys.executable, "-m", "asciinema", "cat", str(target)], capture_output=True, timeout=60)
    if b"No module named asciinema" in shown.stderr:
        pytest.skip("asciinema (the test extra) is not installed")
    assert shown.returncode == 0 and b"99999\r\n100000\r\n" in shown.stdout and b"alpha\r\nbeta\r\n" in shown.stdout


JOURNAL_BAD_INPUTS = [
    ("%uexec_output nosuch", "no journal for session 'nosuch' (journals: "),
    ("%uexec_output jsh --lines 900000:900010", "lines 900000:900010 are past the end: the output has "),
    ("%uexec_output jsh --lines 900000:", "lines 900000: are past the end: the output has "),
    ("%uexec_output jsh --grep '('", "--grep is not a valid regular expression: missing ), unterminated subpattern at position 0"),
    ("%uexec_output jsh --command 99", "no command 99: the session ran "),
    ("%uexec_output jsh --lines x:y", "--lines takes A:B (whole numbers), not 'x:y'"),
    ("%uexec_output jsh --head 1 --tail 1", "give at most one of --head, --tail, --lines and --bytes"),
    ("%uexec_output jsh --drop --tail 1", "--drop goes alone, not with --tail"),
    ("%uexec_record jsh /nonexistent-dir/x.cast", "cannot write /nonexistent-dir/x.cast"),
]


@pytest.mark.parametrize("code, message", JOURNAL_BAD_INPUTS, ids=[code for code, _ in JOURNAL_BAD_INPUTS])
def test_bad_journal_requests_are_one_clear_line(kernel, journaled_shell, code, message):
    execution = kernel.execute(code)
    assert execution.reply["status"] == "error"
    assert execution.outputs == [("stream", f"UsageError: {execution.reply['evalue']}\n")]
    assert execution.reply["evalue"].startswith(message) and "\n" not in execution.reply["evalue"]
    assert "\nstill-alive\n" in kernel.run(f"%uexec -s {journaled_shell} echo still-alive")


def test_a_dropped_journal_says_so_when_read(kernel):
    kernel.run("%%uexec --name gone\necho secret\n")
    assert kernel.run("%uexec_output gone --drop") == "dropped the journal of session gone\n"
    assert kernel.execute("%uexec_output gone").reply["evalue"] == "the journal of session 'gone' is gone: it was dropped"


def test_a_cut_agent_result_names_the_range_that_reads_all_of_it(kernel):
    text = kernel.run("%%uexec --name flood --format agent -t 30000\nseq 1 100000\n", timeout=60)
    hint = re.search(r"\[The middle was cut; all of it: %uexec_output flood --bytes (\d+):(\d+), ", text)
    assert hint, text[-300:]
    start, end = map(int, hint.groups())
    assert end - start == sum(len(f"{n}\r\n") for n in range(1, 100001))
    assert kernel.run(f"%uexec_output flood --bytes {end - 8}:{end}").startswith("100000\n")


def refusals(big: str) -> list[str]:
    """Cells that each refuse a huge value: a program, a name, a path, a key, a pattern, a number, a signal."""
    return [
        f"%%uexec\n{big}\n",
        f"%%uexec --name=-{big}\ntrue\n",
        f"%%uexec --cwd /{big}\ntrue\n",
        f"%%uexec --env {big}\ntrue\n",
        f"%%uexec --until '){big}'\ntrue\n",
        f"%%uexec --timeout {big}\ntrue\n",
        f"%%uexec --out=-{big}\ntrue\n",
        f"%%uexec -s {big}\nx\n",
        f"%%uexec -s refuser --keys {big}\n",
        f"%uexec -s {big} x",
        f"%uexec_kill {big}",
        f"%uexec_kill refuser --signal {big}",
        f"%uexec_output {big}",
        f"%uexec_output refuser --lines {big}",
        f"%uexec_output refuser --grep '){big}'",
        f"%uexec_record {big} /tmp/uexec-refused.cast",
        f"%uexec_replay {big}",
        f"%uexec_replay refuser --idle {big}",
    ]


def test_every_refused_magic_is_one_short_line_whatever_was_typed(kernel):
    # 100 KB, not megabytes: a magic's line is split by shlex, whose time grows with the square of the length.
    kernel.run("%%uexec --name refuser -t 300\nbash --norc -i\n")
    for cell in refusals("x" * 100_000):
        execution = kernel.execute(cell, timeout=120)
        shown = execution.reply.get("evalue", "")
        assert execution.reply["status"] == "error" and execution.reply["ename"] == "UsageError", (cell[:40], execution.reply)
        assert len(shown) <= 1024 and "\n" not in shown, (cell[:40], len(shown), shown[:300])
    kernel.run("%uexec_kill refuser")
