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
import dataclasses
import fnmatch
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .output.buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES
from .completion.collect import Collected, WaitFor, collect, compile_until
from .errors import CreateSessionError, MissingCommandLineError, UnknownSessionIdError
from .models import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    SessionInfo,
    UnifiedExecRequest,
    UnifiedExecResult,
)
from .process.guardian import Guardian
from .session import SCROLLBACK_BYTES, PtySession
from .pipe_session import PipeSession
from .completion.shell_integration import integrate, new_nonce
from .journal.store import JournalStore
from .process.termination import terminate_blocking

log = logging.getLogger(__name__)

MAX_SESSIONS = 64
WARN_SESSIONS = 60
PROTECTED_RECENT_SESSIONS = 8
MAX_WATCH_MS = 3_600_000
NAME_RULE = "a name starts with a letter or _, then letters, digits, _ . or - (so it never reads as an id or an option)"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass
class _Managed:
    session: PtySession
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    notice: str = ""  # a warning for the session's first result


class UnifiedExecSessionManager:
    """Sessions by id, on the asyncio loop that first uses the manager.

    Long on purpose: it is the engine's whole public API (pinned names that
    tests and users call), so it keeps the session table (ids, names, the
    least-recently-used cap, listeners, the guardian) beside the requests that
    share its locks. Every mechanism it uses lives in its own module:
    collecting until a request is done (collect.py), a session (session.py),
    integration (shell_integration.py), ending processes (termination.py).
    """

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
        shell_integration: bool = False,
        max_watch_ms: int = MAX_WATCH_MS,
        guardian: bool = False,
        spawn_backend: str = "auto",
        journals: JournalStore | None = None,
    ):
        """`env` is added to the environment sessions inherit; `env_remove` (names or
        glob patterns such as `JUPYTERHUB_*`) is taken out of it first. `journals`:
        every session's output also goes to a journal there (core/journal/), found
        with `journals.find(key)` also after the session is gone; the manager closes it."""
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
        self.shell_integration = shell_integration
        self.max_watch_ms = max_watch_ms
        self.guardian = guardian  # a guardian process ends the sessions if this process dies without closing them
        self._guardian: Guardian | None = None
        self._names: dict[str, int] = {}
        self.spawn_backend = spawn_backend
        self._sessions: dict[int, _Managed] = {}
        self._next_id = itertools.count()
        self._listeners: list[Callable[[], None]] = []
        self._closing: set[asyncio.Task] = set()
        self.journals = journals

    # -- start and write -------------------------------------------------------

    async def start(
        self,
        argv: Sequence[str],
        *,
        timeout_ms: int | None = None,
        stop: asyncio.Event | None = None,
        until: str | None = None,
        quiet_ms: int | None = None,
        name: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        integration: bool | None = None,
    ) -> UnifiedExecResult:
        """Start `argv` in a new session, then collect its output (Codex's `exec_command`).

        An integrated shell (see `spawn`) is waited on until its first prompt.
        """
        compile_until(until)  # a bad pattern starts nothing
        session_id = self.spawn(argv, name=name, cwd=cwd, env=env, integration=integration)
        return await self.write(session_id, timeout_ms=timeout_ms, stop=stop, until=until, quiet_ms=quiet_ms, first_prompt=True)

    async def write(
        self,
        session_id: int | str,
        text: str = "",
        *,
        timeout_ms: int | None = None,
        stop: asyncio.Event | None = None,
        until: str | None = None,
        quiet_ms: int | None = None,
        earlier_output: bool = True,
        first_prompt: bool = False,
        max_bytes: int | None = None,
        max_timeout_ms: int | None = None,
    ) -> UnifiedExecResult:
        """Type `text` into a session (nothing: just poll), then collect (Codex's `write_stdin`).

        The wait ends at the timeout, when the program has exited and its
        output is drained, when `stop` is set (an interrupted cell), when the
        output matches `until`, when it has been quiet for `quiet_ms`, or, in an
        integrated shell, when the typed command is done and the prompt is back
        (then the timeout defaults to `max_timeout_ms`). `earlier_output=False`
        leaves out what arrived before this request (counted in `left_out_bytes`).
        `first_prompt`: the session was just spawned; an integrated shell is
        waited on until its first prompt. `max_bytes` (default `output_max_bytes`): what
        the result keeps of the output; `max_timeout_ms` (default the manager's): the
        longest wait (a request profile's own limits, codex_profile.py).
        """
        pattern = compile_until(until)
        session = self._get_managed(session_id).session
        command = session.integrated and (bool(text) or first_prompt)
        limits = (max_bytes, max_timeout_ms)
        return await self._collect(session_id, text, timeout_ms, stop, pattern, quiet_ms, earlier_output, command, limits)

    async def handle_request(self, request: UnifiedExecRequest, *, stop: asyncio.Event | None = None) -> UnifiedExecResult:
        """The seed's entry: `input_chunks` is the argv of a new session, or text joined with spaces."""
        waits = {"timeout_ms": request.timeout_ms, "stop": stop, "until": request.until, "quiet_ms": request.quiet_ms}
        if request.session_id is None:
            return await self.start(request.input_chunks, name=request.name, cwd=request.cwd, env=request.env, **waits)
        return await self.write(request.session_id, " ".join(request.input_chunks), **waits)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        name: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        integration: bool | None = None,
        tty: bool = True,
        buffer_bytes: int | None = None,
    ) -> int:
        """Start `argv` in a new session without waiting; its id.

        For a face that subscribes to the session's output before collecting
        it with `write(session_id)`. `name` must not be held by a running
        session. `integration` (default: the manager's `shell_integration`)
        starts bash or zsh so that it reports where each command ends.
        `tty=False` runs it on pipes, stdin closed (pipe_session.py; never integrated).
        `buffer_bytes`: what the session keeps unread between requests (default `output_max_bytes`).
        """
        argv = command = list(argv)  # `command`: what the user gave, shown in every face
        session_id = next(self._next_id)
        if not argv or not argv[0]:
            raise MissingCommandLineError()
        self._check_name(argv, name)
        _check_no_nul(argv, cwd, env)
        if cwd is not None and not os.path.isdir(cwd):
            raise CreateSessionError(argv, NotADirectoryError(f"no such directory: {cwd}"))
        self._make_room()
        environment = {**self._inherited_env(), "TERM": "xterm-256color", **self.env, **(env or {})}
        nonce = None
        if tty and (self.shell_integration if integration is None else integration):
            nonce = new_nonce()
            integrated = integrate(argv, environment, nonce)
            if integrated is None:
                nonce = None  # not bash or zsh, or not interactive: runs as it is
            else:
                argv, environment = integrated
        try:
            session = (PtySession if tty else PipeSession)(
                session_id,
                argv,
                environment,
                buffer_bytes=self.output_max_bytes if buffer_bytes is None else buffer_bytes,
                scrollback_bytes=self.scrollback_bytes,
                backend=self.spawn_backend,
                cwd=cwd,
                prompt_nonce=nonce,
                name=name,
                command=command,
            )
        except OSError as error:
            raise CreateSessionError(command, error) from error
        if self.journals is not None:
            self.journals.record(session)  # before the loop reads its first output
        managed = self._sessions[session_id] = _Managed(session, last_used=time.monotonic())
        self._guard(session.pid)
        if name is not None:
            self._names[name] = session_id
        if len(self._sessions) >= self.warn_sessions:
            managed.notice = (
                f"Warning: {len(self._sessions)} sessions are open; at {self.max_sessions} the least "
                "recently used one will be closed to make room. Close the ones you no longer need.\n"
            )
        session.on_exit(lambda _session: self._changed())
        self._changed()
        return session_id

    def _check_name(self, argv: list[str], name: str | None) -> None:
        if name is None:
            return
        if not _NAME.fullmatch(name):
            raise CreateSessionError(
                argv, ValueError(f"{name!r} cannot name a session: {NAME_RULE}")
            )
        holder = self._sessions.get(self._names.get(name, -1))
        if holder is not None and holder.session.alive:
            raise CreateSessionError(argv, ValueError(f"the name {name!r} is held by running session {holder.session.session_id}"))

    def _inherited_env(self) -> dict[str, str]:
        if not self.env_remove:
            return dict(os.environ)
        return {name: value for name, value in os.environ.items() if not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.env_remove)}

    async def _collect(
        self,
        key: int | str,
        text: str,
        timeout_ms: int | None,
        stop: asyncio.Event | None,
        until,
        quiet_ms: int | None,
        earlier_output: bool,
        command: bool,
        limits: tuple[int | None, int | None] = (None, None),
    ) -> UnifiedExecResult:
        """`command`: an integrated shell is done when its prompt is back (after a typed
        command, or at its first prompt); such a wait defaults to `max_timeout_ms`."""
        managed = self._get_managed(key)
        session = managed.session
        session_id = session.session_id
        max_bytes = self.output_max_bytes if limits[0] is None else limits[0]
        timeout_ms, warning = self._clamp_timeout(timeout_ms, self.max_timeout_ms if command else self.default_timeout_ms, limits[1])
        async with managed.lock:
            if self._sessions.get(session_id) is not managed:
                # Another request on this session reported its exit while we queued.
                raise UnknownSessionIdError(key, self._keys())
            managed.last_used = time.monotonic()
            notice, managed.notice = managed.notice, ""
            # What the program printed before this request is read first, so a
            # prompt marker of an earlier command cannot end this wait.
            session.terminal.read_pending()
            unread, dropped = session.buffer.drain()
            left_out = 0 if earlier_output else _hidden_bytes(session, len(unread))
            first_offset = session.offset - (len(unread) if earlier_output else 0)
            try:
                collected = await collect(
                    session,
                    WaitFor(timeout_ms / 1000, until, _seconds(quiet_ms), command),
                    max_bytes=max_bytes,
                    text=text,
                    already=unread if earlier_output else b"",
                    # A shell that showed its first prompt before this wait began is done starting.
                    prompted=command and not text and session.prompts > 0,
                    stop=stop,
                )
            finally:
                session.buffer.drain()  # the collector has it all
            if session.finished and self._sessions.get(session_id) is managed:  # not killed meanwhile
                self._remove(session_id)
            result = _result(session, collected, warning + notice, dropped_bytes=dropped, left_out_bytes=left_out)
            return self._with_journal_range(result, session, first_offset)

    def _with_journal_range(self, result: UnifiedExecResult, session: PtySession, first_offset: int) -> UnifiedExecResult:
        """Where the whole output of a cut result can be read again: its session and byte range."""
        if self.journals is None or session.offset - first_offset <= self.output_max_bytes:
            return result
        key = session.name if session.name is not None else session.session_id
        return dataclasses.replace(result, journal_range=(key, first_offset, session.offset))

    async def watch(
        self,
        session_id: int | str,
        *,
        until: str | None = None,
        quiet_ms: int | None = None,
        command: bool = False,
        timeout_ms: int | None = None,
    ) -> UnifiedExecResult:
        """Wait, without taking part in requests, until a condition holds; what arrived meanwhile.

        For a program that watches sessions instead of polling them: an
        idle watch costs no thread and no timer but its timeout. Its timeout
        may be much longer than a request's (`max_watch_ms`). A watch does
        not consume the session's output or its exit: requests still see both.
        """
        pattern = compile_until(until)
        session = self._get_managed(session_id).session
        timeout_ms, warning = self._clamp_timeout(timeout_ms, self.max_watch_ms, self.max_watch_ms)
        wait_for = WaitFor(timeout_ms / 1000, pattern, _seconds(quiet_ms), command and session.integrated)
        return _result(session, await collect(session, wait_for, max_bytes=self.output_max_bytes), warning)

    def _clamp_timeout(self, requested: int | None, default: int, maximum: int | None = None) -> tuple[int, str]:
        maximum = self.max_timeout_ms if maximum is None else maximum
        if requested is None:
            return default, ""
        if requested > maximum:
            return maximum, (
                f"Warning: requested timeout {requested}ms exceeds maximum of "
                f"{maximum}ms; clamping to {maximum}ms.\n"
            )
        return requested, ""

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

    def _get_managed(self, key: int | str) -> _Managed:
        """The session with this id, or this name."""
        session_id = self._names.get(key) if isinstance(key, str) else key
        managed = self._sessions.get(session_id)
        if managed is None:
            raise UnknownSessionIdError(key, self._keys())
        return managed

    def _keys(self) -> list[int | str]:
        """How cells address each session: its name, else its id."""
        return [managed.session.name or session_id for session_id, managed in self._sessions.items()]

    def session(self, session_id: int | str) -> PtySession:
        """The session with this id, for faces that attach, type or resize."""
        return self._get_managed(session_id).session

    def _remove(self, session_id: int) -> asyncio.Task:
        """Take the session out of the table and close it in the background; the closing task."""
        managed = self._sessions.pop(session_id)
        name = managed.session.name
        if name is not None and self._names.get(name) == session_id:
            del self._names[name]
        task = asyncio.ensure_future(managed.session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        # Forgotten by the guardian only once closed: until then it may still need ending.
        task.add_done_callback(lambda _task, pid=managed.session.pid: self._unguard(pid))
        self._changed()
        return task

    def list_sessions(self) -> list[SessionInfo]:
        return [
            SessionInfo(
                session_id=session.session_id,
                command=list(session.command),
                pid=session.pid,
                alive=session.alive,
                exit_code=session.exit_code,
                started=session.started,
                name=session.name,
            )
            for session in (managed.session for managed in self._sessions.values())
        ]

    async def kill(self, session_id: int | str, sig: int | None = None) -> None:
        """Close the session (every process in it), or just send it `sig`."""
        managed = self._get_managed(session_id)
        if sig is not None:
            managed.session.send_signal(sig)
            return
        await self._remove(managed.session.session_id)

    async def close_all(self) -> None:
        sessions = [managed.session for managed in self._sessions.values()]
        self._sessions.clear()
        self._names.clear()
        if sessions:
            self._changed()
        await asyncio.gather(*(session.close() for session in sessions), *self._closing)
        guardian, self._guardian = self._guardian, None
        if guardian is not None:
            await guardian.close()  # everything is closed: it exits and is reaped
        if self.journals is not None:
            await asyncio.wrap_future(self.journals.close_soon())  # its thread joins off the loop

    def _guard(self, leader_pid: int) -> None:
        if self.guardian:
            if self._guardian is None:
                self._guardian = Guardian(asyncio.get_running_loop())
            self._guardian.watch(leader_pid)

    def _unguard(self, leader_pid: int) -> None:
        if self._guardian is not None:
            self._guardian.forget(leader_pid)

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


def _check_no_nul(argv: list[str], cwd: str | None, env: Mapping[str, str] | None) -> None:
    """A NUL cannot pass to exec (the OS ends strings there): refuse it as what it is, before anything starts."""
    where = [f"argument {index}" for index, arg in enumerate(argv) if "\0" in arg]
    if cwd is not None and "\0" in cwd:
        where.append("the working directory")
    where += [f"environment variable {key!r}" for key, value in (env or {}).items() if "\0" in key or "\0" in value]
    if where:
        raise CreateSessionError(argv, ValueError(f"a NUL byte in {', '.join(where)}"))


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _hidden_bytes(session: PtySession, unread: int) -> int:
    """The unread bytes a write leaves out that are output, not the prompt the shell waits at.

    A command line is typed at the prompt, so the prompt is no output anyone missed
    (a typing cell shows the line it typed, then what it printed). What a background
    job printed after the prompt is.
    """
    if session.prompt is None:
        return unread
    begin, end = session.prompt
    end = session.offset if end is None else end
    return unread - max(0, end - max(begin, session.offset - unread))


def _result(session: PtySession, collected: Collected, warnings: str, **counts: int) -> UnifiedExecResult:
    """The seed's answer: the id while the program lives, None and its exit code once it has exited."""
    return UnifiedExecResult(
        session_id=None if session.finished else session.session_id,
        output=warnings + collected.output,
        exit_code=session.exit_code if session.finished else None,
        wall_time=collected.seconds,
        original_token_count=collected.token_count,
        command_exit_code=collected.command_exit_code,
        ended_by=str(collected.ended_by),
        closed=session.closed,
        **counts,
    )
