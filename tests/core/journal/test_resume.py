"""Where a journal ends, read back from its files: what the writer itself knew when it stopped."""

import asyncio

from unified_exec_kernel.core.journal.resume import journal_end

from .helpers import journaled


async def test_the_end_read_back_is_what_the_writer_knew(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-i"], name="sh", timeout_ms=10_000)
        for command in ("echo one", "printf 'two\\nthree\\n'", "(exit 4)"):
            await manager.write("sh", command + "\n")
        manager.session("sh").resize(30, 100)
        await manager.write("sh", "exit\n", timeout_ms=10_000)
        await asyncio.wrap_future(store.flushed())
        file = store.find("sh").file
        end = journal_end(file.path)
        assert (end.position, end.size, end.lines, end.last_us, end.commands) == (file.position, file.size, file.lines, file.last_us, file.commands)
        assert end.commands == 4 and end.output_end == manager_offset(store)


def manager_offset(store) -> int:
    from unified_exec_kernel.core.journal import open_journal

    with open_journal(store.find("sh").path) as journal:
        return journal.end


async def test_a_journal_with_no_output_ends_after_its_header(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        session_id = manager.spawn(["sleep", "30"])
        await asyncio.wrap_future(store.flushed())
        end = journal_end(store.find(session_id).path)
        assert (end.lines, end.output_end, end.commands, end.last_us) == (0, 0, 0, 0)
        assert end.position == end.size  # a header and nothing else: no index, no marks
