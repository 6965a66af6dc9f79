"""Views say what is so (issue 34, 3(c) and 4), in a real JupyterLab, kernel and Chromium.

- After Kernel > Shut Down, a live view says its session ended with the
  kernel, in its header and its terminal, and takes no keys; after Restart
  Kernel it says the same words, whichever way it learnt it (the kernel's
  `exited`, or its carrier closing).
- A kept full-screen program (vim's alternate screen) across Restart Kernel:
  the restart's notice goes in the view's header, not over the program's rows.
- After a page reload, what was typed while the view was narrower is drawn as
  it was: the replay is parsed at the sizes it was written at.

Every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import pytest

from .conftest import fresh_page
from .test_kept_sessions import KEPT_CELL, RESTART_S, restart_kernel
from .test_notebook7 import notebook7, open_notebook7  # noqa: F401 - the Notebook 7 server fixture
from .test_lab import (
    BASH,
    open_notebook,
    screenshot_artifact,
    start_live_shell,
    type_line,
    wait_for_lines,
    wait_until,
)

pytestmark = pytest.mark.timeout(180)

LIVE = f"%%uexec --live -t 300\n{BASH}"
ENDED = "ended with the kernel"


def shut_down_kernel(lab, page) -> None:
    """Kernel > Shut Down Kernel (JupyterLab asks nothing; a dialog, if one comes, is accepted)."""
    page.locator(".lm-MenuBar-item", has_text="Kernel").click()
    page.locator('.lm-Menu-item[data-command="kernelmenu:shutdown"]').click()
    dialog = page.locator(".jp-Dialog")

    def gone() -> bool:
        if dialog.count():
            dialog.locator("button.jp-mod-accept").click()
        return not lab.api("GET", "/api/kernels")

    wait_until(gone, 30, "the kernel to be shut down", 0.2)


def inputs_sent(page) -> int:
    """Keys the page sent to a kernel since the count began (direct `I` frames and `input` messages)."""
    return page.evaluate("() => window.__uexecInputs || 0")


COUNT_INPUTS_JS = r"""
(() => {
  const Original = window.WebSocket;
  const decoder = new TextDecoder();
  window.__uexecInputs = 0;
  class Counting extends Original {
    send(data) {
      if (typeof data === 'string') {
        if (/"type":\s*"input"/.test(data)) window.__uexecInputs++;
      } else {
        const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        if (bytes[0] === 0x49 || /"type":\s*"input"/.test(decoder.decode(bytes))) window.__uexecInputs++;
      }
      return super.send(data);
    }
  }
  window.WebSocket = Counting;
})();
"""


def check_shut_down_is_said(server, page, cells) -> None:
    """`cells[1]` is a live bash: after Shut Down its header and terminal say it ended with the kernel, once, and no key is sent."""
    terminal = start_live_shell(page, cells, 1)
    type_line(page, terminal, "echo before-$((1+1))")
    wait_for_lines(terminal, lambda lines: "before-2" in lines, 15, "the answer before the shutdown")
    state = cells.nth(1).locator(".uexec-widget-state")
    assert state.inner_text() == "running"

    shut_down_kernel(server, page)
    wait_until(lambda: state.inner_text() == ENDED, 30, f"the header to say {ENDED!r}")
    lines = wait_for_lines(terminal, lambda lines: f"[{ENDED}]" in lines, 10, "the terminal's line")
    assert lines.count(f"[{ENDED}]") == 1, lines

    # It takes no keys: nothing is sent, nothing is echoed, and it still says so.
    page.evaluate("() => { window.__uexecInputs = 0; }")
    terminal.click()
    page.keyboard.type("echo after", delay=15)
    page.keyboard.press("Enter")
    wait_for_lines(terminal, lambda lines: f"[{ENDED}]" in lines, 5, "rows")
    assert state.inner_text() == ENDED
    assert "echo after" not in "\n".join(wait_for_lines(terminal, bool, 5, "rows"))
    assert inputs_sent(page) == 0


def test_after_shut_down_a_live_view_says_the_session_ended_with_the_kernel_and_takes_no_keys(lab, page):
    page.add_init_script(COUNT_INPUTS_JS)
    cells = open_notebook(lab, page, "shut_down", [LIVE])
    check_shut_down_is_said(lab, page, cells)
    screenshot_artifact(cells.nth(1), "live-view-after-shut-down.png")


@pytest.fixture
def nb7_page(browser, notebook7):
    with fresh_page(browser, notebook7) as page:
        yield page


def test_after_shut_down_a_live_view_says_the_session_ended_with_the_kernel_in_notebook_7(notebook7, nb7_page):
    page = nb7_page
    page.add_init_script(COUNT_INPUTS_JS)
    cells = open_notebook7(notebook7, page, "nb7_shut_down", [LIVE])
    check_shut_down_is_said(notebook7, page, cells)
    screenshot_artifact(cells.nth(1), "live-view-after-shut-down-notebook7.png")


def test_after_restart_every_view_of_a_session_says_the_same_words(lab, page):
    # Two views of one session: one hears the kernel's `exited`, the other may see its carrier close first.
    cells = open_notebook(lab, page, "restart_words", [LIVE, "from unified_exec_kernel.live.widget import TerminalWidget\nTerminalWidget(0)"])
    terminal = start_live_shell(page, cells, 1)
    from .test_lab import run_cell

    run_cell(page, cells, 2)
    second = cells.nth(2).locator(".uexec-terminal")
    second.wait_for()
    wait_for_lines(second, lambda lines: any(line.startswith("$") for line in lines), 15, "the second view's prompt")
    states = [cells.nth(index).locator(".uexec-widget-state") for index in (1, 2)]

    restart_kernel(page)
    for index, state in enumerate(states):
        wait_until(lambda: state.inner_text() == ENDED, 30, f"view {index + 1}'s header to say {ENDED!r}")
    for view in (terminal, second):
        lines = wait_for_lines(view, lambda lines: f"[{ENDED}]" in lines, 10, "the terminal's line")
        assert not any("signal" in line or "disconnected" in line for line in lines), lines
    screenshot_artifact(page, "views-after-restart.png")


def test_a_kept_full_screen_program_keeps_its_rows_across_restart_and_the_header_says_so(lab, page):
    from .test_lab import FULL_SCREEN

    (lab.root / "full_screen.py").write_text(FULL_SCREEN)
    cells = open_notebook(lab, page, "kept_full_screen", ["print('a kept session')", KEPT_CELL])
    terminal = start_live_shell(page, cells, 2)
    type_line(page, terminal, f"python3 {lab.root / 'full_screen.py'}")
    drawn = wait_for_lines(terminal, lambda lines: lines[0].startswith("row-01 ") and lines[-1].startswith("row-"), 15, "the full-screen program")
    state = cells.nth(2).locator(".uexec-widget-state")

    restart_kernel(page)
    notice = "kernel restarted; this session was kept"
    wait_until(lambda: state.inner_text() == f"running · {notice}", RESTART_S, "the header to say the kernel restarted")
    lines = wait_for_lines(terminal, lambda lines: len(lines) == len(drawn), 10, "the rows")
    # Every row as the program drew it: the notice overwrote none of them.
    assert lines == drawn, (lines[:3], drawn[:3])
    assert not any(notice in line for line in lines)
    screenshot_artifact(cells.nth(2), "kept-full-screen-after-restart.png")

    # The program still takes keys over the next kernel (Ctrl+C ends it, leaving the alternate screen on:
    # the shell's printf leaves it); the header's notice goes with the full screen.
    terminal.click()
    page.keyboard.press("Control+c")
    type_line(page, terminal, "printf '\\033[?1049l'; echo back-$((3+4))")
    wait_for_lines(terminal, lambda lines: "back-7" in lines, 15, "the shell's answer after the program ended")
    wait_until(lambda: state.inner_text() == "running", 15, "the notice to go with the full screen")


def test_a_reload_draws_lines_typed_at_another_width_as_they_were(lab, page):
    from .test_keys_belong_to_the_terminal import BUFFER_JS
    from .test_live_view_anywhere import check_size_follows, save_notebook

    cells = open_notebook(lab, page, "reload_widths", [LIVE])
    terminal = start_live_shell(page, cells, 1)
    wide = check_size_follows(page, terminal, "wide")
    page.set_viewport_size({"width": 800, "height": 800})
    narrow = check_size_follows(page, terminal, "narrow", unlike=wide["cols"])
    # A command line longer than the narrow terminal: the shell wraps it at that width.
    type_line(page, terminal, "echo long-" + "x" * (narrow["cols"] + 10) + "-end")
    wait_until(lambda: any(line.startswith("long-") and line.rstrip().endswith("-end") for line in terminal.evaluate(BUFFER_JS)), 15, "the long line's answer")
    page.set_viewport_size({"width": 1280, "height": 800})
    check_size_follows(page, terminal, "back", unlike=narrow["cols"])
    before = [line.rstrip() for line in terminal.evaluate(BUFFER_JS) if line.strip()]
    assert any(line.startswith("narrow=") for line in before), before

    save_notebook(page, lab, "reload_widths")
    page.reload()
    terminal = cells.nth(1).locator(".uexec-terminal")
    terminal.wait_for(timeout=60_000)
    wait_for_lines(terminal, lambda lines: any(line.startswith("back=") for line in lines), 30, "the replay after the reload")
    after = [line.rstrip() for line in terminal.evaluate(BUFFER_JS) if line.strip()]
    # What the view showed before the reload, line for line: the lines typed while it was narrower included.
    assert after == before, "\n".join(["before:", *before, "after:", *after])
    screenshot_artifact(cells.nth(1), "live-view-reloaded-after-widths.png")
