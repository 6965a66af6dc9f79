"""A pipes session is a session: output, exit, kill, buffer, journal-ready fan-out; its stdin is closed but for Ctrl-C."""

import asyncio
import os
import signal

import pytest

from unified_exec_kernel.core.errors import StdinClosedError, WriteToStdinError
from unified_exec_kernel.core.pipe_session import PipeSession

from ..conftest import wait_gone
from .helpers import Reader

ENV = dict(os.environ)


async def test_output_and_exit_arrive_as_from_a_terminal_session():
    session = PipeSession(0, ["sh", "-c", "echo hello; exit 4"], ENV)
    reader = Reader(session)
    await asyncio.wait_for(session.wait_finished(), 10)
    assert reader.text == "hello\n" and session.exit_code == 4 and not session.tty
    assert session.buffer.data() == b"hello\n" and session.scrollback_snapshot() == (0, b"hello\n")
    await session.close()


async def test_a_write_is_refused_with_codex_words():
    session = PipeSession(0, ["sleep", "30"], ENV)
    try:
        with pytest.raises(StdinClosedError, match="^stdin is closed for this session; rerun exec_command with tty=true to keep stdin open$"):
            session.write("hello\n")
    finally:
        await session.close()


async def test_ctrl_c_interrupts_the_program_and_its_children():
    session = PipeSession(0, ["sh", "-c", "echo started; sleep 30; echo not-interrupted"], ENV)
    reader = Reader(session)
    await reader.until("started")  # a shell that gets SIGINT before it runs its command goes on
    session.write("\x03")
    await asyncio.wait_for(session.wait_finished(), 10)
    assert session.exit_code == -signal.SIGINT and "not-interrupted" not in reader.text
    await session.close()


async def test_closing_ends_every_process_of_the_session():
    session = PipeSession(0, ["sh", "-c", "sleep 60 & sleep 60"], ENV)
    await asyncio.sleep(0.2)
    await session.close()
    assert wait_gone(session.pid) == []
    with pytest.raises(WriteToStdinError):
        session.write("\x03")
