"""What a session hands its journal: resizes, command text from the echo, input only when asked."""

import asyncio
import time

import pytest

from unified_exec_kernel.core.journal.recorder import command_text

from .helpers import journaled, written


def test_a_command_is_the_echoed_line_without_escapes_or_edits():
    assert command_text(b"echo hi; false\r\n\x1b[?2004l\r") == "echo hi; false"
    assert command_text(b"ecx\x08 \x08ho ok\r\n") == "echo ok"
    assert command_text(b"for i in 1 2\r\n> do echo $i\r\n> done\r\n\x1b[?2004l\r") == "for i in 1 2\ndo echo $i\ndone"
    assert command_text(b"\x1b]0;title\x07ls\r\n") == "ls"


def test_a_line_the_terminal_wrapped_is_joined_where_the_editor_marked_the_new_row():
    # What bash and zsh echoed for `echo word0 ... word19` typed a key at a time at 30 columns:
    # at each wrap bash writes a space and \r, zsh a space, \r, ESC[K and redraws the first
    # character; the space read as part of the command (`wo rd5`, `word12  wword13`).
    typed = "echo " + " ".join(f"word{i}" for i in range(20))
    bash = b"echo wo \rrd0 word1 word2 word3 word4 wo \rrd5 word6 word7 word8 word9 wo \rrd10 word11 word12 word13 word \r14 word15 word16 word17 word18 \r word19\r\n\x1b[?2004l\r"
    zsh = b"e\x08echo word0 word1 word2 wor \r\x1b[Kd\rd3 word4 word5 word6 word7 wor \r\x1b[Kd\rd8 word9 word10 word11 word12  \r\x1b[Kw\rword13 word14 word15 word16 wo \r\x1b[Kr\rrd17 word18 word19\x1b[?2004l\r\r\n"
    assert command_text(bash) == command_text(zsh) == typed
    assert command_text(b"ls \r\n") == "ls"  # a typed trailing space, then Enter
    assert command_text(b"cat fiel\x1b[2Dle\r\n") == "cat file"  # moved left and typed over


async def _type_a_key_at_a_time(session, text: str) -> None:
    """Each key once the terminal echoed the last, as a person types: the line editor redraws per key."""
    for char in text:
        before = session.offset
        session.write(char)
        deadline = time.monotonic() + 10
        while session.offset == before:
            assert time.monotonic() < deadline, f"no echo of {char!r}"
            await asyncio.sleep(0.002)


@pytest.mark.parametrize("argv", [["bash", "--norc", "-i"], ["zsh", "-f", "-i"]], ids=lambda argv: argv[0])
async def test_a_long_line_typed_into_a_narrow_shell_is_recorded_as_typed(tmp_path, monkeypatch, argv):
    monkeypatch.delenv("PS1", raising=False)  # zsh marks no prompt end (B) in an exported PS1
    typed = "echo " + " ".join(f"word{i}" for i in range(20))  # 136 characters: wraps 4 times at 30
    async with journaled(tmp_path) as (manager, store):
        await manager.start(argv, name="narrow", env={"TERM": "xterm-256color", "HOME": str(tmp_path)})
        session = manager.session("narrow")
        session.resize(24, 30)
        await _type_a_key_at_a_time(session, typed)
        result = await manager.write("narrow", "\n")
        assert result.command_exit_code == 0, result.output
        with await written(store, "narrow") as journal:
            assert [command.text for command in journal.chapters()] == [typed]


async def test_a_resize_is_an_r_event_and_the_header_has_the_size_at_the_start(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        manager.spawn(["cat"], name="cat")
        manager.session("cat").resize(30, 100)
        await manager.write("cat", "x\n")
        with await written(store, "cat") as journal:
            assert journal.size == (80, 24)
            assert [event.data for event in journal.events() if event.code == "r"] == ["100x30"]


async def test_input_is_left_out_unless_asked_for(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        manager.spawn(["cat"], name="quiet")
        await manager.write("quiet", "hunter2\n")
        with await written(store, "quiet") as journal:
            assert not [event for event in journal.events() if event.code == "i"]
    async with journaled(tmp_path / "second", record_input=True) as (manager, store):
        manager.spawn(["cat"], name="told")
        await manager.write("told", "typed\n")
        with await written(store, "told") as journal:
            assert [event.data for event in journal.events() if event.code == "i"] == ["typed\n"]
