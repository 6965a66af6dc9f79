"""Two users on one notebook, in a JupyterLab with real-time collaboration (issue 34, 3).

jupyter-collaboration 5 on a token-less server on 127.0.0.1: each browser
context is its own anonymous user (jupyter_server's identity provider gives
each browser its own name), so two contexts are two people on one shared
notebook and one kernel. User A runs a live view; user B, whose page is
another size, has the notebook open as it runs, so B's page draws the
cell's outputs from the shared model, in another order (JupyterLab appends
what the shared list inserts). Then:

- the view that types gives the terminal its size (tmux's `window-size
  latest`): B typing in its already-focused view runs at B's size, not at
  the size A's view claimed last, and A's view says it shows B's size;
- each user's Ctrl+S writes that user's screen into the shared file;
- neither page has an uncaught error.

Every wait is for a condition, with a deadline; both pages are
screenshotted into test-artifacts/.
"""

from __future__ import annotations

import contextlib
import re

import pytest

from .conftest import ARTIFACTS, OURS, RESIZE_RECORDER_JS, jupyter_server
from .test_lab import (
    GRID_JS,
    run_cell,
    stty_sizes,
    wait_for_lines,
    wait_output,
    wait_until,
)
from .test_notifications import LOAD_S, open_loaded, open_notebook
from .test_saved_screen import live_outputs, plain

pytestmark = pytest.mark.timeout(600)

NAME = "shared"
# Each line typed comes back with the terminal's size as the program sees it.
SIZES = "%%uexec --live --name sizes -t 500\nsh -c 'while read line; do echo \"$line=$(stty size)\"; done'"
VIEWPORT_A = {"width": 1280, "height": 800}
VIEWPORT_B = {"width": 1000, "height": 900}
# Which of a cell's drawn outputs holds the live view (its index among the output area's children).
VIEW_INDEX_JS = """cell => Array.from(cell.querySelectorAll('.jp-OutputArea > .jp-OutputArea-child'))
    .findIndex(child => child.querySelector('.uexec-terminal') !== null)"""


def open_shared(server, page, *, write: bool):
    """Open the notebook (user A writes it first and runs its first cell; B opens what is there); its code cells."""
    if write:
        return open_notebook(server, page, NAME, [SIZES])
    return open_loaded(server, page, f"{server.url}/lab/tree/{NAME}.ipynb", NAME)


@pytest.fixture(scope="module")
def rtc_lab(tmp_path_factory, chromium_path):
    with jupyter_server(tmp_path_factory.mktemp("rtc"), "lab", collaborative=True) as server:
        yield server


@contextlib.contextmanager
def user(browser, viewport):
    """One person: a browser context of their own (their own identity), its page, and its uncaught errors."""
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(20_000)
    context.add_init_script(RESIZE_RECORDER_JS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"{error.message}\n{error.stack or ''}"))
    page.on("console", lambda message: errors.append(f"console.{message.type}: {message.text}")
            if message.type == "error" and OURS.search(f"{message.text} {message.location.get('url', '')}") else None)
    try:
        yield page, errors
    except BaseException:
        with contextlib.suppress(Exception):  # what the person saw, beside the failure
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"collaboration-failed-{viewport['width']}.png"), timeout=10_000)
        raise
    finally:
        context.close()


def ours(errors: list[str]) -> list[str]:
    """Errors of ours, or the `Cannot send` a view once threw (JupyterLab's own RTC warnings are not ours)."""
    return [error for error in errors if OURS.search(error) or "Cannot send" in error]


def asked(page, terminal, tag: str, *, click: bool) -> tuple[int, int]:
    """Type `tag` into the view (clicking into it first, or into the view that has focus): the size the program saw."""
    if click:
        terminal.click()
    page.keyboard.type(tag, delay=15)
    page.keyboard.press("Enter")
    lines = wait_for_lines(terminal, lambda lines: stty_sizes(lines, tag), 30, f"the program's answer to {tag}")
    return stty_sizes(lines, tag)[-1]


def own_size(page) -> tuple[int, int]:
    """The size the page's one view last told the kernel it fits (conftest's recorder keeps each `resize` sent)."""
    rows, cols = page.evaluate("window.__uexecResizes.at(-1) || [0, 0]")
    return rows, cols


def drawn_size(terminal) -> tuple[int, int]:
    grid = terminal.evaluate(GRID_JS)
    return grid["rows"], grid["cols"]


def test_two_users_type_save_and_see_the_size_rule_in_a_collaborative_lab(rtc_lab, browser):
    saved = rtc_lab.root / f"{NAME}.ipynb"
    try:
        with user(browser, VIEWPORT_A) as (page_a, errors_a), user(browser, VIEWPORT_B) as (page_b, errors_b):
            # B has the same notebook open (the shared document, the same kernel) while A runs the live cell.
            cells_a = open_shared(rtc_lab, page_a, write=True)
            cells_b = open_shared(rtc_lab, page_b, write=False)
            run_cell(page_a, cells_a, 1)
            view_a = cells_a.nth(1).locator(".uexec-terminal")
            view_a.wait_for(timeout=LOAD_S * 1000)
            wait_output(cells_a.nth(1), r"\[session 0 was running ·", LOAD_S)
            view_b = cells_b.nth(1).locator(".uexec-terminal")
            fallback_b = cells_b.nth(1).locator(".jp-OutputArea-output", has_text="[live terminal: session 0")
            wait_until(lambda: view_b.count() or fallback_b.count(), LOAD_S, "B's page to draw the live cell's output")
            if not view_b.count():
                # B's widget manager missed the widget's birth (ipywidgets then draws its text: JupyterLab's own
                # race between a collaborator's page connecting and another's run). A reload restores it from the
                # kernel, as it does for any collaborator who opens the notebook later.
                print("B's page drew the widget's text; reloaded")
                cells_b = open_shared(rtc_lab, page_b, write=False)
                view_b = cells_b.nth(1).locator(".uexec-terminal")
            view_b.wait_for(timeout=LOAD_S * 1000)
            wait_output(cells_b.nth(1), r"\[session 0 was running ·", LOAD_S)
            # The case the saved screens got wrong: B's page draws the view at another place in the cell.
            order_a = cells_a.nth(1).evaluate(VIEW_INDEX_JS)
            order_b = wait_until(lambda: (i := cells_b.nth(1).evaluate(VIEW_INDEX_JS)) >= 0 and i + 1, 30, "B's view among the outputs") - 1
            print(f"the live view is output {order_a} in A's page, {order_b} in B's")

            # Each view is attached (it says its size only then), and re-rendered no more in B's page.
            for page in (page_a, page_b):
                wait_until(lambda: page.evaluate("window.__uexecResizes.length") > 0, LOAD_S, "each view to attach and say its size")
            # Each types after a click into its view: the program runs at that view's size.
            wait_until(lambda: own_size(page_a) != own_size(page_b), 30, "the two views to differ in size")
            size_a = asked(page_a, view_a, "a1", click=True)
            assert size_a == own_size(page_a), (size_a, own_size(page_a))
            size_b = asked(page_b, view_b, "b1", click=True)
            assert size_b == own_size(page_b), (size_b, own_size(page_b))
            assert size_a != size_b
            assert asked(page_a, view_a, "a2", click=True) == size_a
            # B types on in its view, which kept the focus in B's page: B's size (the issue saw A's).
            assert asked(page_b, view_b, "b2", click=False) == size_b
            # A's view now shows the program at B's size, and says so; B's says nothing.
            note_a = view_a.locator(".uexec-terminal-size")
            wait_until(lambda: note_a.is_visible() and note_a.inner_text(), 30, "A's view to say it shows another view's size")
            assert note_a.inner_text().startswith(f"showing {size_b[0]}x{size_b[1]}, another view's size"), note_a.inner_text()
            assert drawn_size(view_a) == size_b
            assert not view_b.locator(".uexec-terminal-size").is_visible()
            page_a.screenshot(path=str(ARTIFACTS / "collaboration-user-a.png"))
            page_b.screenshot(path=str(ARTIFACTS / "collaboration-user-b.png"))

            # B saves (Ctrl+S with focus in its view): B's screen, with b2's answer, is in the file.
            before = saved.stat().st_mtime_ns
            page_b.keyboard.press("Control+s")
            wait_until(lambda: saved.stat().st_mtime_ns != before and "b2=" in plain(live_outputs(saved).get(0, {"text/plain": ""})),
                       60, "B's save to write B's screen into the file")
            # A types once more and saves: A's screen, now at A's size again.
            assert asked(page_a, view_a, "a3", click=True) == size_a
            wait_until(lambda: not note_a.is_visible(), 30, "A's view to have its own size again")
            before = saved.stat().st_mtime_ns
            page_a.keyboard.press("Control+s")
            wait_until(lambda: saved.stat().st_mtime_ns != before and "a3=" in plain(live_outputs(saved).get(0, {"text/plain": ""})),
                       60, "A's save to write A's screen into the file")
            text = plain(live_outputs(saved)[0])
            assert re.search(r"^a3=%d %d$" % size_a, text, re.M), text[-400:]

            page_a.wait_for_timeout(300)  # late events reach the listeners
            assert not ours(errors_a), "user A's page:\n" + "\n".join(ours(errors_a))
            assert not ours(errors_b), "user B's page:\n" + "\n".join(ours(errors_b))
    finally:
        rtc_lab.shutdown_kernels()
