"""ThrottledTail: a bounded window of the newest text, handed on at most once per interval."""

import asyncio
import contextvars

from unified_exec_kernel.core.tail import ThrottledTail


async def test_a_burst_is_handed_on_once_with_the_newest_text():
    calls = []
    tail = ThrottledTail(lambda window, fresh: calls.append((window, fresh)), max_chars=10, interval=lambda _: 0.05)
    for i in range(100):
        tail.feed(f"{i:02}\n")
    assert calls == []  # feeding never hands on by itself
    await asyncio.sleep(0.15)
    assert len(calls) == 1
    window, fresh = calls[0]
    assert window == "".join(f"{i:02}\n" for i in range(100))[-10:] and fresh == window


async def test_fresh_is_only_what_came_since_the_last_hand_on():
    calls = []
    tail = ThrottledTail(lambda window, fresh: calls.append((window, fresh)), max_chars=100, interval=lambda _: 0.0)
    tail.feed("one\n")
    tail.flush()
    tail.feed("two\n")
    tail.flush()
    tail.flush()  # nothing new: nothing handed on
    assert calls == [("one\n", "one\n"), ("one\ntwo\n", "two\n")]


async def test_the_interval_can_grow_with_the_wait():
    seen = []
    tail = ThrottledTail(lambda *_: None, max_chars=10, interval=lambda elapsed: seen.append(elapsed) or 0.0)
    await asyncio.sleep(0.05)
    tail.feed("x")
    assert seen and seen[0] >= 0.05


async def test_hand_on_runs_in_the_context_it_was_made_in():
    marker = contextvars.ContextVar("marker", default="reader")
    marker.set("cell")
    seen = []
    tail = ThrottledTail(lambda *_: seen.append(marker.get()), max_chars=10, interval=lambda _: 0.0)
    # Output arrives from a callback in another context (the PTY reader's).
    contextvars.Context().run(tail.feed, "x")
    await asyncio.sleep(0.02)
    assert seen == ["cell"]


async def test_cancel_drops_the_scheduled_hand_on():
    calls = []
    tail = ThrottledTail(lambda *args: calls.append(args), max_chars=10, interval=lambda _: 0.02)
    tail.feed("x")
    tail.cancel()
    await asyncio.sleep(0.05)
    assert calls == []
