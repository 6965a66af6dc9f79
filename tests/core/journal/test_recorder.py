"""What a session hands its journal: resizes, command text from the echo, input only when asked."""

from unified_exec_kernel.core.journal.recorder import command_text

from .helpers import journaled, written


def test_a_command_is_the_echoed_line_without_escapes_or_edits():
    assert command_text(b"echo hi; false\r\n\x1b[?2004l\r") == "echo hi; false"
    assert command_text(b"ecx\x08 \x08ho ok\r\n") == "echo ok"
    assert command_text(b"for i in 1 2\r\n> do echo $i\r\n> done\r\n\x1b[?2004l\r") == "for i in 1 2\ndo echo $i\ndone"
    assert command_text(b"\x1b]0;title\x07ls\r\n") == "ls"


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
