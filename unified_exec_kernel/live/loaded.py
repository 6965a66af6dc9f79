"""What every widget of the live face shares: the loader as its module, and a last screen.

A widget's `_esm` is kept in its state, and so in every notebook saved with
widget state; the views' code (xterm.js included) is too big to store once
per view. So each widget's module is the small loader (frontend.py), which
asks the widget for the real module with a `module` message and renders the
export the widget's `view` names. Where no kernel answers, the loader shows
`screen_html`, the last screen the kernel rendered, which every display
also carries as `text/html` for pages that cannot run a widget at all.
"""

from __future__ import annotations

import html

import anywidget
from traitlets import Unicode

from . import frontend
from ..jupyter.remote import behind_gateway


class LoadedWidget(anywidget.AnyWidget):
    _esm = frontend.esm()
    _css = ""  # the loader brings the styles; behind a gateway the widget carries them (frontend.whole())

    view = Unicode("default", help="the export of the front-end module that renders this widget").tag(sync=True)
    screen_html = Unicode(help="the last screen as HTML: what a view shows without a kernel").tag(sync=True)
    frontend_hash = Unicode(help="which module the loader asks for (a page loads it once)").tag(sync=True)

    def __init__(self, **kwargs):
        whole = frontend.whole() if behind_gateway() else None  # its default export renders the widget's `view`
        if whole is not None:  # no buffer reaches the page: no loader that asks for them
            kwargs.update(_esm=whole[0], _css=whole[1])
        super().__init__(frontend_hash=frontend.module_hash(), **kwargs)
        self.on_msg(self._on_message)

    def _on_message(self, _widget, content, buffers) -> None:
        if isinstance(content, dict) and content.get("type") == "module":
            self._send_module()
        else:
            self.on_custom(content, buffers)

    def on_custom(self, content, buffers) -> None:
        """A custom message from a view, other than the loader's."""

    def _send_module(self) -> None:
        """The loader's request: the module and its styles, as buffers (never part of the saved state)."""
        module = frontend.module()
        if module is None:
            self.send({"type": "error", "error": "Internal", "message": frontend.NOT_BUILT})
            return
        digest, script, styles = module
        self.send({"type": "module", "hash": digest}, buffers=[script, styles])

    def with_screen(self, bundle: dict, screen: str, caption: str) -> dict:
        """`bundle` with the last screen as `text/html` (and kept in `screen_html` for the loader)."""
        self.screen_html = screen
        bundle["text/html"] = f'{screen}<div class="uexec-screen-caption">[{html.escape(caption)}]</div>'
        return bundle
