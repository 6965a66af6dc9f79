"""`TerminalWidget`: a session as a real terminal (xterm.js) in the notebook.

Thin on purpose: the synced traits, a pointer to the front-end module
(labextension/), and the widget's custom messages carrying the protocol's
`attach`/`data`/`input`/`resize`/`exited` (docs/protocol.md) through the same
`LiveFeed` the comm uses. The view keeps working after its cell finished,
because the feed runs on the kernel's loop, not in the cell.
"""

from __future__ import annotations

import asyncio
import shlex

import anywidget
from traitlets import Bool, Int, Unicode

from . import frontend
from .core.feed import LiveFeed
from .core.manager import UnifiedExecSessionManager
from .core.protocol import BadRequest, input_text, terminal_size
from .render import render_terminal_text


class TerminalWidget(anywidget.AnyWidget):
    _esm = frontend.esm()
    _css = frontend.css()

    session_id = Int(help="the session shown").tag(sync=True)
    title = Unicode(help="the session's command").tag(sync=True)
    alive = Bool(True, help="whether the program still runs").tag(sync=True)
    exit_code = Int(None, allow_none=True, help="the exit code once it has exited").tag(sync=True)

    #: The kernel's manager; the extension sets it when it loads.
    manager: UnifiedExecSessionManager | None = None

    def __init__(self, session_id: int, *, manager: UnifiedExecSessionManager | None = None, **kwargs):
        manager = manager or type(self).manager
        if manager is None:
            raise RuntimeError("load the extension first: %load_ext unified_exec_kernel")
        session = manager.session(session_id)
        super().__init__(session_id=session_id, title=shlex.join(session.argv), **kwargs)
        self._session = session
        self._loop = asyncio.get_running_loop()
        # Before the feed's, so `alive`/`exit_code` are current when `exited` arrives.
        session.add_exit_callback(self._on_exit)
        self._feed = LiveFeed(session, self.send)
        self.on_msg(self._on_front_end_msg)

    def _on_exit(self, session) -> None:
        self.alive = False
        self.exit_code = session.exit_code

    def _on_front_end_msg(self, _widget, content, _buffers) -> None:
        # Widget messages may arrive on a subshell thread; the session lives on the loop.
        self._loop.call_soon_threadsafe(self._handle, content)

    def _handle(self, content) -> None:
        if not isinstance(content, dict):
            return
        request_id = content.get("request_id")
        try:
            kind = content.get("type")
            if kind == "attach":
                self._feed.replay(request_id)
            elif kind == "input":
                self._session.write(input_text(content))
            elif kind == "resize":
                self._session.resize(*terminal_size(content))
            else:
                raise BadRequest(f"unknown message type {kind!r}")
        except Exception as error:  # a bad message must never break the view or the kernel
            name = getattr(error, "name", "BadRequest")
            self.send({"type": "error", "request_id": request_id, "error": name, "message": str(error)})

    def close(self) -> None:
        self._feed.close()
        super().close()

    def _repr_mimebundle_(self, **kwargs):
        """Without the front end (an exported notebook), a readable snapshot of the terminal."""
        bundle, metadata = super()._repr_mimebundle_(**kwargs)
        note = ""
        if not frontend.built():
            bundle, note = {}, f"\n[{frontend.NOT_BUILT}]"  # no view could render: front ends show the text
        _, text = self._session.scrollback_snapshot()
        state = "running" if self.alive else f"exited with code {self.exit_code}"
        snapshot = render_terminal_text(text).rstrip("\n")
        bundle["text/plain"] = f"{snapshot}\n[live terminal: session {self.session_id} ({self.title}), {state}]{note}".lstrip("\n")
        return bundle, metadata
