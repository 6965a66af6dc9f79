"""TerminalWidget over its real ipywidgets comm, driven as the front end drives it."""

from __future__ import annotations

import re
import time

import pytest

from ..kernel_harness import Kernel

VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    yield k
    k.shutdown()


def show_live(kernel, code):
    execution = kernel.execute(code)
    assert execution.reply["status"] == "ok", execution.text
    displays = [m for m in execution.messages if m["msg_type"] == "display_data" and VIEW in m["content"]["data"]]
    assert len(displays) == 1
    return displays[0]["content"]["data"], execution


def custom(kernel, model_id, content):
    kernel.comm_send(model_id, {"method": "custom", "content": content})


def custom_until(kernel, model_id, until, timeout=20):
    found = kernel.comm_messages(
        model_id, lambda d: d.get("method") == "custom" and until(d["content"]), timeout=timeout
    )
    return [d["content"] for d in found if d.get("method") == "custom"]


def test_live_view_attaches_types_resizes_and_sees_the_exit(kernel):
    data, execution = show_live(kernel, "%%uexec --live -t 500\nbash --norc -i\n")
    model_id = data[VIEW]["model_id"]
    assert "[live terminal: session" in data["text/plain"]  # readable without the front end
    # The view's header keeps the state; the cell's line says the state the wait ended in, which stays true.
    assert re.search(r"^\[session \d+ was running · \d+\.\d\d s\]$", execution.text, re.M), execution.text
    custom(kernel, model_id, {"type": "attach", "request_id": "view-1"})
    events = custom_until(kernel, model_id, lambda c: c["type"] == "data" and c["request_id"] == "view-1")
    attached = [c for c in events if c["type"] == "attached"][0]
    assert attached["request_id"] == "view-1" and attached["alive"]
    custom(kernel, model_id, {"type": "resize", "rows": 33, "cols": 101})
    custom(kernel, model_id, {"type": "input", "data": "stty size; echo $((6*7))\r"})
    events = custom_until(kernel, model_id, lambda c: c["type"] == "data" and "42" in c["data"])
    assert "33 101" in "".join(c["data"] for c in events if c["type"] == "data")
    custom(kernel, model_id, {"type": "input", "data": "exit 3\r"})
    exited = []
    updates = {}

    def seen_both(message) -> bool:
        # `exited` goes out from the engine; the traits change on the kernel's main thread, just after.
        if message.get("method") == "custom" and message["content"]["type"] == "exited":
            exited.append(message["content"])
        if message.get("method") == "update":
            updates.update(message["state"])
        return bool(exited) and "alive" in updates and "exit_code" in updates

    kernel.comm_messages(model_id, seen_both)
    assert exited[-1]["exit_code"] == 3
    assert updates.get("alive") is False and updates.get("exit_code") == 3


def test_live_output_keeps_coming_after_the_cell_returned(kernel):
    data, execution = show_live(kernel, "%%uexec --live -t 100 --shell\nfor i in 1 2 3 4 5; do echo tick-$i; sleep 0.3; done\n")
    assert execution.reply["status"] == "ok"
    model_id = data[VIEW]["model_id"]
    custom(kernel, model_id, {"type": "attach", "request_id": 1})
    events = custom_until(kernel, model_id, lambda c: c["type"] == "exited")
    text = "".join(c["data"] for c in events if c["type"] == "data")
    assert [f"tick-{i}" in text for i in range(1, 6)] == [True] * 5
    assert events[-1]["exit_code"] == 0


def test_a_bad_widget_message_is_answered_and_the_view_lives_on(kernel):
    data, _ = show_live(kernel, "%%uexec --live -t 300\nbash --norc -i\n")
    model_id = data[VIEW]["model_id"]
    custom(kernel, model_id, {"type": "attach", "request_id": "view"})  # output streams from a view's attach on
    custom(kernel, model_id, {"type": "resize", "rows": "many", "cols": 3})
    error = custom_until(kernel, model_id, lambda c: c["type"] == "error")[-1]
    assert "rows and cols must be integers" in error["message"]
    custom(kernel, model_id, {"type": "teleport"})
    assert "unknown message type" in custom_until(kernel, model_id, lambda c: c["type"] == "error")[-1]["message"]
    custom(kernel, model_id, {"type": "input", "data": "echo still-$((1+1))\r"})
    custom_until(kernel, model_id, lambda c: c["type"] == "data" and "still-2" in c["data"])


def test_terminal_widget_from_python_and_a_clear_error_for_unknown_sessions(kernel):
    kernel.run("%%uexec -t 300\nbash --norc -i\n")
    text = kernel.run("from unified_exec_kernel.live.widget import TerminalWidget\nw = TerminalWidget(0)\nprint(w.session_id, w.title, w.alive)")
    assert text.strip() == "0 bash --norc -i True"
    execution = kernel.execute("TerminalWidget(999)")
    assert execution.reply["status"] == "error" and "no session with id 999" in execution.reply["evalue"]



def test_the_view_is_titled_by_the_command_the_user_gave(kernel):
    # The kernel integrates bash: what runs is `bash --rcfile .../bash-integration.sh -i`.
    kernel.run("%%uexec --name titled -t 10000\nbash -i\n")
    text = kernel.run("from unified_exec_kernel.live.widget import TerminalWidget\nfrom unified_exec_kernel.jupyter.current import current_manager\n"
                      "print(TerminalWidget(current_manager().session('titled').session_id).title)")
    assert text.strip() == "bash -i"
    assert "bash -i " in kernel.run("%uexec_sessions")


def test_a_view_whose_session_the_user_closed_says_closed(kernel):
    data, _ = show_live(kernel, "%%uexec --live --name closing -t 300\nbash --norc -i\n")
    model_id = data[VIEW]["model_id"]
    custom(kernel, model_id, {"type": "attach", "request_id": "closing"})
    custom_until(kernel, model_id, lambda c: c["type"] == "attached")
    kernel.run("%uexec_kill closing")
    # The `exited` message comes from the engine's thread, the traits from the kernel's: either may be first.
    exited, updates = [], {}

    def heard(data) -> bool:
        if data.get("method") == "custom" and data["content"]["type"] == "exited":
            exited.append(data["content"])
        if data.get("method") == "update":
            updates.update(data["state"])
        return bool(exited) and "alive" in updates

    kernel.comm_messages(model_id, heard)
    assert exited[0]["closed"] is True  # what a terminal tab prints: [closed]
    assert updates.get("closed") is True and updates.get("alive") is False  # the header: closed


# -- what a page without the live view shows (a saved notebook, an HTML export) --


def test_the_module_comes_over_the_widgets_own_messages_as_buffers(kernel):
    data, _ = show_live(kernel, "%%uexec --live -t 300\nbash --norc -i\n")
    model_id = data[VIEW]["model_id"]
    opened = kernel.execute("from unified_exec_kernel.live import frontend\nprint(frontend.module_hash())")
    custom(kernel, model_id, {"type": "module"})
    answer = kernel.messages_until(
        lambda msg: msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == model_id,
        lambda msg: msg["content"]["data"].get("method") == "custom" and msg["content"]["data"]["content"]["type"] == "module",
    )[-1]
    assert answer["content"]["data"]["content"]["hash"] == opened.text.strip()
    script, styles = (bytes(buffer) for buffer in answer["buffers"])
    assert b"xterm" in script and len(script) > 100_000 and b".xterm" in styles


def displays_of(messages, display_id=None):
    return [
        m["content"]
        for m in messages
        if m["msg_type"] in ("display_data", "update_display_data")
        and (display_id is None or m["content"].get("transient", {}).get("display_id") == display_id)
    ]


def test_each_display_carries_the_last_screen_refreshed_when_the_cell_finishes_and_when_the_session_ends(kernel):
    program = "sh -c 'printf \"\\033[31mred-alert\\033[0m\\n\"; read line; echo \"got $line\"'"
    kernel.run(f"%%uexec --name painter -t 20000 --until red-alert\n{program}\n")
    shown = kernel.execute(
        "from unified_exec_kernel.live.widget import TerminalWidget\n"
        "from unified_exec_kernel.jupyter.current import current_manager\n"
        "painted = TerminalWidget(current_manager().session('painter').session_id)\n"
        "painted"
    )
    assert shown.error is None, shown.text
    first, *updates = displays_of(shown.messages)
    display_id = first["transient"]["display_id"]
    assert VIEW in first["data"]
    assert '<span style="color:#cc0000">red-alert</span>' in first["data"]["text/html"]
    assert "running]" in first["data"]["text/html"] and "red-alert" in first["data"]["text/plain"]
    # When the cell finished: the same display, brought up to date.
    assert [u["transient"]["display_id"] for u in updates] == [display_id]

    # The session ends: its display shows the final screen and says so, without a cell to show it in.
    kernel.run("%uexec -s painter hello")
    ended = kernel.messages_until(
        lambda msg: msg["msg_type"] == "update_display_data" and msg["content"]["transient"]["display_id"] == display_id,
        lambda msg: "exited" in msg["content"]["data"]["text/html"],
    )[-1]["content"]["data"]
    assert "got hello" in ended["text/html"] and "red-alert" in ended["text/html"]
    assert VIEW in ended and "got hello" in ended["text/plain"]
    state = kernel.run("print(painted.screen_html == painted._repr_mimebundle_()[0]['text/html'].split('<div')[0])")
    assert state.strip() == "True"


def test_a_session_that_printed_vims_private_sgr_shows_live_and_saved(kernel):
    # vim prints ESC[?4m at start; pyte's screen refused it with a traceback instead of a view.
    program = "sh -c 'printf \"before\\033[?4m\\033[?1;2m\\033[>4;2m vim-%s\\n\" done; sleep 30'"
    kernel.run(f"%%uexec --name vimlike -t 5000 --until vim-done\n{program}\n")
    shown = kernel.execute(
        "from unified_exec_kernel.live.widget import TerminalWidget\n"
        "from unified_exec_kernel.jupyter.current import current_manager\n"
        "TerminalWidget(current_manager().session('vimlike').session_id)"
    )
    assert shown.error is None and "Traceback" not in shown.text, shown.text
    data = displays_of(shown.messages)[0]["data"]
    assert "before vim-done" in data["text/html"] and "before vim-done" in data["text/plain"]


def test_the_saved_screen_follows_the_session_while_it_prints_without_a_cell(kernel):
    program = "sh -c 'echo first-$((1+1)); sleep 2; echo later-$((6*7)); sleep 30'"
    data, _ = show_live(kernel, f"%%uexec --live -t 500 --until first-2\n{program}\n")
    model_id = data[VIEW]["model_id"]
    # No cell runs from here: what prints still reaches the widget's saved screen, a few seconds behind at most.
    started = time.monotonic()
    kernel.comm_messages(
        model_id, lambda d: d.get("method") == "update" and "later-42" in d.get("state", {}).get("screen_html", ""), timeout=10
    )
    assert time.monotonic() - started < 7
    # The displays are left alone meanwhile (an update renders the view again under someone's keys).
    state = kernel.run("import gc\nfrom unified_exec_kernel.live.widget import TerminalWidget\n"
                       "w = [o for o in gc.get_objects() if isinstance(o, TerminalWidget) and 'later-42' in o.screen_html][-1]\n"
                       "print('first-2' in w.screen_html, w.alive)")
    assert state.strip() == "True True"


def test_each_display_says_which_session_it_shows_for_a_page_whose_model_is_gone(kernel):
    """reattach.ts finds the session by this after Restart Kernel and a reload (issue 38, item 2)."""
    kernel.run("%%uexec --name marked --shell -t 5000 --until ready\necho ready; exec cat\n")  # a script: it lives on in cat
    shown = kernel.execute(
        "from unified_exec_kernel.live.widget import TerminalWidget\n"
        "from unified_exec_kernel.jupyter.current import current_manager\n"
        "marked = TerminalWidget(current_manager().session('marked').session_id)\n"
        "marked"
    )
    assert shown.error is None, shown.text
    data = displays_of(shown.messages)[0]["data"]
    ref = data["application/vnd.uexec.session+json"]
    info = kernel.run("s = current_manager().session('marked'); print(s.session_id, repr(s.started)); print(marked.title)").splitlines()
    assert [ref["session_id"], ref["started"]] == [int(info[0].split()[0]), float(info[0].split()[1])], (ref, info)
    assert ref["title"] == info[1].strip() != "", (ref, info)
    assert isinstance(ref["kernel_id"], str)
