"""The kernel's side of the guardian: one process, started off the spawn path, told of every session.

Sessions here are real process trees started with setsid (as spawn_pty does)
whose programs ignore the hangup and SIGTERM. Every wait is on an event or a
bounded poll.
"""

from __future__ import annotations

import asyncio
import os
import signal

import psutil

from unified_exec_kernel import UnifiedExecRequest, UnifiedExecSessionManager
from unified_exec_kernel.core.process import guardian as guardian_module
from unified_exec_kernel.core.process.guardian import Guardian

from ..stubborn import NO_SUCH_PID, async_wait_until, cleanup, members, start_session


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
    assert not [child for child in psutil.Process().children() if child.status() != psutil.STATUS_ZOMBIE  # (other tests' keepers)
                and "guardian" in " ".join(child.cmdline())]


async def test_the_guardian_removes_the_kernels_journals_after_ending_its_sessions(tmp_path):
    """The kernel's end, however it came, takes its journals along (kept sessions' are their keeper's)."""
    from unified_exec_kernel.core.journal.lifetime import make_kernel_dir

    directory, lock = make_kernel_dir(str(tmp_path), "kernel-g\nnewline")  # any path reaches it whole
    for name in ("session-0.cast", "session-0.cast.idx", "session-1.cast"):
        with open(os.path.join(directory, name), "w") as file:
            file.write("x")
    guardian = Guardian(asyncio.get_running_loop(), journal_dir=directory)
    session = start_session()
    try:
        guardian.watch(session.pid)
        await async_wait_until(lambda: guardian.pid)
        await guardian.close()  # what the kernel's death looks like to it
        assert members(session.pid) == []
        await async_wait_until(lambda: not os.path.exists(directory))
    finally:
        os.close(lock)
        cleanup(session)
