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
import operator
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Hashable
from dataclasses import dataclass

from .output.buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES
from .output.readers import Readers
from .completion.collect import Collected, WaitFor, collect, compile_until
from .errors import CreateSessionError, InvalidSessionNameError, MissingCommandLineError, UnknownSessionIdError, quoted
from .models import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    SessionInfo,
    UnifiedExecRequest,
    UnifiedExecResult,
)
from .process.guardian import Guardian
from .process.keeper import Keeper
from .kept_sessions import KeptSessions
from .session import SCROLLBACK_BYTES, Kept, PtySession
from .completion.shell_integration import PARENT_PID_VARIABLE, integrate, new_nonce
from .journal.store import JournalStore
from .process.termination import terminate_blocking

log = logging.getLogger(__name__)

MAX_SESSIONS = 64
WARN_SESSIONS = 60
PROTECTED_RECENT_SESSIONS = 8
MAX_WATCH_MS = 3_600_000
NAME_RULE = "a name starts with a letter (of any alphabet) or _, then letters, digits, _ . or - (so it never reads as an id or an option)"
_NAME = re.compile(r"[^\W\d][\w.-]*")  # str patterns match Unicode: \w is any letter or digit, and _


@dataclass
class _Plan:
    """A new session, checked and ready to start."""

    session_id: int
    argv: list[str]
    command: list[str]
    environment: dict[str, str]
    nonce: str | None
    name: str | None
    cwd: str | None
    tty: bool
    buffer_bytes: int


@dataclass
class _Managed:
    session: PtySession
    last_used: float
    readers: Readers  # where each caller has read to: no caller waits behind another (docs/engine.md)
    notice: str = ""  # a warning for the session's first result


class UnifiedExecSessionManager:
    """Sessions by id, on the asyncio loop that first uses the manager.

    Long on purpose: it is the engine's whole public API (pinned names that
    tests and users call), so it keeps the session table (ids, names, the
    least-recently-used cap, listeners, the guardian) beside the requests that
    read it. No request holds a session for its wait: each caller has its own
    cursor (readers.py). Every mechanism it uses lives in its own module:
    collecting until a request is done (collect.py), a session (session.py),
    each caller's cursor (output/readers.py), kept sessions (kept_sessions.py),
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
        keeper: Keeper | None = None,
        keep_sessions: bool = False,
    ):
        """`env` is added to the environment sessions inherit; `env_remove` (names or
        glob patterns such as `JUPYTERHUB_*`) is taken out of it first. `journals`:
        every session's output also goes to a journal there (core/journal/), found
        with `journals.find(key)` also after the session is gone; the manager closes it.
        `keeper`: sessions started with `keep=True` (every one, with `keep_sessions`) outlive
        this process and are taken back by the next with the same keeper (`take_back`)."""
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
        self.keeper = keeper
        self.keep_sessions = keep_sessions
        self.notes: list[str] = []  # what a person should know of sessions no face showed (a take-back that failed)
        self.kept = None if keeper is None else KeptSessions(self, keeper)

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
        cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None,
        integration: bool | None = None,
        keep: bool | None = None,
        reader: Hashable = None,
    ) -> UnifiedExecResult:
        """Start `argv` in a new session, then collect its output (Codex's `exec_command`).

        An integrated shell (see `spawn`) is waited on until its first prompt.
        """
        compile_until(until)  # a bad pattern or timeout starts nothing
        self._clamp_timeout(timeout_ms, 0)
        session_id = await self.launch(argv, name=name, cwd=cwd, env=env, integration=integration, keep=keep)
        return await self.write(session_id, timeout_ms=timeout_ms, stop=stop, until=until, quiet_ms=quiet_ms, first_prompt=True, reader=reader)

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
        reader: Hashable = None,
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

        `reader`: who is asking (a person's cells: None; a `Session` object, an agent's
        connection: a key of its own). The text goes in at once, whoever else waits on the
        session; the output before this call is what this reader has not read yet, and what
        arrives during the wait is collected by every caller waiting then.
        """
        pattern = compile_until(until)
        session = self._get_managed(session_id).session
        command = session.integrated and (bool(text) or first_prompt)
        limits = (max_bytes, max_timeout_ms)
        return await self._collect(session_id, text, timeout_ms, stop, pattern, quiet_ms, earlier_output, command, limits, reader)

    async def handle_request(self, request: UnifiedExecRequest, *, stop: asyncio.Event | None = None, reader: Hashable = None) -> UnifiedExecResult:
        """The seed's entry: `input_chunks` is the argv of a new session, or text joined with spaces."""
        waits = {"timeout_ms": request.timeout_ms, "stop": stop, "until": request.until, "quiet_ms": request.quiet_ms, "reader": reader}
        if request.session_id is None:
            return await self.start(request.input_chunks, name=request.name, cwd=request.cwd, env=request.env, **waits)
        return await self.write(request.session_id, " ".join(request.input_chunks), **waits)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        name: str | None = None,
        cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None,
        integration: bool | None = None,
        tty: bool = True,
        buffer_bytes: int | None = None,
        command: Sequence[str] | None = None,
    ) -> int:
        """Start `argv` in a new session without waiting; its id.

        For a face that subscribes to the session's output before collecting
        it with `write(session_id)`. `name` must not be held by a running
        session. `integration` (default: the manager's `shell_integration`)
        starts bash or zsh so that it reports where each command ends.
        `tty=False` runs it on pipes, stdin closed (pipe_session.py; never integrated).
        `buffer_bytes`: what the session keeps unread between requests (default `output_max_bytes`).
        `command`: what every face (and the journal) shows, when `argv` wraps what the user gave
        (an agent's `cmd` in its shell). A session that may be kept is started with `await launch(...)`.
        """
        plan = self._plan(argv, name, cwd, env, integration, tty, buffer_bytes, command)
        return self._open(plan, None)

    async def launch(
        self,
        argv: Sequence[str],
        *,
        name: str | None = None,
        cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None,
        integration: bool | None = None,
        keep: bool | None = None,
        tty: bool = True,
        buffer_bytes: int | None = None,
    ) -> int:
        """`spawn`, kept or not: `keep` (default: the manager's `keep_sessions`, where it has a keeper)
        has the keeper start and hold it, so it outlives this process (a kernel restart) until the next
        takes it back. Awaits the keeper's answer; the session is open (and read) once this returns."""
        keep = (self.keep_sessions and self.keeper is not None) if keep is None else keep
        if keep and self.keeper is None:
            raise CreateSessionError(list(argv), ValueError("kept sessions are off in this kernel (they need a kernel started by Jupyter, with its connection file)"))
        if keep and not tty:
            raise CreateSessionError(list(argv), ValueError("a kept session runs in a terminal (tty=True)"))
        plan = self._plan(argv, name, cwd, env, integration, tty, buffer_bytes)
        if not keep:
            return self._open(plan, None)
        # One start time for the session and the keeper's note of it: a view finds a kept session by it after a restart.
        started = time.time()
        try:
            # Where an unkept session would start: this process's directory as it is now (%cd moves it).
            spawned = await self.keeper.spawn(plan.session_id, plan.argv, plan.environment, cwd=plan.cwd or os.getcwd(), rows=24, cols=80,
                                              handoff=None if plan.nonce is None else f"{plan.nonce}\n",
                                              meta={"name": name, "command": plan.command, "nonce": plan.nonce, "started": started},
                                              own_pid_in=[PARENT_PID_VARIABLE] if PARENT_PID_VARIABLE in plan.environment else [])
        except OSError as error:
            raise CreateSessionError(plan.command, error) from error
        kept = Kept(spawned.pid, spawned.master_fd, spawned.output_fd, started=started)
        try:
            self._check_name(plan.command, name)  # another session may have taken it while the keeper answered
        except InvalidSessionNameError:
            for fd in (kept.master_fd, kept.output_fd):
                os.close(fd)
            self.keeper.forget(plan.session_id)  # the keeper ends what it started
            raise
        return self._open(plan, kept)

    def _plan(self, argv, name, cwd, env, integration, tty=True, buffer_bytes=None, command=None) -> _Plan:
        """Everything a new session needs, checked before anything starts (its id taken last)."""
        argv = list(argv)
        command = argv if command is None else list(command)  # what the user gave, shown in every face
        if not argv or not argv[0]:
            raise MissingCommandLineError()
        self._check_name(argv, name)
        cwd, env = _as_path(argv, cwd), _as_environment(argv, env)
        _check_no_nul(argv, cwd, env)
        if cwd is not None and not os.path.isdir(cwd):
            raise CreateSessionError(argv, NotADirectoryError(f"no such directory: {quoted(cwd)}"))
        self._make_room()
        environment = {**self._inherited_env(), "TERM": "xterm-256color", **self.env, **env}
        nonce = None
        if tty and (self.shell_integration if integration is None else integration):
            nonce = new_nonce()
            integrated = integrate(argv, environment, nonce)
            if integrated is None:
                nonce = None  # not bash or zsh, or not interactive: runs as it is
            else:
                argv, environment = integrated
        # The id only once every check passed: a refused request takes none.
        return _Plan(next(self._next_id), argv, command, environment, nonce, name, cwd, tty,
                     self.output_max_bytes if buffer_bytes is None else buffer_bytes)

    def _open(self, plan: _Plan, kept: Kept | None) -> int:
        session_id = plan.session_id
        if plan.tty:
            kind = PtySession
        else:
            from .pipe_session import PipeSession  # the rare `tty=False`: its pipes' code comes with the first

            kind = PipeSession
        try:
            session = kind(
                session_id,
                plan.argv,
                plan.environment,
                buffer_bytes=plan.buffer_bytes,
                scrollback_bytes=self.scrollback_bytes,
                backend=self.spawn_backend,
                cwd=plan.cwd,
                prompt_nonce=plan.nonce,
                name=plan.name,
                command=plan.command,
                kept=kept,
            )
        except OSError as error:
            raise CreateSessionError(plan.command, error) from error
        if self.journals is not None:
            # Before the loop reads its first output; a kept session's journal lives with its keeper.
            self.journals.record(session, self.keeper.journal_dir if kept is not None else None)
        managed = self._add(session)
        if kept is not None:
            self.kept.opened(session)
        else:
            self._guard(session.pid)
        if len(self._sessions) >= self.warn_sessions:
            managed.notice = (
                f"Warning: {len(self._sessions)} sessions are open; at {self.max_sessions} the least "
                "recently used one will be closed to make room. Close the ones you no longer need.\n"
            )
        self._changed()
        return session_id

    def _check_name(self, argv: list[str], name: str | None) -> None:
        if name is None:
            return
        if not _NAME.fullmatch(name):
            raise InvalidSessionNameError(f"{quoted(name)} cannot name a session: {NAME_RULE}")
        holder = self._sessions.get(self._names.get(name, -1))
        if holder is not None and holder.session.alive:
            raise InvalidSessionNameError(f"the name {quoted(name)} is held by running session {holder.session.session_id}")

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
        reader: Hashable = None,
    ) -> UnifiedExecResult:
        """`command`: an integrated shell is done when its prompt is back (after a typed
        command, or at its first prompt); such a wait defaults to `max_timeout_ms`.

        Nothing is held for the wait: each caller subscribes for itself (collect.py), so
        another caller's write goes in and its wait runs meanwhile."""
        managed = self._get_managed(key)
        session = managed.session
        session_id = session.session_id
        max_bytes = self.output_max_bytes if limits[0] is None else limits[0]
        timeout_ms, warning = self._clamp_timeout(timeout_ms, self.max_timeout_ms if command else self.default_timeout_ms, limits[1])
        managed.last_used = time.monotonic()
        notice, managed.notice = managed.notice, ""
        # What the program printed before this request is read first, so a
        # prompt marker of an earlier command cannot end this wait.
        session.terminal.read_pending()
        unread, dropped = session.buffer.since(managed.readers.cursor(reader))
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
            managed.readers.read_to(reader, session.offset)  # the collector has it all
            session.buffer.forget_before(managed.readers.oldest())
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
        if not requested >= 0:  # NaN too
            raise ValueError(f"timeout must be 0 or more milliseconds, not {quoted(requested)}")
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
        key = _session_key(key)
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
        managed = self._take_out(session_id)
        task = asyncio.ensure_future(managed.session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        # Forgotten by the guardian (or the keeper) only once closed: until then it may still need ending.
        if managed.session.kept:
            task.add_done_callback(self.kept.removed(session_id))
        else:
            task.add_done_callback(lambda _task, pid=managed.session.pid: self._unguard(pid))
        self._changed()
        return task

    def list_sessions(self) -> list[SessionInfo]:
        return [session_info(managed.session) for managed in self._sessions.values()]

    async def kill(self, session_id: int | str, sig: int | None = None) -> None:
        """Close the session (every process in it), or just send it `sig`."""
        managed = self._get_managed(session_id)
        if sig is not None:
            managed.session.send_signal(sig)
            return
        await self._remove(managed.session.session_id)

    async def close_all(self) -> None:
        """End every session, kept ones too (and their keeper), and what the manager started."""
        sessions = [managed.session for managed in self._sessions.values()]
        self._sessions.clear()
        self._names.clear()
        if sessions:
            self._changed()
        await asyncio.gather(*(session.close() for session in sessions), *self._closing)
        if self.kept is not None:
            self.kept.end()
        guardian, self._guardian = self._guardian, None
        if guardian is not None:
            await guardian.close()  # everything is closed: it exits and is reaped
        if self.journals is not None:
            await asyncio.wrap_future(self.journals.close_soon())  # its thread joins off the loop

    def _guard(self, leader_pid: int) -> None:
        if self.guardian:
            self._the_guardian().watch(leader_pid)

    def _the_guardian(self) -> Guardian:
        if self._guardian is None:
            journal_dir = self.journals.directory if self.journals is not None else None
            self._guardian = Guardian(asyncio.get_running_loop(), journal_dir=journal_dir)
            if self.keeper is not None:
                self._guardian.on_new_pipe(self.keeper.new_guardian)
                self._guardian.on_news(self.keeper.news)
        return self._guardian

    def _unguard(self, leader_pid: int) -> None:
        if self._guardian is not None:
            self._guardian.forget(leader_pid)

    def terminate_all_threadsafe(self, grace: float = 0.2, *, kept: bool = False) -> None:
        """End every session's processes from any thread (a shutdown hook, atexit). Blocks.

        Kept sessions are left to their keeper (this process may be restarting) unless `kept`:
        a real shutdown, which also tells the keeper to end them and go."""
        sessions = [managed.session for managed in list(self._sessions.values())]
        pids = [session.pid for session in sessions if kept or not session.kept]
        if pids:
            terminate_blocking(pids, grace)
        if kept and self.keeper is not None:
            self.keeper.end_blocking()  # one that does not end (stalled) is killed: nothing waits for its grace

    # -- kept sessions (kept_sessions.py) ----------------------------------------------

    def let_go_of_kept(self) -> None:
        """Stop holding kept sessions without ending them, as a kernel that exits does (the keeper holds them)."""
        if self.kept is not None:
            self.kept.let_go()

    async def take_back(self) -> list[int]:
        """Take back the sessions the keeper held for this kernel id: their ids (none without a keeper).

        On the engine's loop, before any session starts: they keep their ids, names and
        journals, and new sessions are numbered after them. Raises KeeperError (one line)
        when a keeper is there but refuses this process.
        """
        return [] if self.kept is None else await self.kept.take_back()

    def _add(self, session: PtySession) -> _Managed:
        """Put a session in the table (by id, and by name)."""
        managed = self._sessions[session.session_id] = _Managed(session, time.monotonic(), Readers(session.offset))
        if session.name is not None:
            self._names[session.name] = session.session_id
        session.on_exit(lambda _session: self._changed())
        return managed

    def _take_out(self, session_id: int) -> _Managed:
        """Take a session out of the table (by id, and by name), leaving it as it is."""
        managed = self._sessions.pop(session_id)
        name = managed.session.name
        if name is not None and self._names.get(name) == session_id:
            del self._names[name]
        return managed

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


def _session_key(key) -> int | str:
    """An id (any integer type: numpy's too) or a name; never a bool, which Python would take as 0 or 1."""
    if isinstance(key, str):
        return key
    try:
        if not isinstance(key, bool):
            return operator.index(key)
    except TypeError:
        pass
    shown = repr(key) if isinstance(key, bool) else f"a {type(key).__name__}"
    raise TypeError(f"a session is its id (an int) or its name (a str), not {shown}")


def _as_path(argv: list[str], cwd) -> str | None:
    """A working directory as Python code gives one (`str`, `pathlib.Path`, any `os.PathLike`, bytes) as the str exec takes."""
    if cwd is None:
        return None
    try:
        return os.fsdecode(cwd)
    except TypeError:
        raise CreateSessionError(argv, TypeError(f"the working directory must be a path (str or os.PathLike), not {type(cwd).__name__}")) from None


def _as_environment(argv: list[str], env) -> dict[str, str]:
    """A session's own variables as `str`s; a value of another type (`{"RETRIES": 3}`) is refused, naming its variable.

    A path (`os.PathLike`) is taken as its text, as `subprocess` takes it; a number is not
    guessed at (`3` or `3.0`?), as `os.environ` refuses it too.
    """
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise CreateSessionError(argv, TypeError(f"env must be a mapping of names to strings, not {type(env).__name__}"))
    environment = {}
    for key, value in env.items():
        if not isinstance(key, str):
            raise CreateSessionError(argv, TypeError(f"an environment variable's name must be a str, not {type(key).__name__}"))
        if not isinstance(value, (str, os.PathLike)):
            raise CreateSessionError(argv, TypeError(f"environment variable {quoted(key)} must be a str (or os.PathLike), not {type(value).__name__}"))
        environment[key] = os.fsdecode(value)
    return environment


def _check_no_nul(argv: list[str], cwd: str | None, env: Mapping[str, str] | None) -> None:
    """A NUL cannot pass to exec (the OS ends strings there): refuse it as what it is, before anything starts."""
    where = [f"argument {index}" for index, arg in enumerate(argv) if "\0" in arg]
    if cwd is not None and "\0" in cwd:
        where.append("the working directory")
    where += [f"environment variable {quoted(key)}" for key, value in (env or {}).items() if "\0" in key or "\0" in value]
    if where:
        raise CreateSessionError(argv, ValueError(f"a NUL byte in {', '.join(where)}"))


def session_info(session: PtySession) -> SessionInfo:
    """A session as the faces list it (also once it has ended: what a face heard at its exit)."""
    return SessionInfo(
        session_id=session.session_id,
        command=list(session.command),
        pid=session.pid,
        alive=session.alive,
        exit_code=session.exit_code,
        started=session.started,
        name=session.name,
        kept=session.kept,
        restarts=session.restarts,
        note=session.note,
    )


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
        command_output=collected.command_output,
        ended_by=str(collected.ended_by),
        closed=session.closed,
        **counts,
    )
