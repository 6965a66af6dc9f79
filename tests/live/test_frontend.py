"""The live view's front end: the built anywidget module, or plain text when it was never built."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from unified_exec_kernel.live import frontend
from unified_exec_kernel.live.widget import TerminalWidget

from ..kernel_harness import Kernel

VIEW = "application/vnd.jupyter.widget-view+json"
PACKAGE = Path(frontend.__file__).resolve().parent.parent


@pytest.mark.skipif(not frontend.built(), reason="the front end is not built (no npm at install)")
def test_the_widget_loads_the_built_module_and_its_styles():
    assert frontend.esm() == frontend.ESM and frontend.css() == frontend.CSS
    module = str(TerminalWidget._esm)
    assert module == frontend.ESM.read_text(encoding="utf-8")
    # One self-contained ES module: xterm.js is inside, nothing is imported at run time.
    assert "export{" in module.replace(" ", "") and "xterm" in module
    assert "import(" not in module and not any(line.startswith("import ") for line in module.splitlines())
    assert ".xterm" in str(TerminalWidget._css)


def test_without_the_module_the_stand_in_says_why():
    stand_in = frontend._STAND_IN
    assert "\n" in stand_in, "a one-line string would be taken for a file name"
    assert frontend.NOT_BUILT in stand_in and "export default" in stand_in


@pytest.fixture
def nodeless_copy(tmp_path) -> Path:
    """The package as a source install without Node leaves it: no static/, no labextension/."""
    shutil.copytree(PACKAGE, tmp_path / PACKAGE.name, ignore=shutil.ignore_patterns("static", "labextension", "__pycache__"))
    return tmp_path


def test_without_the_built_module_live_cells_stream_text_and_widgets_show_a_snapshot(nodeless_copy):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(nodeless_copy), os.environ.get("PYTHONPATH", "")]))
    kernel = Kernel("python3", env=env)
    try:
        where = kernel.execute("%load_ext unified_exec_kernel\nimport unified_exec_kernel\nprint(unified_exec_kernel.__file__)")
        assert where.error is None, where.error
        assert where.text.strip().startswith(str(nodeless_copy)), where.text

        # --live: one line saying why, then the cell's own text view, as without --live
        execution = kernel.execute("%%uexec --live -t 1000\nbash --norc -i\n")
        assert execution.reply["status"] == "ok" and execution.error is None, execution.text
        assert not any(VIEW in m["content"].get("data", {}) for m in execution.messages), "a view that could never render"
        lines = execution.text.splitlines()
        assert lines[0] == f"[--live shows text here: {frontend.NOT_BUILT}]", lines
        assert any(line.startswith("[session 0 running") for line in lines), lines

        # A widget displayed by hand: a text snapshot of the scrollback, saying why
        snapshot = kernel.execute("from unified_exec_kernel.live.widget import TerminalWidget\nTerminalWidget(0)")
        assert snapshot.error is None, snapshot.text
        bundles = [m["content"]["data"] for m in snapshot.messages if m["msg_type"] in ("execute_result", "display_data")]
        assert len(bundles) == 1 and VIEW not in bundles[0], bundles
        text = bundles[0]["text/plain"]
        assert "[live terminal: session 0 (bash --norc -i), running]" in text, text
        assert frontend.NOT_BUILT in text, text
        # The session lives on, and the magics drive it as usual.
        typed = kernel.execute("%%uexec -s 0 -t 2000\necho typed-$((6*7))\n")
        assert "typed-42" in typed.text, typed.text
    finally:
        kernel.execute("%uexec_kill --all")
        kernel.shutdown()
