"""The live view's front end: the built anywidget module, or plain text when it was never built."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from unified_exec_kernel.live import frontend
from unified_exec_kernel.live.widget import TerminalWidget

from ..kernel_harness import Kernel

VIEW = "application/vnd.jupyter.widget-view+json"
PACKAGE = Path(frontend.__file__).resolve().parent.parent


@pytest.mark.skipif(not frontend.built(), reason="the front end is not built (no npm at install)")
def test_the_widget_carries_a_small_loader_and_the_module_comes_as_buffers():
    assert frontend.esm() == frontend.LOADER
    loader = str(TerminalWidget._esm)
    assert loader == frontend.LOADER.read_text(encoding="utf-8")
    # What a saved notebook stores per live view: a few KB, no xterm.js, no styles.
    assert len(loader.encode()) < 4096 and "xterm" not in loader.lower()
    assert not hasattr(TerminalWidget, "_css") or not str(getattr(TerminalWidget, "_css", ""))
    digest, script, styles = frontend.module()
    assert len(digest) == 16 and frontend.module_hash() == digest
    # One self-contained ES module: xterm.js is inside, nothing is imported at run time.
    text = script.decode()
    assert "export{" in text.replace(" ", "") and "xterm" in text
    assert "import(" not in text and not any(line.startswith("import ") for line in text.splitlines())
    assert b".xterm" in styles


@pytest.mark.skipif(not frontend.built(), reason="the front end is not built (no npm at install)")
def test_behind_a_gateway_a_view_carries_the_module_itself_for_no_buffer_reaches_its_page(monkeypatch):
    from unified_exec_kernel.live.loaded import LoadedWidget

    monkeypatch.setenv("KERNEL_GATEWAY", "1")
    script, styles = frontend.whole()
    view = LoadedWidget()
    try:
        assert (view._esm, view._css) == (script, styles) and "xterm" in view._esm and ".xterm" in view._css
        player = LoadedWidget(view="player")  # a replay too: the module's default export renders the view it names
        assert (player._esm, player._css) == (script, styles)
        player.close()
    finally:
        view.close()
    monkeypatch.delenv("KERNEL_GATEWAY")
    here = LoadedWidget()
    assert here._esm == frontend.LOADER.read_text(encoding="utf-8") and here._css == ""
    here.close()


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
        # ... shown as it arrives: this program goes on only once the cell showed its first line while it ran
        go = nodeless_copy / "go"

        def shown(msg) -> str:
            return msg["content"]["data"].get("text/plain", "") if msg["msg_type"] in ("display_data", "update_display_data") else ""

        def during(messages) -> None:
            if any("one" in shown(m) and "[…running]" in shown(m) for m in messages):
                go.touch()

        followed = kernel.execute(
            f"%%uexec --live -t 30000 --until '^two$'\nbash --norc -c 'echo one; until [ -e {go} ]; do sleep 0.05; done; echo two; exec cat'\n",
            during=during,
        )
        assert re.search(r"^two\s*$", followed.text, re.M), followed.text

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
