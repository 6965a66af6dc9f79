"""What a request keeps of a flood: the head, the tail and the count between.

A request that waits while a program prints gigabytes must not hold
gigabytes. Truncation only ever shows the first and the last `max_bytes`
bytes, so those and the total length are enough for a result identical to
truncating everything (`truncate_parts`).
"""

from __future__ import annotations

from .truncate import approx_token_count, truncate_parts


class HeadTailCollector:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.total_bytes = 0
        self._head = bytearray()
        self._tail = bytearray()

    def push(self, data: bytes, _offset: int = 0) -> None:
        """Take output bytes (a session subscriber's signature: data and its offset)."""
        data = memoryview(data)
        self.total_bytes += len(data)
        room = self.max_bytes - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            # Trim rarely (at twice the size) so the copy is amortised.
            if len(self._tail) > 2 * self.max_bytes:
                del self._tail[: len(self._tail) - self.max_bytes]

    def truncated(self) -> tuple[str, int | None]:
        """`truncate_middle` of everything pushed so far."""
        if len(self._head) + len(self._tail) == self.total_bytes:
            whole = bytes(self._head + self._tail)
            return truncate_parts(whole, whole, self.total_bytes, self.max_bytes)
        return truncate_parts(bytes(self._head), bytes(self._tail), self.total_bytes, self.max_bytes)

    @property
    def token_count(self) -> int:
        return approx_token_count(self.total_bytes)
