"""Reading journals and recordings: v3 with its index, v3 and v2 without, and files that are neither."""

import json

import pytest

from unified_exec_kernel.core.journal import JournalError, open_journal

from .helpers import journaled, written


async def test_a_shell_journal_has_one_chapter_per_command_with_its_text_and_exit_code(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-i"], name="sh")
        await manager.write("sh", "echo one\n")
        await manager.write("sh", "for i in 1 2\ndo echo $i; done; false\n")
        await manager.write("sh", "(exit 3)\n")
        with await written(store, "sh") as journal:
            chapters = [(c.number, c.text, c.exit_code) for c in journal.chapters()]
            assert chapters == [(1, "echo one", 0), (2, "for i in 1 2\ndo echo $i; done; false", 1), (3, "(exit 3)", 3)]
            first = journal.chapters()[0]
            assert journal.read(first.start, first.end) == b"one\r\n"
            assert 0 < first.time <= first.end_time


async def test_events_carry_absolute_times_and_the_exit(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-c", "printf a; sleep 1; printf b; exit 4"], name="slow", timeout_ms=10000)
        with await written(store, "slow") as journal:
            events = list(journal.events())
    outputs = [event for event in events if event.code == "o"]
    assert "".join(event.data for event in outputs) == "ab"
    assert outputs[-1].time - outputs[0].time >= 0.5  # a second apart, however late the loop read them
    assert events[-1].code == "x" and events[-1].data == "4"


async def test_the_index_and_a_scan_answer_alike(tmp_path):
    """A journal read through its index, and the same file scanned as a recording without one."""
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-i"], name="sh")
        await manager.write("sh", "seq 1 30000\n")
        await manager.write("sh", "echo done\n")
        path = store.find("sh").path
        with await written(store, "sh") as indexed:
            copy = tmp_path / "copy.cast"
            copy.write_bytes(open(path, "rb").read())
            with open_journal(str(copy)) as scanned:
                assert scanned.end == indexed.end and scanned.line_count() == indexed.line_count()
                assert [(c.text, c.start, c.end, c.exit_code) for c in scanned.chapters()] == [
                    (c.text, c.start, c.end, c.exit_code) for c in indexed.chapters()
                ]
                for line in (1, 2, 3, 17000, indexed.line_count()):
                    assert scanned.line_start(line) == indexed.line_start(line)
                assert scanned.read(1000, 90000) == indexed.read(1000, 90000)


def test_an_asciinema_v2_recording_reads_with_its_markers_as_chapters(tmp_path):
    path = tmp_path / "demo.cast"
    lines = [{"version": 2, "width": 100, "height": 30, "timestamp": 1504467315}]
    lines += [[0.5, "o", "hello\r\n"], [1.0, "m", "middle"], [1.5, "o", "world\r\n"], [2.0, "r", "90x20"]]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with open_journal(str(path)) as journal:
        assert journal.version == 2 and journal.size == (100, 30)
        assert [(e.time, e.code) for e in journal.events()] == [(0.5, "o"), (1.0, "m"), (1.5, "o"), (2.0, "r")]
        assert journal.read(0, journal.end) == b"hello\r\nworld\r\n"
        (chapter,) = journal.chapters()
        assert (chapter.text, chapter.start, chapter.time, chapter.exit_code) == ("middle", 7, 1.0, None)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "demo.cast is not an asciicast recording: it is empty"),
        (b"hello world\n", "demo.cast is not an asciicast recording: its first line is not a JSON header"),
        (b'{"version": 1, "width": 80, "height": 24, "stdout": []}\n', "demo.cast is asciicast version 1; only versions 2 and 3 can be read"),
        (b'{"version": 3}\n', "demo.cast is not a valid asciicast v3 recording: its header has no term"),
        (b'{"version": 2, "width": 80, "height": 24}\n[0.1, "o", "a"]\nnot json\n', "demo.cast line 3 is not an asciicast event"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "demo.cast is not an asciicast recording: its first line is not a JSON header"),
    ],
)
def test_what_is_not_asciicast_gets_one_clear_line(tmp_path, content, message):
    path = tmp_path / "demo.cast"
    path.write_bytes(content)
    with pytest.raises(JournalError) as caught:
        with open_journal(str(path)) as journal:
            list(journal.events())
    assert str(caught.value) == message


def test_a_missing_file_gets_one_clear_line(tmp_path):
    with pytest.raises(JournalError, match=r"^cannot read .*nothing\.cast: No such file or directory$"):
        open_journal(str(tmp_path / "nothing.cast"))
