"""Where a kernel's direct channel listens: one rule, read by the kernel that binds and the server that relays.

The socket sits beside the kernel's connection file as
`<connection file without .json>.uexec.sock`; when it cannot (a directory
others may enter, a path over the 107 bytes a Unix address holds), it sits in
a private directory and a pointer file beside the connection file,
`<...>.uexec.sockpath`, holds its path. The server only ever derives the path
from the connection file of a kernel it runs, never from a client.
"""

from __future__ import annotations

import os
import stat

SOCKET_SUFFIX = ".uexec.sock"
POINTER_SUFFIX = ".uexec.sockpath"
MAX_SOCKET_PATH_BYTES = 107
"""A Unix socket's address holds 108 bytes with its terminating NUL."""


def socket_names(connection_file: str) -> tuple[str, str]:
    """(socket, pointer): the two names beside a connection file."""
    base = connection_file[: -len(".json")] if connection_file.endswith(".json") else connection_file
    return base + SOCKET_SUFFIX, base + POINTER_SUFFIX


def find_socket(connection_file: str) -> str | None:
    """The socket a kernel with this connection file listens on, or None (no channel).

    The pointer wins when there is one; either way, only a socket owned by
    this process's user counts: a file someone else put there is no channel.
    """
    beside, pointer = socket_names(connection_file)
    path = beside
    try:
        info = os.lstat(pointer)
    except OSError:
        pass
    else:
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        try:
            with open(pointer, encoding="utf-8") as file:
                path = file.read(4096).strip()
        except (OSError, ValueError):
            return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.geteuid():
        return None
    return path
