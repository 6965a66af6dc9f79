"""Sessions keep running while a cell runs Python: the engine reads them on its own thread.

Each scenario would deadlock if the sessions were read on the kernel's main
loop (a program blocks once ~64 KB are unread, and the cell waits for it), so
each waits on a condition with a bounded deadline instead of timing anything:
a stall shows as the busy cell giving up, never as a slow figure.
"""

from __future__ import annotations

import re
import shlex

import pytest

from .conftest import free_port
from .kernel_harness import Kernel

ENGINE = "uexec-engine"
BUSY_UNTIL = """\
import os, time
deadline = time.monotonic() + 30
while not os.path.exists({path!r}) and time.monotonic() < deadline:
    pass  # pure Python: the main thread never lets go
print("finished" if os.path.exists({path!r}) else "stalled")
"""
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    yield k
    k.shutdown()


def engine_threads(kernel: Kernel) -> int:
    text = kernel.run(f"import threading\nprint(sum(t.name == {ENGINE!r} for t in threading.enumerate()))")
    return int(text.strip().splitlines()[-1])


def test_a_program_writing_while_a_cell_computes_is_never_blocked_and_loses_nothing(kernel, tmp_path):
    done = tmp_path / "done"
    # ~104 KB: more than a PTY holds unread, less than the 128 KiB request buffer.
    program = f"for i in range(2000): print(f'{{i:05d}} ' + 'x' * 44)\nopen({str(done)!r}, 'w').close()"
    kernel.run(f"%%uexec --name writer -t 0 --out first\npython3 -c {shlex.quote(program)}\n")
    busy = kernel.execute(BUSY_UNTIL.format(path=str(done)), timeout=60)
    assert "finished" in busy.text, busy.text
    kernel.run("%%uexec -s writer -t 10000 --out rest\n")
    check = kernel.run(
        "lines = (first.output + rest.output).replace('\\r\\n', '\\n').splitlines()\n"
        "print(len(lines), lines == [f'{i:05d} ' + 'x' * 44 for i in range(2000)], first.dropped_bytes + rest.dropped_bytes, rest.exit_code)"
    )
    assert check.split()[-4:] == ["2000", "True", "0", "0"], check


def test_a_server_in_a_session_answers_a_cell_that_makes_it_log_2000_lines(kernel, tmp_path):
    port = free_port()
    kernel.run(f"%%uexec --name web --until 'Serving HTTP' -t 30000\npython3 -m http.server {port} --bind 127.0.0.1 --directory {tmp_path}\n")
    try:
        # Each request logs a line (~90 bytes): 180 KB that nobody reads until the cell ends.
        answered = kernel.execute(
            "import urllib.request\n"
            f"for i in range(2000):\n    urllib.request.urlopen('http://127.0.0.1:{port}/?request=%d' % i, timeout=20).read()\n"
            "print('answered', i + 1)\n",
            timeout=120,
        )
        assert answered.error is None and "answered 2000" in answered.text, answered.text
        log = kernel.run("%%uexec -s web -t 1000 --raw\n")
        assert "GET /?request=1999 " in log
    finally:
        kernel.run("%uexec_kill web")


def test_comm_input_and_output_flow_over_a_subshell_while_a_cell_computes(kernel, tmp_path):
    subshell = kernel.create_subshell()
    comm_id = kernel.comm_open("unified_exec", subshell=subshell)
    kernel.comm_messages(comm_id, lambda data: data.get("type") == "hello")
    kernel.comm_send(comm_id, {"type": "exec", "request_id": 1, "input_chunks": ["bash", "--norc", "-i"], "timeout_ms": 20000}, subshell=subshell)
    started = kernel.comm_messages(comm_id, lambda data: data.get("type") == "result" and data.get("request_id") == 1)[-1]
    sid = started["session_id"]
    done = tmp_path / "typed"
    busy = kernel.start_execute(BUSY_UNTIL.format(path=str(done)))
    kernel.comm_send(comm_id, {"type": "exec", "request_id": 2, "session_id": sid, "input_chunks": [f"touch {done}; echo typed-while-busy\n"]}, subshell=subshell)
    answer = kernel.comm_messages(comm_id, lambda data: data.get("type") == "result" and data.get("request_id") == 2)[-1]
    assert "typed-while-busy" in answer["output"]
    assert "finished" in kernel.finish_execute(busy).text
    kernel.comm_send(comm_id, {"type": "kill", "request_id": 3, "session_id": sid}, subshell=subshell)
    kernel.comm_messages(comm_id, lambda data: data.get("request_id") == 3)
    kernel.comm_close(comm_id)
    kernel.delete_subshell(subshell)


def test_a_live_view_types_while_a_cell_computes_after_its_subshell_was_deleted(kernel, tmp_path):
    kernel.run("%%uexec --name lv\nbash --norc -i\n")
    shown = kernel.execute("%%uexec --live -s lv -t 100\n")
    model_id = next(m["content"]["data"][WIDGET_VIEW]["model_id"] for m in shown.messages if WIDGET_VIEW in m["content"].get("data", {}))

    def custom(content: dict, subshell: str) -> None:
        kernel.comm_send(model_id, {"method": "custom", "content": content}, subshell=subshell)

    def answered(kind: str):
        return lambda data: data.get("method") == "custom" and data.get("content", {}).get("type") == kind

    # A notebook's view attaches over its subshell, then the notebook is closed (its subshell deleted)...
    first = kernel.create_subshell()
    custom({"type": "attach", "request_id": "a1"}, first)
    kernel.comm_messages(model_id, answered("attached"))
    kernel.delete_subshell(first)
    # ...and reopened: a new subshell types into the same view while a cell computes.
    second = kernel.create_subshell()
    done = tmp_path / "from-the-view"
    busy = kernel.start_execute(BUSY_UNTIL.format(path=str(done)))
    custom({"type": "input", "data": f"touch {done}; echo echoed-while-busy\r"}, second)
    seen: list[str] = []

    def echoed(data) -> bool:
        if answered("data")(data):
            seen.append(data["content"]["data"])
        return re.search(r"(^|[\r\n])echoed-while-busy\r?\n", "".join(seen)) is not None  # the output, not the typed line

    kernel.comm_messages(model_id, echoed)
    assert "finished" in kernel.finish_execute(busy).text
    kernel.delete_subshell(second)
    kernel.run("%uexec_kill lv")


def test_one_engine_thread_while_sessions_exist_none_after_unload_and_no_growth_over_300_sessions():
    kernel = Kernel("uexec")
    try:
        assert engine_threads(kernel) == 0  # started with the first session, not before
        kernel.run("%%uexec --name kept\nbash --norc -i\n")
        assert engine_threads(kernel) == 1
        kernel.run("%reset -f")  # the user's names go; sessions and the engine stay
        assert engine_threads(kernel) == 1
        assert "still-here" in kernel.run("%uexec -s kept echo still-here")

        counts = kernel.run(
            "import asyncio, os, threading\n"
            "from unified_exec_kernel.jupyter.current import current_engine\n"
            "manager, bridge = current_engine()\n"
            "def links():\n"
            "    for fd in os.listdir('/proc/self/fd'):\n"
            "        try:\n            yield os.readlink(f'/proc/self/fd/{fd}')\n"
            "        except OSError:  # closed meanwhile\n            pass\n"
            "def fds():  # not IPython's history database, whose -journal file comes and goes with its commits\n"
            "    return sorted(link for link in links() if 'history.sqlite' not in link)\n"
            "def counts():\n    return len(fds()), threading.active_count()\n"
            "for _ in range(10):  # the first sessions also start the guardian and its pipe\n"
            "    await bridge.run(manager.start, ['true'])\n"
            "await asyncio.sleep(0.5)\n"
            "before, held = counts(), fds()\n"
            "for _ in range(300):\n    await bridge.run(manager.start, ['true'])\n"
            "for _ in range(200):\n"
            "    if counts()[0] <= before[0]:\n        break\n"
            "    await asyncio.sleep(0.05)  # closing the last sessions lets go of their fds\n"
            "print(before, counts(), sorted(set(fds()) - set(held)))\n"
        )
        (fds_before, threads_before), (fds_after, threads_after) = [tuple(map(int, pair)) for pair in re.findall(r"\((\d+), (\d+)\)", counts)]
        assert fds_after <= fds_before and threads_after == threads_before, counts

        kernel.run("%unload_ext unified_exec_kernel")
        assert wait_for_threads(kernel, 0)
        kernel.run("%load_ext unified_exec_kernel")
        kernel.run("%%uexec\ntrue\n")
        kernel.run("%reload_ext unified_exec_kernel")
        kernel.run("%%uexec\ntrue\n")
        assert wait_for_threads(kernel, 1)
    finally:
        kernel.shutdown()


def wait_for_threads(kernel: Kernel, expected: int, tries: int = 100) -> bool:
    """The count settles once an unload has closed its sessions on the engine (it does not block the cell)."""
    for _ in range(tries):
        if engine_threads(kernel) == expected:
            return True
        kernel.run("import time; time.sleep(0.05)")
    return False
