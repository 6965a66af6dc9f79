"""Output a terminal leaves as it is: the renderer's quick path, with no terminal parser loaded.

Most of what a cell shows needs no parsing: a command's lines, a shell's
prompt. Drawing it here, in a module that never imports pyte, spares a
kernel pyte and wcwidth (~1.5 MiB of its memory, benchmarks/bench_costs.py)
until some output needs them; render.py takes this path first too, so both
give the same text.
"""

from __future__ import annotations

import re

__all__ = ["plain_text"]

# ASCII text with none of these (no escape, no control but LF and CR LF) is
# drawn left to right, line after line: what a terminal leaves is the text
# itself, and the parser (the cost of rendering a flood) can be skipped.
# (Beyond ASCII, widths and combining marks need the parser.)
_NEEDS_A_TERMINAL = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")
_TRAILING_SPACES = re.compile(r" +(?=\n|\Z)")
# Private modes set or reset (`ESC [ ? n ; ... h` / `l`): they leave no trace in the text, but for the
# alternate screen's, which render.py acts on. bash and zsh set bracketed paste (2004) at every prompt.
_PRIVATE_MODES = re.compile("\x1b\\[\\?([0-9;]*)[hl]")
_ALT_SCREEN = {"47", "1047", "1049"}


def plain_text(text: str) -> str | None:
    """What a terminal leaves of `text`, if that needs no terminal to tell; else None (render.py's parser)."""
    if not text.isascii():
        return None
    if "\x1b" in text:
        text = _PRIVATE_MODES.sub(_traceless, text)
    if _NEEDS_A_TERMINAL.search(text):
        return None
    return _TRAILING_SPACES.sub("", text.replace("\r\n", "\n"))


def _traceless(mode: re.Match) -> str:
    return mode[0] if _ALT_SCREEN & set(mode[1].split(";")) else ""
