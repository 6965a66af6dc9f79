"""The newest text of a stream, handed on at most once per interval.

A face that shows output while a request waits (a cell's display, a comm's
`output` events) must not send a message per read: under a flood that is
thousands a second. It keeps a bounded window of the newest text and passes
it on when the interval allows, from the context it was made in (ipykernel
keeps the parent message in a contextvar; output arrives in the PTY reader's
callback, which runs in the context of whichever cell started the session).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable

Interval = Callable[[float], float]
"""Seconds until the next hand-on may happen, given the seconds since the start."""


class ThrottledTail:
    def __init__(self, on_flush: Callable[[str, str], None], *, max_chars: int, interval: Interval):
        """`on_flush(window, fresh)`: the newest `max_chars`, and the part of it new since the last call."""
        self._on_flush = on_flush
        self._max_chars = max_chars
        self._interval = interval
        self._window: deque[str] = deque()
        self._window_chars = 0
        self._fresh_chars = 0
        self._loop = asyncio.get_running_loop()
        self._started = self._loop.time()
        self._last_flush = self._started
        self._timer: asyncio.TimerHandle | None = None
        self._context = contextvars.copy_context()

    def feed(self, text: str) -> None:
        """Take new text (cheap; never hands on by itself, only schedules)."""
        if not text:
            return
        self._window.append(text)
        self._window_chars += len(text)
        self._fresh_chars += len(text)
        while self._window_chars - len(self._window[0]) >= self._max_chars:
            self._window_chars -= len(self._window.popleft())
        if self._timer is None:
            now = self._loop.time()
            due = self._last_flush + self._interval(now - self._started)
            self._timer = self._loop.call_at(max(due, now), self.flush, context=self._context)

    def flush(self) -> None:
        """Hand on now, if anything is new."""
        self.cancel()
        if not self._fresh_chars:
            return
        window = "".join(self._window)[-self._max_chars :]
        fresh = window[-min(self._fresh_chars, len(window)) :]
        self._fresh_chars = 0
        self._last_flush = self._loop.time()
        self._on_flush(window, fresh)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
