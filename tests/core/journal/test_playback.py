"""A recording made ready to play: chapters at the event they start at, pauses shortened, sizes kept."""

import json

import pytest

from unified_exec_kernel.core.journal import open_journal
from unified_exec_kernel.core.journal.playback import TooLargeToPlay, playback
from unified_exec_kernel.core.journal import playback as playback_module

from .helpers import journaled, written


def outputs(events) -> str:
    return "".join(data for _, code, data in events if code == "o")


async def test_a_chapter_starts_at_the_event_after_the_commands_start_and_before_its_output(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-i"], name="sh")
        await manager.write("sh", "echo one\n")
        await manager.write("sh", "(exit 3)\n")
        await manager.write("sh", "printf 'a\\nb\\n'\n")
        with await written(store, "sh") as journal:
            played = playback(journal)
            chapters = journal.chapters()
            whole = journal.read(journal.start, journal.end).decode()
    assert [(c.label, c.exit_code) for c in played.chapters] == [("echo one", 0), ("(exit 3)", 3), ("printf 'a\\nb\\n'", 0)]
    for chapter, command in zip(played.chapters, chapters):
        before = outputs(played.events[: chapter.index])
        # Exactly the output before the command's own: its echo, not its first line of output.
        assert len(before.encode()) == command.start - journal.start
    assert outputs(played.events[played.chapters[0].index :]).startswith("one\r\n")
    assert outputs(played.events[played.chapters[2].index :]).startswith("a\r\nb\r\n")
    assert outputs(played.events) == played.output == whole
    assert played.chapters[0].time <= played.chapters[1].time <= played.chapters[2].time <= played.duration


def write_cast(path, header, events):
    path.write_text("\n".join(json.dumps(line) for line in [header, *events]) + "\n")
    return str(path)


def test_long_pauses_are_shortened_and_a_recordings_own_limit_wins(tmp_path):
    events = [[0.1, "o", "a"], [30.1, "o", "b"], [30.2, "r", "100x30"], [90.2, "o", "c"]]
    plain = write_cast(tmp_path / "plain.cast", {"version": 2, "width": 80, "height": 24}, events)
    with open_journal(plain) as journal:
        played = playback(journal, idle_limit=2.0)
        kept = playback(journal, idle_limit=None)
    assert [round(event[0], 3) for event in played.events] == [0.1, 2.1, 2.2, 4.2]
    assert played.events[2] == [pytest.approx(2.2), "r", "100x30"]
    assert kept.duration == pytest.approx(90.2) and played.duration == pytest.approx(4.2)
    limited = write_cast(tmp_path / "limited.cast", {"version": 2, "width": 80, "height": 24, "idle_time_limit": 0.5}, events)
    with open_journal(limited) as journal:
        assert playback(journal, idle_limit=2.0).duration == pytest.approx(1.2)  # 0.1 + 0.5 + 0.1 + 0.5


def test_an_asciinema_recordings_markers_are_its_chapters(tmp_path):
    events = [[0.5, "o", "hello\r\n"], [1.0, "m", "middle"], [1.5, "o", "world\r\n"]]
    path = write_cast(tmp_path / "demo.cast", {"version": 2, "width": 100, "height": 30}, events)
    with open_journal(path) as journal:
        played = playback(journal)
    assert (played.cols, played.rows) == (100, 30)
    assert [(c.label, c.index) for c in played.chapters] == [("middle", 1)]
    assert outputs(played.events[:1]) == "hello\r\n"


def test_a_recording_too_big_to_send_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(playback_module, "MAX_OUTPUT_BYTES", 10)
    path = write_cast(tmp_path / "big.cast", {"version": 2, "width": 80, "height": 24}, [[0.1, "o", "x" * 20]])
    with open_journal(path) as journal, pytest.raises(TooLargeToPlay) as refused:
        playback(journal)
    assert "\n" not in str(refused.value) and "asciinema play" in str(refused.value)
