"""A session's output for a live view: replay, then batches per frame, under a byte budget.

A browser view must never fall behind a flood (`yes` prints ~15 MB/s; the
Jupyter server allows 1 MB/s and 1000 messages/s on iopub, and the kernel's
iopub socket silently drops messages past its high-water mark). So output
goes at most once per frame, under a token bucket, and a batch over the
budget keeps only its newest bytes. What is left out is never a silent hole:
each `data` event says its byte range and how much was `skipped` before it,
so a view can show the skip and tell it from a lost message (docs/protocol.md,
"Gap rule").
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.output.batcher import Batch, Batcher, TokenBucket
from ..core.session import PtySession
from ..core.output.utf8 import pieces
from . import messages

FRAME_S = 1 / 30
BYTES_PER_S = 256 * 1024
REPLAY_CHUNK_BYTES = 64 * 1024

Send = Callable[[dict], None]


class LiveStream:
    """One session's output to one carrier, from `replay` on until `close`."""

    def __init__(
        self,
        session: PtySession,
        send: Send,
        *,
        on_end: Callable[[], None] | None = None,
        frame_s: float = FRAME_S,
        bytes_per_s: int = BYTES_PER_S,
    ):
        """`on_end` is called once the session has finished and `exited` was sent."""
        self.session = session
        self._send = send
        self._on_end = on_end
        self._closed = False
        self.bytes_skipped = 0
        self._batches = Batcher(
            self._send_batch,
            interval=frame_s,
            budget=TokenBucket(bytes_per_s),
            keep_bytes=bytes_per_s,
            offset=session.offset,
        )
        self._unsubscribe = session.subscribe(self._batches.push)
        self._forget_exit = session.on_exit(self._on_finished)
        self._forget_flow = session.on_flow(lambda _paused: self._deliver(messages.flow(self.session)))  # XOFF/XON
        self._forget_size = session.on_resize(self._on_resize)  # sizes.py

    def replay(self, request_id=None) -> None:
        """Answer an `attach`: `attached`, the scrollback as `data` events, then live data continues."""
        self._batches.flush()
        start, scrollback = self.session.scrollback_snapshot()
        self._deliver(messages.attached(request_id, self.session, start))
        for position, piece in pieces(scrollback, REPLAY_CHUNK_BYTES):
            self._deliver(messages.data(request_id, self.session.session_id, Batch(piece, start + position, 0)))
        if self.session.finished:
            self._end()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._unsubscribe()
            self._forget_exit()
            self._forget_flow()
            self._forget_size()
            self._batches.cancel()

    def _on_resize(self, _rows: int, _cols: int) -> None:
        # What the program printed at the old size goes first: a view parses it at that size.
        self._batches.flush()
        self._deliver(messages.size(self.session))

    def _send_batch(self, batch: Batch) -> None:
        self.bytes_skipped += batch.skipped
        self._deliver(messages.data(None, self.session.session_id, batch))

    def _on_finished(self, _session: PtySession) -> None:
        if not self._closed:
            self._batches.flush()
            self._batches.call(self._end)

    def _end(self) -> None:
        """The last word: `exited`; then nothing of this session is held any more."""
        self._deliver(messages.exited(self.session))
        self.close()
        if self._on_end is not None:
            self._on_end()

    def _deliver(self, message: dict) -> None:
        if not self._closed:
            self._send(message)
