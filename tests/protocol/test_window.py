"""WindowedStream: every byte at once while the view keeps up; at most the window unacknowledged; the oldest skipped past the backlog."""

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


async def test_past_the_backlog_the_oldest_bytes_are_skipped_and_counted():
    session = spawn(["bash", "-c", "head -c 200000 /dev/zero | tr '\\0' y"])
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output, window=1000, backlog=5000)
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


async def test_a_second_attach_replays_and_the_window_starts_over():
    session = spawn(["bash", "-c", "echo first; read x; echo second; read y"])
    await Reader(session).until("first")
    view = View()
    stream = WindowedStream(session, view.messages.append, view.output, window=4)
    stream.replay("one")
    assert view.frames == [(0, 0, 0, b"first\r\n")]  # a replay is sent whole, whatever the window
    session.write("x\r")
    await Reader(session).until("second")
    view.frames.clear()
    stream.replay("two")
    attached = [m for m in view.messages if m["type"] == "attached"]
    assert [m["request_id"] for m in attached] == ["one", "two"] and attached[-1]["offset"] == 0
    assert b"".join(frame[3] for frame in view.frames).startswith(b"first\r\n")
    assert stream.acked == 0 and stream.sent_end == session.offset
    stream.close()
    await session.close()
