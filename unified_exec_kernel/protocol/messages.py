"""The wire format: reading the fields of a request, building every message the kernel sends.

Written once for both carriers, so a malformed message gets the same clear
answer whichever way it came, and a field is spelled in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..core.output.batcher import Batch
from ..core.keys import signal_number
from ..core.manager import UnifiedExecSessionManager
from ..core.models import SessionInfo, UnifiedExecResult
from ..core.session import PtySession

PROTOCOL_VERSION = 2
MAX_INPUT_BYTES = 1024 * 1024
READ_DEFAULT_BYTES = 64 * 1024
READ_MAX_BYTES = 1024 * 1024


class BadRequest(ValueError):
    name = "BadRequest"


# -- reading requests ----------------------------------------------------------


def request_id(data) -> str | int | None:
    """The id to echo: a string or an integer, else None (the request is then refused)."""
    value = data.get("request_id") if isinstance(data, dict) else None
    return value if _is_int(value) or isinstance(value, str) else None


def check_request_id(data: dict) -> None:
    value = data.get("request_id")
    if value is not None and request_id(data) is None:
        raise BadRequest("request_id must be a string or an integer")


def named_session(data) -> int | None:
    """The `session_id` a message names, if it is one (for an error to point at)."""
    value = data.get("session_id") if isinstance(data, dict) else None
    return value if _is_int(value) else None


def session_key(data: dict, *, required: bool = True) -> int | str | None:
    """A message's `session_id`: a session's id or its name."""
    value = data.get("session_id")
    if value is None and not required:
        return None
    if _is_int(value) or (isinstance(value, str) and value):
        return value
    if value is None:
        raise BadRequest("session_id is required")
    raise BadRequest("session_id must be an integer or a session's name")


def optional_str(data: dict, field: str) -> str | None:
    value = data.get(field)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{field} must be a string or null")
    return value


def optional_bool(data: dict, field: str) -> bool | None:
    value = data.get(field)
    if value is not None and not isinstance(value, bool):
        raise BadRequest(f"{field} must be true, false or null")
    return value


def optional_ms(data: dict, field: str) -> int | None:
    value = optional_int(data, field)
    if value is not None and value < 0:
        raise BadRequest(f"{field} must be 0 or more")
    return value


def environment(data: dict) -> dict[str, str] | None:
    value = data.get("env")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and k and "=" not in k and isinstance(v, str) for k, v in value.items()):
        raise BadRequest("env must be an object of strings (names without '=')")
    return value


def optional_int(data: dict, field: str) -> int | None:
    value = data.get(field)
    if value is None:
        return None
    if not _is_int(value):
        raise BadRequest(f"{field} must be an integer or null")
    return value


def timeout_ms(data: dict) -> int | None:
    return optional_ms(data, "timeout_ms")


def input_chunks(data: dict) -> list[str]:
    chunks = data.get("input_chunks", [])
    if not isinstance(chunks, list) or not all(isinstance(chunk, str) for chunk in chunks):
        raise BadRequest("input_chunks must be a list of strings")
    _check_input_size(chunks)
    return chunks


def input_text(data: dict) -> str:
    """The keystrokes of an `input` message."""
    text = data.get("data")
    if not isinstance(text, str):
        raise BadRequest("data must be a string")
    _check_input_size([text])
    return text


def terminal_size(data: dict) -> tuple[int, int]:
    """The rows and columns of a `resize` message (the session checks the range)."""
    rows, cols = data.get("rows"), data.get("cols")
    if not (_is_int(rows) and _is_int(cols)):
        raise BadRequest("rows and cols must be integers")
    return rows, cols


def output_format(data: dict) -> str:
    value = data.get("format", "text")
    if value not in ("text", "agent"):
        raise BadRequest("format must be 'text' or 'agent'")
    return value


def profile(data: dict) -> str | None:
    """A request's profile: None (the engine's own defaults) or "codex" (core/codex_profile.py)."""
    value = data.get("profile")
    if value not in (None, "codex"):
        raise BadRequest("profile must be 'codex' or null")
    return value


CODEX_ENVELOPE = ("type", "request_id", "profile", "format", "session_id", "name")
"""The fields of a codex-profile `exec` that are the message's, not the tool call's arguments."""


def codex_arguments(data: dict) -> dict:
    """A codex-profile `exec`'s tool-call arguments (codex_profile.py checks them)."""
    return {name: value for name, value in data.items() if name not in CODEX_ENVELOPE}


def read_request(data: dict) -> tuple[int | None, int | None, int | None, int]:
    """A `read`'s `start`, `end` (output offsets), `command` (1-based, negative from the last) and `max_bytes`."""
    start, end = optional_int(data, "start"), optional_int(data, "end")
    if start is not None and start < 0:
        raise BadRequest("start must be 0 or more")
    if end is not None and start is not None and end < start:
        raise BadRequest("end must not be before start")
    command = optional_int(data, "command")
    if command == 0:
        raise BadRequest("command counts from 1 (or from -1, the last)")
    max_bytes = optional_int(data, "max_bytes")
    if max_bytes is not None and not 1 <= max_bytes <= READ_MAX_BYTES:
        raise BadRequest(f"max_bytes must be 1 to {READ_MAX_BYTES}")
    return start, end, command, READ_DEFAULT_BYTES if max_bytes is None else max_bytes


def optional_signal(data: dict) -> int | None:
    value = data.get("signal")
    return None if value is None else signal_number(value)


def _check_input_size(texts: Iterable[str]) -> None:
    # Limits are in bytes, as documented: "é" is two of them.
    check_input_bytes(sum(len(text.encode("utf-8", "surrogatepass")) for text in texts))


def check_input_bytes(nbytes: int) -> None:
    """Keystrokes that arrive as bytes (the direct channel's `I` frames) meet the same limit."""
    if nbytes > MAX_INPUT_BYTES:
        raise BadRequest(f"input over {MAX_INPUT_BYTES} bytes")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- building messages ---------------------------------------------------------


def hello(manager: UnifiedExecSessionManager) -> dict:
    return {
        "type": "hello",
        "protocol_version": PROTOCOL_VERSION,
        "limits": {
            "default_timeout_ms": manager.default_timeout_ms,
            "max_timeout_ms": manager.max_timeout_ms,
            "output_max_bytes": manager.output_max_bytes,
            "max_input_bytes": MAX_INPUT_BYTES,
            "max_sessions": manager.max_sessions,
            "scrollback_bytes": manager.scrollback_bytes,
        },
    }


def result(rid, result: UnifiedExecResult, output: str, kind: str = "result") -> dict:
    return {
        "type": kind,
        "request_id": rid,
        "session_id": result.session_id,
        "output": output,
        "exit_code": result.exit_code,
        "command_exit_code": result.command_exit_code,
        "ended_by": result.ended_by,
        "wall_time": result.wall_time,
    }


def watching(rid, session_id: int) -> dict:
    return {"type": "watching", "request_id": rid, "session_id": session_id}


def fired(rid, watched: UnifiedExecResult, output: str) -> dict:
    answer = result(rid, watched, output, kind="fired")
    answer["reason"] = answer.pop("ended_by")
    return answer


def output(rid, batch: Batch) -> dict:
    return {"type": "output", "request_id": rid, **_span(batch)}


def sessions(rid, infos: Iterable[SessionInfo]) -> dict:
    return {"type": "sessions", "request_id": rid, "sessions": [dataclasses.asdict(info) for info in infos]}


def ok(rid, session_id: int) -> dict:
    return {"type": "ok", "request_id": rid, "session_id": session_id}


def error(rid, name: str, message: str, session_id: int | None = None) -> dict:
    answer = {"type": "error", "request_id": rid, "error": name, "message": message}
    if session_id is not None:
        answer["session_id"] = session_id  # so a view can tell which session failed
    return answer


def attached(rid, session: PtySession, offset: int) -> dict:
    rows, cols = session.size
    return {
        "type": "attached",
        "request_id": rid,
        "session_id": session.session_id,
        "offset": offset,
        # Where the replay ends and live output starts: a view answers no
        # query it finds before it (the program that asked is long gone).
        "end": session.offset,
        "paused": session.paused,
        "alive": session.alive,
        "exit_code": session.exit_code,
        "tty": session.tty,  # false: a pipes session (codex profile); its view only watches (input is refused)
        "rows": rows,
        "cols": cols,
        # The sizes the replay was written at: [offset, rows, cols] from each offset on, the
        # first at the replay's start, the last the PTY's size now. A view parses each stretch
        # at its size and resizes between them, as the live view did (xterm.js reflowing).
        "sizes": replay_sizes(session, offset),
        "kept": session.kept,
    }


def replay_sizes(session: PtySession, start: int) -> list[list[int]]:
    sizes = list(session.sizes)
    first = max((index for index, (offset, _, _) in enumerate(sizes) if offset <= start), default=0)
    return [[max(offset, start), rows, cols] for offset, rows, cols in sizes[first:]]


def data(rid, session_id: int, batch: Batch) -> dict:
    return {"type": "data", "request_id": rid, "session_id": session_id, **_span(batch)}


END_REASONS = ("exit", "closed", "kernel")
"""Why a session ended, as `exited.reason` says: its program ended (its exit code says how), it was
closed (a kill, `%uexec_kill`, pruning), or its kernel shut down or restarted. Every view words it the same."""


def end_reason(session: PtySession) -> str:
    if session.ended_with_kernel:
        return "kernel"
    return "closed" if session.closed else "exit"


def exited(session: PtySession) -> dict:
    return {
        "type": "exited",
        "session_id": session.session_id,
        "exit_code": session.exit_code,
        "closed": session.closed or session.ended_with_kernel,
        "reason": end_reason(session),
    }


def size(session: PtySession) -> dict:
    """The PTY's size changed (sizes.py: the view in use gave it its own): each view shows the program at it."""
    rows, cols = session.size
    return {"type": "size", "session_id": session.session_id, "rows": rows, "cols": cols}


def session_event(
    session: PtySession, event: str, seconds: float, *, line: str | None = None, by: str | None = None, idle_seconds: float | None = None
) -> dict:
    """A session ended (`exited`), printed the line a wait was for (`matched`), or ends because the
    server culls its kernel as idle (`culled`, after `idle_seconds` of no activity): notices.py."""
    return {
        "type": "session_event",
        "event": event,
        "session_id": session.session_id,
        "name": session.name,
        "command": list(session.command),
        "exit_code": session.exit_code,
        "seconds": round(max(seconds, 0.0), 3),
        "line": line,
        "by": by,
        "idle_seconds": None if idle_seconds is None else round(max(idle_seconds, 0.0), 3),
    }


def flow(session: PtySession) -> dict:
    """The program's output was stopped by XOFF (`paused`) or started again: a view says so."""
    return {"type": "flow", "session_id": session.session_id, "paused": session.paused}


def journal(rid, session_id: int, start: int, data: bytes, *, output_end: int, more: bool, command, notes: list[str]) -> dict:
    """The answer to `read`: `data` is the output in [start, end); `more`: the range asked for goes on."""
    return {
        "type": "journal",
        "request_id": rid,
        "session_id": session_id,
        "start": start,
        "end": start + len(data),
        "output_end": output_end,
        "more": more,
        "command": None if command is None else {
            "number": command.number, "text": command.text, "start": command.start,
            "end": command.end, "exit_code": command.exit_code,
        },
        "notes": notes,
        "data": data.decode("utf-8", "replace"),
    }


SESSIONS_CHANGED = {"type": "sessions_changed"}


def _span(batch: Batch) -> dict:
    # The one place output bytes become JSON text.
    return {"offset": batch.offset, "end": batch.end, "skipped": batch.skipped, "data": batch.data.decode("utf-8")}
