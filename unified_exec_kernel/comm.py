"""The kernel comm target `unified_exec`: docs/protocol.md over Jupyter comms.

A front end (the Sessions panel, an agent driving a kernel) opens a comm and
speaks JSON messages with a `type`. This module only translates: it checks
each message's shape, calls the manager, and answers. Handlers may run on a
subshell thread in ipykernel 7, so every message hops onto the kernel's loop
(where the manager and its sessions live) before anything else happens. A bad
message gets an `error` answer; it never closes the comm or touches another
session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .core.agent_format import format_for_agent
from .core.errors import UnifiedExecError
from .core.feed import LiveFeed
from .core.keys import signal_number
from .core.manager import UnifiedExecSessionManager
from .core.models import UnifiedExecRequest
from .core.protocol import MAX_INPUT_BYTES, BadRequest, input_text, optional_int, required_int, terminal_size
from .core.tail import ThrottledTail

log = logging.getLogger(__name__)

COMM_TARGET = "unified_exec"
PROTOCOL_VERSION = 1
OUTPUT_EVENT_S = 0.1
OUTPUT_EVENT_CHARS = 16 * 1024


class UnifiedExecComm:
    """One open comm: its attachments and its running requests."""

    def __init__(self, comm, manager: UnifiedExecSessionManager, loop: asyncio.AbstractEventLoop):
        self.comm = comm
        self.manager = manager
        self.loop = loop
        self.feeds: dict[int, LiveFeed] = {}
        self.tasks: set[asyncio.Task] = set()
        self._change_pending = False
        self._stop_listening = manager.add_listener(self._sessions_changed)
        comm.on_msg(self._on_comm_msg)
        comm.on_close(self._on_comm_close)
        self.send(
            {
                "type": "hello",
                "protocol_version": PROTOCOL_VERSION,
                "limits": {
                    "default_timeout_ms": manager.default_timeout_ms,
                    "max_timeout_ms": manager.max_timeout_ms,
                    "output_max_bytes": manager.output_max_bytes,
                    "max_input_bytes": MAX_INPUT_BYTES,
                    "max_sessions": manager.max_sessions,
                    "scrollback_bytes": manager.scrollback_bytes,
                },
            }
        )

    def send(self, message: dict) -> None:
        self.comm.send(message)

    # -- receiving -----------------------------------------------------------

    def _on_comm_msg(self, msg) -> None:
        data = msg.get("content", {}).get("data")
        self.loop.call_soon_threadsafe(self._handle, data)

    def _handle(self, data) -> None:
        request_id = data.get("request_id") if isinstance(data, dict) else None
        try:
            handler = self._route(data)
            if asyncio.iscoroutinefunction(handler):
                task = asyncio.ensure_future(self._answer_async(handler, data, request_id))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            else:
                handler(data, request_id)
        except (BadRequest, UnifiedExecError, ValueError, TypeError, OSError) as error:
            self._error(request_id, error, data)

    def _route(self, data):
        if not isinstance(data, dict):
            raise BadRequest(f"a message must be a JSON object, not {type(data).__name__}")
        message_type = data.get("type")
        handler = self._handlers.get(message_type) if isinstance(message_type, str) else None
        if handler is None:
            raise BadRequest(f"unknown message type {message_type!r}; expected one of {', '.join(self._handlers)}")
        request_id = data.get("request_id")
        if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, (str, int))):
            raise BadRequest("request_id must be a string or an integer")
        return handler.__get__(self)

    async def _answer_async(self, handler, data, request_id) -> None:
        try:
            await handler(data, request_id)
        except (BadRequest, UnifiedExecError, ValueError, TypeError, OSError) as error:
            self._error(request_id, error, data)
        except Exception as error:  # the kernel must live on whatever a request does
            log.exception("uexec comm: request failed")
            self._error(request_id, error, data)

    def _error(self, request_id, error: BaseException, data=None) -> None:
        name = getattr(error, "name", None) or ("BadRequest" if isinstance(error, (ValueError, TypeError)) else "Internal")
        message = {"type": "error", "request_id": request_id, "error": name, "message": str(error).splitlines()[0] if str(error) else name}
        session_id = data.get("session_id") if isinstance(data, dict) else None
        if isinstance(session_id, int) and not isinstance(session_id, bool):
            message["session_id"] = session_id  # so a view can tell which session failed
        self.send(message)

    # -- the requests ----------------------------------------------------------

    async def _exec(self, data, request_id) -> None:
        session_id = optional_int(data, "session_id")
        chunks = data.get("input_chunks", [])
        if not isinstance(chunks, list) or not all(isinstance(chunk, str) for chunk in chunks):
            raise BadRequest("input_chunks must be a list of strings")
        if sum(len(chunk) for chunk in chunks) > MAX_INPUT_BYTES:
            raise BadRequest(f"input over {MAX_INPUT_BYTES} bytes")
        timeout_ms = optional_int(data, "timeout_ms")
        if timeout_ms is not None and timeout_ms < 0:
            raise BadRequest("timeout_ms must be 0 or more")
        output_format = data.get("format", "text")
        if output_format not in ("text", "agent"):
            raise BadRequest("format must be 'text' or 'agent'")
        request = UnifiedExecRequest(session_id, chunks, timeout_ms)
        events = ThrottledTail(
            lambda _window, fresh: self.send({"type": "output", "request_id": request_id, "data": fresh}),
            max_chars=OUTPUT_EVENT_CHARS,
            interval=lambda _elapsed: OUTPUT_EVENT_S,
        )
        try:
            result = await self.manager.handle_request(request, on_output=events.feed)
        finally:
            events.flush()
        output = format_for_agent(result) if output_format == "agent" else result.output
        self.send(
            {
                "type": "result",
                "request_id": request_id,
                "session_id": result.session_id,
                "output": output,
                "exit_code": result.exit_code,
                "wall_time": result.wall_time,
            }
        )

    def _list(self, data, request_id) -> None:
        self.send(
            {
                "type": "sessions",
                "request_id": request_id,
                "sessions": [
                    {
                        "session_id": info.session_id,
                        "command": info.command,
                        "pid": info.pid,
                        "alive": info.alive,
                        "exit_code": info.exit_code,
                        "started": info.started,
                    }
                    for info in self.manager.list_sessions()
                ],
            }
        )

    async def _kill(self, data, request_id) -> None:
        session_id = required_int(data, "session_id")
        sig = None if data.get("signal") is None else signal_number(data["signal"])
        await self.manager.kill(session_id, sig)
        self.send({"type": "ok", "request_id": request_id, "session_id": session_id})

    def _attach(self, data, request_id) -> None:
        session_id = required_int(data, "session_id")
        feed = self.feeds.get(session_id)
        if feed is None:
            feed = self.feeds[session_id] = LiveFeed(self.manager.session(session_id), self.send)
        feed.replay(request_id)

    def _detach(self, data, request_id) -> None:
        session_id = required_int(data, "session_id")
        feed = self.feeds.pop(session_id, None)
        if feed is not None:
            feed.close()
        self.send({"type": "ok", "request_id": request_id, "session_id": session_id})

    def _input(self, data, request_id) -> None:
        session_id = required_int(data, "session_id")
        text = input_text(data)
        self.manager.session(session_id).write(text)
        if request_id is not None:
            self.send({"type": "ok", "request_id": request_id, "session_id": session_id})

    def _resize(self, data, request_id) -> None:
        session_id = required_int(data, "session_id")
        self.manager.session(session_id).resize(*terminal_size(data))
        self.send({"type": "ok", "request_id": request_id, "session_id": session_id})

    _handlers = {
        "exec": _exec,
        "list": _list,
        "kill": _kill,
        "attach": _attach,
        "detach": _detach,
        "input": _input,
        "resize": _resize,
    }

    # -- lifecycle -------------------------------------------------------------

    def _sessions_changed(self) -> None:
        # Coalesce a burst of changes (close_all) into one event.
        if not self._change_pending:
            self._change_pending = True
            self.loop.call_soon(self._announce_change)

    def _announce_change(self) -> None:
        self._change_pending = False
        self.send({"type": "sessions_changed"})

    def _on_comm_close(self, msg=None) -> None:
        self.loop.call_soon_threadsafe(self.close)

    def close(self) -> None:
        self._stop_listening()
        for feed in self.feeds.values():
            feed.close()
        self.feeds.clear()


def open_handler(manager: UnifiedExecSessionManager, kernel_loop: Callable[[], asyncio.AbstractEventLoop]):
    """The comm target's open handler, bound to the kernel's manager and its loop.

    The comm keeps its handlers, and they keep the `UnifiedExecComm`, alive.
    """

    def on_open(comm, open_msg) -> None:
        loop = kernel_loop()
        loop.call_soon_threadsafe(UnifiedExecComm, comm, manager, loop)

    return on_open
