"""Crafted and broken asciicast files: each one's problem, for every reader of recordings to refuse in one line."""

from __future__ import annotations

V3 = '{"version": 3, "term": {"cols": 80, "rows": 24}}\n'
V2 = '{"version": 2, "width": 80, "height": 24}\n'

MALFORMED = {
    "cols-text.cast": '{"version": 3, "term": {"cols": "abc", "rows": 24}}\n[0.1, "o", "x"]\n',
    "cols-negative.cast": '{"version": 3, "term": {"cols": -5, "rows": 24}}\n[0.1, "o", "x"]\n',
    "width-bool.cast": '{"version": 2, "width": true, "height": 24}\n[0.1, "o", "x"]\n',
    "env-text.cast": '{"version": 2, "width": 80, "height": 24, "env": "TERM"}\n[0.1, "o", "x"]\n',
    "term-type-number.cast": '{"version": 3, "term": {"cols": 80, "rows": 24, "type": 5}}\n[0.1, "o", "x"]\n',
    "idle-text.cast": '{"version": 3, "term": {"cols": 80, "rows": 24}, "idle_time_limit": "soon"}\n[0.1, "o", "x"]\n',
    "time-nan.cast": V3 + '[NaN, "o", "x"]\n',
    "time-infinity.cast": V3 + '[Infinity, "o", "x"]\n',
    "time-huge.cast": V3 + '[1e308, "o", "x"]\n[1e308, "o", "y"]\n',
    "time-negative.cast": V3 + '[0.5, "o", "x"]\n[-1, "o", "y"]\n',
    "time-bool.cast": V3 + '[true, "o", "x"]\n',
    "time-backwards-v2.cast": V2 + '[2.0, "o", "x"]\n[1.0, "o", "y"]\n',
    "note-offset-text.cast": V3 + '[0.1, "o", "x"]\n#uexec dropped {"offset": "here", "bytes": 5, "reason": "r"}\n[0.1, "o", "y"]\n',
    "note-offset-huge.cast": V3 + '[0.1, "o", "x"]\n#uexec dropped {"offset": 1e400, "bytes": 5, "reason": "r"}\n[0.1, "o", "y"]\n',
    "note-bytes-negative.cast": V3 + '[0.1, "o", "x"]\n#uexec dropped {"offset": 1, "bytes": -5, "reason": "r"}\n[0.1, "o", "y"]\n',
    "event-short.cast": V3 + '[0.1, "o"]\n',
}
