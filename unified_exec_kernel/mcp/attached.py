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
import os
import re
import time

from ..core.completion.collect import compile_until
from ..core.process.stats import session_stats
from ..core.journal.paging import parse_range
from ..core.models import command_line
from .kernel_links import KernelGone, KernelLinks
from .notify import Notifier
from .standalone import _ESCAPES, _int, _key, _only, page_request
from ..core.errors import quoted

REPLY_TYPES = {"result", "error", "sessions", "ok", "journal", "fired"}
WATCH_MS = 3_600_000  # the kernel's longest watch; a watch that times out is re-armed
_LOST = {"type": "lost"}  # put in a request's queue when its link is lost


def connection_file_of(kernel: str) -> str:
    """The connection file of the running kernel with this id (or unique id prefix).

    First in the runtime directory (`jupyter_runtime_dir()`: JUPYTER_RUNTIME_DIR,
    else Jupyter's default); else where a running kernel of this user says its
    file is (its `-f FILE`, as jupyter_client starts every kernel). An MCP
    client may start us with a bare environment (the SDK's `stdio_client`
    keeps only HOME, PATH, SHELL, TERM and a few more), so a runtime
    directory set for the notebook's server is not necessarily ours.
    """
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = jupyter_runtime_dir()
    found = sorted(glob.glob(os.path.join(runtime, f"kernel-{glob.escape(kernel)}*.json")))
    if not found:
        found = sorted(set(running_connection_files(f"kernel-{kernel}")))
    if not found:
        raise LookupError(f"no running kernel {quoted(kernel)} in {runtime}, nor among this user's running kernels")
    if len(found) > 1:
        raise LookupError(f"{quoted(kernel)} names {len(found)} kernels; give more of its id")
    return found[0]


def running_connection_files(prefix: str) -> list[str]:
    """The connection files named `prefix*.json` that this user's running processes were started with (`-f FILE`; Linux's /proc)."""
    found = []
    try:
        entries = [entry for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return found
    for entry in entries:
        try:
            if entry.stat().st_uid != os.geteuid():
                continue
            with open(os.path.join(entry.path, "cmdline"), "rb") as file:
                argv = [part.decode("utf-8", "replace") for part in file.read(65536).split(b"\0")]
            for flag, value in zip(argv, argv[1:]):
                if flag != "-f" or not os.path.basename(value).startswith(prefix) or not value.endswith(".json"):
                    continue
                path = value if os.path.isabs(value) else os.path.join(os.readlink(os.path.join(entry.path, "cwd")), value)
                if os.stat(path).st_uid == os.geteuid():
                    found.append(os.path.realpath(path))
        except OSError:
            continue  # a process gone meanwhile, or not ours to read
    return found


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
        raise LookupError(f"{server} runs {'no kernel' if not found else f'{len(found)} kernels'} with id {quoted(kernel)}")
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
        self._links = KernelLinks(connection_file, self._deliver, carrier=carrier)
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Queue] = {}
        self._watches: set[asyncio.Task] = set()

    def _deliver(self, data: dict) -> None:
        queue = self._waiting.get(data.get("request_id"))
        if queue is not None:
            queue.put_nowait(data)

    async def request(self, message: dict, until=REPLY_TYPES) -> dict:
        """Send one protocol message; its answer (the first of `until`'s types for its request_id).

        KernelGone when no kernel answers, or when the one asked goes away before it answers.
        """
        link = await self._links.current()
        rid = f"mcp-{next(self._ids)}"
        queue = self._waiting[rid] = asyncio.Queue()

        def lost(_future) -> None:
            queue.put_nowait(_LOST)

        link.lost.add_done_callback(lost)
        try:
            link.send({**message, "request_id": rid})
            while True:
                answer = await queue.get()
                if answer is _LOST:
                    raise KernelGone()
                if answer.get("type") == "error":
                    raise KernelError(answer.get("message") or answer.get("error") or "the kernel refused the request")
                if answer.get("type") in until:
                    return answer
        finally:
            link.lost.remove_done_callback(lost)
            self._waiting.pop(rid, None)

    @property
    def carrier(self) -> str | None:
        link = self._links.link
        return None if link is None else link.name

    async def close(self) -> None:
        self.notifier.close()
        for task in self._watches:
            task.cancel()
        self._links.close()

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
                "command": command_line(entry["command"]),
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
        compile_until(pattern, "pattern")  # refused here, in one line, before the kernel is asked
        session_id = _key(arguments.get("session_id"))
        listed = {entry["session_id"]: entry for entry in (await self.request({"type": "list"}))["sessions"]}
        if isinstance(session_id, int) and session_id not in listed:
            raise LookupError(f"no session with id {session_id}")
        self._watch(session_id, pattern)
        return f"watching session {session_id} for lines matching {quoted(pattern)}; its exit is notified too"

    def _watch(self, session_id: int | str, pattern: str | None) -> None:
        task = asyncio.ensure_future(self._watching(session_id, pattern))
        self._watches.add(task)
        task.add_done_callback(self._watches.discard)

    async def _watching(self, session_id, pattern: str | None) -> None:
        """The kernel's `watch`, re-armed after each match: matched lines, then the exit."""
        compiled = compile_until(pattern)
        gone = False
        while True:
            message = {"type": "watch", "session_id": session_id, "timeout_ms": WATCH_MS, "format": "text"}
            if pattern is not None:
                message["until"] = pattern
            try:
                fired = await self.request(message, until={"fired"})
            except KernelError:
                if gone:  # the new kernel does not know it: it ended with the old one (it was not kept)
                    self.notifier.exited(session_id, None, True, [])
                return  # the session is gone (its exit was reported to a request)
            except KernelGone:
                gone = True
                await self._links.relinked()  # a kept session lives on in the next kernel: watch it there
                continue
            gone = False
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


class KernelError(ValueError):
    """The kernel answered `error`: its one line is the tool's."""


def _no_session(arguments: dict) -> dict:
    if "session_id" in arguments or "name" in arguments:
        raise ValueError("exec_command takes no session_id: it starts a new session (write_stdin drives one)")
    return arguments
