"""WindowedStream: every byte at once while the view keeps up; at most the window unacknowledged; a view
that falls behind holds the program (nothing skipped) for a while, then lets go and skips its oldest bytes."""

from __future__ import annotations

import asyncio

from unified_exec_kernel.protocol.window import WindowedStream

from ..core.helpers import Reader, spawn


class View:
    """What the stream sends, as a page on the direct channel would receive it."""

    def __init__(self):
        self.messages: list[dict] = []
        self.frames: list[tuple[int, int, int, bytes]] = []

    def output(self, session_id, offset, skipped, data) -> None:
        self.frames.append((session_id, offset, skipped, data))

    @property
    def received(self) -> int:
        return sum(len(frame[3]) for frame in self.frames)

    def check_contiguous(self, start: int) -> int:
        end = start
        for _, offset, skipped, data in self.frames:
            assert offset - skipped == end, (offset, skipped, end)
            end = offset + len(data)
        return end


async def until(condition, what: str, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.01)


async def test_output_goes_out_as_it_is_read_then_exited():
    session = spawn(["bash", "-c", "read x; seq 1 3000"])
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output)
    stream.replay("r")
    assert view.messages[0]["type"] == "attached" and view.messages[0]["request_id"] == "r"
    session.write("go\r")
    await asyncio.wait_for(session.wait_finished(), 10)
    await until(lambda: view.messages[-1]["type"] == "exited", "exited")
    text = b"".join(frame[3] for frame in view.frames).decode()
    assert text == "go\r\n" + "".join(f"{n}\r\n" for n in range(1, 3001))
    assert view.check_contiguous(0) == session.offset
    await session.close()


async def test_at_most_the_window_in_flight_until_acknowledged_and_never_half_a_character():
    session = spawn(["python3", "-c", "import sys; sys.stdout.write('é' * 20000); sys.stdout.flush()"])
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output, window=1001)
    stream.replay()
    await asyncio.wait_for(session.wait_finished(), 10)
    assert 1000 <= view.received <= 1002  # 1001 rounded to a character boundary
    assert stream.queued + view.received == 40000
    while view.messages[-1]["type"] != "exited":
        before = view.received
        stream.ack(view.check_contiguous(0))
        assert view.received > before
        assert stream.in_flight <= 1002
    assert all(frame[3].decode() == "é" * (len(frame[3]) // 2) for frame in view.frames)
    assert view.check_contiguous(0) == 40000
    await session.close()


async def test_past_the_backlog_a_lossy_view_skips_its_oldest_bytes_and_counts_them():
    session = spawn(["bash", "-c", "head -c 200000 /dev/zero | tr '\\0' y"])
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output, window=1000, backlog=5000, hold_s=0)
    stream.replay()
    await asyncio.wait_for(session.wait_finished(), 10)
    assert view.received == 1000 and stream.queued == 5000
    while view.messages[-1]["type"] != "exited":
        stream.ack(view.check_contiguous(0))
    skips = [frame[2] for frame in view.frames if frame[2]]
    assert skips == [200000 - 1000 - 5000] and stream.bytes_skipped == skips[0]
    assert view.check_contiguous(0) == 200000
    await session.close()


async def test_nothing_goes_while_the_connection_is_paused_then_resume_sends_it():
    session = spawn(["bash", "-c", "read x; echo hello"])
    view = View()
    open_for_writing = [False]
    stream = WindowedStream(session, view.messages.append, view.output, writable=lambda: open_for_writing[0])
    stream.replay()
    reader = Reader(session)
    session.write("x\r")
    await reader.until("hello")
    assert view.frames == []
    open_for_writing[0] = True
    stream.resume()
    assert b"hello" in b"".join(frame[3] for frame in view.frames)
    await session.close()


async def test_a_second_attach_replays_under_the_window_which_starts_over():
    session = spawn(["bash", "-c", "echo first; read x; echo second; read y"])
    await Reader(session).until("first")
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output, window=4)
    stream.replay("one")
    assert view.frames == [(0, 0, 0, b"firs")]  # a replay keeps to the window too
    stream.ack(4)
    assert view.frames[1:] == [(0, 4, 0, b"t\r\n")]
    session.write("x\r")
    await Reader(session).until("second")
    view.frames.clear()
    stream.replay("two")
    attached = [m for m in view.messages if m["type"] == "attached"]
    assert [m["request_id"] for m in attached] == ["one", "two"] and attached[-1]["offset"] == 0
    # `end`: where the replay stops and live output starts (the frames carry no request id to tell).
    assert attached[0]["end"] == len(b"first\r\n") and attached[-1]["end"] == session.offset
    assert view.frames == [(0, 0, 0, b"firs")]  # from the start again, under the window
    assert stream.acked == 0 and stream.sent_end == 4
    while stream.sent_end < session.offset:
        stream.ack(stream.sent_end)
    assert b"".join(frame[3] for frame in view.frames).startswith(b"first\r\n")
    stream.close()
    await session.close()


SEQ = 300_000  # 2.3 MB of `seq`, far more than the window, the queue bound and the terminal's buffer


def seq_bytes(last: int) -> bytes:
    return "".join(f"{n}\r\n" for n in range(1, last + 1)).encode()


def held_stream(session, view, **options) -> WindowedStream:
    return WindowedStream(
        session, view.messages.append, view.output, window=64 * 1024, backlog=512 * 1024, pause_at=128 * 1024, resume_at=32 * 1024, **options
    )


def seq_viewed(hold_s: float) -> tuple:
    """`seq` in a session, and a view attached to it from the start."""
    session = spawn(["seq", "1", str(SEQ)])
    view = View()
    stream = held_stream(session, view, hold_s=hold_s)
    stream.replay()
    return session, view, stream


async def read_to_the_end(stream: WindowedStream, view: View) -> bytes:
    """Acknowledge whatever arrives, as a page that keeps up, until `exited`; every byte received."""
    while view.messages[-1]["type"] != "exited":
        stream.ack(view.check_contiguous(0))
        await asyncio.sleep(0)
    return b"".join(frame[3] for frame in view.frames)


async def test_a_view_that_falls_behind_holds_the_program_and_loses_nothing():
    session = spawn(["seq", "1", str(SEQ)])
    view = View()
    holds = []
    hold_reading = session.hold_reading
    session.hold_reading = lambda: holds.append(session.offset) or hold_reading()
    stream = held_stream(session, view, hold_s=60)
    stream.replay()
    while view.messages[-1]["type"] != "exited":  # a page slower than `seq`: it draws only once the program waits
        await until(lambda: stream.holding or session.finished, "the view holds the session")
        stream.ack(view.check_contiguous(0))
        await asyncio.sleep(0)
    assert len(holds) > 1 and not session.terminal.paused
    assert stream.bytes_skipped == 0 and all(frame[2] == 0 for frame in view.frames)
    assert b"".join(frame[3] for frame in view.frames) == seq_bytes(SEQ)
    await session.close()


async def test_a_held_program_waits_until_the_view_acknowledges():
    session, view, stream = seq_viewed(hold_s=60)
    await until(lambda: stream.holding, "the view holds the session")
    offset = session.offset
    await asyncio.sleep(0.5)  # time enough for `seq` to print it all, were it not held
    assert session.offset == offset and session.alive and session.terminal.paused
    assert await read_to_the_end(stream, view) == seq_bytes(SEQ)
    await session.close()


async def test_a_view_that_holds_too_long_lets_go_and_skips_its_oldest():
    session, view, stream = seq_viewed(hold_s=0.2)
    await asyncio.wait_for(session.wait_finished(), 20)  # never acknowledged, yet the program ran to its end
    assert stream.lossy and not stream.holding and not session.terminal.paused
    assert stream.queued <= 512 * 1024
    while view.messages[-1]["type"] != "exited":
        stream.ack(view.check_contiguous(0))
    assert stream.bytes_skipped > 0
    assert view.check_contiguous(0) == len(seq_bytes(SEQ))  # the gap rule: every byte sent or counted
    assert view.frames[-1][3].endswith(b"%d\r\n" % SEQ)
    await session.close()


async def test_a_lossy_view_that_catches_up_holds_again():
    session = spawn(["bash", "-c", "seq 1 300000; read x; seq 1 300000"])
    view = View()
    stream = held_stream(session, view, hold_s=0.2)
    stream.replay()
    await until(lambda: stream.lossy, "the hold lapses")
    await until(lambda: not session.terminal.paused and stream.queued <= 512 * 1024 and session.offset >= len(seq_bytes(SEQ)), "the first seq ran")
    stream.ack(view.check_contiguous(0))
    while stream.queued or stream.in_flight:
        stream.ack(view.check_contiguous(0))
        await asyncio.sleep(0)
    assert not stream.lossy  # caught up: it may hold again
    skipped = stream.bytes_skipped
    session.write("go\r")
    await until(lambda: stream.holding, "the second seq is held")
    stream.close()
    assert not session.terminal.paused  # closing the view let the program go
    await asyncio.wait_for(session.wait_finished(), 20)
    assert stream.bytes_skipped == skipped
    await session.close()


async def test_two_views_hold_the_program_until_both_let_go():
    session = spawn(["seq", "1", str(SEQ)])
    first, second = View(), View()
    one, two = held_stream(session, first, hold_s=60), held_stream(session, second, hold_s=60)
    one.replay()
    two.replay()
    await until(lambda: one.holding and two.holding, "both views hold the session")
    one.close()
    assert session.terminal.paused  # the other view still draws
    assert await read_to_the_end(two, second) == seq_bytes(SEQ)
    await session.close()


async def test_the_direct_channel_says_when_output_is_paused_by_xoff_and_resumed():
    session = spawn(["bash", "--norc", "-i"])
    await Reader(session).until("$ ")
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output)
    stream.replay("r")
    assert view.messages[0]["paused"] is False
    session.write("\x13")
    await until(lambda: any(m["type"] == "flow" for m in view.messages), "flow: paused")
    session.write("\x11")
    await until(lambda: len([m for m in view.messages if m["type"] == "flow"]) == 2, "flow: started")
    assert [m["paused"] for m in view.messages if m["type"] == "flow"] == [True, False]
    stream.close()
    await session.close()
