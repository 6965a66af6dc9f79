"""A live view whose widget model is gone comes back after a reload (issue 38, item 2).

ipywidgets' models live in the kernel: after Restart Kernel, a reloaded page
had no model for a saved live view and said `Error displaying widget: model
not found`, though a kept session ran on in the new kernel. The output says
which session it shows (`application/vnd.uexec.session+json`); our lab
extension draws it: the session attached again, with its history, taking
keys; or, where the session is gone, its saved last screen and a line saying
it ended. In JupyterLab and Notebook 7, in Chromium.

Every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import urllib.parse

import pytest

from .conftest import extension_errors, fresh_page
from .test_kept_sessions import KEPT_CELL, kernel_id
from .test_lab import BASH, KERNEL_START_S, kernel_connected, open_notebook, screenshot_artifact, start_live_shell, type_line, wait_for_lines, wait_until
from .test_notebook7 import open_notebook7
from .test_saved_screen import notebook7  # noqa: F401 - the fixture: one Notebook 7 server for this module

pytestmark = pytest.mark.timeout(240)

LIVE_CELL = f"%%uexec --live -t 500\n{BASH}"
NOT_FOUND = "model not found"


def kernel_state(server) -> str | None:
    sessions = server.api("GET", "/api/sessions")
    return sessions[0]["kernel"]["execution_state"] if sessions else None


def save(server, page, name: str) -> None:
    """Ctrl+S from a cell's prompt; returns once the file on disk changed (JupyterLab signs it: trusted)."""
    saved = server.root / f"{name}.ipynb"
    before = saved.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell .jp-InputPrompt").first.click()
    page.keyboard.press("Control+s")
    wait_until(lambda: saved.stat().st_mtime_ns != before, 15, "the notebook to be saved")


def reload(server, page, name: str, app: str):
    """The notebook's URL again (a reload); its code cells once it sees its kernel."""
    path = f"/lab/tree/{name}.ipynb" if app == "lab" else f"/notebooks/{urllib.parse.quote(name)}.ipynb"
    page.goto(server.url + path)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    cells = panel.locator(".jp-Notebook .jp-CodeCell")
    cells.first.locator(".cm-content").wait_for(timeout=30_000)
    wait_until(lambda: kernel_connected(server, f"{name}.ipynb"), KERNEL_START_S, "the kernel after the reload", 0.2)
    return cells


def opened(server, page, name: str, app: str, cells: list[str]):
    return open_notebook(server, page, name, cells) if app == "lab" else open_notebook7(server, page, name, cells)


def typed_and_saved(server, page, name: str, app: str, cell: str, line: str, answer: str) -> None:
    """A notebook whose cell 1 is `cell` (a live shell), `line` typed into it until `answer` shows, then saved."""
    cells = opened(server, page, name, app, [cell])
    terminal = start_live_shell(page, cells, 1)
    wait_until(lambda: kernel_state(server) == "idle", 15, "the cell to finish")
    type_line(page, terminal, line)
    wait_for_lines(terminal, lambda lines: answer in lines, 15, f"{answer} in the view")
    save(server, page, name)


def check_a_kept_view_comes_back(server, page, app: str) -> None:
    name = f"comes_back_{app}"
    errors = extension_errors(page)
    typed_and_saved(server, page, name, app, KEPT_CELL, "echo before-$((1+1))", "before-2")
    kid = kernel_id(server)

    server.api("POST", f"/api/kernels/{kid}/restart", timeout=60)
    wait_until(lambda: kernel_state(server) == "idle", KERNEL_START_S, "the restarted kernel", 0.2)
    cells = reload(server, page, name, app)
    assert kernel_id(server) == kid

    terminal = cells.nth(1).locator(".uexec-terminal")
    terminal.wait_for(timeout=60_000)
    # The history, replayed by the kernel that took the session back.
    wait_for_lines(terminal, lambda lines: "before-2" in lines, 30, "the session's history in the view")
    type_line(page, terminal, "echo back-$((6*7))")
    lines = wait_for_lines(terminal, lambda lines: "back-42" in lines, 15, "the echo typed after the reload")
    assert lines.count("before-2") == 1, lines
    assert NOT_FOUND not in cells.nth(1).inner_text()
    state = cells.nth(1).locator(".uexec-widget-state")
    wait_until(lambda: state.inner_text() == "running", 10, "the header to say running")
    screenshot_artifact(cells.nth(1), f"view-back-after-reload-{app}.png")
    page.wait_for_timeout(200)  # let late events reach the listeners
    assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


def check_a_gone_view_shows_its_last_screen(server, page, app: str) -> None:
    name = f"gone_{app}"
    typed_and_saved(server, page, name, app, LIVE_CELL, "echo gone-$((2+3))", "gone-5")

    server.api("DELETE", f"/api/kernels/{kernel_id(server)}", timeout=30)  # its sessions end with it
    cells = reload(server, page, name, app)  # on a new kernel

    ended = cells.nth(1).locator(".uexec-session-ended")
    ended.wait_for(timeout=60_000)
    text = ended.inner_text()
    assert "gone-5" in text, text
    caption = ended.locator(".uexec-screen-caption").inner_text()
    assert caption == f"[live terminal: session 0 ({BASH}), ended with the kernel; this is its last screen]", caption
    assert NOT_FOUND not in cells.nth(1).inner_text()
    assert cells.nth(1).locator(".uexec-terminal").count() == 0
    screenshot_artifact(cells.nth(1), f"view-gone-after-reload-{app}.png")


def test_a_kept_view_comes_back_after_restart_and_reload_in_jupyterlab(lab, page):
    check_a_kept_view_comes_back(lab, page, "lab")


def test_a_gone_view_shows_its_last_screen_after_a_reload_in_jupyterlab(lab, page):
    check_a_gone_view_shows_its_last_screen(lab, page, "lab")


@pytest.fixture
def nb7_page(browser, notebook7):
    with fresh_page(browser, notebook7) as page:
        yield page


def test_a_kept_view_comes_back_after_restart_and_reload_in_notebook_7(notebook7, nb7_page):
    check_a_kept_view_comes_back(notebook7, nb7_page, "notebook7")


def test_a_gone_view_shows_its_last_screen_after_a_reload_in_notebook_7(notebook7, nb7_page):
    check_a_gone_view_shows_its_last_screen(notebook7, nb7_page, "notebook7")
