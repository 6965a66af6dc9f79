"""`TerminalWidget`: a session as a real terminal (xterm.js) in the notebook.

Thin on purpose: the synced traits, a pointer to the front-end module, and
a carrier for the protocol's `attach`/`input`/`resize` (docs/protocol.md)
over the widget's custom messages, answered by the same `Endpoint` as the
comm. The view keeps working after its cell finished, and while other cells
run Python, because the endpoint runs on the engine's loop, not in the cell.
"""

from __future__ import annotations

import shlex

import anywidget
from traitlets import Bool, Int, Unicode

from . import frontend
from ..core.manager import UnifiedExecSessionManager
from ..core.models import exit_state
from ..jupyter.bridge import Bridge
from ..jupyter.current import current_engine, direct_kernel_id
from ..jupyter.patches import route_by_own_subshell
from ..protocol import Endpoint
from ..screen.render import render_terminal_text

WIDGET_MESSAGES = ("attach", "input", "resize")

class TerminalWidget(anywidget.AnyWidget):
    _esm = frontend.esm()
    _css = frontend.css()

    session_id = Int(help="the session shown").tag(sync=True)
    title = Unicode(help="the session's command").tag(sync=True)
    alive = Bool(True, help="whether the program still runs").tag(sync=True)
    exit_code = Int(None, allow_none=True, help="the exit code once it has exited").tag(sync=True)
    closed = Bool(False, help="it ended because the session was closed (a kill), not on its own").tag(sync=True)
    kernel_id = Unicode(help="the kernel's id, for the direct channel (docs/protocol.md); empty: use widget messages").tag(sync=True)

    def __init__(self, session_id: int, *, manager: UnifiedExecSessionManager | None = None, bridge: Bridge | None = None, **kwargs):
        """`manager` and the `bridge` to its loop default to the running kernel's."""
        if manager is None:
            manager, bridge = current_engine()
        if bridge is None:
            raise ValueError("a TerminalWidget given a manager needs the bridge to its loop too")
        # Looked up before the widget exists, so a bad id leaves nothing half-built.
        session = bridge.call(manager.session, session_id)
        super().__init__(session_id=session_id, title=shlex.join(session.command), kernel_id=direct_kernel_id(), **kwargs)
        self._session = session
        self._bridge = bridge
        self._endpoint = Endpoint(manager, self.send, session=session, types=WIDGET_MESSAGES)
        bridge.call(self._watch_exit)
        # Messages may arrive on a subshell's thread: each goes to the engine's
        # loop, and the echo goes out from there, whatever the main thread does.
        route_by_own_subshell(self.comm)
        self.on_msg(lambda _widget, content, _buffers: bridge.post(self._endpoint.receive, content))

    def _watch_exit(self) -> None:
        """On the engine: hear the exit (before any `exited` is sent); output streams from the view's first `attach`.

        Not before it: a view on the direct channel never attaches here, and
        every byte sent on the comm too would cost the kernel and the page twice.
        """
        self._session.on_exit(lambda session: self._bridge.to_kernel(self._on_exit, session.exit_code, session.closed))

    def _on_exit(self, exit_code: int | None, closed: bool = False) -> None:
        # On the kernel's main thread: a widget's traits change on one thread only.
        self.closed = closed  # before `alive`: the view words the exit as it learns it
        self.alive = False
        self.exit_code = exit_code

    def close(self) -> None:
        endpoint = getattr(self, "_endpoint", None)
        if endpoint is not None:
            self._bridge.post(endpoint.close)
        super().close()

    def _repr_mimebundle_(self, **kwargs):
        """Without the front end (an exported notebook), a readable snapshot of the terminal."""
        bundle, metadata = super()._repr_mimebundle_(**kwargs)
        note = ""
        if not frontend.built():
            bundle, note = {}, f"\n[{frontend.NOT_BUILT}]"  # no view could render: front ends show the text
        _, scrollback = self._bridge.call(self._session.scrollback_snapshot)
        snapshot = render_terminal_text(scrollback.decode("utf-8")).rstrip("\n")
        state = exit_state(self.alive, self.exit_code, self.closed)
        bundle["text/plain"] = f"{snapshot}\n[live terminal: session {self.session_id} ({self.title}), {state}]{note}".lstrip("\n")
        return bundle, metadata


class LiveViews:
    """What `%%uexec --live` shows: a `TerminalWidget` of the kernel's manager, or why it cannot."""

    def __init__(self, manager: UnifiedExecSessionManager, bridge: Bridge):
        self.manager = manager
        self.bridge = bridge

    def __call__(self, session_id: int) -> TerminalWidget:
        return TerminalWidget(session_id, manager=self.manager, bridge=self.bridge)

    @staticmethod
    def unavailable() -> str | None:
        return None if frontend.built() else frontend.NOT_BUILT
