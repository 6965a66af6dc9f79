"""The asciicast lines a journal is made of, and the notes only we read.

A journal is an asciicast v3 file, so the asciinema tools and players read it
as it is: a header object, then one `[interval, code, data]` array per line.
What a player has no event for (a command's exit code, output the journal had
to drop) goes in v3's comment lines, `#uexec <kind> <json>`, which players
skip and our reader understands. A command's start is a real `m` marker
labelled with its text, so any player lists the commands as chapters.

Times are kept as whole microseconds since the start: an interval is the
difference of two of them, so summing intervals gives every event's time
back exactly (no drift over a day-long session).
"""

from __future__ import annotations

import json

NOTE_PREFIX = "#uexec "
NOTE_COMMAND_END = "end"  # {"command": k, "exit": status or null}
NOTE_DROPPED = "dropped"  # {"offset": o, "bytes": n, "reason": "..."}
DEFAULT_IDLE_LIMIT_S = 2.0
"""A replay shortens longer pauses to this, as asciinema's `idle_time_limit` does (a recording's own wins)."""


def header_v3(*, cols: int, rows: int, timestamp: float, command: str, title: str, term: str = "xterm-256color") -> dict:
    return {
        "version": 3,
        "term": {"cols": cols, "rows": rows, "type": term},
        "timestamp": int(timestamp),
        "command": command,
        "title": title,
    }


def header_line(header: dict) -> bytes:
    return json_line(header)


def event_line(interval_us: int, code: str, data: str) -> bytes:
    """One event; `data` is text (decoded output, a label, `COLSxROWS`, an exit status)."""
    return b"[%d.%06d, \"%s\", %s]\n" % (interval_us // 1_000_000, interval_us % 1_000_000, code.encode(), _json_string(data))


def note_line(kind: str, fields: dict) -> bytes:
    return (NOTE_PREFIX + kind + " ").encode() + json_line(fields)


def parse_note(line: str) -> tuple[str, dict] | None:
    """A `#uexec` comment's kind and fields; None for any other comment (or a broken one)."""
    if not line.startswith(NOTE_PREFIX):
        return None
    kind, _, payload = line[len(NOTE_PREFIX) :].partition(" ")
    try:
        fields = json.loads(payload)
    except ValueError:
        return None
    return (kind, fields) if isinstance(fields, dict) else None


def json_line(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": ")).encode("utf-8", "surrogateescape") + b"\n"


def _json_string(text: str) -> bytes:
    # ensure_ascii=False keeps non-ASCII text as UTF-8 (a third of the size of \\u escapes);
    # lone surrogates (never in decoded output, but in a label) survive as escapes.
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")
