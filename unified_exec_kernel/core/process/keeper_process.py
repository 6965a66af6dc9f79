"""The keeper: holds a kernel's kept sessions while no kernel does, and hands them to the next one.

Started by `Keeper` (keeper.py, which says why it exists) as `python -I -S`,
loading only this module, helper_wire.py, spawn.py, procs.py and guardian_process.py (for
ending sessions). One keeper serves one kernel id: the kernel that starts it,
then each kernel restarted under the same connection file.

What it does for every kept session, and why it must be this process:

- It spawns the program, so it is its parent: only a parent learns an exit
  code, and the kernel that asked may be gone when the program ends.
- It is the only reader of the PTY master. What it reads goes to the kernel
  through a socket of the session's own (the kernel reads it as it would
  read the master), and stays in a ring until the kernel acknowledges it is
  in the journal (`ack`, with the offset it has in the kernel's cleaned
  output). A kernel killed between reading output and journaling it loses
  nothing: the next one is sent the ring from the last acknowledged byte,
  and drops what its journal already holds. A full ring (`RING_BYTES`)
  stops reading (the program waits), so memory stays bounded.
- While no kernel is connected it keeps reading into the ring, so the
  program goes on; a kernel that comes back within the grace
  takes every session back; otherwise the sessions are ended as the guardian
  ends them, the kept journals removed, and the keeper exits.

Keys and resizes never pass through here: the kernel writes the master it
is handed (SCM_RIGHTS) directly, so typing costs no extra hop.

The guardian (guardian_process.py) of the kernel connected now learns the
kept sessions from here: each kernel hands over a copy of its guardian's
pipe, and the keeper writes `P` (its pid), `G` (its grace), `*PID` for each
kept session and `-PID` once one is over; when the next kernel takes the
sessions back, the last kernel's guardian is told `R` and let go. So a kept
program never depends on the keeper alone: if the keeper dies while no
kernel holds its sessions, that guardian ends them. The keeper answers
`ping` with `pong`: a kernel that gets no answer in time ends the keeper as
stalled and takes its sessions over (keeper.py). What it holds is listed in
a file beside its socket (`MANIFEST_SUFFIX`), so a next kernel that had to
end a stalled keeper can say which sessions went with it.

It also stands in for the connected kernel's guardian. A kernel and its
guardian killed at one instant (a killed container's two processes, an OOM
kill of both) would leave the unkept sessions' programs that ignore the
hangup with no process that knows them. So the kernel sends the keeper the
guardian's news too (`news`: the same `+PID`, `-PID` and `J` lines, the
whole list first), held in a `guardian_process.Ledger` of its own (pidfds:
no recycled pid is signalled); once the kernel's connection and the
guardian's pipe (POLLERR on our copy: its reader is gone) have both ended,
the keeper ends those sessions and removes those journals as the guardian
would have. Kept sessions go on as always.

The control channel is a SOCK_SEQPACKET Unix socket: one JSON object per
message, file descriptors attached to the message they belong to. A record
must fit the socket's send buffer (net.core.wmem_default, 212,992 bytes
here; EMSGSIZE past it), far less than a command exec takes (a 110 KB
`bash -c` script, a 1 MB argv), so a message longer than `PART_BYTES` goes
as several records, each but the last marked (`records`, `receive_message`). Kernel
to keeper: `hello` (first, with the token the first kernel set, and its
guardian's pipe if it has one), `guardian` (a new guardian's pipe), `spawn`,
`ack`, `forget`, `ping`, `news`, `end`. Keeper to kernel: `welcome` (with its pid;
then one `session` per kept session, with its fds, then `ready`), `spawned` /
`failed`, `exit`, `pong`, `refused`.
"""

from __future__ import annotations

import collections
import errno
import json
import os
import select
import signal
import socket
import sys
import time
from _operator import _compare_digest  # hmac.compare_digest, without hashlib (OpenSSL): ~0.7 MiB

from . import guardian_process
from .helper_wire import DIRECTORY_LOCK_FD, FIRST_KERNEL_FD, LISTEN_FD, MANIFEST_SUFFIX, close_all, receive_message, records
from .spawn import spawn_pty

RING_BYTES = 256 * 1024 * 1024
"""Output the journal has not acknowledged yet (a kernel still writing it, restarting, or gone); past
it, reading waits for an ack and the program with it. A restart takes seconds: at a terminal's
~20 MB/s that is well within it, so even a flood goes on at its pace through one."""
READ_BYTES = 64 * 1024
HELLO_S = 2.0
"""How long a new connection may take to say hello (a kernel does at once); meanwhile everything else is served."""


class Kept:
    """One kept session as the keeper holds it."""

    def __init__(self, meta: dict, pid: int, master: int):
        self.meta = meta  # what the kernel gave at spawn (id, name, command, nonce, ...), plus restarts
        self.id = meta["id"]
        self.pid = pid
        self.master = master
        self.pidfd = _pidfd(pid)
        self.ring = bytearray()
        self.ring_start = 0  # raw offset of ring[0]
        self.read = 0  # raw bytes read from the master
        self.sent = 0  # raw offset up to which the current kernel was sent output
        self.out: socket.socket | None = None  # our end of the kernel's output socket
        self.eof = False
        self.exit_code: int | None = None
        self.reaped = False
        self.acked = {"raw": 0, "clean": 0, "state": {}}

    def describe(self) -> dict:
        return {**self.meta, "pid": self.pid, "exit_code": self.exit_code, "exited": self.reaped,
                "raw": self.sent, "clean": self.acked["clean"], "state": self.acked["state"]}


class Keeper:
    def __init__(self, journal_dir: str, grace: float, listener: socket.socket):
        self.journal_dir = journal_dir
        self.grace = grace
        self.listener = listener
        self.token: str | None = None
        self.kernel: socket.socket | None = None
        self.kernel_pid = 0
        self.lost_at: float | None = time.monotonic()  # no kernel yet: the first one connects at once
        self.sessions: dict[int, Kept] = {}
        self.guardian: int | None = None  # the write end of the connected kernel's guardian's pipe
        # The connected (or last) kernel's unkept sessions, as its guardian knows them: ours to end if both die.
        self.pidfds = _Registered()
        self.unkept = guardian_process.Ledger(0, self.pidfds)
        self.unkept_rest = b""  # a news line not complete yet
        self.ending = False
        self.greeting: dict[int, tuple[socket.socket, float]] = {}  # connections whose hello has not come yet, and until when it may
        # Messages for the kernel not sent yet (its socket was full), with the fds they carry and
        # those to close once sent: never dropped, so no answer or exit is lost.
        self.outbox: collections.deque[tuple[bytes, list[int], list[int]]] = collections.deque()
        self.partial = bytearray()  # the parts of a message from the kernel read so far

    # -- the loop ----------------------------------------------------------------

    def run(self, first: socket.socket) -> None:
        self._connected(first, first_kernel=True)
        while not self.ending:
            poller = select.poll()
            fds: dict[int, tuple[str, object]] = {self.listener.fileno(): ("listen", None)}
            poller.register(self.listener, select.POLLIN)
            for fd, (connection, _deadline) in self.greeting.items():
                fds[fd] = ("hello", connection)
                poller.register(fd, select.POLLIN)
            if self.kernel is not None:
                fds[self.kernel.fileno()] = ("kernel", None)
                poller.register(self.kernel, select.POLLIN | (select.POLLOUT if self.outbox else 0))
            if self.guardian is not None:
                fds[self.guardian] = ("guardian", None)
                poller.register(self.guardian, 0)  # POLLERR once its reader (the guardian) is gone
            for pidfd in self.pidfds:
                fds[pidfd] = ("unkept", None)
                poller.register(pidfd, select.POLLIN)
            for kept in self.sessions.values():
                if kept.pidfd is not None and not kept.reaped:
                    fds[kept.pidfd] = ("exit", kept)
                    poller.register(kept.pidfd, select.POLLIN)
                if not kept.eof and len(kept.ring) < RING_BYTES:
                    fds[kept.master] = ("master", kept)
                    poller.register(kept.master, select.POLLIN)
                if kept.out is not None and kept.sent < kept.read:
                    fds[kept.out.fileno()] = ("out", kept)
                    poller.register(kept.out, select.POLLOUT)
            deadlines = [deadline for _connection, deadline in self.greeting.values()]
            look = self.unkept.next_look_ms()
            if look is not None:
                deadlines.append(time.monotonic() + look / 1000)
            if self.kernel is None and self.lost_at is not None:
                deadlines.append(self.lost_at + self.grace)
            timeout = max(0, int((min(deadlines) - time.monotonic()) * 1000) + 1) if deadlines else None
            for fd, flags in poller.poll(timeout):
                kind, owner = fds.get(fd, (None, None))  # a session, or a connection saying hello
                if kind == "listen":
                    self._accept()
                elif kind == "hello":
                    if owner.fileno() in self.greeting:  # (not closed meanwhile)
                        self._greet(owner)
                elif kind == "kernel":
                    if flags & select.POLLOUT:
                        self._flush()
                    self._from_kernel()
                elif kind == "exit":
                    self._reap(owner)
                elif kind == "master":
                    self._read_master(owner)
                elif kind == "out":
                    self._send_output(owner)
                elif kind == "guardian" and self.guardian is not None and _reader_gone(self.guardian):
                    os.close(self.guardian)  # its kernel sends the next one's pipe, if it lives
                    self.guardian = None
                elif kind == "unkept":
                    self.unkept.exited(fd)
                if self.ending:
                    break
            self.unkept.look()
            self._stand_in_for_the_guardian()
            self._give_up_on_silent()
            if self.kernel is None and self.lost_at is not None and time.monotonic() >= self.lost_at + self.grace:
                self.end(f"no kernel took its sessions back within {self.grace:g} s")
        self._cleanup()

    # -- kernels -------------------------------------------------------------------

    def _accept(self) -> None:
        """Take a connection; its hello is read when it comes (the loop waits for it, never this call)."""
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        if not _same_user(connection):
            connection.close()
            return
        connection.setblocking(False)
        self.greeting[connection.fileno()] = (connection, time.monotonic() + HELLO_S)

    def _greet(self, connection: socket.socket) -> None:
        """A waiting connection spoke: its hello, or it is refused."""
        try:
            hello, fds = receive_message(connection, nonblocking=True)
        except BlockingIOError:
            return  # nothing yet after all: it waits on
        except (OSError, ValueError):
            hello, fds = None, []
        del self.greeting[connection.fileno()]
        if hello is None or hello.get("op") != "hello" or not self._token_ok(hello.get("token")):
            _send(connection, {"op": "refused", "why": "this kernel is not the one its sessions were kept for"})
            connection.close()
            close_all(fds)
            return
        if self.kernel is not None:
            self._from_kernel()  # it may have gone, its end not read yet: the new one may be its restart
        if self.kernel is not None:
            _send(connection, {"op": "refused", "why": f"kernel {self.kernel_pid} still holds these sessions"})
            connection.close()
            close_all(fds)
            return
        self._connected(connection, hello=hello, fds=fds)

    def _give_up_on_silent(self) -> None:
        now = time.monotonic()
        for fd, (connection, deadline) in list(self.greeting.items()):
            if now >= deadline:
                del self.greeting[fd]
                connection.close()

    def _token_ok(self, token) -> bool:
        return isinstance(token, str) and self.token is not None and _compare_digest(token, self.token)

    def _connected(self, connection: socket.socket, *, first_kernel: bool = False, hello: dict | None = None,
                   fds: list[int] = ()) -> None:
        self._stand_in_for_the_guardian()  # the last kernel's, before its news makes way for this one's
        connection.settimeout(2.0)
        if first_kernel:
            try:
                hello, fds = receive_message(connection)
            except (OSError, ValueError):
                hello = None
            if hello is None or hello.get("op") != "hello" or not isinstance(hello.get("token"), str):
                close_all(fds)
                self.end("the kernel that started the keeper never said hello")
                return
            self.token = hello["token"]
        if fds:
            self._guarded_by(fds[0])  # before anything else: the last kernel's guardian lets go only now
            close_all(fds[1:])
        # From here on never waited on: a read that finds nothing must return at once (a stale
        # event of a kernel that went may name this one's descriptor).
        connection.setblocking(False)
        self.kernel, self.kernel_pid, self.lost_at = connection, int(hello.get("pid") or 0), None
        self.partial.clear()
        self._forget_unkept()
        self.unkept = guardian_process.Ledger(self.kernel_pid, self.pidfds)
        sessions = list(self.sessions.values())
        self._tell({"op": "welcome", "journal_dir": self.journal_dir, "sessions": len(sessions), "pid": os.getpid()})
        for kept in sessions:
            kept.meta["restarts"] = kept.meta.get("restarts", 0) + 1
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            ours.setblocking(False)
            kept.out = ours
            kept.sent = kept.acked["raw"]
            gap = max(0, kept.ring_start - kept.sent)
            kept.sent = max(kept.sent, kept.ring_start)
            self._tell({"op": "session", **kept.describe(), "gap": gap}, [kept.master, theirs.fileno()], close=[theirs.detach()])
            self._maybe_close_output(kept)
        self._tell({"op": "ready"})

    def _tell(self, message: dict, fds: list[int] = (), *, close: list[int] = ()) -> None:
        """Send the kernel a message, in order after any still waiting; never blocks, never drops."""
        *parts, last = records(json.dumps(message).encode())
        self.outbox.extend((part, [], []) for part in parts)
        self.outbox.append((last, list(fds), list(close)))  # the fds go with the message's last record
        self._flush()

    def _flush(self) -> None:
        while self.outbox and self.kernel is not None:
            data, fds, close = self.outbox[0]
            try:
                if fds:
                    socket.send_fds(self.kernel, [data], fds, socket.MSG_DONTWAIT)
                else:
                    self.kernel.send(data, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                return  # it went: its end is read next
            self.outbox.popleft()
            for fd in close:
                os.close(fd)

    def _lost_kernel(self) -> None:
        for _data, _fds, close in self.outbox:
            for fd in close:
                os.close(fd)
        self.outbox.clear()
        if self.kernel is not None:
            self.kernel.close()
        self.kernel, self.lost_at = None, time.monotonic()
        for kept in self.sessions.values():
            if kept.out is not None:
                kept.out.close()
                kept.out = None

    def _from_kernel(self) -> None:
        """Everything the kernel sent so far (and its end, if it went)."""
        while self.kernel is not None and not self.ending:
            try:
                message, fds = receive_message(self.kernel, nonblocking=True, partial=self.partial)
            except BlockingIOError:
                return  # the rest of a message in parts comes with a later read
            except (OSError, ValueError):
                message, fds = None, []
            if message is None:
                close_all(fds)
                self._lost_kernel()
                return
            if message.get("op") == "guardian" and fds:
                self._guarded_by(fds.pop(0))
            close_all(fds)
            self._act(message)

    def _guarded_by(self, pipe: int) -> None:
        """Tell the connected kernel's guardian of every kept session, then let the last one go (`R`)."""
        os.set_inheritable(pipe, False)  # received fds are inheritable: no program may hold the pipe
        os.set_blocking(pipe, False)
        previous, self.guardian = self.guardian, pipe
        self._tell_guardian(b"P%d\nG%r\n" % (os.getpid(), self.grace)
                            + b"".join(b"*%d\n" % kept.pid for kept in self.sessions.values() if not kept.reaped))
        if previous is not None:
            _write_line(previous, b"R\n")
            os.close(previous)

    def _tell_guardian(self, lines: bytes) -> None:
        if self.guardian is not None and not _write_line(self.guardian, lines):
            os.close(self.guardian)  # it is gone (or wedged, and its kernel replaces it): a new one is sent
            self.guardian = None

    def _act(self, message: dict) -> None:
        op = message.get("op")
        if op == "ping":
            self._tell({"op": "pong"})
        elif op == "spawn":
            self._spawn(message)
        elif op == "ack":
            kept = self.sessions.get(message.get("id"))
            if kept is not None and isinstance(message.get("raw"), int):
                self._acked(kept, message)
        elif op == "forget":
            kept = self.sessions.pop(message.get("id"), None)
            if kept is not None:
                self._forget(kept)
                self._write_manifest()
        elif op == "news" and isinstance(message.get("lines"), str):
            self.unkept_rest = self.unkept.apply(self.unkept_rest + message["lines"].encode("ascii", "replace"))
        elif op == "end":
            self.end("the kernel shut down")

    # -- the guardian's stand-in -------------------------------------------------------

    def _stand_in_for_the_guardian(self) -> None:
        """The kernel and its guardian are both gone: end the unkept sessions as that guardian would have."""
        if self.kernel is not None or self.guardian is not None or not (self.unkept.session_ids or self.unkept.journal_dirs):
            return
        ended = guardian_process.end_sessions(self.unkept.unkept_ids)
        for directory in self.unkept.journal_dirs:
            guardian_process.lifetime.remove_kernel_journals(directory)
        if ended:
            print(f"uexec keeper: kernel {self.kernel_pid} and its guardian died together; "
                  f"ended {ended} process(es) of its sessions", file=sys.stderr)
        self._forget_unkept()

    def _forget_unkept(self) -> None:
        for leader in self.unkept.session_ids:
            self.unkept.forget(leader)
        self.unkept.journal_dirs.clear()
        self.unkept_rest = b""

    # -- sessions ----------------------------------------------------------------

    def _spawn(self, message: dict) -> None:
        meta = dict(message.get("meta") or {})
        meta["id"] = message["id"]
        env = dict(message["env"])
        for name in message.get("own_pid_in") or ():
            env[name] = str(os.getpid())  # we spawn it, not the kernel (the shell integration checks $PPID)
        cwd = message.get("cwd")
        handoff = message.get("handoff")
        try:
            if cwd is not None:
                os.chdir(cwd)  # posix_spawn starts in ours (the keeper runs nothing else meanwhile)
            try:
                spawned = spawn_pty(message["argv"], env, message.get("rows", 24), message.get("cols", 80),
                                    "posix_spawn", handoff=None if handoff is None else handoff.encode())
            finally:
                os.chdir("/")
        except OSError as error:
            self._tell({"op": "failed", "id": meta["id"], "errno": error.errno or errno.EIO, "error": error.strerror or str(error),
                        "filename": error.filename if isinstance(error.filename, str) else None})  # as an unkept spawn's error reads
            return
        kept = self.sessions[meta["id"]] = Kept(meta, spawned.pid, spawned.master_fd)
        self._tell_guardian(b"*%d\n" % kept.pid)
        self._write_manifest()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)
        kept.out = ours
        self._tell({"op": "spawned", "id": kept.id, "pid": kept.pid}, [kept.master, theirs.fileno()], close=[theirs.detach()])

    def _write_manifest(self) -> None:
        path = self._manifest_path()
        if path is None:
            return
        sessions = [{key: kept.meta.get(key) for key in ("id", "name", "command")} for kept in self.sessions.values()]
        try:
            with open(path + ".tmp", "w", encoding="utf-8") as file:
                json.dump({"pid": os.getpid(), "sessions": sessions}, file)
            os.replace(path + ".tmp", path)
        except OSError:
            pass  # only words for a kernel that finds us stalled: never worth failing for

    def _manifest_path(self) -> str | None:
        path = self.listener.getsockname()
        return path + MANIFEST_SUFFIX if isinstance(path, str) and path else None

    def _acked(self, kept: Kept, message: dict) -> None:
        raw = min(message["raw"], kept.sent)
        if raw < kept.acked["raw"]:
            return
        kept.acked = {"raw": raw, "clean": message.get("clean", 0), "state": message.get("state") or {}}
        drop = raw - kept.ring_start
        if drop > 0:
            del kept.ring[:drop]
            kept.ring_start = raw

    def _read_master(self, kept: Kept) -> None:
        try:
            data = os.read(kept.master, READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""  # EIO: every slave fd is closed
        if not data:
            kept.eof = True
            self._maybe_close_output(kept)
            return
        kept.ring += data
        kept.read += len(data)
        if kept.out is not None:
            self._send_output(kept)

    def _send_output(self, kept: Kept) -> None:
        # Its kernel may have gone earlier in the same round of events.
        while kept.out is not None and kept.sent < kept.read:
            start = kept.sent - kept.ring_start
            try:
                sent = kept.out.send(memoryview(kept.ring)[start : start + READ_BYTES])
            except BlockingIOError:
                return
            except OSError:
                kept.out.close()
                kept.out = None
                return
            kept.sent += sent
        self._maybe_close_output(kept)

    def _maybe_close_output(self, kept: Kept) -> None:
        # The kernel sees EOF as it would on the master: the program's output is over and all sent.
        if kept.eof and kept.out is not None and kept.sent >= kept.read:
            kept.out.close()
            kept.out = None

    def _reap(self, kept: Kept) -> None:
        try:
            pid, status = os.waitpid(kept.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = kept.pid, 0
        if not pid:
            return
        kept.reaped = True
        kept.exit_code = os.waitstatus_to_exitcode(status)
        self._tell_guardian(b"-%d\n" % kept.pid)
        if kept.pidfd is not None:
            os.close(kept.pidfd)
            kept.pidfd = None
        if self.kernel is not None:
            self._tell({"op": "exit", "id": kept.id, "code": kept.exit_code})

    def _forget(self, kept: Kept) -> None:
        if not kept.reaped:
            guardian_process.end_sessions([kept.pid], 0.2)
            try:
                os.waitpid(kept.pid, 0)
            except ChildProcessError:
                pass
            self._tell_guardian(b"-%d\n" % kept.pid)
        for fd in (kept.pidfd, kept.master):
            if fd is not None:
                os.close(fd)
        if kept.out is not None:
            kept.out.close()

    # -- the end -------------------------------------------------------------------

    def end(self, why: str) -> None:
        if self.ending:
            return
        self.ending = True
        live = [kept.pid for kept in self.sessions.values() if not kept.reaped]
        ended = guardian_process.end_sessions(live) if live else 0
        for kept in self.sessions.values():
            if not kept.reaped:
                try:
                    os.waitpid(kept.pid, 0)
                except ChildProcessError:
                    pass
        if self.sessions:
            print(f"uexec keeper: {why}; ended {len(self.sessions)} kept session(s) ({ended} process(es))", file=sys.stderr)

    def _cleanup(self) -> None:
        for connection, _deadline in self.greeting.values():
            connection.close()
        for kept in self.sessions.values():
            for fd in (kept.pidfd, kept.master):
                if fd is not None:
                    os.close(fd)
        if self.guardian is not None:
            os.close(self.guardian)  # every session is over: its guardian may go too
            self.guardian = None
        path = self.listener.getsockname()
        manifest = self._manifest_path()
        self.listener.close()
        for name in (path, manifest) if isinstance(path, str) and path else ():
            try:
                os.unlink(name)
            except OSError:
                pass
        import shutil  # here, at the end: shutil (bz2, lzma, fnmatch) is ~0.5 MiB of an idle keeper's memory

        shutil.rmtree(self.journal_dir, ignore_errors=True)


class _Registered(set):
    """The pidfds a `guardian_process.Ledger` holds, as its poller would be told: the loop polls them each turn."""

    def register(self, fd: int, _events: int) -> None:
        self.add(fd)

    def unregister(self, fd: int) -> None:
        self.discard(fd)


def _same_user(connection: socket.socket) -> bool:
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    except OSError:
        return False
    uid = int.from_bytes(credentials[4:8], sys.byteorder)
    return uid == os.geteuid()


def _send(connection: socket.socket | None, message: dict, fds: list[int] = ()) -> None:
    if connection is None:
        return
    data = json.dumps(message).encode()
    try:
        if fds:
            socket.send_fds(connection, [data], list(fds))
        else:
            connection.send(data)
    except OSError:
        pass  # a kernel that went away: its loss is noticed on the next read


def _write_line(pipe: int, data: bytes) -> bool:
    """Whole lines to a guardian's pipe, never waiting; False if it is gone or full."""
    try:
        return os.write(pipe, data) == len(data)
    except OSError:
        return False


def _reader_gone(pipe: int) -> bool:
    """Whether nobody reads this pipe any more (asked now: an event of the loop may name a closed fd's number)."""
    poller = select.poll()
    poller.register(pipe, 0)
    return any(flags & select.POLLERR for _fd, flags in poller.poll(0))


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def serve(journal_dir: str, grace: float) -> int:
    """The keeper's life: serve kernels until the sessions are ended (see the module docstring)."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    os.chdir("/")
    # Whatever else the kernel let us inherit is not ours to hold, nor our programs'.
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
        fd = int(name)
        if fd > 2 and fd not in (FIRST_KERNEL_FD, DIRECTORY_LOCK_FD):
            try:
                os.close(fd)
            except OSError:
                pass
    for fd in (LISTEN_FD, FIRST_KERNEL_FD, DIRECTORY_LOCK_FD):
        # Handed over by posix_spawn's dup2, so inheritable: no program we start may hold them
        # (one holding the kernel's connection would hide its end from the kernel).
        os.set_inheritable(fd, False)
    listener = socket.socket(fileno=LISTEN_FD)
    listener.setblocking(False)
    # Listening here, not in the kernel that bound it: a kernel that connects learns whose socket
    # it is (SO_PEERCRED names the process that called listen), and can end a keeper that stalls.
    listener.listen(64)
    first = socket.socket(fileno=FIRST_KERNEL_FD)
    keeper = Keeper(journal_dir, grace, listener)
    try:
        keeper.run(first)
    except Exception as error:  # noqa: BLE001 - whatever broke, the kept programs must not outlive us
        print(f"uexec keeper: failed ({error!r}); ending the kept sessions", file=sys.stderr)
        keeper.end("the keeper failed")
        keeper._cleanup()
        return 1
    return 0
