"""The guardian process: follows a kernel's news and ends its sessions when the kernel ends.

Started by `Guardian` (guardian.py, which says why it exists) as
`python -I -S`, loading only this module and procs.py. Its stdin is a pipe
from the kernel carrying `+PID` (a session started; its leader's pid is its
session id) and `-PID` (closed) lines. When the pipe closes or the kernel's
pidfd fires, it reads what is left, ends every process of every session on
its list (`end_sessions`) and exits.

Kept sessions (keeper_process.py) are on its list too, told by the keeper,
which holds a copy of the pipe's write end: `P<pid>` (the keeper), `G<s>`
(its grace), `*PID` (a kept session), `R` (a next kernel took them over:
forget them). So the pipe closes only once the kernel and the keeper are
both gone. At the kernel's end the guardian ends the sessions that are not
kept at once; the kept ones it leaves to a live keeper and waits, with no
timer but the grace: if the keeper dies (the pipe closes) or outstays its
grace (stalled), the guardian ends them itself (and the keeper). When the
kernel lives on past the keeper's death, the kernel takes the sessions over
and says `+PID`: they are no longer kept, and end with the kernel.

Never signalling a recycled pid: Linux does not reuse a number while any
process uses it as its pid, group or session id, and once a session's last
process is gone its id is free (pid_max is often 32768). So the list
(`Ledger`) never keeps an id whose session may have ended: it holds a pidfd
on the leader (opened first, then checked to be the kernel's child leading
that session), and when that exits, on each remaining member (checked the
same way); when the last one held exits it looks in /proc again, and drops
the session once two looks `LOOK_DELAY_S` apart find nobody. The kernel's
`-PID` is the quick way out, not the only one: a session that ended while
the kernel did not look cannot leave a stale id behind for hours. Signals go
through `procs.signal_members` (pidfd opened, then the session checked).

Quiet by design: no timer while nothing happens, news handled in batches
(`BATCH_S`) so that a burst of short sessions wakes it a few times a second
rather than three times a session; the kernel's end is acted on at once.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from . import procs
from ..journal import lifetime

KILL_GRACE_S = procs.KILL_GRACE_S
LOOK_DELAY_S = 0.05
"""A session whose last known process exited is looked for in /proc after this long (the kernel's
`-PID` usually comes first and saves the look), and once more this long after a look finds it
empty: a process forking while the first look read /proc could have been missed."""
BATCH_S = 0.05
"""News is handled at most this often (the kernel's end at once)."""


def serve(kernel_pid: int, grace: float = KILL_GRACE_S) -> int:
    """The guardian's life: follow the kernel's news on stdin until the kernel ends, then end its sessions."""
    _settle()
    kernel = _open_pidfd(kernel_pid)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    if kernel is not None:
        poller.register(kernel, select.POLLIN)
    ledger = Ledger(kernel_pid, poller)
    reader = _Lines(ledger)
    # Reparented already: the kernel died before we got here.
    kernel_alive = os.getppid() == kernel_pid
    while kernel_alive and reader.open:
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
                reader.read()
            elif fd == kernel:
                kernel_alive = False
            else:
                ledger.exited(fd)
        if kernel is None and os.getppid() != kernel_pid:
            kernel_alive = False
        if kernel_alive:
            ledger.look()
    reader.drain()  # a line cut short by the kernel's death is dropped
    if kernel is not None:
        poller.unregister(kernel)
    ended = end_sessions(ledger.unkept_ids, grace)
    for directory in ledger.journal_dirs:
        lifetime.remove_kernel_journals(directory)  # after the sessions: nothing writes to them any more
    ended += _outlast_the_keeper(ledger, reader, grace)
    if ended:
        print(
            f"uexec guardian: kernel {kernel_pid} left {len(ledger.session_ids)} session(s) open; "
            f"ended {ended} process(es)",
            file=sys.stderr,
        )
    return 0


KEEPER_MARGIN_S = 5.0
"""How long past its grace a keeper may take to end its sessions before it counts as stalled."""


def _outlast_the_keeper(ledger: "Ledger", reader: "_Lines", grace: float) -> int:
    """With the kernel gone, wait while a keeper holds kept sessions; end them if it dies or stalls."""
    deadline = time.monotonic() + (ledger.keeper_grace or 0.0) + KEEPER_MARGIN_S
    while ledger.kept_ids and reader.open:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill(ledger.keeper_pid)  # past its grace with sessions still held: it is stalled
            break
        look = ledger.next_look_ms()
        timeout = int(remaining * 1000) + 1
        for fd, _flags in ledger.poller.poll(timeout if look is None else min(look, timeout)):
            if fd == 0:
                reader.read()
            else:
                ledger.exited(fd)
        ledger.look()
    reader.drain()
    return end_sessions(ledger.kept_ids, grace) if ledger.kept_ids else 0


def _kill(pid: int | None) -> None:
    pidfd = _open_pidfd(pid) if pid else None
    if pidfd is None:
        return
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


class _Lines:
    """The pipe's lines, applied to the ledger as they come; `open` until its last writer closed it."""

    def __init__(self, ledger: "Ledger"):
        self._ledger = ledger
        self._partial = b""
        self.open = True

    def read(self) -> None:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self.open = bool(data)
        self._partial = self._ledger.apply(self._partial + data)

    def drain(self) -> None:
        """What is still in the pipe, without waiting for writers that may never close it."""
        self._partial = self._ledger.apply(self._partial + _drain(0))
        os.set_blocking(0, True)


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
        self.journal_dirs: list[str] = []  # `J<hex path>`: removed after the sessions are ended
        self.kept: set[int] = set()  # sessions a keeper holds (`*PID`): they outlive the kernel while it does
        self.keeper_pid: int | None = None  # `P<pid>`
        self.keeper_grace: float | None = None  # `G<seconds>`

    @property
    def poller(self) -> select.poll:
        return self._poller

    @property
    def session_ids(self) -> list[int]:
        return list(self._held)

    @property
    def unkept_ids(self) -> list[int]:
        return [session for session in self._held if session not in self.kept]

    @property
    def kept_ids(self) -> list[int]:
        return [session for session in self._held if session in self.kept]

    def apply(self, data: bytes) -> bytes:
        """Act on the complete lines of `data`; returns the incomplete rest."""
        *lines, rest = data.split(b"\n")
        for line in lines:
            kind = line[:1]
            if kind == b"J":
                try:
                    self.journal_dirs.append(os.fsdecode(bytes.fromhex(line[1:].decode("ascii"))))
                except ValueError:
                    pass
                continue
            if kind == b"R":
                for session in list(self.kept):
                    self.forget(session)
                continue
            try:
                number = float(line[1:]) if kind == b"G" else int(line[1:])
            except ValueError:
                continue
            if kind == b"+":
                self.kept.discard(number)  # a kept session whose keeper died: the kernel holds it now
                self.watch(number)
            elif kind == b"*":
                self.watch(number, parent=self.keeper_pid)
                if number in self._held:
                    self.kept.add(number)
            elif kind == b"-":
                self.forget(number)
            elif kind == b"P":
                self.keeper_pid = number
            elif kind == b"G":
                self.keeper_grace = number
        return rest

    def watch(self, leader: int, parent: int | None = None) -> None:
        """`parent`: whose child the leader is (the kernel's, unless a keeper started it)."""
        if leader in self._held:
            return
        self._held[leader] = {}
        pidfd = procs.open_member(leader, leader, parent=parent or self.kernel_pid)
        if pidfd is None:
            self._looks[leader] = (time.monotonic() + LOOK_DELAY_S, 0)  # gone already, or no pidfds: look
        else:
            self._hold(leader, pidfd, leader)

    def forget(self, leader: int) -> None:
        for pidfd in self._held.pop(leader, {}):
            self._release(pidfd)
        self._looks.pop(leader, None)
        self.kept.discard(leader)

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
                self.kept.discard(session)

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
