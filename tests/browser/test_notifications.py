"""A session that ends out of sight is told in JupyterLab's notification center (issue 34, 5).

A real JupyterLab and kernel in Chromium. The sessions wait for a file the
test creates, so each ends exactly when its view is scrolled away or its
notebook closed. The toast says `session 'train' exited with code 1 after
N s`, and its action opens the session in a Sessions tab.
"""

from __future__ import annotations

import json
import re

import psutil
import pytest

from .conftest import ARTIFACTS, EXTENSION_NAME, extension_errors, fresh_page, isolated_env, jupyter_server
from .test_lab import SETUP, kernel_connected, run_cell, run_setup_cell, wait_for_lines, wait_output, wait_until

pytestmark = pytest.mark.timeout(600)

LOAD_S = 120
SETTINGS = {"enabled": True, "minimumSeconds": 1}
# Ends when the test creates its file: `stop-NAME` in the notebook's folder (the kernel's working directory).
WAITING = "sh -c 'while [ ! -e stop-{name} ]; do sleep 0.1; done; exit {code}'"
# A tall cell below the view, to scroll it out of sight.
FILLER = "\n".join(f"# line {n} of a long cell" for n in range(150))
IN_FRAME_JS = """node => {
    const frame = node.closest('.jp-Notebook').getBoundingClientRect(), box = node.getBoundingClientRect();
    return box.bottom > frame.top && box.top < frame.bottom;
}"""


def open_loaded(server, page, url: str, name: str):
    """Go to a notebook's `url` and wait, with bounds for a loaded machine, for its cells and its kernel; its code cells."""
    page.goto(url + "?reset", timeout=LOAD_S * 1000)
    panel = page.locator("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)")
    code_cells = panel.locator(".jp-Notebook .jp-CodeCell")
    code_cells.first.locator(".cm-content").wait_for(timeout=LOAD_S * 1000)
    wait_until(lambda: kernel_connected(server, f"{name}.ipynb"), LOAD_S, "the kernel to start", 0.2)
    indicator = panel.locator(".jp-Notebook-ExecutionIndicator")
    wait_until(lambda: indicator.get_attribute("data-status") == "idle", LOAD_S, "the notebook to see its kernel", 0.2)
    return code_cells


def open_notebook(server, page, name: str, cells: list[str]):
    """test_lab's, with bounds for a loaded machine: the notebook, its kernel up, its first cell run; its code cells."""
    return run_setup_cell(page, open_loaded(server, page, server.write_notebook(name, [SETUP, *cells]), name))


@pytest.fixture(scope="module")
def notifying_lab(tmp_path_factory, chromium_path):
    base = tmp_path_factory.mktemp("notify")
    env = isolated_env(base)
    (base / "settings" / EXTENSION_NAME / "notifications.jupyterlab-settings").write_text(json.dumps(SETTINGS))
    with jupyter_server(base, "lab", env) as server:
        yield server


def close_notebook(page, name: str) -> None:
    """Close the notebook's tab, its changes discarded; its kernel runs on."""
    page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text=f"{name}.ipynb").locator(".lm-TabBar-tabCloseIcon").click()
    discard = page.locator(".jp-Dialog").get_by_role("button", name=re.compile("Discard|Don.t Save"))
    wait_until(lambda: discard.count() or page.locator("#jp-main-dock-panel .jp-NotebookPanel").count() == 0, 30, "the notebook to close or ask")
    if discard.count():
        discard.click()
    page.locator("#jp-main-dock-panel .jp-NotebookPanel").wait_for(state="detached", timeout=30_000)


def start_then_scroll_away(page, cells):
    """Run cell 1 (a live view: session 0) and cell 2 (session 1), then scroll to the end of cell 3, a tall one,
    out of the view's sight; the view."""
    run_cell(page, cells, 1)
    view = cells.nth(1).locator(".uexec-terminal")
    view.wait_for(timeout=LOAD_S * 1000)
    wait_output(cells.nth(1), r"\[session 0 was running ·", LOAD_S)
    run_cell(page, cells, 2)
    wait_output(cells.nth(2), r"\[session 1 running ·", LOAD_S)
    cells.nth(3).locator(".cm-content").click()
    page.keyboard.press("Control+End")
    wait_until(lambda: not view.evaluate(IN_FRAME_JS), 15, "the live view to be scrolled away")
    return view


def toast(page, text: str):
    return page.locator(".Toastify__toast", has_text=text)


def ended_text(name: str, code: int) -> re.Pattern:
    return re.compile(rf"^session '{name}' exited with code {code} after \d+ s$")


def test_an_end_out_of_sight_is_told_and_its_action_opens_the_session(notifying_lab, browser):
    server = notifying_lab
    with fresh_page(browser, server) as page:
        errors = extension_errors(page)
        heard: list[str] = []
        page.on("console", lambda message: heard.append(f"{message.type}: {message.text}"))
        page.on("websocket", lambda ws: heard.append(f"ws: {ws.url}"))
        cells = open_notebook(server, page, "notified", [
            f"%%uexec --live --name train -t 500\n{WAITING.format(name='train', code=1)}",
            f"%%uexec --name later -t 300\n{WAITING.format(name='later', code=0)}",
            FILLER,
        ])
        start_then_scroll_away(page, cells)
        # The live view out of the notebook's sight; then the session ends.
        (server.root / "stop-train").touch()
        told = toast(page, "session 'train' exited with code 1 after")
        wait_until(lambda: told.count() or None, 60, f"the toast (the page said: {[line for line in heard if 'uexec' in line]})")
        assert ended_text("train", 1).match(told.inner_text().strip().splitlines()[0]), told.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "notification-train.png"))

        # Its action opens the session in a Sessions tab, which shows how it ended.
        told.get_by_role("button", name="Open").click()
        tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
        tab.wait_for(timeout=30_000)
        wait_for_lines(tab, lambda lines: "[exited with code 1]" in lines, 30, "the tab to show the session's end")

        # The notebook closed (its kernel runs on): the other session's end is told too.
        close_notebook(page, "notified")
        (server.root / "stop-later").touch()
        later = toast(page, "session 'later' exited with code 0 after")
        later.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "notification-later.png"))
        page.wait_for_timeout(200)  # late events reach the listeners
        # JupyterLab times every plugin's start; on a loaded machine ours take seconds too: no error of ours.
        errors = [error for error in errors if not re.search(r"took [\d.]+ms to activate|is taking too long to activate", error)]
        assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


def test_with_notifications_off_the_page_opens_no_channel_and_tells_nothing(notifying_lab, browser):
    """The setting turns them off: no socket for them at all (the page would open one per kernel), and a
    session that ends with its notebook closed says nothing."""
    server = notifying_lab
    setting = "/lab/api/settings/unified-exec-kernel:notifications"
    server.api("PUT", setting, {"raw": json.dumps({**SETTINGS, "enabled": False})})
    try:
        with fresh_page(browser, server) as page:
            errors = extension_errors(page)
            sockets: list[str] = []
            page.on("websocket", lambda ws: sockets.append(ws.url))
            cells = open_notebook(server, page, "unnotified", [f"%%uexec --name quiet -t 300\n{WAITING.format(name='quiet', code=1)}"])
            run_cell(page, cells, 1)
            wait_output(cells.nth(1), r"\[session \d+ running ·", LOAD_S)
            close_notebook(page, "unnotified")
            matching = [p for p in psutil.process_iter(["cmdline", "ppid"]) if "stop-quiet" in " ".join(p.info["cmdline"] or [])]
            # The loop's child that has forked but not yet become `sleep` shows the loop's command line too.
            program = [p for p in matching if p.info["ppid"] not in {q.pid for q in matching}]
            assert len(program) == 1, matching
            (server.root / "stop-quiet").touch()
            psutil.wait_procs(program, timeout=30)
            # No channel, so no news can come (with them on, the kernel's socket is open before the cell ran).
            assert not [url for url in sockets if "/uexec/kernels/" in url], sockets
            assert toast(page, "session 'quiet'").count() == 0
            assert not errors, "JS errors from the extension:\n" + "\n".join(errors)
    finally:
        server.api("PUT", setting, {"raw": json.dumps(SETTINGS)})
