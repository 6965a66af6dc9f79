"""The direct channel's framing: the protocol's messages and raw output on one byte stream.

A Unix socket is a stream, so each message needs its length in front; and a
keystroke or a flood of output should cross it without becoming JSON. Three
kinds of frame: `T` carries one protocol message as JSON text, `B` a
session's output bytes with their offsets, `I` keystrokes for a session. Every frame is `kind` (1 byte),
`length` (u32 big-endian, of the payload), payload (docs/protocol.md,
"Direct channel").

This module knows bytes only (no session, no JSON), so the server's relay,
which must not parse what it carries, reads the same constants.
"""

from __future__ import annotations

import struct

TEXT = b"T"
OUTPUT = b"B"
INPUT = b"I"
KINDS = (TEXT, OUTPUT, INPUT)

HEADER = struct.Struct(">cI")
"""kind, payload length."""
OUTPUT_HEADER = struct.Struct(">IQQ")
"""session_id, offset, skipped: the start of a `B` payload, before the bytes."""
INPUT_HEADER = struct.Struct(">I")
"""session_id: the start of an `I` payload, before the keystrokes."""

MAX_FRAME_BYTES = 16 * 1024 * 1024
"""A larger payload is a protocol error: the peer is answered and that connection closed."""


class FrameTooLarge(ValueError):
    def __init__(self, length: int):
        super().__init__(f"a frame of {length} bytes is over the limit of {MAX_FRAME_BYTES} bytes")
        self.length = length


def text_frame(json_text: bytes) -> bytes:
    return HEADER.pack(TEXT, len(json_text)) + json_text


def output_frame_head(session_id: int, offset: int, skipped: int, data_bytes: int) -> bytes:
    """Everything of a `B` frame before its data, so the data is written without a copy."""
    return HEADER.pack(OUTPUT, OUTPUT_HEADER.size + data_bytes) + OUTPUT_HEADER.pack(session_id, offset, skipped)


def input_frame(session_id: int, keys: bytes) -> bytes:
    return HEADER.pack(INPUT, INPUT_HEADER.size + len(keys)) + INPUT_HEADER.pack(session_id) + keys


def read_output(payload: bytes) -> tuple[int, int, int, bytes]:
    """A `B` payload as (session_id, offset, skipped, data): for clients and tests."""
    session_id, offset, skipped = OUTPUT_HEADER.unpack_from(payload)
    return session_id, offset, skipped, bytes(payload[OUTPUT_HEADER.size :])


class FrameReader:
    """Bytes of the stream in, whole frames out, in order.

    A header announcing more than `MAX_FRAME_BYTES` ends the stream as soon as
    it is read, before any of that payload is held: `too_large` says so, and
    the frames before it are still handed out.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.too_large: FrameTooLarge | None = None

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        """Take `data`; the frames now complete, as (kind, payload)."""
        if self.too_large is not None:
            return []
        self._buffer += data
        frames = []
        start = 0
        while len(self._buffer) - start >= HEADER.size:
            kind, length = HEADER.unpack_from(self._buffer, start)
            if length > MAX_FRAME_BYTES:
                self.too_large = FrameTooLarge(length)
                self._buffer.clear()
                return frames
            end = start + HEADER.size + length
            if len(self._buffer) < end:
                break
            frames.append((kind, bytes(self._buffer[start + HEADER.size : end])))
            start = end
        del self._buffer[:start]
        return frames
