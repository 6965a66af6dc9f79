"""examples/tour.ipynb as a newcomer meets it: JupyterLab in Chromium, Run All, then the live terminal.

The tour ends with a live view of a shell that stays: after Run All a reader
clicks it and types, saves, reloads the page and finds the terminal again,
and closes the session from the Sessions panel. Opening the committed tour
raises no console error of ours (a past run's widget state once named a
model module that no longer exists, and after a reload the live view then
showed only its text).
"""

from __future__ import annotations

import shutil
import time

import pytest

from ..test_tour import TOUR
from .conftest import ARTIFACTS, extension_errors
from .test_lab import KERNEL_START_S, kernel_connected, run_palette_command, terminal_lines, type_line, wait_for_lines, wait_until

pytestmark = pytest.mark.timeout(150)

NOTEBOOK = "tour.ipynb"
PROMPT_TEXT_JS = "cell => cell.querySelector('.jp-InputPrompt').textContent.trim()"
ALL_PROMPTS_JS = "cells => cells.map(cell => cell.querySelector('.jp-InputPrompt').textContent.trim())"


def screenshot(target, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    target.screenshot(path=str(ARTIFACTS / name), animations="disabled", caret="initial")


def first_cell_runs(page, cells) -> None:
    """Run the first cell (it sets PS1 and closes a past run's sessions: running it twice is harmless) until the kernel answers.

    A Shift+Enter that comes before the kernel is ready may be dropped, and the
    notebook's indicator says idle before then: the cell's execution count is the sign.
    """
    first = cells.first
    deadline = time.monotonic() + KERNEL_START_S
    while True:
        first.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        attempt_end = time.monotonic() + 2
        while time.monotonic() < attempt_end or first.evaluate(PROMPT_TEXT_JS) == "[*]:":
            if first.evaluate(PROMPT_TEXT_JS) == "[1]:":
                return
            assert time.monotonic() < deadline, f"the kernel did not run the first cell within {KERNEL_START_S} s"
            time.sleep(0.05)


def shown(lines: list[str]) -> list[str]:
    """The terminal's rows without the empty ones below the last output."""
    while lines and not lines[-1]:
        lines = lines[:-1]
    return lines


def live_terminal(cells):
    """The last code cell's live view and its terminal."""
    widget = cells.last.locator(".uexec-widget")
    return widget, widget.locator(".uexec-terminal[data-session-id]")


def test_run_all_ends_with_a_live_terminal_that_answers_and_comes_back_after_a_reload(lab, page):
    shutil.copy(TOUR, lab.root / NOTEBOOK)
    errors = extension_errors(page)
    page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?reset")
    notebook = page.locator("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)")
    cells = notebook.locator(".jp-Notebook .jp-CodeCell")
    cells.first.locator(".cm-content").wait_for(timeout=30_000)
    wait_until(lambda: kernel_connected(lab, NOTEBOOK), KERNEL_START_S, "the kernel to start", 0.2)
    first_cell_runs(page, cells)

    run_palette_command(page, "Run All Cells")
    widget, terminal = live_terminal(cells)
    terminal.wait_for(timeout=60_000)
    # Every cell ran, in order (Run All stops at a failing one; the first cell had run once
    # before), and none shows an error.
    expected = [f"[{n}]:" for n in range(2, cells.count() + 2)]
    wait_until(lambda: cells.evaluate_all(ALL_PROMPTS_JS) == expected, 30, "every cell to have run")
    assert notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    state = widget.locator(".uexec-widget-state")
    assert widget.locator(".uexec-widget-title").inner_text() == "bash --norc -i"
    assert state.inner_text() == "running"
    # The shell's history: what the tour typed into it, at the prompt `$ `.
    wait_for_lines(terminal, lambda lines: "$ echo hello, agent" in lines and shown(lines)[-1:] == ["$"], 15, "the history, then the prompt")
    screenshot(page, "tour-run-all.png")

    # The replay of the same shell: a chapter per command typed into it; its last chapter's
    # screen is what the live terminal showed up to that command.
    replay = notebook.locator(".uexec-player")
    wait_until(lambda: replay.get_attribute("data-loaded") == "true", 30, "the replay's recording")
    chapters = replay.locator(".uexec-player-chapter")
    labels = [text.split("$ ", 1)[1].rsplit(" → ", 1)[0] for text in chapters.all_inner_texts()]
    assert "ls /no/such/dir" in labels and labels[-1] == "echo hello, agent", labels
    chapters.last.click()
    live = shown(terminal_lines(terminal))
    before_agent = live[: live.index("$ echo hello, agent") + 1]
    wait_until(lambda: shown(terminal_lines(replay.locator(".uexec-player-screen"))) == before_agent, 10, "the replay's screen at the last command")
    screenshot(replay, "tour-replay.png")

    type_line(page, terminal, "echo typed-by-$((6*7))")
    lines = wait_for_lines(terminal, lambda lines: "typed-by-42" in lines, 15, "the answer to typed input")
    assert lines.index("typed-by-42") == lines.index("$ echo typed-by-$((6*7))") + 1
    screenshot(cells.last, "tour-typed.png")

    # Save and reload mid-session: the view comes back as a terminal, with its history, and answers.
    notebook.locator('.jp-Toolbar [data-command="docmanager:save"]').click()
    tab = page.locator("#jp-main-dock-panel .lm-DockPanel-tabBar .lm-TabBar-tab", has_text=NOTEBOOK)
    wait_until(lambda: "jp-mod-dirty" not in (tab.get_attribute("class") or ""), 15, "the notebook to be saved")
    page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}")  # the URL a user reloads: no ?reset
    widget, terminal = live_terminal(cells)
    terminal.wait_for(timeout=60_000)
    # The page opens at the top; a terminal opens once it is in view with a size, as a reader scrolls to it.
    # The views above it grow as they render (the replay's player), so it is brought into view until it shows.
    def in_view_with(lines) -> bool:
        terminal.scroll_into_view_if_needed()
        return "typed-by-42" in lines

    wait_for_lines(terminal, in_view_with, 30, "the history replayed after the reload")
    type_line(page, terminal, "echo after-reload-$((50+5))")
    wait_for_lines(terminal, lambda lines: "after-reload-55" in lines, 15, "typed input after the reload")
    screenshot(cells.last, "tour-reloaded.png")

    # Closing it from the Sessions panel reads as closed, in the header and in the terminal.
    page.locator('.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="uexec-sessions-panel"]').click()
    row = page.locator("#uexec-sessions-panel .uexec-session-row", has_text="bash --norc -i")
    row.locator(".uexec-kill").click()
    page.locator(".jp-Dialog button.jp-mod-warn", has_text="Kill").click()
    state = widget.locator(".uexec-widget-state")
    wait_until(lambda: state.inner_text() == "closed", 15, "the header to say closed")
    wait_for_lines(terminal, lambda lines: "[closed]" in lines, 10, "the terminal's notice")
    screenshot(cells.last, "tour-closed.png")
    assert errors == []
