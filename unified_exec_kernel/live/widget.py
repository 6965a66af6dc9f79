"""`TerminalWidget`: a session as a real terminal (xterm.js) in the notebook.

Thin on purpose: the synced traits, a pointer to the front-end module, and
a carrier for the protocol's `attach`/`input`/`resize` (docs/protocol.md)
over the widget's custom messages, answered by the same `Endpoint` as the
comm. The view keeps working after its cell finished, and while other cells
run Python, because the endpoint runs on the engine's loop, not in the cell.
"""

from __future__ import annotations

import asyncio
import shlex
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

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
from ..protocol.endpoint import Endpoint
from ..screen.html import screen_html
from ..screen.render import render_terminal_text

WIDGET_MESSAGES = ("attach", "input", "resize")
#: Beside the widget's view, which session it shows and in which kernel: a
#: page whose widget model is gone (Restart Kernel, then a reload) finds the
#: session by it (labextension/src/reattach.ts), where a kept one runs on.
SESSION_MIME = "application/vnd.uexec.session+json"
#: While a displayed view's session prints, its saved screen (`screen_html`,
#: the widget state a saved notebook keeps) is brought up to date once output
#: has paused this long (one drawing for a burst, not one per chunk)...
SNAPSHOT_QUIET_S = 1.0
#: ...or, while output never pauses (a build's log), after this long anyway...
SNAPSHOT_MAX_WAIT_S = 3.0
#: ...and never more often than this many times its last drawing took (a full
#: scrollback is ~0.5 s of pyte): it is drawn on a worker thread, so neither
#: the kernel's loop nor the engine's waits for it, but it shares the GIL.
SNAPSHOT_COST_FACTOR = 5
_snapshot_worker: ThreadPoolExecutor | None = None
_snapshot_worker_lock = threading.Lock()


def _worker() -> ThreadPoolExecutor:
    global _snapshot_worker
    with _snapshot_worker_lock:
        if _snapshot_worker is None:
            _snapshot_worker = ThreadPoolExecutor(1, thread_name_prefix="uexec-snapshot")
        return _snapshot_worker

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
        self._snapshot_timer = None  # engine: a refresh is due (output came since the last)
        self._snapshot_busy = False  # a snapshot is being drawn or shown: output waits for the next
        self._snapshot_cost = 0.0  # seconds the last one took to draw
        self._output_since = self._output_at = 0.0  # engine loop times: first output not yet shown, the last output
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
        # Output alone, not a timer: nothing runs while the session is quiet.
        self._stop_snapshots = self._session.subscribe(self._output_came)
        self._session.on_exit(lambda _session: self._stop_snapshots())

    # -- the saved screen kept current while the session prints ------------------

    def _output_came(self, _data: bytes, _offset: int) -> None:
        """On the engine, per chunk: a time noted; at most one timer waits."""
        loop = asyncio.get_running_loop()
        self._output_at = loop.time()
        if self._snapshot_timer is None and not self._snapshot_busy and self._handles:
            self._output_since = self._output_at
            self._snapshot_timer = loop.call_later(SNAPSHOT_QUIET_S, self._snapshot_due)

    def _snapshot_due(self) -> None:
        """On the engine: once output paused (or waited long enough), draw it as it is now on the worker thread."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        quiet_at = self._output_at + SNAPSHOT_QUIET_S
        latest = self._output_since + max(SNAPSHOT_MAX_WAIT_S, SNAPSHOT_COST_FACTOR * self._snapshot_cost)
        if now < min(quiet_at, latest):
            self._snapshot_timer = loop.call_later(min(quiet_at, latest) - now, self._snapshot_due)
            return
        self._snapshot_timer = None
        if self.comm is None or not self._session.alive:
            return  # closed, or the exit's own refresh comes
        self._snapshot_busy = True
        (_, scrollback), (rows, cols) = _screen_of(self._session)
        drawn = _worker().submit(_draw, scrollback, rows, cols)
        drawn.add_done_callback(lambda done: self._bridge.to_kernel(self._show_snapshot, done))

    def _show_snapshot(self, drawn: Future) -> None:
        """On the kernel's main thread: the widget's state carries the drawn screen.

        Only `screen_html` (the saved widget state, and what a page without a
        kernel shows), not the displays: updating a display makes the page
        render the view again, and keys typed meanwhile (by someone typing
        into a terminal whose output is stopped, say) would go to the
        notebook. The displays' `text/html` follows when the cell ends and
        when the session ends; in JupyterLab and Notebook 7 the lab extension
        also writes the view's own screen into them just before each save
        (labextension/src/saving.ts), without rendering the view again.
        """
        try:
            if self.comm is not None and self.alive and drawn.exception() is None:
                self.screen_html, _text, self._snapshot_cost = drawn.result()
        finally:
            self._snapshot_busy = False

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
        (_, scrollback), (rows, cols) = self._bridge.call(_screen_of, self._session)
        html_screen, text, _cost = _draw(scrollback, rows, cols)
        return self._bundle(html_screen, text, **kwargs)

    def _bundle(self, html_screen: str, text: str, **kwargs):
        bundle, metadata = super()._repr_mimebundle_(**kwargs)
        note = ""
        if not frontend.built():
            bundle, note = {}, f"\n[{frontend.NOT_BUILT}]"  # no view could render: front ends show the text
        state = exit_state(self.alive, self.exit_code, self.closed)
        caption = f"live terminal: session {self.session_id} ({self.title}), {state}"
        self.with_screen(bundle, html_screen, caption)
        if bundle.get(WIDGET_VIEW):
            bundle[SESSION_MIME] = {"session_id": self.session_id, "kernel_id": self.kernel_id, "started": self._session.started, "title": self.title}
        bundle["text/plain"] = f"{text}\n[{caption}]{note}".lstrip("\n")
        return bundle, metadata


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _screen_of(session):
    return session.scrollback_snapshot(), session.size


def _draw(scrollback: bytes, rows: int, cols: int) -> tuple[str, str, float]:
    """The screen as HTML and the output as text (any thread), and the seconds it took."""
    started = time.perf_counter()
    text = scrollback.decode("utf-8", "replace")
    drawn = screen_html(text, rows, cols), render_terminal_text(text).rstrip("\n")
    return *drawn, time.perf_counter() - started


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
