"""One connection of the direct channel: frames in, the protocol's answers and raw output out.

The live view's third carrier, beside the comm and the widget: a Unix socket
the kernel listens on (jupyter/direct_socket.py), which the Jupyter server
relays to the page (server/relay.py). It speaks the live view's part of the
protocol only (`attach`, `detach`, `input`, `resize`, and `ack` for its flow
control; `culled` from the server, server/culling.py), through the same `Endpoint` as the other carriers, so a bad
message gets the same one-line `error`; what differs is the carrier's own:
output leaves as `B` frames under an acknowledged window (window.py)
instead of JSON under a token bucket, and keystrokes arrive as `I` frames
and go to the terminal without JSON.

Everything here runs on the engine's loop and never blocks it: the
transport buffers what it cannot write yet, and the window bounds how much
that can be.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from ..core.manager import UnifiedExecSessionManager
from ..core.errors import WriteToStdinError, quoted
from ..core.session import HOLD_S, PtySession
from . import frames, messages, sizes
from .endpoint import Endpoint
from .messages import BadRequest
from .notices import culled_after, noticeboard
from .window import WINDOW, WindowedStream

INPUT_WINDOW = WINDOW
"""Typed bytes per session that may wait for its program to read them; an `I` frame past it is
refused with one `WriteToStdin` line (a program that never reads would otherwise grow the kernel)."""
MAX_UNREAD_BYTES = 4 * WINDOW
"""Bytes waiting in a connection's transport for the peer to read, past which the kernel stops reading
that peer until they drain: replies (errors, `attached`) to a peer that sends and never reads stay bounded."""
ENDPOINT_TYPES = ("attach", "detach", "input", "resize")
"""What a page may send as `T` frames, besides `ack` (this carrier's own)."""
CARRIER = "direct"


class DirectEndpoint(Endpoint):
    """The live view's requests over the direct channel; every stream a `WindowedStream`."""

    def __init__(self, manager: UnifiedExecSessionManager, connection: DirectConnection, *, hold_s: float = HOLD_S):
        super().__init__(manager, connection.send_message, types=ENDPOINT_TYPES)
        self._handlers["ack"] = DirectEndpoint._ack
        self._handlers["agent"] = DirectEndpoint._agent
        self._handlers["culled"] = DirectEndpoint._culled
        self._connection = connection
        self._hold_s = hold_s

    def stream(self, session: PtySession) -> WindowedStream:
        stream = self.streams.get(session.session_id)
        if stream is None:
            stream = self.streams[session.session_id] = WindowedStream(
                session,
                self.send,
                self._connection.send_output,
                on_end=lambda: self.streams.pop(session.session_id, None),
                writable=self._connection.writable,
                hold_s=self._hold_s,
            )
        return stream

    def view_of(self, data: dict):
        """A connection is one view: its `I` frames name none, and its `resize` is the same view's."""
        return (self, None)

    def receive_text(self, payload: bytes) -> None:
        """A `T` frame: one JSON message, as the comm would get it."""
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):  # bad JSON, bytes that are not UTF-8, nesting past Python's limit
            self.refuse("a T frame must hold one JSON message in UTF-8")
            return
        self.receive(data)

    def receive_input(self, payload: bytes) -> None:
        """An `I` frame: keystrokes for a session, written as they are; answered only when they fail."""
        session_id = None
        try:
            if len(payload) < frames.INPUT_HEADER.size:
                raise BadRequest("an I frame starts with a 4-byte session id")
            (session_id,) = frames.INPUT_HEADER.unpack_from(payload)
            keys = payload[frames.INPUT_HEADER.size :]
            messages.check_input_bytes(len(keys))
            session = self.manager.session(session_id)
            waiting = session.pending_write_bytes
            if waiting and waiting + len(keys) > INPUT_WINDOW:
                # A program that does not read its terminal: keys would queue without bound.
                raise WriteToStdinError(session.session_id, BlockingIOError(
                    f"the program is not reading its input ({waiting:,} bytes typed earlier still wait; "
                    f"at most {INPUT_WINDOW:,} may): these {len(keys):,} were not sent"
                ))
            sizes.typed(session, self.view_of({}))
            session.write(keys)
        except Exception as error:  # noqa: BLE001 - one line, as for a JSON input
            self._fail(None, error, {"type": "input", "session_id": session_id})

    def refuse(self, message: str) -> None:
        """Answer a frame that is no message at all (one line, `BadRequest`)."""
        self._fail(None, BadRequest(message), None)

    def resume(self) -> None:
        """The connection takes more again: every stream sends what waits."""
        for stream in list(self.streams.values()):
            stream.resume()

    def _agent(self, data: dict, rid) -> None:
        """An agent's client on the socket (the MCP server attached to this kernel, mcp/attached.py)
        takes the whole protocol: `exec`, `list`, `kill`, `read`, `watch` too. The socket is the
        user's alone (0600), and a page through the relay may already run code in the kernel."""
        self.take_every_type()
        self.send({"type": "ok", "request_id": rid, "session_id": None})

    def _culled(self, data: dict, rid) -> None:
        """The Jupyter server (server/culling.py) is about to shut this kernel down as idle: every page
        listening hears which sessions end and why, and the server gets them for its log."""
        idle = data.get("idle_seconds")
        if isinstance(idle, bool) or not isinstance(idle, (int, float)) or not idle >= 0:
            raise BadRequest("idle_seconds must be a number of seconds")
        ending = noticeboard(self.manager).culled(float(idle))
        self.send({"type": "culled", "request_id": rid, "after": culled_after(float(idle)), "sessions": [
            {"session_id": s.session_id, "name": s.name, "command": list(s.command)} for s in ending
        ]})

    def _ack(self, data: dict, rid) -> None:
        end = messages.optional_int(data, "end")
        if end is None:
            raise BadRequest("end is required")
        stream = self.streams.get(messages.session_key(data))
        if stream is not None:  # a late ack for a view that ended or detached says nothing
            stream.ack(end)


class DirectConnection(asyncio.Protocol):
    """One page (through the server's relay) on the kernel's socket."""

    def __init__(
        self,
        manager: UnifiedExecSessionManager,
        on_lost: Callable[[DirectConnection], None] | None = None,
        *,
        hold_s: float = HOLD_S,
    ):
        """`hold_s`: how long a view may keep a session's program waiting for it (window.py)."""
        self._manager = manager
        self._on_lost = on_lost
        self._hold_s = hold_s
        self._reader = frames.FrameReader()
        self._paused = False
        self._reading_paused = False
        self.transport: asyncio.Transport | None = None
        self.endpoint: DirectEndpoint | None = None
        self._stop_notices = lambda: None

    # -- out -------------------------------------------------------------------

    def send_message(self, message: dict) -> None:
        if self.transport is not None and not self.transport.is_closing():
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            self.transport.write(frames.text_frame(text))
            self._bound_unread()

    def send_output(self, session_id: int, offset: int, skipped: int, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.writelines((frames.output_frame_head(session_id, offset, skipped, len(data)), data))
            self._bound_unread()

    def _bound_unread(self) -> None:
        """Stop reading a peer that does not read what it is sent (resumed in `resume_writing`)."""
        if not self._reading_paused and self.transport.get_write_buffer_size() > MAX_UNREAD_BYTES:
            self._reading_paused = True
            self.transport.pause_reading()

    def writable(self) -> bool:
        return not self._paused and self.transport is not None and not self.transport.is_closing()

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.endpoint = DirectEndpoint(self._manager, self, hold_s=self._hold_s)
        self.send_message({**messages.hello(self._manager), "carrier": CARRIER})
        # A page's notifications hear of every session's end here, its notebook open or not (notices.py).
        self._stop_notices = noticeboard(self._manager).listen(self.send_message)

    def data_received(self, data: bytes) -> None:
        for kind, payload in self._reader.feed(data):
            if kind == frames.INPUT:
                self.endpoint.receive_input(payload)
            elif kind == frames.TEXT:
                self.endpoint.receive_text(payload)
            else:
                self.endpoint.refuse(f"unknown frame kind {quoted(kind.decode('latin-1'))}; a page sends T or I")
        if self._reader.too_large is not None:
            # The stream cannot be trusted past a length this wrong: say why, then hang up.
            self.endpoint.refuse(str(self._reader.too_large))
            self.transport.close()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._reading_paused and self.transport is not None and not self.transport.is_closing():
            self._reading_paused = False
            self.transport.resume_reading()
        if self.endpoint is not None:
            self.endpoint.resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_notices()
        if self.endpoint is not None:
            self.endpoint.close()
        if self._on_lost is not None:
            self._on_lost(self)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
