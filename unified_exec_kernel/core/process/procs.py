"""Find and signal every process of a terminal session.

Closing a session must end all it started: `bash -i` gives each job its own
process group, and a grandchild can hold the terminal open, so signalling the
leader's group is not enough. Every process started from the session's
terminal keeps its session id (that of the leader) unless it calls setsid
itself, and Linux keeps that id from being reused while any member lives.
"""

from __future__ import annotations

import os
import signal
from collections import namedtuple
from collections.abc import Iterable

_PROC = "/proc"
KILL_GRACE_S = 1.0
"""How long the sessions' programs get to act on the hangup before SIGKILL (as closing a session)."""


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
        ids = process_ids(int(name))
        if ids is not None and ids.session in wanted and not ids.zombie:
            wanted[ids.session].append(int(name))
    return wanted


# Not typing.NamedTuple: typing (and the re it imports) would add ~1 MiB to the guardian, which loads this module.
ProcessIds = namedtuple("ProcessIds", ["parent", "session", "zombie"])


def process_ids(pid: int) -> ProcessIds | None:
    """The parent and session of a process, from /proc (None once it has been reaped)."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as stat_file:
            stat = stat_file.read()
    except OSError:
        return None
    # Fields after the command (which may hold spaces and parentheses):
    # state, ppid, pgrp, session, ...
    fields = stat[stat.rindex(b")") + 2 :].split()
    return ProcessIds(parent=int(fields[1]), session=int(fields[3]), zombie=fields[0] == b"Z")


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


def open_member(pid: int, session_id: int, parent: int | None = None) -> int | None:
    """A pidfd on `pid` if it is (still) in session `session_id` (and a child of `parent`), else None.

    The check is made after the pidfd is opened, so the pidfd is of the very
    process that passed it: a pid recycled since it was found either fails the
    check or, if recycled again, leaves a pidfd that signals nobody.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
    ids = process_ids(pid)
    if ids is None or ids.zombie or ids.session != session_id or (parent is not None and ids.parent != parent):
        os.close(pidfd)
        return None
    return pidfd


def signal_members(session_id: int, pids: Iterable[int], signals: Iterable[int]) -> None:
    """`signal_pids` for pids just found in session `session_id`, never reaching a recycled pid.

    Without pidfds (not Linux, or Linux < 5.3) or out of descriptors, it
    checks the session and then signals by pid, as `signal_pids` does.
    """
    signals = list(signals)
    if not os.path.isdir(_PROC):
        signal_pids(pids, signals)  # nothing to check against
        return
    exact = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
    for pid in pids:
        try:
            pidfd = os.pidfd_open(pid) if exact else None
        except ProcessLookupError:
            continue
        except OSError:
            pidfd = None
        try:
            ids = process_ids(pid)
            if ids is None or ids.session != session_id:
                continue
            for sig in signals:
                if pidfd is None:
                    os.kill(pid, sig)
                else:
                    signal.pidfd_send_signal(pidfd, sig)
        except (ProcessLookupError, PermissionError):
            pass
        finally:
            if pidfd is not None:
                os.close(pidfd)


HANGUP_SIGNALS = (signal.SIGHUP, signal.SIGCONT, signal.SIGTERM)


def is_stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP, a tracer): its /proc state is T or t. A stopped helper of ours
    is treated as a dead one (guardian.py, keeper.py): it would never act."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as stat_file:
            stat = stat_file.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :][:1] in (b"T", b"t")
