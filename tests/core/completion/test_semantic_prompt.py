"""The OSC 133 scanner: markers out of the text, events in order, whatever the chunking."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel.core.completion import semantic_prompt
from unified_exec_kernel.core.completion.semantic_prompt import MAX_SEQUENCE, PromptEvent

NONCE = "c0ffee"
OSC_133 = semantic_prompt.OSC_133.decode()


class SemanticPromptScanner(semantic_prompt.SemanticPromptScanner):
    """The scanner takes bytes (a session's output); these tests speak in text, indices in bytes."""

    def feed(self, text: str):
        clean, events = super().feed(text.encode())
        return clean.decode(), events

    def flush(self) -> str:
        return super().flush().decode()

    @property
    def held(self) -> str:
        return super().held.decode()


def mark(kind: str, *fields: str, nonce: str | None = NONCE, end: str = "\a") -> str:
    parameters = [kind, *fields] + ([f"uexec={nonce}"] if nonce is not None else [])
    return "\x1b]133;" + ";".join(parameters) + end


def scan_in_chunks(chunks: list[str], nonce: str | None = NONCE) -> tuple[str, list[tuple]]:
    """Feed the chunks; events as (kind, absolute index in the whole clean text, ours, status, typeahead)."""
    scanner = SemanticPromptScanner(nonce)
    clean = ""
    events = []
    for chunk in chunks:
        text, found = scanner.feed(chunk)
        events += [(e.kind, len(clean.encode()) + e.index, e.ours, e.exit_status, e.typeahead) for e in found]
        clean += text
    return clean + scanner.flush(), events


def test_plain_text_passes_untouched():
    scanner = SemanticPromptScanner(NONCE)
    text = "total 0\r\n\x1b[31mred\x1b[0m\r\n"
    assert scanner.feed(text) == (text, [])
    assert scanner.held == ""


def test_markers_leave_the_text_and_become_events():
    text = mark("A") + "$ " + mark("B") + "true\r\n" + mark("C") + "out\r\n" + mark("D", "0") + mark("A")
    clean, events = SemanticPromptScanner(NONCE).feed(text)
    assert clean == "$ true\r\nout\r\n"
    assert events == [
        PromptEvent("A", 0, True),
        PromptEvent("B", 2, True),
        PromptEvent("C", 8, True),
        PromptEvent("D", 13, True, exit_status=0),
        PromptEvent("A", 13, True),
    ]


def test_string_terminator_ends_a_marker_like_bel():
    clean, events = SemanticPromptScanner(NONCE).feed("x" + mark("D", "130", end="\x1b\\") + "y")
    assert clean == "xy"
    assert events == [PromptEvent("D", 1, True, exit_status=130)]


def test_d_without_a_number_has_no_status():
    _, events = SemanticPromptScanner(NONCE).feed(mark("D") + mark("D", "err") + mark("D", "1_0"))
    assert [e.exit_status for e in events] == [None, None, None]


def test_typeahead_option_on_a_prompt():
    _, events = SemanticPromptScanner(NONCE).feed(mark("A", "typeahead=1") + mark("A"))
    assert [e.typeahead for e in events] == [True, False]


def test_foreign_markers_are_removed_but_never_ours():
    text = "a" + mark("D", "0", nonce=None) + "b" + mark("A", nonce="other") + "c" + mark("D", "2", "aid=7")
    clean, events = SemanticPromptScanner(NONCE).feed(text)
    assert clean == "abc"
    assert [(e.kind, e.ours, e.exit_status) for e in events] == [("D", False, 0), ("A", False, None), ("D", True, 2)]


def test_without_a_nonce_nothing_is_ours():
    _, events = SemanticPromptScanner(None).feed(mark("A") + mark("A", nonce=None))
    assert [e.ours for e in events] == [False, False]


def test_other_osc_sequences_are_left_for_the_renderer():
    text = "\x1b]0;title\a\x1b]1337;File=x\a\x1b]133\a\x1b]13;x\a\x1b]633;A\a\x1b]1330;A\a"
    assert SemanticPromptScanner(NONCE).feed(text) == (text, [])


def test_marker_split_at_every_position():
    text = "out\r\n" + mark("D", "1") + mark("A") + "$ " + mark("B", end="\x1b\\") + "ls\r\n" + mark("C")
    whole = scan_in_chunks([text])
    assert whole[0] == "out\r\n$ ls\r\n"
    for cut in range(len(text) + 1):
        assert scan_in_chunks([text[:cut], text[cut:]]) == whole, cut
    assert scan_in_chunks(list(text)) == whole


def test_only_an_incomplete_marker_is_held_back():
    scanner = SemanticPromptScanner(NONCE)
    assert scanner.feed("done\r\n\x1b]13") == ("done\r\n", [])
    assert scanner.held == "\x1b]13"
    assert scanner.feed("3;D;0;uex") == ("", [])
    clean, events = scanner.feed(f"ec={NONCE}\amore")
    assert clean == "more"
    assert events == [PromptEvent("D", 0, True, exit_status=0)]
    assert scanner.held == ""


def test_an_escape_that_starts_something_else_comes_out_with_the_next_chunk():
    scanner = SemanticPromptScanner(NONCE)
    assert scanner.feed("abc\x1b") == ("abc", [])
    assert scanner.feed("[31mred") == ("\x1b[31mred", [])
    assert scanner.feed("\x1b]") == ("", [])
    assert scanner.feed("0;title\a") == ("\x1b]0;title\a", [])


def test_a_control_character_shows_it_was_not_a_marker():
    scanner = SemanticPromptScanner(NONCE)
    text = "\x1b]133;A\r\nplain text\r\n"
    assert scanner.feed(text) == (text, [])
    assert scanner.feed("\x1b]133;D;0") == ("", [])  # might still be one
    assert scanner.feed("\n") == ("\x1b]133;D;0\n", [])


def test_a_stray_sequence_holds_back_a_bounded_amount():
    scanner = SemanticPromptScanner(NONCE)
    released = scanner.feed(OSC_133)[0]
    fed = len(OSC_133)
    while fed < 3 * MAX_SEQUENCE:
        released += scanner.feed("x" * 50)[0]
        fed += 50
        assert len(scanner.held) <= len(OSC_133) + MAX_SEQUENCE
    assert released.startswith(OSC_133 + "x")
    assert len(released) + len(scanner.held) == fed


def test_text_before_a_marker_never_joins_the_next_chunk():
    # "ESC ] 1" then a whole marker: the ESC was not the start of a marker in progress
    scanner = SemanticPromptScanner(NONCE)
    assert scanner.feed("\x1b]1" + mark("A")) == ("\x1b]1", [PromptEvent("A", 3, True)])
    assert scanner.feed("33;D;0\a") == ("33;D;0\a", [])


def test_flush_gives_back_what_was_held():
    scanner = SemanticPromptScanner(NONCE)
    assert scanner.feed("bye\x1b]133;D") == ("bye", [])
    assert scanner.flush() == "\x1b]133;D"
    assert scanner.held == ""
    assert scanner.feed("") == ("", [])


def test_event_index_points_into_its_own_chunk():
    scanner = SemanticPromptScanner(NONCE)
    scanner.feed("first chunk ")
    clean, events = scanner.feed("abc" + mark("C") + "def")
    assert clean == "abcdef" and events[0].index == 3


# -- against a reference: a regex over the whole text ------------------------------

_REFERENCE = re.compile(r"\x1b\]133;([^\x00-\x1f\x7f]{0,%d})(?:\x07|\x1b\\)" % MAX_SEQUENCE)


def reference(text: str) -> tuple[str, list[tuple]]:
    clean, events, last = "", [], 0
    for match in _REFERENCE.finditer(text):
        clean += text[last : match.start()]
        event = SemanticPromptScanner(NONCE)._event(match.group(1), len(clean.encode()))
        events.append((event.kind, event.index, event.ours, event.exit_status, event.typeahead))
        last = match.end()
    return clean + text[last:], events


fragments = st.sampled_from(
    [
        mark("A"), mark("B"), mark("C"), mark("D", "0"), mark("D", "127"), mark("A", "typeahead=1"),
        mark("D", "1", nonce="bad"), mark("A", nonce=None), mark("C", end="\x1b\\"),
        "\x1b", "]", "1", "3", "133", ";", "33;", "\a", "\\", "\x1b]", "\x1b]1", "\x1b]13", "\x1b]133;", "\x1b]0;t\a", "\x1b[0m",
        "x", "y z", "\r\n", "\n", "é", "😀", "D;0",
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(fragments, max_size=30), st.data())
def test_any_chunking_matches_the_reference(parts, data):
    text = "".join(parts)
    boundaries = [sum(map(len, parts[:i])) for i in range(len(parts) + 1)]
    cuts = data.draw(st.lists(st.sampled_from(boundaries) | st.integers(0, len(text)), max_size=6))
    points = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    assert scan_in_chunks(chunks) == reference(text)
