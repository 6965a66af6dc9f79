"""SGR (colour and style) state as a terminal keeps it, and its shortest re-statement.

The cell view keeps colours, so every character remembers the rendition it
was drawn in; a line is written back with an SGR wherever the rendition
changes and a reset at its end, so each line stands alone.
"""

from __future__ import annotations

import functools
from typing import NamedTuple


class Rendition(NamedTuple):
    """Attribute codes (1 for bold ...) and the colours as SGR parameters ("31", "38;5;208"; "" default)."""

    flags: frozenset[int]
    fg: str
    bg: str


DEFAULT = Rendition(frozenset(), "", "")

_FLAGS_ON = frozenset((1, 2, 3, 4, 5, 6, 7, 8, 9, 21, 53))
_FLAGS_OFF = {22: (1, 2), 23: (3,), 24: (4, 21), 25: (5, 6), 27: (7,), 28: (8,), 29: (9,), 55: (53,)}


@functools.lru_cache(maxsize=4096)
def apply_sgr(rendition: Rendition, params: tuple[int, ...]) -> tuple[Rendition, str]:
    """The rendition after an SGR, and its SGR parameters from a reset.

    Cached: output repeats the same few colour changes thousands of times.
    """
    flags, fg, bg = set(rendition.flags), rendition.fg, rendition.bg
    i = 0
    while i < len(params):
        p = params[i]
        if p == 0:
            flags, fg, bg = set(), "", ""
        elif p in _FLAGS_ON:
            flags.add(p)
        elif p in _FLAGS_OFF:
            flags.difference_update(_FLAGS_OFF[p])
        elif 30 <= p <= 37 or 90 <= p <= 97:
            fg = str(p)
        elif 40 <= p <= 47 or 100 <= p <= 107:
            bg = str(p)
        elif p == 39:
            fg = ""
        elif p == 49:
            bg = ""
        elif p in (38, 48):  # 38;5;n or 38;2;r;g;b
            size = {5: 1, 2: 3}.get(params[i + 1] if i + 1 < len(params) else -1)
            if size is None or i + 2 + size > len(params):
                break  # malformed: ignore it and what follows
            colour = ";".join(map(str, params[i:i + 2 + size]))
            if p == 38:
                fg = colour
            else:
                bg = colour
            i += 1 + size
        i += 1
    sgr = ";".join([str(f) for f in sorted(flags)] + [c for c in (fg, bg) if c])
    return Rendition(frozenset(flags), fg, bg), sgr


def render_line(chars: list[str], sgrs: list[str]) -> str:
    """One output line, with SGR where the rendition changes and a reset at
    its end if needed, so each line stands alone."""
    if not any(sgrs):
        return "".join(chars).rstrip(" ")
    end = len(chars)
    while end and chars[end - 1] == " " and not sgrs[end - 1]:
        end -= 1
    out: list[str] = []
    current = ""
    for ch, sgr in zip(chars[:end], sgrs[:end]):
        if sgr != current:
            if not sgr:
                out.append("\x1b[0m")
            else:
                out.append(f"\x1b[{'0;' if current else ''}{sgr}m")
            current = sgr
        out.append(ch)
    if current:
        out.append("\x1b[0m")
    return "".join(out)
