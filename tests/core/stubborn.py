"""Real process trees for the guardian's tests: sessions (setsid) whose programs ignore the hangup."""

from __future__ import annotations

import asyncio
import subprocess
import time

import psutil

from unified_exec_kernel.core.process import procs

from ..conftest import kill_processes

STUBBORN = "trap '' HUP TERM; sleep 300 & sleep 301 & wait"
DEADLINE_S = 15
NO_SUCH_PID = 2**22 + 1  # above Linux's largest pid_max


def start_session(script: str = STUBBORN) -> subprocess.Popen:
    leader = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    wait_until(lambda: len(procs.session_members([leader.pid])[leader.pid]) >= (3 if script == STUBBORN else 1))
    return leader


def members(leader_pid: int) -> list[int]:
    return procs.session_members([leader_pid])[leader_pid]


def wait_until(predicate, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.02)
    return value


async def async_wait_until(predicate, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s")
        await asyncio.sleep(0.02)
    return value


def cleanup(*leaders: subprocess.Popen) -> None:
    pids = {pid for leader in leaders for pid in members(leader.pid)}
    kill_processes([psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)])
    for leader in leaders:
        leader.kill()
        leader.wait(DEADLINE_S)
