"""The manager's part for kept sessions (core/kept_sessions.py), with a real keeper: take-back, let-go, acks."""

from __future__ import annotations

import psutil

from .process.test_keeper import let_go, place  # noqa: F401 - the fixture
from .stubborn import async_wait_until


async def test_a_taken_back_session_keeps_its_id_and_name_and_new_ones_are_numbered_after_it(place):
    first = place.kernel()
    await first.start(["sleep", "60"], keep=True, timeout_ms=0)
    await first.start(["cat"], keep=True, name="kept-cat", timeout_ms=0)
    await let_go(first)
    second = place.kernel()
    try:
        assert await second.take_back() == [0, 1]
        assert second.session("kept-cat").session_id == 1
        assert [(info.session_id, info.kept, info.restarts) for info in second.list_sessions()] == [(0, True, 1), (1, True, 1)]
        assert (await second.start(["true"], timeout_ms=5_000)).exit_code == 0
        assert second.spawn(["sleep", "60"]) == 3  # 2 was the `true` above
    finally:
        await second.close_all()


async def test_a_taken_back_session_is_read_from_where_the_last_kernel_left_off(place):
    first = place.kernel()
    await first.start(["cat"], keep=True, name="echoes", timeout_ms=0)
    assert "before" in (await first.write("echoes", "before\n", until="^before$", timeout_ms=10_000)).output
    session = first.session("echoes")
    # Once the keeper knows the journal holds it; what it does not, it sends the next kernel again.
    await async_wait_until(lambda: first.kept._acks.get(session.session_id) == session.terminal.raw_read)
    await let_go(first)
    second = place.kernel()
    try:
        await second.take_back()
        after = await second.write("echoes", "after\n", until="^after$", timeout_ms=10_000)
        assert "after" in after.output and "before" not in after.output
    finally:
        await second.close_all()


async def test_letting_go_leaves_the_program_running_and_the_table_empty(place):
    first = place.kernel()
    started = await first.start(["sleep", "60"], keep=True, timeout_ms=0)
    pid = first.session(started.session_id).pid
    first.let_go_of_kept()
    assert first.list_sessions() == []
    assert psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    await first.close_all()
    second = place.kernel()
    try:
        assert await second.take_back() == [started.session_id]
    finally:
        await second.close_all()
    await async_wait_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)


async def test_the_keeper_is_told_what_the_journal_holds(place):
    first = place.kernel()
    try:
        await first.start(["bash", "-c", "echo hello; read"], keep=True, name="told", timeout_ms=10_000, until="^hello$")
        session = first.session("told")
        await async_wait_until(lambda: first.kept._acks.get(session.session_id) == session.terminal.raw_read)
    finally:
        await first.close_all()


async def test_a_taken_back_session_keeps_its_start_time(place):
    """A live view whose widget model is gone finds its kept session by id and start (reattach.ts)."""
    first = place.kernel()
    started = await first.start(["sleep", "60"], keep=True, timeout_ms=0)
    when = first.session(started.session_id).started
    await let_go(first)
    second = place.kernel()
    try:
        assert await second.take_back() == [started.session_id]
        assert second.session(started.session_id).started == when
        assert [info.started for info in second.list_sessions()] == [when]
    finally:
        await second.close_all()
