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
- A keeper that stops answering is a dead keeper: one state, not two. A
  `ping` goes every `PING_S` while we are connected; no `pong` (or no answer
  to a spawn or a take-back) within `TIMEOUT_S`, and the keeper is ended
  (SIGKILL through a pidfd: its pid is the child's we spawned, or the one
  SO_PEERCRED names, since the keeper itself listens) and counts as lost:
  the manager then reads the sessions' terminals itself (it holds their
  masters) and they end with this kernel. A keeper that comes back from a
  SIGSTOP later finds itself gone, not two owners of one terminal.
- Each kernel hands the keeper a copy of its guardian's pipe (`hello`, or
  `guardian` when the guardian is replaced): the keeper tells that guardian
  of every kept session, so a keeper that dies while no kernel holds them
  does not leave them running (guardian_process.py).

Sessions that are not kept never touch any of this.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import shlex
import shutil
import signal
import socket
import struct
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..journal.lifetime import open_own_dir
from .forks import close_fd, drop_in_child
from .helper_wire import (DIRECTORY_LOCK_FD, FIRST_KERNEL_FD, KEEPER_BOOTSTRAP, LISTEN_FD, MANIFEST_SUFFIX, MAX_MESSAGE_BYTES, ROOT,
                          close_all, receive_message, records)
from .procs import is_stopped

log = logging.getLogger(__name__)

TIMEOUT_S = 5.0
END_S = 2.0
"""How long a real shutdown gives the keeper to end (it takes milliseconds: the kernel ended the programs)."""
PING_S = 2.0
"""How often a connected keeper is asked whether it still answers (it has TIMEOUT_S to say so)."""
DEFAULT_GRACE_S = 300.0
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


class KeeperError(OSError):
    """The keeper could not be reached or refused: one line for the user."""


class KeeperTimeout(KeeperError):
    """The keeper did not answer in time: it is stalled, and is ended as if it had died."""


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
        self._keeper_fd: int | None = None  # a pidfd on the keeper we are connected to (to end it if it stalls)
        self._keeper_pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_exit: Callable[[int, int | None], None] | None = None
        self._on_lost: Callable[[str], None] | None = None
        self._guardian_pipe: Callable[[], int | None] = lambda: None
        self._guardian_news: Callable[[], bytes] = lambda: b""
        self._news = bytearray()  # the guardian's news the keeper has not been sent yet
        self._ping: asyncio.TimerHandle | None = None
        self._welcomed = False  # this connection was served (a take-back or a start went through)
        self._pong_due: float | None = None
        self._starting: asyncio.Future | None = None
        # Answers awaited, by what they answer: ("welcome", None), ("spawned", id) (also takes "failed").
        self._waiting: dict[tuple, asyncio.Future] = {}
        self._handed_back: list[KeptSession] | None = None  # sessions arriving during a take-back
        self._partial = bytearray()  # the parts of a message from the keeper read so far
        drop_in_child(self)

    def forked_child(self) -> None:
        """A forked child lets go of the connection without a word: the keeper must see the kernel's EOF
        when the kernel goes, and hears nothing from the child (its loop's epoll is the parent's: no loop call)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        close_fd(self._keeper_fd)
        self._keeper_fd = self._keeper_pid = None
        self._ping = self._pong_due = self._starting = None
        self._welcomed = False
        self._news.clear()
        self._partial.clear()
        self._waiting = {}

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def on_exit(self, callback: Callable[[int, int | None], None]) -> None:
        """Told (session id, exit code) when a kept program exits: the keeper reaped it."""
        self._on_exit = callback

    def on_lost(self, callback: Callable[[str], None]) -> None:
        """Told (why, one line) when the keeper went away or stalled while we were connected: nothing is kept any more."""
        self._on_lost = callback

    def guarded_by(self, pipe: Callable[[], int | None], news: Callable[[], bytes] = lambda: b"") -> None:
        """`pipe()`: a copy of this kernel's guardian's pipe (ours to close after sending), or None;
        `news()`: all that guardian was told (`+PID`, `J…` lines), sent to each keeper that serves us."""
        self._guardian_pipe = pipe
        self._guardian_news = news

    def news(self, lines: bytes) -> None:
        """More of the guardian's news: the keeper ends those sessions if this kernel and its guardian die at once."""
        if self._welcomed:
            self._news += lines
            self._send_news()

    def new_guardian(self, pipe: int) -> None:
        """This kernel's guardian was replaced: the keeper tells the new one (takes `pipe`)."""
        try:
            if self._sock is not None:
                socket.send_fds(self._sock, [json.dumps({"op": "guardian"}).encode()], [pipe], socket.MSG_DONTWAIT)
        except OSError:
            pass  # a lost keeper shows as EOF on our reader
        finally:
            os.close(pipe)

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
            if os.path.exists(self.socket_path + MANIFEST_SUFFIX):  # it died holding sessions: its guardian ended them
                raise KeeperError(f"the keeper of kept sessions had died; with it ended {self._lost_sessions()}") from None
            return []
        self._keeper_pid, self._keeper_fd = _peer(sock)
        self._handed_back = []
        self._attach(sock)
        welcome, ready = self._expect(("welcome", None)), self._expect(("ready", None))
        try:
            await self._hello()
            self.journal_dir = (await self._answer(("welcome", None), welcome)).get("journal_dir")
            await self._answer(("ready", None), ready)
            self._served()
            return self._handed_back
        except KeeperTimeout:
            if self._end_stalled():
                self.close()
                raise KeeperError(f"the keeper of kept sessions did not answer in {TIMEOUT_S:g} s and was ended; "
                                  f"with it ended {self._lost_sessions()}") from None
            self.close()
            raise
        finally:
            self._handed_back = None

    async def _start(self) -> None:
        """Start the keeper process with its listening socket and our connection to it."""
        # Made as a kernel's journal directory is, its owner lock handed to the keeper, which holds it
        # for its life: the next kernel's sweep removes it only once the keeper is gone.
        # (After the sweep of dead ones: a keeper ended as stalled leaves its directory behind.)
        self.journal_dir, lock = open_own_dir(self.journal_root, "kept")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            _unlink_stale(self.socket_path)
            old_mask = os.umask(0o177)
            try:
                listener.bind(self.socket_path)  # the keeper listens (keeper_process.serve)
            finally:
                os.umask(old_mask)
            pid = os.posix_spawn(
                self._python,
                [self._python, "-I", "-S", "-c", KEEPER_BOOTSTRAP, ROOT, self.journal_dir, repr(self.grace)],
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
        self._reap_when_it_exits(pid)
        self._keeper_pid, self._keeper_fd = pid, _pidfd(pid)
        welcome = self._expect(("welcome", None))
        try:
            await self._hello()
            await self._answer(("welcome", None), welcome)
        except KeeperError as error:
            if isinstance(error, KeeperTimeout):
                self._end_stalled()
            self.close()
            raise
        self._served()

    def _served(self) -> None:
        """The keeper serves us now: it learns all our guardian knows, and is asked whether it answers."""
        self._welcomed = True
        self._news = bytearray(self._guardian_news())
        self._send_news()
        self._beat()

    def _send_news(self) -> None:
        if not self._news or self._sock is None:
            return
        try:
            self._sock.send(json.dumps({"op": "news", "lines": self._news.decode("ascii")}).encode(), socket.MSG_DONTWAIT)
        except OSError:
            return  # full: sent with the next beat (one that stays full is a stalled keeper, and is ended)
        self._news.clear()

    async def _hello(self) -> None:
        """The first message on a connection: the token, and a copy of our guardian's pipe."""
        pipe = self._guardian_pipe()
        if pipe is None:
            await self._send({"op": "hello", "token": self.token, "pid": os.getpid()})
            return
        try:
            socket.send_fds(self._sock, [json.dumps({"op": "hello", "token": self.token, "pid": os.getpid()}).encode()],
                            [pipe], socket.MSG_DONTWAIT)
        except OSError as error:
            raise KeeperError(f"the keeper of kept sessions did not answer ({error})") from error
        finally:
            os.close(pipe)

    def _attach(self, sock: socket.socket) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(sock.fileno(), self._on_readable)

    def _reap_when_it_exits(self, pid: int) -> None:
        """The keeper outlives us by design; while we live, its end is ours to reap, connected or not
        (one ended as stalled must not stay a zombie of this kernel)."""
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return
        loop = self._loop

        def reap() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

        loop.add_reader(pidfd, reap)

    # -- kept sessions -------------------------------------------------------------------

    async def spawn(self, session_id: int, argv: Sequence[str], env: Mapping[str, str], *, cwd: str | None, rows: int,
                    cols: int, handoff: str | None, meta: dict, own_pid_in: Sequence[str] = ()) -> KeptSpawn:
        """Have the keeper start `argv` as a kept session. Raises OSError as spawning would.
        `own_pid_in`: environment variables that must hold the spawner's pid (the keeper's, then)."""
        message = {"op": "spawn", "id": session_id, "argv": list(argv), "env": dict(env), "cwd": cwd,
                   "rows": rows, "cols": cols, "handoff": handoff, "meta": meta, "own_pid_in": list(own_pid_in)}
        if len(json.dumps(message)) > MAX_MESSAGE_BYTES:  # far above what exec takes: exec's own E2BIG comes first
            raise OSError(f"the command and its environment are too large for a kept session (at most {MAX_MESSAGE_BYTES:,} bytes)")
        for attempt in (1, 2):
            await self._connected()
            answer_to = ("spawned", session_id)
            answer = self._expect(answer_to)
            try:
                await self._send(message)
                reply = await self._answer(answer_to, answer)
                break
            except KeeperTimeout:
                # One that stalls is ended (its sessions come to this kernel) and a new one starts this.
                if attempt == 2 or not self._end_stalled():
                    raise
                self._lost(f"did not answer in {TIMEOUT_S:g} s and was ended")
        if reply.get("op") == "failed":
            raise OSError(reply.get("errno", 0), reply.get("error", "the keeper could not start it"), reply.get("filename"))
        return KeptSpawn(reply["pid"], *reply["fds"])

    async def _connected(self) -> None:
        if self._sock is not None:
            return
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        try:
            await asyncio.shield(self._starting)
        finally:
            if self._starting.done():
                self._starting = None

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

    def end_blocking(self, timeout: float = END_S) -> None:
        """`end_threadsafe`, then make sure: a keeper not gone within `timeout` (or stopped) is killed and
        what it would have removed is removed. Blocks (a shutdown's control thread, never a loop)."""
        self.end_threadsafe()
        pidfd = self._keeper_fd
        if pidfd is None:
            return
        try:
            if not (self._keeper_pid and is_stopped(self._keeper_pid)) and select.select([pidfd], [], [], timeout)[0]:
                return
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except (OSError, ValueError):
            return
        log.warning("uexec: the keeper of kept sessions did not end within %s s; it was killed", timeout)
        _unlink(self.socket_path)
        if self.journal_dir is not None:
            shutil.rmtree(self.journal_dir, ignore_errors=True)

    def close(self) -> None:
        """Let go of the connection (the kernel ends: the keeper holds the sessions now)."""
        if self._ping is not None:
            self._ping.cancel()
            self._ping = None
        self._pong_due = None
        self._news.clear()
        self._partial.clear()
        if self._keeper_fd is not None:
            os.close(self._keeper_fd)
            self._keeper_fd = self._keeper_pid = None
        if self._sock is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(KeeperError("the keeper of kept sessions went away"))
                waiting.add_done_callback(asyncio.Future.exception)  # nobody may be awaiting it any more
        self._waiting.clear()

    # -- a keeper that stalls ----------------------------------------------------------------

    def _beat(self) -> None:
        """Ask the keeper whether it answers; one that has not answered the last ask in time is ended."""
        self._ping = None
        if self._sock is None:
            return
        now = self._loop.time()
        if self._pong_due is not None and now >= self._pong_due:
            self._end_stalled()
            self._lost(f"stopped answering for {TIMEOUT_S:g} s and was ended")
            return
        self._send_news()
        if self._pong_due is None:
            self._pong_due = now + TIMEOUT_S
            self._post({"op": "ping"})
        self._ping = self._loop.call_later(min(PING_S, max(0.05, self._pong_due - now)), self._beat)

    def _lost_sessions(self) -> str:
        """The sessions a stalled keeper held, as its manifest names them (it is read once, then removed)."""
        path = self.socket_path + MANIFEST_SUFFIX
        try:
            with open(path, encoding="utf-8") as file:
                sessions = json.load(file)["sessions"]
            named = [f"{item['id']}" + (f" '{item['name']}'" if item.get("name") else "")
                     + f" ({shlex.join(item.get('command') or [])})" for item in sessions]
        except (OSError, ValueError, KeyError, TypeError):
            named = []
        _unlink(path)
        return "kept session(s) " + ", ".join(named) if named else "the sessions it kept"

    def _end_stalled(self) -> bool:
        """Kill the keeper we are connected to (it does not answer); whether we could."""
        if self._keeper_fd is None:
            return False
        try:
            signal.pidfd_send_signal(self._keeper_fd, signal.SIGKILL)
        except OSError:
            return False
        log.warning("uexec: the keeper of kept sessions does not answer; it was ended")
        _unlink(self.socket_path)  # its socket is in the way of the next keeper's, even while it dies
        return True

    # -- messages --------------------------------------------------------------------------

    async def _send(self, message: dict) -> None:
        if self._sock is None:
            raise KeeperError("the keeper of kept sessions went away")
        try:
            await asyncio.wait_for(self._send_records(json.dumps(message).encode()), TIMEOUT_S)
        except asyncio.TimeoutError:
            raise KeeperTimeout(f"the keeper of kept sessions did not read in {TIMEOUT_S:g} s") from None
        except OSError as error:
            raise KeeperError(f"the keeper of kept sessions did not answer ({error})") from error

    async def _send_records(self, data: bytes) -> None:
        # A record must fit the socket's send buffer: a large spawn (a long script, a big argv) goes in parts.
        for record in records(data):
            await self._loop.sock_sendall(self._sock, record)

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
            raise KeeperTimeout(f"the keeper of kept sessions did not answer in {TIMEOUT_S:g} s") from None
        finally:
            if self._waiting.get(key) is future:
                del self._waiting[key]
            if not future.done():
                future.cancel()

    def _on_readable(self) -> None:
        while self._sock is not None:
            try:
                message, fds = receive_message(self._sock, nonblocking=True, partial=self._partial)
            except BlockingIOError:
                return  # the rest of a message in parts comes with a later read
            except (OSError, ValueError):
                message, fds = None, []
            if message is None:
                close_all(fds)
                self._lost("died")
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
        elif op == "pong":
            self._pong_due = None
            return
        elif op in ("welcome", "ready", "refused"):
            key = ("welcome" if op == "refused" and ("welcome", None) in self._waiting else op, None)
        else:
            key = None
        close_all(fds)
        if op == "exit":
            if self._on_exit is not None:
                self._on_exit(message.get("id"), message.get("code"))
            return
        future = self._waiting.get(key) if key is not None else None
        if future is None or future.done():
            if op == "spawned":
                close_all(list(message.get("fds", ())))  # its spawn gave up waiting: the keeper ends it when we forget it
                self.forget(message.get("id"))
            return
        if op == "refused":
            future.set_exception(KeeperError(f"the keeper of this kernel's kept sessions refused them: {message.get('why', '')}"))
        else:
            future.set_result(message)

    def _lost(self, why: str = "went away") -> None:
        log.debug("uexec: the keeper of kept sessions %s", why)  # the manager tells the person, a line per session
        welcomed, self._welcomed = self._welcomed, False
        self.close()
        if welcomed:  # it served us, so it is ours to clear (its sessions are this kernel's now); not a refusal's end
            for leftover in (self.socket_path, self.socket_path + MANIFEST_SUFFIX):
                _unlink(leftover)
        if self._on_lost is not None:
            self._on_lost(why)


def _nonblocking(fds: list[int]) -> tuple[int, int]:
    for fd in fds:
        os.set_blocking(fd, False)
    return fds[0], fds[1]


def _pidfd(pid: int | None) -> int | None:
    try:
        return os.pidfd_open(pid) if pid else None
    except OSError:
        return None


def _peer(sock: socket.socket) -> tuple[int | None, int | None]:
    """The pid of the process that listens on the socket we connected (the keeper, which called listen), and a pidfd on it."""
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None, None
    pid, uid, _gid = struct.unpack("3i", credentials)
    return (pid, _pidfd(pid)) if uid == os.geteuid() and pid > 0 else (None, None)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


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
