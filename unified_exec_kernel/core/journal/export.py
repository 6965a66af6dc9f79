"""A journal (or any recording we read) written out as a standalone asciicast file, v3 or v2.

v3 is what asciinema 3 and asciinema-player read; v2 is what the asciinema
CLI on PyPI (2.x) and older players read. v2 has no exit event and no
comments: the exit and the commands' exit codes (v3 comments, which players
skip) stay in v3 only.
"""

from __future__ import annotations

import json
import os

from . import format as cast
from .reader import Journal


def export(journal: Journal, destination: str, *, version: int = 3) -> int:
    """Write the recording to `destination` (created 0600 if new, replaced if it exists); its event count."""
    if version not in (2, 3):
        raise ValueError(f"asciicast version must be 2 or 3, not {version}")
    cols, rows = journal.size
    header = journal.header
    temporary = f"{destination}.uexec-{os.getpid()}.tmp"
    written = 0
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            if version == 3:
                out.write(cast.header_line({**header, "version": 3, "term": {**(header.get("term") or {}), "cols": cols, "rows": rows}} if journal.version == 3 else _v3_header(header, cols, rows)))
            else:
                out.write(cast.header_line(_v2_header(header, cols, rows)))
            previous_us = 0
            for event in journal.events(comments=version == 3):
                now_us = round(event.time * 1e6)
                if event.code == "#":
                    out.write(event.data.encode("utf-8", "surrogatepass") + b"\n")  # our notes: commands' exit codes, drops
                elif version == 3:
                    out.write(cast.event_line(now_us - previous_us, event.code, event.data))
                    previous_us = now_us
                elif event.code in ("o", "i", "r", "m"):
                    out.write(json.dumps([round(event.time, 6), event.code, event.data], ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
                else:
                    continue  # v2 has no such event: not written, not counted
                written += 1
        os.replace(temporary, destination)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return written


def _v3_header(header: dict, cols: int, rows: int) -> dict:
    converted = {"version": 3, "term": {"cols": cols, "rows": rows}}
    env = header.get("env") or {}
    if env.get("TERM"):
        converted["term"]["type"] = env["TERM"]
    for key in ("timestamp", "command", "title", "idle_time_limit", "env"):
        if key in header:
            converted[key] = header[key]
    return converted


def _v2_header(header: dict, cols: int, rows: int) -> dict:
    converted = {"version": 2, "width": cols, "height": rows}
    for key in ("timestamp", "command", "title", "idle_time_limit"):
        if key in header:
            converted[key] = header[key]
    term = header.get("term") or {}
    env = dict(header.get("env") or {})
    if term.get("type"):
        env.setdefault("TERM", term["type"])
    if env:
        converted["env"] = env
    return converted
