"""UTF-8 at the byte level: the one place that knows where a character starts.

A session's output is bytes from its first read to the edge where a person or
a JSON message needs text. Every byte counter on the way (the request buffer,
the scrollback, a flood's head and tail, a live view's budget) cuts somewhere,
and a cut must never split a character. The bytes handed around are valid
UTF-8 made of whole characters (`Utf8Stream` makes them so), so a cut only
has to step over continuation bytes.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator


def is_continuation(byte: int) -> bool:
    return (byte & 0xC0) == 0x80


def boundary_at_or_after(data: bytes, index: int) -> int:
    """The first character boundary at `index` or later (`len(data)` at most)."""
    while index < len(data) and is_continuation(data[index]):
        index += 1
    return index


def boundary_at_or_before(data: bytes, index: int) -> int:
    """The last character boundary at `index` or earlier (0 at least)."""
    while 0 < index < len(data) and is_continuation(data[index]):
        index -= 1
    return index


def newest(data: bytes, nbytes: int) -> bytes:
    """At most the last `nbytes` of `data`, starting on a character."""
    if nbytes >= len(data):
        return data
    return data[boundary_at_or_after(data, len(data) - max(nbytes, 0)) :]


def pieces(data: bytes, size: int) -> Iterator[tuple[int, bytes]]:
    """`data` in pieces of about `size` bytes, each whole characters, with their start."""
    start = 0
    while start < len(data):
        stop = boundary_at_or_after(data, min(start + size, len(data)))
        yield start, data[start:stop]
        start = stop


class Utf8Stream:
    """Raw terminal bytes -> valid UTF-8 of whole characters, once per session.

    A character split across two reads waits for its second half; invalid
    bytes become U+FFFD. Plain ASCII (most output) passes as it is.
    """

    __slots__ = ("_decoder", "_holding")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._holding = False

    @property
    def holding(self) -> bool:
        """Part of a character waits for the rest."""
        return self._holding

    def feed(self, raw: bytes, *, final: bool = False) -> bytes:
        if not self._holding and not final and raw.isascii():
            return raw
        text = self._decoder.decode(raw, final)
        self._holding = bool(self._decoder.getstate()[0])
        return text.encode("utf-8")
