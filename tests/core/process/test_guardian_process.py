"""The guardian process: what it was told of dies with its kernel, nothing else ever does.

"Kernels" here are real processes killed with SIGKILL; sessions are real
process trees (setsid) whose programs ignore the hangup and SIGTERM.
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

from unified_exec_kernel.core.process.guardian import Guardian
from unified_exec_kernel.core.process.guardian_process import Ledger, end_sessions

from ...conftest import kill_processes
from ..stubborn import DEADLINE_S, NO_SUCH_PID, STUBBORN, async_wait_until, cleanup, members, start_session, wait_until


KERNEL = textwrap.dedent(
    """
    import asyncio, os, subprocess, sys
    from unified_exec_kernel.core.process.guardian import Guardian

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
            links = []
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
                except FileNotFoundError:
                    pass  # closed between the listing and the look: it is starting up, closing what it inherited
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


# -- its list ---------------------------------------------------------------------


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


def test_kept_sessions_are_apart_until_the_kernel_takes_them_over():
    """`*PID` (from the keeper, its child) is kept; `+PID` makes it the kernel's again; `R` lets kept ones go."""
    poller = select.poll()
    ledger = Ledger(kernel_pid=NO_SUCH_PID, poller=poller)  # the sessions are this test's children: the "keeper"
    kept, other = start_session("sleep 300"), start_session("sleep 300")
    try:
        ledger.apply(b"P%d\nG2.5\n*%d\n*%d\n" % (os.getpid(), kept.pid, other.pid))
        assert (ledger.keeper_pid, ledger.keeper_grace) == (os.getpid(), 2.5)
        assert sorted(ledger.kept_ids) == sorted([kept.pid, other.pid]) and ledger.unkept_ids == []
        assert ledger._held[kept.pid]  # held by pidfd: the keeper is their parent
        ledger.apply(b"+%d\n" % kept.pid)  # its keeper died: the kernel holds it now
        assert ledger.unkept_ids == [kept.pid] and ledger.kept_ids == [other.pid]
        ledger.apply(b"R\n")  # the next kernel's guardian has the kept ones
        assert ledger.session_ids == [kept.pid]
    finally:
        cleanup(kept, other)


GUARDIAN_AT_KERNEL_END = textwrap.dedent(
    """
    import os, subprocess, sys
    from unified_exec_kernel.core.process.guardian import Guardian
    # A stand-in kernel: it spawns a guardian, tells it a "keeper" (this process's child) holds a
    # kept session, hands the pipe to that keeper, then dies; the test plays the keeper's part.
    import asyncio

    async def main():
        guardian = Guardian(asyncio.get_running_loop())
        pipe = guardian.share()
        keeper = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(pipe)], pass_fds=[pipe], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        os.close(pipe)
        print(guardian.pid, keeper.pid, keeper.stdout.readline().decode().strip(), flush=True)
        await asyncio.sleep(300)

    asyncio.run(main())
    """
)
KEEPER_STAND_IN = textwrap.dedent(
    """
    import os, subprocess, sys
    pipe = int(sys.argv[1])
    program = subprocess.Popen(["bash", "-c", "trap '' HUP TERM; sleep 300 & wait"], start_new_session=True)
    os.write(pipe, b"P%d\\nG1.0\\n*%d\\n" % (os.getpid(), program.pid))
    print(program.pid, flush=True)
    sys.stdin.read()  # until the test ends us: while we live the kept session is ours
    """
)


@pytest.mark.parametrize("keeper_end", ["dies", "stalls"])
def test_the_guardian_ends_kept_sessions_when_their_keeper_is_gone_after_the_kernel(keeper_end):
    kernel = subprocess.Popen([sys.executable, "-c", GUARDIAN_AT_KERNEL_END, KEEPER_STAND_IN], stdout=subprocess.PIPE, text=True)
    program = keeper = None
    try:
        guardian_pid, keeper_pid, program = map(int, kernel.stdout.readline().split())
        keeper = psutil.Process(keeper_pid)
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.wait(DEADLINE_S)
        guardian = psutil.Process(guardian_pid)
        time.sleep(0.3)  # not a race: at any moment after the kernel's death the kept session must live on
        assert members(program) != [], "a kept session was ended with its kernel while its keeper lives"
        if keeper_end == "dies":
            keeper.kill()
        else:
            keeper.suspend()  # for good: the guardian ends it after its grace (1 s) and the margin
        wait_until(lambda: members(program) == [], timeout=DEADLINE_S + 10)
        wait_until(lambda: not guardian.is_running() or guardian.status() == psutil.STATUS_ZOMBIE)
        assert not keeper.is_running() or keeper.status() == psutil.STATUS_ZOMBIE
    finally:
        kernel.kill()
        kernel.wait(DEADLINE_S)
        if keeper is not None:
            kill_processes([keeper])
        if program is not None:
            kill_processes([psutil.Process(pid) for pid in members(program)])
