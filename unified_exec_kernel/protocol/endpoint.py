"""One peer of the protocol: each message type becomes one manager call, each failure one `error`.

The comm and the widget are carriers: they hand `receive` every message they
get (on the kernel's loop) and give it a `send`. Everything else is here,
once: the table of message types, the checks (`messages.py`), the error
mapper, the live streams a peer attached, and the requests still running.
A bad message is answered and changes nothing else; an unexpected failure is
logged and answered as `Internal`; the kernel lives on either way.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Collection

from ..core.agent_format import format_for_agent
from ..core.output.batcher import Batcher
from ..core.errors import UnifiedExecError, one_line, quoted
from ..core.manager import UnifiedExecSessionManager
from ..core.session import PtySession
from ..core.completion.collect import compile_until
from ..core.journal import open_journal
from . import messages, sizes
from .notices import noticeboard
from .live import LiveStream
from .messages import BadRequest

log = logging.getLogger(__name__)
_peers = itertools.count()  # each peer a reader of its own

OUTPUT_EVENT_S = 0.1
OUTPUT_EVENT_BYTES = 16 * 1024

Send = Callable[[dict], None]


def read_journal(path: str, start: int | None, end: int | None, number: int | None, max_bytes: int):
    """(start, data, fields, notes) of a `read`, off the loop; raises BadRequest (one line) for what is not there."""
    with open_journal(path) as journal:
        command = None
        low, high = journal.start, journal.end
        if number is not None:
            commands = journal.chapters()
            if not -len(commands) <= number <= len(commands) or not commands:
                raise BadRequest(f"no command {number}: the session ran {len(commands)}")
            command = commands[number - 1 if number > 0 else number]
            low, high = command.start, command.end if command.end is not None else journal.end
        first = low if start is None else max(start, low)
        last = high if end is None else min(end, high)
        if start is not None and start > high:
            raise BadRequest(f"start {start} is past the end of the output ({high})")
        # A reply is contiguous: it starts at the first kept byte, and a stretch the journal
        # did not keep ends it (its note says so; the next read starts past it).
        first, chunk = journal.read_span(first, last, max_bytes) if first < last else (first, b"")
        notes = [drop.describe() for drop in journal.drops if drop.offset <= first + len(chunk) and drop.offset + drop.size >= first]
        return first, chunk, {"output_end": journal.end, "more": first + len(chunk) < last, "command": command}, notes


class Endpoint:
    """One peer's requests and what it attached or watches.

    One method per message type, kept together because they share the peer's
    streams, watches and error mapping; the checks and the messages themselves
    are in messages.py, the live stream in live.py.
    """

    def __init__(
        self,
        manager: UnifiedExecSessionManager,
        send: Send,
        *,
        session: PtySession | None = None,
        types: Collection[str] | None = None,
    ):
        """`session`: the one session this peer speaks of (a widget's), `session_id` optional.

        `types`: the message types this carrier takes (default: all).
        """
        self.manager = manager
        self.send = send
        self._session = session
        self._handlers = {name: handler for name, handler in _HANDLERS.items() if types is None or name in types}
        self.streams: dict[int, LiveStream] = {}
        self.tasks: set[asyncio.Task] = set()
        self.watches: dict[object, asyncio.Task] = {}
        self._viewed: dict[int, tuple[PtySession, set]] = {}  # the views of each session this peer sized (sizes.py)
        self.reader = ("peer", next(_peers))  # its own cursor in each session's output (core/output/readers.py)

    def receive(self, data) -> None:
        """Handle one incoming message; call it on the kernel's loop."""
        rid = messages.request_id(data)
        try:
            handler = self._route(data)
            if asyncio.iscoroutinefunction(handler):
                task = asyncio.ensure_future(self._answer_async(handler, data, rid))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            else:
                handler(self, data, rid)
        except Exception as error:  # noqa: BLE001 - mapped to one line, the kernel lives on
            self._fail(rid, error, data)

    def take_every_type(self) -> None:
        """From now on take every message type (a carrier that began with fewer, and whose peer may have all)."""
        self._handlers = {**_HANDLERS, **self._handlers}

    def close(self) -> None:
        for stream in list(self.streams.values()):
            stream.close()
        self.streams.clear()
        for watch in list(self.watches.values()):
            watch.cancel()
        self.watches.clear()
        for session_id in list(self._viewed):
            self._forget_views(session_id)

    # -- routing and errors ----------------------------------------------------

    def _route(self, data):
        if not isinstance(data, dict):
            raise BadRequest(f"a message must be a JSON object, not {type(data).__name__}")
        kind = data.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise BadRequest(f"unknown message type {quoted(kind)}; expected one of {', '.join(self._handlers)}")
        messages.check_request_id(data)
        return handler

    async def _answer_async(self, handler, data, rid) -> None:
        try:
            await handler(self, data, rid)
        except Exception as error:  # noqa: BLE001 - as in `receive`
            self._fail(rid, error, data)

    def _fail(self, rid, error: BaseException, data) -> None:
        if isinstance(error, (UnifiedExecError, BadRequest)):
            name = error.name
        elif isinstance(error, (ValueError, TypeError, OverflowError, ProcessLookupError)):
            name = BadRequest.name
        else:
            name = "Internal"
            log.error("uexec protocol: %s request failed", quoted(data.get("type") if isinstance(data, dict) else data), exc_info=error)
        text = one_line(str(error).splitlines()[0]) if str(error) else name
        self.send(messages.error(rid, name, text, messages.named_session(data)))

    def _session_of(self, data: dict) -> PtySession:
        if self._session is not None and data.get("session_id") is None:
            return self._session
        return self.manager.session(messages.session_key(data))

    # -- the requests ----------------------------------------------------------

    async def _exec(self, data: dict, rid) -> None:
        if messages.profile(data) == "codex":
            await self._exec_codex(data, rid)
            return
        key = messages.session_key(data, required=False)
        chunks = messages.input_chunks(data)
        waits = {
            "timeout_ms": messages.timeout_ms(data),
            "until": messages.optional_str(data, "until"),
            "quiet_ms": messages.optional_ms(data, "quiet_ms"),
        }
        output_format = messages.output_format(data)
        compile_until(waits["until"])  # every field is checked before anything starts
        keep = messages.optional_bool(data, "keep")
        if keep and key is not None:
            raise ValueError("keep is chosen when a session starts; a running session cannot become kept")
        # `exec` is the seed's request: with no session, the chunks are an argv.
        if key is None:
            session_id = await self.manager.launch(
                chunks,
                name=messages.optional_str(data, "name"),
                cwd=messages.optional_str(data, "cwd"),
                env=messages.environment(data),
                integration=messages.optional_bool(data, "integration"),
                keep=keep,
            )
            text = ""
        else:
            session_id, text = self.manager.session(key).session_id, " ".join(chunks)
        session = self.manager.session(session_id)
        result = await self._collect_with_events(rid, session_id, self.manager.write(session_id, text, first_prompt=key is None, reader=self.reader, **waits))
        if result.ended_by == "match":
            noticeboard(self.manager).matched(session, waits["until"], result.output, "until")
        self.send(messages.result(rid, result, self._shown(result, output_format)))

    async def _exec_codex(self, data: dict, rid) -> None:
        """`exec` as Codex's `exec_command` (no session) or `write_stdin` (a session): codex_profile.py.

        The fields are the tool's own (`cmd`, `workdir`, `tty`, `yield_time_ms`, ...);
        the result is in Codex's text unless `format` is "text".
        """
        from ..core import codex_profile  # an agent's, not every kernel's start (~1.5 ms of import)

        key = messages.session_key(data, required=False)
        output_format = data.get("format", "agent")
        if output_format not in ("text", "agent"):
            raise BadRequest("format must be 'text' or 'agent'")
        arguments = messages.codex_arguments(data)
        if key is None:
            request = codex_profile.ExecCommand.from_arguments(arguments)
            session_id = codex_profile.spawn(self.manager, request, name=messages.optional_str(data, "name"))
            waiting = codex_profile.first_result(self.manager, session_id, request, reader=self.reader)
        else:
            session_id = self.manager.session(key).session_id
            request = codex_profile.WriteStdin.from_arguments({**arguments, "session_id": session_id})
            waiting = codex_profile.write_stdin(self.manager, request, reader=self.reader)
        result = await self._collect_with_events(rid, session_id, waiting)
        self.send(messages.result(rid, result, self._shown(result, output_format)))

    async def _collect_with_events(self, rid, session_id: int, waiting):
        """Await a request on `session_id`, sending its output as `output` events meanwhile."""
        session = self.manager.session(session_id)
        events = Batcher(
            lambda batch: self.send(messages.output(rid, batch)),
            interval=OUTPUT_EVENT_S,
            budget=lambda wanted: min(wanted, OUTPUT_EVENT_BYTES),
            keep_bytes=OUTPUT_EVENT_BYTES,
            offset=session.offset,
            leading=False,
        )
        unsubscribe = session.subscribe(events.push)
        try:
            return await waiting
        finally:
            unsubscribe()
            events.flush()

    async def _watch(self, data: dict, rid) -> None:
        if rid is None:
            raise BadRequest("watch needs a request_id: unwatch and fired name the watch by it")
        if rid in self.watches:
            raise BadRequest(f"a watch with request_id {quoted(rid)} is already running")
        session = self.manager.session(messages.session_key(data))
        conditions = {
            "until": messages.optional_str(data, "until"),
            "quiet_ms": messages.optional_ms(data, "quiet_ms"),
            "command": bool(messages.optional_bool(data, "command")),
            "timeout_ms": messages.timeout_ms(data),
        }
        output_format = messages.output_format(data)
        compile_until(conditions["until"])  # refuse a bad pattern before answering `watching`
        watch = asyncio.ensure_future(self.manager.watch(session.session_id, **conditions))
        # Keyed by the request: `unwatch` names the watch by its request_id.
        self.watches[rid] = watch
        self.send(messages.watching(rid, session.session_id))
        try:
            watched = await watch
        except asyncio.CancelledError:
            return  # unwatched (answered there) or the comm closed
        finally:
            if self.watches.get(rid) is watch:
                del self.watches[rid]
        if watched.ended_by == "match":
            noticeboard(self.manager).matched(session, conditions["until"], watched.output, "watch")
        self.send(messages.fired(rid, watched, self._shown(watched, output_format)))

    def _unwatch(self, data: dict, rid) -> None:
        watched_id = data.get("watch_id")
        watch = self.watches.pop(watched_id, None)
        if watch is None:
            raise BadRequest(f"no watch with request_id {quoted(watched_id)}")
        watch.cancel()
        self.send({"type": "ok", "request_id": rid, "watch_id": watched_id})

    @staticmethod
    def _shown(result, output_format: str) -> str:
        return format_for_agent(result) if output_format == "agent" else result.output

    def _list(self, data: dict, rid) -> None:
        self.send(messages.sessions(rid, self.manager.list_sessions()))

    async def _kill(self, data: dict, rid) -> None:
        key = messages.session_key(data)
        sig = messages.optional_signal(data)
        session_id = self.manager.session(key).session_id
        await self.manager.kill(session_id, sig)
        self.send(messages.ok(rid, session_id))

    def stream(self, session: PtySession) -> LiveStream:
        """The one live stream of `session` to this peer, started if need be."""
        stream = self.streams.get(session.session_id)
        if stream is None:
            stream = self.streams[session.session_id] = LiveStream(
                session, self.send, on_end=lambda: self.streams.pop(session.session_id, None)
            )
        return stream

    def _attach(self, data: dict, rid) -> None:
        self.stream(self._session_of(data)).replay(rid)

    def _detach(self, data: dict, rid) -> None:
        key = messages.session_key(data)
        session_id = key if isinstance(key, int) else self.manager.session(key).session_id
        stream = self.streams.pop(session_id, None)
        if stream is not None:
            stream.close()
        self._forget_views(session_id)
        self.send(messages.ok(rid, session_id))

    def _input(self, data: dict, rid) -> None:
        text = messages.input_text(data)
        session = self._session_of(data)
        sizes.typed(session, self.view_of(data))
        session.write(text)
        if rid is not None:
            self.send(messages.ok(rid, session.session_id))

    async def _read(self, data: dict, rid) -> None:
        """A slice of a session's journal: a byte range, a command's output, or both (bounded)."""
        key = messages.session_key(data)
        start, end, number, max_bytes = messages.read_request(data)
        store = self.manager.journals
        if store is None:
            raise BadRequest("journals are off in this kernel (c.UnifiedExec.journal = False)")
        entry = store.find(key)
        # The writer's thread may still hold what the session printed last; the file read goes to a worker.
        await asyncio.wrap_future(store.flushed())
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(None, read_journal, entry.path, start, end, number, max_bytes)
        self.send(messages.journal(rid, entry.session_id, *reply[:2], **reply[2], notes=[*reply[3], *(n for n in entry.notes() if n not in reply[3])]))

    def _resize(self, data: dict, rid) -> None:
        """A view's own size; the PTY takes it if that view is the one in use (sizes.py)."""
        size = messages.terminal_size(data)
        claim = bool(messages.optional_bool(data, "claim"))
        session = self._session_of(data)
        view = self.view_of(data)
        sizes.sizes_of(session).resize(view, *size, claim=claim)
        self._viewed.setdefault(session.session_id, (session, set()))[1].add(view)
        if session.size != size:
            self.send(messages.size(session))  # not the view in use: it draws at the PTY's size
        self.send(messages.ok(rid, session.session_id))

    def view_of(self, data: dict):
        """Which of this peer's views sent `data`: a comm or widget carries many, each naming itself."""
        view = data.get("view")
        return (self, view if isinstance(view, str) else None)

    def _forget_views(self, session_id: int) -> None:
        session, views = self._viewed.pop(session_id, (None, ()))
        for view in views:
            sizes.forget(session, view)


_HANDLERS = {
    "exec": Endpoint._exec,
    "list": Endpoint._list,
    "kill": Endpoint._kill,
    "attach": Endpoint._attach,
    "detach": Endpoint._detach,
    "input": Endpoint._input,
    "resize": Endpoint._resize,
    "watch": Endpoint._watch,
    "unwatch": Endpoint._unwatch,
    "read": Endpoint._read,
}
MESSAGE_TYPES = tuple(_HANDLERS)
"""What a front end may send (docs/protocol.md, "Front end → kernel")."""
