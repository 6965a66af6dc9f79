"""A notebook whose kernel runs at a real Kernel Gateway, in a real JupyterLab (`--gateway-url`) and Chromium.

Only the kernel's messages reach the page (jupyter_client#487): the server
has no direct channel to offer (it answers 4421: the kernel runs elsewhere),
so the live view, the Sessions panel's tab and the notifications all go at
once over the kernel's websocket, the same protocol messages on the `unified_exec` comm; a replay's
recording comes as a message's text, not a buffer. The
server's environment names a pod (`KERNEL_POD_NAME`), which a gateway
client hands on to the kernel as Enterprise Gateway's pod proxy would set
it: `--keep` says in one line that a restart ends kept sessions there.
"""

from __future__ import annotations

import json
import re

import pytest

from ..test_gateway import gateway  # noqa: F401 - the module's Kernel Gateway, on loopback
from .conftest import ARTIFACTS, EXTENSION_NAME, VIEWPORT, extension_errors, fresh_page, isolated_env, jupyter_server
from .test_lab import BASH, open_sessions_panel, run_cell, type_line, wait_for_lines, wait_output, wait_until
from .test_notifications import FILLER, LOAD_S, SETTINGS, close_notebook, open_notebook, start_then_scroll_away, toast

pytestmark = pytest.mark.timeout(600)

POD = "uexec-pod-test"
# Ends when the test creates `stop-NAME` in the gateway's folder (its kernels' working directory).
WAITING = "sh -c 'while [ ! -e {folder}/stop-{name} ]; do sleep 0.1; done; exit {code}'"


@pytest.fixture(scope="module")
def gateway_lab(tmp_path_factory, chromium_path, gateway):  # noqa: F811
    base = tmp_path_factory.mktemp("remote")
    env = isolated_env(base)
    env["KERNEL_POD_NAME"] = POD  # a gateway client sends every KERNEL_* of its environment with a new kernel
    (base / "settings" / EXTENSION_NAME / "notifications.jupyterlab-settings").write_text(json.dumps(SETTINGS))
    args = (f"--gateway-url=http://127.0.0.1:{gateway.port}", f"--GatewayClient.auth_token={gateway.token}")
    with jupyter_server(base, "lab", env, args) as server:
        yield server


def kernel_frames(page) -> list[str]:
    """Every text frame the kernels' websockets bring the page (`/api/kernels/<id>/channels`), from now on."""
    frames: list[str] = []

    def on_socket(ws) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda payload: frames.append(payload) if isinstance(payload, str) else None)

    page.on("websocket", on_socket)
    return frames


def shown(locator) -> bool:
    """Wholly in the viewport: a toast slides in after it is attached (what a screenshot should catch)."""
    box = locator.bounding_box() if locator.count() else None
    return bool(box) and box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"] and box["y"] + box["height"] <= VIEWPORT["height"]


def console_lines(page) -> list[str]:
    lines: list[str] = []
    page.on("console", lambda message: lines.append(message.text))
    return lines


def test_a_live_view_and_a_sessions_tab_work_over_the_kernels_messages_and_keep_says_a_restart_ends_it(gateway_lab, browser):
    server = gateway_lab
    with fresh_page(browser, server) as page:
        errors = extension_errors(page)
        said = console_lines(page)
        cells = open_notebook(server, page, "remote", [f"%%uexec --live -t 500\n{BASH}", f"%%uexec --keep -t 300\n{BASH}"])

        run_cell(page, cells, 1)
        terminal = cells.nth(1).locator(".uexec-terminal")
        terminal.wait_for(timeout=LOAD_S * 1000)
        wait_output(cells.nth(1), r"\[session 0 was running ·", LOAD_S)
        wait_for_lines(terminal, lambda lines: any(line.startswith("$") for line in lines), 30, "the prompt")
        type_line(page, terminal, "echo $((6*7))")
        lines = wait_for_lines(terminal, lambda lines: "42" in lines, 30, "the answer to typed keys")
        assert lines.index("42") == lines.index("$ echo $((6*7))") + 1
        # The server has no channel to this kernel: the view fell back to the kernel's messages.
        assert any("uexec: the kernel runs elsewhere: no direct channel; using the kernel's messages instead" in line for line in said), said

        run_cell(page, cells, 2)
        wait_output(cells.nth(2), r"\[session 1 running ·", LOAD_S)
        output = cells.nth(2).locator(".jp-OutputArea").inner_text()
        kept = [line for line in output.splitlines() if line.startswith("[--keep")]
        assert kept == [
            f"[--keep: Enterprise Gateway replaces this kernel's pod '{POD}' on restart:"
            " kept sessions end with it]"
        ], output
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "remote-live-and-keep.png"))

        # The Sessions panel lists both sessions of the gateway's kernel and opens one in a tab that takes keys.
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        panel = open_sessions_panel(page)
        rows = panel.locator(".uexec-session-row[data-session-id]")
        wait_until(lambda: rows.count() == 2, 30, "a row per session")
        row0 = panel.locator('.uexec-session-row[data-session-id="0"]')
        assert row0.locator(".uexec-session-command").inner_text() == BASH
        assert row0.locator(".uexec-session-state").inner_text() == "running"
        assert panel.locator('.uexec-session-row[data-session-id="1"] .uexec-session-kept').inner_text().startswith("kept")
        row0.locator(".uexec-open").click()
        tab = page.locator('#jp-main-dock-panel .jp-MainAreaWidget > .uexec-terminal[data-session-id="0"]')
        tab.wait_for(timeout=30_000)
        wait_for_lines(tab, lambda lines: "42" in lines, 30, "the replay of what the live view typed")
        type_line(page, tab, "echo $((7*8))")
        wait_for_lines(tab, lambda lines: "56" in lines, 30, "the tab's answer to typed keys")
        page.screenshot(path=str(ARTIFACTS / "remote-sessions-tab.png"))
        # The notebook's live view, in its hidden tab, shows what the tab typed: one session, two views.
        live = page.locator('#jp-main-dock-panel .jp-NotebookPanel .jp-CodeCell .uexec-terminal[data-session-id="0"]')
        wait_for_lines(live, lambda lines: "56" in lines, 30, "the live view showing what the tab typed")
        assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


def test_an_end_out_of_sight_is_told_over_the_kernels_comm(gateway_lab, browser, gateway):  # noqa: F811
    server = gateway_lab
    folder = gateway.log.parent
    with fresh_page(browser, server) as page:
        errors = extension_errors(page)
        said = console_lines(page)
        frames = kernel_frames(page)
        cells = open_notebook(server, page, "remote-notified", [
            f"%%uexec --live --name train -t 500\n{WAITING.format(folder=folder, name='train', code=1)}",
            f"%%uexec --name later -t 300\n{WAITING.format(folder=folder, name='later', code=0)}",
            FILLER,
        ])
        start_then_scroll_away(page, cells)
        # The end comes once the notifier listens on the kernel's comm: it goes there at the relay's first
        # answer (4421, the kernel runs elsewhere; it asked three times when that was a 4404).
        listening = lambda: any("listening for session events on the kernel's comm" in line for line in said)  # noqa: E731
        wait_until(listening, 60, f"the notifier to listen on the kernel's comm (the page said: {[line for line in said if 'uexec' in line]})")
        (folder / "stop-train").touch()
        told = toast(page, "session 'train' exited with code 1 after")
        wait_until(lambda: shown(told), 60, f"the toast (the page said: {[line for line in said if 'uexec' in line]})")
        assert re.match(r"^session 'train' exited with code 1 after \d+ s$", told.inner_text().strip().splitlines()[0]), told.inner_text()
        # It came as a kernel message (a comm_msg on the kernel's websocket), to the notifier's own comm.
        assert any('"session_event"' in frame and '"comm_msg"' in frame for frame in frames)
        assert any("listening for session events on the kernel's comm" in line for line in said), said
        switched = [line for line in said if "listening for session events on the kernel's comm instead" in line]
        assert switched and all(line.startswith("uexec: the kernel runs elsewhere: no direct channel;") for line in switched), [line for line in said if "uexec" in line]
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "remote-notification-train.png"))

        # The notebook closed (its kernel runs on at the gateway): the notifier's own connection still hears.
        close_notebook(page, "remote-notified")
        (folder / "stop-later").touch()
        later = toast(page, "session 'later' exited with code 0 after")
        wait_until(lambda: shown(later), 60, f"the toast of an end with the notebook closed (the page said: {[line for line in said if 'uexec' in line]})")
        page.screenshot(path=str(ARTIFACTS / "remote-notification-later.png"))
        errors = [error for error in errors if not re.search(r"took [\d.]+ms to activate|is taking too long to activate", error)]
        assert not errors, "JS errors from the extension:\n" + "\n".join(errors)


def test_a_replay_plays_over_the_kernels_messages(gateway_lab, browser):
    # A recording went as a binary buffer, which the server's gateway client cannot relay: the player
    # waited for ever (and the whole module came as buffers too). There the answer carries it as text.
    server = gateway_lab
    with fresh_page(browser, server) as page:
        errors = extension_errors(page)
        cells = open_notebook(server, page, "remote-replay", [
            f"%%uexec --name rsh -t 10000\n{BASH}", "%uexec -s rsh echo $((6*7))", "%uexec_replay rsh",
        ])
        for index in (1, 2):
            run_cell(page, cells, index)
            wait_output(cells.nth(index), r"\[session \d+ running", LOAD_S)
        run_cell(page, cells, 3)
        player = cells.nth(3).locator(".uexec-player")
        player.wait_for(timeout=LOAD_S * 1000)
        wait_until(lambda: player.get_attribute("data-loaded") == "true", 60, "the recording to arrive")
        # It opens on the recording's last screen: the command, its answer and the next prompt.
        screen = player.locator(".uexec-player-screen")
        wait_for_lines(screen, lambda lines: "42" in lines and "$ echo $((6*7))" in lines, 30, "the last screen")
        assert [label.split("$ ", 1)[1] for label in player.locator(".uexec-player-chapter").all_inner_texts()] == ["echo $((6*7)) → 0"]
        ARTIFACTS.mkdir(exist_ok=True)
        player.screenshot(path=str(ARTIFACTS / "remote-replay.png"))
        assert not errors, "JS errors from the extension:\n" + "\n".join(errors)
