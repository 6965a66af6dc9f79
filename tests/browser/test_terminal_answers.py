"""What a view types by itself: xterm.js answers a live program's queries, never history's (issue 26, 1).

A program such as vi asks the terminal (device attributes, colours, modes);
xterm.js answers through the same channel as keys. A view that replays a
session's history parses those old queries again: its answers must be
dropped, or they land at the shell's prompt as typed input.
"""

from __future__ import annotations

import re

import pytest

from .test_lab import (
    BASH,
    open_notebook,
    open_sessions_panel,
    run_cell,
    screenshot_artifact,
    type_line,
    wait_for_lines,
    wait_output,
)

pytestmark = pytest.mark.timeout(120)

# What vi and friends ask at start: primary and secondary device attributes,
# the cursor position, foreground and background colours, a DEC mode's state.
QUERIES = r"\033[c\033[>c\033[6n\033]10;?\007\033]11;?\033\\\033[?12$p"  # printf's escapes
# A past program asked, with no view to answer, then the shell took over.
WRITE_PAST_VI = "open('past_vi.sh', 'w').write(" + repr(f"printf '{QUERIES}'; echo ready; HISTFILE=/dev/null exec {BASH}\n") + ")"
PAST_VI = "%%uexec --name past -t 3000 --until ready\nsh past_vi.sh\n"
# The live check: the terminal's answer to a primary DA read back by the program.
ASK_DA = "printf '\\033[c'; IFS= read -rs -d c -t 5 r; echo \"da=${r#?}\""


def prompt_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("$")]


def check_nothing_typed_then_live_answers(page, terminal, tag: str) -> None:
    lines = wait_for_lines(terminal, lambda lines: "ready" in lines and prompt_lines(lines), 20, "the replayed prompt")
    # Anything the view answered to the replay would sit at this prompt, typed.
    type_line(page, terminal, f"echo clean-{tag}")
    lines = wait_for_lines(terminal, lambda lines: f"clean-{tag}" in lines, 10, f"clean-{tag}")
    assert f"$ echo clean-{tag}" in lines, lines
    # A live program's query is still answered.
    type_line(page, terminal, ASK_DA)
    lines = wait_for_lines(terminal, lambda lines: any(line.startswith("da=") for line in lines), 10, "the answer to a live query")
    assert [line for line in lines if line.startswith("da=")][-1] == "da=[?1;2", lines


def test_a_view_replaying_a_past_vi_types_nothing_and_answers_a_live_query(lab, page):
    show = "from unified_exec_kernel.live.widget import TerminalWidget\nTerminalWidget(0)"
    cells = open_notebook(lab, page, "answers", [WRITE_PAST_VI, PAST_VI, show])
    run_cell(page, cells, 1)
    run_cell(page, cells, 2)
    wait_output(cells.nth(2), r"ready")
    run_cell(page, cells, 3)
    live = cells.nth(3).locator(".uexec-terminal")
    live.wait_for()
    check_nothing_typed_then_live_answers(page, live, "view")
    screenshot_artifact(cells.nth(3), "answers-live-view.png")

    # A Sessions-panel tab replays it all again, the live DA query included.
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()
    wait_for_lines(tab, lambda lines: "clean-view" in lines, 20, "the replay in the tab")
    type_line(page, tab, "echo clean-tab")
    lines = wait_for_lines(tab, lambda lines: "clean-tab" in lines, 10, "clean-tab")
    assert "$ echo clean-tab" in lines, lines
    screenshot_artifact(page, "answers-sessions-tab.png")

    # Nothing was typed by either replay: the shell's history holds only what was typed.
    type_line(page, tab, "history")
    numbered = re.compile(r"\s*\d+\s+(.*)")
    lines = wait_for_lines(tab, lambda lines: any(re.fullmatch(r"\s*\d+\s+history", line) for line in lines), 10, "history")
    typed = [m[1] for line in lines if (m := numbered.fullmatch(line))]
    assert typed == ["echo clean-view", ASK_DA, "echo clean-tab", "history"], lines
