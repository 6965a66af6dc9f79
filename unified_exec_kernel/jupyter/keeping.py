"""Where a kernel's kept sessions wait for the next kernel with its id, and how that kernel proves it.

A restart keeps the kernel's connection file (jupyter_client reuses it, with
its id and signing key), so both come from it: the keeper's socket sits
beside the file, as the direct channel's does (in Jupyter's runtime
directory, 0700), or, when that path is too long for a Unix address, in a
private 0700 directory of this user's named after the file; the token the
keeper asks of every kernel is an HMAC of the kernel id under the file's
key. Another user cannot reach the socket; another kernel of the same user
finds another socket and holds another key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import tempfile

from ..core.process.keeper import Keeper

SOCKET_SUFFIX = ".uexec-keep.sock"
MAX_SOCKET_PATH_BYTES = 107


def keeper_socket(connection_file: str) -> str:
    base = connection_file[: -len(".json")] if connection_file.endswith(".json") else connection_file
    beside = base + SOCKET_SUFFIX
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH_BYTES:
        return beside
    directory = os.path.join(tempfile.gettempdir(), f"uexec-keep-{os.geteuid()}")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise OSError(f"{directory} is not a private directory of this user")
    return os.path.join(directory, hashlib.sha256(os.fsencode(connection_file)).hexdigest()[:32] + ".sock")


def keeper_token(connection_file: str) -> str:
    """What proves a kernel has this connection file: an HMAC of its path under the file's key."""
    try:
        with open(connection_file, encoding="utf-8") as file:
            key = str(json.load(file).get("key", ""))
    except (OSError, ValueError, AttributeError):
        key = ""
    return hmac.new(key.encode(), b"uexec-keep:" + os.fsencode(os.path.abspath(connection_file)), hashlib.sha256).hexdigest()


def keeper_for(connection_file: str, *, journal_root: str | None, grace: float) -> Keeper:
    """The keeper of this kernel id's kept sessions (started with the first one, or found)."""
    return Keeper(keeper_socket(connection_file), keeper_token(connection_file), journal_root=journal_root, grace=grace)
