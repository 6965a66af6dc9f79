"""What the kernel and its helper processes share: how each helper starts, and the keeper's records.

The guardian (guardian_process.py) and the keeper (keeper_process.py) run
as `python -I -S -c BOOTSTRAP ROOT ...`, loading their own module and a few
small ones, never the package's `__init__` (the whole engine; asyncio alone
is ~10 MB). The kernel needs only this much of them to start one and talk to
the keeper: the bootstraps, the keeper's inherited descriptors and its
messages' framing. Kept apart from the helpers' own code so that a kernel
does not hold the code of two programs it only starts (~130 KiB each
kernel a hub runs, benchmarks/bench_costs.py).
"""

from __future__ import annotations

import json
import os
import socket

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
"""The directory holding the `unified_exec_kernel` package: a helper's first argument."""


def _bootstrap(mark: str, module: str, serve_arguments: str) -> str:
    """A helper's program: stand-in packages, so that importing its module runs no package `__init__`.
    Its first line names it in `ps` (and in benchmarks/bench_costs.py, which finds it so)."""
    return f"""\
# uexec {mark} (unified_exec_kernel/core/process/{module}.py)
import sys, types
for name in ("unified_exec_kernel", "unified_exec_kernel.core", "unified_exec_kernel.core.process", "unified_exec_kernel.core.journal"):
    package = sys.modules[name] = types.ModuleType(name)
    package.__path__ = [sys.argv[1] + "/" + name.replace(".", "/")]
from unified_exec_kernel.core.process.{module} import serve
sys.exit(serve({serve_arguments}))
"""


GUARDIAN_BOOTSTRAP = _bootstrap("guardian: ends the kernel's sessions if it dies", "guardian_process", "int(sys.argv[2]), float(sys.argv[3])")
"""Run as `python -I -S -c GUARDIAN_BOOTSTRAP ROOT KERNEL_PID GRACE` (loads guardian_process.py, procs.py, journal/lifetime.py)."""
KEEPER_BOOTSTRAP = _bootstrap("keeper: holds a kernel's kept sessions across restarts", "keeper_process", "sys.argv[2], float(sys.argv[3])")
"""Run as `python -I -S -c KEEPER_BOOTSTRAP ROOT JOURNAL_DIR GRACE`, with the descriptors below."""

LISTEN_FD = 0
"""The listening socket, bound by the kernel that starts the keeper (so no kernel waits for a bind)."""
FIRST_KERNEL_FD = 3
"""The first kernel's connection (a socketpair made at start: no connect race)."""
DIRECTORY_LOCK_FD = 4
"""The owner lock of the kept journals' directory (core/journal/lifetime.py), held for the keeper's life."""
MANIFEST_SUFFIX = ".json"
"""Beside the socket: {"pid", "sessions": [{"id", "name", "command"}]}, rewritten as they change."""

PART_BYTES = 32 * 1024
"""The most one record of a message carries (well within any send buffer); a longer message goes in parts."""
MAX_MESSAGE_BYTES = 64 << 20
"""The most one message may carry in all: above what exec takes (ARG_MAX, 2 MiB here), JSON-escaped."""
RECORD_BYTES = 1 << 20
"""The longest record read: any one a socket carries (its send buffer's cap, net.core.wmem_max, is below),
so a message sent whole (a ping, an ack, news) is read whole whatever its size."""
_MORE = b"\x00"  # marks a record that more of the same message follows (JSON never starts with it)


def records(data: bytes) -> list[bytes]:
    """A message as the records that carry it: one if it fits `PART_BYTES`, else parts, each but the last marked."""
    if len(data) <= PART_BYTES:
        return [data]
    parts = [data[start : start + PART_BYTES] for start in range(0, len(data), PART_BYTES)]
    return [_MORE + part for part in parts[:-1]] + [parts[-1]]


def receive_message(connection: socket.socket, *, nonblocking: bool = False, partial: bytearray | None = None) -> tuple[dict | None, list[int]]:
    """One message and its fds; (None, []) at the end of the connection.

    `partial`: the caller's buffer of a message in parts, kept across reads that find the rest
    not there yet (BlockingIOError); without it, a message's parts are read in one call."""
    flags = socket.MSG_DONTWAIT if nonblocking else 0
    partial = bytearray() if partial is None else partial
    while True:
        data, fds, got, _address = socket.recv_fds(connection, RECORD_BYTES, 8, flags)
        if not data:
            return None, fds
        if got & socket.MSG_TRUNC:
            close_all(fds)
            raise ValueError(f"a record longer than {RECORD_BYTES:,} bytes")
        if data[:1] != _MORE:
            break
        close_all(fds)
        partial += memoryview(data)[len(_MORE):]
        if len(partial) > MAX_MESSAGE_BYTES:
            raise ValueError(f"a message longer than {MAX_MESSAGE_BYTES:,} bytes")
    if partial:
        partial += data
        data = bytes(partial)
        partial.clear()
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("a message must be an object")
    return message, fds


def close_all(fds) -> None:
    """Descriptors that came with a message nobody will use (each closed, a closed one skipped)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
