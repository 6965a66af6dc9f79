"""`UnifiedExecSessionManager`: the seed's session manager on asyncio.

It keeps sessions by integer id, starts commands, writes input, collects what
a session prints for up to a timeout, and answers with the middle-truncated
text. Beyond the seed (as the newest Codex does): a request returns as soon as
the program has exited and its output is drained; a session that exited
between polls hands its unread output to the next request before its id
becomes unknown; live sessions are capped with least-recently-used pruning;
and a flood costs only what truncation keeps.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES
from .collector import HeadTailCollector
from .errors import CreateSessionError, MissingCommandLineError, UnknownSessionIdError
from .guardian import Guardian
from .models import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    SessionInfo,
    UnifiedExecRequest,
    UnifiedExecResult,
)
from .session import SCROLLBACK_BYTES, PtySession, terminate_sessions

log = logging.getLogger(__name__)

MAX_SESSIONS = 64
WARN_SESSIONS = 60
PROTECTED_RECENT_SESSIONS = 8


@dataclass
class _Managed:
    session: PtySession
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


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
        spawn_backend: str = "auto",
        guardian: bool = False,
    ):
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self.max_sessions = max_sessions
        self.warn_sessions = min(WARN_SESSIONS, max_sessions)
        self.default_timeout_ms = default_timeout_ms
        self.max_timeout_ms = max_timeout_ms
        self.output_max_bytes = output_max_bytes
        self.scrollback_bytes = scrollback_bytes
        self.env = dict(env or {})
        self.spawn_backend = spawn_backend
        self.guardian = guardian  # a guardian process ends the sessions if this process dies without closing them
        self._guardian: Guardian | None = None
        self._sessions: dict[int, _Managed] = {}
        self._next_id = itertools.count()
        self._listeners: list[Callable[[], None]] = []
        self._background: set[asyncio.Task] = set()

    # -- the seed's request --------------------------------------------------

    async def handle_request(
        self,
        request: UnifiedExecRequest,
        *,
        on_output: Callable[[str], None] | None = None,
        stop: asyncio.Event | None = None,
    ) -> UnifiedExecResult:
        """Start or write, then collect output until the timeout, the program's end, or `stop`.

        `on_output` sees the text as it arrives; setting `stop` ends the wait
        early (an interrupted cell) with what was collected so far.
        """
        started = time.monotonic()
        timeout_ms, warnings = self._clamp_timeout(request.timeout_ms)
        if request.session_id is None:
            managed = self._spawn(list(request.input_chunks))
            if len(self._sessions) >= self.warn_sessions:
                warnings += (
                    f"Warning: {len(self._sessions)} sessions are open; at {self.max_sessions} the least "
                    "recently used one will be closed to make room. Close the ones you no longer need.\n"
                )
        else:
            managed = self._get_managed(request.session_id)

        async with managed.lock:
            session = managed.session
            if self._sessions.get(session.session_id) is not managed:
                # Another request on this session reported its exit while we queued.
                raise UnknownSessionIdError(session.session_id)
            managed.last_used = time.monotonic()
            collector = HeadTailCollector(self.output_max_bytes)

            def sink(text: str) -> None:
                collector.push(text)
                if on_output is not None:
                    on_output(text)

            pending, dropped = session.buffer.drain()
            for text in pending:
                sink(text)
            session.set_sink(sink)
            try:
                joined = " ".join(request.input_chunks)
                if request.session_id is not None and joined and not session.finished:
                    session.write(joined)
                await self._wait(session, timeout_ms / 1000, stop)
            finally:
                session.set_sink(None)

            output, _ = collector.truncated()
            result_id: int | None = session.session_id
            if session.finished:
                result_id = None
                if self._sessions.get(session.session_id) is managed:  # not killed meanwhile
                    self._forget(session.session_id)
            return UnifiedExecResult(
                session_id=result_id,
                output=warnings + output,
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

    # -- sessions ------------------------------------------------------------

    def _spawn(self, argv: list[str]) -> _Managed:
        session_id = next(self._next_id)
        if not argv or not argv[0]:
            raise MissingCommandLineError()
        self._make_room()
        env = {**os.environ, "TERM": "xterm-256color", **self.env}
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
        managed = _Managed(session, last_used=time.monotonic())
        self._sessions[session_id] = managed
        self._guard(session.pid)
        session.add_exit_callback(lambda _session: self._changed())
        self._changed()
        return managed

    def _make_room(self) -> None:
        if len(self._sessions) < self.max_sessions:
            return
        by_age = sorted(self._sessions.values(), key=lambda managed: managed.last_used)
        candidates = by_age[: max(len(by_age) - PROTECTED_RECENT_SESSIONS, 0)] or by_age[:1]
        exited = [managed for managed in candidates if managed.session.finished]
        victim = (exited or candidates)[0]
        log.info("uexec: closing session %s to make room", victim.session.session_id)
        self._forget(victim.session.session_id)

    def _get_managed(self, session_id: int) -> _Managed:
        managed = self._sessions.get(session_id)
        if managed is None:
            raise UnknownSessionIdError(session_id)
        return managed

    def session(self, session_id: int) -> PtySession:
        """The live session with this id, for faces that attach, type or resize."""
        return self._get_managed(session_id).session

    def _forget(self, session_id: int) -> asyncio.Task:
        """Remove the session and close it in the background; the closing task."""
        managed = self._sessions.pop(session_id)
        task = asyncio.ensure_future(managed.session.close())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda _task, pid=managed.session.pid: self._unguard(pid))
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
            for session in [managed.session for managed in self._sessions.values()]
        ]

    async def kill(self, session_id: int, sig: int | None = None) -> None:
        """Close the session (every process in it), or just send it `sig`."""
        managed = self._get_managed(session_id)
        if sig is not None:
            managed.session.send_signal(sig)
            return
        await self._forget(session_id)

    async def close_all(self) -> None:
        sessions = [managed.session for managed in self._sessions.values()]
        self._sessions.clear()
        if sessions:
            self._changed()
        await asyncio.gather(*(session.close() for session in sessions), *self._background)
        guardian, self._guardian = self._guardian, None
        if guardian is not None:
            await guardian.close()  # everything is closed: it exits and is reaped

    def terminate_all_threadsafe(self, grace: float = 0.2) -> None:
        """End every session's processes from any thread (a shutdown hook, atexit). Blocks."""
        pids = [managed.session.pid for managed in list(self._sessions.values())]
        if pids:
            terminate_sessions(pids, grace)

    def _guard(self, leader_pid: int) -> None:
        if self.guardian:
            if self._guardian is None:
                self._guardian = Guardian(asyncio.get_running_loop())
            self._guardian.watch(leader_pid)

    def _unguard(self, leader_pid: int) -> None:
        if self._guardian is not None:
            self._guardian.forget(leader_pid)

    # -- change notification -------------------------------------------------

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
