"""The engine's data: what a request asks, what a result says, what a session is.

These small types are the documentation of the engine's contract; the faces
(magic, comm, widget) translate to and from them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from .errors import quoted

DEFAULT_TIMEOUT_MS = 1_000
MAX_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class UnifiedExecRequest:
    """Start a command (`session_id=None`: `input_chunks` is the argv) or write to a session.

    For an existing session the chunks are joined with a space and written as
    they are (add the `\\n` yourself); no chunks means just collect output.
    `session_id` may also be a session's name.

    Beyond the seed: `until` (a regex, matched line by line) and `quiet_ms` end the wait
    early; `name`, `cwd` and `env` go with a new session.
    """

    session_id: int | str | None = None
    input_chunks: Sequence[str] = ()
    timeout_ms: int | None = None
    until: str | None = None
    quiet_ms: int | None = None
    name: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.input_chunks, str):
            raise TypeError("input_chunks must be a list of strings, not a string")
        object.__setattr__(self, "input_chunks", tuple(self.input_chunks))
        if not all(isinstance(chunk, str) for chunk in self.input_chunks):
            raise TypeError("input_chunks must be a list of strings")
        named = isinstance(self.session_id, str) and self.session_id and not self.session_id.isdigit()
        if self.session_id is not None and not (_is_int(self.session_id) or named):
            raise TypeError(f"session_id must be an integer, a name or None, not {quoted(self.session_id)}")
        for field_name in ("timeout_ms", "quiet_ms"):
            value = getattr(self, field_name)
            if value is not None:
                if not _is_int(value):
                    raise TypeError(f"{field_name} must be an integer, not {quoted(value)}")
                if value < 0:
                    raise ValueError(f"{field_name} must be 0 or more, not {value}")


@dataclass(frozen=True)
class UnifiedExecResult:
    """What a request collected.

    `session_id` is the session's id while its process lives and None once it
    has exited (then `exit_code` is set: negative for a killing signal).
    `output` is middle-truncated, with any warning lines first.
    """

    session_id: int | None
    output: str
    exit_code: int | None = None
    wall_time: float = 0.0
    original_token_count: int = 0
    dropped_bytes: int = 0
    command_exit_code: int | None = None  # a typed command's status (shell integration), None if none finished
    ended_by: str = "timeout"  # what ended the wait: exit, command, input, match, quiet, timeout, interrupt
    left_out_bytes: int = 0  # earlier output a write did not show (it was not its own)
    closed: bool = False  # the program ended because the session was closed (a kill), not on its own
    # Set when `output` was cut and the session has a journal: (its name or id, start, end), the
    # output offsets of everything this request collected (`%uexec_output KEY --bytes START:END`).
    journal_range: tuple[int | str, int, int] | None = None
    # What the commands typed into an integrated shell printed (between their C and D markers):
    # `output` without the echoed command line and the next prompt. None when no command started.
    command_output: str | None = None

    @property
    def timed_out(self) -> bool:
        """The wait ran to its timeout: the program (or the typed command) was not done by then."""
        return self.ended_by == "timeout"

    def __repr__(self) -> str:
        """What a notebook shows for a result: the fields that say something, the output cut to its ends."""
        shown = [f"session_id={self.session_id!r}"]
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name in ("session_id", "output", "command_output") or value == item.default:
                continue
            shown.append(f"{item.name}={value:.2f}" if item.name == "wall_time" else f"{item.name}={value!r}")
        output = self.output if len(self.output) <= _REPR_OUTPUT else f"{self.output[: _REPR_OUTPUT // 2]}…{self.output[-_REPR_OUTPUT // 2 :]}"
        return f"{type(self).__name__}({', '.join(shown)}, output={output!r})"


_REPR_OUTPUT = 300


@dataclass(frozen=True)
class SessionInfo:
    """A session as the faces list it; `command` is what the user gave: a person's argv (what runs
    may add our shell integration's options, which no one asked to read), an agent's `cmd` as
    its one element (codex_profile.py: what runs is the shell wrapped around it). Every face
    shows it with `command_line`."""

    session_id: int
    command: list[str] = field(default_factory=list)
    pid: int = 0
    alive: bool = True
    exit_code: int | None = None
    started: float = 0.0
    name: str | None = None
    kept: bool = False  # held by the keeper: it outlives a kernel restart
    restarts: int = 0  # kernel restarts it has lived through
    note: str = ""  # what a person should know beside its state, one line (its keeper died)


def command_line(command: Sequence[str]) -> str:
    """A session's command as every face shows it: an argv quoted as a shell reads it; one element as written (an agent's `cmd`)."""
    if len(command) == 1:
        return command[0]
    return shlex.join(command)


def exit_state(alive: bool, exit_code: int | None, closed: bool = False) -> str:
    """How every face words a program's state.

    `closed`: the user closed the session; the hangup that ended it is no crash to report.
    """
    if alive:
        return "running"
    if closed:
        return "closed"
    return "exited" if exit_code is None else f"exited with code {exit_code}"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
