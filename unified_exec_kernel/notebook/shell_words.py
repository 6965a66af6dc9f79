"""Words as a shell splits them (`shlex`, POSIX rules), in time linear in the text's length.

`shlex` builds each word a character at a time on an attribute (`token = token + char`,
which CPython cannot extend in place), so one long word costs time in the square of its
length: a 1 MB magic line took a minute to be refused. Text without quotes or backslashes
is split on shlex's own blanks at once, with the same result; the rest goes to shlex.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

_QUOTING = re.compile(r"['\"\\]")
_WORD = re.compile(r"[^ \t\r\n]+")


def split(text: str) -> list[str]:
    """`shlex.split(text)`; raises ValueError for an unbalanced quote, as it does."""
    if _QUOTING.search(text) is None:
        return _WORD.findall(text)
    return shlex.split(text)


def words(text: str) -> Iterator[tuple[str, int]]:
    """Each word with the position just past it in `text` (where the text after it begins)."""
    if _QUOTING.search(text) is None:
        for match in _WORD.finditer(text):
            yield match.group(), match.end()
        return
    lexer = shlex.shlex(text, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    while (word := lexer.get_token()) is not None:
        yield word, lexer.instream.tell()
