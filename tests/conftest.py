"""Shared fixtures: a fresh manager per test, and proof that nothing outlives it."""

from __future__ import annotations

import os
import signal
import socket
import time

import psutil
import pytest

from unified_exec_kernel import UnifiedExecSessionManager


def pytest_configure(config) -> None:
    # A suite started from a script's background job (`cmd &` without job control) inherits SIGINT
    # ignored, and so would every server and kernel it starts: SIGINT is then no Ctrl-C, no hub's
    # stop (tests/server/test_stop.py). The tests are about what a terminal or a spawner starts.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def descendants() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True) if child.status() != "zombie"}


def session_processes(leader: int) -> list[int]:
    """Every live process whose session id is `leader` (what closing a session must end)."""
    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getsid(proc.pid) == leader:
                found.append(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def wait_gone(leader: int, timeout: float = 10) -> list[int]:
    """`session_processes(leader)` once it is empty, or what is left at the deadline.

    A process killed by the terminal's hangup closes its files (so the
    terminal reports EOF) a moment before it is gone from /proc.
    """
    deadline = time.monotonic() + timeout
    while (left := session_processes(leader)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def processes_marked(variable: str, value: str) -> list[psutil.Process]:
    """Live processes whose environment says `variable=value`: everything a test's sandbox started."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and process.environ().get(variable) == value:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found



def pidfds_held_by(pid: int) -> list[int]:
    """The processes that process `pid` holds pidfds on (what a guardian or keeper would end)."""
    held = []
    for name in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{name}") as info:
                held += [int(line.split()[1]) for line in info if line.startswith("Pid:")]
        except OSError:
            continue
    return held

def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kill_processes(processes, timeout: float = 10) -> None:
    """SIGKILL these psutil processes (those already gone are fine) and wait for them."""
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(processes, timeout=timeout)


@pytest.fixture
async def manager():
    mgr = UnifiedExecSessionManager()
    try:
        yield mgr
    finally:
        await mgr.close_all()


@pytest.fixture(scope="module")
def uexec_kernel():
    """A real `uexec` kernel through jupyter_client, shared by a module's tests and shut down after them."""
    from .kernel_harness import Kernel

    kernel = Kernel("uexec")
    yield kernel
    kernel.shutdown()


# -- the order, for parallel runs --------------------------------------------------

# README's test command runs the files on two workers (pytest-xdist, `--dist loadfile`: a file's
# tests and its server stay on one worker). Files are handed out in collection order, so the
# longest ones go first: started last, they would leave one worker alone at the end.
LONGEST_FIRST = (
    "tests/test_packaging.py",  # fresh environments and pip installs
    "tests/browser/test_lab.py",
    "tests/browser/test_collaboration.py",
    "tests/test_failure_matrix.py",
    "tests/test_kept_sessions.py",
)


def pytest_collection_modifyitems(items):
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order
