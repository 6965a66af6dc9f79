"""`Guardian`: the kernel's side of a process that ends its sessions if the kernel dies without doing it.

A kernel ended by SIGKILL, the OOM killer or jupyter_client's
`shutdown_kernel(now=True)` runs none of its cleanup, and a program that
ignores the terminal's hangup then lives on under PID 1 for ever. Only
another process can clean up after it. `Guardian` starts one
(guardian_process.py), lazily, with the first session, and tells it over a
pipe each session's leader pid (`+PID` when the session starts, `-PID` once
it is closed). When the pipe closes or the kernel exits, however it died,
the guardian ends every process of every session still on its list as
closing a session does (hangup, continue, terminate; SIGKILL after a grace),
removes the kernel's journal directory if it was told one (a `J` line; the
journals' own rules say what stays: journal/lifetime.py), then exits.

What it relies on, and why:

- Session ids, not a child subreaper. `PR_SET_CHILD_SUBREAPER` only adopts
  orphans among the subreaper's own descendants, so the guardian would have
  to start every session itself: a round trip and a PTY fd passed on every
  spawn, the path whose cost matters. Sessions are started with setsid, so
  every process of one (`bash -i` jobs, in their own process groups,
  included) carries the leader's pid as its session id, wherever it was
  reparented; /proc finds them (`procs.session_members`).
- Pidfds, so that a recycled pid is never signalled: the guardian holds one
  on each session's leader (then on its survivors) and drops a session the
  moment it is over, with or without the kernel's `-PID`; see
  guardian_process.py.
- A pipe and the kernel's pidfd. The pipe's EOF marks the kernel's end
  however it died; the pidfd also catches it when a child forked without
  exec (multiprocessing) still holds the pipe. Everything the kernel wrote
  before dying is read before acting.
- Its own session (posix_spawn with setsid): a killpg of the kernel's group
  (jupyter_client's kill and interrupt) or a hangup never reaches it; it
  ignores SIGINT and SIGHUP, sits in `/`, closes every inherited fd above 2.
- Cost. posix_spawn does not copy the kernel (no fork); the guardian is
  started on the loop's next turn after the first spawn and never waited
  for, so no spawn waits for it. A session costs the kernel two tiny
  non-blocking pipe writes; the guardian (~3.7 MiB of its own, `python -I -S`
  loading only guardian_process.py, procs.py and journal/lifetime.py, none of
  typing, re or asyncio: benchmarks/bench_costs.py) sleeps with no timer and handles
  news in batches. The kernel gets no thread: the guardian's own exit is a
  pidfd read on the loop.
- Trouble. A full pipe queues lines in memory, flushed with `add_writer`;
  past `MAX_PENDING_BYTES` the guardian counts as wedged and is killed and
  replaced. One that dies is reaped, logged once, and replaced with the
  whole list; one that keeps dying as it starts is given up on, logged. One
  that is stopped (SIGSTOP: its /proc state, looked at every
  `STALL_CHECK_S` while it runs) is a dead one: killed and replaced, so a
  kernel that dies later is not left with a guardian that never acts.
- Kept sessions. The keeper holds a copy of the pipe (`share`; each new
  guardian's copy goes to it through `on_new_pipe`) and tells the guardian
  of kept sessions itself, so the pipe's EOF means the kernel and the
  keeper are both gone (guardian_process.py).
- Dying with the kernel. A kernel and its guardian killed at one instant
  leave no process that knows the unkept sessions, unless a keeper runs:
  it is given the same news (`on_news`, the whole list first: `news`) and
  acts as the guardian would once both are gone (keeper_process.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from .forks import close_fd, drop_in_child
from .helper_wire import GUARDIAN_BOOTSTRAP, ROOT
from .procs import KILL_GRACE_S, is_stopped

log = logging.getLogger(__name__)

STALL_CHECK_S = 2.0
"""How often a running guardian is looked at for a stop (SIGSTOP): one found stopped is replaced."""
MAX_PENDING_BYTES = 1 << 20
"""Past this much unsent news the guardian counts as wedged, and is killed and replaced."""
_QUICK_DEATH_S = 5.0
_MAX_QUICK_DEATHS = 3
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


class Guardian:
    """Tells a guardian process which sessions to end if this process dies.

    Lives on the asyncio loop that owns the sessions and never blocks it.
    `close()` is the same news as the kernel's death: the guardian ends what
    is still watched (nothing, once every session was forgotten) and exits.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, python: str | None = None, grace: float = KILL_GRACE_S, journal_dir: str | None = None):
        """`journal_dir`: the kernel's journal directory, removed by the guardian once it ended the
        sessions (journal/lifetime.py's `remove_kernel_journals`: `.keep` and kept sessions' journals stay)."""
        self._loop = loop
        self._journal_dirs = [] if journal_dir is None else [journal_dir]
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
        self._shared = False  # a keeper holds a copy of the pipe: keep a guardian even with nothing watched
        self._on_new_pipe = None
        self._on_news = None
        self._stall_check: asyncio.TimerHandle | None = None
        drop_in_child(self)

    def forked_child(self) -> None:
        """A forked child neither holds the pipe (the guardian would not see its parent's EOF) nor knows the guardian."""
        close_fd(self._pipe)
        close_fd(self._exit_fd)
        self._pipe = self._exit_fd = self._pid = None
        self._start_handle = self._stall_check = None
        self._watched.clear()
        self._pending.clear()
        self._writing = self._shared = False
        self._given_up = True  # the parent's loop and guardian are not the child's: it starts none from here

    def share(self) -> int | None:
        """A copy of the pipe's write end for the keeper (the caller closes it), starting the guardian now if need be."""
        self._shared = True
        if self._pipe is None:
            self._start(announce=False)
        return None if self._pipe is None else os.dup(self._pipe)

    def remove_with_kernel(self, journal_dir: str) -> None:
        """Another journal directory this kernel owns now (a dead keeper's): removed as its own is."""
        self._journal_dirs.append(journal_dir)
        self._tell(_journal_line(journal_dir))

    def news(self) -> bytes:
        """The whole list as the lines a new guardian is told."""
        return b"".join(map(_journal_line, self._journal_dirs)) + b"".join(b"+%d\n" % leader for leader in sorted(self._watched))

    def on_news(self, callback) -> None:
        """`callback(lines)` gets each line of news as the guardian is told it (the keeper's copy)."""
        self._on_news = callback

    def on_new_pipe(self, callback) -> None:
        """`callback(fd)` gets a copy of each replacement guardian's pipe (to hand the keeper; it closes it)."""
        self._on_new_pipe = callback

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
        self._tell(b"+%d\n" % leader_pid)

    def forget(self, leader_pid: int) -> None:
        """The session is closed: its id may be reused and must leave the list."""
        if leader_pid not in self._watched:
            return
        self._watched.discard(leader_pid)
        self._tell(b"-%d\n" % leader_pid)

    async def close(self, timeout: float = 5.0) -> None:
        """Close the pipe and wait (bounded) for the guardian to exit, so it is reaped."""
        if self._start_handle is not None:
            self._start_handle.cancel()
            self._start_handle = None
        if self._stall_check is not None:
            self._stall_check.cancel()
            self._stall_check = None
        self._watched.clear()
        self._shared = False
        exited = self._exited
        if self._pipe is not None:
            self._retiring = True
            self._drop_pipe()
        if exited is not None and not exited.done() and self._exit_fd is not None:
            try:
                await asyncio.wait_for(asyncio.shield(exited), timeout)
            except asyncio.TimeoutError:
                log.warning("uexec: the guardian (pid %s) did not exit within %s s", self._pid, timeout)

    # -- starting --------------------------------------------------------------

    def _start_soon(self) -> None:
        if self._start_handle is None and self._pid is None and not self._given_up:
            self._start_handle = self._loop.call_soon(self._start)

    def _start(self, announce: bool = True) -> None:
        """`announce`: hand the keeper a copy of the new pipe (not when the keeper asked for it itself)."""
        self._start_handle = None
        if self._pid is not None or not (self._watched or self._shared) or self._given_up:
            return
        try:
            read_end, write_end = os.pipe()  # both close-on-exec: no session inherits them
        except OSError as error:  # out of descriptors: try again with the next session
            self._warn(f"uexec: cannot start the guardian process yet ({error})")
            return
        try:
            pid = os.posix_spawn(
                self._python,
                [self._python, "-I", "-S", "-c", GUARDIAN_BOOTSTRAP, ROOT, str(os.getpid()), repr(self._grace)],
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
        self._pending = bytearray(self.news())
        self._flush()
        self._stall_check = self._loop.call_later(STALL_CHECK_S, self._check_stopped)
        if announce and self._shared and self._on_new_pipe is not None and self._pipe is not None:
            self._on_new_pipe(os.dup(self._pipe))

    def _check_stopped(self) -> None:
        self._stall_check = None
        if self._pid is None:
            return
        if is_stopped(self._pid):
            self._replace("is stopped")
            return
        self._stall_check = self._loop.call_later(STALL_CHECK_S, self._check_stopped)

    def _watch_exit(self) -> None:
        try:
            self._exit_fd = os.pidfd_open(self._pid)
        except (AttributeError, OSError):
            self._exit_fd = None  # its death shows as EPIPE on the next write instead
            return
        self._loop.add_reader(self._exit_fd, self._on_exit)

    # -- writing ---------------------------------------------------------------

    def _tell(self, line: bytes) -> None:
        """News for the guardian (a starting one learns the whole list instead) and the keeper."""
        if self._pipe is not None:
            self._send(line)
        if self._on_news is not None:
            self._on_news(line)

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
        if self._stall_check is not None:
            self._stall_check.cancel()
            self._stall_check = None
        if self._quick_deaths > _MAX_QUICK_DEATHS:
            self._give_up("the guardian process keeps dying as it starts")
        elif self._watched or self._shared:
            self._start_soon()

    def _warn(self, message: str) -> None:
        # Once: a guardian that keeps failing must not flood the kernel's log.
        if self._warned:
            log.debug(message)
        else:
            self._warned = True
            log.warning(message)

    def _give_up(self, why: str) -> None:
        self._given_up = True
        log.error("uexec: %s; sessions will not be ended if this process dies without closing them", why)


def _journal_line(directory: str) -> bytes:
    return b"J%s\n" % os.fsencode(directory).hex().encode()  # hex: any path, one line
