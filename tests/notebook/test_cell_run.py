"""A request run in its cell: the wait ends on an interrupt, the program does not."""

from __future__ import annotations

import re
import time

import pytest

from ..kernel_harness import Kernel


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    yield k
    k.shutdown()


def test_interrupt_ends_the_wait_and_keeps_the_session(kernel):
    interrupted_at = []

    def interrupt_once_started(messages):
        if not interrupted_at and any("begun" in str(m["content"]) for m in messages):
            interrupted_at.append(time.monotonic())
            kernel.manager.interrupt_kernel()

    execution = kernel.execute("%%uexec -t 30000\nbash -c 'echo begun; sleep 100'\n", during=interrupt_once_started)
    assert interrupted_at
    assert time.monotonic() - interrupted_at[0] < 5  # not the 30 s timeout; latency is in benchmarks/
    assert (execution.reply["status"], execution.reply["ename"]) == ("error", "UsageError")
    assert "still runs" in execution.reply["evalue"] and "\n" not in execution.reply["evalue"]
    assert "%uexec_kill" in execution.reply["evalue"]
    assert "begun" in execution.text
    sid = int(re.search(r"session (\d+) still runs", execution.reply["evalue"]).group(1))
    assert re.search(rf"\n{sid} +bash -c .* running", kernel.run("%uexec_sessions"))


def test_an_interrupt_stops_the_whole_cell_not_just_the_waiting_line(kernel):
    interrupted = []

    def interrupt_once_started(messages):
        if not interrupted and any("begun-1" in str(m["content"]) for m in messages):
            interrupted.append(True)
            kernel.manager.interrupt_kernel()

    before = set(re.findall(r"\n(\d+) ", kernel.run("%uexec_sessions")))
    lines = "\n".join(f"%uexec -t 3000 bash -c 'echo begun-{i}; sleep 100'" for i in range(1, 7))
    execution = kernel.execute(lines + "\nprint('after-all-lines')\n", during=interrupt_once_started)
    assert interrupted
    assert execution.reply["status"] == "error" and execution.reply["evalue"].startswith("interrupted after ")
    assert execution.reply["evalue"].endswith("; the rest of the cell was not run")
    text = execution.text
    assert "begun-1" in text and "begun-2" not in text and "after-all-lines" not in text
    assert "%uexec_kill" in text  # the error line says how to stop what runs
    sessions = kernel.run("%uexec_sessions")
    started = set(re.findall(r"\n(\d+) ", sessions)) - before
    assert len(started) == 1, sessions
    kernel.run(f"%uexec_kill {started.pop()}")


def test_an_interrupted_one_line_magic_says_so_in_one_line(kernel):
    kernel.run("%%uexec --name one -t 5000\nbash --norc -i\n")
    interrupted = []

    def interrupt_once_started(messages):
        if not interrupted and any("begun-0one" in str(m["content"]) for m in messages):
            interrupted.append(True)
            kernel.manager.interrupt_kernel()

    execution = kernel.execute("%uexec -s one -t 30000 echo begun-$((0))one; sleep 100", during=interrupt_once_started)
    assert interrupted
    after = execution.text[execution.text.rindex("begun-0one") :].splitlines()[1:]
    assert [line for line in after if line.strip()] == [f"UsageError: {execution.reply['evalue']}"], execution.text
    assert execution.reply["evalue"].startswith("interrupted after ") and "rest of the cell" not in execution.reply["evalue"]
    kernel.run("%uexec_kill one")


def test_a_start_is_timed_from_the_spawn_even_when_showing_its_view_takes_long(kernel):
    # Showing the live view comes between the spawn and the wait; a shell at its
    # prompt by the time the wait began read `[session 1 · 0.00 s]`.
    kernel.run(
        "import time\nfrom unified_exec_kernel.jupyter.current import magics_of\n"
        "_magics = magics_of(get_ipython())\n_views = _magics.live_view\n"
        "class _SlowViews:\n"
        "    def __call__(self, session_id):\n        time.sleep(0.5)\n        return _views(session_id)\n"
        "    def unavailable(self):\n        return _views.unavailable()\n"
        "_magics.live_view = _SlowViews()\n"
    )
    try:
        text = kernel.run("%%uexec --live --name slowview -t 5000\nbash --norc -i\n")
    finally:
        kernel.run("_magics.live_view = _views")
    status = re.search(r"\[session \d+ was running · (\d+\.\d+) s\]", text)
    assert status and float(status.group(1)) >= 0.5, text
    kernel.run("%uexec_kill slowview")
