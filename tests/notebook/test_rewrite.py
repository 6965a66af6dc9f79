"""The cell rewrite: only real magic lines, never string literals, never the user's namespace."""

from __future__ import annotations

import time

import pytest

from ..kernel_harness import Kernel


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    yield k
    k.shutdown()


def test_a_magic_line_inside_a_string_literal_is_left_alone(kernel):
    text = kernel.run("s = '''\n%uexec echo hi\n'''\nprint(repr(s))")
    assert text.strip() == repr("\n%uexec echo hi\n")


def test_magics_outlive_a_reset_and_a_variable_of_the_old_name(kernel):
    kernel.run("%reset -f")
    assert "after-reset" in kernel.run("%%uexec\necho after-reset\n")
    kernel.run("%%uexec --out __uexec__\necho stored\n")
    assert "still-works" in kernel.run("%uexec echo still-works")


@pytest.mark.parametrize(
    "code",
    [
        "if True:\n    %uexec --out r echo {1+1} $x {Path(f).touch()}\n",
        "_ = %uexec --out r echo {1+1} $x {Path(f).touch()}\n",
        "%uexec --out r echo {1+1} $x {Path(f).touch()}\n",
    ],
    ids=["indented", "assigned", "autoawait-off"],
)
def test_no_path_expands_python_into_the_command(kernel, code, tmp_path):
    marker = tmp_path / "touched"
    kernel.run(f"from pathlib import Path\nx = 5\nf = {str(marker)!r}\nr = None")
    autoawait_off = code.startswith("%uexec")
    if autoawait_off:
        kernel.run("%autoawait off")
    try:
        kernel.run(code)
        # These paths run the magic in the background, on the idle loop.
        deadline = time.monotonic() + 20
        while (shown := kernel.run("print('pending' if r is None else r.output)")).startswith("pending"):
            assert time.monotonic() < deadline, "the background magic never finished"
    finally:
        kernel.run("%autoawait on")
    assert not marker.exists()
    assert "{1+1} $x {Path(f).touch()}" in shown


@pytest.mark.parametrize("code", ["%uexec?", "%%uexec?", "%uexec_kill?"])
def test_help_on_the_magic_is_not_rewritten(kernel, code):
    execution = kernel.execute(code)
    assert execution.reply["status"] == "ok"
    assert "--all" in execution.reply["payload"][0]["data"]["text/plain"] or "--session" in execution.reply["payload"][0]["data"]["text/plain"]
