"""The newest Codex contract as a profile of requests: `exec_command` and `write_stdin`.

Models are trained on it (Codex's `unified_exec`, read at upstream 343074d4):
its parameter names and defaults, its yield clamps, pipes unless `tty`, a
login shell, an environment that keeps programs from paging or colouring,
a token budget per result. An agent that drives our engine through this
profile gets what it expects; a person's `%%uexec` and the seed's API keep
their own defaults, since this is a profile a request asks for, never a
change of the engine's behaviour.

What the engine already does as Codex does, it does once for both: at most
64 sessions with the 8 most recently used protected and the least recently
used exited one pruned first (manager.py `_make_room`); returning as soon as
the program exited and its output drained; the middle-truncation marker
(output/truncate.py); the result's text (agent_format.py).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from .agent_format import format_for_agent
from .manager import UnifiedExecSessionManager
from .models import UnifiedExecResult
from .output.truncate import APPROX_BYTES_PER_TOKEN
from .errors import one_line, quoted

MIN_YIELD_TIME_MS = 250
MAX_YIELD_TIME_MS = 30_000
MIN_EMPTY_YIELD_TIME_MS = 5_000  # an empty write (a poll) waits at least this long
MAX_BACKGROUND_YIELD_TIME_MS = 300_000  # ... and at most this long
DEFAULT_EXEC_YIELD_TIME_MS = 10_000
DEFAULT_WRITE_YIELD_TIME_MS = 250
DEFAULT_MAX_OUTPUT_TOKENS = 10_000
OUTPUT_MAX_BYTES = 1024 * 1024  # what a session keeps unread between calls
MAX_PROCESSES = 64
MAX_CHARS_BYTES = 1024 * 1024  # one write_stdin's `chars`, at most

AGENT_ENV: Mapping[str, str] = {
    "NO_COLOR": "1",
    "TERM": "dumb",
    "LANG": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "COLORTERM": "",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GH_PAGER": "cat",
}
"""What every agent call's program gets: no colour, no pager, UTF-8 (Codex's UNIFIED_EXEC_ENV without its own CODEX_CI)."""

EXEC_COMMAND_DESCRIPTION = "Runs a command in a PTY, returning output or a session ID for ongoing interaction."
WRITE_STDIN_DESCRIPTION = "Writes characters to an existing unified exec session and returns recent output."


class ProfileError(ValueError):
    """A request the profile refuses, said in one line (a model's bad argument, not a crash)."""

    name = "BadRequest"


@dataclass(frozen=True)
class ExecCommand:
    cmd: str
    workdir: str | None = None
    tty: bool = False
    yield_time_ms: int = DEFAULT_EXEC_YIELD_TIME_MS
    max_output_tokens: int | None = None
    shell: str | None = None
    login: bool | None = None

    @classmethod
    def from_arguments(cls, arguments: Mapping) -> ExecCommand:
        """From a tool call's arguments (JSON): each field checked, unknown ones refused."""
        fields = _fields(arguments, {"cmd", "workdir", "tty", "yield_time_ms", "max_output_tokens", "shell", "login"})
        cmd = fields.get("cmd")
        if not isinstance(cmd, str) or not cmd.strip():
            raise ProfileError("cmd must be a non-empty string (the shell command to run)")
        return cls(
            cmd=cmd,
            workdir=_optional(fields, "workdir", str),
            tty=bool(_optional(fields, "tty", bool)),
            yield_time_ms=_count(fields, "yield_time_ms", DEFAULT_EXEC_YIELD_TIME_MS),
            max_output_tokens=_count(fields, "max_output_tokens", None),
            shell=_optional(fields, "shell", str),
            login=_optional(fields, "login", bool),
        )

    def argv(self) -> list[str]:
        """The shell Codex would start: the user's (else bash) with `-lc` (login, the default) or `-c`."""
        shell = self.shell or os.environ.get("SHELL") or "/bin/bash"
        return [shell, "-lc" if self.login is not False else "-c", self.cmd]


@dataclass(frozen=True)
class WriteStdin:
    session_id: int
    chars: str = ""
    yield_time_ms: int = DEFAULT_WRITE_YIELD_TIME_MS
    max_output_tokens: int | None = None

    @classmethod
    def from_arguments(cls, arguments: Mapping) -> WriteStdin:
        fields = _fields(arguments, {"session_id", "chars", "yield_time_ms", "max_output_tokens"})
        session_id = _count(fields, "session_id", None)
        if session_id is None:
            raise ProfileError("session_id is required (the id exec_command returned)")
        chars = _optional(fields, "chars", str) or ""
        if len(chars.encode("utf-8", "surrogatepass")) > MAX_CHARS_BYTES:
            raise ProfileError(f"chars is too long: at most {MAX_CHARS_BYTES} bytes a call")
        return cls(session_id, chars, _count(fields, "yield_time_ms", DEFAULT_WRITE_YIELD_TIME_MS), _count(fields, "max_output_tokens", None))


def exec_yield_ms(requested: int) -> int:
    return min(max(requested, MIN_YIELD_TIME_MS), MAX_YIELD_TIME_MS)


def write_yield_ms(requested: int, chars: str) -> int:
    """An empty write polls: it waits 5 s at least, 300 s at most; a write with text, 250 ms to 30 s."""
    if chars:
        return exec_yield_ms(requested)
    return min(max(requested, MIN_EMPTY_YIELD_TIME_MS), MAX_BACKGROUND_YIELD_TIME_MS)


def output_bytes(max_output_tokens: int | None) -> int:
    """A result's byte budget: the token budget at the engine's 4 bytes a token."""
    tokens = DEFAULT_MAX_OUTPUT_TOKENS if max_output_tokens is None else max_output_tokens
    return tokens * APPROX_BYTES_PER_TOKEN


async def exec_command(manager: UnifiedExecSessionManager, request: ExecCommand, *, stop: asyncio.Event | None = None, name: str | None = None) -> UnifiedExecResult:
    """Start `request.cmd` in the agent's shell and environment; wait up to its clamped yield."""
    return await first_result(manager, spawn(manager, request, name=name), request, stop=stop)


def spawn(manager: UnifiedExecSessionManager, request: ExecCommand, *, name: str | None = None) -> int:
    """Start `request.cmd` without waiting (a face that streams output subscribes before `first_result`)."""
    workdir = None if not request.workdir else os.path.abspath(request.workdir)
    # What the agent gave is `cmd`: a person (and its journal) reads that, not the shell wrapped around it.
    return manager.spawn(request.argv(), name=name, cwd=workdir, env=dict(AGENT_ENV), integration=False, tty=request.tty,
                         buffer_bytes=OUTPUT_MAX_BYTES, command=[request.cmd])


async def first_result(
    manager: UnifiedExecSessionManager, session_id: int, request: ExecCommand, *, stop: asyncio.Event | None = None, reader: Hashable = None
) -> UnifiedExecResult:
    """What `exec_command` answers for a session `spawn` started (`reader`: the agent, manager.write)."""
    return await manager.write(
        session_id,
        timeout_ms=exec_yield_ms(request.yield_time_ms),
        stop=stop,
        max_bytes=output_bytes(request.max_output_tokens),
        max_timeout_ms=MAX_YIELD_TIME_MS,
        reader=reader,
    )


async def write_stdin(
    manager: UnifiedExecSessionManager, request: WriteStdin, *, stop: asyncio.Event | None = None, reader: Hashable = None
) -> UnifiedExecResult:
    """Type `request.chars` (nothing: poll) into a running session; wait up to the clamped yield."""
    return await manager.write(
        request.session_id,
        request.chars,
        timeout_ms=write_yield_ms(request.yield_time_ms, request.chars),
        stop=stop,
        max_bytes=output_bytes(request.max_output_tokens),
        max_timeout_ms=MAX_BACKGROUND_YIELD_TIME_MS,
        reader=reader,
    )


def render(result: UnifiedExecResult) -> str:
    """The text a model reads: Codex's grammar (agent_format.py)."""
    return format_for_agent(result)


def failure(tool: str, error: BaseException) -> str:
    """A refused call as Codex words it to the model: `<tool> failed: <reason>`, one line."""
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return one_line(f"{tool} failed: {reason}")


def _fields(arguments, known: set[str]) -> dict:
    if not isinstance(arguments, Mapping):
        raise ProfileError(f"arguments must be an object, not {type(arguments).__name__}")
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise ProfileError(f"unknown argument {quoted(unknown[0])}; expected {', '.join(sorted(known))}")
    return {key: value for key, value in arguments.items() if value is not None}


def _optional(fields: dict, name: str, kind: type):
    value = fields.get(name)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise ProfileError(f"{name} must be a {'boolean' if kind is bool else 'string'}")
    return value


def _count(fields: dict, name: str, default: int | None) -> int | None:
    """A non-negative integer (JSON numbers may come as 250.0)."""
    value = fields.get(name, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProfileError(f"{name} must be a non-negative integer, not {quoted(value)}")
    return value
