"""A Jupyter server extension: behind a gateway, a kernel websocket reaches the gateway on its client's first message.

A server in gateway mode (`--gateway-url`) speaks the legacy kernel websocket
protocol to the browser. JupyterLab asks for the v1 subprotocol first; the
server's upgrade names none, so Chromium fails that handshake and JupyterLab
opens a second socket at once, with the same `session_id`. By then
jupyter_server has already opened the first socket's own connection to the
gateway, and closing the browser's end cannot stop it: it arrives after the
second, an orphan under the same session. At the gateway both connections
open shell and control channels to the kernel with that session as their ZMQ
identity, and the kernel's ROUTER takes only one peer per identity: when
the orphan's wins, the notebook's requests and replies go nowhere. Its first
cell stays `[*]`, or a second connection (the notifier's) never hears, until
the orphan is dropped on its ping timeout (90 s). Seen in about one in ten
runs of tests/browser/test_remote_kernels.py here.

A socket whose handshake failed never sends a message; every front end
sends one (a `kernel_info_request`) as it opens. So the connection to the
gateway starts with the first message, and a socket closed before it ever
reaches the gateway. Only jupyter_server's own gateway connection class is
replaced, never one a deployment configured.
"""

from __future__ import annotations

import asyncio


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.gateway.connections import GatewayWebSocketConnection  # the server's, not the package's dependency

    settings = serverapp.web_app.settings
    if settings.get("kernel_websocket_connection_class") is GatewayWebSocketConnection:
        settings["kernel_websocket_connection_class"] = _on_first_message(GatewayWebSocketConnection)
        serverapp.log.info("unified_exec_kernel: a kernel's gateway connection opens on its client's first message")


def _on_first_message(base: type) -> type:
    class FirstMessageGatewayConnection(base):
        """jupyter_server's gateway connection, opened on the client's first message instead of its websocket's open."""

        _held: list[str] | None = None
        """What the client sent before the gateway's connection started; None once it has."""
        _opening: asyncio.Task | None = None

        async def connect(self):
            if self._opening is None:
                self._held = []  # the websocket is open: wait for the client to speak
            else:
                await super().connect()  # the base class reconnecting after the gateway dropped its socket

        def handle_incoming_message(self, message: str) -> None:
            if self._held is None:
                super().handle_incoming_message(message)
                return
            self._held.append(message)
            if self._opening is None:
                self._opening = asyncio.ensure_future(self._open())

        async def _open(self) -> None:
            if self.disconnected:  # the client left before this ran: nothing to reach
                return
            await super().connect()  # starts the gateway's socket; the base class queues what comes before it is up
            held, self._held = self._held, None
            for message in held:
                super().handle_incoming_message(message)

    return FirstMessageGatewayConnection
