"""Start a program as the leader of a new session on a fresh pseudo-terminal.

Two ways, same terminal semantics (the tests run both):

- `posix_spawn` (default): `os.openpty` + `posix_spawn(setsid=True)` with a
  file action that opens the slave as fd 0, which makes it the child's
  controlling terminal. It costs ~1.5 ms where a `fork()` of a 50 MB kernel
  costs ~6 ms, and never runs Python in the child.
- `ptyprocess`, the reference way (forks), kept for platforms without
  `POSIX_SPAWN_SETSID`.

Either way the caller gets a non-blocking master fd it owns, and nothing that
will close or signal the child behind its back.
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import termios
from collections import namedtuple
from collections.abc import Mapping, Sequence

from ..errors import quoted

# Every signal the child may inherit as ignored (Python ignores SIGPIPE; a
# kernel may ignore SIGINT) goes back to its default, as in a fresh login.
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}

# A `handoff` reaches the child as this descriptor: a pipe holding just those bytes.
HANDOFF_FD = 3

# Not a dataclass: dataclasses (inspect, ast, dis) would add ~1.6 MiB to the keeper, which loads this module.
SpawnedPty = namedtuple("SpawnedPty", ["pid", "master_fd"])

def set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

def get_winsize(fd: int) -> tuple[int, int]:
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return rows, cols

def posix_spawn_available() -> bool:
    return hasattr(os, "posix_spawnp") and hasattr(os, "POSIX_SPAWN_OPEN")

def spawn_pty(
    argv: Sequence[str],
    env: Mapping[str, str],
    rows: int = 24,
    cols: int = 80,
    backend: str = "auto",
    cwd: str | None = None,
    handoff: bytes | None = None,
) -> SpawnedPty:
    """Raises OSError (FileNotFoundError for a missing program) in the caller, never in a child.

    `posix_spawn` cannot change directory before the exec, so a `cwd` takes
    the forking way (~6 ms instead of ~1.5). `handoff`: bytes the child reads
    from HANDOFF_FD (then end of file), for a secret that must not sit in its
    environment, where any process of the user can read it for the child's
    whole life (/proc/PID/environ).
    """
    if backend == "auto":
        backend = "posix_spawn" if posix_spawn_available() and cwd is None else "ptyprocess"
    if backend == "posix_spawn" and cwd is not None:
        backend = "ptyprocess"
    if backend not in ("posix_spawn", "ptyprocess"):
        raise ValueError(f"unknown spawn backend {quoted(backend)}: use 'posix_spawn' or 'ptyprocess'")
    # posix_spawn dups it to HANDOFF_FD (a dup onto itself would keep close-on-exec);
    # ptyprocess keeps it where it is when that is HANDOFF_FD (see _spawn_ptyprocess).
    handoff_fd = None if handoff is None else _pipe_holding(handoff, HANDOFF_FD + (backend == "posix_spawn"))
    try:
        if backend == "posix_spawn":
            spawned = _spawn_posix(list(argv), dict(env), rows, cols, handoff_fd)
        else:
            spawned = _spawn_ptyprocess(list(argv), dict(env), rows, cols, cwd, handoff_fd)
    finally:
        if handoff_fd is not None:
            os.close(handoff_fd)
    os.set_blocking(spawned.master_fd, False)
    return spawned

def _pipe_holding(data: bytes, lowest_fd: int) -> int:
    """The read end (close-on-exec, numbered `lowest_fd` or above) of a pipe that holds `data`, then EOF."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)  # a few bytes: the pipe's buffer takes them at once
    finally:
        os.close(write_end)
    try:
        return fcntl.fcntl(read_end, fcntl.F_DUPFD_CLOEXEC, lowest_fd)
    finally:
        os.close(read_end)

def _spawn_posix(argv: list[str], env: dict[str, str], rows: int, cols: int, handoff_fd: int | None) -> SpawnedPty:
    master, slave = os.openpty()
    try:
        set_winsize(slave, rows, cols)
        handoff = [] if handoff_fd is None else [(os.POSIX_SPAWN_DUP2, handoff_fd, HANDOFF_FD)]
        pid = os.posix_spawnp(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.ttyname(slave), os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, 0, 1),
                (os.POSIX_SPAWN_DUP2, 0, 2),
                *handoff,
            ],
            setsid=True,
            setsigmask=(),
            setsigdef=_DEFAULT_SIGNALS,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        # The child has its own descriptor for the slave; holding ours would keep
        # the terminal open after the child exits, and EOF would never come.
        os.close(slave)
    return SpawnedPty(pid, master)

def _reset_signals() -> None:
    for sig in _DEFAULT_SIGNALS:
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # not every valid signal may be caught or reset
    signal.pthread_sigmask(signal.SIG_SETMASK, ())

def _spawn_ptyprocess(argv: list[str], env: dict[str, str], rows: int, cols: int, cwd: str | None, handoff_fd: int | None) -> SpawnedPty:
    from ptyprocess import PtyProcess

    def child_setup() -> None:
        _reset_signals()
        if handoff_fd is not None:
            # ptyprocess closed every other descriptor; HANDOFF_FD was busy in the parent
            # unless it is ours, so its own error pipe is never the one replaced here.
            if handoff_fd == HANDOFF_FD:
                os.set_inheritable(HANDOFF_FD, True)
            else:
                os.dup2(handoff_fd, HANDOFF_FD)

    passed = () if handoff_fd is None else (handoff_fd,)
    process = PtyProcess.spawn(argv, env=env, cwd=cwd, dimensions=(rows, cols), preexec_fn=child_setup, pass_fds=passed)
    # ptyprocess would close (with a sleep) and kill the child when the object
    # is collected: keep a duplicate of the fd, close its own, and mark it
    # closed so its `__del__` does nothing.
    master = os.dup(process.fd)
    process.fileobj.close()
    process.closed = True
    return SpawnedPty(process.pid, master)
