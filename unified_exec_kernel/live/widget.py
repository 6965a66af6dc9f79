"""`TerminalWidget`: a session as a real terminal (xterm.js) in the notebook.

Thin on purpose: the synced traits, a pointer to the front-end module, and
a carrier for the protocol's `attach`/`input`/`resize` (docs/protocol.md)
over the widget's custom messages, answered by the same `Endpoint` as the
comm. The view keeps working after its cell finished, and while other cells
run Python, because the endpoint runs on the engine's loop, not in the cell.
"""

from __future__ import annotations

import shlex

from IPython import get_ipython
from IPython.display import display
from traitlets import Bool, Int, Unicode

from . import frontend
from .loaded import LoadedWidget
from ..core.manager import UnifiedExecSessionManager
from ..core.models import exit_state
from ..jupyter.bridge import Bridge
from ..jupyter.current import current_engine, direct_kernel_id
from ..jupyter.patches import route_by_own_subshell
from ..protocol import Endpoint
from ..screen.html import screen_html
from ..screen.render import render_terminal_text

WIDGET_MESSAGES = ("attach", "input", "resize")

class TerminalWidget(LoadedWidget):
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
        self._handles: list = []  # the displays of this widget, refreshed with its screen
        self._session = session
        self._bridge = bridge
        self._endpoint = Endpoint(manager, self.send, session=session, types=WIDGET_MESSAGES)
        bridge.call(self._watch_exit)
        # Messages may arrive on a subshell's thread: each goes to the engine's
        # loop, and the echo goes out from there, whatever the main thread does.
        route_by_own_subshell(self.comm)

    def on_custom(self, content, _buffers) -> None:
        self._bridge.post(self._endpoint.receive, content)

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
        self.refresh()

    def close(self) -> None:
        endpoint = getattr(self, "_endpoint", None)
        if endpoint is not None:
            self._bridge.post(endpoint.close)
        super().close()

    # -- what a page without the live view shows ---------------------------------

    def _ipython_display_(self) -> None:
        """Displayed with an id, so the snapshot is refreshed when the cell finishes and when the session ends."""
        bundle, metadata = self._repr_mimebundle_()
        self._handles.append(display(bundle, metadata=metadata, raw=True, display_id=True))
        shell = get_ipython()
        if shell is not None:
            shell.events.register("post_run_cell", self._refresh_after_cell)

    def _refresh_after_cell(self, *_result) -> None:
        get_ipython().events.unregister("post_run_cell", self._refresh_after_cell)
        self.refresh()

    def refresh(self) -> None:
        """Bring the static snapshot (the `text/html` of each display and `screen_html`) up to date.

        On the kernel's main thread. A live view that renders the update
        again keeps its terminal (the front end adopts it), so this is safe
        while someone types.
        """
        if self.comm is None:
            return  # closed: nothing shows it any more
        bundle, metadata = self._repr_mimebundle_()
        for handle in self._handles:
            handle.update(bundle, metadata=metadata, raw=True)

    def _repr_mimebundle_(self, **kwargs):
        """The view, and for pages without it (GitHub, nbviewer, an HTML export) the terminal's last screen."""
        bundle, metadata = super()._repr_mimebundle_(**kwargs)
        note = ""
        if not frontend.built():
            bundle, note = {}, f"\n[{frontend.NOT_BUILT}]"  # no view could render: front ends show the text
        (_, scrollback), (rows, cols) = self._bridge.call(_screen_of, self._session)
        text = scrollback.decode("utf-8")
        state = exit_state(self.alive, self.exit_code, self.closed)
        caption = f"live terminal: session {self.session_id} ({self.title}), {state}"
        self.with_screen(bundle, screen_html(text, rows, cols), caption)
        snapshot = render_terminal_text(text).rstrip("\n")
        bundle["text/plain"] = f"{snapshot}\n[{caption}]{note}".lstrip("\n")
        return bundle, metadata


def _screen_of(session):
    return session.scrollback_snapshot(), session.size


class LiveViews:
    """What `%%uexec --live` shows: a `TerminalWidget` of the kernel's manager, or why it cannot."""

    def __init__(self, manager: UnifiedExecSessionManager, bridge: Bridge):
        self.manager = manager
        self.bridge = bridge

    def __call__(self, session_id: int) -> TerminalWidget:
        return TerminalWidget(session_id, manager=self.manager, bridge=self.bridge)

    @staticmethod
    def replay(played, title: str):
        """What `%uexec_replay` shows: a player of `played` (core/journal/playback.py)."""
        from .replay import ReplayWidget

        return ReplayWidget(played, title=title)

    @staticmethod
    def unavailable() -> str | None:
        return None if frontend.built() else frontend.NOT_BUILT
