"""What a session's processes use, read from /proc: CPU, memory, listening ports, directory.

What Codex's `/ps` and its app-server's background terminal list show an
agent, so it can tell a dev server that listens from one that spins. Read
on demand (a list request), never polled; a process that vanishes while it
is read is skipped. Linux only; elsewhere every figure is absent (None).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .procs import session_members

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column


@dataclass(frozen=True)
class SessionStats:
    cpu_percent: float | None  # average over the processes' lives, of one core
    rss_bytes: int | None
    listening_ports: tuple[int, ...]
    cwd: str | None  # the leader's


def session_stats(leaders: list[int]) -> dict[int, SessionStats]:
    """Stats of each session (by its leader's pid, which is its session id)."""
    members = session_members(leaders)
    listening = _listening_inodes()
    boot = _boot_time()
    return {leader: _stats(leader, members.get(leader, []), listening, boot) for leader in leaders}


def _stats(leader: int, pids: list[int], listening: dict[int, int], boot: float | None) -> SessionStats:
    cpu_ticks = rss_pages = 0
    earliest = None
    ports: set[int] = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/statm") as statm:
                rss_pages += int(statm.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        cpu_ticks += int(fields[11]) + int(fields[12])  # utime + stime
        started = int(fields[19]) / _TICKS
        earliest = started if earliest is None else min(earliest, started)
        ports.update(_ports_of(pid, listening))
    try:
        cwd = os.readlink(f"/proc/{leader}/cwd")
    except OSError:
        cwd = None
    cpu = None
    if earliest is not None and boot is not None:
        lived = max(time.time() - (boot + earliest), 1e-3)
        cpu = round(100 * cpu_ticks / _TICKS / lived, 1)
    return SessionStats(cpu, rss_pages * _PAGE if pids else None, tuple(sorted(ports)), cwd)


def _ports_of(pid: int, listening: dict[int, int]) -> set[int]:
    ports = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return ports
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            port = listening.get(int(target[8:-1]))
            if port is not None:
                ports.add(port)
    return ports


def _listening_inodes() -> dict[int, int]:
    """Socket inode -> port of every listening TCP socket (IPv4 and IPv6)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as lines:
                next(lines)
                for line in lines:
                    columns = line.split()
                    if columns[3] == _LISTEN:
                        found[int(columns[9])] = int(columns[1].rsplit(":", 1)[1], 16)
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return found


def _boot_time() -> float | None:
    try:
        with open("/proc/stat") as stat:
            for line in stat:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None
