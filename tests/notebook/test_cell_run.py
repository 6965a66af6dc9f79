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
    text = execution.text
    assert "begun" in text and "wait interrupted" in text and "%uexec_kill" in text
    sid = int(re.search(r"session (\d+) running", text).group(1))
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
    assert execution.reply["status"] == "error" and execution.reply["evalue"].startswith("interrupted: session")
    text = execution.text
    assert "begun-1" in text and "begun-2" not in text and "after-all-lines" not in text
    assert "%uexec_kill" in text  # the status line still says how to stop what runs
    sessions = kernel.run("%uexec_sessions")
    started = set(re.findall(r"\n(\d+) ", sessions)) - before
    assert len(started) == 1, sessions
    kernel.run(f"%uexec_kill {started.pop()}")
