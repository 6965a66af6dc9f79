"""Driving a running uexec kernel's sessions: what the agent starts shows in that notebook, and the other way round.

Every tool is one protocol message (docs/protocol.md: `exec` with
`"profile": "codex"`, `list`, `kill`, `read`, `watch`), so the kernel's
engine does the work and its Sessions panel, `%uexec_sessions` and live views
see the agent's sessions as any other. A person can open one in a live view
and type into it (`tty`), and the agent can drive a session a person started
(its id in `write_stdin`).

The carrier is the kernel's direct socket (found beside its connection
file; `T {"type": "agent"}` opens the whole protocol there), served on the
engine's loop, so a call never waits for a running cell; where there is
none, the `unified_exec` comm through jupyter_client (whose messages wait
while a cell runs on the main shell).
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import json
import os
import re
import time
import uuid

from ..core.process.stats import session_stats
from ..protocol import frames
from ..protocol.address import find_socket
from ..core.journal.paging import parse_range
from .notify import Notifier
from .standalone import _ESCAPES, _int, _key, _only, page_request

TARGET = "unified_exec"
REPLY_TYPES = {"result", "error", "sessions", "ok", "journal", "fired"}
WATCH_MS = 3_600_000  # the kernel's longest watch; a watch that times out is re-armed


def connection_file_of(kernel: str) -> str:
    """The connection file of the running kernel with this id (or unique id prefix), from the runtime directory."""
    from jupyter_core.paths import jupyter_runtime_dir

    found = sorted(glob.glob(os.path.join(jupyter_runtime_dir(), f"kernel-{glob.escape(kernel)}*.json")))
    if not found:
        raise LookupError(f"no running kernel {kernel!r} in {jupyter_runtime_dir()}")
    if len(found) > 1:
        raise LookupError(f"{kernel!r} names {len(found)} kernels; give more of its id")
    return found[0]


def kernel_on_server(server: str, token: str | None, kernel: str) -> str:
    """The full id of `kernel` (an id or a unique prefix) on the Jupyter server at `server`, asked over its REST API.

    Its connection file is then found in the runtime directory: the server
    must run on this machine, as the kernel's socket and comm are reached
    from here.
    """
    import json as _json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(server.rstrip("/") + "/api/kernels", headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            kernels = _json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise ConnectionError(f"{server} refused the kernel list: HTTP {error.code}{' (is --token right?)' if error.code in (401, 403) else ''}") from None
    except (urllib.error.URLError, ValueError) as error:
        raise ConnectionError(f"no Jupyter server answers at {server}: {error}") from None
    found = [entry["id"] for entry in kernels if entry.get("id", "").startswith(kernel)]
    if len(found) != 1:
        raise LookupError(f"{server} runs {'no kernel' if not found else f'{len(found)} kernels'} with id {kernel!r}")
    return found[0]


def attached_engine(*, kernel: str | None = None, server: str | None = None, token: str | None = None, connection_file: str | None = None, carrier: str = "auto"):
    """What `serve` makes its engine with: an `AttachedEngine` on that kernel's connection file."""
    if server is not None and connection_file is None:
        if kernel is None:
            raise ValueError("--server needs --kernel ID (which of its kernels)")
        kernel = kernel_on_server(server, token, kernel)
    path = connection_file or connection_file_of(kernel)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no connection file {path}")
    return lambda notifier: AttachedEngine(notifier, path, carrier=carrier)


class AttachedEngine:
    def __init__(self, notifier: Notifier, connection_file: str, *, carrier: str = "auto"):
        """`carrier`: "auto" (the direct socket where there is one, else the comm), "direct" or "comm"."""
        self.notifier = notifier
        self.connection_file = connection_file
        self._carrier = carrier
        self._link: DirectLink | CommLink | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Queue] = {}
        self._connecting: asyncio.Lock | None = None
        self._watches: set[asyncio.Task] = set()

    # -- the link to the kernel ----------------------------------------------

    async def _connect(self) -> None:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._link is not None:
                return
            socket = None if self._carrier == "comm" else find_socket(self.connection_file)
            if socket is None and self._carrier == "direct":
                raise ConnectionError(f"no direct socket beside {self.connection_file}")
            if socket is not None:
                link = DirectLink(socket, self._deliver)
                try:
                    await link.connect()
                    self._link = link
                    await self._ask({"type": "agent"}, {"ok"})  # the whole protocol on this connection
                    return
                except (OSError, KernelError):
                    link.close()  # an older kernel, or a stale socket: the comm still works
                    self._link = None
                    if self._carrier == "direct":
                        raise
            link = CommLink(self.connection_file, self._deliver)
            await link.connect()
            self._link = link

    def _deliver(self, data: dict) -> None:
        queue = self._waiting.get(data.get("request_id"))
        if queue is not None:
            queue.put_nowait(data)

    async def request(self, message: dict, until=REPLY_TYPES) -> dict:
        """Send one protocol message; its answer (the first of `until`'s types for its request_id)."""
        await self._connect()
        return await self._ask(message, until)

    async def _ask(self, message: dict, until) -> dict:
        rid = f"mcp-{next(self._ids)}"
        queue = self._waiting[rid] = asyncio.Queue()
        try:
            self._link.send({**message, "request_id": rid})
            while True:
                answer = await queue.get()
                if answer.get("type") == "error":
                    raise KernelError(answer.get("message") or answer.get("error") or "the kernel refused the request")
                if answer.get("type") in until:
                    return answer
        finally:
            self._waiting.pop(rid, None)

    @property
    def carrier(self) -> str | None:
        return None if self._link is None else self._link.name

    async def close(self) -> None:
        self.notifier.close()
        for task in self._watches:
            task.cancel()
        if self._link is not None:
            self._link.close()

    # -- the tools ------------------------------------------------------------

    async def exec_command(self, arguments: dict) -> str:
        answer = await self.request({"type": "exec", "profile": "codex", "session_id": None, **_no_session(arguments)})
        if answer["session_id"] is not None:
            self._watch(answer["session_id"], None)
        return answer["output"]

    async def write_stdin(self, arguments: dict) -> str:
        """Codex's; an exit this call reports is not notified as well (the agent was told)."""
        session_id = _key(arguments.get("session_id"))
        rest = {name: value for name, value in arguments.items() if name != "session_id"}
        with self.notifier.answering(session_id):
            answer = await self.request({"type": "exec", "profile": "codex", "session_id": session_id, **rest})
            if answer["session_id"] is None:
                self.notifier.told(session_id)
        return answer["output"]

    async def list_sessions(self, arguments: dict) -> list[dict]:
        _only(arguments, set())
        listed = (await self.request({"type": "list"}))["sessions"]
        stats = await asyncio.get_running_loop().run_in_executor(None, session_stats, [entry["pid"] for entry in listed if entry["alive"]])
        described = []
        for entry in listed:
            found = stats.get(entry["pid"])
            described.append({
                "session_id": entry["session_id"],
                "name": entry["name"],
                "command": entry["command"],
                "cwd": None if found is None else found.cwd,
                "pid": entry["pid"],
                "running": entry["alive"],
                "exit_code": entry["exit_code"],
                "age_seconds": round(time.time() - entry["started"], 1),
                "cpu_percent": None if found is None else found.cpu_percent,
                "rss_bytes": None if found is None else found.rss_bytes,
                "listening_ports": [] if found is None else list(found.listening_ports),
                "last_lines": await self._last_lines(entry["session_id"]),
            })
        return described

    async def _last_lines(self, session_id: int) -> list[str]:
        try:
            whole = await self.request({"type": "read", "session_id": session_id, "max_bytes": 1024 * 1024})
        except KernelError:
            return []
        text = _ESCAPES.sub("", whole.get("data", "")[-8192:]).replace("\r\n", "\n").replace("\r", "\n")
        return [line for line in text.split("\n") if line.strip()][-3:]

    async def read_output(self, arguments: dict) -> str:
        """The kernel's `read` gives bytes (or a command's); lines, head, tail and grep are applied here."""
        request = page_request(arguments)
        message = {"type": "read", "session_id": _key(arguments.get("session_id")), "max_bytes": 1024 * 1024}
        if request.command is not None:
            message["command"] = request.command
        if request.byte_range is not None:
            message["start"], end = request.byte_range
            if end is not None:
                message["end"] = end
        answer = await self.request(message)
        lines = _ESCAPES.sub("", answer.get("data", "")).replace("\r\n", "\n").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        numbered = list(enumerate(lines, 1))
        if request.head is not None:
            numbered = numbered[: request.head]
        elif request.tail is not None:
            numbered = numbered[len(numbered) - request.tail :] if request.tail else []
        elif request.lines is not None:
            first, last = request.lines
            numbered = [(n, line) for n, line in numbered if n >= first and (last is None or n <= last)]
        if request.grep is not None:
            pattern = re.compile(request.grep)
            return "".join(f"{n}:{line}\n" for n, line in numbered if pattern.search(line))
        return "".join(f"{line}\n" for _, line in numbered) + "".join(f"[{note}]\n" for note in answer.get("notes", []))

    async def kill_session(self, arguments: dict) -> str:
        _only(arguments, {"session_id", "signal"})
        message = {"type": "kill", "session_id": _key(arguments.get("session_id"))}
        if arguments.get("signal") is not None:
            message["signal"] = arguments["signal"]
        answer = await self.request(message)
        return f"session {answer['session_id']}: {'sent ' + str(arguments['signal']) if 'signal' in message else 'closed'}"

    async def watch_output(self, arguments: dict) -> str:
        _only(arguments, {"session_id", "pattern"})
        pattern = arguments.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("pattern must be a non-empty string (a regular expression)")
        re.compile(pattern)
        session_id = _key(arguments.get("session_id"))
        listed = {entry["session_id"]: entry for entry in (await self.request({"type": "list"}))["sessions"]}
        if isinstance(session_id, int) and session_id not in listed:
            raise LookupError(f"no session with id {session_id}")
        self._watch(session_id, pattern)
        return f"watching session {session_id} for lines matching {pattern!r}; its exit is notified too"

    def _watch(self, session_id: int | str, pattern: str | None) -> None:
        task = asyncio.ensure_future(self._watching(session_id, pattern))
        self._watches.add(task)
        task.add_done_callback(self._watches.discard)

    async def _watching(self, session_id, pattern: str | None) -> None:
        """The kernel's `watch`, re-armed after each match: matched lines, then the exit."""
        compiled = None if pattern is None else re.compile(pattern)
        while True:
            message = {"type": "watch", "session_id": session_id, "timeout_ms": WATCH_MS, "format": "text"}
            if pattern is not None:
                message["until"] = pattern
            try:
                fired = await self.request(message, until={"fired"})
            except KernelError:
                return  # the session is gone (its exit was reported to a request)
            if compiled is not None:
                for line in _ESCAPES.sub("", fired["output"]).replace("\r\n", "\n").split("\n"):
                    if compiled.search(line):
                        self.notifier.line(fired.get("session_id") or session_id, line)
            if fired["reason"] == "exit":
                if pattern is None:
                    lines = [line for line in _ESCAPES.sub("", fired["output"]).replace("\r\n", "\n").split("\n") if line.strip()][-3:]
                    code = fired["exit_code"]
                    self.notifier.exited(session_id, None if code is None else (code if code >= 0 else 128 - code), False, lines)
                return


class DirectLink:
    """The kernel's direct socket (protocol/direct.py): `T` frames both ways, on the engine's loop, never behind a cell."""

    name = "direct"

    def __init__(self, path: str, deliver):
        self.path = path
        self._deliver = deliver
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None

    async def connect(self) -> None:
        reader, self._writer = await asyncio.wait_for(asyncio.open_unix_connection(self.path, limit=frames.MAX_FRAME_BYTES + 64), 10)
        self._reader_task = asyncio.ensure_future(self._read(reader))

    def send(self, message: dict) -> None:
        self._writer.write(frames.text_frame(json.dumps(message).encode()))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                kind, length = frames.HEADER.unpack(await reader.readexactly(frames.HEADER.size))
                payload = await reader.readexactly(length)
                if kind == frames.TEXT:
                    self._deliver(json.loads(payload))
        except (asyncio.IncompleteReadError, OSError):
            pass  # the kernel went away: calls waiting on it are cancelled when the server ends

    def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
        if self._writer is not None:
            self._writer.close()


class CommLink:
    """The kernel's `unified_exec` comm through jupyter_client (where there is no direct socket).

    Comm messages go on the shell channel: one waits while a cell runs on the main shell.
    """

    name = "comm"

    def __init__(self, connection_file: str, deliver):
        self.connection_file = connection_file
        self._deliver = deliver
        self._client = None
        self._comm_id = uuid.uuid4().hex
        self._reader_task: asyncio.Task | None = None

    async def connect(self) -> None:
        from jupyter_client.asynchronous import AsyncKernelClient

        client = AsyncKernelClient(connection_file=self.connection_file)
        client.load_connection_file()
        client.start_channels(hb=False)  # a heartbeat late under load is no dead kernel: kernel_info answers tell
        try:
            await client.wait_for_ready(timeout=30)
        except RuntimeError as error:
            client.stop_channels()
            raise ConnectionError(f"the kernel of {self.connection_file} does not answer: {error}") from None
        self._client = client
        self._reader_task = asyncio.ensure_future(self._read())
        self._send("comm_open", {"comm_id": self._comm_id, "target_name": TARGET, "data": {}})

    def send(self, message: dict) -> None:
        self._send("comm_msg", {"comm_id": self._comm_id, "data": message})

    def _send(self, msg_type: str, content: dict) -> None:
        self._client.shell_channel.send(self._client.session.msg(msg_type, content))

    async def _read(self) -> None:
        while True:
            msg = await self._client.get_iopub_msg()
            content = msg.get("content", {})
            if msg.get("msg_type") == "comm_msg" and content.get("comm_id") == self._comm_id:
                self._deliver(content.get("data") or {})

    def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
        if self._client is not None:
            self._send("comm_close", {"comm_id": self._comm_id, "data": {}})
            self._client.stop_channels()


class KernelError(ValueError):
    """The kernel answered `error`: its one line is the tool's."""


def _no_session(arguments: dict) -> dict:
    if "session_id" in arguments or "name" in arguments:
        raise ValueError("exec_command takes no session_id: it starts a new session (write_stdin drives one)")
    return arguments
