"""The command line a person saw: the shell's echo replayed on a small terminal model.

A line editor does not echo a command once: it redraws. bash after Ctrl+U
goes back with `\\r` and moves forward by the prompt's width (readline counts
from column 0, where the prompt starts), zsh moves with `ESC[nD` and writes
spaces over what it erased, Ctrl+A then a key inserts with `ESC[@`, a line
longer than the terminal wraps and is redrawn from rows above (`ESC[A`).
Reading the bytes as text keeps what was erased (`echo some long textecho
via-enter`); only replaying them as a terminal would gives what was on the
screen when Enter was pressed. So the recorder keeps the bytes from the
prompt's start (OSC 133 A, column 0 for the line editor) to the command's
start (C), with where the prompt ended (B), and this module replays them:
cells in rows as wide as the terminal, autowrap (deferred, as xterm does),
cursor moves, erases, inserts and deletes; every other sequence draws nothing.
The command is what the rows hold from B's cell on: a row the terminal wrapped
goes on in the next, a row ended by a line feed ends a line of the command,
and such a line starts with the shell's continuation prompt (bash's `> `,
zsh's `for> `, `dquote> `...), which is taken off.

Rows are not a screen: there is no bottom to scroll at (an echo is bounded),
and a move up stops at the first row the echo drew on.
"""

from __future__ import annotations

import re
import unicodedata

MAX_LABEL_CHARS = 1000
MAX_ROWS = 1000
"""Rows the model keeps (an echo is bounded in bytes; this bounds a flood of line feeds in it)."""

_CSI = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_OTHER_ESCAPE = re.compile(r"\x1b[ -/]*[0-~]?")
# The continuation prompts bash (PS2 `> `) and zsh (`%_> `: the open constructs) print by default.
_PLAIN = re.compile(r"[ -~]+")
_CONTINUATION = re.compile(r"(?:[a-z]+ )*[a-z]*> ")


def command_text(echo: bytes, prompt_end: int | None = 0, *, cols: int = 80) -> str:
    """The command a terminal `cols` wide showed after replaying `echo` (from the prompt's start).

    `prompt_end`: the byte index in `echo` where the prompt ended (the last B); None: it never
    did (a shell that marks no prompt end), and nothing can tell the prompt from the command.
    """
    if prompt_end is None:
        return ""
    screen = _Screen(cols)
    screen.feed(echo[:prompt_end].decode("utf-8", "replace"))
    start = screen.position()
    screen.feed(echo[prompt_end:].decode("utf-8", "replace"))
    return screen.text_from(*start)[:MAX_LABEL_CHARS]


class _Screen:
    def __init__(self, cols: int):
        self.cols = max(1, cols)
        self.rows: list[list[str | None]] = [[]]  # None: a cell nothing is drawn in
        self.wrapped = [False]  # the row goes on in the next one (the terminal wrapped it)
        self.row = self.col = 0
        self.pending = False  # at the last column with a character written there: the next one wraps
        self.saved = (0, 0)

    def position(self) -> tuple[int, int]:
        """Where the next character goes."""
        return (self.row + 1, 0) if self.pending else (self.row, self.col)

    def feed(self, text: str) -> None:
        index, length = 0, len(text)
        while index < length:
            plain = _PLAIN.match(text, index)
            if plain is not None:  # most of an echo: drawn a row's worth at a time
                self._draw_plain(plain[0])
                index = plain.end()
                continue
            char = text[index]
            if char == "\x1b":
                index = self._escape(text, index)
                continue
            index += 1
            if char >= " " and char != "\x7f":
                self._draw(char)
            elif char == "\r":
                self.col, self.pending = 0, False
            elif char in "\n\x0b\x0c":
                self._move_to_row(self.row + 1)
            elif char == "\b":
                self.col, self.pending = max(self.col - 1, 0), False
            elif char == "\t":
                self.col, self.pending = min((self.col // 8 + 1) * 8, self.cols - 1), False

    # -- drawing -------------------------------------------------------------

    def _draw(self, char: str) -> None:
        width = _width(char)
        if width == 0:
            cells = self.rows[self.row]
            at = self.col if self.pending else self.col - 1
            if 0 <= at < len(cells) and cells[at]:
                cells[at] += char
            return
        if self.pending or self.col + width > self.cols:
            self.wrapped[self.row] = True
            self._move_to_row(self.row + 1)
            self.col = 0
        cells = self.rows[self.row]
        if len(cells) < self.col + width:
            cells.extend([None] * (self.col + width - len(cells)))
        cells[self.col] = char
        if width == 2:
            cells[self.col + 1] = ""  # the right half of a wide character
        if self.col + width >= self.cols:
            self.col, self.pending = self.cols - 1, True
        else:
            self.col += width

    def _draw_plain(self, run: str) -> None:
        """Printable ASCII, one cell each: as `_draw` would, a slice per row."""
        while run:
            if self.pending:
                self.wrapped[self.row] = True
                self._move_to_row(self.row + 1)
                self.col = 0
            piece, run = run[: self.cols - self.col], run[self.cols - self.col :]
            cells = self.rows[self.row]
            end = self.col + len(piece)
            if len(cells) < end:
                cells.extend([None] * (end - len(cells)))
            cells[self.col : end] = piece
            if end >= self.cols:
                self.col, self.pending = self.cols - 1, True
            else:
                self.col = end

    def _move_to_row(self, row: int) -> None:
        row = min(max(row, 0), MAX_ROWS - 1)
        while len(self.rows) <= row:
            self.rows.append([])
            self.wrapped.append(False)
        self.row, self.pending = row, False

    def _escape(self, text: str, index: int) -> int:
        csi = _CSI.match(text, index)
        if csi is not None:
            self._control(csi[1], csi[2])
            return csi.end()
        osc = _OSC.match(text, index)
        if osc is not None:
            return osc.end()
        other = _OTHER_ESCAPE.match(text, index)
        sequence = other[0]
        if sequence == "\x1b7":
            self.saved = (self.row, self.col)
        elif sequence == "\x1b8":
            self._move_to_row(self.saved[0])
            self.col = self.saved[1]
        elif sequence == "\x1bM":
            self._move_to_row(self.row - 1)
        elif sequence == "\x1bD":
            self._move_to_row(self.row + 1)
        elif sequence == "\x1bE":
            self._move_to_row(self.row + 1)
            self.col = 0
        return max(other.end(), index + 1)

    def _control(self, parameters: str, final: str) -> None:
        if parameters.startswith(("?", ">", "<", "=")):
            return  # private modes (bracketed paste, cursor keys): nothing drawn
        numbers = [int(part) if part.isdigit() else 0 for part in parameters.split(";")] if parameters else []
        first = numbers[0] if numbers else 0
        count = max(first, 1)
        cells = self.rows[self.row]
        if final == "A":
            self._move_to_row(self.row - count)
        elif final == "B" or final == "e":
            self._move_to_row(self.row + count)
        elif final == "C" or final == "a":
            self.col, self.pending = min(self.col + count, self.cols - 1), False
        elif final == "D":
            self.col, self.pending = max(self.col - count, 0), False
        elif final in "EF":
            self._move_to_row(self.row + (count if final == "E" else -count))
            self.col = 0
        elif final in "G`":
            self.col, self.pending = min(count, self.cols) - 1, False
        elif final in "Hf":
            self._move_to_row(count - 1)
            self.col = min(max(numbers[1] if len(numbers) > 1 else 1, 1), self.cols) - 1
        elif final == "d":
            self._move_to_row(count - 1)
        elif final == "K":
            if first == 0:
                del cells[self.col :]
                self.wrapped[self.row] = False
            elif first == 1:
                cells[: self.col + 1] = [None] * min(self.col + 1, len(cells))
            elif first == 2:
                cells.clear()
                self.wrapped[self.row] = False
        elif final == "J":
            if first == 0:
                del cells[self.col :]
                del self.rows[self.row + 1 :], self.wrapped[self.row + 1 :]
                self.wrapped[self.row] = False
            elif first == 1:
                cells[: self.col + 1] = [None] * min(self.col + 1, len(cells))
                for row in range(self.row):
                    self.rows[row] = []
            elif first in (2, 3):
                self.rows = [[] for _ in self.rows]
                self.wrapped = [False for _ in self.wrapped]
        elif final == "@":
            if self.col < len(cells):
                cells[self.col : self.col] = [None] * count
                del cells[self.cols :]
        elif final == "P":
            del cells[self.col : self.col + count]
        elif final == "X":
            end = min(self.col + count, len(cells))
            cells[self.col : end] = [None] * max(end - self.col, 0)
        elif final == "s":
            self.saved = (self.row, self.col)
        elif final == "u":
            self._move_to_row(self.saved[0])
            self.col = self.saved[1]

    # -- reading -------------------------------------------------------------

    def text_from(self, row: int, col: int) -> str:
        """What the rows hold from (row, col) on: wrapped rows joined, others a line each."""
        lines: list[str] = []
        current = ""
        continued = False  # the row goes on from the one above
        for number in range(row, len(self.rows)):
            cells = self.rows[number][col if number == row else 0 :]
            while cells and cells[-1] is None:
                cells.pop()
            text = "".join(" " if cell is None else cell for cell in cells)
            if not continued and number != row:
                prompt = _CONTINUATION.match(text)
                if prompt is not None:
                    text = text[prompt.end() :]
            current += text
            continued = self.wrapped[number]
            if not continued:
                lines.append(current.rstrip())
                current = ""
        if current:
            lines.append(current.rstrip())
        return "\n".join(line for line in lines if line.strip())


def _width(char: str) -> int:
    """Cells a character takes: 0 for combining marks and format characters, 2 for wide ones."""
    if char < "\u0300":
        return 1
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
