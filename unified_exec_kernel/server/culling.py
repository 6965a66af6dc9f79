"""A Jupyter server extension: a kernel culled as idle says which sessions ended with it, and why.

jupyter_server's culler shuts down a kernel idle longer than
`MappingKernelManager.cull_idle_timeout` with the same `shutdown_kernel` a
person's "Shut Down" calls: the kernel hears a `shutdown_request` and
cannot tell the two apart, so its sessions' views would show a kill.
The server knows, so this wraps the kernel manager's `cull_kernel_if_idle`
(the culler's one step per kernel) and, when a shutdown comes from inside
it, tells the kernel first over its direct channel (`culled`, with the idle
time): the kernel tells every listening page (`session_event` `culled`,
protocol/notices.py) and answers with the sessions that end, which this
logs as one warning line beside the culler's own. Then the shutdown goes
on as before. Telling is bounded (TELL_S): a kernel that does not answer,
or has no direct channel (not ours, the channel turned off), is culled all
the same, and the log says what is known.

Sessions keep a kernel from being culled on their own (jupyter/activity.py);
this covers the cull that happens anyway (a silent job under `output`, or
`none`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import os
from datetime import datetime, timezone

from ..protocol import frames
from ..protocol.address import find_socket

TELL_S = 3.0
"""Longest the culler waits for the kernel to hear why it ends (the kernel answers in milliseconds)."""

_culling: contextvars.ContextVar[str | None] = contextvars.ContextVar("uexec_culling", default=None)


def _load_jupyter_server_extension(serverapp) -> None:
    manager = serverapp.kernel_manager
    cull, shutdown = getattr(manager, "cull_kernel_if_idle", None), getattr(manager, "shutdown_kernel", None)
    if not (inspect.iscoroutinefunction(cull) and inspect.iscoroutinefunction(shutdown)):
        return  # not jupyter_server's culler (a gateway's manager, a custom one): left as it is, nothing said

    async def cull_kernel_if_idle(kernel_id, *args, **kwargs):
        token = _culling.set(kernel_id)
        try:
            return await cull(kernel_id, *args, **kwargs)
        finally:
            _culling.reset(token)

    async def shutdown_kernel(kernel_id, *args, **kwargs):
        if _culling.get() == kernel_id:
            await _say_culled(manager, kernel_id, serverapp.log)
        return await shutdown(kernel_id, *args, **kwargs)

    manager.cull_kernel_if_idle = cull_kernel_if_idle
    manager.shutdown_kernel = shutdown_kernel


async def _say_culled(manager, kernel_id: str, log) -> None:
    """Tell the kernel it is culled, and log which of its sessions end; never raises, never waits past TELL_S."""
    try:
        kernel = manager.get_kernel(kernel_id)
        idle_s = _idle_seconds(kernel)
        connection_file = getattr(kernel, "connection_file", None)
        path = find_socket(connection_file) if isinstance(connection_file, str) and os.path.isabs(connection_file) else None
    except Exception:  # noqa: BLE001 - the cull goes on whatever this cannot learn
        return
    if path is None:
        return  # no direct channel: not a uexec kernel, or its channel is off
    try:
        answer = await asyncio.wait_for(_tell(path, idle_s), TELL_S)
    except (OSError, asyncio.TimeoutError, ValueError) as error:
        log.warning("uexec: kernel %s culled as idle after %d s; its sessions, if any, end with it (the kernel did not say which: %s)",
                    kernel_id, idle_s, error or type(error).__name__)
        return
    sessions, after = list(answer.get("sessions") or []), answer.get("after") or f"{round(idle_s)} s"
    if sessions:
        log.warning("uexec: kernel %s culled as idle after %s; its sessions end with it: %s",
                    kernel_id, after, "; ".join(_session_line(s) for s in sessions))
    else:
        log.info("uexec: kernel %s culled as idle after %s; no session was running", kernel_id, after)


async def _tell(path: str, idle_s: float) -> dict:
    """`culled` on the kernel's direct socket; its answer (the sessions that end, the idle time in words)."""
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        request = {"type": "culled", "request_id": "culled", "idle_seconds": idle_s}
        writer.write(frames.text_frame(json.dumps(request).encode()))
        frame_reader = frames.FrameReader()
        while True:
            data = await reader.read(65536)
            if not data:
                raise ConnectionResetError("the kernel closed its socket")
            for kind, payload in frame_reader.feed(data):
                if kind != frames.TEXT:
                    continue
                message = json.loads(payload)
                if message.get("request_id") != "culled":
                    continue  # its hello, events
                if message.get("type") != "culled":
                    raise ValueError(message.get("message") or "the kernel refused `culled`")
                return message
    finally:
        writer.close()


def _idle_seconds(kernel) -> float:
    last = getattr(kernel, "last_activity", None)
    if not isinstance(last, datetime):
        return 0.0
    if last.tzinfo is None:  # jupyter_server's are aware, in UTC; an older one's naive UTC
        last = last.replace(tzinfo=timezone.utc)
    return max((datetime.now(timezone.utc) - last).total_seconds(), 0.0)


def _session_line(session: dict) -> str:
    command = " ".join(str(part) for part in session.get("command") or [])
    name = session.get("name")
    label = f"{session.get('session_id')} '{name}'" if name else str(session.get("session_id"))
    return f"{label} ({command[:80]})" if command else label
