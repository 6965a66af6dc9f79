"""A client of the direct channel that sends and never reads: what the kernel's memory must survive.

Shared by tests/protocol/test_direct.py (bounded, in CI) and benchmarks/bench_direct.py (the figures).
"""

from __future__ import annotations

import json
import socket
import time

from unified_exec_kernel.protocol import frames

MIB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    """The process's resident memory now (VmRSS)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def deaf_socket(path: str) -> socket.socket:
    """Connected, and never read from: the kernel's replies pile up wherever it lets them."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock


def send_for(sock: socket.socket, data: bytes, deadline: float) -> bool:
    """Send `data` unless the kernel stops taking it before `deadline` (back-pressure); whether it all went."""
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(remaining)
        try:
            view = view[sock.send(view) :]
        except (TimeoutError, socket.timeout):
            return False
    return True


def keystroke_flood(path: str, session_id: int, *, count: int = 200, size: int = MIB - 64, seconds: float = 20) -> tuple[socket.socket, int]:
    """`count` I frames of `size` keys to a program that never reads them; (the open socket, frames sent)."""
    sock = deaf_socket(path)
    frame = frames.input_frame(session_id, b"k" * size)
    deadline = time.monotonic() + seconds
    sent = 0
    while sent < count and send_for(sock, frame, deadline):
        sent += 1
    return sock, sent


def attach_storm(path: str, session: int | str, *, count: int = 400, seconds: float = 20) -> tuple[socket.socket, int]:
    """`count` attaches to one session from a client that never reads; (the open socket, attaches sent)."""
    sock = deaf_socket(path)
    deadline = time.monotonic() + seconds
    sent = 0
    while sent < count:
        message = {"type": "attach", "request_id": f"storm-{sent}", "session_id": session}
        if not send_for(sock, frames.text_frame(json.dumps(message).encode()), deadline):
            break
        sent += 1
    return sock, sent


def settled_rss(pid: int, seconds: float = 3.0) -> int:
    """The largest RSS seen over a short while: what the kernel holds once it has read what was sent."""
    deadline = time.monotonic() + seconds
    largest = 0
    while time.monotonic() < deadline:
        largest = max(largest, rss_bytes(pid))
        time.sleep(0.1)
    return largest
