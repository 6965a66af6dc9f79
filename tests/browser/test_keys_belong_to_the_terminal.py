"""Keys belong to the terminal (issue 34, 2): a focused live view or Sessions tab gets them all.

Notebook 7 hands every keydown to its shortcuts before the page's own
listeners (the capture phase); JupyterLab after them (xterm takes the keys
it sends and stops them there). Either way, Shift+Enter, Ctrl+Enter,
Alt+Enter, Escape, Tab and the letters that are command-mode shortcuts must
reach the program, and the cell must not run again; Ctrl+S must still save
(in Voilà, which has no save, it is the terminal's XOFF: test_paused.py).
A small program in the session (`showkeys.py`, a `showkey -a`) puts the
terminal in raw mode and prints each read as hex: the test compares the
bytes with what a terminal sends for each key.
"""

from __future__ import annotations

import pytest

from .conftest import fresh_page
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
from .test_paused import check_ctrl_s_saves
from .test_live_view_anywhere import voila  # noqa: F401 - the Voila server fixture
from .test_notebook7 import notebook7, open_notebook7  # noqa: F401 - the Notebook 7 server fixture

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def page(browser, notebook7):
    """A fresh context on the Notebook 7 server (named `page` for conftest's failure screenshot)."""
    with fresh_page(browser, notebook7) as page:
        yield page


LIVE = f"%%uexec --live -t 1000\n{BASH}"

# Each read of the raw terminal in hex, until a `q`, between two lines naming the run.
SHOWKEYS = r"""
import os, sys, tty
tag = sys.argv[1]
tty.setraw(0)
os.write(1, f"keys> {tag}\r\n".encode())
while True:
    data = os.read(0, 256)
    os.write(1, data.hex().encode() + b" ")
    if b"q" in data:
        break
os.write(1, f"\r\nkeys done {tag}\r\n".encode())
"""

# The lines of the terminal's whole buffer (not only the rows in view), a wrapped line joined to the one it continues.
BUFFER_JS = """root => {
    const term = (root.matches('.uexec-terminal') ? root : root.querySelector('.uexec-terminal')).uexecXterm;
    const buffer = term.buffer.active, lines = [];
    for (let y = 0; y < buffer.length; y++) {
        const line = buffer.getLine(y);
        const text = line.translateToString(true);
        if (line.isWrapped && lines.length) lines[lines.length - 1] += text; else lines.push(text);
    }
    return lines;
}"""

# Playwright's key names, and the bytes xterm sends for each (as a VT220 would).
KEYS = [
    ("Shift+Enter", b"\r"),
    ("Control+Enter", b"\r"),
    ("Alt+Enter", b"\x1b\r"),
    ("Escape", b"\x1b"),
    ("Tab", b"\t"),
    ("Shift+Tab", b"\x1b[Z"),
    ("ArrowUp", b"\x1b[A"),
    ("Control+c", b"\x03"),
    ("Control+m", b"\r"),
    ("Control+b", b"\x02"),
    ("a", b"a"),
    ("b", b"b"),
    ("d", b"d"),
    ("d", b"d"),
    ("m", b"m"),
    ("y", b"y"),
]


def bytes_read(terminal, tag: str) -> bytes | None:
    """What the program of run `tag` read, once it has ended; None before."""
    lines = [line.rstrip() for line in terminal.evaluate(BUFFER_JS)]
    if f"keys done {tag}" not in lines:
        return None
    start = lines.index(f"keys> {tag}")
    return bytes.fromhex("".join(lines[start + 1 : lines.index(f"keys done {tag}")]).replace(" ", ""))


def check_every_key_reaches_the_program(page, terminal, name: str) -> None:
    """In a bash at its prompt: run showkeys.py, press every key of KEYS, and see the program get them."""
    type_line(page, terminal, f"python3 showkeys.py {name}; stty sane")
    wait_for_lines(terminal, lambda lines: f"keys> {name}" in lines, 15, "the key reader to start")
    terminal.click()
    for key, _ in KEYS:
        page.keyboard.press(key)
    page.keyboard.press("q")
    expected = b"".join(sent for _, sent in KEYS) + b"q"
    read = wait_until(lambda: bytes_read(terminal, name), 15, "the key reader to end at q")
    assert read == expected, (read, expected)
    screenshot_artifact(terminal, f"keys-{name}.png")


def write_showkeys(server) -> None:
    (server.root / "showkeys.py").write_text(SHOWKEYS)


def check_the_cell_ran_once(cell) -> None:
    """The live view's cell ran once: its prompt says so, and its output is the view, not a UsageError."""
    assert cell.locator(".jp-InputPrompt").inner_text().strip() == "[2]:"
    output = cell.locator(".jp-OutputArea").inner_text()
    assert "UsageError" not in output and "held by running session" not in output, output
    assert cell.locator(".uexec-widget .uexec-terminal").count() == 1


def test_every_key_reaches_the_program_in_notebook_7(notebook7, page):
    write_showkeys(notebook7)
    cells = open_notebook7(notebook7, page, "nb7_keys", [LIVE])
    terminal = start_live_shell(page, cells, 1)
    check_every_key_reaches_the_program(page, terminal, "notebook7-live-view")
    check_the_cell_ran_once(cells.nth(1))
    check_ctrl_s_saves(notebook7, page, terminal, "nb7_keys.ipynb")
    check_the_cell_ran_once(cells.nth(1))

    # The Sessions panel's terminal (Notebook 7's bottom panel) takes them as well.
    from .test_notebook7 import show_right_sidebar_panel

    show_right_sidebar_panel(page, "uexec sessions")
    panel = page.locator("#jp-right-stack #uexec-sessions-panel")
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('.jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    wait_until(lambda: tab.count() == 1 and tab.is_visible(), 15, "the opened terminal to show")
    wait_for_lines(tab, lambda lines: "after-save-42" in lines, 15, "the replay in the tab")
    check_every_key_reaches_the_program(page, tab, "notebook7-tab")
    check_the_cell_ran_once(cells.nth(1))


@pytest.fixture
def lab_page(browser, lab):
    with fresh_page(browser, lab) as page:
        yield page


def test_every_key_reaches_the_program_in_jupyterlab(lab, lab_page):
    page = lab_page
    write_showkeys(lab)
    cells = open_notebook(lab, page, "lab_keys", [LIVE])
    terminal = start_live_shell(page, cells, 1)
    check_every_key_reaches_the_program(page, terminal, "lab-live-view")
    check_the_cell_ran_once(cells.nth(1))
    check_ctrl_s_saves(lab, page, terminal, "lab_keys.ipynb")

    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()
    wait_for_lines(tab, lambda lines: "after-save-42" in lines, 15, "the replay in the tab")
    check_every_key_reaches_the_program(page, tab, "lab-tab")
    # Ctrl+S is the page's here too (a tab is no document: nothing to save), never an XOFF.
    tab.click()
    page.keyboard.press("Control+s")
    type_line(page, tab, "echo tab-after-save-$((5*5))")
    wait_for_lines(tab, lambda lines: "tab-after-save-25" in lines, 10, "the shell's answer after Ctrl+S in the tab")


def test_every_key_reaches_the_program_in_voila(voila, browser):
    import urllib.parse

    write_showkeys(voila)
    voila.write_notebook("keys_dashboard", ["import os; os.environ['PS1'] = '$ '", LIVE])
    with fresh_page(browser, voila) as voila_page:
        voila_page.goto(f"{voila.url}/voila/render/{urllib.parse.quote('keys_dashboard.ipynb')}", timeout=60_000)
        terminal = voila_page.locator(".uexec-widget .uexec-terminal")
        terminal.wait_for(timeout=60_000)
        wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 30, "the prompt")
        check_every_key_reaches_the_program(voila_page, terminal, "voila")
