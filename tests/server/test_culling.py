"""A kernel that jupyter_server culls as idle says which sessions ended with it, and why (issue 38, 1).

A real `jupyter server` with our extension culls kernels idle for CULL_S;
a page listens on the kernel's direct channel through the server's relay
(as JupyterLab's notifications do). Two silent sessions run (silence does
not count as activity by default), so the kernel is culled: the page hears
`culled` for each, and the server's log names them beside the culler's own
line. Culled-ness is polled for with a bound.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from ..kernel_ws import Channels
from ..server_process import JupyterServer

pytestmark = pytest.mark.timeout(120)

CULL_S = 3


@pytest.fixture(scope="module")
def server():
    folder = Path(tempfile.mkdtemp(prefix="uexec-cull-"))  # short: the kernel's socket sits beside its connection file
    running = JupyterServer(folder, f"--MappingKernelManager.cull_idle_timeout={CULL_S}", "--MappingKernelManager.cull_interval=1",
                            "--MappingKernelManager.cull_connected=True")
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def run_cells(server: JupyterServer, kernel_id: str, *cells: str) -> None:
    channels = await Channels.connect(f"{server.ws}api/kernels/{kernel_id}/channels", server.token)
    try:
        for cell in cells:
            reply, text = await channels.execute(cell, timeout=60)
            assert reply["status"] == "ok" and ("[session" in text or "[exited with code 0" in text), text
    finally:
        channels.close()


async def culled_events(server: JupyterServer, kernel_id: str, count: int, timeout: float) -> list[dict]:
    """What a page listening on the kernel's direct channel hears of the cull: `count` `culled` events."""
    request = HTTPRequest(f"{server.ws}uexec/kernels/{kernel_id}/channel?token={server.token}", connect_timeout=10, request_timeout=30)
    ws = await asyncio.wait_for(websocket_connect(request), 30)
    heard: list[dict] = []
    try:
        deadline = time.monotonic() + timeout
        while len(heard) < count:
            message = await asyncio.wait_for(ws.read_message(), max(deadline - time.monotonic(), 0.01))
            assert message is not None, f"the channel closed before {count} culled events: {heard}\n{server.log_tail()}"
            if isinstance(message, str) and (event := json.loads(message)).get("event") == "culled":
                heard.append(event)
        return heard
    finally:
        ws.close()


def test_a_culled_kernel_tells_the_page_and_the_log_which_sessions_ended(server):
    kernel_id = server.api("POST", "api/kernels", {"name": "uexec"})["id"]
    asyncio.run(run_cells(server, kernel_id, "%%uexec --name train -t 0\nsleep 600\n", "%%uexec -t 0\nsleep 601\n"))
    events = asyncio.run(culled_events(server, kernel_id, 2, timeout=CULL_S + 20))
    events.sort(key=lambda e: e["session_id"])
    assert [(e["session_id"], e["name"], e["command"]) for e in events] == [(0, "train", ["sleep", "600"]), (1, None, ["sleep", "601"])], events
    for event in events:
        assert event["type"] == "session_event" and event["exit_code"] is None, event
        assert CULL_S <= event["idle_seconds"] < CULL_S + 20, event

    deadline = time.monotonic() + 20
    while kernel_id in {kernel["id"] for kernel in server.api("GET", "api/kernels")}:
        assert time.monotonic() < deadline, f"the kernel was not culled:\n{server.log_tail()}"
        time.sleep(0.25)
    line = re.search(rf"uexec: kernel {kernel_id} culled as idle after (\d+) s; its sessions end with it: (.*)", server.log.read_text())
    assert line, server.log_tail()
    assert CULL_S <= int(line[1]) < CULL_S + 20, line[0]
    assert line[2] == "0 'train' (sleep 600); 1 (sleep 601)", line[0]
    assert "killed by signal" not in server.log.read_text()


def test_a_kernel_culled_with_no_session_says_so_quietly(server):
    kernel_id = server.api("POST", "api/kernels", {"name": "uexec"})["id"]
    asyncio.run(run_cells(server, kernel_id, "%%uexec -t 5000\ntrue\n"))
    deadline = time.monotonic() + CULL_S + 20
    while f"uexec: kernel {kernel_id} culled as idle" not in server.log.read_text():
        assert time.monotonic() < deadline, f"nothing said of the cull:\n{server.log_tail()}"
        time.sleep(0.25)
    assert re.search(rf"uexec: kernel {kernel_id} culled as idle after \d+ s; no session was running", server.log.read_text()), server.log_tail()
