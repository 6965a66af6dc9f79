"""Sessions from Python: what the magics do, as calls that return the engine's results.

    from unified_exec_kernel import sessions

    sh = sessions.start("bash -i", name="sh")       # a Session, at the shell's first prompt
    result = sh.run("make test")                    # a UnifiedExecResult once the command is done
    result.output, result.command_exit_code, result.timed_out
    sessions.run(["ssh", host, "uptime"]).exit_code  # a program, to its exit
    sh.wait_for(r"^ready$"); sh.output(tail=20); sh.commands(); sh.kill(); sh.info; sh.view()

Each call that waits has a plain form, which blocks the calling thread only
(every session is read on the engine's own thread, so a blocked main thread
stops none), and an awaitable twin named `..._async`, as IPython names
`run_cell` and `run_cell_async`. The plain form runs the awaitable on a
loop of its own (blocking.py), so it works in a cell, inside `%time` or a
thread, and in a script. The `%%uexec` magic sends the same `Turn` (turns.py):
one way to start, type and wait, whichever face asks.

A result's `output` is what the program printed, as a cell shows it (`\r`s,
redraws and the terminal's modes resolved, colours kept, lines ending in `\n`);
for a command typed into an integrated shell, what the command printed, without
the echoed line and the next prompt (`CellOutput.for_python`, which `%%uexec
--out` uses too). `raw=True` gives the engine's result as it came: the whole
transcript as the terminal sent it.

Whose engine: in a kernel, the one `%load_ext unified_exec_kernel` made (the
uexec kernel loads it); in a program with no IPython (a script), one of the
program's own, started with the first call, on its own thread, with the
default settings, and ended with the program. Errors are the engine's
(`UnknownSessionIdError`, `CreateSessionError`, ...: `UnifiedExecError`),
each one line.
"""

from __future__ import annotations

import atexit
import builtins
import functools
import itertools
import math
import numbers
import os
import shlex
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.completion.collect import compile_until
from ..core.errors import StdinClosedError, UnifiedExecError, UnknownSessionIdError, quoted
from ..core.journal.paging import PageRequest, parse_range
from ..core.keys import keys_text, signal_number
from ..core.journal import Command
from ..core.manager import UnifiedExecSessionManager, session_info
from ..core.models import SessionInfo, UnifiedExecResult, exit_state
from ..core.process.forks import this_process_only
from ..jupyter.bridge import Bridge
from . import shell_words
from .blocking import run_blocking
from .cell_output import CellOutput
from .turns import Turn, finish_turn, open_turn, take_turn

__all__ = ["Session", "TypedCommand", "get", "get_async", "list", "list_async", "run", "run_async", "start", "start_async"]


# -- whose engine --------------------------------------------------------------


@dataclass(frozen=True)
class _Engine:
    manager: UnifiedExecSessionManager
    bridge: Bridge
    live_view: Any = None  # what shows a session live (a kernel's); None in a script


def _engine() -> _Engine:
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return _own_engine()
    from ..jupyter.current import magics_of

    magics = magics_of(shell)  # one line if the extension is not loaded
    return _Engine(magics.manager, magics.bridge, magics.live_view)


_own: _Engine | None = None
_own_lock = threading.Lock()


def _own_engine() -> _Engine:
    """A program without IPython gets an engine of its own: the default settings, journals in Jupyter's runtime dir."""
    global _own
    with _own_lock:
        if _own is None:
            from ..jupyter.config import UnifiedExec

            settings = UnifiedExec()
            try:
                journals = settings.journal_store(f"python-{os.getpid()}")
            except OSError:
                journals = None  # no runtime dir to write to: sessions without journals
            manager = UnifiedExecSessionManager(**settings.manager_options(), journals=journals)
            bridge = Bridge()
            atexit.register(this_process_only(_end_own), manager, bridge)  # a forked child's exit ends none of them
            _own = _Engine(manager, bridge)
        return _own


def _forget_own_engine() -> None:
    """A forked child has no engine thread: its first call starts an engine of its own."""
    global _own, _own_lock
    _own, _own_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_own_engine)


def _end_own(manager: UnifiedExecSessionManager, bridge: Bridge) -> None:
    """At the program's exit: every session's processes, then the engine's thread, then the journals."""
    manager.terminate_all_threadsafe(kept=True)
    bridge.stop()
    if manager.journals is not None:
        manager.journals.close()


def _plain(twin: Callable[..., Any]) -> Callable[..., Any]:
    """The blocking form of an `..._async` call: the same call, run to its end on this thread."""

    @functools.wraps(twin)
    def plain(*args, **kwargs):
        __tracebackhide__ = True  # IPython: the caller's line and the error, not the plumbing
        try:
            return run_blocking(twin(*args, **kwargs))
        except (UnifiedExecError, ValueError, TypeError) as error:
            # The engine's errors and the calls' argument checks (`cwd=3`, `get(True)`) are one
            # line each; where on the engine's thread they rose is no help here.
            raise error.with_traceback(None) from None

    plain.__name__ = plain.__qualname__ = twin.__name__.removesuffix("_async")
    plain.__doc__ = (twin.__doc__ or "") + "\n\nBlocks the calling thread until done; `" + twin.__name__ + "` is the awaitable form."
    return plain


async def _on_engine(engine: _Engine, function: Callable[..., Any], *args: Any) -> Any:
    if engine.bridge.on_engine():
        raise RuntimeError("a session call on the engine's own thread would wait for itself")
    return await engine.bridge.run(function, *args)


def _argv(command: str | Sequence[str]) -> list[str]:
    """A string is split as a shell would split it (not run by one: `["bash", "-c", script]` for that)."""
    if isinstance(command, str):
        try:
            return shell_words.split(command)
        except ValueError as error:
            raise ValueError(f"cannot split the command line: {error}") from None
    return builtins.list(command)


def _shown(result: UnifiedExecResult, raw: bool) -> UnifiedExecResult:
    return CellOutput.for_python(result, raw=raw)


class _End:
    """A session's state at its exit, heard on the engine's thread when it came.

    The engine forgets a session once its exit is reported (to whichever caller) or it is
    killed; a `Session` object outlives that and still says how it ended. It keeps this
    small record, not the session (whose buffers the engine lets go of).
    """

    info: SessionInfo | None = None

    def heard(self, session) -> None:
        self.info = session_info(session)


_ends: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a session's one record, however many objects name it


def _hear_end(manager: UnifiedExecSessionManager, session_id: int) -> _End:
    """On the engine's loop, in the trip that finds the session (an exit heard later is never missed)."""
    session = manager.session(session_id)
    end = _ends.get(session)
    if end is None:
        end = _ends[session] = _End()
        session.on_exit(end.heard)
    return end


@dataclass(frozen=True)
class TypedCommand:
    """A command typed into an integrated shell, from the session's journal (`%uexec_output --commands`).

    `number` is the journal's (`Session.output(command=number)` pages its output), `started` a
    `time.time()`, `seconds` how long it ran (None while it runs), `exit_code` None while it
    runs or when the shell gave none.
    """

    number: int
    text: str
    exit_code: int | None
    started: float
    seconds: float | None

    @property
    def running(self) -> bool:
        return self.seconds is None


def _typed(command: Command, journal_started: float) -> TypedCommand:
    seconds = None if command.end_time is None else command.end_time - command.time
    return TypedCommand(command.number, command.text, command.exit_code, journal_started + command.time, seconds)


def _ms(seconds: float | None, what: str) -> int | float | None:
    """Seconds as the engine's milliseconds. Longer than any int can say (`inf`, `1e308`) stays
    `inf`, which the engine clamps to its longest wait with its warning line, as any long one."""
    if seconds is None:
        return None
    # `seconds != seconds`: NaN, which no comparison refuses and no wait can mean.
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real) or seconds != seconds or seconds < 0:
        raise ValueError(f"{what} must be 0 or more seconds, not {quoted(seconds)}")
    ms = seconds * 1000
    return ms if ms == math.inf else round(ms)


# -- the calls -----------------------------------------------------------------


_readers = itertools.count()


class Session:
    """One session of this kernel (or of this program's engine), by id; what `start` and `get` return."""

    def __init__(self, session_id: int, name: str | None, command: Sequence[str], started: UnifiedExecResult | None = None, end: _End | None = None):
        self.id = session_id
        self.name = name
        self.command = builtins.list(command)
        self.started = started  # what the start's wait collected (a shell's first prompt); None if it did not wait
        self._end = _End() if end is None else end
        # Its own cursor in the session's output: what another caller collected is not taken from it.
        self._reader = ("python", next(_readers))

    def __repr__(self) -> str:
        label = f"{self.id} {self.name!r}" if self.name else str(self.id)
        info = self._info_or_none()
        state = "gone" if info is None else exit_state(info.alive, info.exit_code)  # "exited with code -1": a kill's hangup
        return f"<Session {label}: {shlex.join(self.command)}, {state}>"

    @property
    def info(self) -> SessionInfo:
        """How `%uexec_sessions` lists it now: pid, state, exit code; once it has ended (or was
        killed), as it was at its exit: `alive` False, its `exit_code` (negative: the signal)."""
        info = self._info_or_none()
        if info is None:
            raise UnknownSessionIdError(self.id)
        return info

    def _info_or_none(self) -> SessionInfo | None:
        engine = _engine()
        listed = engine.bridge.call(engine.manager.list_sessions)
        listed_info = next((info for info in listed if info.session_id == self.id), None)
        return self._end.info if listed_info is None else listed_info

    async def write_async(
        self,
        text: str | bytes = "",
        *,
        keys: Sequence[str] = (),
        timeout: float | None = None,
        until: str | None = None,
        quiet: float | None = None,
        raw: bool = False,
    ) -> UnifiedExecResult:
        """Type `text` as it is (add the `\\n` yourself; bytes go to the terminal as they are), then the
        named `keys` (`"C-c"`, `"Enter"`, ...); then collect what it printed: up to `timeout` seconds
        (default 1, or the longest with `until` or `quiet`), until a line matches `until` (a regex),
        or `quiet` seconds without output."""
        if isinstance(text, (bytes, bytearray, memoryview)):
            text = bytes(text).decode("utf-8", "surrogateescape")  # the terminal gets these very bytes back
        elif not isinstance(text, str):
            raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
        typed = text + keys_text(builtins.list(keys))
        return await self._turn(typed, timeout, until, quiet, raw, longest=until is not None or quiet is not None)

    async def run_async(self, command: str, *, timeout: float | None = None, raw: bool = False) -> UnifiedExecResult:
        """Type `command` and Enter; in an integrated bash or zsh, wait until it is done (its status in
        `command_exit_code`; at most `timeout` seconds, default the longest). In any other program,
        this is `write(command + "\\n")`."""
        return await self._turn(command + "\n", timeout, None, None, raw)

    async def wait_for_async(
        self, pattern: str | None = None, *, quiet: float | None = None, timeout: float | None = None, raw: bool = False
    ) -> UnifiedExecResult:
        """Collect what it prints until a line matches `pattern` (a regex), `quiet` seconds pass without
        output, the program exits, or `timeout` seconds (default the longest) pass."""
        compile_until(pattern, "pattern")  # named as this call names it
        return await self._turn("", timeout, pattern, quiet, raw, longest=True)

    async def _turn(self, text: str, timeout: float | None, until: str | None, quiet: float | None, raw: bool, *, longest: bool = False) -> UnifiedExecResult:
        engine = _engine()
        timeout_ms = _ms(timeout, "timeout")
        if timeout_ms is None and longest:
            timeout_ms = engine.manager.max_timeout_ms
        turn = Turn(session=self.id, text=text, timeout_ms=timeout_ms, until=until, quiet_ms=_ms(quiet, "quiet"), reader=self._reader)
        try:
            result = await _on_engine(engine, take_turn, engine.manager, turn)
        except StdinClosedError as error:
            # The engine words it for Codex's models (`exec_command`); here a session starts with `tty=`.
            raise StdinClosedError(error.session_id, "start it with sessions.start(..., tty=True) to keep stdin open") from None
        return _shown(result, raw)

    async def output_async(
        self,
        *,
        head: int | None = None,
        tail: int | None = None,
        lines: str | None = None,
        grep: str | None = None,
        context: int = 0,
        command: int | None = None,
        raw: bool = False,
    ) -> str:
        """What it printed, from its journal (also once it has ended), as `%uexec_output` shows it:
        rendered as a terminal leaves it (`raw`: untouched). `head`/`tail` N lines, `lines` "A:B",
        `grep` a regex (lines numbered as grep -n, `context` around), `command` the K-th typed
        command's output (-1 the last)."""
        from . import journal_pages

        request = PageRequest(
            head=head, tail=tail, lines=None if lines is None else parse_range(lines, "lines"), grep=grep, context=context, command=command
        )
        _entry, shown = await journal_pages.read_page(_engine().manager.journals, self.id, request)
        return journal_pages.page_text(shown, raw=raw)

    async def commands_async(self) -> builtins.list[TypedCommand]:
        """Each command typed into it (an integrated bash or zsh), in order, with its exit code, when it
        started and how long it ran: `%uexec_output --commands`, from its journal (also once it ended)."""
        from . import journal_pages

        entry, commands = await journal_pages.read_commands(_engine().manager.journals, self.id)
        return [_typed(command, entry.started) for command in commands if not command.restart]

    async def kill_async(self, signal: str | int | None = None) -> None:
        """End it (every process in it), or only send `signal` ("INT", "TERM", 15, ...) to it."""
        engine = _engine()
        sig = None if signal is None else signal_number(signal)
        await _on_engine(engine, engine.manager.kill, self.id, sig)

    write = _plain(write_async)
    run = _plain(run_async)
    wait_for = _plain(wait_for_async)
    output = _plain(output_async)
    commands = _plain(commands_async)
    kill = _plain(kill_async)

    def view(self):
        """A live terminal of it (a widget: the last line of a cell shows it, or `display(...)`)."""
        engine = _engine()
        if engine.live_view is None:
            raise UnifiedExecError("a live view needs a notebook kernel: %load_ext unified_exec_kernel")
        engine.bridge.call(engine.manager.session, self.id)  # one line if it is gone
        return engine.live_view(self.id)


async def start_async(
    command: str | Sequence[str],
    *,
    name: str | None = None,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str | os.PathLike] | None = None,
    keep: bool | None = None,
    tty: bool = True,
    integration: bool | None = None,
    until: str | None = None,
    quiet: float | None = None,
    timeout: float | None = None,
    raw: bool = False,
) -> Session:
    """Start `command` (a list, or a string split as a shell would) in a new session.

    Returns once it runs: an integrated bash or zsh at its first prompt, with
    `until` once a line matches, with `quiet` once it went quiet (at most `timeout`
    seconds). `tty=False` runs it on pipes (stdin closed); `keep=True` keeps it across
    kernel restarts; `integration=False` starts bash or zsh as it is.
    """
    engine = _engine()
    argv = _argv(command)
    waits = until is not None or quiet is not None
    timeout_ms = _ms(timeout, "timeout")
    if timeout_ms is None and waits:
        timeout_ms = engine.manager.max_timeout_ms
    turn = Turn(
        argv=argv, name=name, cwd=cwd, env=env, keep=keep, tty=tty, integration=integration,
        until=until, quiet_ms=_ms(quiet, "quiet"), timeout_ms=timeout_ms,
    )

    async def start_and_wait() -> tuple[int, _End, UnifiedExecResult | None]:
        opened = await open_turn(engine.manager, turn)
        end = _hear_end(engine.manager, opened.session_id)
        if timeout_ms is None and not engine.manager.session(opened.session_id).integrated:
            return opened.session_id, end, None  # nothing to wait for: its output stays for the next call
        return opened.session_id, end, await finish_turn(engine.manager, turn, opened)

    session_id, end, started = await _on_engine(engine, start_and_wait)
    return Session(session_id, name, argv, None if started is None else _shown(started, raw), end)


async def run_async(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str | os.PathLike] | None = None,
    tty: bool = True,
    timeout: float | None = None,
    raw: bool = False,
) -> UnifiedExecResult:
    """Run `command` (a list, or a string split as a shell would) in a new session until it exits
    (at most `timeout` seconds, default the longest): its output and `exit_code`. One that is
    still running then is not stopped (`timed_out`; its `session_id` is set)."""
    engine = _engine()
    timeout_ms = _ms(timeout, "timeout")
    turn = Turn(argv=_argv(command), cwd=cwd, env=env, tty=tty, integration=False, timeout_ms=engine.manager.max_timeout_ms if timeout_ms is None else timeout_ms)
    return _shown(await _on_engine(engine, take_turn, engine.manager, turn), raw)


async def get_async(key: int | str) -> Session:
    """The running (or exited, not yet reported) session with this id or name."""
    engine = _engine()

    def find() -> tuple[Any, _End]:
        session = engine.manager.session(key)
        return session, _hear_end(engine.manager, session.session_id)

    session, end = await _on_engine(engine, find)
    return Session(session.session_id, session.name, session.command, end=end)


async def list_async() -> builtins.list[SessionInfo]:
    """Every session, as `%uexec_sessions` lists them."""
    engine = _engine()
    return await _on_engine(engine, engine.manager.list_sessions)


start = _plain(start_async)
run = _plain(run_async)
get = _plain(get_async)
list = _plain(list_async)  # noqa: A001 - `sessions.list()`, as the module is read
