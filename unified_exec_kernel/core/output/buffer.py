"""A drop-oldest buffer of output bytes (the seed's `OutputBufferState`).

It holds what a session printed while nobody collected it. When it
overflows, the oldest bytes give way and are counted, so the next request can
say how much it missed. Its bytes are addressed by their offset in the
session's whole output, so several callers read it each from where they left
off (`since`), and it lets go of what every caller has read (`forget_before`).
The same class keeps a session's scrollback, which is read without being drained.
"""

from __future__ import annotations

from collections import deque

from .utf8 import boundary_at_or_after

UNIFIED_EXEC_OUTPUT_MAX_BYTES = 128 * 1024


class OutputBuffer:
    def __init__(self, max_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.chunks: deque[bytes] = deque()
        self.total_bytes = 0
        self.dropped_bytes = 0
        self.end = 0  # the offset just past the newest byte

    @property
    def start(self) -> int:
        """The offset of the oldest byte held."""
        return self.end - self.total_bytes

    def push(self, data: bytes, offset: int | None = None) -> None:
        """Take a chunk (a session subscriber's signature: data and its offset; none: it follows the last)."""
        if not data:
            return
        self.end = (self.end if offset is None else offset) + len(data)
        self.chunks.append(data)
        self.total_bytes += len(data)
        excess = self.total_bytes - self.max_bytes
        while excess > 0:
            front = self.chunks[0]
            if excess >= len(front):
                self.chunks.popleft()
                self._forget(len(front))
                excess -= len(front)
                continue
            # Cut at the next character, never inside one.
            kept = front[boundary_at_or_after(front, excess) :]
            self.chunks[0] = kept
            self._forget(len(front) - len(kept))
            break

    def drain(self) -> tuple[bytes, int]:
        """Empty the buffer: its bytes, and how many were dropped before them."""
        drained, dropped = self.data(), self.dropped_bytes
        self.chunks.clear()
        self.total_bytes = 0
        self.dropped_bytes = 0
        return drained, dropped

    def since(self, offset: int) -> tuple[bytes, int]:
        """What arrived from `offset` on, and how many of those bytes gave way before anyone read them."""
        skip = max(0, offset - self.start)
        data = self.data()
        return data[skip:] if skip < len(data) else b"", max(0, self.start - offset)

    def forget_before(self, offset: int) -> None:
        """Let go of the bytes before `offset`: read by everyone who reads here (not counted as dropped)."""
        excess = min(offset, self.end) - self.start
        while excess > 0 and self.chunks:
            front = self.chunks[0]
            if excess >= len(front):
                self.chunks.popleft()
                self.total_bytes -= len(front)
                excess -= len(front)
            else:
                self.chunks[0] = front[excess:]
                self.total_bytes -= excess
                excess = 0

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def _forget(self, nbytes: int) -> None:
        self.total_bytes -= nbytes
        self.dropped_bytes += nbytes
