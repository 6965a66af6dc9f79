"""A terminal's last screen as HTML, colours kept: what a saved notebook shows without a kernel.

GitHub, nbviewer and `nbconvert --to html` cannot run the live view; they
show a display's `text/html`. The live view is a fixed grid (xterm.js), so
this is too: pyte's `Screen` at the session's size, fed the session's
output, read back row by row. (The cell view, render.py, is different on
purpose: it keeps every line and is not a grid.) Colours are the xterm.js
defaults the live view paints with, written as inline styles, which
nbconvert keeps and JupyterLab's sanitizer allows.
"""

from __future__ import annotations

import copy
import html
import inspect
from itertools import groupby

import pyte

from .render import feed

__all__ = ["screen_html"]

# xterm.js's default theme: what the live view shows.
BACKGROUND = "#000000"
FOREGROUND = "#ffffff"
_ANSI = {
    "black": "#2e3436",
    "red": "#cc0000",
    "green": "#4e9a06",
    "brown": "#c4a000",
    "blue": "#3465a4",
    "magenta": "#75507b",
    "cyan": "#06989a",
    "white": "#d3d7cf",
    "brightblack": "#555753",
    "brightred": "#ef2929",
    "brightgreen": "#8ae234",
    "brightbrown": "#fce94f",
    "brightblue": "#729fcf",
    "brightmagenta": "#ad7fa8",
    "brightcyan": "#34e2e2",
    "brightwhite": "#eeeeec",
}
_ALT_SCREEN_MODES = frozenset((47, 1047, 1049))
_BOX = (
    f"background:{BACKGROUND};color:{FOREGROUND};margin:0;padding:4px 6px;"
    "font-family:var(--jp-code-font-family,monospace);font-size:13px;line-height:1.2;"
    "white-space:pre;overflow-x:auto"
)


class _Screen(pyte.Screen):
    """pyte's screen with the alternate screen a full-screen program draws on,
    taking every CSI as a terminal does.

    pyte has no alternate screen: without it, the screen after `vim` or
    `less` would be theirs, where a terminal shows the shell again. And
    pyte's stream passes `private=True` and any number of parameters to
    events whose methods take neither (vim's `ESC[?4m` is SGR with
    private=True; `ESC[1;2A` gives cursor_up two): see `_csi_event`.
    """

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        self._main: tuple | None = None

    def set_mode(self, *modes: int, **kwargs) -> None:
        if kwargs.get("private") and _ALT_SCREEN_MODES.intersection(modes) and self._main is None:
            self._main = ({y: copy.copy(line) for y, line in self.buffer.items()}, self.cursor.x, self.cursor.y)
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs) -> None:
        if kwargs.get("private") and _ALT_SCREEN_MODES.intersection(modes) and self._main is not None:
            buffer, x, y = self._main
            self._main = None
            self.buffer.clear()
            self.buffer.update(buffer)
            self.dirty.update(range(self.lines))
            self.cursor.x, self.cursor.y = x, y
        super().reset_mode(*modes, **kwargs)


_PRIVATE_EVENTS = frozenset(("set_mode", "reset_mode", "erase_in_display", "erase_in_line"))


def _csi_event(name: str):
    """`_Screen`'s version of pyte's CSI event `name`: a private form it has no
    meaning for is ignored (a terminal does too: they are queries and xterm's
    own settings), and parameters beyond those the event takes are dropped."""
    base = getattr(pyte.Screen, name)
    positional = [
        p for p in inspect.signature(base).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "private"
    ][1:]  # self
    variadic = any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(base).parameters.values())
    keeps_private = name in _PRIVATE_EVENTS

    def event(self, *params: int, private: bool = False) -> None:
        if private and not keeps_private:
            return
        params = params if variadic else params[: len(positional)]
        if private:
            base(self, *params, private=True)
        else:
            base(self, *params)

    event.__name__ = name
    return event


for _name in sorted(set(pyte.Stream.csi.values())):
    if hasattr(pyte.Screen, _name) and _name not in vars(_Screen):
        setattr(_Screen, _name, _csi_event(_name))


def screen_html(text: str, rows: int, cols: int) -> str:
    """The screen a terminal of `rows` x `cols` shows after `text`, as one `<pre>`.

    `text` is the session's output (decoded); trailing blank rows are left
    out, so a short session is a short box.
    """
    screen = _Screen(max(cols, 1), max(rows, 1))
    feed(pyte.Stream(screen), text)
    shown = [_row_html(screen.buffer[y], screen.columns) for y in range(screen.lines)]
    while shown and not shown[-1]:
        shown.pop()
    body = "\n".join(shown)
    return f'<pre class="uexec-screen" style="{_BOX}">{body}</pre>'


def _row_html(row, columns: int) -> str:
    cells = [row[x] for x in range(columns)]
    while cells and cells[-1].data in ("", " ") and _style(cells[-1]) == "":
        cells.pop()
    parts = []
    for style, run in groupby(cells, key=_style):
        text = html.escape("".join(cell.data for cell in run))
        parts.append(f'<span style="{style}">{text}</span>' if style else text)
    return "".join(parts)


def _style(char) -> str:
    fg, bg = _colour(char.fg, FOREGROUND), _colour(char.bg, BACKGROUND)
    if char.reverse:
        fg, bg = bg, fg
    style = []
    if fg != FOREGROUND:
        style.append(f"color:{fg}")
    if bg != BACKGROUND:
        style.append(f"background:{bg}")
    if char.bold:
        style.append("font-weight:bold")
    if char.italics:
        style.append("font-style:italic")
    decorations = [name for name, on in (("underline", char.underscore), ("line-through", char.strikethrough)) if on]
    if decorations:
        style.append("text-decoration:" + " ".join(decorations))
    return ";".join(style)


def _colour(value: str, default: str) -> str:
    if value == "default":
        return default
    if value in _ANSI:
        return _ANSI[value]
    if len(value) == 6:
        try:
            int(value, 16)
        except ValueError:
            return default
        return f"#{value.lower()}"
    return default
