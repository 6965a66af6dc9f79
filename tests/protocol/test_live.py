"""LiveStream: replay then live, batched per frame, skips counted, never a silent hole."""

import asyncio
import os
import signal

from unified_exec_kernel.protocol.live import LiveStream

from ..core.helpers import Reader, spawn


def check_contiguous(events, start=0):
    """Every data event starts where the previous one ended, plus what it says it skipped."""
    end = start
    for event in events:
        assert event["offset"] - event["skipped"] == end, (event["offset"], event["skipped"], end)
        assert event["end"] - event["offset"] == len(event["data"].encode())
        end = event["end"]
    return end


async def test_replay_then_live_covers_every_byte_in_order():
    session = spawn(["bash", "-c", "echo before; sleep 0.3; seq 1 2000; sleep 0.2"])
    await Reader(session).until("before")
    sent = []
    feed = LiveStream(session, sent.append)
    feed.replay(request_id="r1")
    await asyncio.wait_for(session.wait_finished(), 10)
    await asyncio.sleep(0.1)
    kinds = [m["type"] for m in sent]
    assert kinds[0] == "attached" and kinds[-1] == "exited"
    assert sent[0]["offset"] == 0 and sent[0]["alive"] and (sent[0]["rows"], sent[0]["cols"]) == (24, 80)
    data = [m for m in sent if m["type"] == "data"]
    assert data[0]["request_id"] == "r1" and data[0]["data"] == "before\r\n"
    assert all(m["request_id"] is None for m in data[1:])
    # `end`: where the replay stops and live output starts (a view answers no query before it).
    assert sent[0]["end"] == data[0]["end"] == data[1]["offset"] - data[1]["skipped"]
    check_contiguous(data)
    assert "".join(m["data"] for m in data) == "before\r\n" + "".join(f"{i}\r\n" for i in range(1, 2001))
    assert sent[-1]["exit_code"] == 0
    feed.close()
    await session.close()


async def test_a_flood_is_batched_per_frame_and_skips_are_counted():
    session = spawn(["bash", "-c", "head -c 20000000 /dev/zero | tr '\\0' y"])
    sent = []
    feed = LiveStream(session, sent.append, bytes_per_s=256 * 1024)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(session.wait_finished(), 30)
    elapsed = loop.time() - started
    await asyncio.sleep(0.1)
    data = [m for m in sent if m["type"] == "data"]
    assert len(data) <= elapsed * 30 + 3  # one event a frame at most
    # A second's worth may pass as a burst; after that the rate holds.
    assert sum(len(m["data"]) for m in data) <= 256 * 1024 * (elapsed + 1.1)
    end = check_contiguous(data)
    assert end == session.offset == 20_000_000
    assert feed.bytes_skipped > 0 and sum(m["skipped"] for m in data) == feed.bytes_skipped
    assert sent[-1]["type"] == "exited"
    feed.close()
    await session.close()


async def test_skips_never_split_a_character():
    session = spawn(["bash", "-c", "for i in $(seq 1 3000); do printf '€€€€€€€€€€'; done"])
    sent = []
    LiveStream(session, sent.append, bytes_per_s=30 * 1024)
    await asyncio.wait_for(session.wait_finished(), 30)
    await asyncio.sleep(0.1)
    data = [m for m in sent if m["type"] == "data"]
    assert all(set(m["data"]) == {"€"} for m in data)
    check_contiguous(data)
    await session.close()


async def test_replay_of_a_long_scrollback_comes_in_pieces():
    session = spawn(["bash", "-c", "head -c 200000 /dev/zero | tr '\\0' z"])
    await asyncio.wait_for(session.wait_finished(), 10)
    sent = []
    LiveStream(session, sent.append).replay(request_id=7)
    data = [m for m in sent if m["type"] == "data"]
    assert len(data) == 4 and all(m["request_id"] == 7 for m in data)
    assert check_contiguous(data) == 200_000
    assert sent[-1] == {"type": "exited", "session_id": 0, "exit_code": 0, "closed": False, "reason": "exit"}
    await session.close()


async def test_a_session_its_kernel_ended_is_said_to_have_ended_with_the_kernel():
    # What extension.end_sessions marks before it signals: the view says "ended with the kernel", not the hangup's signal.
    session = spawn(["sleep", "30"])
    sent = []
    LiveStream(session, sent.append).replay(request_id=1)
    session.ended_with_kernel = True
    os.kill(session.pid, signal.SIGKILL)
    await asyncio.wait_for(session.wait_finished(), 10)
    for _ in range(100):
        if sent[-1]["type"] == "exited":
            break
        await asyncio.sleep(0.05)
    assert sent[-1] == {"type": "exited", "session_id": 0, "exit_code": -signal.SIGKILL, "closed": True, "reason": "kernel"}
    await session.close()


async def test_closed_feed_sends_nothing_more():
    session = spawn(["bash", "-c", "sleep 0.2; echo late"])
    sent = []
    feed = LiveStream(session, sent.append)
    feed.close()
    await asyncio.wait_for(session.wait_finished(), 10)
    await asyncio.sleep(0.1)
    assert sent == []
    await session.close()


async def test_output_after_a_quiet_frame_is_sent_at_once():
    # A frame of 30 s: an echo that waited for the frame would come 30 s late,
    # so "at once" is told apart with a wide margin, whatever the machine's load.
    session = spawn(["bash", "-c", "stty -echo; echo ready; read line; echo got-$line; sleep 60"])
    await Reader(session).until("ready")  # quiet from here until the echo
    arrived, sent = {}, {}
    loop = asyncio.get_running_loop()
    session.subscribe(lambda data, _offset: b"got-x" in data and arrived.setdefault("at", loop.time()))
    stream = LiveStream(session, lambda m: "got-x" in m.get("data", "") and sent.setdefault("at", loop.time()), frame_s=30)
    session.write("x\n")
    while "at" not in sent:
        assert loop.time() - arrived.get("at", loop.time()) < 15, "the echo waited for the frame"
        await asyncio.sleep(0.01)
    stream.close()
    await session.close()


async def test_a_stream_lets_go_of_its_session_once_it_has_finished():
    session = spawn(["bash", "-c", "echo bye"])
    ended = asyncio.Event()
    sent = []
    LiveStream(session, sent.append, on_end=ended.set)
    await asyncio.wait_for(ended.wait(), 10)
    assert sent[-1]["type"] == "exited"
    assert session._subscribers == [session.scrollback.push, session.buffer.push]
    await session.close()


async def test_a_view_hears_when_output_is_paused_by_xoff_and_resumed():
    session = spawn(["bash", "--norc", "-i"])
    await Reader(session).until("$ ")
    sent = []
    feed = LiveStream(session, sent.append)
    feed.replay(request_id="r1")
    assert sent[0]["paused"] is False
    loop = asyncio.get_running_loop()

    async def flows(count):
        deadline = loop.time() + 5
        while len([m for m in sent if m["type"] == "flow"]) < count:
            assert loop.time() < deadline, sent
            await asyncio.sleep(0.01)
        return [m for m in sent if m["type"] == "flow"]

    session.write("\x13")
    assert (await flows(1)) == [{"type": "flow", "session_id": session.session_id, "paused": True}]
    feed.replay(request_id="r2")  # a view attaching now learns it at once
    assert [m["paused"] for m in sent if m["type"] == "attached"] == [False, True]
    session.write("\x11")
    assert [m["paused"] for m in await flows(2)] == [True, False]
    feed.close()
    await session.close()


async def test_attached_says_the_sizes_the_replay_was_written_at():
    session = spawn(["cat"])
    sent = []
    stream = LiveStream(session, sent.append)
    session.write(b"wide\n")
    for _ in range(100):
        if session.offset > 0:
            break
        await asyncio.sleep(0.02)
    first = session.offset
    session.resize(24, 40)
    session.resize(24, 40)  # the same size again is no change
    session.write(b"narrow\n")
    for _ in range(100):
        if session.offset > first:
            break
        await asyncio.sleep(0.02)
    second = session.offset
    session.resize(30, 120)
    stream.replay(request_id=1)
    attached = next(m for m in sent if m["type"] == "attached")
    assert attached["sizes"] == [[0, 24, 80], [first, 24, 40], [second, 30, 120]]
    assert (attached["rows"], attached["cols"]) == (30, 120)
    stream.close()
    await session.close()
