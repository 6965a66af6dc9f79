"""A guardian process that ends a kernel's sessions when the kernel dies without doing it.

A kernel ended by SIGKILL, the OOM killer or jupyter_client's
`shutdown_kernel(now=True)` runs none of its cleanup, and a program that
ignores the terminal's hangup then lives on under PID 1 for ever. Only
another process can clean up after it. `Guardian` (the kernel's side) starts
one, lazily, with the first session, and tells it over a pipe each session's
leader pid (`+PID` when the session starts, `-PID` once it is closed). When
the pipe closes or the kernel exits, however it died, the guardian ends every
process of every session still on its list as closing a session does
(hangup, continue, terminate; SIGKILL after a grace), then exits.

What it relies on, and why:

- Session ids, not a child subreaper. `PR_SET_CHILD_SUBREAPER` only adopts
  orphans among the subreaper's own descendants, so the guardian would have
  to start every session itself: a round trip and a PTY fd passed on every
  spawn, the path whose cost matters. Sessions are started with setsid, so
  every process of one (`bash -i` jobs, in their own process groups,
  included) carries the leader's pid as its session id, wherever it was
  reparented; /proc finds them (`procs.session_members`).
- Pidfds, so that a recycled pid is never signalled. Linux does not reuse a
  number while any process uses it as its pid, group or session id; once a
  session's last process is gone, its id is free (pid_max is often 32768).
  The guardian therefore never keeps an id whose session may have ended: it
  holds a pidfd on the leader (opened first, then checked to be the kernel's
  child leading that session), and when the leader exits, on each remaining
  member (checked the same way); when the last one it holds exits it looks
  again, and drops the session once two looks a moment apart find nobody.
  The kernel's `-PID` is the fast path, not the only one: a session that
  ended unseen cannot leave a stale id for hours. Signals go through
  `procs.signal_members` (pidfd opened, then the session checked).
- A pipe and the kernel's pidfd. The pipe's EOF marks the kernel's end
  however it died; the pidfd also catches it when a child forked without
  exec (multiprocessing) still holds the pipe. Everything the kernel wrote
  before dying is read before acting.
- Its own session (posix_spawn with setsid): a killpg of the kernel's group
  (jupyter_client's kill and interrupt) or a hangup never reaches it; it
  ignores SIGINT and SIGHUP, sits in `/`, closes every inherited fd above 2.
- Cost. posix_spawn does not copy the kernel (no fork); the guardian is
  started on the loop's next turn after the first spawn and never waited
  for, so no spawn pays for it. A session costs the kernel two tiny
  non-blocking pipe writes. The guardian runs `python -I -S` loading only
  this module and procs.py (~11 MB; the package's `__init__` would add
  asyncio's ~10 MB), sleeps in poll() with no timer while nothing happens,
  and handles news in batches (`BATCH_S`): a burst of short sessions wakes
  it a few times a second, not three times a session.
  The kernel gets no thread: the guardian's own exit is a pidfd on the loop.
- Trouble. A full pipe queues lines in memory, flushed with `add_writer`;
  past `MAX_PENDING_BYTES` the guardian counts as wedged and is killed and
  replaced. One that dies is reaped, logged once, and replaced with the
  whole list; one that keeps dying as it starts is given up on, logged.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from typing import TYPE_CHECKING

from . import procs

if TYPE_CHECKING:
    import asyncio

KILL_GRACE_S = 1.0
"""How long the sessions' programs get to act on the hangup before SIGKILL (as closing a session)."""
LOOK_DELAY_S = 0.05
"""A session whose last known process exited is looked for in /proc after this long (the kernel's
`-PID` usually comes first and saves the look), and once more this long after a look finds it
empty: a process forking while the first look read /proc could have been missed."""
BATCH_S = 0.05
"""The guardian handles news at most this often (the kernel's end at once)."""
MAX_PENDING_BYTES = 1 << 20
_QUICK_DEATH_S = 5.0
_MAX_QUICK_DEATHS = 3
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Run as `python -I -S -c _BOOTSTRAP ROOT KERNEL_PID GRACE`: the package's
# `__init__` would import the whole engine; stand-in packages load only this
# module and procs.py.
_BOOTSTRAP = """\
# uexec guardian: ends the kernel's sessions if it dies (unified_exec_kernel/core/guardian.py)
import sys, types
for name in ("unified_exec_kernel", "unified_exec_kernel.core"):
    package = sys.modules[name] = types.ModuleType(name)
    package.__path__ = [sys.argv[1] + "/" + name.replace(".", "/")]
from unified_exec_kernel.core.guardian import serve
sys.exit(serve(int(sys.argv[2]), float(sys.argv[3])))
"""


def _log():
    # Imported on use: the guardian process never needs logging.
    import logging

    return logging.getLogger(__name__)


# -- the kernel's side --------------------------------------------------------


class Guardian:
    """Tells a guardian process which sessions to end if this process dies.

    Lives on the asyncio loop that owns the sessions and never blocks it.
    `close()` is the same news as the kernel's death: the guardian ends what
    is still watched (nothing, once every session was forgotten) and exits.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, python: str | None = None, grace: float = KILL_GRACE_S):
        self._loop = loop
        self._python = python or sys.executable
        self._grace = grace
        self._watched: set[int] = set()
        self._pending = bytearray()
        self._pipe: int | None = None  # write end; the guardian holds the read end as stdin
        self._writing = False
        self._pid: int | None = None  # the guardian process, until reaped
        self._exit_fd: int | None = None  # its pidfd, read on the loop
        self._started = 0.0
        self._start_handle: asyncio.Handle | None = None
        self._retiring = False  # we closed or killed it: its exit is no news
        self._exited: asyncio.Future[None] | None = None
        self._quick_deaths = 0
        self._warned = False
        self._given_up = False

    @property
    def pid(self) -> int | None:
        """The guardian process's pid while it runs (None before the first session)."""
        return self._pid

    @property
    def watched(self) -> frozenset[int]:
        return frozenset(self._watched)

    def watch(self, leader_pid: int) -> None:
        """Have this session ended if the process dies (the leader's pid is its session id)."""
        self._watched.add(leader_pid)
        if self._pipe is None:
            self._start_soon()  # it learns the whole list as it starts
        else:
            self._send(b"+%d\n" % leader_pid)

    def forget(self, leader_pid: int) -> None:
        """The session is closed: its id may be reused and must leave the list."""
        if leader_pid not in self._watched:
            return
        self._watched.discard(leader_pid)
        if self._pipe is not None:
            self._send(b"-%d\n" % leader_pid)

    async def close(self, timeout: float = 5.0) -> None:
        """Close the pipe and wait (bounded) for the guardian to exit, so it is reaped."""
        import asyncio

        if self._start_handle is not None:
            self._start_handle.cancel()
            self._start_handle = None
        self._watched.clear()
        exited = self._exited
        if self._pipe is not None:
            self._retiring = True
            self._drop_pipe()
        if exited is not None and not exited.done() and self._exit_fd is not None:
            try:
                await asyncio.wait_for(asyncio.shield(exited), timeout)
            except asyncio.TimeoutError:
                _log().warning("uexec: the guardian (pid %s) did not exit within %s s", self._pid, timeout)

    # -- starting --------------------------------------------------------------

    def _start_soon(self) -> None:
        if self._start_handle is None and self._pid is None and not self._given_up:
            self._start_handle = self._loop.call_soon(self._start)

    def _start(self) -> None:
        self._start_handle = None
        if self._pid is not None or not self._watched or self._given_up:
            return
        read_end, write_end = os.pipe()  # both close-on-exec: no session inherits them
        try:
            pid = os.posix_spawn(
                self._python,
                [self._python, "-I", "-S", "-c", _BOOTSTRAP, _ROOT, str(os.getpid()), repr(self._grace)],
                {},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_end, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                ],
                setsid=True,
                setsigmask=(),
                setsigdef=_DEFAULT_SIGNALS,
            )
        except (OSError, AttributeError, TypeError) as error:
            os.close(write_end)
            self._give_up(f"cannot start the guardian process ({error})")
            return
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)
        self._pipe, self._pid, self._retiring = write_end, pid, False
        self._started = self._loop.time()
        self._exited = self._loop.create_future()
        self._watch_exit()
        self._pending = bytearray(b"".join(b"+%d\n" % leader for leader in sorted(self._watched)))
        self._flush()

    def _watch_exit(self) -> None:
        try:
            self._exit_fd = os.pidfd_open(self._pid)
        except (AttributeError, OSError):
            self._exit_fd = None  # its death shows as EPIPE on the next write instead
            return
        self._loop.add_reader(self._exit_fd, self._on_exit)

    # -- writing ---------------------------------------------------------------

    def _send(self, line: bytes) -> None:
        self._pending += line
        if not self._writing:
            self._flush()
        elif len(self._pending) > MAX_PENDING_BYTES:
            self._replace("stopped reading its pipe")

    def _flush(self) -> None:
        while self._pending:
            try:
                written = os.write(self._pipe, self._pending)
            except BlockingIOError:
                if not self._writing:
                    self._loop.add_writer(self._pipe, self._flush)
                    self._writing = True
                return
            except OSError:  # EPIPE: it died and its pidfd has not been read yet
                self._drop_pipe()
                if self._exit_fd is None:
                    self._reap(os.WNOHANG)
                return
            del self._pending[:written]
        if self._writing:
            self._loop.remove_writer(self._pipe)
            self._writing = False

    def _drop_pipe(self) -> None:
        if self._pipe is None:
            return
        if self._writing:
            self._loop.remove_writer(self._pipe)
            self._writing = False
        os.close(self._pipe)
        self._pipe = None
        self._pending.clear()

    # -- its end -----------------------------------------------------------------

    def _replace(self, why: str) -> None:
        self._warn(f"uexec: the guardian (pid {self._pid}) {why}; replacing it")
        self._retiring = True
        # Killed before its pipe closes, so it never takes the EOF for the kernel's death.
        # Still our unreaped child: the pid is exact.
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._drop_pipe()
        if self._exit_fd is None:
            self._reap(0)  # a SIGKILLed process is gone at once

    def _on_exit(self) -> None:
        self._loop.remove_reader(self._exit_fd)
        os.close(self._exit_fd)
        self._exit_fd = None
        self._reap(os.WNOHANG)

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self._pid, flags)
        except ChildProcessError:
            pid, status = self._pid, 0  # somebody else reaped it
        if not pid:
            return
        self._drop_pipe()
        if not self._retiring:
            lived = self._loop.time() - self._started
            self._quick_deaths = self._quick_deaths + 1 if lived < _QUICK_DEATH_S else 0
            self._warn(
                f"uexec: the guardian (pid {self._pid}) exited with status {os.waitstatus_to_exitcode(status)}; "
                "starting another"
            )
        self._pid = None
        if self._exited is not None and not self._exited.done():
            self._exited.set_result(None)
        if self._quick_deaths > _MAX_QUICK_DEATHS:
            self._give_up("the guardian process keeps dying as it starts")
        elif self._watched:
            self._start_soon()

    def _warn(self, message: str) -> None:
        # Once: a guardian that keeps failing must not flood the kernel's log.
        if self._warned:
            _log().debug(message)
        else:
            self._warned = True
            _log().warning(message)

    def _give_up(self, why: str) -> None:
        self._given_up = True
        _log().error("uexec: %s; sessions will not be ended if this process dies without closing them", why)


# -- the guardian process ------------------------------------------------------


def serve(kernel_pid: int, grace: float = KILL_GRACE_S) -> int:
    """The guardian's life: follow the kernel's news on stdin until the kernel ends, then end its sessions."""
    _settle()
    kernel = _open_pidfd(kernel_pid)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    if kernel is not None:
        poller.register(kernel, select.POLLIN)
    ledger = Ledger(kernel_pid, poller)
    partial = b""
    # Reparented already: the kernel died before we got here.
    kernel_alive = os.getppid() == kernel_pid
    while kernel_alive:
        timeout = ledger.next_look_ms()
        if kernel is None:
            timeout = 1000 if timeout is None else min(timeout, 1000)  # no pidfd: check the parent now and then
        events = poller.poll(timeout)
        if events and not any(fd == kernel or (fd == 0 and flags & select.POLLHUP) for fd, flags in events):
            # Not the kernel's end: let a burst of news gather, so that a kernel
            # spawning hundreds of short sessions a second wakes us a few times,
            # not three times a session.
            time.sleep(BATCH_S)
            events = poller.poll(0)
        for fd, _flags in events:
            if fd == 0:
                data = os.read(0, 65536)
                kernel_alive = kernel_alive and bool(data)
                partial = ledger.apply(partial + data)
            elif fd == kernel:
                kernel_alive = False
            else:
                ledger.exited(fd)
        if kernel is None and os.getppid() != kernel_pid:
            kernel_alive = False
        if kernel_alive:
            ledger.look()
    ledger.apply(partial + _drain(0))  # a line cut short by the kernel's death is dropped
    ended = end_sessions(ledger.session_ids, grace)
    if ended:
        print(
            f"uexec guardian: kernel {kernel_pid} left {len(ledger.session_ids)} session(s) open; "
            f"ended {ended} process(es)",
            file=sys.stderr,
        )
    return 0


def _settle() -> None:
    # Whatever the kernel inherited as inheritable (it passes on to us) must
    # not be held open by us: somebody may be waiting for its EOF.
    try:
        inherited = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        inherited = list(range(3, 256))
    for fd in inherited:
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    os.chdir("/")  # never keep a mount busy
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a pidfd per session
    except (ImportError, OSError, ValueError):
        pass


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _drain(fd: int) -> bytes:
    """What is still in the pipe, without waiting for writers that may never close it."""
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


class Ledger:
    """The sessions to end, each with pidfds on processes known to be in it.

    A session with no pidfd is either due for a look (`_looks`) or, if its
    processes could not be opened (no pidfds, out of descriptors), kept as is
    until the kernel forgets it.
    """

    def __init__(self, kernel_pid: int, poller: select.poll):
        self.kernel_pid = kernel_pid
        self._poller = poller
        self._held: dict[int, dict[int, int]] = {}  # session id -> {pidfd: pid}
        self._session_of: dict[int, int] = {}  # pidfd -> session id
        self._looks: dict[int, tuple[float, int]] = {}  # session id -> (when, empty looks so far)

    @property
    def session_ids(self) -> list[int]:
        return list(self._held)

    def apply(self, data: bytes) -> bytes:
        """Act on the complete lines of `data`; returns the incomplete rest."""
        *lines, rest = data.split(b"\n")
        for line in lines:
            try:
                pid = int(line[1:])
            except ValueError:
                continue
            if line[:1] == b"+":
                self.watch(pid)
            elif line[:1] == b"-":
                self.forget(pid)
        return rest

    def watch(self, leader: int) -> None:
        if leader in self._held:
            return
        self._held[leader] = {}
        pidfd = procs.open_member(leader, leader, parent=self.kernel_pid)
        if pidfd is None:
            self._looks[leader] = (time.monotonic() + LOOK_DELAY_S, 0)  # gone already, or no pidfds: look
        else:
            self._hold(leader, pidfd, leader)

    def forget(self, leader: int) -> None:
        for pidfd in self._held.pop(leader, {}):
            self._release(pidfd)
        self._looks.pop(leader, None)

    def exited(self, pidfd: int) -> None:
        session = self._session_of.get(pidfd)
        if session is None:
            return
        del self._held[session][pidfd]
        self._release(pidfd)
        if not self._held[session]:
            # The last process we held is gone; others may have been forked meanwhile.
            self._looks[session] = (time.monotonic() + LOOK_DELAY_S, 0)

    def next_look_ms(self) -> int | None:
        if not self._looks:
            return None
        soonest = min(when for when, _ in self._looks.values())
        return max(0, int((soonest - time.monotonic()) * 1000) + 1)

    def look(self) -> None:
        """Find the processes of sessions due for a look; drop those found empty twice."""
        now = time.monotonic()
        due = [session for session, (when, _) in self._looks.items() if when <= now]
        if not due:
            return
        for session, pids in procs.session_members(due).items():
            empty_looks = self._looks.pop(session)[1]
            for pid in pids:
                pidfd = procs.open_member(pid, session)
                if pidfd is not None:
                    self._hold(session, pidfd, pid)
            if pids:
                continue  # held again, or kept unheld when none could be opened
            if empty_looks == 0:
                self._looks[session] = (now + LOOK_DELAY_S, 1)
            else:
                del self._held[session]  # over: its id may be reused from now on

    def _hold(self, session: int, pidfd: int, pid: int) -> None:
        self._held[session][pidfd] = pid
        self._session_of[pidfd] = session
        self._poller.register(pidfd, select.POLLIN)

    def _release(self, pidfd: int) -> None:
        self._session_of.pop(pidfd, None)
        self._poller.unregister(pidfd)
        os.close(pidfd)


def end_sessions(session_ids: list[int], grace: float = KILL_GRACE_S) -> int:
    """Hang up every process of these sessions, SIGKILL what is left after `grace`. Blocking.

    Returns how many processes were signalled.
    """
    found = procs.session_members(session_ids)
    signalled: set[int] = set()
    for session, pids in found.items():
        procs.signal_members(session, pids, procs.HANGUP_SIGNALS)
        signalled.update(pids)
    deadline = time.monotonic() + grace
    while any(found.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
        found = procs.session_members(session_ids)
    for _ in range(50):  # a session forking as fast as it is killed is given a bounded fight
        if not any(found.values()):
            break
        for session, pids in found.items():
            procs.signal_members(session, pids, [signal.SIGKILL])
            signalled.update(pids)
        time.sleep(0.02)
        found = procs.session_members(session_ids)
    return len(signalled)
