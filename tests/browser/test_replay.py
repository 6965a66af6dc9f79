"""`%uexec_replay` in JupyterLab: a shell's journal played back by the live view's xterm.js.

A session types a few commands through the magics; its replay lists one
chapter per command with its exit code; seeking to a chapter shows the
screen the live view showed at that point (the same bytes through pyte, in
the kernel, for comparison); playing runs to the recording's last screen.
Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json

import pytest

from .conftest import ARTIFACTS
from .test_lab import BASH, open_notebook, run_cell, terminal_lines, wait_output, wait_until

pytestmark = pytest.mark.timeout(150)

COMMANDS = ["echo one", "printf 'two\\n'", "false", "seq 3", "echo $((6*7))"]

# Each chapter's screen as pyte draws it from the output before it: what a terminal of the recording's size showed.
EXPECTED = """
import json
from unified_exec_kernel.core.journal import open_journal
from unified_exec_kernel.core.journal.playback import playback
from unified_exec_kernel.jupyter.current import current_manager
from unified_exec_kernel.screen.html import screen_html
import html as _html, re as _re
with open_journal(current_manager().journals.find('sh').path) as _journal:
    _played = playback(_journal)
def _rows(index):
    text = ''.join(data for _, code, data in _played.events[:index] if code == 'o')
    markup = screen_html(text, _played.rows, _played.cols)
    return [_html.unescape(_re.sub('<[^>]+>', '', row)) for row in markup.split('>', 1)[1].rsplit('<', 1)[0].split('\\n')]
print(json.dumps({'chapters': [_rows(c.index) for c in _played.chapters], 'end': _rows(len(_played.events))}))
"""


def rows_of(player) -> list[str]:
    lines = terminal_lines(player.locator(".uexec-player-screen"))
    while lines and not lines[-1]:
        lines.pop()
    return lines


def test_a_shells_replay_has_a_chapter_per_command_and_seeks_to_the_screen_it_showed(lab, page):
    typed = [f"%uexec -s sh {command}" for command in COMMANDS]
    cells = open_notebook(lab, page, "replay", [f"%%uexec --name sh -t 10000\n{BASH}", *typed, "%uexec_replay sh", EXPECTED])
    for index in range(1, len(COMMANDS) + 2):
        run_cell(page, cells, index)
        wait_output(cells.nth(index), r"\[session \d+ running")
    replay_cell = cells.nth(len(COMMANDS) + 2)
    run_cell(page, cells, len(COMMANDS) + 2)
    player = replay_cell.locator(".uexec-player")
    player.wait_for(timeout=30_000)
    wait_until(lambda: player.get_attribute("data-loaded") == "true", 30, "the recording to arrive")
    player.locator(".uexec-player-screen .xterm-rows").wait_for()

    chapters = player.locator(".uexec-player-chapter")
    labels = chapters.all_inner_texts()
    assert [label.split("$ ", 1)[1] for label in labels] == [
        "echo one → 0", "printf 'two\\n' → 0", "false → 1", "seq 3 → 0", "echo $((6*7)) → 0"
    ], labels
    # Each row is clickable over the list's whole width, not just its text; the list scrolls.
    list_box = player.locator(".uexec-player-chapters")
    row_width = chapters.first.evaluate("b => b.getBoundingClientRect().width")
    inner_width = list_box.evaluate("l => l.clientWidth - parseFloat(getComputedStyle(l).paddingLeft) - parseFloat(getComputedStyle(l).paddingRight)")
    assert abs(row_width - inner_width) < 1, (row_width, inner_width)
    assert list_box.evaluate("l => getComputedStyle(l).overflowY") == "auto"

    run_cell(page, cells, len(COMMANDS) + 3)
    expected_cell = cells.nth(len(COMMANDS) + 3)
    wait_output(expected_cell, r"\{\"chapters\"", timeout=30)
    expected = json.loads(expected_cell.locator(".jp-OutputArea-output").inner_text())

    # It opens on the last screen, as the saved notebook shows it; play starts over.
    wait_until(lambda: rows_of(player) == expected["end"], 10, "the last screen on opening")
    assert player.locator(".uexec-player-play").inner_text() == "↻ replay"

    for number in (4, 1, 3):  # out of order: each seek starts over from a blank terminal
        chapters.nth(number - 1).click()
        wait_until(lambda: rows_of(player) == expected["chapters"][number - 1], 10, f"chapter {number}'s screen")
    assert rows_of(player)[-1] == "$ false"
    player.screenshot(path=str(ARTIFACTS / "replay-chapter.png"))

    player.locator(".uexec-player-speed").select_option("8")
    player.locator(".uexec-player-play").click()
    wait_until(lambda: player.locator(".uexec-player-play").inner_text() == "↻ replay", 30, "the replay to end")
    wait_until(lambda: rows_of(player) == expected["end"], 10, "the last screen")
    assert rows_of(player)[-2:] == ["42", "$"]
    player.screenshot(path=str(ARTIFACTS / "replay-end.png"))
