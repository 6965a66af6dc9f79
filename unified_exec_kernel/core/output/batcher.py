"""Output in, at most one batch per interval out: the one coalescing primitive.

Every face that shows output while it arrives must not send a message per
read: under a flood that is thousands a second, more than the kernel's iopub
socket and the Jupyter server let through. A cell's display, the comm's
`output` events and a live terminal view all take output as a session
subscriber and hand it on in batches: at most one per interval, the newest
bytes within a budget, with the offsets that say exactly what was left out.

A batch is handed on from the context the batcher was made in: ipykernel
keeps the parent message in a contextvar, and output arrives in the PTY
reader's callback, which runs in the context of whichever cell started the
session.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .utf8 import newest


@dataclass(frozen=True)
class Batch:
    data: bytes  # the newest bytes that arrived since the last batch, within the budget
    offset: int  # where `data` starts in the session's output
    skipped: int  # bytes left out just before `offset`

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


Interval = Callable[[float], float]
"""Seconds between batches, given the seconds since the batcher was made."""

Budget = Callable[[int], int]
"""Given the bytes waiting, how many may go in this batch."""


class TokenBucket:
    """A budget refilling at `rate` bytes a second, holding at most one second of it.

    A burst such as a listing passes whole; a sustained flood is held to the
    rate; something always gets through, so a view under a flood keeps moving.
    """

    def __init__(self, rate: int, *, floor: int = 1024):
        self._rate = rate
        self._floor = floor
        self._allowance = float(rate)
        self._loop = asyncio.get_running_loop()
        self._refilled = self._loop.time()

    def __call__(self, wanted: int) -> int:
        now = self._loop.time()
        self._allowance = min(self._rate, self._allowance + (now - self._refilled) * self._rate)
        self._refilled = now
        granted = min(wanted, max(int(self._allowance), self._floor))
        self._allowance -= granted
        return granted


class Batcher:
    def __init__(
        self,
        on_batch: Callable[[Batch], None],
        *,
        interval: Interval | float,
        budget: Budget,
        keep_bytes: int,
        offset: int = 0,
        leading: bool = True,
    ):
        """`keep_bytes` bounds what waits (no budget grants more); `offset`: where output starts.

        `leading`: after a quiet interval the first output goes at once (a
        keystroke's echo must not wait a frame); otherwise the first batch
        waits one interval from the start.
        """
        self._on_batch = on_batch
        self._interval = interval if callable(interval) else (lambda _elapsed, seconds=interval: seconds)
        self._budget = budget
        self._keep = keep_bytes
        self._loop = asyncio.get_running_loop()
        self._context = contextvars.copy_context()
        self._started = self._loop.time()
        self._last = float("-inf") if leading else self._started
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self._pending_end = offset
        self._sent_end = offset
        self._timer: asyncio.TimerHandle | None = None

    def push(self, data: bytes, offset: int) -> None:
        """Take output (a session subscriber); cheap, never hands on by itself."""
        if not data:
            return
        if not self._pending:
            self._pending_end = offset
        self._pending.append(data)
        self._pending_bytes += len(data)
        self._pending_end = offset + len(data)
        # Trim rarely (at twice the bound) so the work is amortised.
        if self._pending_bytes > 2 * self._keep:
            while self._pending_bytes - len(self._pending[0]) >= self._keep:
                self._pending_bytes -= len(self._pending.popleft())
        if self._timer is None:
            now = self._loop.time()
            due = self._last + self._interval(now - self._started)
            self._timer = self._loop.call_at(max(due, now), self.flush)

    def flush(self) -> None:
        """Hand on what waits now, if anything does."""
        self.cancel()
        if not self._pending:
            return
        self._last = self._loop.time()
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        data = newest(data, self._budget(min(len(data), self._keep)))
        offset = self._pending_end - len(data)
        batch = Batch(data, offset, skipped=offset - self._sent_end)
        self._sent_end = self._pending_end
        self._context.run(self._on_batch, batch)

    def cancel(self) -> None:
        """Drop the scheduled hand-on (what waits stays for an explicit `flush`)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def call(self, function: Callable[..., None], *args) -> None:
        """Run `function` in the context batches are handed on in (for a face's last word)."""
        self._context.run(function, *args)
