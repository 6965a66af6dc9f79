"""SGR state: what a run of colour changes leaves, and a line written back standing alone."""

from unified_exec_kernel.screen.sgr import DEFAULT, Rendition, apply_sgr, render_line


def test_colours_and_flags_accumulate_and_reset():
    rendition, sgr = apply_sgr(DEFAULT, (1, 31))
    assert rendition == Rendition(frozenset({1}), "31", "") and sgr == "1;31"
    rendition, sgr = apply_sgr(rendition, (22, 48, 5, 208))
    assert sgr == "31;48;5;208"
    assert apply_sgr(rendition, (0,)) == (DEFAULT, "")


def test_a_malformed_extended_colour_is_ignored_with_what_follows():
    assert apply_sgr(DEFAULT, (38, 5)) == (DEFAULT, "")


def test_a_line_restates_its_colours_and_resets_at_its_end():
    assert render_line(list("ab "), ["31", "", ""]) == "\x1b[31ma\x1b[0mb"
    assert render_line(list("plain  "), [""] * 7) == "plain"
