"""A live view of a pipes session (an agent's `tty=false`, issue 27) in a real JupyterLab and Chromium.

Such a session has no terminal and its stdin is closed: a view can only
watch it. The view says so in one line, above what the program printed,
and sends no keys. Every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import pytest

from .test_direct_channel import PageSockets
from .test_lab import open_notebook, run_cell, screenshot_artifact, wait_for_lines, wait_output

pytestmark = pytest.mark.timeout(120)

START = (
    "from unified_exec_kernel.jupyter import current\n"
    "_m = current.manager_of(get_ipython())\n"
    "pipes = current.bridge_of(get_ipython()).call(lambda: _m.spawn(['bash', '-c', 'echo from-pipes; echo second-line; sleep 60'], tty=False))\n"
    "print('pipes session', pipes)"
)
READ_ONLY = "read-only: this session runs on pipes, without a terminal (an agent started it with tty=false); it takes no keys"


def test_a_live_view_of_a_pipes_session_says_it_is_read_only_and_sends_no_keys(lab, page):
    sockets = PageSockets(page)
    cells = open_notebook(lab, page, "pipes_view", [START, "%%uexec --live -s pipes -t 0"])
    run_cell(page, cells, 1)
    session_id = wait_output(cells.nth(1), r"pipes session (\d+)").group(1)
    cells.nth(2).locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"%%uexec --live -s {session_id} -t 0")
    page.keyboard.press("Shift+Enter")
    terminal = cells.nth(2).locator(".uexec-terminal")
    terminal.wait_for()
    lines = wait_for_lines(terminal, lambda lines: "from-pipes" in lines, 15, "the program's output")
    said = "".join(lines[: lines.index("from-pipes")])  # one line (wrapped at the view's width), above the output
    assert said == READ_ONLY, lines
    # A pipe carries `\n` alone (no terminal made it `\r\n`): each line still starts at the left.
    lines = wait_for_lines(terminal, lambda lines: any("second-line" in line for line in lines), 15, "the second line")
    assert "second-line" in lines, lines  # on main: `          second-line`, under the end of the first
    terminal.click()
    page.keyboard.type("typed")
    page.keyboard.press("Enter")
    assert sockets.comm_inputs == 0 and all(not socket.keys() for socket in sockets.open_direct()), "keys were sent"
    # xterm hands a key to the view as it is pressed, and a sent key is recorded as it is sent: nothing went.
    shown = "".join(wait_for_lines(terminal, lambda lines: "from-pipes" in lines, 5, "the view"))
    assert "typed" not in shown and "StdinClosed" not in shown, shown
    screenshot_artifact(cells.nth(2), "pipes-session-live-view.png")
