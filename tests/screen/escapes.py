"""Hypothesis strategies for terminal output of every escape family, whole, cut short or garbled.

Shared by the renderer's tests (test_render.py, test_html.py): what a
program prints reaches them unchecked, so they must take any of it.
"""

from hypothesis import strategies as st

_NUMBER = st.one_of(
    st.integers(0, 9999).map(str),
    st.sampled_from(["", "0", "1", "4", "5", "38", "48", "58", "2", "255", "1049", "99999", "9" * 40, "\u00b2"]),
)
#: Parameters as programs send them: `;` lists, `:` sub-parameters (38:2::1:2:3).
_PARAMS = st.builds(lambda numbers, seps: "".join(s + n for s, n in zip(seps, numbers))[1:],
                    st.lists(_NUMBER, max_size=7), st.lists(st.sampled_from([";", ";", ":", ";;"]), min_size=7, max_size=7))
_PRIVATE = st.sampled_from(["", "?", "", "?", ">", "<", "=", "?>", "<?"])
_INTERMEDIATE = st.sampled_from(["", "", " ", "$", "!", '"', "'", "#", "*", "%", "+", " $"])
#: Every final byte, pyte's dispatched ones (SGR, modes, cursor, erase, reports) most often.
_FINAL = st.one_of(st.sampled_from(list("mmmhlHJKABCDEFGPXL@MSTdfnrsuc") + [""]),
                   st.characters(min_codepoint=0x40, max_codepoint=0x7E))

csi = st.builds(lambda lead, private, params, inter, final: lead + private + params + inter + final,
                st.sampled_from(["\x1b[", "\x1b[", "\x9b"]), _PRIVATE, _PARAMS, _INTERMEDIATE, _FINAL)
_TERMINATOR = st.sampled_from(["\x07", "\x1b\\", "\x9c", "", "\x18", "\x1b"])
_PAYLOAD = st.text(max_size=12)
osc = st.builds(lambda lead, number, payload, end: f"{lead}{number};{payload}{end}",
                st.sampled_from(["\x1b]", "\x9d"]), st.sampled_from(["0", "2", "4;1", "8;;", "10", "11", "52;c", "133;A", "633", "777", ""]),
                _PAYLOAD, _TERMINATOR)
#: DCS (ESC P, as in `$q` and sixel), APC (ESC _), PM (ESC ^), SOS (ESC X).
strings = st.builds(lambda lead, payload, end: lead + payload + end,
                    st.sampled_from(["\x1bP", "\x1bP$q", "\x1bP+q", "\x1bPq#0;2;0;0;0", "\x1b_G", "\x1b^", "\x1bX", "\x90"]),
                    _PAYLOAD, _TERMINATOR)
other_escape = st.one_of(
    st.builds(lambda c: "\x1b" + c, st.characters(min_codepoint=0x20, max_codepoint=0x7E)),
    st.builds(lambda a, b: "\x1b" + a + b, st.sampled_from(list("()*+-./#% ")), st.characters(min_codepoint=0x20, max_codepoint=0x7E)),
)
controls = st.characters(max_codepoint=0x9F).filter(lambda c: not c.isprintable())
#: Broken UTF-8 as the engine passes it on (bad bytes are U+FFFD), and raw bytes read the same way.
garbled = st.binary(max_size=16).map(lambda b: b.decode("utf-8", "replace"))
sequence = st.one_of(csi, csi, csi, osc, strings, other_escape)
#: A sequence cut anywhere: the output's tail starts or ends mid-sequence.
truncated = st.builds(lambda s, cut: s[:cut], sequence, st.integers(0, 12))
piece = st.one_of(sequence, sequence, truncated, controls, garbled, st.text(max_size=8), st.sampled_from(["\r\n", "\n", "\r", "日本", "e\u0301"]))
#: Terminal output: any mix of the above.
output = st.lists(piece, max_size=40).map("".join)
