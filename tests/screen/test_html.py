"""Tests for unified_exec_kernel.screen.html: a terminal's last screen as HTML, as the live view would show it."""

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel.screen.html import screen_html

from . import escapes


def rows_of(markup: str) -> list[str]:
    """The screen's rows as text (the tags taken out, entities read back)."""
    body = re.fullmatch(r'<pre class="uexec-screen" style="[^"]*">(.*)</pre>', markup, re.S)
    assert body, markup
    return [html.unescape(re.sub(r"<[^>]+>", "", row)) for row in body[1].split("\n")]


def test_text_and_the_prompt_after_it():
    markup = screen_html("hello\r\nworld\r\n$ ", 24, 80)
    assert rows_of(markup) == ["hello", "world", "$"]


def test_colours_are_the_live_views_and_kept_per_run():
    markup = screen_html("\x1b[31mred\x1b[0m plain \x1b[1;44mbold on blue\x1b[0m", 5, 40)
    assert '<span style="color:#cc0000">red</span> plain ' in markup
    assert '<span style="background:#3465a4;font-weight:bold">bold on blue</span>' in markup


def test_256_and_true_colour_and_reverse_video():
    markup = screen_html("\x1b[38;5;208mo\x1b[0m\x1b[38;2;1;2;3mt\x1b[0m\x1b[7mr\x1b[0m", 3, 10)
    assert '<span style="color:#ff8700">o</span>' in markup
    assert '<span style="color:#010203">t</span>' in markup
    assert '<span style="color:#000000;background:#ffffff">r</span>' in markup


def test_markup_in_the_output_is_text():
    markup = screen_html("<script>alert(1)</script> & done", 3, 60)
    assert "<script>" not in markup
    assert rows_of(markup) == ["<script>alert(1)</script> & done"]


def test_only_the_last_screenful_is_shown_as_the_terminal_shows_it():
    text = "".join(f"line {i}\r\n" for i in range(100))
    assert rows_of(screen_html(text, 5, 20)) == ["line 96", "line 97", "line 98", "line 99"]


def test_long_lines_wrap_at_the_terminals_width():
    assert rows_of(screen_html("x" * 25, 5, 10)) == ["x" * 10, "x" * 10, "x" * 5]


def test_a_full_screen_program_leaves_the_shell_behind_it():
    text = "$ vim\r\n\x1b[?1049h\x1b[2J\x1b[Hvim's own screen\x1b[?1049l$ after\r\n"
    assert rows_of(screen_html(text, 5, 30)) == ["$ vim", "$ after"]


def test_while_a_full_screen_program_runs_its_screen_is_shown():
    text = "$ top\r\n\x1b[?1049h\x1b[2J\x1b[Htop's screen"
    assert rows_of(screen_html(text, 5, 30)) == ["top's screen"]


def test_wide_characters_take_two_cells():
    assert rows_of(screen_html("日本語abc", 3, 7)) == ["日本語a", "bc"]


def test_an_empty_session_is_an_empty_box():
    assert rows_of(screen_html("", 24, 80)) == [""]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("ab \r\n\x1b[;?0123456789mHJKhl\x07\x9b<&") + ["\x1b[31m", "\x1b[?1049h", "\x1b[?1049l"]), max_size=120).map("".join))
def test_never_raises_and_never_lets_markup_through(text):
    markup = screen_html(text, 4, 12)
    assert len(rows_of(markup)) <= 4
    assert "<" not in re.sub(r"</?(pre|span)[^>]*>", "", markup)


def test_a_private_sgr_as_vim_sends_at_start_is_no_error():
    # vim's `ESC[?4m` (a query of xterm's modifier options) reached pyte's screen as SGR with private=True.
    assert rows_of(screen_html("a\x1b[?4mb\x1b[?m\x1b[?1;2Hc", 3, 10)) == ["abc"]


@settings(max_examples=300, deadline=None)
@given(escapes.output, st.integers(1, 40), st.integers(1, 120))
def test_any_output_of_every_escape_family_renders(text, rows, cols):
    markup = screen_html(text, rows, cols)
    assert markup.startswith('<pre class="uexec-screen"') and markup.endswith("</pre>")
    assert len(rows_of(markup)) <= rows
    assert "\x1b" not in markup
