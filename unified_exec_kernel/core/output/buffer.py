"""A drop-oldest buffer of output bytes (the seed's `OutputBufferState`).

It holds what a session printed while nobody collected it. When it
overflows, the oldest bytes give way and are counted, so the next request can
say how much it missed. The same class keeps a session's scrollback, which is
read without being drained.
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

    def push(self, data: bytes, _offset: int = 0) -> None:
        """Take a chunk (a session subscriber's signature: data and its offset)."""
        if not data:
            return
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

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def _forget(self, nbytes: int) -> None:
        self.total_bytes -= nbytes
        self.dropped_bytes += nbytes
