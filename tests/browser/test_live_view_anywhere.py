"""The live view with no extension of ours: JupyterLab with it disabled, and Voilà.

`TerminalWidget` is an anywidget module shipped inside the Python package and
loaded by anywidget's own front end, so it must work where our lab extension
is not: a JupyterLab whose config disables `unified-exec-kernel` (in a config
dir of its own, so the other tests keep it), and Voilà serving a notebook.
Notebook 7 runs the same checks in test_notebook7.py.

In each: type and see the shell's echo, narrow the page and see `stty size`
follow the view, reload the page and see the scrollback again. Voilà starts
a kernel per page, so there a reload shows a new session that works as the
first did. Each test saves screenshots in test-artifacts/.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest

from .conftest import ARTIFACTS, EXTENSION_NAME, Lab, disable_labextension, extension_errors, fresh_page, isolated_env, jupyter_server
from .test_lab import (
    BASH,
    fitted_grid,
    open_notebook,
    resizes_sent,
    start_live_shell,
    stty_sizes,
    type_line,
    wait_for_lines,
    wait_until,
)

pytestmark = pytest.mark.timeout(150)

LIVE_CELL = f"%%uexec --live -t 500\n{BASH}"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


# -- what every front end must do ----------------------------------------------


def check_size_follows(page, terminal, tag: str, unlike: int | None = None) -> dict:
    """The view fits its room (to a width other than `unlike`), tells the PTY, and `stty size` agrees."""
    grid = wait_until(lambda: fitted_grid(terminal, unlike=unlike), 15, f"the view to fit its terminal ({tag})")
    wait_until(lambda: resizes_sent(page, grid), 10, f"the view to send the PTY {grid['rows']}x{grid['cols']}")
    type_line(page, terminal, f"echo {tag}=$(stty size)")
    lines = wait_for_lines(terminal, lambda lines: stty_sizes(lines, tag), 15, f"stty's answer ({tag})")
    assert stty_sizes(lines, tag)[-1] == (grid["rows"], grid["cols"]), grid
    return grid


def check_typing_and_resizing(page, terminal) -> None:
    """Typed keys reach the shell; a narrower page gives a narrower PTY."""
    type_line(page, terminal, "echo marker-$((6*7))")
    lines = wait_for_lines(terminal, lambda lines: "marker-42" in lines, 15, "the shell's answer")
    assert lines.index("marker-42") == lines.index("$ echo marker-$((6*7))") + 1, lines
    wide = check_size_follows(page, terminal, "wide")
    page.set_viewport_size({"width": 900, "height": 800})
    narrow = check_size_follows(page, terminal, "narrow", unlike=wide["cols"])
    assert narrow["cols"] < wide["cols"] - 20, (wide, narrow)


def save_notebook(page, server: Lab, name: str) -> None:
    """Ctrl+S from the notebook (not the terminal, where it would be XOFF); wait for the file to hold the view."""
    page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").first.click()
    page.keyboard.press("Control+s")
    path = server.root / f"{name}.ipynb"
    wait_until(lambda: WIDGET_VIEW in path.read_text(), 15, "the notebook to be saved with its live view")


def check_replay_after_reload(page, live_cell) -> None:
    """The reloaded page shows the live view again, with what the shell printed before, and it still types."""
    page.reload()
    terminal = live_cell.locator(".uexec-terminal")
    terminal.wait_for(timeout=60_000)
    wait_for_lines(terminal, lambda lines: "marker-42" in lines, 30, "the scrollback replayed after the reload")
    type_line(page, terminal, "echo again-$((2+3))")
    wait_for_lines(terminal, lambda lines: "again-5" in lines, 15, "typed input after the reload")


def screenshot(target, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    target.screenshot(path=str(ARTIFACTS / name), animations="disabled")


# -- JupyterLab without our extension -------------------------------------------


@pytest.fixture(scope="module")
def lab_without_extension(tmp_path_factory, chromium_path) -> Lab:
    base = tmp_path_factory.mktemp("lab-without-extension")
    env = isolated_env(base)
    disable_labextension(env, base, EXTENSION_NAME)
    with jupyter_server(base, "lab", env=env) as server:
        yield server


@pytest.fixture
def page(browser, lab_without_extension):
    with fresh_page(browser, lab_without_extension) as page:
        yield page


def test_live_view_works_in_jupyterlab_with_our_extension_disabled(lab_without_extension, page):
    errors = extension_errors(page)
    cells = open_notebook(lab_without_extension, page, "no_extension", [LIVE_CELL])
    config = json.loads(page.locator("#jupyter-config-data").text_content())
    assert EXTENSION_NAME in config.get("disabledExtensions", []), config.get("disabledExtensions")
    assert page.locator('[data-id="uexec-sessions-panel"]').count() == 0, "our extension still loaded"

    terminal = start_live_shell(page, cells, 1)
    header = cells.nth(1).locator(".uexec-widget-header")
    assert header.locator(".uexec-widget-title").inner_text() == BASH
    assert header.locator(".uexec-widget-state").inner_text() == "running"
    check_typing_and_resizing(page, terminal)
    screenshot(cells.nth(1), "live-view-lab-without-extension.png")

    save_notebook(page, lab_without_extension, "no_extension")
    check_replay_after_reload(page, cells.nth(1))
    screenshot(cells.nth(1), "live-view-lab-without-extension-reloaded.png")
    page.wait_for_timeout(200)  # let late events reach the listeners
    assert not errors, "JS errors from our code:\n" + "\n".join(errors)


# -- Voilà ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def voila(tmp_path_factory, chromium_path) -> Lab:
    base = tmp_path_factory.mktemp("voila")
    with jupyter_server(base, "voila") as server:
        yield server


def shell_pid(page, terminal, tag: str) -> int:
    type_line(page, terminal, f"echo {tag}-pid=$$")
    lines = wait_for_lines(terminal, lambda lines: any(line.startswith(f"{tag}-pid=") for line in lines), 15, "the shell's pid")
    return int(next(line for line in lines if line.startswith(f"{tag}-pid=")).split("=")[1])


def test_live_view_works_in_voila(voila, browser):
    # A dashboard shows outputs only: the setup cell prints nothing there.
    voila.write_notebook("dashboard", ["import os; os.environ['PS1'] = '$ '", LIVE_CELL])
    url = f"{voila.url}/voila/render/{urllib.parse.quote('dashboard.ipynb')}"
    with fresh_page(browser, voila) as page:
        errors = extension_errors(page)
        page.goto(url)
        terminal = page.locator(".uexec-widget .uexec-terminal")
        terminal.wait_for(timeout=60_000)
        wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 30, "the prompt")
        assert page.locator(".uexec-widget-state").inner_text() == "running"
        check_typing_and_resizing(page, terminal)
        first_pid = shell_pid(page, terminal, "first")
        screenshot(page, "live-view-voila.png")

        # Voilà runs each page on a kernel of its own: a reload is a new
        # kernel and a new session, with nothing of the old one's output.
        page.reload()
        terminal.wait_for(timeout=60_000)
        wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 30, "the new page's prompt")
        assert "marker-42" not in "\n".join(wait_for_lines(terminal, bool, 5, "rows"))
        second_pid = shell_pid(page, terminal, "second")
        assert second_pid != first_pid
        screenshot(page, "live-view-voila-reloaded.png")
        page.wait_for_timeout(200)  # let late events reach the listeners
        assert not errors, "JS errors from our code:\n" + "\n".join(errors)
