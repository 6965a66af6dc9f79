"""`UnifiedExecSessionManager`: the seed's session manager on asyncio.

It keeps sessions by integer id. Its own API is the newest Codex's pair:
`start` a command and `write` to a running one (an empty write just polls),
both collecting what the session prints for up to a timeout and answering
with the middle-truncated text. `handle_request` is the seed's single entry,
kept with its exact semantics as a thin facade over the two. Beyond the seed:
a request returns as soon as the program has exited and its output is
drained; a session that exited between polls hands its unread output to the
next request before its id becomes unknown; live sessions are capped with
least-recently-used pruning; and a flood costs only what truncation keeps.
"""

from __future__ import annotations

import asyncio
import fnmatch
import itertools
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES
from .collector import HeadTailCollector
from .errors import CreateSessionError, MissingCommandLineError, UnknownSessionIdError
from .models import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    SessionInfo,
    UnifiedExecRequest,
    UnifiedExecResult,
)
from .session import SCROLLBACK_BYTES, PtySession
from .termination import terminate_blocking

log = logging.getLogger(__name__)

MAX_SESSIONS = 64
WARN_SESSIONS = 60
PROTECTED_RECENT_SESSIONS = 8


@dataclass
class _Managed:
    session: PtySession
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    notice: str = ""  # a warning for the session's first result


class UnifiedExecSessionManager:
    """Sessions by id, on the asyncio loop that first uses the manager."""

    def __init__(
        self,
        *,
        max_sessions: int = MAX_SESSIONS,
        default_timeout_ms: int = DEFAULT_TIMEOUT_MS,
        max_timeout_ms: int = MAX_TIMEOUT_MS,
        output_max_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES,
        scrollback_bytes: int = SCROLLBACK_BYTES,
        env: Mapping[str, str] | None = None,
        env_remove: Sequence[str] = (),
        spawn_backend: str = "auto",
    ):
        """`env` is added to the environment sessions inherit; `env_remove` (names or
        glob patterns such as `JUPYTERHUB_*`) is taken out of it first."""
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self.max_sessions = max_sessions
        self.warn_sessions = min(WARN_SESSIONS, max_sessions)
        self.default_timeout_ms = default_timeout_ms
        self.max_timeout_ms = max_timeout_ms
        self.output_max_bytes = output_max_bytes
        self.scrollback_bytes = scrollback_bytes
        self.env = dict(env or {})
        self.env_remove = tuple(env_remove)
        self.spawn_backend = spawn_backend
        self._sessions: dict[int, _Managed] = {}
        self._next_id = itertools.count()
        self._listeners: list[Callable[[], None]] = []
        self._closing: set[asyncio.Task] = set()

    # -- start and write -------------------------------------------------------

    async def start(self, argv: Sequence[str], *, timeout_ms: int | None = None, stop: asyncio.Event | None = None) -> UnifiedExecResult:
        """Start `argv` in a new session, then collect its output (Codex's `exec_command`)."""
        timeout_ms, warning = self._clamp_timeout(timeout_ms)  # before spawning, as the seed
        session_id = self.spawn(argv)
        return await self._collect(session_id, "", timeout_ms, warning, stop)

    async def write(
        self, session_id: int, text: str = "", *, timeout_ms: int | None = None, stop: asyncio.Event | None = None
    ) -> UnifiedExecResult:
        """Type `text` into a session (nothing: just poll), then collect (Codex's `write_stdin`).

        The wait ends at the timeout, when the program has exited and its
        output is drained, or when `stop` is set (an interrupted cell).
        """
        timeout_ms, warning = self._clamp_timeout(timeout_ms)
        return await self._collect(session_id, text, timeout_ms, warning, stop)

    async def handle_request(self, request: UnifiedExecRequest, *, stop: asyncio.Event | None = None) -> UnifiedExecResult:
        """The seed's entry: `input_chunks` is the argv of a new session, or text joined with spaces."""
        if request.session_id is None:
            return await self.start(request.input_chunks, timeout_ms=request.timeout_ms, stop=stop)
        return await self.write(request.session_id, " ".join(request.input_chunks), timeout_ms=request.timeout_ms, stop=stop)

    def spawn(self, argv: Sequence[str]) -> int:
        """Start `argv` in a new session without waiting; its id.

        For a face that subscribes to the session's output before collecting
        it with `write(session_id)`.
        """
        argv = list(argv)
        session_id = next(self._next_id)
        if not argv or not argv[0]:
            raise MissingCommandLineError()
        self._make_room()
        env = {**self._inherited_env(), "TERM": "xterm-256color", **self.env}
        try:
            session = PtySession(
                session_id,
                argv,
                env,
                buffer_bytes=self.output_max_bytes,
                scrollback_bytes=self.scrollback_bytes,
                backend=self.spawn_backend,
            )
        except OSError as error:
            raise CreateSessionError(argv, error) from error
        managed = self._sessions[session_id] = _Managed(session, last_used=time.monotonic())
        if len(self._sessions) >= self.warn_sessions:
            managed.notice = (
                f"Warning: {len(self._sessions)} sessions are open; at {self.max_sessions} the least "
                "recently used one will be closed to make room. Close the ones you no longer need.\n"
            )
        session.add_exit_callback(lambda _session: self._changed())
        self._changed()
        return session_id

    def _inherited_env(self) -> dict[str, str]:
        if not self.env_remove:
            return dict(os.environ)
        return {name: value for name, value in os.environ.items() if not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.env_remove)}

    async def _collect(
        self, session_id: int, text: str, timeout_ms: int, warning: str, stop: asyncio.Event | None
    ) -> UnifiedExecResult:
        started = time.monotonic()
        managed = self._get_managed(session_id)
        async with managed.lock:
            session = managed.session
            if self._sessions.get(session_id) is not managed:
                # Another request on this session reported its exit while we queued.
                raise UnknownSessionIdError(session_id)
            managed.last_used = time.monotonic()
            notice, managed.notice = managed.notice, ""
            collector = HeadTailCollector(self.output_max_bytes)
            # What arrived since the last request comes first, then what arrives now.
            unread, dropped = session.buffer.drain()
            collector.push(unread)
            unsubscribe = session.subscribe(collector.push)
            try:
                # A program that exited while a grandchild holds the terminal
                # cannot read: collect its last words instead (as Codex does).
                if text and session.alive:
                    session.write(text)
                await self._wait(session, timeout_ms / 1000, stop)
            finally:
                unsubscribe()
                session.buffer.drain()  # the collector has it all

            output, _ = collector.truncated()
            result_id: int | None = session_id
            if session.finished:
                result_id = None
                if self._sessions.get(session_id) is managed:  # not killed meanwhile
                    self._remove(session_id)
            return UnifiedExecResult(
                session_id=result_id,
                output=warning + notice + output,
                exit_code=session.exit_code if session.finished else None,
                wall_time=time.monotonic() - started,
                original_token_count=collector.token_count,
                dropped_bytes=dropped,
            )

    def _clamp_timeout(self, requested: int | None) -> tuple[int, str]:
        if requested is None:
            return self.default_timeout_ms, ""
        if requested > self.max_timeout_ms:
            return self.max_timeout_ms, (
                f"Warning: requested timeout {requested}ms exceeds maximum of "
                f"{self.max_timeout_ms}ms; clamping to {self.max_timeout_ms}ms.\n"
            )
        return requested, ""

    @staticmethod
    async def _wait(session: PtySession, timeout: float, stop: asyncio.Event | None) -> None:
        if session.finished or timeout <= 0:
            return
        waiters = {asyncio.ensure_future(session.wait_finished())}
        if stop is not None:
            waiters.add(asyncio.ensure_future(stop.wait()))
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    # -- sessions --------------------------------------------------------------

    def _make_room(self) -> None:
        if len(self._sessions) < self.max_sessions:
            return
        by_age = sorted(self._sessions.values(), key=lambda managed: managed.last_used)
        candidates = by_age[: max(len(by_age) - PROTECTED_RECENT_SESSIONS, 0)] or by_age[:1]
        exited = [managed for managed in candidates if managed.session.finished]
        victim = (exited or candidates)[0]
        log.info("uexec: closing session %s to make room", victim.session.session_id)
        self._remove(victim.session.session_id)

    def _get_managed(self, session_id: int) -> _Managed:
        managed = self._sessions.get(session_id)
        if managed is None:
            raise UnknownSessionIdError(session_id)
        return managed

    def session(self, session_id: int) -> PtySession:
        """The session with this id, for faces that attach, type or resize."""
        return self._get_managed(session_id).session

    def _remove(self, session_id: int) -> asyncio.Task:
        """Take the session out of the table and close it in the background; the closing task."""
        managed = self._sessions.pop(session_id)
        task = asyncio.ensure_future(managed.session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        self._changed()
        return task

    def list_sessions(self) -> list[SessionInfo]:
        return [
            SessionInfo(
                session_id=session.session_id,
                command=list(session.argv),
                pid=session.pid,
                alive=session.alive,
                exit_code=session.exit_code,
                started=session.started,
            )
            for session in (managed.session for managed in self._sessions.values())
        ]

    async def kill(self, session_id: int, sig: int | None = None) -> None:
        """Close the session (every process in it), or just send it `sig`."""
        managed = self._get_managed(session_id)
        if sig is not None:
            managed.session.send_signal(sig)
            return
        await self._remove(session_id)

    async def close_all(self) -> None:
        sessions = [managed.session for managed in self._sessions.values()]
        self._sessions.clear()
        if sessions:
            self._changed()
        await asyncio.gather(*(session.close() for session in sessions), *self._closing)

    def terminate_all_threadsafe(self, grace: float = 0.2) -> None:
        """End every session's processes from any thread (a shutdown hook, atexit). Blocks."""
        pids = [managed.session.pid for managed in list(self._sessions.values())]
        if pids:
            terminate_blocking(pids, grace)

    # -- change notification ---------------------------------------------------

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` whenever a session starts, exits or is removed."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("uexec: a session listener failed")
