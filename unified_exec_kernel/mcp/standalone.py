"""The MCP server's own engine: a session manager on the server's loop, journals in a private directory.

Nothing of Jupyter: `pip install unified-exec-kernel` and one line in an
agent's config. Each tool is one call into core (codex_profile.py for the
two Codex tools, the manager, a journal's pages, /proc stats); the server
(server.py) turns what these return or raise into tool results.
"""

from __future__ import annotations

import asyncio
import os
import re
import time

from jupyter_core.paths import jupyter_runtime_dir

from ..core import codex_profile as codex
from ..core.completion.collect import compile_until
from ..core.journal import JournalStore, open_journal
from ..core.journal.lifetime import open_own_dir
from ..core.journal.paging import PageRequest, page, parse_range
from ..core.keys import signal_number
from ..core.models import command_line
from ..core.manager import UnifiedExecSessionManager
from ..core.agent_format import shell_exit_status
from ..core.process.stats import session_stats
from ..core.session import PtySession
from .notify import Notifier
from ..core.errors import quoted

_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")


class StandaloneEngine:
    def __init__(self, notifier: Notifier, *, journal_dir: str | None = None):
        """`journal_dir`: keep the journals there, after the server ends. Without it they go where a
        kernel's go (Jupyter's runtime directory: private, and swept of dead servers' as one starts)."""
        self.notifier = notifier
        if journal_dir is None:
            directory, owner = open_own_dir(jupyter_runtime_dir(), f"mcp-{os.getpid()}")
            journals = JournalStore(directory, owner_fd=owner)
        else:
            journals = JournalStore(journal_dir, keep=True)
        self.manager = UnifiedExecSessionManager(max_sessions=codex.MAX_PROCESSES, journals=journals, guardian=True)
        self._watched: set[int] = set()  # sessions whose exit the client is to be told

    async def close(self) -> None:
        self.notifier.close()
        await self.manager.close_all()

    # -- Codex's tools ------------------------------------------------------------

    async def exec_command(self, arguments: dict) -> str:
        request = codex.ExecCommand.from_arguments(arguments)
        session_id = codex.spawn(self.manager, request)
        session = self.manager.session(session_id)
        result = await codex.first_result(self.manager, session_id, request)
        if result.session_id is not None:
            self._notify_exit(session)  # it runs on: its end is told, as Codex tells a yielded command's
        return codex.render(result)

    async def write_stdin(self, arguments: dict) -> str:
        """Codex's; an exit this call reports is not notified as well (the agent was told)."""
        request = codex.WriteStdin.from_arguments(arguments)
        with self.notifier.answering(request.session_id):
            result = await codex.write_stdin(self.manager, request)
            if result.session_id is None:
                self.notifier.told(request.session_id)
        return codex.render(result)

    # -- ours -----------------------------------------------------------------

    async def list_sessions(self, arguments: dict) -> list[dict]:
        _no_arguments(arguments)
        sessions = [self.manager.session(info.session_id) for info in self.manager.list_sessions()]
        if not sessions:
            return []
        stats = await asyncio.get_running_loop().run_in_executor(None, session_stats, [session.pid for session in sessions if session.alive])
        return [describe(session, stats.get(session.pid)) for session in sessions]

    async def read_output(self, arguments: dict) -> str:
        key = arguments.get("session_id")
        request = page_request(arguments)
        store = self.manager.journals
        entry = store.find(_key(key))
        await asyncio.wrap_future(store.flushed())
        found = await asyncio.get_running_loop().run_in_executor(None, _page, entry.path, request)
        notes = "".join(f"[{note}]\n" for note in found.notes)
        return _ESCAPES.sub("", found.text).replace("\r\n", "\n") + notes

    async def kill_session(self, arguments: dict) -> str:
        _only(arguments, {"session_id", "signal"})
        session = self.manager.session(_key(arguments.get("session_id")))
        sig = arguments.get("signal")
        await self.manager.kill(session.session_id, None if sig is None else signal_number(sig))
        return f"session {session.session_id}: {'sent ' + str(sig) if sig is not None else 'closed'}"

    async def watch_output(self, arguments: dict) -> str:
        _only(arguments, {"session_id", "pattern"})
        pattern = arguments.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("pattern must be a non-empty string (a regular expression)")
        compiled = compile_until(pattern, "pattern")
        session = self.manager.session(_key(arguments.get("session_id")))
        if not session.alive:
            raise ValueError(f"session {session.session_id} has exited; nothing more will match")
        notifier, session_id, unfinished = self.notifier, session.session_id, [""]

        def on_output(data: bytes, _offset: int) -> None:
            text = unfinished[0] + data.decode("utf-8", "replace").replace("\r\n", "\n")
            *lines, unfinished[0] = text.split("\n")
            unfinished[0] = unfinished[0][-65536:]
            for line in lines:
                if compiled.search(line):
                    notifier.line(session_id, _ESCAPES.sub("", line))

        session.on_exit(lambda _session: unsubscribe())
        unsubscribe = session.subscribe(on_output)
        self._notify_exit(session)
        return f"watching session {session_id} for lines matching {quoted(pattern)}; its exit is notified too"

    def _notify_exit(self, session: PtySession) -> None:
        if session.session_id in self._watched:
            return
        self._watched.add(session.session_id)

        def on_exit(ended: PtySession) -> None:
            self._watched.discard(ended.session_id)
            code = None if ended.exit_code is None else shell_exit_status(ended.exit_code)
            self.notifier.exited(ended.session_id, code, ended.closed, last_lines(ended))

        session.on_exit(on_exit)


def describe(session: PtySession, stats) -> dict:
    """A session as `list_sessions` shows it (what Codex's /ps shows)."""
    return {
        "session_id": session.session_id,
        "name": session.name,
        "command": command_line(session.command),
        "cwd": None if stats is None else stats.cwd,
        "pid": session.pid,
        "tty": session.tty,
        "running": session.alive,
        "exit_code": None if session.exit_code is None else shell_exit_status(session.exit_code),
        "age_seconds": round(time.time() - session.started, 1),
        "cpu_percent": None if stats is None else stats.cpu_percent,
        "rss_bytes": None if stats is None else stats.rss_bytes,
        "listening_ports": [] if stats is None else list(stats.listening_ports),
        "last_lines": last_lines(session),
    }


def last_lines(session: PtySession, count: int = 3) -> list[str]:
    _, data = session.scrollback_snapshot()
    text = _ESCAPES.sub("", data[-8192:].decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "\n")
    return [line for line in text.split("\n") if line.strip()][-count:]


def page_request(arguments: dict) -> PageRequest:
    _only(arguments, {"session_id", "head", "tail", "lines", "bytes", "command", "grep", "context"})
    counts = {name: _int(arguments, name) for name in ("head", "tail", "command", "context")}
    lines, byte_range = arguments.get("lines"), arguments.get("bytes")
    for name, value in (("lines", lines), ("bytes", byte_range), ("grep", arguments.get("grep"))):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a string")
    return PageRequest(
        head=counts["head"],
        tail=counts["tail"],
        lines=None if lines is None else parse_range(lines, "lines"),
        byte_range=None if byte_range is None else parse_range(byte_range, "bytes"),
        grep=arguments.get("grep"),
        context=counts["context"] or 0,
        command=counts["command"],
    )


def _page(path: str, request: PageRequest):
    with open_journal(path) as journal:
        return page(journal, request)


def _key(value) -> int | str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        raise ValueError("session_id must be a session's id or name")
    return value


def _int(arguments: dict, name: str) -> int | None:
    value = arguments.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{name} must be an integer")
    return value


def _only(arguments: dict, known: set[str]) -> None:
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise ValueError(f"unknown argument {quoted(unknown[0])}; expected {', '.join(sorted(known))}")


def _no_arguments(arguments: dict) -> None:
    _only(arguments, set())
