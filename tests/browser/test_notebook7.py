"""The front end in a real Notebook 7 (`jupyter notebook`) and Chromium.

The extension is a JupyterLab 4 prebuilt extension that Notebook 7 loads too:
the live view must render and take typed input in a notebook page, and the
"uexec sessions" panel must show in Notebook 7's right sidebar (View > Right
Sidebar > Show uexec sessions), all without a JS error from the extension.

A Notebook 7 server of its own (token-less, on 127.0.0.1, isolated settings,
workspaces and runtime dirs) serves this module; it reuses the session's
Chromium, and overrides `page` so the failure screenshot of conftest applies.
"""

from __future__ import annotations

import urllib.parse

import pytest

from .conftest import Lab, extension_errors, fresh_page, jupyter_server
from .test_lab import BASH, KERNEL_START_S, SETUP, kernel_connected, run_setup_cell, start_live_shell, type_line, wait_for_lines, wait_until
from .test_live_view_anywhere import (
    LIVE_CELL,
    check_replay_after_reload,
    check_typing_and_resizing,
    save_notebook,
    screenshot,
)

pytestmark = pytest.mark.timeout(90)

@pytest.fixture(scope="module")
def notebook7(tmp_path_factory, chromium_path) -> Lab:
    """A running `jupyter notebook` (Notebook 7); the same REST helpers as the lab fixture."""
    with jupyter_server(tmp_path_factory.mktemp("notebook7"), "notebook") as server:
        yield server


@pytest.fixture
def page(browser, notebook7):
    """A fresh context on the Notebook 7 server (named `page` for conftest's failure screenshot)."""
    with fresh_page(browser, notebook7) as page:
        yield page


def open_notebook7(server: Lab, page, name: str, cells: list[str]):
    """Open /notebooks/<name>.ipynb (SETUP first) and run SETUP once its kernel is up; its code cells."""
    server.write_notebook(name, [SETUP, *cells])
    page.goto(f"{server.url}/notebooks/{urllib.parse.quote(name)}.ipynb")
    code_cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell")
    code_cells.first.locator(".cm-content").wait_for(timeout=30_000)
    wait_until(lambda: kernel_connected(server, f"{name}.ipynb"), KERNEL_START_S, "the kernel to start", 0.2)
    indicator = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator")
    wait_until(lambda: indicator.get_attribute("data-status") == "idle", 30, "the notebook to see its kernel")
    return run_setup_cell(page, code_cells)


def show_right_sidebar_panel(page, label: str) -> None:
    """View > Right Sidebar > `label`, as a user does."""
    page.locator(".lm-MenuBar-item", has_text="View").click()
    page.locator(".lm-Menu .lm-Menu-item", has_text="Right Sidebar").hover()
    page.locator('.lm-Menu .lm-Menu-item[data-command="application:toggle-panel"]', has_text=label).click()


def test_live_view_and_sessions_panel_work_in_notebook_7(notebook7, page):
    errors = extension_errors(page)
    cells = open_notebook7(notebook7, page, "nb7_live", [f"%%uexec --live -t 1000\n{BASH}"])
    live = cells.nth(1)

    # 1. The widget half of the extension: the live view renders and takes input.
    live.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    widget = live.locator(".uexec-widget")
    terminal = widget.locator('.uexec-terminal[data-session-id="0"]')
    terminal.wait_for()
    wait_until(lambda: "[session 0 was running ·" in live.locator(".jp-OutputArea").inner_text(), 15, "the status line")
    assert widget.locator(".uexec-widget-title").inner_text() == BASH
    wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 10, "the prompt")

    type_line(page, terminal, "echo $((6*7))")

    lines = wait_for_lines(terminal, lambda lines: "42" in lines, 10, "42 on its own line")
    assert "$ echo $((6*7))" in lines, "the typed command was echoed by the shell"
    assert lines.index("42") == lines.index("$ echo $((6*7))") + 1, lines

    # 2. The panel half: Notebook 7 puts it in the notebook page's right sidebar.
    show_right_sidebar_panel(page, "uexec sessions")
    panel = page.locator("#jp-right-stack #uexec-sessions-panel")
    panel.wait_for()
    assert panel.locator(".uexec-sessions-header h2").inner_text() == "uexec sessions"
    assert panel.locator(".uexec-sessions-notebook").inner_text() == "nb7_live.ipynb"
    rows = panel.locator(".uexec-session-row[data-session-id]")
    wait_until(lambda: rows.count() == 1, 10, "a row for session 0")
    row0 = panel.locator('.uexec-session-row[data-session-id="0"]')
    assert row0.locator(".uexec-session-command").inner_text() == BASH
    assert row0.locator(".uexec-session-state").inner_text() == "running"

    # 3. Open: Notebook 7's main area holds only the notebook, so the terminal
    #    opens in its bottom panel, attached to the same session.
    row0.locator(".uexec-open").click()
    opened = page.locator('.jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    wait_until(lambda: opened.count() == 1 and opened.is_visible(), 10, "the opened terminal to show")
    wait_for_lines(opened, lambda lines: "42" in lines, 10, "the replay of the session's output")
    type_line(page, opened, "echo $((7*8))")
    wait_for_lines(opened, lambda lines: "56" in lines, 10, "56 typed into the opened terminal")

    page.wait_for_timeout(200)  # let late events reach the listeners (the sync API delivers them while it waits)
    assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


def test_live_view_types_resizes_and_replays_after_a_reload_in_notebook_7(notebook7, page):
    errors = extension_errors(page)
    cells = open_notebook7(notebook7, page, "nb7_reload", [LIVE_CELL])
    terminal = start_live_shell(page, cells, 1)
    check_typing_and_resizing(page, terminal)
    screenshot(cells.nth(1), "live-view-notebook7.png")
    save_notebook(page, notebook7, "nb7_reload")
    check_replay_after_reload(page, cells.nth(1))
    screenshot(cells.nth(1), "live-view-notebook7-reloaded.png")
    page.wait_for_timeout(200)  # let late events reach the listeners
    assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


def test_ctrl_s_in_a_live_view_saves_and_a_paused_terminal_says_so_in_notebook_7(notebook7, page):
    from .test_paused import LIVE, XOFF, check_ctrl_s_saves_and_xoff_is_said

    cells = open_notebook7(notebook7, page, "nb7_paused", [LIVE, XOFF])
    start_live_shell(page, cells, 1)
    check_ctrl_s_saves_and_xoff_is_said(notebook7, page, cells, "nb7_paused.ipynb", 1, 2, "notebook7")
