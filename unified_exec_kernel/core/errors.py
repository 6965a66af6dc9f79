"""The engine's errors: one family, each also the builtin a caller would catch.

`name` is the seed's variant name; the comm protocol reports it verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable


class UnifiedExecError(Exception):
    """Base of every error the engine raises on purpose."""

    name = "UnifiedExec"


class UnknownSessionIdError(UnifiedExecError, LookupError):
    name = "UnknownSessionId"

    def __init__(self, session_id: int | str, known: Iterable[int | str] | None = None):
        """`known`: the sessions there are (a name, else the id), to say what could be meant."""
        missing = f"no session named {session_id!r}" if isinstance(session_id, str) else f"no session with id {session_id}"
        if known is not None:
            known = [str(key) for key in known]
            missing += f"; open sessions: {', '.join(known)}" if known else "; no session is open"
        super().__init__(missing)
        self.session_id = session_id


class WriteToStdinError(UnifiedExecError, OSError):
    name = "WriteToStdin"

    def __init__(self, session_id: int, cause: BaseException | None = None):
        detail = f": {cause}" if cause else ""
        super().__init__(f"Failed to write to the terminal of session {session_id}{detail}")
        self.session_id = session_id
        self.cause = cause


class MissingCommandLineError(UnifiedExecError, ValueError):
    name = "MissingCommandLine"

    def __init__(self) -> None:
        super().__init__("Missing command line: give the program to start and its arguments")


class InvalidSessionNameError(UnifiedExecError, ValueError):
    """A `--name` that breaks the naming rule or is held: the request's fault, not the program's."""

    name = "InvalidSessionName"


class CreateSessionError(UnifiedExecError, OSError):
    name = "CreateSession"

    def __init__(self, argv: list[str], cause: BaseException):
        program = (argv[0] if argv else "").replace("\0", "\\0")  # shown, never cut short
        if isinstance(cause, FileNotFoundError):
            reason = f"{program}: command not found"
        elif isinstance(cause, PermissionError):
            reason = f"{program}: permission denied"
        else:
            reason = f"{program}: {cause}"
        super().__init__(f"Failed to create session: {reason}")
        self.argv = argv
        self.cause = cause


class StdinClosedError(UnifiedExecError, OSError):
    """A write to a session started on pipes (`tty=False`): its stdin is closed.

    Worded as Codex words it, since a model has learnt what to do next from it;
    a face that speaks to people in other terms gives its own `remedy`
    (the Python API's `tty=True`).
    """

    name = "StdinClosed"
    CODEX_REMEDY = "rerun exec_command with tty=true to keep stdin open"

    def __init__(self, session_id: int, remedy: str = CODEX_REMEDY):
        super().__init__(f"stdin is closed for this session; {remedy}")
        self.session_id = session_id
