"""The direct channel's socket on a loop: where it binds, with what mode, and that nothing of it outlives it."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest

from unified_exec_kernel.jupyter.direct_socket import (
    PRIVATE_NAME,
    PRIVATE_PREFIX,
    STALE_AFTER_S,
    DirectSocket,
    kernel_id_of,
    private_to_us,
    sweep_private_dirs,
    sweep_runtime_dir,
)
from unified_exec_kernel.protocol.address import find_socket, socket_names


class Hello(asyncio.Protocol):
    """Says hello and remembers it was lost: a stand-in for the protocol's connection."""

    def __init__(self, on_lost):
        self.on_lost = on_lost
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(b"hello")

    def connection_lost(self, exc):
        self.on_lost(self)


@pytest.fixture
def runtime():
    folder = Path(tempfile.mkdtemp(prefix="uexec-ds-"))  # short, and 0700 as Jupyter's runtime dir
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def started(connection_file: str) -> DirectSocket:
    channel = DirectSocket(connection_file, socket_names, Hello)
    channel.start(asyncio.get_running_loop())
    for _ in range(100):
        await asyncio.sleep(0)  # the server starts serving in a task
    return channel


async def greeting(path: str) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        return await asyncio.wait_for(reader.readexactly(5), 5)
    finally:
        writer.close()


async def test_beside_a_private_connection_file_0600_and_gone_after_stop(runtime):
    connection_file = str(runtime / "kernel-0b5c.json")
    channel = await started(connection_file)
    beside, pointer = socket_names(connection_file)
    assert channel.path == beside == find_socket(connection_file) and not os.path.exists(pointer)
    assert stat.S_IMODE(os.stat(beside).st_mode) == 0o600
    assert await greeting(beside) == b"hello"
    reader, writer = await asyncio.open_unix_connection(beside)
    assert await reader.readexactly(5) == b"hello"
    await channel.stop()
    assert await reader.read() == b""  # open connections are closed too
    writer.close()
    assert not os.path.exists(beside)


async def test_a_directory_others_may_enter_gets_a_private_directory_and_a_pointer(runtime):
    os.chmod(runtime, 0o755)
    connection_file = str(runtime / "kernel-1.json")
    channel = await started(connection_file)
    beside, pointer = socket_names(connection_file)
    assert not os.path.exists(beside)
    assert Path(pointer).read_text() == channel.path + "\n" and stat.S_IMODE(os.stat(pointer).st_mode) == 0o600
    assert private_to_us(os.path.dirname(channel.path)) and find_socket(connection_file) == channel.path
    assert await greeting(channel.path) == b"hello"
    private = os.path.dirname(channel.path)
    channel.release()  # from another thread, as shutdown and SIGTERM do
    assert not os.path.exists(pointer) and not os.path.exists(private)
    await channel.stop()


async def test_a_stale_socket_is_replaced_and_a_live_one_left_alone(runtime):
    connection_file = str(runtime / "kernel-2.json")
    beside, pointer = socket_names(connection_file)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(beside)
    stale.close()
    first = await started(connection_file)
    assert first.path == beside and await greeting(beside) == b"hello"
    second = await started(connection_file)  # something listens there now: never take it over
    assert second.path != beside and find_socket(connection_file) == second.path
    assert await greeting(beside) == b"hello"
    await second.stop()
    await first.stop()
    assert not os.listdir(runtime)


def bound(path) -> None:
    """A socket file nothing listens on: what a kernel killed hard leaves."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()


async def test_what_kernels_that_died_hard_left_in_the_runtime_dir_is_swept(runtime):
    orphan = socket_names(str(runtime / "kernel-gone.json"))[0]
    bound(orphan)
    kept = socket_names(str(runtime / "kernel-alive.json"))[0]
    (runtime / "kernel-alive.json").write_text("{}")
    bound(kept)  # its connection file is still there: its own kernel decides
    channel = await started(str(runtime / "kernel-new.json"))
    assert not os.path.exists(orphan) and os.path.exists(kept)
    await channel.stop()


async def test_pointer_files_of_kernels_that_died_hard_are_swept_beside_a_shared_connection_file(runtime):
    """Connection files in a shared directory (/tmp, tempfile's) get pointers; a kernel killed hard
    left its pointer there for good."""
    shared = runtime / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    dead_private = runtime / f"{PRIVATE_PREFIX}deadpriv"
    dead_private.mkdir(mode=0o700)
    dead_socket = dead_private / PRIVATE_NAME  # a kernel killed hard left its private directory too
    bound(dead_socket)
    orphan = socket_names(str(shared / "tmpgone.json"))[1]
    Path(orphan).write_text(f"{dead_socket}\n")
    vanished = socket_names(str(shared / "tmpvanished.json"))[1]
    Path(vanished).write_text(f"{runtime / 'no-such.sock'}\n")
    alive = socket_names(str(shared / "tmpalive.json"))[1]
    (shared / "tmpalive.json").write_text("{}")
    Path(alive).write_text(f"{dead_socket}\n")  # its connection file is there: its own kernel decides
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(runtime / "busy.sock"))
    listening.listen(1)
    busy = socket_names(str(shared / "tmpbusy.json"))[1]
    Path(busy).write_text(f"{runtime / 'busy.sock'}\n")  # something listens: not provably dead
    theirs = socket_names(str(shared / "tmptheirs.json"))
    bound(theirs[0])
    Path(theirs[1]).write_text(f"{theirs[0]}\n")
    if os.geteuid() == 0:
        for path in theirs:
            os.chown(path, 12345, 12345)
    try:
        channel = await started(str(shared / "tmpnew.json"))
        assert channel.path is not None and find_socket(str(shared / "tmpnew.json")) == channel.path
        assert not os.path.exists(orphan) and not os.path.exists(vanished)
        assert not dead_private.exists(), "the private directory of a swept socket stays behind, empty, for good"
        assert os.path.exists(alive) and os.path.exists(busy)
        if os.geteuid() == 0:
            assert all(os.path.exists(path) for path in theirs)  # another user's: never touched
        await channel.stop()
    finally:
        listening.close()


def test_only_our_old_private_dirs_with_a_dead_socket_or_nothing_are_swept(runtime):
    old_dead = runtime / f"{PRIVATE_PREFIX}old_dead"  # named as mkdtemp names them: 8 of [a-z0-9_]
    young_dead = runtime / f"{PRIVATE_PREFIX}youngdea"
    old_busy = runtime / f"{PRIVATE_PREFIX}old_busy"
    other = runtime / "someone-else"
    for folder in (old_dead, young_dead, old_busy, other):
        folder.mkdir(mode=0o700)
        bound(folder / PRIVATE_NAME)
    (old_busy / "more").write_text("")
    old_empty, young_empty = runtime / f"{PRIVATE_PREFIX}oldempty", runtime / f"{PRIVATE_PREFIX}justmade"
    alike = [runtime / f"uexec-keep-{os.geteuid()}", runtime / f"{PRIVATE_PREFIX}test-abcdefgh", runtime / f"{PRIVATE_PREFIX}abcdefghi"]
    for folder in (old_empty, young_empty, *alike):  # young_empty: a kernel's between mkdtemp and bind
        folder.mkdir(mode=0o700)
    past = time.time() - STALE_AFTER_S - 5
    for folder in (old_dead, old_busy, other, old_empty, *alike):
        os.utime(folder, (past, past))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live = runtime / f"{PRIVATE_PREFIX}live_one"
    live.mkdir(mode=0o700)
    listener.bind(str(live / PRIVATE_NAME))
    listener.listen()
    os.utime(live, (past, past))
    try:
        sweep_private_dirs(str(runtime))
        kept = (young_dead, old_busy, other, live, young_empty, *alike)  # alike: the keepers' directory, a test's
        assert sorted(p.name for p in runtime.iterdir()) == sorted(p.name for p in kept)
    finally:
        listener.close()


def test_sweeping_a_crowded_directory_holds_no_more_memory_than_an_empty_one(runtime):
    """A kernel whose connection file is in /tmp (nbclient's, papermill's, nbgrader's) sweeps /tmp as its
    engine starts; a list of every entry there would leave its high-water mark in the kernel for good."""
    for n in range(3000):
        (runtime / f"tmp{n:05d}.json").write_text("")
        (runtime / f"{PRIVATE_PREFIX}{n:08d}").mkdir()  # young: looked at, kept

    def peak_of(sweep) -> int:
        tracemalloc.start()
        try:
            sweep()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    # A list of the 6000 entries peaks at 3.2 MB; the bound leaves room for another thread's read meanwhile.
    assert peak_of(lambda: sweep_private_dirs(str(runtime))) < 256 * 1024
    assert peak_of(lambda: sweep_runtime_dir(str(runtime), socket_names)) < 256 * 1024
    assert len(list(runtime.iterdir())) == 6000  # none of it ours to sweep


def test_a_kernel_id_comes_from_a_jupyter_connection_file_name():
    assert kernel_id_of("/r/kernel-4a1c9e3b-57e5-4f6b-8d1e-0c2f9b1a7d33.json") == "4a1c9e3b-57e5-4f6b-8d1e-0c2f9b1a7d33"
    assert kernel_id_of("/tmp/tmpab12cd.json") == ""
    assert kernel_id_of("/r/kernel-.json") == ""
    assert kernel_id_of(None) == ""


async def test_a_burst_of_connections_while_the_loop_is_busy_is_queued_not_refused(runtime):
    """A page reloading its views connects many times at once; none may meet EAGAIN (a backlog of 16,
    or asyncio's 100, refused the rest while the loop had not accepted yet)."""
    channel = await started(str(runtime / "kernel-burst.json"))
    clients, refused = [], 0
    try:
        for _ in range(300):  # no await: the loop accepts none meanwhile, as a busy one would not
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            clients.append(client)
            if client.connect_ex(channel.path) != 0:
                refused += 1
        assert refused == 0
        deadline = time.monotonic() + 10
        while len(channel._connections) < len(clients) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(channel._connections) == len(clients)  # every one is served in the end
    finally:
        for client in clients:
            client.close()
        await channel.stop()
