"""The physical floor of reading a command's output: a PTY drained by a tight os.read loop.

Every drain figure in the benchmarks is set beside this, measured in the same
run on the same machine, so a ratio says what the project's own code costs.
"""

from __future__ import annotations

import os
import pty
import time


def drain_pty(argv: list[str]) -> dict:
    """Run `argv` on a fresh PTY and read until EIO; the seconds (from spawn) and bytes read."""
    started = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    total = 0
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            total += len(data)
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    return {"seconds": elapsed, "bytes": total, "mb_per_s": total / elapsed / 1e6}


PTY_MAGIC = r'''
import os as _os, shlex as _shlex
from IPython.core.magic import register_cell_magic as _register

@_register
def pty_floor(line, cell):
    """The least a PTY cell magic does: the command line on a fresh PTY (posix_spawn, as the engine's
    default), read to EOF on the kernel's main thread, printed. No engine thread, no display, no journal."""
    argv = _shlex.split(cell)
    master, slave = _os.openpty()
    try:
        pid = _os.posix_spawnp(argv[0], argv, _os.environ, setsid=True,
                               file_actions=[(_os.POSIX_SPAWN_OPEN, 0, _os.ttyname(slave), _os.O_RDWR, 0),
                                             (_os.POSIX_SPAWN_DUP2, 0, 1), (_os.POSIX_SPAWN_DUP2, 0, 2)])
    finally:
        _os.close(slave)
    chunks = []
    while True:
        try:
            data = _os.read(master, 65536)
        except OSError:  # EIO: the program's side of the terminal is closed
            break
        if not data:
            break
        chunks.append(data)
    _os.close(master)
    _os.waitpid(pid, 0)
    print(b"".join(chunks).decode(errors="replace").replace("\r\n", "\n"), end="")
'''
"""A cell magic, `%%pty_floor`, defined in a kernel by running this: the floor of a `%%uexec` cell there."""
