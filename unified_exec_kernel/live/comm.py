"""The kernel comm target `unified_exec`: the protocol (docs/protocol.md) over Jupyter comms.

A carrier and nothing more: a front end (the Sessions panel, an agent) opens
a comm; every message it sends goes to one `Endpoint`, and every answer goes
back on the comm. Handlers run on whichever thread ipykernel picks (a
subshell's, or the main one); each message is handed to the engine's loop,
where the sessions live, through the bridge, and answered from there
without waiting for the main thread.

Registering the target costs the kernel nothing more: the protocol
(endpoint, messages, notices) is imported when the first comm opens, so a
kernel no page or agent talks to, as many a hub runs, never holds it
(benchmarks/bench_costs.py).
"""

from __future__ import annotations

import asyncio

from ..core.manager import UnifiedExecSessionManager
from ..jupyter.bridge import Bridge
from ..jupyter.patches import route_by_own_subshell

COMM_TARGET = "unified_exec"


class UnifiedExecComm:
    """One open comm: its endpoint, and the `sessions_changed` events it is owed. Lives on the engine's loop."""

    def __init__(self, comm, manager: UnifiedExecSessionManager):
        from ..protocol.endpoint import Endpoint

        self.comm = comm
        self.manager = manager
        self.endpoint = Endpoint(manager, comm.send)
        self._change_pending = False
        self._stop_listening = lambda: None
        self._stop_notices = lambda: None

    def start(self) -> None:
        from ..protocol.messages import hello
        from ..protocol.notices import noticeboard

        self._loop = asyncio.get_running_loop()
        self._stop_listening = self.manager.add_listener(self._sessions_changed)
        self.comm.send(hello(self.manager))
        self._stop_notices = noticeboard(self.manager).listen(self.comm.send)

    def _sessions_changed(self) -> None:
        # Coalesce a burst of changes (close_all) into one event.
        if not self._change_pending:
            self._change_pending = True
            self._loop.call_soon(self._announce_change)

    def _announce_change(self) -> None:
        from ..protocol.messages import SESSIONS_CHANGED

        self._change_pending = False
        self.comm.send(SESSIONS_CHANGED)

    def close(self) -> None:
        self._stop_listening()
        self._stop_notices()
        self.endpoint.close()


def open_handler(manager: UnifiedExecSessionManager, bridge: Bridge):
    """The comm target's open handler, bound to the kernel's manager and the bridge to its loop.

    The handlers are registered before `on_open` returns, and each posts to
    the engine in order, so no message can overtake the comm's start. The
    comm keeps its handlers, and they keep the `UnifiedExecComm`, alive.
    """

    def on_open(comm, _open_msg) -> None:
        route_by_own_subshell(comm)
        peer = UnifiedExecComm(comm, manager)
        bridge.post(peer.start)
        comm.on_msg(lambda msg: bridge.post(peer.endpoint.receive, msg.get("content", {}).get("data")))
        comm.on_close(lambda _msg=None: bridge.post(peer.close))

    return on_open
