"""Find and signal every process of a terminal session.

Closing a session must end all it started: `bash -i` gives each job its own
process group, and a grandchild can hold the terminal open, so signalling the
leader's group is not enough. Every process started from the session's
terminal keeps its session id (that of the leader) unless it calls setsid
itself, and Linux keeps that id from being reused while any member lives.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

_PROC = "/proc"


def session_members(session_ids: Iterable[int]) -> dict[int, list[int]]:
    """Live (non-zombie) pids of each session id, found in /proc."""
    wanted = {sid: [] for sid in session_ids}
    if not wanted:
        return wanted
    if not os.path.isdir(_PROC):
        return _members_without_proc(wanted)
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        # Fields after the command (which may hold spaces and parentheses):
        # state, ppid, pgrp, session, ...
        fields = stat[stat.rindex(b")") + 2 :].split()
        sid = int(fields[3])
        if sid in wanted and fields[0] != b"Z":
            wanted[sid].append(int(name))
    return wanted


def _members_without_proc(wanted: dict[int, list[int]]) -> dict[int, list[int]]:
    # Without /proc, only the leader's own group can be found.
    for sid in wanted:
        try:
            os.killpg(sid, 0)
        except OSError:
            continue
        wanted[sid].append(sid)
    return wanted


def signal_pids(pids: Iterable[int], signals: Iterable[int]) -> None:
    signals = list(signals)
    for pid in pids:
        for sig in signals:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                break

