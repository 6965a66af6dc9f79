"""The engine's errors: one family, each also the builtin a caller would catch.

`name` is the seed's variant name; the comm protocol reports it verbatim.
Every message is one line of at most MESSAGE_LIMIT characters whatever the
input (a person or a model reads it): a value is shown with `quoted`, a
whole message bounded with `one_line`, and every face passes its errors
through `one_line` too. An error keeps the whole input as an attribute.
"""

from __future__ import annotations

from collections.abc import Iterable

QUOTE_LIMIT = 200
"""The most of a message one value (a command, name, pattern, path or key) takes."""
MESSAGE_LIMIT = 1024
"""The most a whole message takes."""
ELLIPSIS = "…"


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)` in at most `limit` characters: a longer one keeps its start and end around `…`."""
    if isinstance(value, (str, bytes)) and len(value) > 2 * limit:
        value = value[:limit] + value[-limit:]  # the cut below falls between the two halves: repr the ends only
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        text = f"<{type(value).__name__} too long to show>"
    return _cut(text.replace("\n", "\\n"), limit)


def one_line(text: object, limit: int = MESSAGE_LIMIT) -> str:
    """A message as one line of at most `limit` characters: line breaks become spaces, a longer one keeps both ends."""
    text = str(text)
    if len(text) > 4 * limit:
        text = text[: 2 * limit] + text[-2 * limit :]  # no need to scan the middle of a huge message
    return _cut(" ".join(text.splitlines()), limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = (limit - len(ELLIPSIS) + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (limit - len(ELLIPSIS) - head) :]


class UnifiedExecError(Exception):
    """Base of every error the engine raises on purpose."""

    name = "UnifiedExec"

    def __init__(self, *args):
        super().__init__(*(one_line(arg) if isinstance(arg, str) else arg for arg in args))


class UnknownSessionIdError(UnifiedExecError, LookupError):
    name = "UnknownSessionId"

    def __init__(self, session_id: int | str, known: Iterable[int | str] | None = None):
        """`known`: the sessions there are (a name, else the id), to say what could be meant."""
        missing = f"no session named {quoted(session_id)}" if isinstance(session_id, str) else f"no session with id {quoted(session_id)}"
        if known is not None:
            listing = one_line(", ".join(str(key) for key in known), MESSAGE_LIMIT // 2)
            missing += f"; open sessions: {listing}" if listing else "; no session is open"
        super().__init__(missing)
        self.session_id = session_id


class WriteToStdinError(UnifiedExecError, OSError):
    name = "WriteToStdin"

    def __init__(self, session_id: int, cause: BaseException | None = None):
        detail = f": {one_line(cause, MESSAGE_LIMIT // 2)}" if cause else ""
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
        program = one_line((argv[0] if argv else "").replace("\0", "\\0"), QUOTE_LIMIT)
        if isinstance(cause, FileNotFoundError):
            reason = f"{program}: command not found"
        elif isinstance(cause, PermissionError):
            reason = f"{program}: permission denied"
        else:
            reason = f"{program}: {one_line(cause, MESSAGE_LIMIT // 2)}"
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
