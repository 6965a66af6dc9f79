"""Turn raw PTY output into the text a terminal would have left behind.

A notebook cell shows a session's output as scrolling text, not as a fixed
screen: every line printed is kept, but carriage returns, backspaces, erases
and cursor-up redraws act on those lines the way a terminal acts on its
screen, so a progress bar ends as its last state. SGR colours are kept
(Jupyter renders them); every other control sequence is dropped.

pyte's ``Stream`` does the parsing (it is a complete, well-tested VT100 /
ECMA-48 parser); ``_Lines`` is the small listener it drives. pyte's own
``Screen`` is not used because it is a fixed-size grid that forgets what
scrolls off its top.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import pyte
from wcwidth import wcwidth  # a dependency of pyte; the widths pyte uses

from .plain import plain_text
from .sgr import DEFAULT, Rendition, apply_sgr, render_line

__all__ = ["feed", "render_terminal_text"]

#: Height of the screen that absolute positioning and cursor motion act on.
#: Output does not say how tall the real terminal is; 24 is the VT100 default.
ROWS = 24
#: Furthest column cursor motion reaches past a line's end (a terminal stops
#: at its right margin), so stray "\x1b[9999C"s cannot pile up blanks.
COLUMNS = 1024

# Removed before parsing, because pyte would draw them as text:
# - C0/C1 controls pyte has no event for (a terminal ignores them). C1
#   controls go too: pyte would read U+009B / U+009D as CSI / OSC, which a
#   UTF-8 terminal does not, and the rest are invisible anyway.
# - DCS / APC / PM / SOS strings (ESC P, _, ^, X ... ST): pyte knows no such
#   strings and would print their payload. An unterminated one runs to the
#   end, as in a terminal.
# - CSI with a ':', '<', '=' or '>' parameter byte or an intermediate byte
#   (vim's "\x1b[>4;2m", "\x1b[38:5:208m", "\x1b[!p", "\x1b[2 q"): pyte
#   reads only "[?]n;n...X"; it would apply "\x1b[>4;2m" as SGR and print
#   what follows the unexpected byte.
_DROP = re.compile(
    "[\x00-\x06\x0e-\x1a\x1c-\x1f\x7f-\x9f]"
    "|\x1b[P_^X].*?(?:\x1b\\\\|\x07|\\Z)"
    "|\x1b\\[(?=[\x30-\x3f]*[\x20-\x2f:<=>])[\x20-\x3f]*[\x40-\x7e]?",
    re.DOTALL,
)

# The rest of a CSI whose parameters pyte could not convert (see below).
_CSI_REST = re.compile("\\[?[^\x40-\x7e]*[\x40-\x7e]?")

def render_terminal_text(text: str) -> str:
    """PTY text -> what a person reads.

    Never raises: the magic renders a bounded tail of the output, which may
    start or end in the middle of an escape sequence.
    """
    plain = plain_text(text)
    if plain is not None:
        return plain
    lines = _Lines()
    # CR LF does just what LF does here (see linefeed); folding them halves
    # the work pyte's per-character parser does on ordinary output.
    feed(pyte.Stream(lines), text.replace("\r\n", "\n"))
    return lines.text()


def feed(stream: pyte.Stream, text: str) -> None:
    """Feed `text` to a pyte stream the way a terminal would take it; never raises.

    What pyte would draw as text is dropped first (`_DROP`), and the text is
    fed one escape sequence at a time so that a failure loses only that
    sequence: pyte raises ValueError for CSI parameters int() rejects
    (superscript digits, more than 4300 digits), and a listener may refuse
    the arguments pyte passes (TypeError: pyte's own `Screen` takes no
    `private` in most events, as for vim's `ESC[?4m`); pyte resets its
    parser either way. Anything a program prints reaches here, so every
    failure of one sequence is caught, not only those known today
    (tests/screen: a fuzz of every escape family).
    """
    pieces = _DROP.sub("", text).split("\x1b")
    _feed_safely(stream, pieces[0])
    for piece in pieces[1:]:
        try:
            stream.feed("\x1b" + piece)
        except Exception:  # noqa: BLE001 - see the docstring: one sequence is lost, never the render
            _feed_safely(stream, piece[_CSI_REST.match(piece).end():])


def _feed_safely(stream: pyte.Stream, text: str) -> None:
    """Text without an escape: only a listener could fail on it (a drawing error loses that text)."""
    try:
        stream.feed(text)
    except Exception:  # noqa: BLE001
        pass


class Line(NamedTuple):
    """One output line as parallel cells: characters (a wide one is followed
    by an empty placeholder) and the SGR parameters of each ("" for none)."""

    chars: list[str]
    sgrs: list[str]


class Cursor(NamedTuple):
    y: int
    x: int
    rendition: Rendition
    sgr: str


class AltScreen(NamedTuple):
    """Where the main screen was when a full-screen program switched away."""

    lines: int
    floor: int
    y: int
    x: int


def _line() -> Line:
    return Line([], [])


class _Lines:
    """pyte listener: a growing list of lines of cells and a cursor.

    Each line is a pair of parallel lists: characters (a wide character is
    followed by an empty placeholder cell) and SGR parameter strings ("" for
    the default rendition), so that overwriting text also overwrites its
    colours cell by cell.

    The cursor moves freely within the last ``ROWS`` lines (the "screen");
    lines above it are scrollback and stay as printed. Absolute rows count
    from the screen's top. Erase-display (``ESC[2J``, as sent by ``clear``)
    keeps everything printed and starts a blank screen below it, so the cell
    shows the whole history rather than losing it; the alternate screen of
    full-screen programs (less, vim, top) is dropped when they leave it, as a
    terminal would.
    """

    def __init__(self) -> None:
        self.lines: list[Line] = [_line()]
        self.y = self.x = 0
        self.floor = 0  # first line the screen may reach (see erase_in_display)
        self.rendition, self.sgr = DEFAULT, ""
        self._saved = Cursor(0, 0, DEFAULT, "")
        self._alt: AltScreen | None = None

    # -- output -------------------------------------------------------------

    def text(self) -> str:
        return "\n".join(render_line(chars, sgrs) for chars, sgrs in self.lines)

    # -- characters ---------------------------------------------------------

    def draw(self, data: str) -> None:
        chars, sgrs = self.lines[self.y]
        x = self.x
        if x == len(chars) and data.isascii():  # appending: most output
            chars.extend(data)
            sgrs.extend([self.sgr] * len(data))
            self.x = x + len(data)
            return
        if x > len(chars):  # the cursor was moved past the end of the line
            chars.extend(" " * (x - len(chars)))
            sgrs.extend([""] * (x - len(sgrs)))
        cells = data if data.isascii() else self._cells(data, chars, x)
        n = len(cells)
        if not n:
            return
        if x < len(chars) and chars[x] == "" and x:
            chars[x - 1] = " "  # overwrote the right half of a wide character
        chars[x:x + n] = cells
        sgrs[x:x + n] = [self.sgr] * n
        if x + n < len(chars) and chars[x + n] == "":
            chars[x + n] = " "  # overwrote the left half of a wide character
        self.x = x + n

    @staticmethod
    def _cells(data: str, chars: list[str], x: int) -> list[str]:
        cells: list[str] = []
        for ch in data:
            width = wcwidth(ch)
            if width > 0:
                cells.append(ch)
                if width == 2:
                    cells.append("")
            elif width == 0:  # combining mark, joiner: part of the previous cell
                if cells:
                    cells[-2 if cells[-1] == "" else -1] += ch
                elif 0 < x <= len(chars):
                    chars[x - 2 if chars[x - 1] == "" and x > 1 else x - 1] += ch
        return cells

    def select_graphic_rendition(self, *params: int, private: bool = False) -> None:
        if not private:
            self.rendition, self.sgr = apply_sgr(self.rendition, params or (0,))

    # -- cursor -------------------------------------------------------------

    def _top(self) -> int:
        return max(self.floor, len(self.lines) - ROWS)

    def _to_row(self, y: int) -> None:
        """Rows below the printed text are blank screen rows: create them."""
        top = self._top()
        self.y = min(max(y, top), top + ROWS - 1)
        while len(self.lines) <= self.y:
            self.lines.append(_line())

    def carriage_return(self) -> None:
        self.x = 0

    def linefeed(self) -> None:
        # A bare LF also returns to column 0: a PTY turns "\n" into "\r\n"
        # anyway (onlcr), and text fed from elsewhere means a new line by it.
        self.y += 1
        self.x = 0
        if self.y == len(self.lines):
            self.lines.append(_line())

    def index(self) -> None:
        self.y += 1
        if self.y == len(self.lines):
            self.lines.append(_line())

    def reverse_index(self) -> None:
        self._to_row(self.y - 1)

    def backspace(self) -> None:
        self.x = max(self.x - 1, 0)

    def tab(self) -> None:
        self._to_column(self.x // 8 * 8 + 8)

    def _to_column(self, x: int) -> None:
        self.x = max(min(x, max(COLUMNS, len(self.lines[self.y][0]))), 0)

    def cursor_up(self, count: int = 0, *_: int, **__: bool) -> None:
        self._to_row(self.y - (count or 1))

    def cursor_down(self, count: int = 0, *_: int, **__: bool) -> None:
        self._to_row(self.y + (count or 1))

    def cursor_up1(self, count: int = 0, *_: int, **__: bool) -> None:
        self.cursor_up(count)
        self.x = 0

    def cursor_down1(self, count: int = 0, *_: int, **__: bool) -> None:
        self.cursor_down(count)
        self.x = 0

    def cursor_forward(self, count: int = 0, *_: int, **__: bool) -> None:
        self._to_column(self.x + (count or 1))

    def cursor_back(self, count: int = 0, *_: int, **__: bool) -> None:
        self.x = max(self.x - (count or 1), 0)

    def cursor_to_column(self, column: int = 0, *_: int, **__: bool) -> None:
        self._to_column(column - 1)

    def cursor_to_line(self, line: int = 0, *_: int, **__: bool) -> None:
        self._to_row(self._top() + max(line - 1, 0))

    def cursor_position(self, line: int = 0, column: int = 0, *_: int, **__: bool) -> None:
        self.cursor_to_line(line)
        self.cursor_to_column(column)

    def save_cursor(self) -> None:
        self._saved = Cursor(self.y, self.x, self.rendition, self.sgr)

    def restore_cursor(self) -> None:
        y, self.x, self.rendition, self.sgr = self._saved
        self._to_row(y)

    # -- erasing ------------------------------------------------------------
    # Blanks are default-rendition spaces; erasing up to the end of a line
    # shortens it instead, so no trailing blanks are made.

    def _blank(self, start: int, end: int) -> None:
        chars, sgrs = self.lines[self.y]
        if end >= len(chars):
            del chars[start:], sgrs[start:]
        elif start < end:
            chars[start:end] = " " * (end - start)
            sgrs[start:end] = [""] * (end - start)

    def erase_in_line(self, how: int = 0, *_: int, **__: bool) -> None:
        if how == 0:
            self._blank(self.x, len(self.lines[self.y][0]))
        elif how == 1:
            self._blank(0, self.x + 1)
        elif how == 2:
            self._blank(0, len(self.lines[self.y][0]))

    def erase_characters(self, count: int = 0, *_: int, **__: bool) -> None:
        self._blank(self.x, self.x + (count or 1))

    def delete_characters(self, count: int = 0, *_: int, **__: bool) -> None:
        chars, sgrs = self.lines[self.y]
        del chars[self.x:self.x + (count or 1)], sgrs[self.x:self.x + (count or 1)]

    def insert_characters(self, count: int = 0, *_: int, **__: bool) -> None:
        chars, sgrs = self.lines[self.y]
        count = min(count or 1, COLUMNS - len(chars))
        if self.x < len(chars) and count > 0:
            chars[self.x:self.x] = " " * count
            sgrs[self.x:self.x] = [""] * count

    def erase_in_display(self, how: int = 0, *_: int, **__: bool) -> None:
        if how == 0:
            del self.lines[self.y + 1:]
            self.erase_in_line(0)
        elif how == 1:
            for y in range(self._top(), self.y):
                self.lines[y] = _line()
            self.erase_in_line(1)
        elif how == 2:
            self._new_screen()
        # 3 erases the scrollback, which this view deliberately keeps.

    def _new_screen(self) -> None:
        """A blank screen below everything printed; the cursor keeps its row."""
        row = max(self.y - self._top(), 0)
        self.floor = len(self.lines) - (not self.lines[-1][0])
        self._to_row(self.floor + row)

    def set_mode(self, *modes: int, private: bool = False) -> None:
        if private and {47, 1047, 1049} & set(modes) and self._alt is None:
            self._alt = AltScreen(len(self.lines), self.floor, self.y, self.x)
            self.lines.append(_line())
            self.floor = self.y = len(self.lines) - 1

    def reset_mode(self, *modes: int, private: bool = False) -> None:
        if private and {47, 1047, 1049} & set(modes) and self._alt is not None:
            size, self.floor, self.y, self.x = self._alt
            del self.lines[size:]
            self._alt = None


def _ignore(self: _Lines, *args: object, **kwargs: object) -> None:
    """Events that leave no trace in the text: titles, other modes, charsets,
    bell, tab stops, margins, device reports, and pyte's ``debug`` for
    sequences it does not know."""


for _event in pyte.Stream.events:
    if not hasattr(_Lines, _event):
        setattr(_Lines, _event, _ignore)
