"""One session: decoding, fan-out, writing without blocking, exit codes, closing."""

import asyncio
import signal

import pytest

from unified_exec_kernel.core.session import EXIT_GRACE_S

from ..conftest import session_processes, wait_gone
from .helpers import Reader, spawn


async def finished(session, timeout=10):
    await asyncio.wait_for(session.wait_finished(), timeout)


async def test_a_character_split_across_reads_survives():
    session = spawn(["bash", "-c", r"printf '\xe2\x82'; sleep 0.3; printf '\xac\n'"])
    reader = Reader(session)
    await finished(session)
    await session.close()
    assert reader.text == "€\r\n"


async def test_invalid_bytes_become_replacement_characters():
    session = spawn(["bash", "-c", r"printf 'ok \xff\xfe end\n'"])
    reader = Reader(session)
    await finished(session)
    await session.close()
    assert reader.text == "ok \ufffd\ufffd end\r\n"


@pytest.mark.parametrize("command, code", [("exit 0", 0), ("exit 3", 3), ("kill -TERM $$", -signal.SIGTERM)])
async def test_exit_code_is_the_status_or_minus_the_signal(command, code):
    session = spawn(["bash", "-c", command])
    await finished(session)
    await session.close()
    assert session.exit_code == code
    assert not session.alive


async def test_every_subscriber_sees_every_byte_once_in_order():
    session = spawn(["bash", "-c", "seq 1 20000"])
    seen = {"a": [], "b": []}
    session.subscribe(lambda data, start: seen["a"].append((data.decode(), start, start + len(data))))
    session.subscribe(lambda data, start: seen["b"].append((data.decode(), start, start + len(data))))
    await finished(session)
    await session.close()
    expected = "".join(f"{i}\r\n" for i in range(1, 20001))
    for events in seen.values():
        assert "".join(text for text, _, _ in events) == expected
        ends = [0] + [end for _, _, end in events]
        assert [start for _, start, _ in events] == ends[:-1]
    assert session.offset == len(expected)


async def test_output_waits_in_the_buffer_and_scrollback_without_a_sink():
    session = spawn(["bash", "-c", "echo hello"])
    await finished(session)
    assert session.scrollback_snapshot() == (0, b"hello\r\n")
    data, dropped = session.buffer.drain()
    assert (data, dropped) == (b"hello\r\n", 0)
    await session.close()


async def test_scrollback_keeps_the_newest_bytes_and_says_where_they_start():
    session = spawn(["bash", "-c", "head -c 5000 /dev/zero | tr '\\0' x"], scrollback_bytes=1000)
    await finished(session)
    start, text = session.scrollback_snapshot()
    assert (start, text) == (4000, b"x" * 1000)
    await session.close()


async def test_resize_is_seen_by_the_program():
    session = spawn(["bash", "--norc", "-i"])
    reader = Reader(session)
    await reader.until("$ ")
    session.resize(40, 120)
    session.write("stty size\n")
    await reader.until("40 120")
    assert session.size == (40, 120)
    with pytest.raises(ValueError):
        session.resize(0, 80)
    await session.close()


async def test_writing_to_an_exited_session_is_a_clear_error():
    from unified_exec_kernel import WriteToStdinError

    session = spawn(["true"])
    await finished(session)
    with pytest.raises(WriteToStdinError, match="session 0"):
        session.write("hello\n")
    await session.close()


async def test_send_signal_reaches_the_foreground_job():
    session = spawn(["bash", "--norc", "-i"])
    reader = Reader(session)
    await reader.until("$ ")
    session.write("sleep 100\n")
    await asyncio.sleep(0.3)
    session.send_signal(signal.SIGINT)
    session.write("echo status-$?\n")
    await reader.until("status-130")
    assert session.alive
    await session.close()


async def test_exit_is_noticed_even_when_a_grandchild_holds_the_terminal():
    session = spawn(["bash", "-c", "sleep 30 & echo started"])
    reader = Reader(session)
    await finished(session, timeout=5)
    assert session.exit_code == 0
    assert "started" in reader.text
    await session.close()
    assert wait_gone(session.pid) == []


async def test_close_ends_every_process_of_the_session():
    session = spawn(["bash", "-c", "sleep 300 & sleep 300 & trap '' HUP TERM; sleep 300 & wait"])
    await asyncio.sleep(0.3)
    assert len(session_processes(session.pid)) >= 4
    await session.close(grace=0.3)
    assert session_processes(session.pid) == []
    assert session.finished
    await session.close()  # a second close is a no-op


async def test_close_ends_jobs_of_an_interactive_shell():
    session = spawn(["bash", "--norc", "-i"])
    reader = Reader(session)
    await reader.until("$ ")
    session.write("sleep 300 &\nsleep 301 &\necho jobs-started\n")
    await reader.until("jobs-started")
    await asyncio.sleep(0.1)
    assert len(session_processes(session.pid)) == 3
    await session.close()
    assert session_processes(session.pid) == []


async def test_a_program_that_exits_while_held_loses_nothing():
    session = spawn(["bash", "-c", "read x; printf 'last words %.0s' $(seq 1 100); echo"])
    reader = Reader(session)
    let_go = session.hold_reading()
    session.write("go\r")
    for _ in range(1000):  # the exit watch tells on the loop; at most 10 s
        if session.exit_code is not None:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(EXIT_GRACE_S * 3)  # its exit grace is over, but nobody read what it left
    assert not session.finished
    let_go()
    let_go()  # once is enough; again changes nothing
    await asyncio.wait_for(session.wait_finished(), 10)
    assert reader.text.count("last words") == 100
    assert not session.terminal.paused
    await session.close()
