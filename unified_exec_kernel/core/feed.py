"""A session's output for a live view: replay, then batches per frame, under a byte budget.

A browser view must never fall behind a flood (`yes` prints ~15 MB/s; the
Jupyter server allows 1 MB/s and 1000 messages/s on iopub, and the kernel's
iopub socket silently drops messages past its high-water mark). So output is
sent at most once per frame, under a byte budget that refills at
`bytes_per_s` and holds at most one second of it (a burst such as a listing
passes whole; a sustained flood is held to the rate), and a batch over the
budget keeps only its newest bytes. What is left out is never a silent hole: each event
says its byte range in the session's whole output (`offset`, `end`) and how
much was `skipped` just before it, so a view can show the skip and can tell a
deliberate skip from a lost message (docs/protocol.md, "Gap rule").

Both carriers use this: the kernel comm (`comm.py`) and the widget
(`widget.py`). They pass a `send(message)` that delivers one protocol message.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable

from .buffer import utf8_len
from .session import PtySession

FRAME_S = 1 / 30
BYTES_PER_S = 256 * 1024
REPLAY_CHUNK_BYTES = 64 * 1024

Send = Callable[[dict], None]


class LiveFeed:
    """One session's output to one carrier, from `replay` on until `close`."""

    def __init__(self, session: PtySession, send: Send, *, frame_s: float = FRAME_S, bytes_per_s: int = BYTES_PER_S):
        self.session = session
        self._send = send
        self._frame_s = frame_s
        self._rate = bytes_per_s
        self._loop = asyncio.get_running_loop()
        self._allowance = float(bytes_per_s)
        self._refilled = self._loop.time()
        # Output arrives in the reader's callback, in the context of whatever
        # cell started the session: send from the context that attached.
        self._context = contextvars.copy_context()
        self._pending: list[str] = []
        self._pending_start = session.offset
        self._pending_bytes = 0
        self._sent_end = session.offset
        self._timer: asyncio.TimerHandle | None = None
        self._last_flush = float("-inf")
        self._closed = False
        self._exit_sent = False
        self.events_sent = 0
        self.bytes_skipped = 0
        self._unsubscribe = session.subscribe(self._on_output)
        session.add_exit_callback(self._on_exit)

    def replay(self, request_id=None) -> None:
        """Answer an `attach`: `attached`, the scrollback as `data` events, then live data continues."""
        self.flush()
        start, text = self.session.scrollback_snapshot()
        rows, cols = self.session.size
        self._deliver(
            {
                "type": "attached",
                "request_id": request_id,
                "session_id": self.session.session_id,
                "offset": start,
                "alive": self.session.alive,
                "exit_code": self.session.exit_code,
                "rows": rows,
                "cols": cols,
            }
        )
        for piece_start, piece in _pieces(start, text, REPLAY_CHUNK_BYTES):
            self._deliver(self._data(piece_start, piece, skipped=0, request_id=request_id))
        if self.session.finished:
            self._deliver(self._exited())

    def flush(self) -> None:
        """Send what is pending now (trimmed to the frame budget)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        self._last_flush = self._loop.time()
        text = "".join(self._pending)
        start, nbytes = self._pending_start, self._pending_bytes
        self._pending.clear()
        self._pending_start += nbytes
        self._pending_bytes = 0
        budget = self._refill()
        if nbytes > budget:
            text, start = _newest(text, start + nbytes, budget)
            nbytes = utf8_len(text)
        self._allowance -= nbytes
        skipped = start - self._sent_end
        self.bytes_skipped += skipped
        self._deliver(self._data(start, text, skipped=skipped))
        self._sent_end = self._pending_start

    def _refill(self) -> int:
        now = self._loop.time()
        self._allowance = min(self._rate, self._allowance + (now - self._refilled) * self._rate)
        self._refilled = now
        # Something always gets through, so a view under a flood keeps moving.
        return max(int(self._allowance), 1024)

    def close(self) -> None:
        self._closed = True
        self._unsubscribe()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_output(self, text: str, start: int, end: int) -> None:
        if not self._pending:
            self._pending_start = start
        self._pending.append(text)
        self._pending_bytes += end - start
        if self._timer is None:
            # Leading edge: after a quiet frame, send at once (a keystroke's echo
            # must not wait a frame); within a busy frame, batch to its end.
            delay = max(self._last_flush + self._frame_s - self._loop.time(), 0)
            self._timer = self._loop.call_later(delay, self.flush, context=self._context)

    def _on_exit(self, session: PtySession) -> None:
        if self._closed or self._exit_sent:
            return
        self._context.run(self.flush)
        self._context.run(self._deliver, self._exited())

    def _exited(self) -> dict:
        self._exit_sent = True
        return {"type": "exited", "session_id": self.session.session_id, "exit_code": self.session.exit_code}

    def _data(self, start: int, text: str, *, skipped: int, request_id=None) -> dict:
        return {
            "type": "data",
            "request_id": request_id,
            "session_id": self.session.session_id,
            "offset": start,
            "end": start + utf8_len(text),
            "skipped": skipped,
            "data": text,
        }

    def _deliver(self, message: dict) -> None:
        if not self._closed:
            self.events_sent += 1
            self._send(message)


def _newest(text: str, end: int, budget: int) -> tuple[str, int]:
    """The last `budget` bytes of `text` (ending at offset `end`), from a character boundary."""
    data = text.encode("utf-8", "surrogatepass")[-budget:]
    cut = 0
    while cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut += 1
    data = data[cut:]
    return data.decode("utf-8", "surrogatepass"), end - len(data)


def _pieces(start: int, text: str, size: int):
    """Split replayed text into events of about `size` bytes, on character boundaries."""
    data = text.encode("utf-8", "surrogatepass")
    position = 0
    while position < len(data):
        stop = min(position + size, len(data))
        while stop < len(data) and (data[stop] & 0xC0) == 0x80:
            stop += 1
        yield start + position, data[position:stop].decode("utf-8", "surrogatepass")
        position = stop
