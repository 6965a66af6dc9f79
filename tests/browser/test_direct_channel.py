"""The live view's direct channel (issue 18) in a real JupyterLab, kernel and Chromium.

Where our server extension runs, a live view and a terminal tab talk to the
kernel over `/uexec/kernels/<id>/channel`: keys as `I` frames, output as `B`
frames, and no kernel message per keystroke, so no `status: busy`/`idle`
pair either. Without the extension they use the widget's or the comm's
messages, as before. After a drop the view reconnects and re-attaches, and
its gap rule keeps every byte shown exactly once.

What the page does is read from Playwright's view of its websockets (every
frame each way) and from the terminal's DOM rows; the server's side from its
log. Nothing here waits on a timer: every wait is for a condition.
"""

from __future__ import annotations

import json
import re
import struct

import pytest

from .conftest import Lab, fresh_page, isolated_env, jupyter_server
from .test_lab import (
    BASH,
    open_notebook,
    open_sessions_panel,
    start_live_shell,
    terminal_lines,
    type_line,
    wait_for_lines,
    wait_until,
)

pytestmark = pytest.mark.timeout(150)

LIVE_CELL = f"%%uexec --live -t 500\n{BASH}"
DIRECT_PATH = "/uexec/kernels/"
OUTPUT_HEADER = struct.Struct(">BIQQ")  # kind, session_id, offset, skipped
INPUT_HEADER = struct.Struct(">BI")  # kind, session_id

# The page's direct websockets, so a test can drop one as a network would.
TRACK_DIRECT_JS = r"""
(() => {
  const Original = window.WebSocket;
  const direct = window.__uexecDirect = [];
  class Tracking extends Original {
    constructor(...args) {
      super(...args);
      if (String(args[0]).includes('/uexec/kernels/')) direct.push(this);
    }
  }
  window.WebSocket = Tracking;
})();
"""


class DirectSocket:
    """One websocket to the direct channel, as Playwright saw it."""

    def __init__(self, ws):
        self.url = ws.url
        self.sent: list[str | bytes] = []
        self.received: list[str | bytes] = []
        self.closed = False
        self.error: str | None = None
        ws.on("framesent", lambda payload: self.sent.append(payload))
        ws.on("framereceived", lambda payload: self.received.append(payload))
        ws.on("close", lambda _ws: setattr(self, "closed", True))
        ws.on("socketerror", lambda error: setattr(self, "error", error))

    def texts(self) -> list[dict]:
        return [json.loads(frame) for frame in self.received if isinstance(frame, str)]

    def said(self, type_: str) -> bool:
        return any(message.get("type") == type_ for message in self.texts())

    def keys(self) -> str:
        """Every key sent in `I` frames, in order."""
        return "".join(frame[INPUT_HEADER.size:].decode() for frame in self.sent if isinstance(frame, bytes) and frame[:1] == b"I")

    def output(self) -> list[tuple[int, int, bytes]]:
        """(offset, skipped, bytes) of every `B` frame received."""
        frames = []
        for frame in self.received:
            if isinstance(frame, bytes) and frame[:1] == b"B":
                _, _, offset, skipped = OUTPUT_HEADER.unpack_from(frame)
                frames.append((offset, skipped, frame[OUTPUT_HEADER.size:]))
        return frames


class PageSockets:
    """The page's websockets: direct channels, and what the kernel's own websocket carries."""

    def __init__(self, page):
        self.direct: list[DirectSocket] = []
        self.status = 0  # iopub `status` messages received on kernel websockets
        self.comm_inputs = 0  # widget/comm `input` messages sent on kernel websockets
        page.context.add_init_script(TRACK_DIRECT_JS)
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws) -> None:
        if DIRECT_PATH in ws.url:
            self.direct.append(DirectSocket(ws))
        elif "/api/kernels/" in ws.url and "/channels" in ws.url:
            ws.on("framereceived", self._on_kernel_frame)
            ws.on("framesent", self._on_kernel_sent)

    def _on_kernel_frame(self, payload) -> None:
        if kernel_msg_type(payload) == "status":
            self.status += 1

    def _on_kernel_sent(self, payload) -> None:
        text = payload.decode(errors="replace") if isinstance(payload, bytes) else payload
        if kernel_msg_type(payload) == "comm_msg" and re.search(r'"type":\s*"input"', text):
            self.comm_inputs += 1

    def open_direct(self) -> list[DirectSocket]:
        """The direct sockets that said `hello` and have not closed."""
        return [socket for socket in self.direct if not socket.closed and socket.said("hello")]


def kernel_msg_type(payload) -> str:
    """The msg_type of a kernel websocket frame: JupyterLab's v1 binary protocol, or JSON."""
    try:
        if isinstance(payload, bytes):
            count = int.from_bytes(payload[:8], "little")
            offsets = [int.from_bytes(payload[8 * (i + 1): 8 * (i + 2)], "little") for i in range(count)]
            return json.loads(payload[offsets[1]: offsets[2]])["msg_type"]
        return json.loads(payload)["header"]["msg_type"]
    except (ValueError, KeyError, IndexError):
        return ""


def wait_seeing(page, check, timeout: float, what: str):
    """wait_until for what Playwright reports of the page's websockets: it delivers those events only during a call to it."""

    def check_after_a_call():
        page.evaluate("() => null")
        return check()

    return wait_until(check_after_a_call, timeout, what)


def relay_opens(lab, kernel_id: str) -> int:
    """How many direct channels the server's relay opened to the kernel (its log says each)."""
    return lab.log.read_text(errors="replace").count(f"direct channel open to kernel {kernel_id}")


def kernel_idle(page) -> bool:
    indicator = page.locator("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator")
    return indicator.get_attribute("data-status") == "idle"


def prompt_after(lines: list[str], last: str) -> bool:
    """`last` is shown, and a prompt below it."""
    return last in lines and "$" in lines[lines.index(last) + 1:]


def once_each(lines: list[str], wanted: list[str]) -> bool:
    """Every wanted line is shown exactly once, in this order."""
    if any(lines.count(line) != 1 for line in wanted):
        return False
    return [line for line in lines if line in wanted] == wanted


def live_shell_on_direct(lab, page, name: str, sockets: PageSockets):
    """A notebook whose live view runs bash over the direct channel; its terminal."""
    cells = open_notebook(lab, page, name, [LIVE_CELL])
    terminal = start_live_shell(page, cells, 1)
    wait_seeing(page, lambda: len(sockets.open_direct()) == 1, 15, "the live view's direct channel")
    wait_until(lambda: kernel_idle(page), 15, "the cell to finish")
    return cells, terminal


# -- with our server extension --------------------------------------------------


@pytest.fixture
def page(browser, lab):
    with fresh_page(browser, lab) as page:
        yield page


def test_live_view_types_over_the_direct_channel_with_no_kernel_status_per_key(lab, page):
    sockets = PageSockets(page)
    _, terminal = live_shell_on_direct(lab, page, "direct_keys", sockets)
    (direct,) = sockets.open_direct()
    kernel_id = lab.api("GET", "/api/sessions")[0]["kernel"]["id"]
    assert f"{DIRECT_PATH}{kernel_id}/channel" in direct.url
    wait_until(lambda: relay_opens(lab, kernel_id) == 1, 10, "the server's relay to say it opened the channel")
    assert direct.said("attached") and direct.output(), "the replay came over the channel"

    status_before = sockets.status
    line = "echo direct-$((6*7))"
    type_line(page, terminal, line)
    lines = wait_for_lines(terminal, lambda lines: "direct-42" in lines, 15, "the shell's answer")
    assert lines.index("direct-42") == lines.index(f"$ {line}") + 1
    # Every key went over the channel, none as a kernel message: no busy/idle pair per key.
    assert direct.keys().endswith(line + "\r"), direct.keys()
    assert sockets.comm_inputs == 0
    assert sockets.status == status_before, f"{sockets.status - status_before} status messages for {len(line) + 1} keys"
    assert any(b"direct-42" in data for _, _, data in direct.output())


def test_a_dropped_channel_reconnects_and_shows_every_line_exactly_once(lab, page):
    sockets = PageSockets(page)
    _, terminal = live_shell_on_direct(lab, page, "direct_drop", sockets)
    type_line(page, terminal, "echo before-$((1+1))")
    wait_for_lines(terminal, lambda lines: "before-2" in lines, 15, "the answer before the drop")

    # Output keeps coming while the channel is down and comes back.
    type_line(page, terminal, "for i in $(seq 1 8); do echo tick-$i; sleep 0.2; done")
    wait_for_lines(terminal, lambda lines: "tick-2" in lines, 15, "the first ticks")
    first = sockets.open_direct()[0]
    page.evaluate("() => window.__uexecDirect.forEach(socket => socket.close())")
    wait_seeing(page, lambda: first.closed, 10, "the channel to drop")
    wait_seeing(page, lambda: len(sockets.open_direct()) == 1 and sockets.open_direct()[0] is not first, 15, "a new channel")
    second = sockets.open_direct()[0]
    wait_seeing(page, lambda: second.said("attached"), 10, "the view to attach again")
    kernel_id = lab.api("GET", "/api/sessions")[0]["kernel"]["id"]
    wait_until(lambda: relay_opens(lab, kernel_id) == 2, 10, "the server's relay to say it opened the channel again")

    ticks = [f"tick-{i}" for i in range(1, 9)]
    lines = wait_for_lines(terminal, lambda lines: prompt_after(lines, "tick-8"), 20, "the last tick and the prompt")
    assert once_each(lines, ["before-2", *ticks]), lines

    type_line(page, terminal, "echo after-$((2+2))")
    lines = wait_for_lines(terminal, lambda lines: "after-4" in lines, 15, "the answer after the reconnect")
    assert once_each(lines, ["$ echo before-$((1+1))", "before-2", *ticks, "$ echo after-$((2+2))", "after-4"]), lines
    assert second.keys().endswith("echo after-$((2+2))\r")
    assert sockets.comm_inputs == 0, "the view fell back instead of reconnecting"


FLOOD_LINES = 1_000_000
"""6.9 MB: far more than the kernel's window and a lossy view's queue together (protocol/window.py)."""


def test_a_flood_arrives_whole_and_ends_on_the_exact_screen(lab, page):
    sockets = PageSockets(page)
    _, terminal = live_shell_on_direct(lab, page, "direct_flood", sockets)
    (direct,) = sockets.open_direct()
    type_line(page, terminal, f"seq 1 {FLOOD_LINES}")

    lines = wait_for_lines(terminal, lambda lines: prompt_after(lines, str(FLOOD_LINES)), 180, "the flood's end and the prompt")
    end = lines.index(str(FLOOD_LINES))
    shown = [line for line in lines[:end + 1] if line]
    # The screen's rows are the last numbers, consecutive, then the prompt.
    assert len(shown) > 10 and shown == [str(n) for n in range(FLOOD_LINES + 1 - len(shown), FLOOD_LINES + 1)], shown
    assert not any("skipped" in line for line in lines), lines

    # On the wire: contiguous frames, nothing skipped, every number once. The page draws
    # slower than `seq` prints: the view held the program instead of skipping.
    frames = direct.output()
    for (offset, skipped, data), (next_offset, next_skipped, _) in zip(frames, frames[1:]):
        assert next_offset == offset + len(data) and next_skipped == 0, (offset, len(data), next_offset, next_skipped)
    text = b"".join(data for _, _, data in frames).decode()
    assert "\r\n".join(map(str, range(1, FLOOD_LINES + 1))) + "\r\n" in text


def test_a_terminal_tab_uses_the_direct_channel_too(lab, page):
    sockets = PageSockets(page)
    live_shell_on_direct(lab, page, "direct_tab", sockets)
    panel = open_sessions_panel(page)
    panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
    tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
    tab.wait_for()
    wait_seeing(page, lambda: len(sockets.open_direct()) == 2, 15, "the tab's direct channel")
    tab_socket = sockets.open_direct()[1]
    status_before = sockets.status
    type_line(page, tab, "echo tab-$((3*3))")
    wait_for_lines(tab, lambda lines: "tab-9" in lines, 15, "the answer in the tab")
    assert tab_socket.keys().endswith("echo tab-$((3*3))\r")
    assert sockets.status == status_before


# -- without it -------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab_without_relay(tmp_path_factory, chromium_path) -> Lab:
    base = tmp_path_factory.mktemp("lab-without-relay")
    args = ("--ServerApp.jpserver_extensions=unified_exec_kernel=False",)
    with jupyter_server(base, "lab", env=isolated_env(base), args=args) as server:
        yield server


def test_without_our_server_extension_the_views_use_kernel_messages(lab_without_relay, browser):
    with fresh_page(browser, lab_without_relay) as page:
        sockets = PageSockets(page)
        cells = open_notebook(lab_without_relay, page, "no_relay", [LIVE_CELL])
        terminal = start_live_shell(page, cells, 1)
        wait_seeing(page, lambda: sockets.direct and all(s.closed or s.error for s in sockets.direct), 15, "the refused channel")
        wait_until(lambda: kernel_idle(page), 15, "the cell to finish")
        status_before = sockets.status
        type_line(page, terminal, "echo fallback-$((5*5))")
        lines = wait_for_lines(terminal, lambda lines: "fallback-25" in lines, 15, "the shell's answer")
        assert lines.count("fallback-25") == 1
        # Each key was a widget message, and the kernel said busy and idle for it.
        keys = len("echo fallback-$((5*5))") + 1
        assert sockets.comm_inputs >= keys
        wait_seeing(page, lambda: sockets.status - status_before >= 2 * keys, 10, "a busy/idle pair per key")
        assert not sockets.open_direct()

        panel = open_sessions_panel(page)
        panel.locator('.uexec-session-row[data-session-id="0"] .uexec-open').click()
        tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
        tab.wait_for()
        wait_for_lines(tab, lambda lines: "fallback-25" in lines, 15, "the tab's replay over the comm")
        type_line(page, tab, "echo tab-$((4*4))")
        wait_for_lines(tab, lambda lines: "tab-16" in lines, 15, "the answer in the tab")
        assert not sockets.open_direct()
