"""A request run in its cell: the wait ends on an interrupt, the program does not."""

from __future__ import annotations

import re
import time

import pytest

from .kernel_harness import Kernel


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
    assert execution.reply["status"] == "ok"
    text = execution.text
    assert "begun" in text and "wait interrupted" in text and "%uexec_kill" in text
    sid = int(re.search(r"session (\d+) running", text).group(1))
    assert re.search(rf"\n{sid} +bash -c .* running", kernel.run("%uexec_sessions"))
