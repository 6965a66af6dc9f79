"""`%uexec_replay`: a session's journal or a file, or one clear line saying why not."""

from __future__ import annotations

import pytest

VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def kernel(uexec_kernel):
    return uexec_kernel


def test_a_sessions_journal_plays_with_a_chapter_per_command(kernel):
    kernel.run("%%uexec --name sh -t 10000\nbash -i\n")
    kernel.run("%uexec -s sh echo one")
    kernel.run("%uexec -s sh false")
    shown = kernel.execute("%uexec_replay sh")
    views = [m for m in shown.messages if m["msg_type"] == "display_data" and VIEW in m["content"]["data"]]
    assert len(views) == 1, shown.text
    assert "[replay: bash -i, 2 commands" in views[0]["content"]["data"]["text/plain"]
    chapters = kernel.run(
        "import gc\nfrom unified_exec_kernel.live.replay import ReplayWidget\n"
        "print([(c['label'], c['exit_code']) for c in [o for o in gc.get_objects() if isinstance(o, ReplayWidget)][-1].chapters])"
    )
    assert chapters.strip() == "[('echo one', 0), ('false', 1)]"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("%uexec_replay nosuch", "UsageError: no file 'nosuch', and no journal for session 'nosuch'"),
        ("%uexec_replay --idle -1 sh", "UsageError: --idle must be 0 or more seconds, not -1"),
        ("%uexec_replay /etc/hostname", "UsageError: /etc/hostname is not an asciicast recording"),  # the path as given
        ("%uexec_replay", "UsageError:"),
    ],
)
def test_bad_input_gets_one_line_and_the_kernel_lives_on(kernel, line, said):
    execution = kernel.execute(line)
    lines = [text for text in execution.text.splitlines() if text.strip()]
    assert len(lines) == 1 and lines[0].startswith(said), execution.text
    assert "Traceback" not in execution.text
    assert kernel.run("print(6 * 7)").strip() == "42"


def test_every_malformed_recording_is_one_line_naming_it(kernel, tmp_path):
    """Crafted headers, event times and notes gave tracebacks from the player's reading."""
    from ..malformed_casts import MALFORMED

    for name, text in sorted(MALFORMED.items()):
        (tmp_path / name).write_text(text)
        execution = kernel.execute(f"%uexec_replay {tmp_path / name}")
        lines = [line for line in execution.text.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(f"UsageError: {tmp_path / name} "), (name, execution.text)  # the file as given
    assert kernel.run("print(6 * 7)").strip() == "42"


def test_what_is_no_recording_is_one_line_in_bounded_memory_and_the_kernel_lives_on(kernel, tmp_path):
    """A FIFO or /dev/zero was taken for a session's name ("no file"); a 100 MB line was read whole."""
    from ..unreadable_files import SAYS, unreadable_files

    says = {**SAYS, "directory": "(a directory), and no journal for session", "missing": "no file"}
    peak = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    before = int(kernel.run(peak))
    for name, path in sorted(unreadable_files(tmp_path).items()):
        execution = kernel.execute(f"%uexec_replay {path}", timeout=60)
        lines = [line for line in execution.text.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("UsageError: ") and says[name] in lines[0], (name, execution.text)
        assert path in lines[0] or name == "device" and "/dev/zero" in lines[0], (name, lines[0])
    assert int(kernel.run(peak)) - before < 64 * 1024  # KB: a line is never held past its bound
    assert kernel.run("print(6 * 7)").strip() == "42"
