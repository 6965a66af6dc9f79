"""The live view's front end: the anywidget module npm builds into static/, or what stands in for it.

`pip install` builds the module with Node (labextension/, `npm run build:widget`)
and the wheel ships it, so users need no Node and no extension: anywidget's own
front end loads it in JupyterLab, Notebook 7, Voilà, VS Code, Colab or marimo.
A source install without Node has no module; then `TerminalWidget` shows its
text snapshot instead of a view that could never render (see `built()`), and a
view rendered anyway (inside a container widget) says why in one line.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "static"
ESM = STATIC / "terminal-widget.js"
CSS = STATIC / "terminal-widget.css"

NOT_BUILT = "the live view's front end was not built (Node.js was missing at install): reinstall with npm on PATH"

# Several lines on purpose: anywidget takes a one-line string ending in `.js` for a file name.
_STAND_IN = f"""// unified-exec-kernel: {NOT_BUILT}
export default {{
  render({{ el }}) {{
    el.textContent = {('[' + NOT_BUILT + ']')!r};
  }}
}};
"""


def built() -> bool:
    """Whether the module and its styles are there (checked at each display: a rebuild counts at once)."""
    return ESM.is_file() and CSS.is_file()


def esm() -> Path | str:
    """`_esm` for the widget class: the module's path, or the stand-in's source."""
    return ESM if built() else _STAND_IN


def css() -> Path | str:
    return CSS if built() else ""
