"""A kernel's journals: where they live, by which key they are found, how long they last."""

import asyncio
import os
import time

import pytest

from unified_exec_kernel.core.journal import JournalNotFound, JournalStore, open_journal

from ..helpers import spawn
from .helpers import journaled, mode, small_disk, written


async def test_a_finished_one_shot_command_stays_readable_by_name_and_id(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        result = await manager.start(["bash", "-c", "echo first; echo second"], name="job")
        assert result.session_id is None  # exited, forgotten by the manager
        for key in ("job", 0):
            with await written(store, key) as journal:
                assert journal.read(journal.start, journal.end) == b"first\r\nsecond\r\n"


async def test_a_journals_times_count_from_the_sessions_start_however_long_its_spawn_took(tmp_path):
    store = JournalStore(str(tmp_path / "kernel"), keep=True)
    session = spawn(["bash", "-c", "read x; echo late"])
    try:
        await asyncio.sleep(0.5)  # as a spawn on a loaded machine, between the session's start and its journal's
        entry = store.record(session)
        typed = time.time()
        session.write("go\r")
        await asyncio.wait_for(session.wait_finished(), 10)
        await asyncio.wrap_future(store.flushed())
        with open_journal(entry.file.path) as journal:
            late = next(event for event in journal.events() if "late" in event.data)
        assert entry.started == session.started
        assert typed <= entry.started + late.time <= time.time()  # where the event was, in wall time
    finally:
        await session.close()
        await asyncio.to_thread(store.close)  # it joins the writer thread


async def test_the_directory_is_private_and_so_is_every_file(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["echo", "hi"])
        await asyncio.wrap_future(store.flushed())
        assert mode(store.directory) == 0o700
        files = os.listdir(store.directory)
        assert sorted(files) == ["session-0.cast", "session-0.cast.idx", "session-0.cast.marks"]
        assert {mode(os.path.join(store.directory, name)) for name in files} == {0o600}


async def test_an_unknown_key_says_which_journals_there_are(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["true"], name="web")
        with pytest.raises(JournalNotFound, match=r"^no journal for session 'nope' \(journals: web\)$"):
            store.find("nope")
        with pytest.raises(JournalNotFound, match=r"^no journal for session 7 "):
            store.find(7)


async def test_a_dropped_journal_is_deleted_and_says_so(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["echo", "secret"], name="once")
        path = store.find("once").path
        store.drop("once")
        await asyncio.wrap_future(store.flushed())
        assert not os.path.exists(path)
        with pytest.raises(JournalNotFound, match=r"^the journal of session 'once' is gone: it was dropped$"):
            store.find("once")


async def test_the_kernel_cap_evicts_the_oldest_finished_journal_first(tmp_path):
    async with journaled(tmp_path, kernel_bytes=64 * 1024) as (manager, store):
        await manager.start(["bash", "-c", "head -c 20000 /dev/zero | tr '\\0' a"], name="old")
        await manager.start(["bash", "-c", "head -c 20000 /dev/zero | tr '\\0' b"], name="mid")
        await asyncio.wrap_future(store.flushed())
        await manager.start(["bash", "-c", "head -c 30000 /dev/zero | tr '\\0' c"], name="new")
        with await written(store, "new") as journal:
            assert journal.read(journal.start, journal.end) == b"c" * 30000
        with pytest.raises(JournalNotFound, match="gone: it was removed to keep this kernel's journals under c.UnifiedExec.journal_kernel_bytes = 65,536"):
            store.find("old")
        store.find("mid")  # the newer one stays


async def test_the_session_cap_keeps_the_head_and_says_what_it_dropped(tmp_path):
    async with journaled(tmp_path, session_bytes=16 * 1024) as (manager, store):
        await manager.start(["bash", "-c", "seq 1 20000"], name="big")
        entry = store.find("big")
        await asyncio.wrap_future(store.flushed())
        with await written(store, "big") as journal:
            kept = journal.read(journal.start, journal.end)
            assert kept.startswith(b"1\r\n2\r\n") and len(kept) < 16 * 1024
            (drop,) = journal.drops
            assert drop.offset == len(kept) and drop.offset + drop.size == len(b"".join(b"%d\r\n" % n for n in range(1, 20001)))
            assert "journal_session_bytes = 16,384" in drop.reason
        assert entry.notes() == [drop.describe()]


async def test_closing_the_store_ends_its_thread_and_removes_the_directory(tmp_path):
    store = JournalStore(str(tmp_path / "k"))
    from unified_exec_kernel.core.manager import UnifiedExecSessionManager

    manager = UnifiedExecSessionManager(journals=store)
    await manager.start(["echo", "hi"])
    thread = store.writer._thread
    assert thread is not None and thread.is_alive()
    await manager.close_all()
    assert not thread.is_alive()
    assert not os.path.exists(store.directory)


async def test_a_full_disk_keeps_the_session_going_and_the_journal_says_what_it_dropped(tmp_path):
    with small_disk(tmp_path) as mount:
        store = JournalStore(str(mount / "kernel"))
        from unified_exec_kernel.core.manager import UnifiedExecSessionManager

        manager = UnifiedExecSessionManager(shell_integration=True, journals=store)
        try:
            await manager.start(["bash", "-i"], name="sh")
            result = await manager.write("sh", "seq 1 100000\n")  # ~600 KB through a 256 KB disk
            assert "100000" in result.output and result.command_exit_code == 0
            result = await manager.write("sh", "echo $((6*7))\n")
            assert "42" in result.output  # the session went on
            await asyncio.wrap_future(store.flushed())
            entry = store.find("sh")
            assert any("the disk is full" in note for note in entry.notes()), entry.notes()
        finally:
            await manager.close_all()


async def test_a_barrier_from_another_thread_includes_what_the_loop_still_gathers(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        manager.spawn(["cat"], name="live")
        await manager.write("live", "gathered\n", timeout_ms=300)  # echoed within the last 20 ms or so
        recorder = store.find("live").recorder
        recorder._gathered += b"not yet queued"  # as if it had just arrived
        recorder._gathered_at = (recorder._gathered_at[0], manager.session("live").offset)
        future = await asyncio.to_thread(store.flushed)  # a cell's thread, not the loop
        await asyncio.wrap_future(future)
        assert b"not yet queued" in open(store.find("live").path, "rb").read()


async def test_a_kept_journal_does_not_keep_its_session_alive(tmp_path):
    import gc
    import weakref

    async with journaled(tmp_path) as (manager, store):
        manager.spawn(["bash", "-c", "read line; echo $line"], name="short")
        session = weakref.ref(manager.session("short"))
        await manager.write("short", "bye\n", timeout_ms=10000)  # it exits; the manager forgets it
        await asyncio.wrap_future(store.flushed())
        for _ in range(100):  # closing finishes in the background
            gc.collect()
            if session() is None:
                break
            await asyncio.sleep(0.05)
        assert session() is None  # its buffers went with it; the journal stays
        with await written(store, "short") as journal:
            assert journal.read(0, journal.end).endswith(b"bye\r\n")


async def test_near_the_kernel_cap_a_new_session_gets_the_room_of_older_finished_journals(tmp_path):
    """A first event larger than the session's room used to return at the session cap before the kernel
    cap's eviction ran: the new journal kept only what was left (or nothing), blamed the session's cap,
    and the old finished journal stayed."""
    async with journaled(tmp_path, kernel_bytes=48 * 1024, session_bytes=32 * 1024) as (manager, store):
        await manager.start(["bash", "-c", "head -c 30000 /dev/zero | tr '\\0' a"], name="old")
        await asyncio.wrap_future(store.flushed())
        await manager.start(["bash", "-c", "head -c 200000 /dev/zero | tr '\\0' c"], name="new")
        with await written(store, "new") as journal:
            kept = journal.read(journal.start, journal.end)
            assert set(kept) == {ord("c")} and len(kept) > 28_000  # the head, nearly the session's whole cap
            (drop,) = journal.drops
            assert drop.offset == len(kept) and drop.offset + drop.size == 200_000
            assert "journal_session_bytes = 32,768" in drop.reason  # what bound it once the old one went
        with pytest.raises(JournalNotFound, match="removed to keep this kernel's journals under"):
            store.find("old")


async def test_the_note_names_the_kernel_cap_when_that_is_what_bound(tmp_path):
    """A running journal cannot be evicted: the kernel's cap is what stops the new one, and the note says so."""
    async with journaled(tmp_path, kernel_bytes=64 * 1024, session_bytes=64 * 1024) as (manager, store):
        manager.spawn(["bash", "-c", "head -c 40000 /dev/zero | tr '\\0' a; exec cat"], name="running")
        for _ in range(200):
            await asyncio.wrap_future(store.flushed())
            if store.writer.total_bytes > 40_000:
                break
            await asyncio.sleep(0.05)
        await manager.start(["bash", "-c", "head -c 100000 /dev/zero | tr '\\0' c"], name="new")
        with await written(store, "new") as journal:
            kept = journal.read(journal.start, journal.end)
            assert 10_000 < len(kept) < 30_000
            (drop,) = journal.drops
            assert "journal_kernel_bytes = 65,536" in drop.reason, drop.reason
        store.find("running")  # still there


async def test_a_full_disk_is_one_note_per_loss_not_one_per_event(tmp_path):
    """Each 64 KiB event used to end the drop with a small note that still fit, then fail itself:
    a flood onto a full disk left a note per event. A loss is one stretch of output, so one note."""
    with small_disk(tmp_path) as mount:
        store = JournalStore(str(mount / "kernel"), keep=True)
        from unified_exec_kernel.core.manager import UnifiedExecSessionManager

        manager = UnifiedExecSessionManager(journals=store)
        try:
            # ~2 MB through a 256 KB disk, in bursts that each make an event of their own
            await manager.start(["bash", "-c", "for i in $(seq 1 40); do head -c 50000 /dev/zero | tr '\\0' x; sleep 0.03; done"], name="flood", timeout_ms=30_000)
            await asyncio.wrap_future(store.flushed())
            entry = store.find("flood")
            full = [note for note in entry.notes() if "the disk is full" in note]
            assert len(full) == 1, entry.notes()
            marks = open(entry.file.marks_path, "rb").read().count(b'"dropped"')
            assert marks <= 1
        finally:
            await manager.close_all()
