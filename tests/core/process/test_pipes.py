"""A program on pipes: stdout and stderr in order on one pipe, stdin at EOF, its own session, a cwd."""

import asyncio
import os

from unified_exec_kernel.core.process.exit_watch import watch_exit
from unified_exec_kernel.core.process.pipes import PipeOutput, spawn_pipes


async def run(argv, cwd=None):
    """Everything the program printed, and its exit code."""
    loop = asyncio.get_running_loop()
    spawned = spawn_pipes(argv, dict(os.environ), cwd=cwd)
    chunks, eof, exited = [], loop.create_future(), loop.create_future()
    output = PipeOutput(spawned.read_fd, on_output=chunks.append, on_eof=lambda: eof.set_result(None))
    watch_exit(spawned.pid, loop, exited.set_result)
    try:
        await asyncio.wait_for(eof, 10)
        code = await asyncio.wait_for(exited, 10)
    finally:
        output.release()
    return b"".join(chunks).decode(), code


async def test_stdout_and_stderr_share_one_pipe_in_order():
    text, code = await run(["sh", "-c", "echo one; echo two >&2; echo three; exit 3"])
    assert (text, code) == ("one\ntwo\nthree\n", 3)


async def test_stdin_is_at_end_of_file_and_no_terminal_is_there():
    text, _ = await run(["sh", "-c", "cat; echo cat-done; test -t 0 || echo no-tty; tty || true"])
    assert text.startswith("cat-done\nno-tty\n") and "not a tty" in text


async def test_the_program_leads_its_own_session():
    text, _ = await run(["sh", "-c", 'ps -o sid= -p $$; echo "pid $$"'])
    sid, pid = text.split("\n")[0].strip(), text.split("pid ")[1].strip()
    assert sid == pid


async def test_a_cwd_is_where_the_program_starts(tmp_path):
    text, code = await run(["pwd"], cwd=str(tmp_path))
    assert (text.strip(), code) == (str(tmp_path), 0)


async def test_a_view_asks_a_size_and_resizes_without_an_error():
    loop = asyncio.get_running_loop()
    spawned = spawn_pipes(["true"], dict(os.environ))
    exited = loop.create_future()
    watch_exit(spawned.pid, loop, exited.set_result)
    output = PipeOutput(spawned.read_fd, on_output=lambda _data: None, on_eof=lambda: None)
    output.resize(10, 10)
    assert output.size == PipeOutput.NOMINAL_SIZE and output.foreground_group() is None and not output.reads_keys()
    output.release()
    await asyncio.wait_for(exited, 10)
