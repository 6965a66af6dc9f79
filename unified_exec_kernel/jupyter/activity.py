"""The kernel's sessions as activity to the Jupyter server: one IOPub message an interval, seen by no cell.

jupyter_server culls a kernel idle longer than `cull_idle_timeout`, idle
meaning no IOPub message it tracks; jupyterhub-singleuser reports the
server's `last_activity` (the latest of its kernels') to the hub's culler.
A session printing in the background publishes nothing there, so both saw
an idle kernel and ended it. A terminal's output counts (terminado); a
session's now does too, through the kernel's own messages, so it works
without our server extension (a hub image may lack it) and through any
server that watches a kernel's IOPub.

The message is `uexec_activity`, with no parent and an empty-ish content:
- jupyter_server counts every IOPub message whose type is not in its
  `untracked_message_types` (stream and status are; an unknown type is not),
  and it sets a kernel's execution state from `status` messages only, so
  the kernel is never shown busy for it;
- with no parent it belongs to no request: JupyterLab, Notebook 7 and
  Voilà (@jupyterlab/services) route IOPub to a request's future by the
  parent's msg_id and otherwise only look at status and comm types;
  nbclient and VS Code read only their cell's replies. No cell gets output.

One message per interval at most, and only while the engine runs (it starts
with the first session): the default, 15 s, is half the shortest cull
timeout people set (30 s) and a fortieth of mybinder.org's 10 minutes; four
small messages a minute cost nothing measurable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..core.activity import ActivityWatch

log = logging.getLogger(__name__)

MSG_TYPE = "uexec_activity"
DEFAULT_INTERVAL_S = 15.0


class ActivityBeacon:
    """An engine service (engine_thread.py): every `interval_s`, if `watch` says so, `publish()`."""

    def __init__(self, watch: ActivityWatch, publish: Callable[[], None], interval_s: float = DEFAULT_INTERVAL_S):
        self._watch = watch
        self._publish = publish
        self.interval_s = interval_s
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._watch.mode != "none":
            self._timer = loop.call_later(self.interval_s, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = loop.call_later(self.interval_s, self._tick, loop)
        try:
            if self._watch.active():
                self._publish()
        except Exception:  # noqa: BLE001 - a lost signal must not stop the next
            log.exception("uexec: telling the server of the sessions' activity failed")

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def release(self) -> None:
        pass


def iopub_publisher(kernel) -> Callable[[], None]:
    """Sends `uexec_activity` on `kernel`'s IOPub, from any thread (ipykernel queues every IOPub send
    to its IOPub thread), with no parent: no cell, no request owns it."""

    def publish() -> None:
        kernel.session.send(kernel.iopub_socket, MSG_TYPE, {}, parent=None, ident=kernel._topic(MSG_TYPE))

    return publish
