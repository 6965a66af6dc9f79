"""Words as `shlex.split` makes them (POSIX rules, no comments), in time linear in the text's length.

`shlex` builds each word a character at a time on an attribute (`token = token + char`,
which CPython cannot extend in place), so one long word costs time in the square of its
length: a 1 MB magic line took a minute to be refused, a 1 MB quoted argument 18 s to
run. Here one regular expression takes a word's pieces whole: a run of plain characters,
a quoted string, an escaped character. Its rules are shlex's, which
tests/notebook/test_shell_words.py checks against shlex itself on generated text:

- blanks (space, tab, CR, LF) separate words; any other character is part of one;
- '...' is taken as it is;
- "..." too, except that a backslash before `"` or `\\` stands for that character;
- outside quotes a backslash stands for the character after it;
- '' and "" make an empty word; an open quote or a last backslash is a ValueError.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_PIECE = re.compile(
    r"""
      (?P<blank>[ \t\r\n]+)
    | (?P<plain>[^ \t\r\n'"\\]+)
    | '(?P<single>[^']*)'
    | "(?P<double>(?:[^"\\]|\\.)*)"
    | \\(?P<escaped>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_IN_DOUBLE_QUOTES = re.compile(r"\\([\"\\])")


def split(text: str) -> list[str]:
    """`shlex.split(text)`; raises ValueError for an unbalanced quote or a last backslash, as it does."""
    return [word for word, _end in words(text)]


def words(text: str) -> Iterator[tuple[str, int]]:
    """Each word with the position just past it in `text` (where the text after it begins)."""
    parts: list[str] = []
    in_word = False
    position = 0
    while position < len(text):
        piece = _PIECE.match(text, position)
        if piece is None:  # a quote that never closes, or a backslash at the very end
            raise ValueError(_unfinished(text, position))
        kind = piece.lastgroup
        if kind == "blank":
            if in_word:
                yield "".join(parts), position
                parts.clear()
                in_word = False
        else:
            value = piece.group(kind)
            parts.append(_IN_DOUBLE_QUOTES.sub(r"\1", value) if kind == "double" else value)
            in_word = True
        position = piece.end()
    if in_word:
        yield "".join(parts), position


def _unfinished(text: str, position: int) -> str:
    """shlex's words for the piece at `position` that the text ends inside of."""
    if text[position] == '"' and re.fullmatch(r'(?:[^"\\]|\\.)*\\', text[position + 1 :], re.DOTALL):
        return "No escaped character"  # "... and a backslash with nothing after it
    return "No escaped character" if text[position] == "\\" else "No closing quotation"
