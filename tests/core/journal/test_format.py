"""The asciicast lines: exact microsecond intervals and notes only we read."""

import json

from unified_exec_kernel.core.journal import format as cast


def test_an_event_line_is_json_with_microsecond_intervals():
    line = cast.event_line(1_234_567, "o", "é\x1b[0m\r\n")
    assert line.endswith(b"\n") and json.loads(line) == [1.234567, "o", "é\x1b[0m\r\n"]
    assert "é".encode() in line  # UTF-8, not \\u escapes


def test_a_note_is_a_v3_comment_that_reads_back():
    line = cast.note_line(cast.NOTE_DROPPED, {"offset": 5, "bytes": 7, "reason": "x"}).decode()
    assert line.startswith("#")
    assert cast.parse_note(line.rstrip("\n")) == ("dropped", {"offset": 5, "bytes": 7, "reason": "x"})
    assert cast.parse_note("# a comment someone wrote") is None
