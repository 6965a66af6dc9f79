"""The front end in a real JupyterLab and Chromium: the live view, and the Sessions panel.

Terminal text is read from xterm's buffer, whichever renderer draws it (a
live view draws on a canvas where a GPU runs WebGL): a view's node holds its
xterm as `uexecXterm`. The replay's player has xterm's DOM renderer, whose
rows are `.xterm-rows > div`.
With `UEXEC_DOC_SCREENSHOTS=1`, two tests also save the images of the docs.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError

from .conftest import ARTIFACTS

import pytest

pytestmark = pytest.mark.timeout(90)

DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
READY = "kernel ready"
# `%env PS1=$ ` would lose the space: IPython strips the line.
SETUP = f"import os; os.environ['PS1'] = '$ '; print({READY!r})"
BASH = "bash --norc -i"
KERNEL_START_S = 60

# The xterm of a live view (the node, or the node inside), or null for the player.
XTERM_JS = """root => (root.matches('.uexec-terminal') ? root : root.querySelector('.uexec-terminal') || root).uexecXterm || null"""

# The rows xterm's DOM renderer draws (the player's; a live view's where it has no WebGL).
DOM_ROWS_JS = """root => Array.from(root.querySelectorAll('.xterm-rows > div'), row => row.textContent.replace(/\\u00a0/g, ' ').trimEnd())"""

ROWS_JS = f"""root => {{
    const term = ({XTERM_JS})(root);
    if (!term) {{
        return ({DOM_ROWS_JS})(root);
    }}
    const buffer = term.buffer.active, rows = [];
    for (let y = buffer.viewportY; y < buffer.viewportY + term.rows; y++) {{
        const line = buffer.getLine(y);
        rows.push(line ? line.translateToString(true).trimEnd() : '');  // a printed space is not trimmed
    }}
    return rows;
}}"""

# The grid xterm shows (either renderer sizes `.xterm-screen` to cols x rows
# cells; the helper textarea is one cell), and the room the view gives it.
GRID_JS = f"""root => {{
    const term = ({XTERM_JS})(root);
    const screen = root.querySelector('.xterm-screen');
    const cell = root.querySelector('.xterm-helper-textarea');
    const xterm = root.querySelector('.xterm');
    const style = getComputedStyle(xterm);
    const padX = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    const padY = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
    const cellWidth = parseFloat(cell.style.width);
    const cellHeight = parseFloat(cell.style.height);
    return {{
        rows: term ? term.rows : root.querySelectorAll('.xterm-rows > div').length,
        cols: Math.round(screen.getBoundingClientRect().width / cellWidth),
        cellWidth, cellHeight,
        screenWidth: screen.getBoundingClientRect().width,
        screenHeight: screen.getBoundingClientRect().height,
        roomWidth: root.clientWidth - padX,
        roomHeight: root.clientHeight - padY,
    }};
}}"""


# -- helpers -----------------------------------------------------------------


def wait_until(check, timeout: float, what: str, interval: float = 0.05):
    """Poll `check()` until it returns something truthy; fail saying `what`."""
    deadline = time.monotonic() + timeout
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def terminal_lines(terminal) -> list[str]:
    return terminal.evaluate(ROWS_JS)


def wait_for_lines(terminal, predicate, timeout: float, what: str) -> list[str]:
    seen: list[str] = []

    def check():
        seen[:] = terminal_lines(terminal)
        return predicate(seen)

    try:
        wait_until(check, timeout, what)
    except AssertionError as error:
        shown = "\n".join(line for line in seen if line)
        raise AssertionError(f"{error}; the terminal shows:\n{shown}") from None
    return list(seen)


def type_line(page, terminal, text: str) -> None:
    """Focus the terminal as a user does (a click), then type a line, a key every 15 ms.

    (At Playwright's default, no pause at all, a loaded machine once showed a
    restored tab take two keys in swapped order: faster than any person types.)
    """
    terminal.click()
    page.keyboard.type(text, delay=15)
    page.keyboard.press("Enter")


def kernel_connected(lab, path: str) -> bool:
    """The server has a started kernel for `path` with a client connected to it."""
    for session in lab.api("GET", "/api/sessions"):
        kernel = session.get("kernel") or {}
        if session.get("path") == path and kernel.get("execution_state") == "idle" and kernel.get("connections", 0) > 0:
            return True
    return False


def open_notebook(lab, page, name: str, cells: list[str]):
    """Open a notebook on the uexec kernel whose first cell is SETUP; wait for its kernel."""
    # `?reset`: a fresh workspace, not the layout (and notebooks) of the test before.
    page.goto(lab.write_notebook(name, [SETUP, *cells]) + "?reset")
    panel = page.locator("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)")
    code_cells = panel.locator(".jp-Notebook .jp-CodeCell")
    code_cells.first.locator(".cm-content").wait_for(timeout=30_000)
    wait_until(lambda: kernel_connected(lab, f"{name}.ipynb"), KERNEL_START_S, "the kernel to start", 0.2)
    indicator = panel.locator(".jp-Notebook-ExecutionIndicator")
    wait_until(lambda: indicator.get_attribute("data-status") == "idle", 30, "the notebook to see its kernel")
    return run_setup_cell(page, code_cells)


def run_setup_cell(page, code_cells):
    """Run the first (SETUP) cell until its output shows; the code cells.

    Even once the notebook shows its kernel idle, a Shift+Enter that comes
    too early may be dropped (the prompt stays `[ ]:`) or ask for a kernel:
    running the setup cell twice is harmless.
    """
    first = code_cells.first
    deadline = time.monotonic() + KERNEL_START_S
    dialogs: list[str] = []
    while True:
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            try:
                dialogs.append(dialog.first.inner_text(timeout=1000)[:200])
            except PlaywrightError:  # gone already
                pass
            page.keyboard.press("Escape")  # cancel, keeping the notebook's kernel
            dialog.wait_for(state="detached")
        first.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        attempt_end = time.monotonic() + 2
        while time.monotonic() < attempt_end or first.locator(".jp-InputPrompt").inner_text().strip() == "[*]:":
            if READY in first.locator(".jp-OutputArea").inner_text():
                return code_cells
            if time.monotonic() > deadline:
                status = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar-kernelStatus, .jp-NotebookPanel:not(.lm-mod-hidden) .jp-KernelStatus")
                raise AssertionError(
                    f"the kernel did not run the first cell within {KERNEL_START_S} s (prompt "
                    f"{first.locator('.jp-InputPrompt').inner_text().strip()!r}, output {first.locator('.jp-OutputArea').inner_text()[:200]!r}, "
                    f"kernel status {status.first.get_attribute('title') if status.count() else None!r}, dialogs {dialogs})"
                )
            time.sleep(0.05)


def run_cell(page, code_cells, index: int) -> None:
    code_cells.nth(index).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")


def wait_output(cell, pattern: str, timeout: float = 15) -> re.Match:
    """The first match of `pattern` in the cell's output area."""
    output = cell.locator(".jp-OutputArea")
    return wait_until(lambda: re.search(pattern, output.inner_text()), timeout, f"{pattern!r} in the cell's output")


def doc_screenshot(target, name: str) -> None:
    """Save a docs image (a page or a locator) when UEXEC_DOC_SCREENSHOTS=1."""
    if os.environ.get("UEXEC_DOC_SCREENSHOTS") != "1":
        return
    DOC_IMAGES.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(DOC_IMAGES / name), animations="disabled", caret="initial")


def stty_sizes(lines: list[str], tag: str) -> list[tuple[int, int]]:
    """The answers of `echo TAG=$(stty size)` the terminal shows."""
    return [tuple(map(int, m.groups())) for line in lines if (m := re.fullmatch(tag + r"=(\d+) (\d+)", line))]


def fitted(grid) -> bool:
    """FitAddon leaves less than one cell (plus the scrollbar) unused; xterm starts at 80x24 until fitted."""
    spare_x = grid["roomWidth"] - grid["screenWidth"]
    spare_y = grid["roomHeight"] - grid["screenHeight"]
    return 0 <= spare_x < grid["cellWidth"] + 20 and 0 <= spare_y < grid["cellHeight"]


def fitted_grid(terminal, unlike: int | None = None):
    """The terminal's grid once the view has fitted it (to a width other than `unlike`), else None."""
    grid = terminal.evaluate(GRID_JS)
    return grid if fitted(grid) and grid["cols"] != unlike else None


def resizes_sent(page, grid) -> int:
    """How many `resize` messages for the grid's size the page has sent (conftest's recorder counts them)."""
    return page.evaluate("([rows, cols]) => window.__uexecResizes.filter(([r, c]) => r === rows && c === cols).length", [grid["rows"], grid["cols"]])


def wait_resize_sent(page, grid, more_than: int = 0) -> None:
    """The view told the PTY the grid's size (again, past `more_than` times): what stty says next is that."""
    wait_until(lambda: resizes_sent(page, grid) > more_than, 10, f"a resize to {grid['rows']}x{grid['cols']}")


def ask_size(page, terminal, tag: str) -> tuple[int, int]:
    """Type `echo TAG=$(stty size)` into the terminal: the PTY's (rows, cols)."""
    type_line(page, terminal, f"echo {tag}=$(stty size)")
    lines = wait_for_lines(terminal, lambda lines: stty_sizes(lines, tag), 10, f"stty's answer ({tag})")
    return stty_sizes(lines, tag)[-1]


def start_live_shell(page, cells, index: int):
    """Run the cell (a `%%uexec --live` bash); its terminal once the prompt shows."""
    run_cell(page, cells, index)
    terminal = cells.nth(index).locator(".uexec-terminal")
    terminal.wait_for()
    wait_output(cells.nth(index), r"\[session \d+ was running ·")
    wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 10, "the prompt")
    return terminal


def open_sessions_panel(page):
    tab = page.locator('.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="uexec-sessions-panel"]')
    assert tab.get_attribute("title") == "uexec sessions"
    tab.click()
    panel = page.locator("#uexec-sessions-panel")
    panel.wait_for()
    return panel


def status_seconds(match: re.Match) -> float:
    return float(match.group(1))


# -- tests -------------------------------------------------------------------


def test_live_view_runs_an_interactive_shell_that_answers_typed_input(lab, page):
    cells = open_notebook(lab, page, "live_shell", [f"%%uexec --live -t 1000\n{BASH}"])
    run_cell(page, cells, 1)
    widget = cells.nth(1).locator(".uexec-widget")
    terminal = widget.locator(".uexec-terminal[data-session-id]")
    terminal.wait_for()
    wait_output(cells.nth(1), r"\[session \d+ was running ·")
    assert widget.locator(".uexec-widget-title").inner_text() == BASH
    assert widget.locator(".uexec-widget-state").inner_text() == "running"
    wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 10, "the prompt")

    type_line(page, terminal, "echo $((6*7))")

    lines = wait_for_lines(terminal, lambda lines: "42" in lines, 10, "42 on its own line")
    assert "$ echo $((6*7))" in lines, "the typed command was echoed by the shell"
    assert lines.index("42") == lines.index("$ echo $((6*7))") + 1
    # The view moved on past the answer: a fresh prompt waits below it.
    wait_for_lines(terminal, lambda lines: "$" in lines[lines.index("42") + 1 :], 5, "the next prompt")
    doc_screenshot(cells.nth(1), "live-view.png")

    # Control keys reach the PTY as a terminal sends them: Ctrl-C interrupts
    # the foreground job, Up recalls history, Tab completes.
    type_line(page, terminal, "sleep 100")
    page.wait_for_timeout(300)
    page.keyboard.press("Control+C")
    wait_for_lines(terminal, lambda lines: "$ sleep 100" in lines and "^C" in lines[lines.index("$ sleep 100") :], 10, "^C after the sleep")
    type_line(page, terminal, "echo status-$?")
    wait_for_lines(terminal, lambda lines: "status-130" in lines, 10, "the interrupted job's status")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    wait_for_lines(terminal, lambda lines: lines.count("status-0") == 1, 10, "the recalled command run again")
    page.keyboard.type("ech")
    page.keyboard.press("Tab")
    page.keyboard.type(" tab-$((1+1))")
    page.keyboard.press("Enter")
    wait_for_lines(terminal, lambda lines: "tab-2" in lines, 10, "the Tab-completed command's output")


# This Chromium's WebGL is SwiftShader, which draws on the CPU: renderer.ts keeps the DOM renderer there. Named as a
# GPU's, the same contexts take the WebGL path a machine with a GPU takes.
GPU_NAMED_JS = """(() => {
    for (const proto of [WebGLRenderingContext.prototype, WebGL2RenderingContext.prototype]) {
        const get = proto.getParameter;
        proto.getParameter = function (name) {
            return name === 0x9246 || name === this.RENDERER ? 'ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 Direct3D11)' : get.call(this, name);
        };
    }
})();"""

LOSE_WEBGL_JS = """root => {
    const canvas = [...root.querySelectorAll('.xterm-screen canvas')].find(c => c.getContext('webgl2'));
    canvas.getContext('webgl2').getExtension('WEBGL_lose_context').loseContext();
}"""


def test_a_live_view_draws_with_webgl_on_a_gpu_and_a_lost_context_gives_it_to_the_dom_renderer(lab, page):
    """renderer.ts: WebGL where a GPU runs it, as JupyterLab's terminal; a page keeps a few contexts only, and a lost
    one (xterm waits 3 s for it to come back) hands the view to the DOM renderer, which shows the same session."""
    page.add_init_script(GPU_NAMED_JS)
    cells = open_notebook(lab, page, "renderer_gpu", [f"%%uexec --live -t 1000\n{BASH}"])
    terminal = start_live_shell(page, cells, 1)
    assert terminal.get_attribute("data-renderer") == "webgl"
    assert terminal.evaluate(DOM_ROWS_JS) == [], "the WebGL renderer draws no DOM rows"

    terminal.evaluate(LOSE_WEBGL_JS)
    wait_until(lambda: terminal.get_attribute("data-renderer") == "dom", 10, "the DOM renderer after the lost context")
    type_line(page, terminal, "echo $((6*7))")
    wait_until(lambda: "42" in terminal.evaluate(DOM_ROWS_JS), 10, "42 in the DOM renderer's rows")
    assert "$ echo $((6*7))" in terminal.evaluate(DOM_ROWS_JS)


# Where xterm's hidden textarea (an IME's window opens there) is, in cells, and where the cursor is.
TEXTAREA_AT_JS = """root => {
    const term = root.uexecXterm, textarea = root.querySelector('.xterm-helper-textarea');
    const cell = parseFloat(textarea.style.width);
    return { at: Math.round(parseFloat(textarea.style.left) / cell), cursor: term.buffer.active.cursorX };
}"""


def test_a_live_view_keeps_the_dom_renderer_where_webgl_draws_on_the_cpu(lab, page):
    """SwiftShader (this Chromium's WebGL) drew a flood at half the DOM renderer's speed (bench_live.py flood_terminal).
    xterm's textarea, moved in the frame instead of as output is parsed (renderer.ts), still follows the cursor."""
    cells = open_notebook(lab, page, "renderer_software", [f"%%uexec --live -t 1000\n{BASH}"])
    terminal = start_live_shell(page, cells, 1)
    assert terminal.get_attribute("data-renderer") == "dom"
    assert any(row.startswith("$") for row in terminal.evaluate(DOM_ROWS_JS)), "the prompt is in the DOM renderer's rows"

    terminal.click()
    page.keyboard.type("echo abcdef", delay=15)
    wait_for_lines(terminal, lambda lines: "$ echo abcdef" in lines, 10, "the typed line")
    wait_until(lambda: terminal.evaluate(TEXTAREA_AT_JS) == {"at": 13, "cursor": 13}, 10, "the textarea under the cursor")
    page.keyboard.press("Home")
    wait_until(lambda: terminal.evaluate(TEXTAREA_AT_JS) == {"at": 2, "cursor": 2}, 10, "the textarea back at the line's start")


def test_live_view_keeps_updating_after_the_cell_returned(lab, page):
    loop = 'python3 -u -c "import time\nfor i in range(100): print(\'line\', i); time.sleep(0.05)"'
    cells = open_notebook(lab, page, "live_loop", [f"%%uexec --live -t 200\n{loop}"])
    cell = cells.nth(1)
    started = time.monotonic()
    run_cell(page, cells, 1)

    status = wait_output(cell, r"\[session \d+ was running · (\d+\.\d+) s\]", timeout=10)
    returned_after = time.monotonic() - started
    assert status_seconds(status) < 1.0, status.group(0)
    assert returned_after < 3.0, f"the cell took {returned_after:.1f} s to show its status line"
    prompt = cell.locator(".jp-InputPrompt")
    wait_until(lambda: re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip()), 5, "the cell to finish")

    terminal = cell.locator(".uexec-terminal")

    def last_index(lines):
        numbers = [int(m.group(1)) for line in lines if (m := re.fullmatch(r"line (\d+)", line))]
        return max(numbers, default=-1)

    first = last_index(terminal_lines(terminal))
    assert first < 99, "the program had already finished when the cell returned"
    # The cell has returned: any later line reached the view through the live feed.
    wait_for_lines(terminal, lambda lines: last_index(lines) > first, 10, f"a line after line {first}")

    lines = wait_for_lines(terminal, lambda lines: "line 99" in lines, 15, "line 99")
    finished_after = time.monotonic() - started
    assert finished_after > 3.0, f"100 lines 50 ms apart cannot all be there after {finished_after:.1f} s"
    # The rows above the last one are consecutive: nothing lost or repeated.
    shown = [line for line in lines if line.startswith("line ")]
    tail = [int(line.split()[1]) for line in shown]
    assert tail == list(range(100 - len(tail), 100)), shown
    wait_for_lines(terminal, lambda lines: "[exited with code 0]" in lines, 10, "the exit notice")
    widget_state = cell.locator(".uexec-widget-state")
    wait_until(lambda: widget_state.inner_text() == "exited with code 0", 10, "the header to say how it ended")


def test_terminal_size_follows_the_view_when_the_window_is_resized(lab, page):
    page.set_viewport_size({"width": 1400, "height": 900})
    cells = open_notebook(lab, page, "resize", [f"%%uexec --live -t 500\n{BASH}"])
    terminal = start_live_shell(page, cells, 1)
    wide = wait_until(lambda: fitted_grid(terminal), 10, "the view to fit its terminal")
    # The view sends the PTY its size at its first fit once attached, 100 ms
    # after `attached` (FIT_DELAY_MS): the grid may be fitted a moment earlier.
    wait_resize_sent(page, wide)
    assert ask_size(page, terminal, "wide") == (wide["rows"], wide["cols"]), wide

    page.set_viewport_size({"width": 900, "height": 900})
    narrow = wait_until(lambda: fitted_grid(terminal, unlike=wide["cols"]), 10, "the view to refit its terminal")
    assert narrow["cols"] < wide["cols"] - 40, (wide, narrow)
    wait_resize_sent(page, narrow)
    assert ask_size(page, terminal, "narrow") == (narrow["rows"], narrow["cols"]), (wide, narrow)


@pytest.mark.timeout(120)
def test_sessions_panel_lists_opens_types_into_and_kills_sessions(lab, page):
    cells = open_notebook(
        lab,
        page,
        "panel",
        [
            f"%%uexec -t 300\n{BASH}",
            "%%uexec -s 0 -t 300\necho replay-$((2+3))",
            "%%uexec -t 100\nbash -c 'sleep 4; exit 3'",
        ],
    )
    for index in (1, 2, 3):
        run_cell(page, cells, index)
        wait_output(cells.nth(index), r"\[session \d+ running")
    assert "replay-5" in cells.nth(2).locator(".jp-OutputArea").inner_text()

    # Make room, as one would for a terminal: collapse the file browser.
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    panel = open_sessions_panel(page)
    assert panel.locator(".uexec-sessions-notebook").inner_text() == "panel.ipynb"
    rows = panel.locator(".uexec-session-row[data-session-id]")
    row0 = panel.locator('.uexec-session-row[data-session-id="0"]')
    row1 = panel.locator('.uexec-session-row[data-session-id="1"]')
    wait_until(lambda: rows.count() == 2, 10, "a row per session")
    assert [rows.nth(i).get_attribute("data-session-id") for i in range(2)] == ["0", "1"]
    assert row0.locator(".uexec-session-command").inner_text() == BASH
    assert row1.locator(".uexec-session-command").inner_text() == "bash -c 'sleep 4; exit 3'"
    assert row0.locator(".uexec-session-state").inner_text() == "running"
    assert row1.locator(".uexec-session-state").inner_text() == "running"
    assert row0.locator(".uexec-kill").inner_text() == "Kill"

    row0.locator(".uexec-open").click()
    title = f"uexec 0: {BASH}"
    dock_tab = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text=title)
    dock_tab.wait_for()
    assert "lm-mod-current" in dock_tab.get_attribute("class")
    terminal = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    terminal.wait_for()
    # The replay brings the session's earlier output, typed by a cell.
    wait_for_lines(terminal, lambda lines: "replay-5" in lines, 10, "the replayed output")

    type_line(page, terminal, "echo $((7*8))")
    lines = wait_for_lines(terminal, lambda lines: "56" in lines, 10, "the answer to typed input")
    assert lines.index("56") == lines.index("$ echo $((7*8))") + 1
    wait_until(lambda: terminal.evaluate("n => n.getBoundingClientRect().width") > 700, 5, "a wide terminal tab")
    doc_screenshot(page, "sessions-panel.png")

    # Kill asks first; then it closes the session: it leaves the list, and its tab says the
    # user closed it (not the hangup that ended it, which would read as a crash).
    row0.locator(".uexec-kill").click()
    dialog = page.locator(".jp-Dialog")
    assert dialog.locator(".jp-Dialog-header").inner_text() == "Kill session 0?"
    dialog.locator("button.jp-mod-warn", has_text="Kill").click()
    wait_until(lambda: row0.count() == 0, 10, "the killed session's row to go")
    wait_for_lines(terminal, lambda lines: "[closed]" in lines, 10, "the exit notice")
    assert dock_tab.count() == 1, "the tab stays open on its exit notice"

    # A session that ended on its own stays listed, as exited, until removed.
    state1 = row1.locator(".uexec-session-state")
    wait_until(lambda: state1.inner_text() == "exited with code 3", 15, "session 1 to show how it ended")
    remove = row1.locator(".uexec-kill")
    assert remove.inner_text() == "Remove"
    remove.click()
    wait_until(lambda: rows.count() == 0, 10, "the removed session's row to go")
    assert panel.locator(".uexec-sessions-status").inner_text() == "No sessions."


PANEL_MUTATIONS_JS = """
() => {
  const panel = document.querySelector('#uexec-sessions-panel');
  const seen = window.__panelMutations = [];
  new MutationObserver(records => {
    for (const r of records) seen.push(`${r.type} on ${r.target.className || r.target.nodeName}`);
  }).observe(panel, { subtree: true, childList: true, attributes: true, characterData: true });
}
"""


def test_typing_into_a_live_view_leaves_the_sessions_panel_untouched(lab, page):
    # Each keystroke is a message to the kernel, so the kernel goes busy and idle
    # once per key; a panel that rewrote itself on each status change made the
    # page lay out and paint again at every key (see benchmarks/bench_live.py).
    cells = open_notebook(lab, page, "quiet_panel", [f"%%uexec --live -t 1000\n{BASH}"])
    terminal = start_live_shell(page, cells, 1)
    for opened in (False, True):
        if opened:
            panel = open_sessions_panel(page)
            wait_until(lambda: panel.locator(".uexec-session-row").count() == 1, 10, "the session's row")
        page.evaluate(PANEL_MUTATIONS_JS)
        tag = f"quiet-{int(opened)}"
        type_line(page, terminal, f"echo {tag}-$((20+3))")
        wait_for_lines(terminal, lambda lines: f"{tag}-23" in lines, 10, f"the answer ({tag})")
        assert page.evaluate("() => window.__panelMutations") == [], f"panel {'open' if opened else 'closed'}"


def test_a_live_view_shown_again_gives_the_pty_its_size_back(lab, page):
    cells = open_notebook(lab, page, "two_views", [f"%%uexec --live -t 300\n{BASH}"])
    live = start_live_shell(page, cells, 1)
    panel = open_sessions_panel(page)
    # The side panel took room from the notebook: the live view refits.
    live_grid = wait_until(lambda: fitted_grid(live), 10, "the live view to fit its terminal")
    wait_resize_sent(page, live_grid)
    assert ask_size(page, live, "live") == (live_grid["rows"], live_grid["cols"]), live_grid

    # A second view of the same session, bigger: used (clicked into), the PTY takes its size (the view used
    # last gives it, as tmux's window-size latest: docs/magics.md).
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()
    tab.click()
    tab_grid = wait_until(lambda: fitted_grid(tab, unlike=live_grid["cols"]), 10, "the tab to fit its terminal")
    wait_resize_sent(page, tab_grid)
    assert ask_size(page, tab, "tab") == (tab_grid["rows"], tab_grid["cols"]), tab_grid

    # Back in the notebook, the live view is what one looks at and types into.
    live_sizes_sent = resizes_sent(page, live_grid)
    page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text="two_views.ipynb").click()
    wait_until(lambda: live.is_visible(), 10, "the live view to show again")
    live.click()
    again = wait_until(lambda: fitted_grid(live), 10, "the live view to fit again")
    assert (again["rows"], again["cols"]) == (live_grid["rows"], live_grid["cols"])
    wait_resize_sent(page, again, more_than=live_sizes_sent)
    size = ask_size(page, live, "back")
    assert size == (again["rows"], again["cols"]), (again, tab_grid)


# Counts the animation frames the live view's output pacer asks for (pacer.ts `_requestFrame`; esbuild keeps
# property names), in the live view's module only: anywidget loads it from a blob: URL, while JupyterLab and its
# Sessions tabs are served from the lab's URLs. (xterm asks for frames of its own, to sync its scrollbar.)
COUNT_VIEW_FRAMES_JS = """() => {
    const ask = window.requestAnimationFrame.bind(window);
    window.__viewFrames = 0;
    window.requestAnimationFrame = callback => {
        const stack = new Error().stack || '';
        if (stack.includes('_requestFrame') && stack.includes('blob:')) window.__viewFrames++;
        return ask(callback);
    };
}"""


def test_a_live_view_out_of_sight_asks_for_no_frames_and_keeps_up(lab, page):
    ticker = 'python3 -u -c "import time\nfor i in range(100000): print(\'tick\', i); time.sleep(0.05)"'
    cells = open_notebook(lab, page, "out_of_sight", [f"%%uexec --live -t 300\n{ticker}"])
    run_cell(page, cells, 1)
    live = cells.nth(1).locator(".uexec-terminal")

    def last_tick(lines):
        return max((int(m.group(1)) for line in lines if (m := re.fullmatch(r"tick (\d+)", line))), default=-1)

    wait_for_lines(live, lambda lines: last_tick(lines) >= 5, 15, "the ticker in the live view")
    page.evaluate(COUNT_VIEW_FRAMES_JS)
    wait_until(lambda: page.evaluate("() => window.__viewFrames") > 5, 5, "the visible view's pacer to ask for frames")

    # The same session in a Sessions tab: the notebook, and its live view, go out of sight.
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    wait_for_lines(tab, lambda lines: last_tick(lines) >= 0, 15, "the ticker in the tab")
    wait_until(lambda: not live.is_visible(), 5, "the live view to be out of sight")
    # An IntersectionObserver's word comes in a task after the frame that hid the view: two frames later it is in.
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.evaluate("() => { window.__viewFrames = 0; }")
    hidden_at = last_tick(terminal_lines(tab))
    wait_for_lines(tab, lambda lines: last_tick(lines) >= hidden_at + 20, 15, "20 more ticks in the tab")
    # Each of those ticks reached the hidden view too; on main its pacer asked a frame for each.
    assert page.evaluate("() => window.__viewFrames") == 0

    # Shown again, the live view has kept up with what it was sent while out of sight.
    shown_at = last_tick(terminal_lines(tab))
    page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text="out_of_sight.ipynb").click()
    wait_for_lines(live, lambda lines: last_tick(lines) >= shown_at, 10, f"tick {shown_at} in the live view shown again")


# -- the Sessions panel as a JupyterLab panel ------------------------------------

LONG_COMMAND = "python3 -c 'import time; time.sleep(600)' --a-long-argument-that-does-not-fit-in-a-side-panel"


def workspace_has(lab, prefix: str) -> bool:
    """The default workspace, as the layout restorer saved it, names a widget starting with `prefix`."""
    try:
        data = lab.api("GET", "/lab/api/workspaces/default")["data"]
    except (OSError, KeyError, TypeError):
        return False
    return any(key.startswith(prefix) for key in data)


def run_palette_command(page, label: str) -> None:
    """Ctrl+Shift+C, the command's label, Enter: as a user runs a command."""
    page.keyboard.press("Control+Shift+C")
    search = page.locator(".lm-CommandPalette-input")
    search.wait_for()
    search.fill(label)
    item = page.locator(".lm-CommandPalette-item", has_text=label)
    item.first.wait_for()
    page.keyboard.press("Enter")


def test_sessions_panel_commands_are_in_the_palette(lab, page):
    cells = open_notebook(lab, page, "palette", [f"%%uexec -t 300\n{BASH}", f"%%uexec -t 300\n{LONG_COMMAND}"])
    for index in (1, 2):
        run_cell(page, cells, index)
        wait_output(cells.nth(index), r"\[session \d+ running")

    page.keyboard.press("Control+Shift+C")
    page.locator(".lm-CommandPalette-input").fill("uexec")
    items = page.locator(".lm-CommandPalette-item .lm-CommandPalette-itemLabel")
    wait_until(lambda: {"Show uexec sessions", "Open session in a terminal tab"} <= set(items.all_inner_texts()), 10, "both commands")
    screenshot_artifact(page, "palette-commands.png")
    page.keyboard.press("Escape")

    run_palette_command(page, "Show uexec sessions")
    panel = page.locator("#uexec-sessions-panel")
    panel.wait_for()
    wait_until(lambda: panel.locator(".uexec-session-row").count() == 2, 10, "the panel listing both sessions")

    # Two sessions: the command asks which one.
    run_palette_command(page, "Open session in a terminal tab")
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    choices = dialog.locator("select option").all_inner_texts()
    assert choices == [f"0: {BASH} (running)", f"1: {LONG_COMMAND} (running)"], choices
    dialog.locator("select").select_option(index=1)
    dialog.locator("button.jp-mod-accept").click()
    tab = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text="uexec 1: python3")
    tab.wait_for()
    assert "lm-mod-current" in tab.get_attribute("class")
    page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="1"]').wait_for()


def screenshot_artifact(target, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    target.screenshot(path=str(ARTIFACTS / name), animations="disabled")


def test_sessions_panel_is_readable_at_its_default_width(lab, page):
    cells = open_notebook(lab, page, "narrow", [f"%%uexec -t 300\n{BASH}", f"%%uexec -t 300\n{LONG_COMMAND}"])
    for index in (1, 2):
        run_cell(page, cells, index)
        wait_output(cells.nth(index), r"\[session \d+ running")
    panel = open_sessions_panel(page)
    # The side bar's icon says what it is: JupyterLab has a terminal icon of its own.
    side_tab = page.locator('.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="uexec-sessions-panel"]')
    assert side_tab.locator(".lm-TabBar-tabLabel").inner_text() == "uexec"
    rows = panel.locator(".uexec-session-row")
    wait_until(lambda: rows.count() == 2, 10, "a row per session")
    screenshot_artifact(panel, "sessions-panel-default-width.png")

    box = panel.bounding_box()
    for index in range(2):
        row = rows.nth(index)
        command = row.locator(".uexec-session-command")
        whole = command.evaluate("n => n.scrollWidth <= n.clientWidth")
        # A command cut short is whole in the row's tooltip.
        assert whole or command.inner_text() in (row.get_attribute("title") or ""), row.get_attribute("title")
        open_box = row.locator(".uexec-open").bounding_box()
        kill_box = row.locator(".uexec-kill").bounding_box()
        assert abs(open_box["y"] - kill_box["y"]) < 2, "Open and Kill side by side"
        assert kill_box["x"] + kill_box["width"] <= box["x"] + box["width"], "Kill inside the panel"
        assert row.locator(".uexec-session-state").inner_text() == "running"
    long_row = rows.nth(1)
    assert not long_row.locator(".uexec-session-command").evaluate("n => n.scrollWidth <= n.clientWidth"), "the long command fits?"
    assert LONG_COMMAND in long_row.get_attribute("title")

    # Kill asks first when the session runs; Cancel leaves it running.
    long_row.locator(".uexec-kill").click()
    dialog = page.locator(".jp-Dialog")
    assert dialog.locator(".jp-Dialog-header").inner_text() == "Kill session 1?"
    assert LONG_COMMAND in dialog.locator(".jp-Dialog-body").inner_text()
    screenshot_artifact(page, "sessions-panel-kill-dialog.png")
    dialog.locator("button.jp-mod-reject").click()
    dialog.wait_for(state="detached")
    panel.locator(".uexec-refresh").click()
    wait_until(lambda: rows.count() == 2, 5, "both sessions still listed")
    assert long_row.locator(".uexec-session-state").inner_text() == "running"


def test_terminal_tabs_come_back_after_a_reload_attached_again(lab, page):
    cells = open_notebook(lab, page, "restore", [f"%%uexec -t 300\n{BASH}"])
    run_cell(page, cells, 1)
    wait_output(cells.nth(1), r"\[session \d+ running")
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    terminal = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    terminal.wait_for()
    wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 10, "the prompt")
    type_line(page, terminal, "echo before-$((40+2))")
    wait_for_lines(terminal, lambda lines: "before-42" in lines, 10, "the answer")
    wait_until(lambda: workspace_has(lab, "uexec-terminal:"), 15, "the layout to be saved with the tab")

    page.goto(f"{lab.url}/lab/tree/restore.ipynb")  # the URL a user reloads: no ?reset
    tab = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text=f"uexec 0: {BASH}")
    tab.wait_for(timeout=60_000)
    # A tree URL opens its notebook and brings it to the front, after the layout is restored
    # and possibly after a click on another tab (later on a loaded machine): let it, then click.
    notebook_tab = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text="restore.ipynb")
    wait_until(lambda: "lm-mod-current" in (notebook_tab.get_attribute("class") or ""), 60, "the reloaded URL's notebook in front")
    wait_until(lambda: kernel_connected(lab, "restore.ipynb"), KERNEL_START_S, "the notebook's kernel", 0.2)
    tab.click()
    wait_until(lambda: "lm-mod-current" in (tab.get_attribute("class") or ""), 10, "the terminal tab in front")
    wait_for_lines(terminal, lambda lines: "before-42" in lines, 30, "the scrollback replayed in the restored tab")
    type_line(page, terminal, "echo after-$((50+5))")
    wait_for_lines(terminal, lambda lines: "after-55" in lines, 15, "typed input in the restored tab")
    screenshot_artifact(page, "terminal-tab-restored.png")


def test_live_view_header_stops_saying_running_after_a_kernel_restart(lab, page):
    cells = open_notebook(lab, page, "restart", [f"%%uexec --live -t 300\n{BASH}"])
    terminal = start_live_shell(page, cells, 1)
    state = cells.nth(1).locator(".uexec-widget-state")
    assert state.inner_text() == "running"

    page.locator(".lm-MenuBar-item", has_text="Kernel").click()
    page.locator('.lm-Menu-item[data-command="kernelmenu:restart"]').click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator("button.jp-mod-accept").click()
    # It says the session ended (sessions end with their kernel), not just "disconnected".
    wait_until(lambda: state.inner_text() == "ended with the kernel", 30, "the header to stop saying running")
    wait_for_lines(terminal, lambda lines: "[ended with the kernel]" in lines, 10, "the terminal's notice")
    screenshot_artifact(cells.nth(1), "live-view-after-restart.png")


# A full-screen program as `top` is: the alternate screen, every row addressed
# and drawn to the terminal's full width. It draws once and ignores resizes,
# so what a view shows afterwards is what a terminal of that size keeps.
FULL_SCREEN = r'''
import os, sys, time
cols, rows = os.get_terminal_size()
screen = ["\x1b[?1049h\x1b[2J"]
for row in range(1, rows + 1):
    screen.append(f"\x1b[{row};1H" + (f"row-{row:02d} " + "=" * cols)[:cols])
sys.stdout.write("".join(screen) + "\x1b[1;1H")
sys.stdout.flush()
time.sleep(600)
'''


def test_a_tab_replays_a_full_screen_program_at_the_size_it_was_drawn_in(lab, page):
    page.set_viewport_size({"width": 2000, "height": 900})
    write_script = f"open('full_screen.py', 'w').write({FULL_SCREEN!r}); print('written')"
    cells = open_notebook(lab, page, "replay_width", [write_script, f"%%uexec --live -t 300\n{BASH}"])
    run_cell(page, cells, 1)
    wait_output(cells.nth(1), "written")
    live = start_live_shell(page, cells, 2)
    wide = wait_until(lambda: fitted_grid(live), 10, "the live view to fit its terminal")
    wait_resize_sent(page, wide)
    type_line(page, live, "python3 full_screen.py")
    drawn = wait_for_lines(live, lambda lines: lines[0].startswith("row-01 "), 15, "the full-screen program")
    assert drawn[1].startswith("row-02 "), drawn[:3]

    # Hide the live view (it would give the PTY its new size), then look
    # from a tab narrower than the screen was drawn.
    cells.nth(2).locator(".jp-OutputCollapser").click()
    wait_until(lambda: not live.is_visible(), 5, "the live view to be hidden")
    page.set_viewport_size({"width": 1100, "height": 900})
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()

    # The tab's size is the one it gives the PTY once fitted.
    def narrow_size():
        sizes = page.evaluate("() => window.__uexecResizes")
        return sizes[-1] if sizes and sizes[-1][1] < wide["cols"] - 40 else None

    rows, cols = wait_until(narrow_size, 15, "the tab to fit and give the PTY its size")
    lines = wait_for_lines(tab, lambda lines: len(lines) == rows, 10, f"{rows} rows in the tab")

    # Each row where the program put it, whole (the tab shows its first
    # columns): not wrapped into blank lines and stray pieces, as a replay
    # parsed at the tab's width would be.
    for row in range(1, wide["rows"] + 1):
        line = lines[row - 1]
        assert line == (f"row-{row:02d} " + "=" * wide["cols"])[: wide["cols"]], (row, cols, lines[: wide["rows"] + 1])
    assert not any(lines[wide["rows"]:]), "rows below the drawn screen stay empty"
    screenshot_artifact(page, "tab-replays-full-screen.png")


def test_an_integrated_shell_is_shown_by_the_command_the_user_gave(lab, page):
    # The kernel starts `bash -i` as `bash --rcfile .../bash-integration.sh -i`: no one asked to read that.
    cells = open_notebook(lab, page, "display_name", ["%%uexec --live -t 10000\nbash -i"])
    run_cell(page, cells, 1)
    cells.nth(1).locator(".uexec-terminal").wait_for()
    wait_output(cells.nth(1), r"\[session \d+ was running ·")  # its first prompt came: it is integrated
    assert cells.nth(1).locator(".uexec-widget-title").inner_text() == "bash -i"
    panel = open_sessions_panel(page)
    row = panel.locator('.uexec-session-row[data-session-id="0"]')
    row.wait_for()
    assert row.locator(".uexec-session-command").inner_text() == "bash -i"
    row.locator(".uexec-open").click()
    tab = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text="uexec 0:")
    tab.wait_for()
    assert tab.inner_text().strip() == "uexec 0: bash -i"
