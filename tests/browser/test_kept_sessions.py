"""Kept sessions (issue 25) in a real JupyterLab, kernel and Chromium: views that outlive Restart Kernel.

A `%%uexec --live --keep` session is held outside the kernel while it
restarts, and the next kernel (same kernel id) takes it back with its id,
output offsets and journal. A live view of it goes on: its direct channel
reconnects to the new kernel's socket, it says in one line that the kernel
restarted, and it takes keys again. A terminal tab of it opens a new comm to
the new kernel and does the same. A view with no direct channel says in one
line how to open the session again. The Sessions panel lists the session
again by itself. A session not kept still ends with its kernel (test_lab.py:
`test_live_view_header_stops_saying_running_after_a_kernel_restart`).

Every wait is for a condition (text on screen, the kernel's status), with a deadline.
"""

from __future__ import annotations

import re

import psutil
import pytest

from .conftest import fresh_page, isolated_env, jupyter_server
from .test_direct_channel import PageSockets, kernel_idle, relay_opens, wait_seeing
from .test_lab import (
    BASH,
    open_notebook,
    open_sessions_panel,
    screenshot_artifact,
    start_live_shell,
    type_line,
    wait_for_lines,
    wait_until,
)

pytestmark = pytest.mark.timeout(180)

KEPT_CELL = f"%%uexec --live --keep -t 500\n{BASH}"
KEPT_LINE = "── kernel restarted; this session was kept ──"
RESTART_S = 60


def restart_kernel(page) -> None:
    """Kernel > Restart Kernel…, and the dialog's Restart."""
    page.locator(".lm-MenuBar-item", has_text="Kernel").click()
    page.locator('.lm-Menu-item[data-command="kernelmenu:restart"]').click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator("button.jp-mod-accept").click()
    dialog.wait_for(state="detached")


def kernel_id(lab) -> str:
    return lab.api("GET", "/api/sessions")[0]["kernel"]["id"]


def kept_row(row, kept: str) -> bool:
    """The panel lists the session as running and kept, with what `kept` says of its restarts."""
    return row.count() == 1 and row.locator(".uexec-session-state").inner_text() == "running" and row.locator(".uexec-session-kept").inner_text() == kept


def test_a_live_view_of_a_kept_session_goes_on_across_restart_kernel(lab, page):
    sockets = PageSockets(page)
    cells = open_notebook(lab, page, "kept_live", [KEPT_CELL])
    terminal = start_live_shell(page, cells, 1)
    wait_seeing(page, lambda: len(sockets.open_direct()) == 1, 15, "the live view's direct channel")
    wait_until(lambda: kernel_idle(page), 15, "the cell to finish")
    first = sockets.open_direct()[0]
    attached = [m for m in first.texts() if m.get("type") == "attached"]
    assert attached and attached[-1]["kept"] is True, attached
    type_line(page, terminal, "echo before-$((1+1))")
    wait_for_lines(terminal, lambda lines: "before-2" in lines, 15, "the answer before the restart")
    panel = open_sessions_panel(page)
    row = panel.locator('.uexec-session-row[data-session-id="0"]')
    wait_until(lambda: row.count() == 1 and row.locator(".uexec-session-kept").inner_text() == "kept", 15, "the panel's kept row")
    kid = kernel_id(lab)
    state = cells.nth(1).locator(".uexec-widget-state")
    # Every word the header says from now on, however briefly.
    state.evaluate("node => { window.__uexecStates = []; new MutationObserver(() => window.__uexecStates.push(node.textContent))"
                   ".observe(node, { childList: true, characterData: true, subtree: true }); }")

    restart_kernel(page)
    # The old kernel's channel closes; the view waits on it for the next kernel, which takes the session back.
    wait_seeing(page, lambda: first.closed, 30, "the old kernel's channel to close")
    lines = wait_for_lines(terminal, lambda lines: KEPT_LINE in lines, RESTART_S, "the one line that says the kernel restarted")
    assert lines.count(KEPT_LINE) == 1, lines
    assert lines.index("before-2") < lines.index(KEPT_LINE), lines
    assert not any(line.startswith("[") for line in lines), f"a closing or skip notice: {lines}"
    wait_until(lambda: relay_opens(lab, kid) >= 2, 10, "the relay to open a channel to the new kernel")
    wait_until(lambda: state.inner_text() == "running", 10, "the header to say running again")
    said = page.evaluate("() => window.__uexecStates")
    assert "reconnecting" in said and "disconnected" not in said, said
    screenshot_artifact(cells.nth(1), "kept-live-view-after-restart.png")

    # Keys typed now go to the same shell, over the new kernel's channel.
    type_line(page, terminal, "echo after-$((2+2))")
    lines = wait_for_lines(terminal, lambda lines: "after-4" in lines, 15, "the echo after the restart")
    assert lines.count("before-2") == 1 and lines.count("after-4") == 1, lines
    # Under the line, the prompt it cut is drawn again: the keys echo after it, as the shell's cursor is there.
    assert lines[lines.index(KEPT_LINE) + 1] == "$ echo after-$((2+2))", lines
    last = sockets.open_direct()[-1]
    assert last is not first and last.keys().endswith("echo after-$((2+2))\r")
    assert sockets.comm_inputs == 0, "keys went as kernel messages"
    screenshot_artifact(cells.nth(1), "kept-live-view-echoes-after-restart.png")

    # The Sessions panel listed the session again by itself: no click since the restart.
    wait_until(lambda: kept_row(row, "kept, 1 restart"), 30,
               "the panel to list the kept session again")
    screenshot_artifact(panel, "kept-sessions-panel-after-restart.png")


def test_a_terminal_tab_of_a_kept_session_goes_on_across_restart_kernel(lab, page):
    a_kept_tab_goes_on_across_restart_kernel(lab, page, "kept_tab")
    screenshot_artifact(page, "kept-terminal-tab-after-restart.png")


def a_kept_tab_goes_on_across_restart_kernel(server, page, name: str) -> None:
    cells = open_notebook(server, page, name, [KEPT_CELL.replace("--live ", "")])
    cells.nth(1).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    wait_until(lambda: "[session 0" in cells.nth(1).locator(".jp-OutputArea").inner_text(), 15, "the session to start")
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()
    wait_for_lines(tab, lambda lines: any(line.startswith("$") for line in lines), 15, "the prompt in the tab")
    type_line(page, tab, "echo tab-before-$((3+3))")
    wait_for_lines(tab, lambda lines: "tab-before-6" in lines, 15, "the answer before the restart")

    # The notebook's Kernel menu acts on the current notebook: bring it to the front.
    page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text=f"{name}.ipynb").click()
    restart_kernel(page)
    page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text="uexec 0:").click()
    lines = wait_for_lines(tab, lambda lines: KEPT_LINE in lines, RESTART_S, "the tab's one line")
    assert lines.count(KEPT_LINE) == 1 and not any(line.startswith("[") for line in lines), lines
    type_line(page, tab, "echo tab-after-$((4+4))")
    lines = wait_for_lines(tab, lambda lines: "tab-after-8" in lines, 15, "the echo in the tab after the restart")
    assert lines.count("tab-before-6") == 1 and lines[lines.index(KEPT_LINE) + 1] == "$ echo tab-after-$((4+4))", lines


# -- without our server extension: no direct channel --------------------------------


@pytest.fixture(scope="module")
def lab_without_relay(tmp_path_factory, chromium_path):
    base = tmp_path_factory.mktemp("lab-kept-without-relay")
    args = ("--ServerApp.jpserver_extensions=unified_exec_kernel=False",)
    with jupyter_server(base, "lab", env=isolated_env(base), args=args) as server:
        yield server


def test_without_a_direct_channel_the_view_says_how_to_open_the_kept_session_again(lab_without_relay, browser):
    with fresh_page(browser, lab_without_relay) as page:
        cells = open_notebook(lab_without_relay, page, "kept_no_relay", [KEPT_CELL])
        terminal = start_live_shell(page, cells, 1)
        wait_until(lambda: kernel_idle(page), 15, "the cell to finish")
        type_line(page, terminal, "echo before-$((1+1))")
        wait_for_lines(terminal, lambda lines: "before-2" in lines, 15, "the answer before the restart")
        restart_kernel(page)
        # One line, which the terminal's width may wrap: compared without the spaces a wrap may take.
        said = "[disconnected from the kernel; kept sessions outlive a restart: open this one again with %%uexec --live -s 0 or from the Sessions panel]"
        packed = said.replace(" ", "")
        lines = wait_for_lines(terminal, lambda lines: packed in "".join(lines).replace(" ", ""), 30, "the line saying how to open it again")
        assert "".join(lines).replace(" ", "").count(packed) == 1, lines
        state = cells.nth(1).locator(".uexec-widget-state")
        wait_until(lambda: state.inner_text() == "disconnected", 10, "the header to say disconnected")
        screenshot_artifact(cells.nth(1), "kept-live-view-without-direct-channel.png")

        # What the line says holds: the new kernel has the session, and the panel lists it.
        panel = open_sessions_panel(page)
        row = panel.locator('.uexec-session-row[data-session-id="0"]')
        wait_until(lambda: kept_row(row, "kept, 1 restart"), RESTART_S,
                   "the panel to list the kept session")


def test_a_kept_session_whose_keeper_dies_says_so_and_types_on(lab, page):
    """The failure matrix's first cell as a person sees it (docs/architecture.md): the keeper is
    killed; the live view goes on (the kernel reads the terminal itself) and the Sessions panel says
    the session is no longer kept, where it said `kept`."""
    cells = open_notebook(lab, page, "kept_keeper_dies", [KEPT_CELL])
    terminal = start_live_shell(page, cells, 1)
    wait_until(lambda: kernel_idle(page), 15, "the cell to finish")
    panel = open_sessions_panel(page)
    row = panel.locator('.uexec-session-row[data-session-id="0"]')
    wait_until(lambda: kept_row(row, "kept"), 15, "the panel's kept row")
    program = int(re.search(r"pid (\d+)", row.get_attribute("title")).group(1))
    keeper = psutil.Process(program).parent()  # a kept program's parent is its keeper
    assert any("uexec keeper" in part for part in keeper.cmdline())
    keeper.kill()
    wait_until(lambda: row.locator(".uexec-session-kept").inner_text() == "no longer kept: its keeper died", 30,
               "the panel to say the keeper died")
    type_line(page, terminal, "echo still-$((20+22))")
    wait_for_lines(terminal, lambda lines: "still-42" in lines, 15, "the echo after the keeper died")
    screenshot_artifact(page, "kept-session-after-its-keeper-died.png")


def test_without_a_direct_channel_a_terminal_tab_of_a_kept_session_goes_on_across_restart_kernel(lab_without_relay, browser):
    """Over the kernel's messages alone the tab opens a comm to the next kernel, as it does beside a direct channel."""
    with fresh_page(browser, lab_without_relay) as page:
        a_kept_tab_goes_on_across_restart_kernel(lab_without_relay, page, "kept_tab_no_relay")
        screenshot_artifact(page, "kept-terminal-tab-without-direct-channel.png")
