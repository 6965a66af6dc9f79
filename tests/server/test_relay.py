"""The direct channel's relay in a real Jupyter server: who may open it, and what it carries.

One `jupyter server` under a non-root base_url, with a token, its runtime
directory private and short (as Jupyter's own is), and tornado's websocket
client as the page. Kernels are started through the REST API and sessions
through the kernel's own websocket, as JupyterLab does.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import shutil
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from unified_exec_kernel.protocol import frames
from unified_exec_kernel.server.relay import NO_CHANNEL

from ..kernel_ws import Channels
from ..server_process import JupyterServer

pytestmark = pytest.mark.timeout(180)

BASE_URL = "/under/base/"


class Server(JupyterServer):
    def channel_url(self, kernel_id: str, token: str | None = "own") -> str:
        url = f"{self.ws}uexec/kernels/{kernel_id}/channel"
        token = self.token if token == "own" else token
        return url if token is None else f"{url}?token={token}"

    async def open_channel(self, kernel_id: str, token: str | None = "own", headers: dict | None = None):
        request = HTTPRequest(self.channel_url(kernel_id, token), headers=headers or {}, connect_timeout=10, request_timeout=30)
        return await asyncio.wait_for(websocket_connect(request), 30)


@pytest.fixture(scope="module")
def server():
    folder = Path(tempfile.mkdtemp(prefix="uexec-relay-"))  # short: the kernel's socket sits beside its connection file
    running = Server(folder, base_url=BASE_URL)
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def kernel_id(server):
    return server.api("POST", "api/kernels", {"name": "uexec"})["id"]


@pytest.fixture(scope="module")
def shell_id(server, kernel_id):
    """A bash session in the module's kernel, started with a cell over the kernel's websocket."""
    return asyncio.run(run_cell(server, kernel_id, "%%uexec --name shell -t 500\nbash --norc --noprofile -i\n"))


async def run_cell(server, kernel_id: str, code: str) -> int:
    """Run a `%%uexec` cell in that kernel; the id of the session it started."""
    channels = await Channels.connect(f"{server.ws}api/kernels/{kernel_id}/channels", server.token)
    try:
        reply, text = await channels.execute(code)
        assert reply["status"] == "ok", text
        found = re.search(r"\[session (\d+) ", text)
        assert found, text
        return int(found[1])
    finally:
        channels.close()


async def next_message(ws, timeout: float = 15):
    message = await asyncio.wait_for(ws.read_message(), timeout)
    assert message is not None, f"the channel closed ({ws.close_code} {ws.close_reason})"
    return message


async def next_text(ws, wanted=lambda m: True, timeout: float = 15) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        message = await next_message(ws, max(deadline - time.monotonic(), 0.01))
        if isinstance(message, str) and wanted(parsed := json.loads(message)):
            return parsed


async def attach(ws, session_id: int) -> dict:
    ws.write_message(json.dumps({"type": "attach", "request_id": "a", "session_id": session_id}))
    attached = await next_text(ws, lambda m: m.get("request_id") == "a")
    assert attached["type"] == "attached", attached
    return attached


def keys(session_id: int, data: bytes) -> bytes:
    """An `I` frame as the page sends it: kind byte, then the payload (no length)."""
    return frames.INPUT + frames.INPUT_HEADER.pack(session_id) + data


async def echo_of(ws, session_id: int, pattern: str, timeout: float = 15) -> str:
    text = ""
    deadline = time.monotonic() + timeout
    while not re.search(pattern, text):
        assert time.monotonic() < deadline, f"no {pattern!r} in {text[-300:]!r}"
        message = await next_message(ws, max(deadline - time.monotonic(), 0.01))
        if isinstance(message, bytes):
            assert message[:1] == frames.OUTPUT, message[:20]
            sid, _offset, _skipped, data = frames.read_output(message[1:])
            if sid == session_id:
                text += data.decode()
    return text


# -- what it carries ------------------------------------------------------------------


async def test_the_relay_carries_hello_attach_keys_and_echo_under_the_base_url(server, kernel_id, shell_id):
    ws = await server.open_channel(kernel_id)
    try:
        hello = json.loads(await next_message(ws))
        assert hello["type"] == "hello" and hello["carrier"] == "direct", hello
        attached = await attach(ws, shell_id)
        assert attached["session_id"] == shell_id and attached["alive"]
        ws.write_message(keys(shell_id, b"echo relayed-$((6*7))\r"), binary=True)
        await echo_of(ws, shell_id, r"[\r\n]relayed-42\r\n")
    finally:
        ws.close()
    assert f"direct channel open to kernel {kernel_id}" in server.log_tail()


async def test_a_flood_arrives_whole_through_the_relay_with_acks(server, kernel_id, shell_id):
    ws = await server.open_channel(kernel_id)
    try:
        await next_message(ws)  # hello
        end = acked = (await attach(ws, shell_id))["offset"]
        ws.write_message(keys(shell_id, b"seq 1 200000; echo flood-$((1+1))-done\r"), binary=True)
        text = ""
        deadline = time.monotonic() + 60
        while not re.search(r"[\r\n]flood-2-done\r\n", text):
            assert time.monotonic() < deadline, text[-300:]
            message = await next_message(ws)
            if isinstance(message, str):
                continue
            _sid, offset, skipped, data = frames.read_output(message[1:])
            assert offset - skipped == end and skipped == 0, (offset, skipped, end)
            end = offset + len(data)
            text += data.decode()
            if end - acked >= 64 * 1024:
                ws.write_message(json.dumps({"type": "ack", "session_id": shell_id, "end": end}))
                acked = end
        assert "".join(f"{n}\r\n" for n in range(1, 200001)) in text
    finally:
        ws.close()


async def test_a_kernel_without_a_socket_closes_with_4404(server):
    plain = server.api("POST", "api/kernels", {"name": "python3"})["id"]  # no uexec extension: no socket
    try:
        ws = await server.open_channel(plain)
        assert await asyncio.wait_for(ws.read_message(), 15) is None
        assert ws.close_code == NO_CHANNEL and ws.close_reason == "no channel"
    finally:
        server.api("DELETE", f"api/kernels/{plain}")


async def test_the_channel_closes_when_the_kernel_shuts_down(server):
    doomed = server.api("POST", "api/kernels", {"name": "uexec"})["id"]
    await run_cell(server, doomed, "%%uexec -t 0\nsleep 60\n")
    ws = await server.open_channel(doomed)
    assert json.loads(await next_message(ws))["type"] == "hello"
    server.api("DELETE", f"api/kernels/{doomed}")
    deadline = time.monotonic() + 30
    while (message := await asyncio.wait_for(ws.read_message(), 30)) is not None:
        assert time.monotonic() < deadline, message
    assert ws.close_code is not None


OPEN_CONNECTIONS = """\
import gc
from unified_exec_kernel.protocol.direct import DirectConnection
print("open:", sum(isinstance(o, DirectConnection) and o.transport is not None and not o.transport.is_closing() for o in gc.get_objects()))
"""


async def test_closing_the_websocket_closes_the_kernels_side(server, kernel_id, shell_id):
    async def open_in_kernel() -> int:
        channels = await Channels.connect(f"{server.ws}api/kernels/{kernel_id}/channels", server.token)
        try:
            reply, text = await channels.execute(OPEN_CONNECTIONS)
            assert reply["status"] == "ok", text
            return int(re.search(r"open: (\d+)", text)[1])
        finally:
            channels.close()

    async def until_open_in_kernel(count: int) -> None:
        deadline = time.monotonic() + 15
        while (now := await open_in_kernel()) != count:
            assert time.monotonic() < deadline, f"{now} connections open in the kernel, not {count}"
            await asyncio.sleep(0.1)

    # Earlier tests closed their websockets; the kernel's side of each may still be closing.
    await until_open_in_kernel(0)
    ws = await server.open_channel(kernel_id)
    await next_message(ws)  # hello
    await attach(ws, shell_id)
    assert await open_in_kernel() == 1
    ws.close()
    await until_open_in_kernel(0)


# -- who may open it ------------------------------------------------------------------


async def refused(server, kernel_id: str, token: str | None = "own", headers: dict | None = None) -> int:
    with pytest.raises(HTTPClientError) as error:
        ws = await server.open_channel(kernel_id, token, headers)
        ws.close()
    return error.value.code


async def test_no_token_or_a_wrong_one_is_refused(server, kernel_id, shell_id):
    assert await refused(server, kernel_id, token=None) == 403
    assert await refused(server, kernel_id, token=secrets.token_hex(16)) == 403
    # the token in a header works as well as in the query (the positive control)
    ws = await server.open_channel(kernel_id, token=None, headers={"Authorization": f"token {server.token}"})
    assert json.loads(await next_message(ws))["type"] == "hello"
    ws.close()


async def test_a_forged_or_foreign_kernel_id_is_refused(server, kernel_id):
    assert await refused(server, str(uuid.uuid4())) == 404  # a kernel this server does not run
    assert await refused(server, "../../etc") == 404
    assert await refused(server, kernel_id.upper().replace("-", "_")) == 404


def login_cookie(server) -> str:
    """The login cookie a browser holds once it opened the server with its token."""
    with urllib.request.urlopen(f"{server.http}api/status?token={server.token}", timeout=30) as response:
        cookies = response.headers.get_all("Set-Cookie") or []
    jar = "; ".join(cookie.split(";")[0] for cookie in cookies if cookie.startswith("username-"))
    assert jar, cookies
    return jar


async def test_a_cross_origin_websocket_is_refused(server, kernel_id):
    """A page elsewhere that the browser sends the user's cookie from is refused, as on the kernel's own websocket.

    (A token, which such a page cannot know, skips jupyter_server's origin check on
    both routes: the token is the proof.)
    """
    cookie = {"Cookie": login_cookie(server)}
    own = {**cookie, "Origin": f"http://127.0.0.1:{server.port}"}
    ws = await server.open_channel(kernel_id, token=None, headers=own)  # the positive control
    assert json.loads(await next_message(ws))["type"] == "hello"
    ws.close()
    evil = {**cookie, "Origin": "http://evil.example"}
    assert await refused(server, kernel_id, token=None, headers=evil) == 403
    with pytest.raises(HTTPClientError) as kernel_route:
        request = HTTPRequest(f"{server.ws}api/kernels/{kernel_id}/channels", headers=evil, connect_timeout=10, request_timeout=30)
        (await asyncio.wait_for(websocket_connect(request), 30)).close()
    assert kernel_route.value.code == 403


async def test_the_route_is_only_under_the_base_url(server, kernel_id):
    url = f"ws://127.0.0.1:{server.port}/uexec/kernels/{kernel_id}/channel?token={server.token}"
    with pytest.raises(HTTPClientError) as error:
        ws = await asyncio.wait_for(websocket_connect(HTTPRequest(url, connect_timeout=10, request_timeout=30)), 30)
        ws.close()
    assert error.value.code == 404
