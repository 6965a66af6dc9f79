"""ReplayWidget over its real comm: the recording on request, never in its state; the last screen for pages without it."""

from __future__ import annotations

import json

import pytest

VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def kernel(uexec_kernel):
    return uexec_kernel


def custom_answer(kernel, model_id, content):
    kernel.comm_send(model_id, {"method": "custom", "content": content})
    return kernel.messages_until(
        lambda msg: msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == model_id,
        lambda msg: msg["content"]["data"].get("method") == "custom",
    )[-1]


def test_the_player_gets_the_recording_as_a_buffer_and_shows_its_last_screen_without_one(kernel, tmp_path):
    cast = tmp_path / "demo.cast"
    lines = [{"version": 2, "width": 40, "height": 5}, [0.1, "o", "\u001b[32mgreen\u001b[0m\r\n"], [0.2, "m", "step"], [0.3, "o", "$ "]]
    cast.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    shown = kernel.execute(f"%uexec_replay {cast}")
    assert shown.reply["status"] == "ok", shown.text
    bundles = [m["content"] for m in shown.messages if m["msg_type"] == "display_data"]
    assert len(bundles) == 1
    data = bundles[0]["data"]
    assert '<span style="color:#4e9a06">green</span>' in data["text/html"]
    assert "[replay: demo.cast, 1 commands" in data["text/plain"]
    model_id = data[VIEW]["model_id"]

    answer = custom_answer(kernel, model_id, {"type": "recording"})
    assert answer["content"]["data"]["content"] == {"type": "recording", "events": 2}
    events = json.loads(bytes(answer["buffers"][0]))
    assert [event[1:] for event in events] == [["o", "\u001b[32mgreen\u001b[0m\r\n"], ["o", "$ "]]

    refused = custom_answer(kernel, model_id, {"type": "attach"})
    assert refused["content"]["data"]["content"]["type"] == "error"
    assert "answers `recording` only" in refused["content"]["data"]["content"]["message"]

    # What a saved notebook keeps of it: the chapters and the last screen, not the events.
    state = kernel.run(
        "import gc\nfrom unified_exec_kernel.live.replay import ReplayWidget\n"
        "w = [o for o in gc.get_objects() if isinstance(o, ReplayWidget)][-1]\n"
        "s = w.get_state()\nprint(sorted(k for k in s if not k.startswith('_') and k not in ('layout', 'tabbable', 'tooltip')), s['chapters'], s['view'])"
    )
    assert state.strip() == (
        "['chapters', 'cols', 'duration', 'frontend_hash', 'rows', 'screen_html', 'title', 'view'] "
        "[{'index': 1, 'time': 0.2, 'label': 'step', 'exit_code': None}] player"
    )


def test_behind_a_gateway_the_recording_comes_as_text_for_no_buffer_reaches_the_page(kernel, tmp_path):
    cast = tmp_path / "gateway.cast"
    lines = [{"version": 2, "width": 40, "height": 5}, [0.1, "o", "é\r\n"], [0.3, "o", "$ "]]
    cast.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    kernel.run("import os\nos.environ['KERNEL_GATEWAY'] = '1'")
    try:
        shown = kernel.execute(f"%uexec_replay {cast}")
        assert shown.reply["status"] == "ok", shown.text
        model_id = next(m for m in shown.messages if m["msg_type"] == "display_data")["content"]["data"][VIEW]["model_id"]
        answer = custom_answer(kernel, model_id, {"type": "recording"})
    finally:
        kernel.run("del os.environ['KERNEL_GATEWAY']")
    assert answer["buffers"] == []
    content = answer["content"]["data"]["content"]
    assert (content["type"], content["events"]) == ("recording", 2)
    assert [event[1:] for event in json.loads(content["text"])] == [["o", "é\r\n"], ["o", "$ "]]


def test_a_recording_with_every_kind_of_escape_replays(kernel, tmp_path):
    cast = tmp_path / "vim.cast"
    noise = "\u001b[?4m\u001b[?1;2m\u001bP$qm\u001b\\\u001b]11;?\u0007\u001b[>c\u001b[?u\u001b[2 q"
    lines = [{"version": 2, "width": 40, "height": 5}, [0.1, "o", f"start{noise}end\r\n"]]
    cast.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    shown = kernel.execute(f"%uexec_replay {cast}")
    assert shown.reply["status"] == "ok" and "Traceback" not in shown.text, shown.text
    data = [m["content"] for m in shown.messages if m["msg_type"] == "display_data"][0]["data"]
    assert "startend" in data["text/html"] and "startend" in data["text/plain"]
