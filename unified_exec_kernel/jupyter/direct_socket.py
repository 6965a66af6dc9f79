"""The kernel's end of the direct channel: a Unix socket with exactly the trust of its connection file.

Whoever can read the kernel's connection file can already run code in it
(the file holds the key that signs its messages); nobody else may reach the
live view's socket either. So the socket sits beside that file, in Jupyter's
runtime directory (0700), mode 0600, named by protocol/address.py's rule,
and the Jupyter server, which started the kernel and knows the connection
file, finds it by the same rule. No TCP port, ever. (The names are handed in
by the extension: this room knows the engine, not the protocol.)

Two cases need a private directory of our own (`mkdtemp`, 0700) with a
pointer file beside the connection file naming the socket in it: a runtime
directory that group or others may enter, and a path over the 107 bytes a
Unix socket's address holds. A socket file left by a kernel that died hard
(nothing listens: connecting is refused) is unlinked before binding; one
something still listens on is left alone, and the private directory used.
What such kernels left elsewhere is swept on the way: sockets and pointer
files beside connection files that are gone (ours, nothing listening), and
private directories (ours, over a minute old) holding nothing, or only a
socket nothing listens on.

The socket lives as long as the engine's loop (engine_thread.py's service):
listening from its start, closed with every connection and its files
removed when it stops, and removed again by `release` from whichever thread
ends the kernel (shutdown, atexit, SIGTERM), whatever the loop's state.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

MAX_SOCKET_PATH_BYTES = 107  # sun_path holds 108 with its NUL
PRIVATE_PREFIX = "uexec-"
PRIVATE_NAME = "s"
BACKLOG = socket.SOMAXCONN
"""Connections waiting to be accepted, at most (the kernel caps it at net.core.somaxconn): a page
reloading its views, or a server relaying many tabs at once, connects in a burst, and a short
queue refuses the rest with EAGAIN while the engine's loop is busy."""
STALE_AFTER_S = 60.0
"""A private directory younger than this may be a kernel's between bind and listen: never swept."""
_MKDTEMP_NAME = re.compile(re.escape(PRIVATE_PREFIX) + r"[a-z0-9_]{8}")
"""What `mkdtemp(prefix=PRIVATE_PREFIX)` names: the sweeps touch nothing else that starts alike
(the keepers' `uexec-keep-<uid>`, a test's or a tool's `uexec-...` folder)."""

ProtocolFactory = Callable[[Callable[[asyncio.Protocol], None]], asyncio.Protocol]
"""Given the callback a connection calls once it is lost, a protocol for one new connection."""
Names = Callable[[str], tuple[str, str]]
"""A connection file -> (the socket beside it, the pointer file): protocol/address.py's rule."""


def kernel_connection_file() -> str | None:
    """The running ipykernel's connection file, absolute; None outside a kernel (plain IPython)."""
    try:
        from ipykernel.kernelapp import IPKernelApp
    except ImportError:
        return None
    if not IPKernelApp.initialized():
        return None
    path = IPKernelApp.instance().abs_connection_file
    return os.path.abspath(path) if path else None


def kernel_id_of(connection_file: str | None) -> str:
    """The id a Jupyter server knows the kernel by: `kernel-<id>.json` gives `<id>`, anything else ""."""
    if not connection_file:
        return ""
    name = os.path.basename(connection_file)
    if name.startswith("kernel-") and name.endswith(".json") and len(name) > len("kernel-.json"):
        return name[len("kernel-") : -len(".json")]
    return ""


def private_to_us(directory: str) -> bool:
    """Ours, and closed to group and others (as Jupyter's runtime directory is)."""
    try:
        info = os.stat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


class DirectSocket:
    """The listening socket and its files; an engine service (see the module docstring)."""

    def __init__(self, connection_file: str, names: Names, protocol_factory: ProtocolFactory):
        """`names(connection_file)`: where the socket goes when it can, and the file naming it when it cannot."""
        self.connection_file = connection_file
        self._names = names
        self._factory = protocol_factory
        self.path: str | None = None  # where it listens, once it does
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of our socket file
        self._pointer: str | None = None
        self._private_dir: str | None = None
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Protocol] = set()

    # -- the engine service ------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            sock = self._listen()
        except OSError as error:
            log.warning("uexec: no direct channel for the live view (%s); it uses the comm", error)
            self.release()
            return
        loop.create_task(self._serve(loop, sock))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for connection in list(self._connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
        self._connections.clear()
        self.release()

    def release(self) -> None:
        """Remove the socket, the pointer and the private directory, if they are still ours."""
        path, self.path = self.path, None
        if path is not None and self._identity is not None:
            try:
                info = os.lstat(path)
                if (info.st_dev, info.st_ino) == self._identity:
                    os.unlink(path)
            except OSError:
                pass
        self._identity = None
        pointer, self._pointer = self._pointer, None
        if pointer is not None:
            try:
                with open(pointer, encoding="utf-8") as file:
                    named = file.read().strip()
                if named == path:
                    os.unlink(pointer)
            except OSError:
                pass
        private, self._private_dir = self._private_dir, None
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)

    # -- binding -----------------------------------------------------------------

    def _listen(self) -> socket.socket:
        beside, pointer = self._names(self.connection_file)
        usable = private_to_us(os.path.dirname(beside)) and len(os.fsencode(beside)) <= MAX_SOCKET_PATH_BYTES
        sweep_runtime_dir(os.path.dirname(self.connection_file), self._names)
        if usable and not _clear_stale(beside):
            usable = False  # something listens there: never take it over
        if usable:
            _remove_quietly(pointer)  # a pointer of an earlier run would send the server elsewhere
            return self._bind(beside)
        sweep_private_dirs(tempfile.gettempdir())
        self._private_dir = tempfile.mkdtemp(prefix=PRIVATE_PREFIX)  # 0700
        path = os.path.join(self._private_dir, PRIVATE_NAME)
        if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
            raise OSError(errno.ENAMETOOLONG, f"even the private socket path is over {MAX_SOCKET_PATH_BYTES} bytes: {path}")
        sock = self._bind(path)
        _write_atomically(pointer, path + "\n")
        self._pointer = pointer
        return sock

    def _bind(self, path: str) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # The directory is 0700, so nobody reaches the file between bind and
            # chmod; the process-wide umask is left alone (other threads create files).
            sock.bind(path)
            os.chmod(path, 0o600)
            info = os.lstat(path)
            self._identity = (info.st_dev, info.st_ino)
            self.path = path
            sock.listen(BACKLOG)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    async def _serve(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        def connection() -> asyncio.Protocol:
            protocol = self._factory(self._connections.discard)
            self._connections.add(protocol)
            return protocol

        try:
            self._server = await loop.create_unix_server(connection, sock=sock, backlog=BACKLOG)  # asyncio listens again, with 100 by default
        except OSError as error:
            log.warning("uexec: the direct channel's socket could not serve (%s)", error)
            sock.close()
            self.release()


def sweep_runtime_dir(directory: str, names: Names) -> None:
    """Unlink sockets and pointer files of kernels that died hard: their connection file is gone and nothing listens.

    Only our own files: a pointer sits beside its connection file, which may be in a directory
    others share (/tmp, where a connection file made by `tempfile` lives)."""
    socket_suffix, pointer_suffix = (os.path.basename(name)[len("k") :] for name in names("k.json"))
    try:
        entries = os.scandir(directory)  # entry by entry, as sweep_private_dirs reads /tmp
    except OSError:
        return
    with entries:
        for entry in entries:
            for suffix, clear in ((socket_suffix, _clear_stale), (pointer_suffix, _clear_stale_pointer)):
                if entry.name.endswith(suffix):
                    _sweep_orphan(entry, os.path.join(directory, entry.name[: -len(suffix)] + ".json"), clear)


def _sweep_orphan(entry: os.DirEntry, connection_file: str, clear: Callable[[str], object]) -> None:
    try:
        if os.path.lexists(connection_file) or entry.stat(follow_symlinks=False).st_uid != os.geteuid():
            return  # its kernel's connection file is there (its kernel decides), or another user's: never ours
        clear(entry.path)
    except OSError:
        pass  # gone meanwhile, or not ours to remove


def _clear_stale_pointer(pointer: str) -> None:
    """Unlink a pointer file of ours whose socket nothing listens on (that socket goes too)."""
    try:
        info = os.lstat(pointer)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return
        with open(pointer, encoding="utf-8") as file:
            named = file.read(4096).strip()
    except (OSError, ValueError):
        return
    if not named or _clear_stale(named):
        _remove_quietly(pointer)
        _remove_private_dir_of(named)


def sweep_private_dirs(parent: str) -> None:
    """Remove our private directories, over a minute old, that hold nothing or only a socket nothing listens on.

    The directory is read entry by entry: /tmp can hold thousands, and a list of them all would
    leave its high-water mark in the kernel's memory for good."""
    try:
        entries = os.scandir(parent)
    except OSError:
        return
    with entries:
        for entry in entries:
            if _MKDTEMP_NAME.fullmatch(entry.name):
                _sweep_private_dir(entry)


def _sweep_private_dir(entry: os.DirEntry) -> None:
    try:
        if not entry.is_dir(follow_symlinks=False):
            return
        info = entry.stat(follow_symlinks=False)
        if info.st_uid != os.geteuid() or time.time() - info.st_mtime < STALE_AFTER_S:
            return
        inside = os.listdir(entry.path)
        if not inside or (inside == [PRIVATE_NAME] and _clear_stale(os.path.join(entry.path, PRIVATE_NAME))):
            os.rmdir(entry.path)
    except OSError:
        pass  # another kernel swept it first, or it is not ours to touch


def _remove_private_dir_of(socket_path: str) -> None:
    """The private directory a swept pointer named a socket in goes with it (it held only that socket)."""
    folder = os.path.dirname(socket_path)
    if os.path.basename(socket_path) == PRIVATE_NAME and _MKDTEMP_NAME.fullmatch(os.path.basename(folder)):
        try:
            os.rmdir(folder)
        except OSError:
            pass  # not empty, so not only ours; or gone already


def _clear_stale(path: str) -> bool:
    """Unlink a socket nothing listens on; False if something does (or the name is not a socket)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    if not stat.S_ISSOCK(info.st_mode):
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)  # a listener with a full backlog must not hold up the loop
    try:
        status = probe.connect_ex(path)
    finally:
        probe.close()
    if status in (errno.ECONNREFUSED, errno.ENOENT):
        _remove_quietly(path)
        return True
    return False


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _write_atomically(path: str, text: str) -> None:
    """Write a 0600 file whole or not at all: a reader never sees half a path."""
    temporary = f"{path}.{os.getpid()}.tmp"
    _remove_quietly(temporary)  # created afresh below, so its mode is ours
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        _remove_quietly(temporary)
        raise
