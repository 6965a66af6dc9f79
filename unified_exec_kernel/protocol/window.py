"""A session's output to a view on the direct channel: every byte, as fast as the view draws it.

The comm's live stream (live.py) must keep under the Jupyter server's iopub
limits, so it sends once a frame under a token bucket and leaves a flood's
middle out. The direct channel has no such limit; what bounds it is the
page, whose terminal parses output more slowly than `seq` prints it, and
output it has not taken yet would pile up in the socket, the server and the
browser. So the view says how far it has written (`ack`), and the kernel
keeps at most `WINDOW` bytes sent and not yet acknowledged. What waits
beyond it stays here; once `PAUSE_AT` bytes wait, the view holds the
session's reading (`PtySession.hold_reading`) until they are down to
`RESUME_AT`: the program waits for the page as it would for a terminal
window, and nothing is skipped.

A view must not hold a program for ever: a background tab draws seldom, a
frozen one never. One that keeps the session held `hold_s` at a stretch
lets go and becomes a lossy view: its queue is kept to `VIEW_BACKLOG`, the
oldest bytes dropped and counted in the next frame's `skipped` (the gap rule
of docs/protocol.md), until it has caught up to `RESUME_AT` and may hold
again. A keystroke's echo goes out the moment it is read: no timer, no
batching.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from ..core.output.utf8 import boundary_at_or_after
from ..core.session import HOLD_S, PtySession
from . import messages

WINDOW = 256 * 1024
"""Bytes per view sent and not yet acknowledged, at most: what the page holds to draw, a few
frames' worth at its pace (a Ctrl-C shows within them), well over the 64 KiB it acknowledges at a time."""
PAUSE_AT = 256 * 1024
"""Bytes waiting for the window at which the view holds the session's reading."""
RESUME_AT = 64 * 1024
"""... and at which it lets go again (below it, reads refill the queue before the page runs dry)."""
VIEW_BACKLOG = 2 * 1024 * 1024
"""Bytes per view waiting for the window, at most; older ones are skipped (only a lossy view gets near it)."""
FRAME_BYTES = 256 * 1024
"""Output bytes per frame, at most (a replay or a backlog goes in several)."""

SendMessage = Callable[[dict], None]
SendOutput = Callable[[int, int, int, bytes], None]
"""(session_id, offset, skipped, data): one `B` frame."""


class WindowedStream:
    """One session's output to one direct connection, from `replay` on until `close`.

    The same shape as live.py's `LiveStream` (`replay`, `close`, `on_end`), so
    the endpoint keeps either; plus `ack` and `resume`.
    """

    def __init__(
        self,
        session: PtySession,
        send_message: SendMessage,
        send_output: SendOutput,
        *,
        on_end: Callable[[], None] | None = None,
        writable: Callable[[], bool] = lambda: True,
        window: int = WINDOW,
        backlog: int = VIEW_BACKLOG,
        hold_s: float = HOLD_S,
        pause_at: int = PAUSE_AT,
        resume_at: int = RESUME_AT,
    ):
        """`writable()`: whether the connection takes more now (its transport is not paused)."""
        self.session = session
        self._send_message = send_message
        self._send_output = send_output
        self._on_end = on_end
        self._writable = writable
        self._window = window
        self._backlog = backlog
        self._hold_s = hold_s
        self._pause_at = pause_at
        self._resume_at = min(resume_at, pause_at)
        self._let_go: Callable[[], None] | None = None  # set while this view holds the session
        self._hold_timer: asyncio.TimerHandle | None = None
        self.lossy = hold_s <= 0  # skips instead of holding (it held too long, or may not hold)
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._queue_start = session.offset  # the offset of the first queued byte
        self._skipped = 0  # dropped just before `_queue_start`, not yet told
        self.sent_end = session.offset
        self.acked = session.offset
        self.bytes_skipped = 0
        self._finished = False
        self._closed = False
        self._unsubscribe = session.subscribe(self._push)
        self._forget_exit = session.on_exit(self._on_finished)
        self._forget_flow = session.on_flow(lambda _paused: self._deliver_message(messages.flow(self.session)))  # XOFF/XON
        self._forget_size = session.on_resize(lambda _rows, _cols: self._deliver_message(messages.size(self.session)))  # sizes.py

    @property
    def in_flight(self) -> int:
        return self.sent_end - self.acked

    @property
    def queued(self) -> int:
        return self._queued

    def replay(self, request_id=None) -> None:
        """Answer an `attach`: `attached`, the scrollback as frames, then live output continues.

        What was queued is in the scrollback (or older than it), and the view
        starts over from `attached`, so the window starts over too. The
        scrollback goes through the queue like live output: under the window
        and only while the connection takes more (an attach sent it whole,
        whatever the window: a peer attaching again and again without reading
        had the kernel hold a scrollback per attach).
        """
        self._queue.clear()
        self._queued = self._skipped = 0
        start, scrollback = self.session.scrollback_snapshot()
        self._deliver_message(messages.attached(request_id, self.session, start))
        self.acked = self.sent_end = self._queue_start = start
        if scrollback:
            self._queue.append(scrollback)
            self._queued = len(scrollback)
        self.resume()

    def ack(self, end: int) -> None:
        """The view has written everything before `end`: that much of the window is free again."""
        self.acked = max(self.acked, min(end, self.sent_end))
        self.resume()

    def resume(self) -> None:
        """Send what waits, as far as the window and the connection allow."""
        while self._queue and not self._closed and self._writable():
            room = self._window - self.in_flight
            if room <= 0:
                break
            self._send_piece(self._take(min(room, FRAME_BYTES)))
        self._pace()
        self._end_if_done()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._unsubscribe()
            self._forget_exit()
            self._forget_flow()
            self._forget_size()
            self._queue.clear()
            self._queued = 0
            self._release()

    # -- holding the program -----------------------------------------------------

    @property
    def holding(self) -> bool:
        return self._let_go is not None

    def _pace(self) -> None:
        """Hold the session while too much waits for this view; let go once it has caught up."""
        if self._queued <= self._resume_at:
            self._release()
            if self._hold_s > 0:
                self.lossy = False
        elif self._queued >= self._pause_at and not self.lossy and not self._closed and self._let_go is None:
            self._let_go = self.session.hold_reading()
            self._hold_timer = asyncio.get_running_loop().call_later(self._hold_s, self._held_too_long)

    def _held_too_long(self) -> None:
        self._hold_timer = None
        self.lossy = True
        self._release()

    def _release(self) -> None:
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        let_go, self._let_go = self._let_go, None
        if let_go is not None:
            let_go()

    # -- output in -------------------------------------------------------------

    def _push(self, data: bytes, offset: int) -> None:
        if not self._queue:
            self._queue_start = offset
        self._queue.append(data)
        self._queued += len(data)
        self.resume()  # what the window takes goes now; only the rest waits (and holds the program)
        if self._queued > self._backlog:  # a lossy view's bound (a holding one stays far below it)
            self._drop_oldest(self._queued - self._backlog)

    def _drop_oldest(self, excess: int) -> None:
        dropped = 0
        while self._queue and len(self._queue[0]) <= excess - dropped:
            dropped += len(self._queue.popleft())
        if dropped < excess and self._queue:
            head = self._queue[0]
            cut = boundary_at_or_after(head, excess - dropped)  # never half a character
            self._queue[0] = head[cut:]
            dropped += cut
        self._queued -= dropped
        self._queue_start += dropped
        self._skipped += dropped
        self.bytes_skipped += dropped

    def _take(self, limit: int) -> bytes:
        """Up to about `limit` queued bytes from the front, whole characters."""
        parts = []
        taken = 0
        while self._queue and taken < limit:
            head = self._queue[0]
            if taken + len(head) <= limit:
                parts.append(self._queue.popleft())
                taken += len(head)
                continue
            cut = boundary_at_or_after(head, limit - taken)
            parts.append(head[:cut])
            self._queue[0] = head[cut:]
            taken += cut
            if not self._queue[0]:
                self._queue.popleft()
        self._queued -= taken
        return b"".join(parts)

    def _send_piece(self, piece: bytes) -> None:
        self._send_output(self.session.session_id, self._queue_start, self._skipped, piece)
        self._queue_start += len(piece)
        self.sent_end = self._queue_start
        self._skipped = 0

    # -- the end ---------------------------------------------------------------

    def _on_finished(self, _session: PtySession) -> None:
        self._finished = True
        self._end_if_done()

    def _end_if_done(self) -> None:
        """Once the program has finished and every byte is out: `exited`, the last word."""
        if not (self._finished or self.session.finished) or self._queue or self._closed:
            return
        self._deliver_message(messages.exited(self.session))
        self.close()
        if self._on_end is not None:
            self._on_end()

    def _deliver_message(self, message: dict) -> None:
        if not self._closed:
            self._send_message(message)
