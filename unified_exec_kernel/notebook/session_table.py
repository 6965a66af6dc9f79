"""`%uexec_sessions`: the kernel's sessions as a table, HTML in a notebook, aligned text elsewhere."""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape

from ..core.models import SessionInfo, command_line


class SessionTable:
    headers = ("id", "name", "command", "pid", "state", "exit code", "age")

    def __init__(self, sessions: Iterable[SessionInfo], notes: Iterable[str] = ()):
        """`notes`: what became of sessions no row shows (a keeper that had to be ended), a line each."""
        now = time.time()
        self.notes = list(notes)
        self.rows = [
            (
                str(info.session_id),
                info.name or "",
                command_label(info.command),
                str(info.pid),
                ("running" if info.alive else "exited") + kept_label(info) + (f" ({info.note})" if info.note else ""),
                "" if info.exit_code is None else str(info.exit_code),
                age(now - info.started),
            )
            for info in sessions
        ]

    def __repr__(self) -> str:
        notes = "".join(f"{note}\n" for note in self.notes)
        if not self.rows:
            return notes + "no uexec sessions"
        table = [self.headers, *self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.headers))]
        return notes + "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in table)

    def _repr_html_(self) -> str:
        notes = "".join(f"<p class='uexec-note'>{escape(note)}</p>" for note in self.notes)
        if not self.rows:
            return notes + "<p>no uexec sessions</p>"
        head = "".join(f"<th>{escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in self.rows)
        return notes + f"<table class='uexec-sessions'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def kept_label(info: SessionInfo) -> str:
    """A kept session says so, and how many kernel restarts it has lived through."""
    if not info.kept:
        return ""
    if not info.restarts:
        return " (kept)"
    return f" (kept, {info.restarts} restart{'s' if info.restarts != 1 else ''})"


def command_label(argv: list[str], width: int = 60) -> str:
    """A command on one line (a --shell script has newlines), shortened to `width`."""
    label = command_line([arg.rstrip("\n") for arg in argv]).replace("\n", "↵")
    return label if len(label) <= width else label[: width - 1] + "…"


def age(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
