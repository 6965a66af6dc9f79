"""The screen a saved notebook keeps of an open live view is the one on screen when it was saved (issue 26, 13).

GitHub, nbviewer, `nbconvert --to html` and a notebook reopened without
widget state show a live view's `text/html` (and `text/plain`). The kernel
writes them when the cell ends and when the session ends, not in between
(updating a display renders the view again: focus and keys would be lost),
so a notebook saved while a program printed on kept the screen of its
cell's end, captioned "running". The lab extension writes each open view's
screen into its output just before the notebook is serialized, without
touching the view: these tests save with focus in a terminal while keys are
being typed into a `cat`, then read the .ipynb from disk.

In JupyterLab and Notebook 7, in Chromium. Every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import extension_errors, fresh_page, jupyter_server
from .test_lab import open_notebook, run_cell, screenshot_artifact, wait_for_lines, wait_output, wait_until
from .test_live_view_anywhere import WIDGET_VIEW

pytestmark = pytest.mark.timeout(180)

TICKER = "%%uexec --live --shell -t 1000\ni=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.2; done"
CAT = "%%uexec --live -t 500\ncat"
OUTPUT_OF_CAT = "%uexec_output 1"
#: The ticker prints 5 lines a second and its cell ends after 1 s: by this
#: line the screen of the cell's end (what the kernel wrote) is long gone.
WELL_AFTER_THE_CELL = 40
BEFORE, AFTER = "typed-before-save.", "typed-after-save"
CAPTION = re.compile(r'<div class="uexec-screen-caption">\[live terminal: session (\d+) \((.*?)\), ([^\]]+)\]</div>$')


def ticks(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"tick-(\d+)", text)]


def read_notebook(path) -> dict:
    """The file as JSON once it is whole: the server writes a notebook in place (its backup aside), so
    a read right after its mtime changed may see it half written."""

    def whole():
        try:
            return json.loads(path.read_text())
        except ValueError:
            return None

    return wait_until(whole, 10, f"{path.name} to be whole JSON")


def live_outputs(path) -> dict[int, dict]:
    """The saved file's live-view outputs by session id (from their captions): each output's `data`."""
    notebook = read_notebook(path)
    found = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                html = "".join(data["text/html"]) if isinstance(data["text/html"], list) else data["text/html"]
                caption = CAPTION.search(html)
                assert caption, f"a live view's text/html without its caption: {html[-300:]!r}"
                found[int(caption.group(1))] = dict(data, **{"text/html": html})
    return found


def plain(data: dict) -> str:
    text = data["text/plain"]
    return "".join(text) if isinstance(text, list) else text


def check_saving_keeps_the_screen_current(server, page, cells, name: str, tag: str) -> None:
    """`cells[1]` is TICKER, `cells[2]` CAT, `cells[3]` OUTPUT_OF_CAT, none run yet; `name`.ipynb the notebook."""
    errors = extension_errors(page)
    saved = server.root / f"{name}.ipynb"

    run_cell(page, cells, 1)
    ticker = cells.nth(1).locator(".uexec-terminal")
    ticker.wait_for()
    wait_output(cells.nth(1), r"\[session 0 was running ·")
    run_cell(page, cells, 2)
    cat = cells.nth(2).locator(".uexec-terminal")
    cat.wait_for()
    wait_output(cells.nth(2), r"\[session 1 was running ·")
    lines = wait_for_lines(ticker, lambda lines: max(ticks("\n".join(lines)), default=0) >= WELL_AFTER_THE_CELL, 30,
                           f"the ticker to print tick-{WELL_AFTER_THE_CELL}")
    shown = max(ticks("\n".join(lines)))
    # The view's terminal element: the same one (not a new view) after the save.
    cat.evaluate("node => { node.querySelector('.xterm').__uexecKept = true; }")
    before = saved.stat().st_mtime_ns

    # Keys typed into `cat`, Ctrl+S among them (JupyterLab's save, not XOFF), more keys right after.
    cat.click()
    page.keyboard.type(BEFORE, delay=15)
    # What the terminal shows at the save is what the file must hold: the echo of these keys first.
    wait_for_lines(cat, lambda lines: BEFORE in lines, 15, "the echo of the keys typed before the save")
    page.keyboard.press("Control+s")
    page.keyboard.type(AFTER, delay=15)
    page.keyboard.press("Enter")
    wait_until(lambda: saved.stat().st_mtime_ns != before, 15, "Ctrl+S in the live view to save the notebook")

    # Every key reached the program: the terminal echoed the line and `cat` wrote it back.
    line = BEFORE + AFTER
    lines = wait_for_lines(cat, lambda lines: lines.count(line) == 2, 15, "the typed line, echoed and written back by cat")
    assert cat.evaluate("node => node.contains(document.activeElement)"), "the save took the focus from the terminal"
    assert cat.evaluate("node => node.querySelector('.xterm').__uexecKept === true && node.isConnected"), "the view was rendered again"

    # The file holds the screens as they were at the save: the ticker's recent lines, the keys typed before it.
    outputs = live_outputs(saved)
    assert set(outputs) == {0, 1}, outputs.keys()
    html = outputs[0]["text/html"]
    assert max(ticks(html)) >= shown, f"the saved screen stops at tick-{max(ticks(html))}; the view showed tick-{shown} before the save"
    assert CAPTION.search(html).group(3) == "running", html[-200:]
    assert f"tick-{shown}" in plain(outputs[0]), plain(outputs[0])[-300:]
    assert plain(outputs[0]).endswith(", running]"), plain(outputs[0])[-300:]
    cat_html = outputs[1]["text/html"]
    assert BEFORE in cat_html and CAPTION.search(cat_html).groups()[1:] == ("cat", "running"), cat_html[-300:]

    # The journal has each key once, in order: the echo and cat's copy.
    run_cell(page, cells, 3)
    journal = cells.nth(3).locator(".jp-OutputArea")
    wait_until(lambda: journal.inner_text().count(line) == 2, 15, "%uexec_output to show the typed line twice")

    # An ended session's saved caption says how it ended.
    run_cell(page, cells, 4)
    state = cells.nth(1).locator(".uexec-widget-state")
    wait_until(lambda: state.inner_text() != "running", 15, "the ticker's view to say it ended")
    before = saved.stat().st_mtime_ns
    page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").first.click()
    page.keyboard.press("Control+s")
    wait_until(lambda: saved.stat().st_mtime_ns != before, 15, "the second save")
    ended = live_outputs(saved)[0]
    assert CAPTION.search(ended["text/html"]).group(3) == state.inner_text(), (ended["text/html"][-200:], state.inner_text())
    assert plain(ended).endswith(f", {state.inner_text()}]"), plain(ended)[-200:]
    screenshot_artifact(cells.nth(2), f"saved-screen-{tag}.png")
    page.wait_for_timeout(200)  # let late events reach the listeners
    assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


NOTEBOOK = [TICKER, CAT, OUTPUT_OF_CAT, "%uexec_kill 0"]


def test_a_save_in_jupyterlab_keeps_the_screen_on_show_focus_and_keys(lab, page):
    cells = open_notebook(lab, page, "saved_screen", NOTEBOOK)
    check_saving_keeps_the_screen_current(lab, page, cells, "saved_screen", "lab")


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory, chromium_path):
    with jupyter_server(tmp_path_factory.mktemp("notebook7-saved"), "notebook") as server:
        yield server


def test_a_save_in_notebook_7_keeps_the_screen_on_show_focus_and_keys(notebook7, browser):
    from .test_notebook7 import open_notebook7

    with fresh_page(browser, notebook7) as page:
        cells = open_notebook7(notebook7, page, "saved_screen_nb7", NOTEBOOK)
        check_saving_keeps_the_screen_current(notebook7, page, cells, "saved_screen_nb7", "notebook7")





def save_and_read(server, page, name: str) -> dict[int, dict]:
    """Ctrl+S from the notebook (a prompt has focus); the saved live-view outputs once the file changed."""
    saved = server.root / f"{name}.ipynb"
    before = saved.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell .jp-InputPrompt").first.click()
    page.keyboard.press("Control+s")
    wait_until(lambda: saved.stat().st_mtime_ns != before, 15, "the notebook to be saved")
    return live_outputs(saved)


def save_all(page) -> None:
    page.locator(".lm-MenuBar-item", has_text="File").click()
    page.locator('.lm-Menu-item[data-command="docmanager:save-all"]').click()


def test_save_all_writes_the_screen_of_a_view_in_a_background_tab(lab, page):
    # File > Save All saves a notebook in a background tab too; its view's terminal (opened
    # there: a hidden tab keeps its size) goes on taking output, and the file keeps what it holds.
    errors = extension_errors(page)
    cells = open_notebook(lab, page, "saved_behind", [TICKER])
    run_cell(page, cells, 1)
    cells.nth(1).locator(".uexec-terminal").wait_for()
    wait_output(cells.nth(1), r"\[session 0 was running ·")
    first = max(ticks(save_and_read(lab, page, "saved_behind")[0]["text/html"]))
    # Another notebook opened by its URL: the page loads again, the live view's notebook restored behind it.
    page.goto(lab.write_notebook("in_front", ["1"]))
    behind = page.locator("#jp-main-dock-panel .jp-NotebookPanel.lm-mod-hidden .uexec-widget .uexec-terminal")
    wait_until(lambda: behind.count() == 1, 60, "the live view's notebook restored behind the other one")
    saved = lab.root / "saved_behind.ipynb"
    latest: dict = {}

    def newer() -> bool:
        before = saved.stat().st_mtime_ns
        save_all(page)
        wait_until(lambda: saved.stat().st_mtime_ns != before, 15, "Save All to save the notebook behind")
        latest.update(live_outputs(saved)[0])
        return max(ticks(latest["text/html"])) >= first + 20

    wait_until(newer, 30, f"a saved screen past tick-{first + 20} (tick-{first} was saved first)", interval=0.5)
    assert CAPTION.search(latest["text/html"]).group(3) == "running"
    assert plain(latest).endswith(", running]"), plain(latest)[-200:]
    page.wait_for_timeout(200)  # let late events reach the listeners
    assert not errors, "JS errors from the extension:\n" + "\n".join(errors)
