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
