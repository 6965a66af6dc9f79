"""Ctrl+S in a view saves the notebook; a terminal stopped by XOFF says so (issue 26, 3), in JupyterLab.

(Notebook 7: test_notebook7.py runs the same check.)
"""

from __future__ import annotations

import pytest

from .conftest import fresh_page
from .test_live_view_anywhere import voila  # noqa: F401 - the Voila server fixture
from .test_lab import BASH, open_notebook, open_sessions_panel, run_cell, screenshot_artifact, start_live_shell, type_line, wait_for_lines, wait_output, wait_until

pytestmark = pytest.mark.timeout(120)

LIVE = f"%%uexec --live -t 1000\n{BASH}"
XOFF = "%%uexec -s 0 --keys C-s\n"


def check_ctrl_s_saves(server, page, terminal, path: str) -> None:
    """Ctrl+S in `terminal` (a bash at its prompt) saves `path` under the server's root, and no XOFF reached the shell."""
    saved = server.root / path
    before = saved.stat().st_mtime_ns
    terminal.click()
    page.keyboard.press("Control+s")
    wait_until(lambda: saved.stat().st_mtime_ns != before, 15, "Ctrl+S in the terminal to save the notebook")
    type_line(page, terminal, "echo after-save-$((6*7))")
    wait_for_lines(terminal, lambda lines: "after-save-42" in lines, 10, "the shell's answer after Ctrl+S (no XOFF)")


def check_ctrl_s_saves_and_xoff_is_said(server, page, cells, path: str, live: int, xoff: int, name: str) -> None:
    """`cells[live]` shows a bash's live view; `cells[xoff]` is XOFF; the file is `path` under the server's root."""
    widget = cells.nth(live).locator(".uexec-widget")
    terminal = widget.locator(".uexec-terminal")
    check_ctrl_s_saves(server, page, terminal, path)
    note = terminal.locator(".uexec-terminal-paused")
    assert not note.is_visible()

    # XOFF sent on purpose: the cell's status line and the view say so, and how to resume.
    run_cell(page, cells, xoff)
    status = wait_output(cells.nth(xoff), r"\[session 0 running · output paused \(Ctrl\+S, XOFF\) · Ctrl\+Q resumes it: %uexec -s 0 --keys C-q · [\d.]+ s", 15)
    assert status
    wait_until(note.is_visible, 10, "the view to say output is paused")
    assert note.inner_text() == "output paused (Ctrl+S) · Ctrl+Q resumes"
    assert widget.locator(".uexec-widget-state").inner_text() == "running · output paused (Ctrl+Q resumes)"
    type_line(page, terminal, "echo held-$((7*7))")
    screenshot_artifact(cells.nth(xoff), f"{name}-paused.png")
    terminal.click()
    page.keyboard.press("Control+q")
    wait_for_lines(terminal, lambda lines: "held-49" in lines, 10, "the held output once Ctrl+Q resumed it")
    wait_until(lambda: not note.is_visible(), 10, "the paused note to go")
    assert widget.locator(".uexec-widget-state").inner_text() == "running"


def test_ctrl_s_in_a_live_view_saves_and_a_paused_terminal_says_so_in_jupyterlab(lab, page):
    cells = open_notebook(lab, page, "paused", [LIVE, XOFF])
    start_live_shell(page, cells, 1)
    check_ctrl_s_saves_and_xoff_is_said(lab, page, cells, "paused.ipynb", 1, 2, "lab")

    # A Sessions-panel tab sends no XOFF either: the key is JupyterLab's.
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()
    wait_for_lines(tab, lambda lines: "held-49" in lines, 20, "the replay in the tab")
    tab.click()
    page.keyboard.press("Control+s")
    type_line(page, tab, "echo tab-$((5*5))")
    wait_for_lines(tab, lambda lines: "tab-25" in lines, 10, "the shell's answer after Ctrl+S in the tab")
    assert not tab.locator(".uexec-terminal-paused").is_visible()


def test_in_voila_ctrl_s_is_the_terminals_xoff_and_the_view_says_so(voila, browser):
    # No save command in a dashboard: the key goes to the terminal, as in any terminal, and is never silent.
    import urllib.parse

    voila.write_notebook("paused_dashboard", ["import os; os.environ['PS1'] = '$ '", LIVE])
    with fresh_page(browser, voila) as page:
        page.goto(f"{voila.url}/voila/render/{urllib.parse.quote('paused_dashboard.ipynb')}")
        terminal = page.locator(".uexec-widget .uexec-terminal")
        terminal.wait_for(timeout=60_000)
        wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 30, "the prompt")
        note = terminal.locator(".uexec-terminal-paused")
        terminal.click()
        page.keyboard.press("Control+s")
        wait_until(note.is_visible, 10, "the view to say output is paused")
        assert page.locator(".uexec-widget-state").inner_text() == "running · output paused (Ctrl+Q resumes)"
        type_line(page, terminal, "echo held-$((8*8))")
        screenshot_artifact(page, "voila-paused.png")
        page.keyboard.press("Control+q")
        wait_for_lines(terminal, lambda lines: "held-64" in lines, 10, "the held output once Ctrl+Q resumed it")
        wait_until(lambda: not note.is_visible(), 10, "the paused note to go")
