"""Batcher: output in, at most one batch per interval out, newest bytes within a budget, skips counted."""

import asyncio
import contextvars

from unified_exec_kernel.core.output.batcher import Batcher, TokenBucket


def batcher(calls, *, interval=0.05, keep=10, budget=None, leading=False, offset=0):
    return Batcher(
        calls.append,
        interval=interval,
        budget=budget or (lambda wanted: wanted),
        keep_bytes=keep,
        offset=offset,
        leading=leading,
    )


async def test_a_burst_is_handed_on_once_with_the_newest_bytes_and_the_skip_counted():
    calls = []
    batches = batcher(calls)
    data = b"".join(b"%02d\n" % i for i in range(100))
    for start in range(0, len(data), 3):
        batches.push(data[start : start + 3], start)
    assert calls == []  # pushing never hands on by itself
    await asyncio.sleep(0.15)  # the batch's timer is due first, so it has fired by now
    assert len(calls) == 1
    (batch,) = calls
    assert batch.data == data[-10:] and batch.end == len(data) and batch.skipped == len(data) - 10


async def test_each_batch_is_only_what_came_since_the_last():
    calls = []
    batches = batcher(calls, keep=100, interval=0.0)
    batches.push(b"one\n", 0)
    batches.flush()
    batches.push(b"two\n", 4)
    batches.flush()
    batches.flush()  # nothing new: nothing handed on
    assert [(b.data, b.offset, b.skipped) for b in calls] == [(b"one\n", 0, 0), (b"two\n", 4, 0)]


async def test_the_interval_can_grow_with_the_wait():
    seen = []
    batches = Batcher(lambda _: None, interval=lambda elapsed: seen.append(elapsed) or 0.0, budget=lambda n: n, keep_bytes=10)
    await asyncio.sleep(0.05)
    batches.push(b"x", 0)
    assert seen and seen[0] >= 0.05


async def test_batches_are_handed_on_in_the_context_they_were_made_in():
    marker = contextvars.ContextVar("marker", default="reader")
    marker.set("cell")
    seen = []
    batches = Batcher(lambda _: seen.append(marker.get()), interval=0.0, budget=lambda n: n, keep_bytes=10)
    # Output arrives from a callback in another context (the PTY reader's).
    contextvars.Context().run(batches.push, b"x", 0)
    await asyncio.sleep(0.02)
    assert seen == ["cell"]


async def test_cancel_drops_the_scheduled_hand_on():
    calls = []
    batches = batcher(calls, interval=0.02)
    batches.push(b"x", 0)
    batches.cancel()
    await asyncio.sleep(0.05)
    assert calls == []


async def test_leading_output_goes_at_once_then_waits_for_the_interval():
    calls = []
    # An interval of 60 s: what waits for it cannot arrive during this test.
    batches = batcher(calls, interval=60, leading=True)
    batches.push(b"a", 0)
    await asyncio.sleep(0.01)  # a timer due now fires before this one
    assert [b.data for b in calls] == [b"a"]
    batches.push(b"b", 1)
    await asyncio.sleep(0.05)
    assert len(calls) == 1
    batches.flush()
    assert [b.data for b in calls] == [b"a", b"b"]
    batches.cancel()


async def test_a_budget_keeps_the_newest_whole_characters():
    calls = []
    batches = batcher(calls, keep=100, interval=0.0, budget=lambda wanted: min(wanted, 7), offset=5)
    data = "€€€€".encode()  # 12 bytes
    batches.push(data, 5)
    batches.flush()
    (batch,) = calls
    assert batch.data == "€€".encode() and batch.offset == 5 + 6 and batch.skipped == 6


async def test_a_token_bucket_passes_a_burst_then_holds_the_rate():
    bucket = TokenBucket(1000, floor=10)
    assert bucket(600) == 600
    assert bucket(600) <= 410  # what is left of the second, plus what refilled meanwhile
    assert bucket(10_000) >= 10  # something always gets through
