"""Tests for unified_exec_kernel.screen.render: PTY text -> what a person reads."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel.screen.render import render_terminal_text as render

from . import escapes

ESC = "\x1b"
RED, GREEN, BOLD, RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


# -- line ends and carriage returns --------------------------------------------

def test_crlf_becomes_lf():
    assert render("one\r\ntwo\r\n") == "one\ntwo\n"


def test_bare_lf_starts_a_new_line_at_column_zero():
    assert render("one\ntwo") == "one\ntwo"


def test_trailing_newline_is_kept():
    assert render("done\r\n") == "done\n"
    assert render("a\n\n") == "a\n\n"


def test_no_newline_is_added_when_input_is_unterminated():
    assert render("$ ") == "$"
    assert render("partial") == "partial"
    assert render("") == ""


def test_carriage_return_overwrites_only_its_own_columns():
    assert render("abcdef\rXY") == "XYcdef"


def test_progress_bar_ends_as_last_state():
    bar = "".join(
        f"\r{i:3d}%|{'#' * (i // 10):<10}| {i}/100" for i in range(1, 101)
    )
    assert render(bar + "\r\n") == "100%|##########| 100/100\n"


def test_progress_bar_with_erase_in_line_ends_as_last_state():
    assert render("progress 10%\r\x1b[Kprogress 100%") == "progress 100%"


def test_pip_like_progress_then_further_output():
    text = "Downloading\r\n" + "".join(f"\r  {i} MB" for i in range(1, 31)) + "\r\nDone\r\n"
    assert render(text) == "Downloading\n  30 MB\nDone\n"


# -- backspace, tab, erase ----------------------------------------------------

def test_backspace_moves_left_and_next_text_overwrites():
    assert render("abc\bX") == "abX"
    assert render("ab\b\b\b\bX") == "Xb"  # never past column 0


def test_backspace_erase_as_readline_does():
    assert render("lss\b\x1b[K -l") == "ls -l"


def test_tab_advances_to_next_multiple_of_eight():
    assert render("a\tb") == "a       b"
    assert render("abcdefgh\tx") == "abcdefgh        x"
    assert render("\t\tz") == " " * 16 + "z"


def test_tab_moves_over_existing_text_without_erasing_it():
    assert render("abcdefghij\r\tX") == "abcdefghXj"


def test_trailing_tab_is_trimmed():
    assert render("a\t\n") == "a\n"


def test_erase_to_end_of_line():
    assert render("abcdef\r\x1b[Kxy") == "xy"
    assert render("abcdef\x1b[3D\x1b[0K") == "abc"


def test_erase_whole_line():
    assert render("abcdef\x1b[2Kxy") == "      xy"
    assert render("abcdef\x1b[2K\rxy") == "xy"


def test_erase_to_start_of_line():
    assert render("abcdef\x1b[3D\x1b[1K") == "    ef"


def test_erase_delete_and_insert_characters():
    assert render("abcdef\r\x1b[2X") == "  cdef"
    assert render("abcdef\r\x1b[2P") == "cdef"
    assert render("abcdef\r\x1b[2@XY") == "XYabcdef"


def test_trailing_spaces_from_padding_and_erasing_are_trimmed():
    assert render("long\rab  \n") == "ab\n"
    assert render("abc   \r\n") == "abc\n"
    assert render("abc\x1b[10Cd") == "abc" + " " * 10 + "d"
    assert render("abc\x1b[10C\n") == "abc\n"


# -- colours ------------------------------------------------------------------

def test_colour_is_kept_and_reset_at_line_end():
    assert render(f"{RED}red{RESET} plain\r\n") == f"{RED}red{RESET} plain\n"
    assert render(f"{RED}red\r\nstill red{RESET}\r\n") == (
        f"{RED}red{RESET}\n{RED}still red{RESET}\n"
    )


def test_colour_change_resets_before_the_new_rendition():
    assert render(f"{BOLD}{RED}A{GREEN}B{RESET}C") == (
        "\x1b[1;31mA\x1b[0;1;32mB\x1b[0mC"
    )


def test_ls_color_output_keeps_its_colours():
    text = "\x1b[0m\x1b[01;34mdir\x1b[0m  \x1b[01;32mrun.sh\x1b[0m  notes.txt\r\n"
    assert render(text) == "\x1b[1;34mdir\x1b[0m  \x1b[1;32mrun.sh\x1b[0m  notes.txt\n"


def test_256_and_truecolour_pass_through():
    assert render("\x1b[38;5;208mo\x1b[48;2;1;2;3mb\x1b[m") == (
        "\x1b[38;5;208mo\x1b[0;38;5;208;48;2;1;2;3mb\x1b[0m"
    )


def test_attribute_and_colour_resets():
    assert render(f"{BOLD}{RED}a\x1b[22mb\x1b[39mc") == "\x1b[1;31ma\x1b[0;31mb\x1b[0mc"


def test_overwritten_cells_take_the_rendition_of_their_last_write():
    assert render(f"{RED}abc{RESET}\rX") == f"X{RED}bc{RESET}"
    assert render(f"abc\r{GREEN}X{RESET}") == f"{GREEN}X{RESET}bc"


def test_coloured_trailing_spaces_are_kept():
    assert render("\x1b[41m  \x1b[0m\n") == "\x1b[41m  \x1b[0m\n"


def test_empty_sgr_and_colon_sgr_are_harmless():
    assert render("\x1b[mplain") == "plain"
    assert render("\x1b[38:2::1:2:3mx\x1b[m") == "x"


# -- noise that is removed ----------------------------------------------------

def test_bash_prompt_noise_is_removed():
    text = (
        "\x1b[?2004h\x1b]0;user@host: ~\x07user@host:~$ ls\r\n"
        "\x1b[?2004l\rfile.txt\r\n"
        "\x1b[?2004h\x1b]0;user@host: ~\x07user@host:~$ "
    )
    assert render(text) == "user@host:~$ ls\nfile.txt\nuser@host:~$"


def test_osc_terminated_by_st_is_removed():
    assert render("\x1b]0;title\x1b\\text") == "text"
    assert render("\x1b]8;;https://x.org\x1b\\link\x1b]8;;\x1b\\") == "link"


def test_charset_keypad_modes_and_bell_are_removed():
    text = "\x1b(B\x1b)0\x1b=\x1b>\x1b[?1h\x1b[?25l\x1b[4l\x1b[1;24r\x07ok\x1b[?25h"
    assert render(text) == "ok"


def test_other_c0_and_c1_controls_are_removed():
    assert render("a\x00b\x01c\x7fd\x85e\x9b31mf\x0e\x0fg") == "abcde31mfg"


def test_dcs_and_unusual_csi_are_removed():
    assert render("\x1bPtmux;x\x1b\\a\x1b[>4;2mb\x1b[!pc\x1b[2 qd") == "abcd"


# -- cursor movement ----------------------------------------------------------

def test_cursor_up_redraws_a_two_line_progress_display():
    frames = []
    for i in range(0, 101, 25):
        frames.append(f"\x1b[2Kfile1 {i}%\r\n\x1b[2Kfile2 {i // 2}%\r\n")
    text = frames[0] + "".join("\x1b[2A" + f for f in frames[1:])
    assert render(text) == "file1 100%\nfile2 50%\n"


def test_cursor_up_stays_within_printed_lines():
    assert render("a\r\n\x1b[5Ab") == "b\n"


def test_cursor_up_cannot_reach_above_the_24_line_screen():
    text = "".join(f"{i}\r\n" for i in range(30)) + "\x1b[99AX"
    lines = render(text).split("\n")
    assert len(lines) == 31  # the last 24 (from index 7) are the screen
    assert lines[6:9] == ["6", "X", "8"]


def test_cursor_position_within_the_screen():
    assert render("aaa\r\nbbb\r\n\x1b[1;2HX\x1b[3;1HY") == "aXa\nbbb\nY"


def test_clear_screen_keeps_history_and_starts_below_it():
    assert render("old\r\n\x1b[H\x1b[2Jnew\r\n") == "old\nnew\n"
    assert render("old\x1b[H\x1b[2J\x1b[3Jnew") == "old\nnew"


def test_erase_below_removes_a_finished_progress_display():
    text = "keep\r\nbar 1\r\nbar 2\r\n\x1b[2A\x1b[Jdone\r\n"
    assert render(text) == "keep\ndone\n"


def test_save_and_restore_cursor():
    assert render("abc\x1b7\r\nstatus\x1b8def") == "abcdef\nstatus"


def test_alternate_screen_is_dropped_on_exit():
    text = "$ less f\r\n\x1b[?1049h\x1b[H\x1b[2Jpage 1\r\n:\x1b[?1049l\r$ "
    assert render(text) == "$ less f\n$"


def test_huge_cursor_moves_are_bounded():
    assert len(render("\x1b[9999C" * 50 + "x")) == 1025


# -- wide and combining characters --------------------------------------------

def test_wide_characters_take_two_columns():
    assert render("日本\rX") == "X 本"
    assert render("ab\r日") == "日"


def test_combining_marks_stay_with_their_letter():
    assert render("e\u0301x\rY") == "Yx"


# -- partial and invalid input --------------------------------------------------

def test_text_starting_mid_escape_keeps_the_fragment_as_text():
    assert render("[31mred\x1b[0m\n") == "[31mred\n"
    assert render("2004hprompt") == "2004hprompt"


def test_text_starting_mid_osc_drops_the_terminator():
    assert render("user@host: ~\x07$ ls") == "user@host: ~$ ls"


@pytest.mark.parametrize("tail", ["\x1b", "\x1b[", "\x1b[3", "\x1b[31;", "\x1b]0;ti", "\x1bP1"])
def test_text_ending_mid_escape_drops_the_fragment(tail):
    assert render("done\r\n" + tail) == "done\n"


def test_unconvertible_csi_parameters_lose_only_that_sequence():
    assert render("a\x1b[1\u00b2mb\r\n") == "ab\n"
    assert render("a\x1b[" + "1" * 5000 + "mb") == "ab"
    assert render("a\x1b[\u00b2\x1b[31mb") == "ab"


# -- properties -----------------------------------------------------------------

_SGR_ONLY = re.compile(r"\x1b\[[0-9;]*m")

_fragments = st.sampled_from([
    "\x1b", "[", "]", "\x1b[", "\x1b]", "\x1bP", "\x1b\\", "\x07", "\r", "\n",
    "\b", "\t", "\r\n", ";", "?", ">", ":", "0", "1", "2", "31", "38", "5",
    "9999", "m", "A", "B", "C", "D", "H", "J", "K", "P", "X", "@", "h", "l",
    "7", "8", "\x1b7", "\x1b8", "1049", "\u00b2", "日", "\u0301", " ", "x",
    "\x9b", "\x00",
])


def _assert_clean(text):
    out = render(text)
    assert isinstance(out, str)
    assert ESC not in _SGR_ONLY.sub("", out)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_renders_without_raising_and_with_only_sgr_escapes(text):
    _assert_clean(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(_fragments, max_size=60).map("".join))
def test_escape_heavy_text_renders_without_raising_and_with_only_sgr_escapes(text):
    _assert_clean(text)


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80))
def test_printable_ascii_lines_pass_through_minus_trailing_spaces(line):
    assert render(line + "\r\n") == line.rstrip(" ") + "\n"


def test_128_kib_of_command_output_renders_line_for_line():
    # Its speed is measured in benchmarks/, not here.
    seq = "".join(f"{i}\r\n" for i in range(1, 20001))
    assert render(seq) == "".join(f"{i}\n" for i in range(1, 20001))


@settings(max_examples=300, deadline=None)
@given(escapes.output)
def test_any_output_of_every_escape_family_renders_without_raising_and_with_only_sgr_escapes(text):
    _assert_clean(text)
