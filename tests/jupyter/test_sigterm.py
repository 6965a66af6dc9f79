"""Nothing outlives a kernel, however it ends: SIGKILL, SIGTERM, or jupyter_client's forced shutdown.

Each test starts real sessions whose programs ignore the hangup (and SIGTERM),
ends the kernel without a graceful shutdown, and counts what is left by
session id. Whatever is left is killed afterwards, so a failing test cleans up.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import psutil
import pytest

from ..conftest import kill_processes, session_processes
from ..kernel_harness import Kernel

STUBBORN = "%%uexec -t 300 --shell\ntrap '' HUP TERM; sleep 300\n"
STUBBORN_JOB = "bash -c 'trap \"\" HUP; sleep 300' &\n"
DEADLINE_S = 15


def leaders(kernel: Kernel) -> dict[int, int]:
    """Running sessions of the kernel: uexec id -> leader pid (its session id)."""
    table = kernel.run("%uexec_sessions")
    return {int(sid): int(pid) for sid, pid in re.findall(r"^(\d+) +.*? +(\d+) +running", table, re.M)}


def members(leader_pids) -> list[psutil.Process]:
    found = []
    for pid in {p for leader in leader_pids for p in session_processes(leader)}:
        try:
            found.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return found


def wait_until(predicate, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_for_iopub(kernel: Kernel, msg_id: str, msg_type: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        msg = kernel.client.get_iopub_msg(timeout=max(deadline - time.monotonic(), 0.01))
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == msg_type:
            return


def guardians_of(kernel: Kernel) -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process(kernel.pid).children()
        if "unified_exec_kernel.core.process.guardian" in " ".join(child.cmdline())
    ]


def start_stubborn_sessions(kernel: Kernel) -> list[int]:
    """A session ignoring HUP and TERM, and a `bash -i` with a HUP-ignoring job; their leader pids."""
    kernel.run(STUBBORN)
    kernel.run("%%uexec -t 500 --out shell_session\nbash --norc -i\n")
    shell_id = int(kernel.run("print(shell_session.session_id)").strip())
    kernel.run(f"%%uexec -s {shell_id} -t 500\n{STUBBORN_JOB}")
    pids = list(leaders(kernel).values())
    assert len(pids) == 2, pids
    # the stubborn shell, bash -i, and its job's sleep at least
    assert wait_until(lambda: len(members(pids)) >= 3, 10), [p.cmdline() for p in members(pids)]
    return pids


def end_kernel(kernel: Kernel, how: str) -> int | None:
    """End the kernel the hard way; its exit status (None when jupyter_client reaped it)."""
    process = kernel.manager.provisioner.process
    if how == "sigkill":
        os.kill(kernel.pid, signal.SIGKILL)
    elif how == "sigterm":
        os.kill(kernel.pid, signal.SIGTERM)
    else:
        kernel.client.stop_channels()
        kernel.manager.shutdown_kernel(now=True)
        return None
    try:
        return process.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        threads = thread_states(kernel.pid)  # where each thread waits, for whoever reads the failure
        process.kill()
        process.wait(timeout=DEADLINE_S)
        raise AssertionError(f"the kernel did not end on {how}; its threads: {threads}") from None


def thread_states(pid: int) -> list[tuple[str, str]]:
    states = []
    for task in sorted(os.listdir(f"/proc/{pid}/task")):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm, open(f"/proc/{pid}/task/{task}/wchan") as wchan:
                states.append((comm.read().strip(), wchan.read()))
        except OSError:
            continue
    return states


def release(kernel: Kernel) -> None:
    kernel.client.stop_channels()
    if kernel.manager.has_kernel:
        kernel.manager.shutdown_kernel(now=True)


@pytest.mark.parametrize("how", ["sigkill", "sigterm", "shutdown_now"])
def test_no_session_process_outlives_a_kernel_that_dies_hard(how):
    kernel = Kernel("uexec")
    pids: list[int] = []
    guardians: list[psutil.Process] = []
    try:
        pids = start_stubborn_sessions(kernel)
        guardians = guardians_of(kernel)
        status = end_kernel(kernel, how)
        if how == "sigterm":
            assert status == -signal.SIGTERM
        gone = wait_until(lambda: not members(pids))
        assert gone, [(p.pid, p.cmdline()) for p in members(pids)]
        assert len(guardians) == 1
        assert wait_until(lambda: not any(alive(g) for g in guardians)), "the guardian outlived its kernel"
    finally:
        release(kernel)
        kill_processes([*members(pids), *guardians])


def test_sigterm_closes_sessions_itself_without_the_guardian():
    kernel = Kernel("python3")
    pids: list[int] = []
    try:
        kernel.run("%config UnifiedExec.guardian = False")
        kernel.run("%load_ext unified_exec_kernel")
        pids = start_stubborn_sessions(kernel)
        assert guardians_of(kernel) == []
        assert end_kernel(kernel, "sigterm") == -signal.SIGTERM
        assert wait_until(lambda: not members(pids)), [(p.pid, p.cmdline()) for p in members(pids)]
    finally:
        release(kernel)
        kill_processes(members(pids))


def test_sigterm_ends_a_kernel_busy_in_a_cell():
    kernel = Kernel("uexec")
    pids: list[int] = []
    try:
        pids = start_stubborn_sessions(kernel)
        busy = kernel.client.execute("import time\nprint('busy', flush=True)\ntime.sleep(120)")
        wait_for_iopub(kernel, busy, "stream")
        assert end_kernel(kernel, "sigterm") == -signal.SIGTERM
        assert wait_until(lambda: not members(pids)), [(p.pid, p.cmdline()) for p in members(pids)]
    finally:
        release(kernel)
        kill_processes(members(pids))


def test_the_sigterm_handler_goes_with_the_extension_and_never_replaces_another():
    kernel = Kernel("python3")
    try:
        kernel.run("import signal\n%load_ext unified_exec_kernel")
        assert "on_sigterm" in kernel.run("print(signal.getsignal(signal.SIGTERM))")
        kernel.run("%unload_ext unified_exec_kernel")
        assert kernel.run("print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)").strip() == "True"
        kernel.run("def mine(*args): pass\nsignal.signal(signal.SIGTERM, mine)")
        kernel.run("%load_ext unified_exec_kernel")
        assert kernel.run("print(signal.getsignal(signal.SIGTERM) is mine)").strip() == "True"
    finally:
        kernel.shutdown()
