"""Fuzzed magic lines in a real kernel: each ends in its result or one UsageError line, and the kernel lives."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .kernel_harness import Kernel

WORDS = [
    "-s", "--session", "-t", "--timeout", "--shell", "--keys", "C-c", "Enter", "Hyper-x", "--no-newline",
    "--raw", "--format", "agent", "text", "bogus", "--out", "x", "2bad", "--live", "0", "-1", "999999",
    "99999999999999", "'", '"', "'a b'", "{1+1}", "$x", "--", "--all", "--signal", "INT", "99", "=", "--t=5",
]


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    yield k
    k.shutdown()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    magic=st.sampled_from(["%%uexec {}\ntrue\n", "%uexec {} true", "%uexec_kill {}", "%%uexec {}\n"]),
    words=st.lists(st.sampled_from(WORDS), max_size=6),
)
def test_any_magic_line_is_its_result_or_one_usage_error(kernel, magic, words):
    execution = kernel.execute(magic.format(" ".join(words)), timeout=90)
    if execution.reply["status"] == "error":
        assert execution.reply["ename"] == "UsageError", execution.reply
        assert "\n" not in execution.reply["evalue"]
        assert execution.error is None  # no traceback shown, only the one line
    assert kernel.run("print('alive')") == "alive\n"
