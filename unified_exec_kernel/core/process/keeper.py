"""`Keeper`: the kernel's side of the process that keeps sessions alive across a kernel restart.

Restart Kernel ends the kernel's process and, with it, everything the kernel
holds: jupyter_client's provisioner kills its whole process group, and a
crash gives it no chance to act. A session the user asked to keep (`--keep`)
must therefore be held by a process outside the kernel (keeper_process.py)
that is the program's parent (only a parent learns its exit code), reads its
terminal while no kernel does, and hands it to the next kernel with the same
kernel id. Why each choice:

- One keeper per kernel id, started with the first kept session in its own
  session (setsid, like the guardian), so a killpg of the kernel's group and
  a hangup never reach it. Its listening socket is bound here, 0600 in a
  directory only this user enters, and the first kernel's connection is a
  socketpair handed over at start: nothing waits for the keeper to bind.
- Only the same kernel id takes sessions back: the next kernel finds the
  socket by its connection file (which a restart keeps), must be the same
  user (SO_PEERCRED), and must present the token the first kernel set, which
  is derived from the connection file's signing key.
- The keeper reads the master and relays output over a per-session socket
  the kernel reads exactly as it would read the master; keys and resizes
  go to the master directly (no hop for typing). What was relayed stays in
  the keeper until `ack` says it is in the journal: a kernel killed between
  reading output and writing it loses nothing.
- Everything here runs on the loop without blocking it: a spawn or a
  take-back awaits the keeper's answer (a future the socket's reader
  resolves), bounded by `TIMEOUT_S`; acks and the rest are one message each,
  never waited for.

Sessions that are not kept never touch any of this.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..journal.lifetime import make_kernel_dir
from .keeper_process import BOOTSTRAP, DIRECTORY_LOCK_FD, FIRST_KERNEL_FD, LISTEN_FD, MAX_MESSAGE_BYTES
from .guardian_process import ROOT

log = logging.getLogger(__name__)

TIMEOUT_S = 5.0
DEFAULT_GRACE_S = 300.0
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


class KeeperError(OSError):
    """The keeper could not be reached or refused: one line for the user."""


@dataclass
class KeptSpawn:
    """A kept session's program as the kernel gets it: the master (keys, size) and the output socket."""

    pid: int
    master_fd: int
    output_fd: int


@dataclass
class KeptSession:
    """A session the keeper held while no kernel did, as the next kernel takes it back."""

    meta: dict
    spawn: KeptSpawn
    exit_code: int | None
    exited: bool
    clean_offset: int  # the cleaned-output offset of the first byte the keeper will send
    state: dict = field(default_factory=dict)  # the prompt state the last kernel acknowledged
    gap: int = 0  # raw bytes the keeper could not keep (never, unless its ring was cut)


class Keeper:
    """Speaks to this kernel's keeper process, on the loop that owns the sessions; never blocks it."""

    def __init__(self, socket_path: str, token: str, *, journal_root: str | None = None, grace: float = DEFAULT_GRACE_S,
                 python: str | None = None):
        self.socket_path = socket_path
        self.token = token
        self.grace = grace
        self.journal_root = journal_root or tempfile.gettempdir()
        self.journal_dir: str | None = None  # where kept sessions' journals live (the keeper removes it at its end)
        self._python = python or sys.executable
        self._sock: socket.socket | None = None
        self._pid: int | None = None  # the keeper, while it is our child
        self._exit_fd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_exit: Callable[[int, int | None], None] | None = None
        self._on_lost: Callable[[], None] | None = None
        self._starting: asyncio.Future | None = None
        # Answers awaited, by what they answer: ("welcome", None), ("spawned", id) (also takes "failed").
        self._waiting: dict[tuple, asyncio.Future] = {}
        self._handed_back: list[KeptSession] | None = None  # sessions arriving during a take-back

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def on_exit(self, callback: Callable[[int, int | None], None]) -> None:
        """Told (session id, exit code) when a kept program exits: the keeper reaped it."""
        self._on_exit = callback

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Told when the keeper went away while we were connected (killed): nothing is kept any more."""
        self._on_lost = callback

    # -- starting, or taking back ------------------------------------------------------

    async def take_back(self) -> list[KeptSession]:
        """Connect to a keeper left by this kernel id's last kernel: its sessions (none if there is no keeper)."""
        if not os.path.exists(self.socket_path):
            return []
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.sock_connect(sock, self.socket_path), TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            sock.close()
            _unlink_stale(self.socket_path)
            return []
        self._handed_back = []
        self._attach(sock)
        welcome, ready = self._expect(("welcome", None)), self._expect(("ready", None))
        try:
            await self._send({"op": "hello", "token": self.token, "pid": os.getpid()})
            self.journal_dir = (await self._answer(("welcome", None), welcome)).get("journal_dir")
            await self._answer(("ready", None), ready)
            return self._handed_back
        except KeeperError:
            self.close()
            raise
        finally:
            self._handed_back = None

    async def _start(self) -> None:
        """Start the keeper process with its listening socket and our connection to it."""
        # Made as a kernel's journal directory is, its owner lock handed to the keeper, which holds it
        # for its life: the next kernel's sweep removes it only once the keeper is gone.
        self.journal_dir, lock = make_kernel_dir(self.journal_root, "kept")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            _unlink_stale(self.socket_path)
            old_mask = os.umask(0o177)
            try:
                listener.bind(self.socket_path)
            finally:
                os.umask(old_mask)
            listener.listen(64)
            self._pid = os.posix_spawn(
                self._python,
                [self._python, "-I", "-S", "-c", BOOTSTRAP, ROOT, self.journal_dir, repr(self.grace)],
                {},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, listener.fileno(), LISTEN_FD),
                    # Not the kernel's stdout and stderr: ipykernel makes them pipes that it reads
                    # itself, and a write to one after the kernel is gone would fail.
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, theirs.fileno(), FIRST_KERNEL_FD),
                    (os.POSIX_SPAWN_DUP2, lock, DIRECTORY_LOCK_FD),
                ],
                setsid=True,
                setsigmask=(),
                setsigdef=_DEFAULT_SIGNALS,
            )
        except OSError as error:
            ours.close()
            raise KeeperError(f"cannot start the keeper of kept sessions ({error.strerror or error})") from error
        finally:
            listener.close()
            theirs.close()
            os.close(lock)
        ours.setblocking(False)
        self._attach(ours)
        self._watch_child()
        welcome = self._expect(("welcome", None))
        await self._send({"op": "hello", "token": self.token, "pid": os.getpid()})
        await self._answer(("welcome", None), welcome)

    def _attach(self, sock: socket.socket) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(sock.fileno(), self._on_readable)

    def _watch_child(self) -> None:
        # The keeper outlives us by design; while we live, its end is ours to reap.
        try:
            self._exit_fd = os.pidfd_open(self._pid)
        except OSError:
            return
        self._loop.add_reader(self._exit_fd, self._on_child_exit)

    def _on_child_exit(self) -> None:
        self._loop.remove_reader(self._exit_fd)
        os.close(self._exit_fd)
        self._exit_fd = None
        try:
            os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:
            pass
        self._pid = None

    # -- kept sessions -------------------------------------------------------------------

    async def spawn(self, session_id: int, argv: Sequence[str], env: Mapping[str, str], *, cwd: str | None, rows: int,
                    cols: int, handoff: str | None, meta: dict) -> KeptSpawn:
        """Have the keeper start `argv` as a kept session. Raises OSError as spawning would."""
        if self._sock is None:
            if self._starting is None:
                self._starting = asyncio.ensure_future(self._start())
            try:
                await asyncio.shield(self._starting)
            finally:
                if self._starting.done():
                    self._starting = None
        message = {"op": "spawn", "id": session_id, "argv": list(argv), "env": dict(env), "cwd": cwd,
                   "rows": rows, "cols": cols, "handoff": handoff, "meta": meta}
        if len(json.dumps(message)) > MAX_MESSAGE_BYTES:
            raise OSError(f"the command and its environment are too large for a kept session (at most {MAX_MESSAGE_BYTES:,} bytes)")
        answer_to = ("spawned", session_id)
        answer = self._expect(answer_to)
        await self._send(message)
        reply = await self._answer(answer_to, answer)
        if reply.get("op") == "failed":
            raise OSError(reply.get("errno", 0), reply.get("error", "the keeper could not start it"))
        return KeptSpawn(reply["pid"], *reply["fds"])

    def ack(self, session_id: int, raw: int, clean: int, state: dict) -> None:
        """Output up to `raw` (the keeper's count) is in the journal, as cleaned output up to `clean`."""
        self._post({"op": "ack", "id": session_id, "raw": raw, "clean": clean, "state": state})

    def forget(self, session_id: int) -> None:
        """The session was closed here: the keeper lets go of it."""
        self._post({"op": "forget", "id": session_id})

    def end_threadsafe(self) -> None:
        """A real shutdown: the keeper ends every kept session and exits. From any thread (one message)."""
        sock = self._sock
        if sock is not None:
            try:
                sock.send(json.dumps({"op": "end"}).encode(), socket.MSG_DONTWAIT)
            except OSError:
                pass

    def close(self) -> None:
        """Let go of the connection (the kernel ends: the keeper holds the sessions now)."""
        if self._sock is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        if self._exit_fd is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._exit_fd)
            os.close(self._exit_fd)
            self._exit_fd = None
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(KeeperError("the keeper of kept sessions went away"))
                waiting.add_done_callback(asyncio.Future.exception)  # nobody may be awaiting it any more
        self._waiting.clear()

    # -- messages --------------------------------------------------------------------------

    async def _send(self, message: dict) -> None:
        if self._sock is None:
            raise KeeperError("the keeper of kept sessions went away")
        try:
            await asyncio.wait_for(self._loop.sock_sendall(self._sock, json.dumps(message).encode()), TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as error:
            raise KeeperError(f"the keeper of kept sessions did not answer ({error or 'timed out'})") from error

    def _post(self, message: dict) -> None:
        if self._sock is None:
            return
        try:
            self._sock.send(json.dumps(message).encode(), socket.MSG_DONTWAIT)
        except OSError:
            pass  # a full or lost keeper: acks are repeated, and its loss shows as EOF on our reader

    def _expect(self, key: tuple) -> asyncio.Future:
        future = self._waiting.get(key)
        if future is None:
            future = self._waiting[key] = self._loop.create_future()
        return future

    async def _answer(self, key: tuple, future: asyncio.Future | None = None) -> dict:
        future = future or self._expect(key)
        try:
            return await asyncio.wait_for(asyncio.shield(future), TIMEOUT_S)
        except asyncio.TimeoutError:
            raise KeeperError("the keeper of kept sessions did not answer in time") from None
        finally:
            if self._waiting.get(key) is future:
                del self._waiting[key]
            if not future.done():
                future.cancel()

    def _on_readable(self) -> None:
        while self._sock is not None:
            try:
                message, fds = _receive(self._sock, nonblocking=True)
            except BlockingIOError:
                return
            except (OSError, ValueError):
                message, fds = None, []
            if message is None:
                _close(fds)
                self._lost()
                return
            self._handle(message, fds)

    def _handle(self, message: dict, fds: list[int]) -> None:
        op = message.get("op")
        if op == "session" and self._handed_back is not None and len(fds) == 2:
            output = _nonblocking(fds)
            self._handed_back.append(KeptSession(
                meta=message, spawn=KeptSpawn(message["pid"], *output), exit_code=message.get("exit_code"),
                exited=bool(message.get("exited")), clean_offset=int(message.get("clean", 0)),
                state=message.get("state") or {}, gap=int(message.get("gap", 0)),
            ))
            return
        if op in ("spawned", "failed"):
            key = ("spawned", message.get("id"))
            if op == "spawned" and len(fds) == 2:
                message = {**message, "fds": _nonblocking(fds)}
                fds = []
        elif op in ("welcome", "ready", "refused"):
            key = ("welcome" if op == "refused" and ("welcome", None) in self._waiting else op, None)
        else:
            key = None
        _close(fds)
        if op == "exit":
            if self._on_exit is not None:
                self._on_exit(message.get("id"), message.get("code"))
            return
        future = self._waiting.get(key) if key is not None else None
        if future is None or future.done():
            if op == "spawned":
                _close(list(message.get("fds", ())))  # its spawn gave up waiting: the keeper ends it when we forget it
                self.forget(message.get("id"))
            return
        if op == "refused":
            future.set_exception(KeeperError(f"the keeper of this kernel's kept sessions refused them: {message.get('why', '')}"))
        else:
            future.set_result(message)

    def _lost(self) -> None:
        log.warning("uexec: the keeper of kept sessions went away; kept sessions cannot outlive this kernel now")
        self.close()
        if self._on_lost is not None:
            self._on_lost()


def _receive(sock: socket.socket, *, nonblocking: bool = False) -> tuple[dict | None, list[int]]:
    flags = socket.MSG_DONTWAIT if nonblocking else 0
    data, fds, _flags, _address = socket.recv_fds(sock, MAX_MESSAGE_BYTES, 8, flags)
    if not data:
        return None, fds
    return json.loads(data), fds


def _nonblocking(fds: list[int]) -> tuple[int, int]:
    for fd in fds:
        os.set_blocking(fd, False)
    return fds[0], fds[1]


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _unlink_stale(path: str) -> None:
    """A socket nothing listens on (its keeper died) is in the way of a new one."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        probe.connect(path)
    except FileNotFoundError:
        return
    except OSError:
        try:
            os.unlink(path)
        except OSError:
            pass
    finally:
        probe.close()
