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
- Spawning asks the keeper and waits for its answer, as ptyprocess waits for
  its child's exec: a short round trip to an idle local process, bounded by
  `TIMEOUT_S`. Everything else is one message, never waited for.

Sessions that are not kept never touch any of this.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .keeper_process import BOOTSTRAP, FIRST_KERNEL_FD, LISTEN_FD, MAX_MESSAGE_BYTES
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
    """Speaks to this kernel's keeper process; lives on the loop that owns the sessions."""

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
        self._early: list[dict] = []  # exits that came while a spawn waited for its answer

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def on_exit(self, callback: Callable[[int, int | None], None]) -> None:
        """Told (session id, exit code) when a kept program exits: the keeper reaped it."""
        self._on_exit = callback

    # -- starting, or taking back ------------------------------------------------------

    def take_back(self) -> list[KeptSession]:
        """Connect to a keeper left by this kernel id's last kernel: its sessions (none if there is no keeper)."""
        if not os.path.exists(self.socket_path):
            return []
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.settimeout(TIMEOUT_S)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            _unlink_stale(self.socket_path)
            return []
        try:
            _send(sock, {"op": "hello", "token": self.token, "pid": os.getpid()})
            welcome, fds = _receive(sock)
            _close(fds)
            if welcome is None or welcome.get("op") != "welcome":
                why = (welcome or {}).get("why", "it closed the connection")
                raise KeeperError(f"the keeper of this kernel's kept sessions refused them: {why}")
            self.journal_dir = welcome.get("journal_dir")
            kept = []
            while True:
                message, fds = _receive(sock)
                if message is None:
                    raise KeeperError("the keeper closed the connection while handing sessions back")
                if message.get("op") == "ready":
                    _close(fds)
                    break
                if message.get("op") != "session" or len(fds) != 2:
                    _close(fds)
                    continue
                kept.append(KeptSession(
                    meta=message, spawn=KeptSpawn(message["pid"], *_nonblocking(fds)),
                    exit_code=message.get("exit_code"), exited=bool(message.get("exited")),
                    clean_offset=int(message.get("clean", 0)), state=message.get("state") or {}, gap=int(message.get("gap", 0)),
                ))
        except BaseException:
            sock.close()
            raise
        self._attach(sock)
        return kept

    def _start(self) -> None:
        """Start the keeper process with its listening socket and our connection to it."""
        self.journal_dir = tempfile.mkdtemp(prefix="uexec-kept-", dir=self.journal_root)
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
        ours.settimeout(TIMEOUT_S)
        _send(ours, {"op": "hello", "token": self.token, "pid": os.getpid()})
        welcome, fds = _receive(ours)
        _close(fds)
        if welcome is None or welcome.get("op") != "welcome":
            ours.close()
            raise KeeperError("the keeper of kept sessions did not start")
        self._attach(ours)
        self._watch_child()

    def _attach(self, sock: socket.socket) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        sock.setblocking(False)
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

    def spawn(self, session_id: int, argv: Sequence[str], env: Mapping[str, str], *, cwd: str | None, rows: int, cols: int,
              handoff: str | None, meta: dict) -> KeptSpawn:
        """Have the keeper start `argv` as a kept session. Raises OSError as spawning would."""
        if self._sock is None:
            self._start()
        self._request({"op": "spawn", "id": session_id, "argv": list(argv), "env": dict(env), "cwd": cwd,
                       "rows": rows, "cols": cols, "handoff": handoff, "meta": meta})
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            message, fds = self._wait_message(deadline)
            if message.get("id") == session_id and message.get("op") == "spawned" and len(fds) == 2:
                return KeptSpawn(message["pid"], *_nonblocking(fds))
            _close(fds)
            if message.get("id") == session_id and message.get("op") == "failed":
                raise OSError(message.get("errno", 0), message.get("error", "the keeper could not start it"))
            self._early.append(message)
            self._loop.call_soon(self._dispatch_early)

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
                sock.send(json.dumps({"op": "end"}).encode())
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

    # -- messages --------------------------------------------------------------------------

    def _request(self, message: dict) -> None:
        data = json.dumps(message).encode()
        if len(data) > MAX_MESSAGE_BYTES:
            raise OSError(f"the command and its environment take {len(data):,} bytes; a kept session takes at most {MAX_MESSAGE_BYTES:,}")
        try:
            _send_within(self._sock, data, time.monotonic() + TIMEOUT_S)
        except OSError as error:
            raise KeeperError(f"the keeper of kept sessions did not answer ({error.strerror or error})") from error

    def _post(self, message: dict) -> None:
        if self._sock is None:
            return
        try:
            self._sock.send(json.dumps(message).encode())
        except OSError:
            pass  # a full or lost keeper: acks are repeated, and its loss shows as EOF on our reader

    def _wait_message(self, deadline: float) -> tuple[dict, list[int]]:
        while True:
            try:
                message, fds = _receive(self._sock, nonblocking=True)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self._sock], [], [], remaining)[0]:
                    raise KeeperError("the keeper of kept sessions did not answer in time") from None
                continue
            if message is None:
                self._lost()
                raise KeeperError("the keeper of kept sessions went away")
            return message, fds

    def _on_readable(self) -> None:
        while self._sock is not None:
            try:
                message, fds = _receive(self._sock, nonblocking=True)
            except BlockingIOError:
                return
            except (OSError, ValueError):
                message, fds = None, []
            _close(fds)
            if message is None:
                self._lost()
                return
            self._handle(message)

    def _dispatch_early(self) -> None:
        early, self._early = self._early, []
        for message in early:
            self._handle(message)

    def _handle(self, message: dict) -> None:
        if message.get("op") == "exit" and self._on_exit is not None:
            self._on_exit(message.get("id"), message.get("code"))

    def _lost(self) -> None:
        log.warning("uexec: the keeper of kept sessions went away; kept sessions cannot outlive this kernel now")
        self.close()


def _send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode())


def _send_within(sock: socket.socket, data: bytes, deadline: float) -> None:
    while True:
        try:
            sock.send(data, socket.MSG_DONTWAIT)
            return
        except BlockingIOError:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [sock], [], remaining)[1]:
                raise TimeoutError("timed out") from None


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
