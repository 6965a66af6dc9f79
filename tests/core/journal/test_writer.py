"""The writer thread: SHA-equal output under a flood, coalescing, and the bound on what waits for it."""

import asyncio
import errno
import hashlib
import os
import time

from unified_exec_kernel.core.journal.writer import MAX_EVENT_BYTES, JournalFile, JournalWriter

from .helpers import journaled, small_disk, written


async def test_every_byte_of_a_flood_reaches_the_journal_in_few_events(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-c", "seq 1 300000"], name="flood", timeout_ms=60000)
        with await written(store, "flood") as journal:
            kept = journal.read(journal.start, journal.end)
            events = sum(1 for event in journal.events() if event.code == "o")
    expected = b"".join(b"%d\r\n" % n for n in range(1, 300001))
    assert hashlib.sha256(kept).hexdigest() == hashlib.sha256(expected).hexdigest()
    assert events < len(expected) / 4096  # coalesced: fewer events than the PTY's reads
    # No lower bound: pieces are gathered up to MAX_EVENT_BYTES, but one read of a loaded loop (the terminal
    # reads until EAGAIN) can be larger on its own (CI: 33 events for 2,288,895 bytes).


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


def fill_but(path, free: int) -> None:
    """Fill the disk of `path` with one file, then give `free` bytes of it back."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"f" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC
        os.ftruncate(fd, max(0, os.lseek(fd, 0, os.SEEK_END) - free))
    finally:
        os.close(fd)


def test_a_disk_that_filled_keeps_no_output_until_it_has_room_for_an_event_again(tmp_path):
    """Under load a burst's tail can come as a small event of its own (the 20 ms coalescing window
    closed before it): it fitted the pages the failed 64 KiB event had not got, ended the drop with
    its note, and the next event started another: two notes for one loss. A loss is one note; the
    journal goes on once the disk has room again."""
    with small_disk(tmp_path) as mount:
        writer = JournalWriter(kernel_bytes=1 << 30)
        journal = JournalFile(str(mount / "j.cast"), {"version": 3, "term": {"cols": 80, "rows": 24}}, monotonic_start=time.monotonic(), session_bytes=1 << 30)
        writer.put(("open", journal))
        try:
            writer.flushed().result(timeout=10)
            fill_but(mount / "filler", 16 * 1024)
            offset = 0
            for data in (b"a" * MAX_EVENT_BYTES, b"b" * 2000, b"c" * MAX_EVENT_BYTES):  # each an event of its own
                writer.output(journal, time.monotonic(), data, offset)
                writer.flushed().result(timeout=10)
                offset += len(data)
            assert journal.drops == [] and journal.dropping == [0, offset, "the disk is full"]
            os.unlink(mount / "filler")
            writer.output(journal, time.monotonic(), b"room again", offset)
        finally:
            writer.close()
        text = (mount / "j.cast").read_text()
    assert journal.drops == [(0, offset, "the disk is full")]
    assert text.count("#uexec dropped") == 1 and '"bbbb' not in text
    assert text.index(f'#uexec dropped {{"offset": 0, "bytes": {offset}, "reason": "the disk is full"}}') < text.index('"room again"')
