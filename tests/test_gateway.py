"""uexec kernels behind Jupyter Kernel Gateway: cells, the comm protocol and shutdown over its REST API and websocket.

The gateway runs as a subprocess on loopback, with a token; every kernel is
started with `POST /api/kernels` and driven only through
`/api/kernels/<id>/channels`, in the Jupyter websocket JSON protocol, the way
a notebook server in gateway mode (`--gateway-url`) would drive it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from unified_exec_kernel.jupyter.remote import kept_sessions_here
from unified_exec_kernel.server.relay import REMOTE_KERNEL

from .conftest import free_port, session_processes
from .kernel_ws import Channels
from .server_process import JupyterServer

STATUS_LINE = re.compile(r"\[session (\d+) running · [0-9.]+ s\]")


# -- the gateway -----------------------------------------------------------------


class Gateway:
    def __init__(self, port: int, token: str, log: Path, process: subprocess.Popen):
        self.port, self.token, self.log, self.process = port, token, log, process
        self.url = f"http://127.0.0.1:{port}"

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 15) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")


def gateway_command() -> list[str]:
    entry_point = Path(sys.executable).with_name("jupyter-kernelgateway")
    if entry_point.exists():
        return [str(entry_point)]
    return [sys.executable, "-m", "jupyter", "kernelgateway"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    if importlib.util.find_spec("kernel_gateway") is None:
        pytest.fail("jupyter_kernel_gateway is not installed (it is in the test extra: pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("gateway")
    port, token = free_port(), secrets.token_hex(16)
    log = folder / "gateway.log"
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    env = {name: value for name, value in env.items() if not name.startswith("KG_")}  # no stray gateway settings
    command = [
        *gateway_command(),
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={port}",
        "--KernelGatewayApp.port_retries=0",
        "--KernelGatewayApp.default_kernel_name=uexec",
        f"--KernelGatewayApp.auth_token={token}",
        # GET /api/kernels answers 403 without it, and a notebook server in gateway mode needs that list.
        "--JupyterWebsocketPersonality.list_kernels=True",
        "--KernelGatewayApp.log_level=DEBUG",  # each kernel message's activity: where a lost one was lost
    ]
    with open(log, "wb") as log_file:
        process = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT)
    gw = Gateway(port, token, log, process)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"the gateway exited with code {process.returncode} before answering:\n{gw.log_tail()}")
            try:
                status, specs = gw.request("GET", "/api/kernelspecs", timeout=2)
                if status == 200 and "uexec" in specs["kernelspecs"]:
                    assert specs["default"] == "uexec"
                    break
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the gateway did not list the uexec kernelspec within 30 s:\n{gw.log_tail()}")
            time.sleep(0.2)
        yield gw
    finally:
        process.terminate()  # the gateway shuts its kernels down on SIGTERM
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
def kernel_env() -> dict[str, str]:
    """The `env` of the kernel's POST: Kernel Gateway hands its `KERNEL_*` entries to the kernel."""
    return {}


@pytest.fixture
def kernel_id(gateway, kernel_env):
    status, model = gateway.request("POST", "/api/kernels", {"name": "uexec", "env": kernel_env})
    assert status == 201, f"{status} {model}\n{gateway.log_tail()}"
    try:
        yield model["id"]
    finally:
        try:
            gateway.request("DELETE", f"/api/kernels/{model['id']}")  # 404 when the test already deleted it
        except OSError:
            pass  # the gateway is gone; stopping it ends its kernels anyway


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _channels(gateway: Gateway, kernel_id: str):
    return Channels.connect(f"ws://127.0.0.1:{gateway.port}/api/kernels/{kernel_id}/channels", gateway.token)


# -- the tests -----------------------------------------------------------------------


async def test_a_session_lives_across_cells_behind_the_gateway(gateway, kernel_id):
    channels = await _channels(gateway, kernel_id)
    try:
        reply, text = await channels.execute("%%uexec -t 1500\nbash --norc -i\n")
        assert reply["status"] == "ok", text
        started = STATUS_LINE.search(text)
        assert started, text
        sid = int(started.group(1))

        reply, text = await channels.execute(f"%%uexec -s {sid}\nexport V=gateway\n")
        assert reply["status"] == "ok" and f"[session {sid} running" in text, text

        reply, text = await channels.execute(f"%%uexec -s {sid}\necho $V\n")
        assert reply["status"] == "ok", text
        assert "gateway" in [line.strip() for line in text.splitlines()], text  # the output line, not the typed `echo $V`
        assert f"[session {sid} running" in text, text
    finally:
        channels.close()


async def test_the_comm_protocol_drives_a_live_session_through_the_gateway_websocket(gateway, kernel_id):
    channels = await _channels(gateway, kernel_id)
    try:
        comm = await channels.open_unified_exec()
        result = await channels.ask(comm, {"type": "exec", "request_id": "start", "session_id": None,
                                           "input_chunks": ["bash", "--norc", "-i"], "timeout_ms": 500})
        assert result["type"] == "result" and isinstance(result["session_id"], int), result
        sid = result["session_id"]

        attached = await channels.ask(comm, {"type": "attach", "request_id": "view", "session_id": sid})
        assert attached["type"] == "attached" and attached["session_id"] == sid and attached["alive"], attached
        deadline = time.monotonic() + 10
        replayed = await channels.comm_next(comm, lambda d: d.get("type") == "data" and d.get("request_id") == "view", deadline, "replayed data")
        assert replayed["session_id"] == sid and replayed["offset"] == attached["offset"]

        channels.comm_send(comm, {"type": "input", "session_id": sid, "data": "echo $((6*7))\r"})
        live, seen = "", []
        while not re.search(r"[\r\n]42\r\n", live):  # the typed line echoes `$((6*7))`; only the answer is a line of 42
            event = await channels.comm_next(comm, lambda d: d.get("type") == "data" and d.get("request_id") is None, deadline, f"live 42 (saw {seen})")
            assert event["session_id"] == sid
            seen.append(event["data"])
            live += event["data"]
        assert any("42" in data for data in seen), seen

        killed = await channels.ask(comm, {"type": "kill", "request_id": "stop", "session_id": sid})
        assert killed == {"type": "ok", "request_id": "stop", "session_id": sid}
    finally:
        channels.close()


async def test_deleting_the_kernel_through_the_gateway_ends_its_sessions(gateway, kernel_id):
    channels = await _channels(gateway, kernel_id)
    try:
        comm = await channels.open_unified_exec()
        shell = await channels.ask(comm, {"type": "exec", "request_id": 1, "session_id": None,
                                          "input_chunks": ["bash", "--norc", "-i"], "timeout_ms": 300})
        # A background job: a process of the session that is not its leader.
        await channels.ask(comm, {"type": "exec", "request_id": 2, "session_id": shell["session_id"],
                                  "input_chunks": ["sleep 300 &\n"], "timeout_ms": 300})
        await channels.ask(comm, {"type": "exec", "request_id": 3, "session_id": None, "input_chunks": ["sleep", "300"], "timeout_ms": 0})
        reply, kernel_pid = await channels.execute("import os; print(os.getpid())")
        assert reply["status"] == "ok", kernel_pid
        kernel_pid = int(kernel_pid)
        sessions = (await channels.ask(comm, {"type": "list", "request_id": 4}))["sessions"]
    finally:
        channels.close()
    pids = [s["pid"] for s in sessions if s["alive"]]
    assert len(pids) == 2, sessions
    deadline = time.monotonic() + 5
    while True:  # bash + its job, and sleep: what the check below must see go away
        before = {pid: session_processes(pid) for pid in pids}
        if sorted(len(found) for found in before.values()) == [1, 2]:
            break
        assert time.monotonic() < deadline, before
        await asyncio.sleep(0.1)

    status, running = gateway.request("GET", "/api/kernels")
    assert status == 200 and kernel_id in [k["id"] for k in running], running
    status, _ = gateway.request("DELETE", f"/api/kernels/{kernel_id}")
    assert status == 204, gateway.log_tail()

    deadline = time.monotonic() + 10
    while True:
        left = {pid: session_processes(pid) for pid in pids}
        kernel_alive = alive(kernel_pid)
        if not any(left.values()) and not kernel_alive:
            break
        assert time.monotonic() < deadline, f"still running 10 s after DELETE: sessions {left}, kernel {kernel_alive}"
        await asyncio.sleep(0.2)
    status, _ = gateway.request("GET", f"/api/kernels/{kernel_id}")
    assert status == 404
    status, running = gateway.request("GET", "/api/kernels")
    assert kernel_id not in [k["id"] for k in running], running


async def test_a_server_in_gateway_mode_offers_no_direct_channel_and_the_view_keeps_the_kernel_websocket(gateway, tmp_path):
    """The kernel runs at the gateway: the server has no connection file of it, so its relay closes with 4421
    (the page goes to the kernel's messages at once, not after asking again as a starting kernel's 4404 has it)."""
    server = JupyterServer(tmp_path, f"--gateway-url=http://127.0.0.1:{gateway.port}", f"--GatewayClient.auth_token={gateway.token}")
    try:
        kernel = server.api("POST", "api/kernels", {"name": "uexec"})
        channels = await Channels.connect(f"{server.ws}api/kernels/{kernel['id']}/channels", server.token)
        try:  # a session, so the kernel at the gateway does listen on its own socket
            reply, text = await channels.execute("%%uexec -t 300\nbash --norc -i\n")
            assert reply["status"] == "ok" and STATUS_LINE.search(text), text
        finally:
            channels.close()
        request = HTTPRequest(f"{server.ws}uexec/kernels/{kernel['id']}/channel?token={server.token}", connect_timeout=10, request_timeout=30)
        ws = await asyncio.wait_for(websocket_connect(request), 30)
        assert await asyncio.wait_for(ws.read_message(), 15) is None
        assert (ws.close_code, ws.close_reason) == (REMOTE_KERNEL, "remote kernel")
    finally:
        server.stop()


async def test_keep_at_a_kernel_gateway_says_a_restart_keeps_the_session_and_one_does(gateway, kernel_id):
    channels = await _channels(gateway, kernel_id)
    try:
        reply, text = await channels.execute("%%uexec --keep --name kept -t 300\nbash --norc -i\n")
        assert reply["status"] == "ok" and STATUS_LINE.search(text), text
        said = kept_sessions_here({"KERNEL_GATEWAY": "1"})
        assert [line for line in text.splitlines() if line.startswith("[--keep")] == [said], text
        assert "outlive a restart" in said
    finally:
        channels.close()

    status, _ = gateway.request("POST", f"/api/kernels/{kernel_id}/restart", {}, timeout=60)
    assert status == 200, gateway.log_tail()
    channels = await _channels(gateway, kernel_id)
    try:  # the next kernel took the session back, as the line said
        comm = await channels.open_unified_exec(timeout=30)
        sessions = (await channels.ask(comm, {"type": "list", "request_id": "after"}))["sessions"]
        assert [(s["name"], s["alive"], s["kept"], s["restarts"]) for s in sessions] == [("kept", True, True, 1)], sessions
        killed = await channels.ask(comm, {"type": "kill", "request_id": "end", "session_id": sessions[0]["session_id"]})
        assert killed["type"] == "ok", killed
    finally:
        channels.close()


@pytest.mark.parametrize("kernel_env", [{"KERNEL_POD_NAME": "uexec-pod-7"}])
async def test_keep_in_an_enterprise_gateway_pod_says_in_one_line_that_a_restart_ends_kept_sessions(gateway, kernel_id):
    channels = await _channels(gateway, kernel_id)
    try:
        reply, text = await channels.execute("%%uexec --keep -t 300\nbash --norc -i\n")
        assert reply["status"] == "ok", text
        assert [line for line in text.splitlines() if line.startswith("[--keep")] == [
            "[--keep: Enterprise Gateway replaces this kernel's pod 'uexec-pod-7' on restart:"
            " kept sessions end with it]"
        ], text
        reply, text = await channels.execute("%%uexec -t 300\nbash --norc -i\n")  # no --keep: nothing to say
        assert reply["status"] == "ok" and "[--keep" not in text, text
    finally:
        channels.close()
