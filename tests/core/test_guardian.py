"""The guardian process: what it was told of dies with its kernel, nothing else ever does.

Sessions here are real process trees started with setsid (as spawn_pty does)
whose programs ignore the hangup and SIGTERM; "kernels" are real processes
killed with SIGKILL. Every wait is on an event or a bounded poll.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from unified_exec_kernel import UnifiedExecRequest, UnifiedExecSessionManager
from unified_exec_kernel.core import guardian as guardian_module
from unified_exec_kernel.core import procs
from unified_exec_kernel.core.guardian import Guardian, Ledger, end_sessions

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


# -- through the kernel's side ---------------------------------------------------


async def test_closing_the_pipe_ends_every_process_of_every_watched_session():
    guardian = Guardian(asyncio.get_running_loop())
    first, second = start_session(), start_session()
    try:
        guardian.watch(first.pid)
        guardian.watch(second.pid)
        await async_wait_until(lambda: guardian.pid)
        process = psutil.Process(guardian.pid)
        await guardian.close()  # what the kernel's death looks like to it
        assert members(first.pid) == [] and members(second.pid) == []
        assert not process.is_running() and guardian.pid is None  # exited, and reaped
    finally:
        cleanup(first, second)


async def test_the_guardian_starts_once_with_the_first_session_and_off_the_spawn_path():
    guardian = Guardian(asyncio.get_running_loop())
    sessions = [start_session("sleep 300") for _ in range(3)]
    try:
        assert guardian.pid is None
        guardian.watch(sessions[0].pid)
        assert guardian.pid is None  # started on the loop's next turn, not inside watch()
        await async_wait_until(lambda: guardian.pid)
        first = guardian.pid
        for session in sessions[1:]:
            guardian.watch(session.pid)
        await asyncio.sleep(0.1)
        assert guardian.pid == first
        assert len([p for p in psutil.Process().children() if p.pid == first]) == 1
    finally:
        await guardian.close()
        cleanup(*sessions)


async def test_forgotten_sessions_are_left_alone():
    guardian = Guardian(asyncio.get_running_loop())
    kept, forgotten = start_session(), start_session()
    try:
        guardian.watch(kept.pid)
        guardian.watch(forgotten.pid)
        await async_wait_until(lambda: guardian.pid)
        guardian.forget(forgotten.pid)
        assert guardian.watched == {kept.pid}
        await guardian.close()
        assert members(kept.pid) == []
        assert len(members(forgotten.pid)) == 3
    finally:
        cleanup(kept, forgotten)


async def test_a_guardian_with_nothing_to_do_exits_quietly():
    guardian = Guardian(asyncio.get_running_loop())
    session = start_session("sleep 300")
    try:
        guardian.watch(session.pid)
        await async_wait_until(lambda: guardian.pid)
        guardian.forget(session.pid)
        process = psutil.Process(guardian.pid)
        await guardian.close()
        assert not process.is_running()
        assert members(session.pid) == [session.pid]
    finally:
        cleanup(session)


async def test_a_dead_guardian_is_replaced_and_learns_the_whole_list(caplog):
    guardian = Guardian(asyncio.get_running_loop())
    first, second = start_session(), start_session()
    try:
        guardian.watch(first.pid)
        await async_wait_until(lambda: guardian.pid)
        old = guardian.pid
        os.kill(old, signal.SIGKILL)
        await async_wait_until(lambda: guardian.pid not in (None, old))
        guardian.watch(second.pid)
        await guardian.close()
        assert members(first.pid) == [] and members(second.pid) == []
        assert [r.message for r in caplog.records].count(
            f"uexec: the guardian (pid {old}) exited with status -9; starting another"
        ) == 1
    finally:
        cleanup(first, second)


async def test_a_guardian_that_stops_reading_is_replaced(monkeypatch):
    monkeypatch.setattr(guardian_module, "MAX_PENDING_BYTES", 4096)
    guardian = Guardian(asyncio.get_running_loop())
    session = start_session()
    guardian.watch(session.pid)
    await async_wait_until(lambda: guardian.pid)
    stopped = psutil.Process(guardian.pid)
    try:
        stopped.suspend()
        for _ in range(20000):  # fills its 64 KiB pipe, then the queue past the limit
            guardian.watch(NO_SUCH_PID)
            guardian.forget(NO_SUCH_PID)
        await async_wait_until(lambda: guardian.pid not in (None, stopped.pid))
        assert not stopped.is_running()  # killed and reaped, never acting on the EOF
        assert len(members(session.pid)) == 3
        await guardian.close()
        assert members(session.pid) == []
    finally:
        if stopped.is_running():
            stopped.kill()
        cleanup(session)


async def test_the_guardian_stands_apart_from_the_kernel():
    """Its own session (a killpg of the kernel's group misses it), in /, holding nothing inherited."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # as a kernel may have inherited from its launcher
    guardian = Guardian(asyncio.get_running_loop())
    session = start_session("sleep 300")
    try:
        guardian.watch(session.pid)
        pid = await async_wait_until(lambda: guardian.pid)
        assert os.getsid(pid) == pid and os.getpgid(pid) != os.getpgid(0)
        pipe = f"pipe:[{os.fstat(write_end).st_ino}]"

        def settled():
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            return pipe not in links and os.readlink(f"/proc/{pid}/cwd") == "/"

        await async_wait_until(settled)
        os.close(write_end)
        write_end = None
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1) == b""  # EOF: nobody else holds it (else BlockingIOError)
    finally:
        for fd in (read_end, write_end):
            if fd is not None:
                os.close(fd)
        await guardian.close()
        cleanup(session)


KERNEL = textwrap.dedent(
    """
    import asyncio, os, subprocess, sys
    from unified_exec_kernel.core.guardian import Guardian

    async def main():
        guardian = Guardian(asyncio.get_running_loop())
        leaders = [subprocess.Popen(["bash", "-c", sys.argv[1]], start_new_session=True) for _ in range(2)]
        for leader in leaders:
            guardian.watch(leader.pid)
        while guardian.pid is None:
            await asyncio.sleep(0.01)
        if sys.argv[2] == "fork":  # a child forked without exec holds the pipe's write end
            if os.fork() == 0:
                import time
                time.sleep(300)
                os._exit(0)
        print(guardian.pid, *[leader.pid for leader in leaders], flush=True)
        await asyncio.sleep(300)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("holder", ["alone", "fork"])
def test_a_killed_kernel_takes_its_sessions_along(holder):
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL, STUBBORN, holder], stdout=subprocess.PIPE, text=True)
    leaders: list[int] = []
    forked: list[psutil.Process] = []
    try:
        guardian_pid, *leaders = map(int, kernel.stdout.readline().split())
        guardian = psutil.Process(guardian_pid)
        forked = [child for child in psutil.Process(kernel.pid).children() if child.pid not in (guardian_pid, *leaders)]
        wait_until(lambda: all(len(members(leader)) >= 3 for leader in leaders))
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.wait(DEADLINE_S)
        wait_until(lambda: all(members(leader) == [] for leader in leaders))
        wait_until(lambda: not guardian.is_running() or guardian.status() == psutil.STATUS_ZOMBIE)
        assert all(child.is_running() for child in forked)  # not a session: untouched
    finally:
        kernel.kill()
        kernel.wait(DEADLINE_S)
        kill_processes([psutil.Process(pid) for leader in leaders for pid in members(leader)] + forked)


# -- the guardian's own bookkeeping -------------------------------------------------


def test_other_processes_are_never_touched():
    watched = start_session()
    bystander = start_session()  # another session, never told of
    same_group = subprocess.Popen(["sleep", "300"])  # in the test's own session
    try:
        ended = end_sessions([watched.pid], grace=0.2)
        assert ended == 3
        assert members(watched.pid) == []
        assert len(members(bystander.pid)) == 3 and same_group.poll() is None
    finally:
        same_group.kill()
        same_group.wait()
        cleanup(watched, bystander)


def held_after_events(ledger: Ledger, poller: select.poll, until, timeout: float = DEADLINE_S) -> None:
    """Feed the ledger its pidfd events and looks, as `serve` does, until `until()`."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError("the ledger did not get there")
        for fd, _ in poller.poll(100):
            ledger.exited(fd)
        ledger.look()


def test_a_session_that_ended_unseen_leaves_the_list_so_its_id_can_be_reused_safely():
    poller = select.poll()
    ledger = Ledger(os.getpid(), poller)
    session = start_session("sleep 300")
    try:
        ledger.apply(b"+%d\n" % session.pid)
        assert ledger.session_ids == [session.pid]
        session.kill()
        session.wait()
        held_after_events(ledger, poller, lambda: ledger.session_ids == [])
    finally:
        cleanup(session)


def test_a_session_is_held_while_a_process_outlives_its_leader():
    poller = select.poll()
    ledger = Ledger(os.getpid(), poller)
    leader = subprocess.Popen(["bash", "-c", "sleep 300 & echo started"], start_new_session=True, stdout=subprocess.PIPE)
    try:
        ledger.watch(leader.pid)
        assert leader.stdout.readline() == b"started\n"
        leader.wait(DEADLINE_S)  # the leader is gone (reaped); its sleep keeps the session
        survivor = wait_until(lambda: members(leader.pid))
        # the dead leader's pidfd is let go, the survivor is found and held instead
        held_after_events(ledger, poller, lambda: set(ledger._held[leader.pid].values()) == set(survivor))
        assert end_sessions(ledger.session_ids, grace=0.2) == 1
        assert members(leader.pid) == []
        held_after_events(ledger, poller, lambda: ledger.session_ids == [])
    finally:
        cleanup(leader)


def test_a_pid_that_is_not_the_kernels_child_is_not_held():
    poller = select.poll()
    ledger = Ledger(kernel_pid=1, poller=poller)  # the sessions' parent is this test, not pid 1
    session = start_session("sleep 300")
    try:
        ledger.watch(session.pid)
        assert ledger._held[session.pid] == {}  # not held by pidfd: only looked for
    finally:
        cleanup(session)


def test_lines_cut_short_are_kept_for_the_next_read():
    ledger = Ledger(os.getpid(), select.poll())
    rest = ledger.apply(b"+%d\n-%d\n+98" % (NO_SUCH_PID, NO_SUCH_PID))
    assert rest == b"+98" and ledger.session_ids == []
    assert ledger.apply(b"garbage\n\n+x\n") == b""


# -- wired into the manager -------------------------------------------------------


async def test_a_manager_with_a_guardian_watches_each_session_until_it_is_closed():
    manager = UnifiedExecSessionManager(guardian=True)
    try:
        first = await manager.handle_request(UnifiedExecRequest(None, ["sleep", "300"], 0))
        second = await manager.handle_request(UnifiedExecRequest(None, ["sleep", "300"], 0))
        leaders = {manager.session(first.session_id).pid, manager.session(second.session_id).pid}
        guardian = manager._guardian
        assert guardian.watched == leaders
        process = psutil.Process(await async_wait_until(lambda: guardian.pid))
        await manager.kill(first.session_id)
        assert guardian.watched == {manager.session(second.session_id).pid}
        exited = await manager.handle_request(UnifiedExecRequest(None, ["true"], 5000))
        assert exited.session_id is None
        await async_wait_until(lambda: guardian.watched == {manager.session(second.session_id).pid})  # once closed
    finally:
        await manager.close_all()
    assert manager._guardian is None and not process.is_running()  # closed, exited and reaped


async def test_the_bare_engine_starts_no_guardian(manager):
    await manager.handle_request(UnifiedExecRequest(None, ["sleep", "300"], 0))
    await asyncio.sleep(0.1)
    assert manager._guardian is None
    assert not [child for child in psutil.Process().children() if "guardian" in " ".join(child.cmdline())]
