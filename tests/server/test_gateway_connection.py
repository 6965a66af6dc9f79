"""Behind a gateway, a kernel websocket that closes before it speaks never reaches the gateway.

A real Kernel Gateway on loopback and a real jupyter_server in gateway mode:
the first socket stands for Chromium's failed subprotocol handshake (opened
by the server, closed by the browser without a word), the second for the
one JupyterLab opens next with the same session id.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from ..kernel_ws import Channels
from ..server_process import JupyterServer
from ..test_gateway import gateway  # noqa: F401 - the module's Kernel Gateway, on loopback


async def test_a_socket_closed_before_it_speaks_never_reaches_the_gateway_and_the_next_one_works(gateway, tmp_path):  # noqa: F811
    server = JupyterServer(tmp_path, f"--gateway-url=http://127.0.0.1:{gateway.port}", f"--GatewayClient.auth_token={gateway.token}")
    try:
        kernel = server.api("POST", "api/kernels", {"name": "uexec"})
        session = uuid.uuid4().hex
        url = f"{server.ws}api/kernels/{kernel['id']}/channels?session_id={session}"
        request = HTTPRequest(url, headers={"Authorization": f"token {server.token}"}, connect_timeout=10, request_timeout=30)
        silent = await asyncio.wait_for(websocket_connect(request), 30)
        silent.close()

        channels = await Channels.connect(url, server.token)
        try:
            reply, text = await channels.execute("print(6 * 7)", timeout=60)
        finally:
            channels.close()
        assert reply["status"] == "ok" and text.strip() == "42", (reply, text)
        # One socket of that session reached the gateway: no orphan whose ZMQ identity (the session)
        # could take the kernel's replies from the one in use.
        log = gateway.log.read_text(errors="replace")
        opened = [line for line in log.splitlines() if f"101 GET /api/kernels/{kernel['id']}/channels?session_id={session}" in line]
        assert len(opened) == 1, opened
        assert f"Replacing stale connection: {kernel['id']}:{session}" not in log
        assert "a kernel's gateway connection opens on its client's first message" in server.log_tail(200_000)
    finally:
        server.stop()


PROBE = r'''
import json, sys
from jupyter_server.serverapp import ServerApp

app = ServerApp()
app.initialize(argv=["--ServerApp.root_dir=" + sys.argv[1], *sys.argv[2:]], new_httpserver=False)
print(json.dumps(app.web_app.settings["kernel_websocket_connection_class"].__name__))
'''


def connection_class(tmp_path, *options: str) -> str:
    run = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), *options], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_only_jupyter_servers_own_gateway_connection_is_replaced(tmp_path):
    gateway = "--gateway-url=http://127.0.0.1:9"  # never asked: the class is chosen at start
    assert connection_class(tmp_path, gateway) == "FirstMessageGatewayConnection"
    assert connection_class(tmp_path) == "ZMQChannelsWebsocketConnection"
    # A deployment's own class stays.
    custom = "--ServerApp.kernel_websocket_connection_class=jupyter_server.services.kernels.connection.channels.ZMQChannelsWebsocketConnection"
    assert connection_class(tmp_path, gateway, custom) == "ZMQChannelsWebsocketConnection"
    disabled = "--ServerApp.jpserver_extensions=unified_exec_kernel=False"
    assert connection_class(tmp_path, gateway, disabled) == "GatewayWebSocketConnection"
