"""A pipes session is a session: output, exit, kill, buffer, journal-ready fan-out; its stdin is closed but for Ctrl-C."""

import asyncio
import os
import signal

import pytest

from unified_exec_kernel.core.errors import StdinClosedError, WriteToStdinError
from unified_exec_kernel.core.pipe_session import PipeSession

from ..conftest import session_processes, wait_gone
from .helpers import Reader
from .stubborn import async_wait_until

ENV = dict(os.environ)


def group_report(leader: int) -> list[str]:
    """Each process of the session: pid, command, state, and its blocked and ignored signals."""
    found = []
    for pid in dict.fromkeys([leader, *session_processes(leader)]):  # the leader first, once
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError as error:
            found.append(f"{pid}: {error.strerror}")
            continue
        found.append(f"{pid} {command!r} {fields['State'].strip()} blocked {fields['SigBlk'].strip()} ignored {fields['SigIgn'].strip()}")
    return found


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


def runs(pid: int, command: str) -> bool:
    """The process runs `command` (its own name, which changes only at its exec)."""
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip() == command
    except OSError:
        return False


async def test_ctrl_c_interrupts_the_program_and_its_children():
    session = PipeSession(0, ["sh", "-c", "echo started; sleep 30; echo not-interrupted"], ENV)
    reader = Reader(session)
    await reader.until("started")
    # Not before `sleep` runs: sh -c catches SIGINT, and its forked child keeps that handler until
    # the exec, so a Ctrl-C in between is eaten by the child; sleep then runs its 30 s (as in a real
    # terminal), and sh waits for it (a fresh-clone run's failure).
    try:
        await async_wait_until(lambda: any(runs(pid, "sleep") for pid in session_processes(session.pid)), 10)
    except AssertionError:
        pytest.fail(f"no sleep in the session within 10 s: {group_report(session.pid)}")
    session.write("\x03")
    try:
        await asyncio.wait_for(session.wait_finished(), 10)
    except asyncio.TimeoutError:
        pytest.fail(f"not ended 10 s after Ctrl-C ({session.state}, exit code {session.exit_code}, output {reader.text!r}):"
                    f" {group_report(session.pid)}")
    assert session.exit_code == -signal.SIGINT and "not-interrupted" not in reader.text
    await session.close()


async def test_closing_ends_every_process_of_the_session():
    session = PipeSession(0, ["sh", "-c", "sleep 60 & sleep 60"], ENV)
    await asyncio.sleep(0.2)
    await session.close()
    assert wait_gone(session.pid) == []
    with pytest.raises(WriteToStdinError):
        session.write("\x03")
