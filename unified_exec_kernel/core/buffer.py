"""A drop-oldest buffer of decoded output, bounded in UTF-8 bytes (the seed's `OutputBufferState`).

It holds what a session printed while no request was waiting for it. When it
overflows, the oldest bytes give way and are counted, so the next request can
say how much it missed. The same class keeps a session's scrollback, which is
read without being drained.
"""

from __future__ import annotations

from collections import deque

UNIFIED_EXEC_OUTPUT_MAX_BYTES = 128 * 1024


def utf8_len(text: str) -> int:
    # `isascii` is O(1) on CPython: the common case costs no encoding.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class OutputBuffer:
    def __init__(self, max_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.chunks: deque[str] = deque()
        self.total_bytes = 0
        self.dropped_bytes = 0

    def push_chunk(self, chunk: str, nbytes: int | None = None) -> None:
        if not chunk:
            return
        self.chunks.append(chunk)
        self.total_bytes += utf8_len(chunk) if nbytes is None else nbytes
        excess = self.total_bytes - self.max_bytes
        while excess > 0 and self.chunks:
            front = self.chunks[0]
            front_bytes = utf8_len(front)
            if excess >= front_bytes:
                self.chunks.popleft()
                self._forget(front_bytes)
                excess -= front_bytes
                continue
            kept = _drop_leading_bytes(front, excess)
            self.chunks[0] = kept
            self._forget(front_bytes - utf8_len(kept))
            break

    def drain(self) -> tuple[list[str], int]:
        """Empty the buffer: its chunks, oldest first, and how many bytes were dropped before them."""
        drained = list(self.chunks)
        dropped = self.dropped_bytes
        self.chunks.clear()
        self.total_bytes = 0
        self.dropped_bytes = 0
        return drained, dropped

    def text(self) -> str:
        return "".join(self.chunks)

    def _forget(self, nbytes: int) -> None:
        self.total_bytes -= nbytes
        self.dropped_bytes += nbytes


def _drop_leading_bytes(text: str, nbytes: int) -> str:
    if text.isascii():
        return text[nbytes:]
    # Cut at the next character boundary rather than leave a broken character
    # (the seed leaves one, which its lossy decode turns into U+FFFD).
    data = text.encode("utf-8", "surrogatepass")[nbytes:]
    start = 0
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "surrogatepass")
