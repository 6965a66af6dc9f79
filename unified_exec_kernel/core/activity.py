"""Whether a manager's sessions did something since the last look: what keeps a kernel from being culled.

A session's output reaches its journal and its views, never the kernel's
IOPub, so a server that culls idle kernels sees an idle kernel while a
training run prints every second. Jupyter's face (jupyter/activity.py)
asks this once an interval and, on a yes, tells the server. What counts is
the user's choice: `output` (a session printed), `running` (a session is
alive: a silent job) or `none` (sessions never keep a kernel).
"""

from __future__ import annotations

from .manager import UnifiedExecSessionManager

MODES = ("output", "running", "none")


class ActivityWatch:
    """Compares each running session's output count with the last look's; lives on the manager's loop."""

    def __init__(self, manager: UnifiedExecSessionManager, mode: str = "output"):
        if mode not in MODES:
            raise ValueError(f"activity must be one of {', '.join(MODES)}, not {mode!r}")
        self._manager = manager
        self.mode = mode
        self._seen: dict[int, int] = {}  # session id -> output bytes at the last look

    def active(self) -> bool:
        """Whether the sessions count as activity since the last call (the first call: since they started)."""
        if self.mode == "none":
            return False
        seen, printed, running = {}, False, False
        for info in self._manager.list_sessions():
            offset = self._manager.session(info.session_id).offset
            seen[info.session_id] = offset
            running = running or info.alive
            # A session that ended since the last look may have printed its last words first.
            printed = printed or offset > self._seen.get(info.session_id, 0)
        self._seen = seen
        return running if self.mode == "running" else printed
