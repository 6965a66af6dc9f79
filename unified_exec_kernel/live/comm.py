"""The kernel comm target `unified_exec`: the protocol (docs/protocol.md) over Jupyter comms.

A carrier and nothing more: a front end (the Sessions panel, an agent) opens
a comm; every message it sends goes to one `Endpoint`, and every answer goes
back on the comm. Handlers may run on a subshell thread in ipykernel 7, so
each message hops onto the kernel's loop, where the sessions live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..core.manager import UnifiedExecSessionManager
from ..protocol import Endpoint, messages

COMM_TARGET = "unified_exec"


class UnifiedExecComm:
    """One open comm: its endpoint, and the `sessions_changed` events it is owed."""

    def __init__(self, comm, manager: UnifiedExecSessionManager, loop: asyncio.AbstractEventLoop):
        self.comm = comm
        self.loop = loop
        self.endpoint = Endpoint(manager, comm.send)
        self._change_pending = False
        self._stop_listening = manager.add_listener(self._sessions_changed)
        comm.on_msg(lambda msg: loop.call_soon_threadsafe(self.endpoint.receive, msg.get("content", {}).get("data")))
        comm.on_close(lambda _msg=None: loop.call_soon_threadsafe(self.close))
        comm.send(messages.hello(manager))

    def _sessions_changed(self) -> None:
        # Coalesce a burst of changes (close_all) into one event.
        if not self._change_pending:
            self._change_pending = True
            self.loop.call_soon(self._announce_change)

    def _announce_change(self) -> None:
        self._change_pending = False
        self.comm.send(messages.SESSIONS_CHANGED)

    def close(self) -> None:
        self._stop_listening()
        self.endpoint.close()


def open_handler(manager: UnifiedExecSessionManager, kernel_loop: Callable[[], asyncio.AbstractEventLoop]):
    """The comm target's open handler, bound to the kernel's manager and its loop.

    The comm keeps its handlers, and they keep the `UnifiedExecComm`, alive.
    """

    def on_open(comm, _open_msg) -> None:
        loop = kernel_loop()
        loop.call_soon_threadsafe(UnifiedExecComm, comm, manager, loop)

    return on_open
