from unified_exec_kernel import UnifiedExecResult
from unified_exec_kernel.notebook.cell_output import CellOutput, _update_interval, interrupted_line, status_line


def test_status_line_for_a_running_session():
    assert status_line(UnifiedExecResult(3, "", wall_time=1.5)) == "[session 3 running · 1.50 s]"


def test_status_line_under_a_live_view_says_the_state_the_wait_ended_in():
    # The view's header follows the session; a "running" here would go stale once it
    # ends, and no state at all said nothing: "was running" stays true.
    assert status_line(UnifiedExecResult(3, "", wall_time=1.5), live=True) == "[session 3 was running · 1.50 s]"
    ended = UnifiedExecResult(None, "", exit_code=0, wall_time=0.2)
    assert status_line(ended, live=True) == status_line(ended) == "[exited with code 0 · 0.20 s]"


def test_status_line_says_a_program_in_the_shell_waits_for_input():
    result = UnifiedExecResult(3, "", wall_time=0.35, ended_by="input")
    assert status_line(result) == "[session 3 running · waits for input (no end from the shell) · 0.35 s]"


def test_status_line_for_an_exited_program():
    assert status_line(UnifiedExecResult(None, "", exit_code=-9, wall_time=0.004)) == "[exited with code -9 · 0.00 s]"


def test_status_line_of_a_session_the_user_closed_says_closed_not_a_signal():
    assert status_line(UnifiedExecResult(None, "", exit_code=-1, closed=True)) == "[closed · 0.00 s]"


def test_an_interrupted_wait_is_one_line_that_says_how_to_stop_the_session():
    result = UnifiedExecResult(2, "", wall_time=0.3, dropped_bytes=10)
    assert interrupted_line(result) == (
        "interrupted after 0.30 s: session 2 still runs (stop it with %uexec_kill 2 or %uexec -s 2 --keys C-c)"
        " · 10 earlier bytes dropped (buffer full)"
    )
    assert interrupted_line(result, more=True).endswith("; the rest of the cell was not run")
    assert interrupted_line(UnifiedExecResult(None, "", exit_code=0, wall_time=0.3)) == "interrupted after 0.30 s: exited with code 0"


def test_status_line_counts_dropped_bytes():
    assert "1,024 earlier bytes dropped" in status_line(UnifiedExecResult(1, "", dropped_bytes=1024))


def test_updates_slow_down_as_a_wait_goes_on():
    assert _update_interval(0.5) == 0.1
    assert _update_interval(5) == 0.5
    assert _update_interval(30) == 1.0


def test_a_cell_says_bytes_where_the_engine_says_tokens():
    from unified_exec_kernel.notebook.cell_output import _TOKENS_MARKER, _bytes_left_out

    text = "head\n…1200 tokens truncated…\ntail\n"
    assert _TOKENS_MARKER.sub(_bytes_left_out, text) == "head\n[… about 4,800 bytes left out of the middle …]\ntail\n"


def test_status_line_of_a_cut_output_says_where_the_middle_is():
    result = UnifiedExecResult(None, "", exit_code=0, wall_time=0.2, journal_range=("build", 120, 689049))
    assert status_line(result) == "[exited with code 0 · 0.20 s · the middle is in the journal: %uexec_output build --bytes 120:689049]"


def test_status_line_says_output_is_paused_and_how_to_resume_it():
    paused = UnifiedExecResult(3, "", wall_time=0.3, ended_by="paused")
    assert status_line(paused) == "[session 3 running · output paused (Ctrl+S, XOFF) · Ctrl+Q resumes it: %uexec -s 3 --keys C-q · 0.30 s]"


def _seq_flood_cut(lines: int = 200_000) -> str:
    from unified_exec_kernel.core.output.truncate import truncate_middle

    return truncate_middle("".join(f"{n}\r\n" for n in range(1, lines + 1)), 128 * 1024)[0]


def test_a_cut_flood_is_drawn_without_the_terminal_parser(monkeypatch):
    # The cut marker's … was the only character beyond ASCII in a flood's output, and sent all of
    # it (~130 KB) through pyte's parser at the end of the cell: 0.1-0.2 s of a 2-million-line
    # flood. Drawn as the same text, without the parser.
    import pyte

    from unified_exec_kernel.notebook.cell_output import CellOutput
    from unified_exec_kernel.screen.render import render_terminal_text

    output = _seq_flood_cut()
    assert "tokens truncated…" in output and not output.isascii()
    whole = render_terminal_text(output)  # what the parser draws
    fed = []
    feed = pyte.Stream.feed
    monkeypatch.setattr(pyte.Stream, "feed", lambda stream, data: (fed.append(len(data)), feed(stream, data))[1])
    shown = CellOutput.rendered(UnifiedExecResult(None, output, exit_code=0)).output
    assert shown == whole and "…" in shown
    assert fed == []


def test_a_cut_output_is_drawn_as_the_parser_draws_it_whatever_it_holds():
    # Escapes, lone CRs, wide and combining characters, a cut inside an escape: the same text as
    # the whole output through the parser, marker and all.
    import random

    from unified_exec_kernel.core.output.truncate import truncate_middle
    from unified_exec_kernel.notebook.cell_output import CellOutput
    from unified_exec_kernel.screen.render import render_terminal_text

    pieces = ["a", "b", " ", "\r\n", "\r", "\n", "\b", "\t", "\x1b[A", "\x1b[31m", "\x1b[0m", "\x1b[2K", "\x1b[", "ü", "字", "e\u0301", "\x07", "\x1b[5D", "~"]
    rng = random.Random(34)
    for _ in range(400):
        sample = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        output, _ = truncate_middle(sample * rng.randint(1, 200), rng.randint(40, 2000))
        assert CellOutput.rendered(UnifiedExecResult(None, output)).output == render_terminal_text(output), repr(sample)


def test_python_gets_what_a_typed_command_printed_and_raw_gets_the_transcript():
    transcript = "echo hi\r\n\x1b[?2004l\rhi\r\n\x1b[?2004h$ "
    typed = UnifiedExecResult(session_id=0, output=transcript, command_output="hi\r\n", command_exit_code=0, ended_by="command")
    shown = CellOutput.for_python(typed)
    assert (shown.output, shown.command_output, shown.command_exit_code) == ("hi\n", "hi\n", 0)
    assert CellOutput.for_python(typed, raw=True) is typed
    program = UnifiedExecResult(session_id=None, output="Linux\r\n", exit_code=0, ended_by="exit")
    assert CellOutput.for_python(program).output == "Linux\n"  # every result's lines end in \n
    assert "command_output" not in repr(shown)  # the output, once
