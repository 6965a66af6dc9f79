"""The writer thread: SHA-equal output under a flood, coalescing, and the bound on what waits for it."""

import asyncio
import hashlib
import time

from unified_exec_kernel.core.journal.writer import MAX_EVENT_BYTES, JournalFile, JournalWriter

from .helpers import journaled, written


async def test_every_byte_of_a_flood_reaches_the_journal_in_few_events(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-c", "seq 1 300000"], name="flood", timeout_ms=60000)
        with await written(store, "flood") as journal:
            kept = journal.read(journal.start, journal.end)
            events = sum(1 for event in journal.events() if event.code == "o")
    expected = b"".join(b"%d\r\n" % n for n in range(1, 300001))
    assert hashlib.sha256(kept).hexdigest() == hashlib.sha256(expected).hexdigest()
    assert events < len(expected) / 4096  # coalesced: fewer events than the PTY's reads
    assert events >= len(expected) / MAX_EVENT_BYTES


def test_output_past_the_backlog_is_dropped_and_said_once_the_writer_catches_up(tmp_path):
    writer = JournalWriter(kernel_bytes=1 << 30, max_backlog_bytes=1000)
    journal = JournalFile(str(tmp_path / "j.cast"), {"version": 3, "term": {"cols": 80, "rows": 24}}, monotonic_start=time.monotonic(), session_bytes=1 << 30)
    writer.put(("open", journal))
    writer.taken_bytes = -10**9  # the thread has not taken anything: the backlog looks full
    writer.output(journal, time.monotonic(), b"a" * 500, 0)
    assert journal.loop_lost == [0, 500]
    writer.taken_bytes = writer.queued_bytes
    writer.output(journal, time.monotonic(), b"b" * 10, 500)
    writer.close()
    assert journal.drops == [(0, 500, "the journal's writer fell behind (more than 1,000 bytes waited for the disk)")]
    text = (tmp_path / "j.cast").read_text()
    assert '#uexec dropped {"offset": 0, "bytes": 500' in text and '"bbbbbbbbbb"' in text


async def test_a_barrier_waits_for_what_was_queued_before_it(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["echo", "ready"], name="e")
        await asyncio.wrap_future(store.flushed())
        assert b'"ready\\r\\n"' in open(store.find("e").path, "rb").read()


def test_an_idle_writer_gathers_what_comes_next_but_a_barrier_or_the_close_never_waits_for_it(tmp_path, monkeypatch):
    """Woken from idle it waits GATHER_IDLE_S for more items (a short command's open, output, exit
    and close), off the path of the call that started it; whoever waits for the disk cuts that short."""
    monkeypatch.setattr("unified_exec_kernel.core.journal.writer.GATHER_IDLE_S", 3600)  # a wait nobody sits out
    writer = JournalWriter(kernel_bytes=1 << 30)
    journal = JournalFile(str(tmp_path / "j.cast"), {"version": 3, "term": {"cols": 80, "rows": 24}}, monotonic_start=time.monotonic(), session_bytes=1 << 30)
    writer.put(("open", journal))
    writer.output(journal, time.monotonic(), b"first", 0)
    writer.flushed().result(timeout=10)
    assert b'"first"' in (tmp_path / "j.cast").read_bytes()
    writer.output(journal, time.monotonic(), b"second", 5)  # the writer is idle again: it gathers
    started = time.monotonic()
    writer.close(timeout=10)
    assert time.monotonic() - started < 10 and b'"second"' in (tmp_path / "j.cast").read_bytes()
