"""Names a person types to control a terminal: keys (tmux's names) and signals.

Lets a notebook or an agent say `C-c`, `Up` or `INT` instead of knowing that
Ctrl-C is 0x03, the up arrow is `ESC [ A` and SIGINT is 2.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable
from .errors import quoted

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
    raise ValueError(f"unknown key {quoted(name)}: use C-<letter> or one of {', '.join(NAMED_KEYS)}")


def keys_text(names: Iterable[str]) -> str:
    return "".join(key_bytes(name) for name in names)


def signal_number(name: str | int) -> int:
    """A signal given as a number, or a name with or without `SIG` (`INT`, `sigterm`)."""
    number = None
    if isinstance(name, int) and not isinstance(name, bool):
        number = name
    elif isinstance(name, str):
        upper = name.upper()
        full = upper if upper.startswith("SIG") else "SIG" + upper
        if name.isdigit() and len(name) < 4:
            number = int(name)
        elif full in signal.Signals.__members__:
            number = int(signal.Signals[full])
    if number not in _NAMED_SIGNALS:
        raise ValueError(f"unknown signal {quoted(name)}: use a name like INT, TERM, KILL or a number")
    return number


# Real-time signals have numbers but no names here; a session is sent the named ones.
_NAMED_SIGNALS = frozenset(int(sig) for sig in signal.Signals)
