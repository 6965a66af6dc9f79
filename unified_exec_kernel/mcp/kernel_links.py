"""The link to an attached kernel, found again after every restart, never waited on while no kernel answers.

An attached server is a client of a kernel id, not of one kernel process:
jupyter_client's restarts (polite, `now`, a server's REST call, its
auto-restart after a crash) keep the connection file and its ports and start
a new process; a shutdown removes the file. So a link serves one kernel
process, and `KernelLinks` finds the next one when it goes.

How a link learns that its kernel went away:

- the direct socket: the kernel's end closes with its process (EOF), at once;
- the comm: ZMQ reconnects by itself to whatever binds the ports next, and a
  new kernel drops messages for a comm it never opened, so a request would
  wait for ever. So the link ends at the first of: the kernel's TCP
  connection on the shell channel closing (ZMQ's socket monitor: the kernel's
  process ended, before any next kernel can start, so no request goes to a
  kernel that would drop it); its `shutdown_reply`, which ipykernel also
  publishes; a message in another session than the kernel_info reply's (every
  message a kernel publishes carries its session, and ipykernel greets each
  new subscriber, `iopub_welcome`); its heartbeat unanswered (a zmq device in
  a thread of its own, which a busy kernel still answers); its connection
  file gone.

Between links a task looks for the next one, as jupyter_client's restarter
and Codex's exec-server do (poll the address, resume by session): the
connection file, then the direct socket, else the heartbeat and the comm.
A call with no link waits LINK_WAIT_S for one, and longer (up to
START_WAIT_S) while a kernel answers the heartbeat: one starting slowly on a
loaded machine, or one being linked, is no dead one (the link's own
heartbeat ends the wait if it dies meanwhile). When no kernel answers, it
fails with GONE. A call waiting on a link that is lost fails with GONE too
(what it asked may or may not have run: nothing is sent twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import uuid

from ..protocol import frames
from ..protocol.address import find_socket

log = logging.getLogger(__name__)

GONE = "the kernel went away; it will be used again when it restarts"
TARGET = "unified_exec"
LINK_WAIT_S = 3.0
"""A call waits this long for a link, then one heartbeat (PING_S), when no kernel answers (the issue's bound is 5 s)."""
START_WAIT_S = 60.0
"""A call waits at most this long for a link while a kernel answers its heartbeat (one starting under load)."""
BEAT_S = 1.0
"""Between two heartbeats of a comm's kernel; one unanswered for BEAT_S ends the wait for it."""
BEAT_MISSES = 2
"""Heartbeats in a row unanswered before a comm's kernel counts as gone (death noticed within ~3 s)."""
ASK_AGAIN_S = 0.5
"""A comm's kernel_info, and its first `list`, asked again this often until answered."""
HANDSHAKE_S = 5.0
"""A direct socket's engine answers `agent` at once; one that does not is a kernel on its way out."""
SEEK_S = 0.1
"""Between two looks for the next kernel."""
PING_S = 0.5
"""A heartbeat asked while no link is up: a kernel that does not echo within it is not there (yet)."""


class KernelGone(ConnectionError):
    """No kernel answers on the connection file: the call's one line."""

    def __init__(self) -> None:
        super().__init__(GONE)


def connection_info(path: str) -> dict | None:
    """The connection file's contents, or None while it is missing or half written."""
    try:
        with open(path, encoding="utf-8") as file:
            info = json.load(file)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and "hb_port" in info else None


def channel_address(info: dict, port_name: str) -> str:
    """A channel's ZMQ address, as jupyter_client makes it."""
    if info.get("transport", "tcp") == "tcp":
        return f"tcp://{info.get('ip', '127.0.0.1')}:{info[port_name]}"
    return f"ipc://{info.get('ip', 'kernel-ipc')}-{info[port_name]}"


class Heartbeat:
    """The kernel's heartbeat channel: a ping it echoes. One REQ socket, made again after a ping goes unanswered."""

    def __init__(self, address: str):
        self.address = address
        self._socket = None

    async def beat(self, timeout: float) -> bool:
        import zmq
        import zmq.asyncio

        if self._socket is None:
            self._socket = zmq.asyncio.Context.instance().socket(zmq.REQ)
            self._socket.linger = 0
            self._socket.connect(self.address)
        try:
            await self._socket.send(b"ping")
            if await self._socket.poll(int(timeout * 1000), zmq.POLLIN):
                await self._socket.recv()
                return True
        except zmq.ZMQError:
            pass
        self.close()  # a REQ socket waits for its reply for ever: a fresh one for the next ping
        return False

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None


async def answers(info: dict) -> bool:
    """The kernel at these ports echoes one heartbeat within PING_S."""
    heartbeat = Heartbeat(channel_address(info, "hb_port"))
    try:
        return await heartbeat.beat(PING_S)
    finally:
        heartbeat.close()


class _Link:
    """What both carriers share: `lost` is done once the kernel process this link serves is gone."""

    name = ""

    def __init__(self, deliver):
        self._deliver = deliver
        self.lost: asyncio.Future = asyncio.get_running_loop().create_future()

    def _gone(self) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


class DirectLink(_Link):
    """The kernel's direct socket (protocol/direct.py): `T` frames both ways, on the engine's loop, never behind a cell."""

    name = "direct"

    def __init__(self, path: str, deliver):
        super().__init__(deliver)
        self.path = path
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None

    async def connect(self) -> None:
        """Connect and ask for the whole protocol on this connection (`agent`); an older kernel refuses: ConnectionError."""
        reader, self._writer = await asyncio.wait_for(asyncio.open_unix_connection(self.path, limit=frames.MAX_FRAME_BYTES + 64), HANDSHAKE_S)
        self.send({"type": "agent", "request_id": "agent"})
        answer = await asyncio.wait_for(self._handshake(reader), HANDSHAKE_S)
        if answer.get("type") != "ok":
            raise ConnectionError(f"the kernel's direct socket refused the agent: {answer.get('message')}")
        self._reader_task = asyncio.ensure_future(self._read(reader))

    @staticmethod
    async def _handshake(reader: asyncio.StreamReader) -> dict:
        while True:
            kind, length = frames.HEADER.unpack(await reader.readexactly(frames.HEADER.size))
            payload = await reader.readexactly(length)
            if kind == frames.TEXT and (answer := json.loads(payload)).get("request_id") == "agent":
                return answer

    def send(self, message: dict) -> None:
        self._writer.write(frames.text_frame(json.dumps(message).encode()))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                kind, length = frames.HEADER.unpack(await reader.readexactly(frames.HEADER.size))
                payload = await reader.readexactly(length)
                if kind == frames.TEXT:
                    self._deliver(json.loads(payload))
        except (asyncio.IncompleteReadError, OSError, ValueError):
            pass
        finally:
            self._gone()  # the kernel's end closed: its process ended (or its engine stopped)

    def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
        if self._writer is not None:
            self._writer.close()
        self._gone()


class CommLink(_Link):
    """The kernel's `unified_exec` comm through jupyter_client (where there is no direct socket).

    Comm messages go on the shell channel: one waits while a cell runs on the main shell.
    """

    name = "comm"

    def __init__(self, connection_file: str, info: dict, deliver):
        super().__init__(deliver)
        self.connection_file = connection_file
        self._info = info
        self._client = None
        self._comm_id = uuid.uuid4().hex
        self._kernel_session: str | None = None
        self._opened: asyncio.Future = asyncio.get_running_loop().create_future()
        self._tasks: list[asyncio.Task] = []
        self._monitor = None  # the shell socket's monitor, once the comm answered

    async def connect(self, timeout: float) -> None:
        """Open the comm, once the kernel answers a kernel_info (on control: a running cell does not hold it)."""
        from jupyter_client.asynchronous import AsyncKernelClient

        client = AsyncKernelClient()
        client.load_connection_info(self._info)
        client.start_channels(hb=False)  # our own heartbeat runs on this loop, no thread
        self._client = client
        self._tasks.append(asyncio.ensure_future(self._read()))
        self._tasks.append(asyncio.ensure_future(self._watch()))  # a kernel that dies while we link ends the attempt
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            # Asked again every ASK_AGAIN_S: a kernel on its way out (whose heartbeat still answered) drops
            # the question, and the one that replaces it on the same ports never sees it.
            asked: set[str] = set()
            reply = None
            while reply is None:
                if self.lost.done():
                    raise ConnectionError("the kernel went away before it answered")
                if loop.time() >= deadline:
                    raise TimeoutError(f"no kernel_info reply from the kernel of {self.connection_file}")
                request = client.session.msg("kernel_info_request", {})
                asked.add(request["header"]["msg_id"])
                client.control_channel.send(request)
                ask_by = min(deadline, loop.time() + ASK_AGAIN_S)
                while reply is None and loop.time() < ask_by:
                    with contextlib.suppress(queue.Empty, asyncio.TimeoutError):
                        answer = await client.get_control_msg(timeout=max(ask_by - loop.time(), 0.01))
                        if answer.get("parent_header", {}).get("msg_id") in asked:
                            reply = answer
            self._kernel_session = reply["header"].get("session")
            # What the kernel publishes before our subscription reaches it is lost (ZMQ's slow joiner), the
            # comm's hello included: a harmless `list`, asked again until one answer comes, says it is there.
            self._send("comm_open", {"comm_id": self._comm_id, "target_name": TARGET, "data": {}})
            while not self._opened.done():
                if self.lost.done():
                    raise ConnectionError("the kernel was replaced while its comm opened")
                if loop.time() >= deadline:
                    raise TimeoutError(f"the comm of the kernel of {self.connection_file} does not answer")
                self.send({"type": "list", "request_id": "comm-open"})
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._opened), min(ASK_AGAIN_S, max(deadline - loop.time(), 0.01)))
        except BaseException:
            self.close()
            raise
        self._tasks.append(asyncio.ensure_future(self._watch_connection()))

    def send(self, message: dict) -> None:
        self._send("comm_msg", {"comm_id": self._comm_id, "data": message})

    def _send(self, msg_type: str, content: dict) -> None:
        self._client.shell_channel.send(self._client.session.msg(msg_type, content))

    async def _read(self) -> None:
        """Our comm's messages; a message in another session than the kernel_info reply's is a new kernel's."""
        while True:
            msg = await self._client.get_iopub_msg()
            session = msg.get("header", {}).get("session")
            if self._kernel_session is None:
                continue  # a kernel we have not asked yet: perhaps the one on its way out
            if session is not None and session != self._kernel_session:
                log.info("uexec mcp: a new kernel publishes on %s", self.connection_file)
                self._gone()
                return
            if msg.get("msg_type") == "shutdown_reply":
                self._gone()  # a polite shutdown or restart: what we send next would reach the next kernel
                return
            content = msg.get("content", {})
            if msg.get("msg_type") == "comm_msg" and content.get("comm_id") == self._comm_id:
                if not self._opened.done():
                    self._opened.set_result(None)
                self._deliver(content.get("data") or {})

    async def _watch(self) -> None:
        """The heartbeat and the connection file, from the link's first question on (a kernel may die while it is linked)."""
        heartbeat = Heartbeat(channel_address(self._info, "hb_port"))
        misses = 0
        try:
            while not self.lost.done():
                if not os.path.exists(self.connection_file):
                    break  # shut down
                if await heartbeat.beat(BEAT_S):
                    misses = 0
                    await asyncio.sleep(BEAT_S)
                else:
                    misses += 1
                    if misses >= BEAT_MISSES:
                        break
        finally:
            heartbeat.close()
            self._gone()

    async def _watch_connection(self) -> None:
        """The shell channel's TCP connection to this kernel: it closes when the kernel's process ends.

        Started once the comm answered: the shell socket is then connected to
        the kernel that answered (its reply was in the kernel_info's session).
        """
        import zmq
        from zmq.utils.monitor import parse_monitor_message

        self._monitor = self._client.shell_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        try:
            while parse_monitor_message(await self._monitor.recv_multipart())["event"] != zmq.EVENT_DISCONNECTED:
                pass
            log.info("uexec mcp: the kernel of %s closed its connection", self.connection_file)
        finally:
            self._gone()

    def _stop_monitor(self) -> None:
        if self._monitor is not None:
            with contextlib.suppress(Exception):
                self._client.shell_channel.socket.disable_monitor()
            self._monitor.close(linger=0)
            self._monitor = None

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._client is not None:
            self._stop_monitor()
            with contextlib.suppress(Exception):
                self._send("comm_close", {"comm_id": self._comm_id, "data": {}})
            self._client.stop_channels()
            self._client = None
        self._gone()


class KernelLinks:
    """The current link to the kernel of a connection file, and the task that finds the next one.

    `carrier`: "auto" (the direct socket where there is one, else the comm),
    "direct" or "comm". `deliver(data)` gets every protocol message a kernel
    sends.
    """

    def __init__(self, connection_file: str, deliver, *, carrier: str = "auto"):
        self.connection_file = connection_file
        self._deliver = deliver
        self._carrier = carrier
        self._link: DirectLink | CommLink | None = None
        self._linked: asyncio.Event | None = None
        self._seeker: asyncio.Task | None = None
        self._connecting = False  # a kernel answered the heartbeat: a link to it is being made
        self._why: str | None = None  # why the last look found no link, for the first call's line

    @property
    def link(self) -> DirectLink | CommLink | None:
        return self._link if self._link is not None and not self._link.lost.done() else None

    async def current(self) -> DirectLink | CommLink:
        """The link to the kernel now; waits for one while a kernel answers, else raises KernelGone after LINK_WAIT_S."""
        link = self.link
        if link is not None:
            return link
        loop = asyncio.get_running_loop()
        if self._linked is None:
            self._linked = asyncio.Event()
        if self._seeker is None or self._seeker.done():
            self._seeker = asyncio.ensure_future(self._seek())
        asked = loop.time()
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._linked.wait(), SEEK_S)
            link = self.link
            if link is not None:
                return link
            waited = loop.time() - asked
            if waited >= START_WAIT_S or (waited >= LINK_WAIT_S and self._why is not None):
                break
            if waited < LINK_WAIT_S or self._connecting or await self._kernel_answers():
                continue  # a kernel is there and the seeker links it (its own heartbeat ends that if it dies)
            break
        if self._why is not None:
            raise ConnectionError(self._why)
        raise KernelGone()

    async def _kernel_answers(self) -> bool:
        """A kernel answers the connection file's heartbeat now (one starting, or one the seeker has not linked yet)."""
        info = connection_info(self.connection_file)
        return info is not None and await answers(info)

    async def relinked(self) -> None:
        """Until a link is up (no bound: for the watches, which outlive a kernel)."""
        while self.link is None:
            with contextlib.suppress(KernelGone, ConnectionError):
                await self.current()

    async def _seek(self) -> None:
        """Look for a kernel until one links; hold the link until it is lost; then again, for the server's life."""
        while True:
            link = None
            try:
                link = await self._attempt()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - a kernel half started or half gone: look again
                log.debug("uexec mcp: no link yet: %s", error)
            if link is None:
                await asyncio.sleep(SEEK_S)
                continue
            self._link = link
            self._why = None
            self._linked.set()
            await link.lost
            self._linked.clear()
            link.close()

    async def _attempt(self) -> DirectLink | CommLink | None:
        info = connection_info(self.connection_file)
        if info is None:
            return None
        link = await self._direct() if self._carrier != "comm" else None
        if link is not None:
            return link
        if not await answers(info):
            return None
        comm = CommLink(self.connection_file, info, self._deliver)
        self._connecting = True
        try:
            await comm.connect(timeout=START_WAIT_S)  # a kernel starting under load may take that long; asked again every ASK_AGAIN_S
        finally:
            self._connecting = False
        if self._carrier == "comm":
            return comm
        link = await self._direct()  # the comm's open started the kernel's engine, and with it the socket
        if link is not None:
            comm.close()
            return link
        if self._carrier == "auto":
            return comm
        comm.close()
        self._why = f"no direct socket beside {self.connection_file}"
        return None

    async def _direct(self) -> DirectLink | None:
        path = find_socket(self.connection_file)
        if path is None:
            return None
        link = DirectLink(path, self._deliver)
        try:
            await link.connect()
        except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            link.close()  # a socket a dead kernel left (nothing listens), or an older kernel: the comm still works
            return None
        return link

    def close(self) -> None:
        if self._seeker is not None:
            self._seeker.cancel()
        if self._link is not None:
            self._link.close()
