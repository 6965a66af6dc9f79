"""A Jupyter server extension: the live view's direct channel, a websocket relayed to the kernel's Unix socket.

A keystroke over the kernel's own websocket costs a `busy`/`idle` pair and
the whole ZMQ path (issue 18 measured ~5x a terminal's echo); the kernel
therefore listens on a Unix socket of its own (docs/protocol.md, "Direct
channel"), and this route carries the page's websocket to it:
`{base_url}uexec/kernels/{kernel_id}/channel`.

The route is as guarded as the kernel's websocket, because it reaches the
same sessions: the same handler bases as jupyter_server's
`KernelWebsocketHandler` (its identity provider, so tokens and cookies work
as they do there, and its origin check), `@ws_authenticated`, and the
authorizer asked for `execute` on `kernels`. A websocket upgrade is a GET, so
no XSRF check runs: the origin check and the authorization are the whole
defence. The socket's path comes only from the connection file of a kernel
this server runs (protocol/address.py), never from the client. A kernel
without one runs elsewhere (a gateway's): close code 4421, and the page uses
the comm at once. One without a listening socket gets 4404: it may listen
soon (a kernel starting, or restarting), so the page may ask again.

The relay parses nothing: a text message is a `T` frame's payload, a binary
message a frame's kind byte and payload; only the 4-byte length is added or
taken off. Backpressure both ways: the next websocket message is read only
once the socket has taken the last (drain), the next frame only once the
websocket has sent the last.
"""

from __future__ import annotations

import asyncio
import functools
import os

from ..protocol import frames
from ..protocol.address import find_socket

ROUTE = r"/uexec/kernels/(?P<kernel_id>\w+-\w+-\w+-\w+-\w+)/channel"
NO_CHANNEL = 4404
"""Close code: the kernel has no direct channel now (channel off, not started, restarting); use the comm."""
REMOTE_KERNEL = 4421
"""Close code: the kernel runs elsewhere (a gateway's) and never has a direct channel here; use the comm."""
KERNEL_GONE = 1001
SOCKET_HIGH_WATER = 256 * 1024
"""Bytes waiting for the kernel's socket past which the next websocket message waits."""


@functools.cache
def handler_class() -> type:
    """The websocket handler, made on first use: jupyter_server and tornado are the server's
    (a kernel-only install has neither, and imports this package's every module)."""
    from jupyter_core.utils import ensure_async
    from jupyter_server.auth.decorator import ws_authenticated
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.base.websocket import WebSocketMixin
    from tornado import web
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError, WebSocketHandler

    class DirectChannelHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):
        """One page's direct channel to one kernel; see the module docstring."""

        auth_resource = "kernels"

        def initialize(self) -> None:
            self._writer: asyncio.StreamWriter | None = None
            self._from_kernel: asyncio.Task | None = None

        def set_default_headers(self) -> None:
            """None of JupyterHandler's page headers: this is a websocket (as KernelWebsocketHandler)."""

        def get_compression_options(self):
            return None  # terminal output compresses well, but a keystroke's echo must not wait for zlib

        @ws_authenticated
        async def get(self, kernel_id: str):
            authorized = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "execute", "kernels"))
            if not authorized:
                raise web.HTTPError(403)
            if kernel_id not in self.kernel_manager:
                raise web.HTTPError(404, f"no kernel {kernel_id}")
            await super().get(kernel_id=kernel_id)

        async def open(self, kernel_id: str) -> None:
            super().open()  # WebSocketMixin's keep-alive pings
            self.set_nodelay(True)
            connection_file = self._connection_file(kernel_id)
            if connection_file is None:
                self.log.info("unified_exec_kernel: kernel %s runs elsewhere (a gateway's): no direct channel", kernel_id)
                self.close(REMOTE_KERNEL, "remote kernel")
                return
            path = find_socket(connection_file)
            try:
                if path is None:
                    raise FileNotFoundError("no socket")
                reader, self._writer = await asyncio.open_unix_connection(path)
            except OSError as error:
                self.log.info("unified_exec_kernel: no direct channel to kernel %s (%s)", kernel_id, error)
                self.close(NO_CHANNEL, "no channel")
                return
            self.log.info("unified_exec_kernel: direct channel open to kernel %s", kernel_id)
            self._from_kernel = asyncio.ensure_future(self._relay_from_kernel(reader))

        def on_message(self, message: str | bytes):
            writer = self._writer
            if writer is None or writer.is_closing():
                return None
            if isinstance(message, str):
                text = message.encode("utf-8")
                writer.write(frames.HEADER.pack(frames.TEXT, len(text)) + text)
            elif message:
                # one send for header and keys (writelines joins them): a keystroke is one segment
                writer.writelines((frames.HEADER.pack(message[:1], len(message) - 1), memoryview(message)[1:]))
            if writer.transport.get_write_buffer_size() > SOCKET_HIGH_WATER:
                return self._drain(writer)  # tornado reads the next message once this is done
            return None

        def on_close(self) -> None:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            if self._from_kernel is not None:
                self._from_kernel.cancel()

        # -- the kernel's side -------------------------------------------------------

        def _connection_file(self, kernel_id: str) -> str | None:
            """The kernel's connection file on this machine; None for a kernel that runs elsewhere (a gateway's)."""
            try:
                kernel = self.kernel_manager.get_kernel(kernel_id)
            except KeyError:
                return None  # gone since `get` found it: no channel to it either way
            connection_file = getattr(kernel, "connection_file", None)
            return connection_file if isinstance(connection_file, str) and os.path.isabs(connection_file) else None

        async def _relay_from_kernel(self, reader: asyncio.StreamReader) -> None:
            try:
                while True:
                    head = await reader.readexactly(frames.HEADER.size)
                    kind, length = frames.HEADER.unpack(head)
                    if length > frames.MAX_FRAME_BYTES:
                        self.log.warning("unified_exec_kernel: a frame of %d bytes from the kernel; closing", length)
                        break
                    payload = await reader.readexactly(length)
                    if kind == frames.TEXT:
                        await self.write_message(payload, binary=False)  # the JSON text as it is
                    else:
                        await self.write_message(head[:1] + payload, binary=True)
            except (asyncio.IncompleteReadError, ConnectionError, WebSocketClosedError, StreamClosedError):
                pass
            finally:
                if self.ws_connection is not None:
                    self.close(KERNEL_GONE, "kernel closed the channel")

        @staticmethod
        async def _drain(writer: asyncio.StreamWriter) -> None:
            try:
                await writer.drain()
            except ConnectionError:
                pass  # the kernel is gone: `_relay_from_kernel` closes the websocket

    return DirectChannelHandler


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join

    base_url = serverapp.web_app.settings.get("base_url", "/")
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base_url, ROUTE), handler_class())])
    serverapp.log.info("unified_exec_kernel: live views may use the direct channel at %s", url_path_join(base_url, "uexec/kernels/<id>/channel"))
