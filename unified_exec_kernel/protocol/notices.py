"""What a person wants to hear of while not looking: a session ended, or printed the line a wait was for.

A training run ends after two hours while its notebook sits in another tab;
the line a `--until` or a `watch` waited for arrives while the view is
scrolled away. The page decides whether anyone is looking (a view of the
session in sight) and tells the person in JupyterLab's notification center
(labextension/src/notify.ts); the kernel's part is to say it happened, once,
to every peer that listens: one `session_event` per end or match
(docs/protocol.md). Each kernel's manager has one noticeboard; comms and
direct-channel connections listen while they are open.

An end is told only for a session seen running (one that had ended before
anyone listened is old news), and not for one closed on purpose (a kill,
the kernel's shutdown): the person who closed it knows. Nobody closed it
on purpose when the server culls the kernel as idle: the kernel cannot know
that by itself, so the server extension tells it just before the shutdown
(server/culling.py), and each running session is told as `culled`.
"""

from __future__ import annotations

import logging
import re
import time
import weakref
from collections.abc import Callable

from ..core.completion.collect import compile_until, shown_lines
from ..core.manager import UnifiedExecSessionManager
from ..core.session import PtySession
from . import messages

log = logging.getLogger(__name__)

LINE_MAX_CHARS = 200
"""A matched line is cut to this: a notification is a line, not a page."""

Listener = Callable[[dict], None]


class Noticeboard:
    """One manager's ends and matches, told to whoever listens. Lives on the engine's loop."""

    def __init__(self, manager: UnifiedExecSessionManager):
        self._manager = manager
        self._listeners: list[Listener] = []
        self._running: set[int] = set()
        self._stop = lambda: None

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hear every `session_event` from now on; returns the function that stops it."""
        if not self._listeners:
            self._running = {info.session_id for info in self._manager.list_sessions() if info.alive}
            self._stop = self._manager.add_listener(self._changed)
        self._listeners.append(listener)

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
                if not self._listeners:
                    self._stop()

        return stop

    def matched(self, session: PtySession, until: str | None, output: str, by: str) -> None:
        """A wait (`by`: "until", a cell's or a request's; "watch") ended on a line matching `until`."""
        if not self._listeners or until is None:
            return
        self._tell(messages.session_event(session, "matched", time.time() - session.started, line=matched_line(until, output), by=by))

    def culled(self, idle_seconds: float) -> list[PtySession]:
        """The server is shutting this kernel down as idle for `idle_seconds`: the sessions it ends, each told
        (`culled`) and noted (what its views and listing say instead of the signal that will end it)."""
        ending = [self._manager.session(info.session_id) for info in self._manager.list_sessions() if info.alive]
        for session in ending:
            session.note = f"ended: its kernel was culled as idle after {culled_after(idle_seconds)}"
            self._running.discard(session.session_id)
            if self._listeners:
                self._tell(messages.session_event(session, "culled", time.time() - session.started, idle_seconds=idle_seconds))
        return ending

    def _changed(self) -> None:
        for info in self._manager.list_sessions():
            if info.alive:
                self._running.add(info.session_id)
            elif info.session_id in self._running:
                self._running.discard(info.session_id)
                session = self._manager.session(info.session_id)  # still listed: no lookup can fail
                if not session.closed:
                    self._tell(messages.session_event(session, "exited", time.time() - session.started))

    def _tell(self, event: dict) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # noqa: BLE001 - one peer's failure is not another's
                log.exception("uexec: a session_event listener failed")


_BOARDS: weakref.WeakKeyDictionary[UnifiedExecSessionManager, Noticeboard] = weakref.WeakKeyDictionary()


def noticeboard(manager: UnifiedExecSessionManager) -> Noticeboard:
    """The one noticeboard of `manager`."""
    board = _BOARDS.get(manager)
    if board is None:
        board = _BOARDS[manager] = Noticeboard(manager)
    return board


def matched_line(until: str, output: str) -> str:
    """The first line of `output` that `until` matches (the one that ended the wait), as a person reads it."""
    pattern = compile_until(until)
    lines = shown_lines(output)
    found = next((line for line in lines if pattern.search(line)), None)
    if found is None:  # matched across what the terminal drew (a redrawn line): say the pattern
        found = until
    found = found.strip()
    return found if len(found) <= LINE_MAX_CHARS else found[: LINE_MAX_CHARS - 1] + "…"


def culled_after(idle_seconds: float) -> str:
    """"12 min", "45 s": how long the kernel had been idle, as the culler's timeout is usually set."""
    whole = max(0, round(idle_seconds))
    return f"{whole} s" if whole < 120 else f"{round(whole / 60)} min"
