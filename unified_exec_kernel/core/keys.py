"""Named keys (tmux's names) to the bytes a terminal sends for them.

Lets a notebook or an agent say `C-c` or `Up` instead of knowing that Ctrl-C
is 0x03 and the up arrow is `ESC [ A`.
"""

from __future__ import annotations

from collections.abc import Iterable

NAMED_KEYS = {
    "Enter": "\r",
    "Tab": "\t",
    "BTab": "\x1b[Z",
    "Escape": "\x1b",
    "Space": " ",
    "BSpace": "\x7f",
    "Up": "\x1b[A",
    "Down": "\x1b[B",
    "Right": "\x1b[C",
    "Left": "\x1b[D",
    "Home": "\x1b[H",
    "End": "\x1b[F",
    "PageUp": "\x1b[5~",
    "PPage": "\x1b[5~",
    "PageDown": "\x1b[6~",
    "NPage": "\x1b[6~",
    "Delete": "\x1b[3~",
    "DC": "\x1b[3~",
    "Insert": "\x1b[2~",
    "IC": "\x1b[2~",
}


def key_bytes(name: str) -> str:
    """The text a terminal sends for `name`: a named key, or `C-x` for Ctrl plus a key."""
    if name in NAMED_KEYS:
        return NAMED_KEYS[name]
    if name[:-1] in ("C-", "^"):
        char = name[-1].lower()
        if "a" <= char <= "z":
            return chr(ord(char) - ord("a") + 1)
        control = {"@": "\x00", "[": "\x1b", "\\": "\x1c", "]": "\x1d", "^": "\x1e", "_": "\x1f", "?": "\x7f"}
        if char in control:
            return control[char]
    raise ValueError(f"unknown key {name!r}: use C-<letter> or one of {', '.join(NAMED_KEYS)}")


def keys_text(names: Iterable[str]) -> str:
    return "".join(key_bytes(name) for name in names)
