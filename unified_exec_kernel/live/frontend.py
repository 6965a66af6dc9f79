"""The live view's front end: the anywidget module npm builds into static/, or what stands in for it.

`pip install` builds the module with Node (labextension/, `npm run build:widget`)
and the wheel ships it, so users need no Node and no extension: anywidget's own
front end loads it in JupyterLab, Notebook 7, Voilà, VS Code, Colab or marimo.

What a widget carries as `_esm` is a small loader (terminal-loader.js), not
the module: anywidget keeps `_esm` in the widget's state, and a notebook
saved with its widget state (JupyterLab's option, nbclient by default) held
one ~350 KB copy of xterm.js per live view. The loader asks the kernel for
the module over the widget's own messages, once per page (`module`), so it
works wherever widget messages do and needs no URL and no network.

Behind a gateway a page gets no buffers: a notebook server in gateway mode
relays the kernel's websocket as text and drops, with the rest of that
connection, any binary message (jupyter_server's gateway client decodes it as
UTF-8). There the widget carries the module itself (`whole()`), as `_esm`
and `_css`, at the cost the loader saves elsewhere.

A source install without Node has no module; then `TerminalWidget` shows its
text snapshot instead of a view that could never render (see `built()`), and
a view rendered anyway (inside a container widget) says why in one line.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "static"
LOADER = STATIC / "terminal-loader.js"
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
    """Whether the loader, the module and its styles are there (checked at each display: a rebuild counts at once)."""
    return LOADER.is_file() and ESM.is_file() and CSS.is_file()


def esm() -> Path | str:
    """`_esm` for the widget class: the loader's path, or the stand-in's source."""
    return LOADER if built() else _STAND_IN


def module() -> tuple[str, bytes, bytes] | None:
    """(hash, module, styles) for the loader, or None when not built."""
    if not built():
        return None
    return _read(ESM.stat().st_mtime_ns, CSS.stat().st_mtime_ns)


def whole() -> tuple[str, str] | None:
    """(module, styles) as text, for an `_esm` and `_css` that need no `module` message; None when not built."""
    found = module()
    return None if found is None else (found[1].decode("utf-8"), found[2].decode("utf-8"))


def module_hash() -> str:
    found = module()
    return found[0] if found is not None else ""


@functools.lru_cache(maxsize=1)
def _read(_esm_mtime: int, _css_mtime: int) -> tuple[str, bytes, bytes]:
    script, styles = ESM.read_bytes(), CSS.read_bytes()
    return hashlib.sha256(script + b"\0" + styles).hexdigest()[:16], script, styles
