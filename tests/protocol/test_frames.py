"""The direct channel's framing: frames built and read back whole, however the stream cuts them."""

from __future__ import annotations

import json

from unified_exec_kernel.protocol import frames


def test_frames_round_trip_through_a_stream_cut_anywhere():
    message = json.dumps({"type": "attach", "session_id": 3, "note": "é"}).encode()
    stream = (
        frames.text_frame(message)
        + frames.input_frame(7, b"ls -l\r")
        + frames.output_frame_head(2, 10, 4, 3)
        + b"abc"
        + frames.text_frame(b"")
    )
    expected = [
        (frames.TEXT, message),
        (frames.INPUT, frames.INPUT_HEADER.pack(7) + b"ls -l\r"),
        (frames.OUTPUT, frames.OUTPUT_HEADER.pack(2, 10, 4) + b"abc"),
        (frames.TEXT, b""),
    ]
    for size in (1, 2, 3, 5, 7, len(stream)):
        reader = frames.FrameReader()
        got = []
        for start in range(0, len(stream), size):
            got += reader.feed(stream[start : start + size])
        assert got == expected, size
    assert frames.read_output(expected[2][1]) == (2, 10, 4, b"abc")


def test_an_oversize_header_stops_the_stream_before_its_payload_and_keeps_what_came_before():
    reader = frames.FrameReader()
    ok = frames.text_frame(b"{}")
    got = reader.feed(ok + frames.HEADER.pack(frames.TEXT, frames.MAX_FRAME_BYTES + 1) + b"x" * 100)
    assert got == [(frames.TEXT, b"{}")]
    assert reader.too_large is not None and str(frames.MAX_FRAME_BYTES) in str(reader.too_large)
    assert reader.feed(ok) == []  # nothing after it is trusted
    # exactly the cap is allowed
    assert frames.FrameReader().feed(frames.HEADER.pack(frames.OUTPUT, frames.MAX_FRAME_BYTES))  == []
