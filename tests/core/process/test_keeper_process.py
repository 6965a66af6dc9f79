"""The keeper process on its own socket: who it serves, and that nobody can stall it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest

from unified_exec_kernel.core.process.keeper import KeeperError

from ...conftest import pidfds_held_by
from ..stubborn import async_wait_until
from .test_keeper import TOKEN, Place, keepers, let_go, place  # noqa: F401 - the fixture


async def test_a_second_kernel_is_refused_while_the_first_holds_the_sessions(place):
    first = place.kernel()
    try:
        await first.start(["sleep", "60"], keep=True, timeout_ms=0)
        second = place.kernel()
        with pytest.raises(KeeperError, match=r"refused them: kernel \d+ still holds these sessions"):
            await second.take_back()
        assert (await first.write(0, "", timeout_ms=0)).session_id == 0  # the first is served as before
    finally:
        await first.close_all()


async def test_connections_that_say_nothing_do_not_hold_the_keeper_up(place):
    """Their hellos are waited for by the loop, beside everything else, and they are hung up on.

    On main before this, each silent connection stopped the keeper for 0.5 s in turn:
    twenty of them held a take-back for 10 s.
    """
    first = place.kernel()
    await first.start(["sleep", "60"], keep=True, timeout_ms=0)
    await let_go(first)
    silent = []
    for _ in range(20):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.connect(place.socket)  # and never says hello
        silent.append(connection)
    try:
        second = place.kernel()
        started = time.monotonic()
        assert await second.take_back() == [0]
        assert time.monotonic() - started < 5  # not 20 x 0.5 s one after another
        for connection in silent:  # each given up after HELLO_S: the keeper holds none of them
            connection.settimeout(30)
            assert connection.recv(100) == b""
        await second.close_all()
    finally:
        for connection in silent:
            connection.close()


async def test_a_hello_with_a_bad_message_is_refused_not_fatal(place):
    first = place.kernel()
    await first.start(["sleep", "60"], keep=True, timeout_ms=0)
    await let_go(first)
    garbage = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    garbage.connect(place.socket)
    garbage.send(b"\xff not json")
    garbage.close()
    second = place.kernel()
    try:
        assert await second.take_back() == [0]
        assert len(keepers(place)) == 1
    finally:
        await second.close_all()


async def test_the_keeper_lists_what_it_holds_beside_its_socket(place):
    """The manifest: what a next kernel names when it had to end a keeper that stopped answering."""
    kernel = place.kernel()
    try:
        await kernel.start(["sleep", "60"], keep=True, name="nap", timeout_ms=0)
        manifest = place.socket + ".json"
        listed = await async_wait_until(lambda: os.path.exists(manifest) and json.load(open(manifest))["sessions"])
        assert listed == [{"id": 0, "name": "nap", "command": ["sleep", "60"]}]
    finally:
        await kernel.close_all()
    await async_wait_until(lambda: not os.path.exists(manifest) and not keepers(place))


async def test_a_keeper_that_stops_answering_a_spawn_is_ended_and_a_new_one_starts_it(place):
    """A stall is a death: the first session comes to the kernel (read by it, no longer kept), the
    new one starts under a new keeper, and nothing waits longer than one answer's timeout."""
    kernel = place.kernel()
    try:
        await kernel.start(["bash", "-c", "trap '' HUP TERM; while :; do echo tick; sleep 0.05; done"], keep=True, name="tick", timeout_ms=0)
        (stalled,) = keepers(place)
        stalled.suspend()
        result = await kernel.start(["sleep", "60"], keep=True, name="nap", timeout_ms=0)
        assert result.session_id is not None
        tick, nap = kernel.session("tick"), kernel.session("nap")
        assert not tick.kept and "its keeper did not answer" in tick.note and nap.kept
        assert [process.pid for process in keepers(place)] != [stalled.pid]
        before = tick.offset
        await async_wait_until(lambda: tick.offset > before + 100)  # read by the kernel itself now
    finally:
        await kernel.close_all()


async def test_a_dead_keeper_s_sessions_are_read_by_the_kernel_and_typed_into(place):
    kernel = place.kernel()
    try:
        await kernel.start(["bash", "--norc", "-i"], keep=True, name="sh", timeout_ms=10_000)
        keepers(place)[0].kill()
        session = kernel.session("sh")
        await async_wait_until(lambda: not session.kept)
        assert session.note == "no longer kept: its keeper died"
        result = await kernel.write("sh", "echo still-$((40 + 2))\n", timeout_ms=10_000)
        assert "still-42" in result.output and result.command_exit_code == 0, result
        assert "is no longer kept: its keeper died" in result.output
    finally:
        await kernel.close_all()


def _ask(kernel: socket.socket, message: dict, until: str) -> dict:
    kernel.send(json.dumps(message).encode())
    return _read_until(kernel, until)


def _read_until(kernel: socket.socket, until: str) -> dict:
    """The keeper's messages (closing any fds sent along) up to the one named `until`."""
    kernel.settimeout(30)
    while True:
        data, fds, _flags, _address = socket.recv_fds(kernel, 1 << 20, 8)
        for fd in fds:
            os.close(fd)
        answer = json.loads(data)
        if answer.get("op") == until:
            return answer


@pytest.mark.parametrize("first", ["kernel", "guardian"])
async def test_the_keeper_ends_the_unkept_sessions_once_the_kernel_and_its_guardian_are_both_gone(place, first):
    """The keeper stands in for the guardian: told its news, it ends those sessions (a program that ignores
    the hangup and SIGTERM) only once the kernel's connection and the guardian's pipe have both ended."""
    first_kernel = place.kernel()
    await first_kernel.start(["sleep", "60"], keep=True, timeout_ms=0)
    await let_go(first_kernel)
    (keeper,) = keepers(place)
    # This test plays the kernel: its child leads a session, and a pipe's read end is its guardian.
    program = subprocess.Popen(
        ["bash", "-c", "trap '' HUP TERM; echo ready; while :; do sleep 0.05; done"], start_new_session=True, stdout=subprocess.PIPE
    )
    assert program.stdout.readline() == b"ready\n"  # the traps are set: a hangup now is ignored, not its end
    guardian, to_guardian = os.pipe()
    kernel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        kernel.connect(place.socket)
        socket.send_fds(kernel, [json.dumps({"op": "hello", "token": TOKEN, "pid": os.getpid()}).encode()], [to_guardian])
        os.close(to_guardian)
        _read_until(kernel, "ready")
        kernel.send(json.dumps({"op": "news", "lines": f"+{program.pid}\n"}).encode())
        await async_wait_until(lambda: program.pid in pidfds_held_by(keeper.pid))
        if first == "guardian":
            os.close(guardian)
            for _ in range(2):  # two turns of its loop after the pipe's end: the kernel lives, so the guardian's job waits
                _ask(kernel, {"op": "ping"}, "pong")
            assert program.poll() is None, "ended while its kernel lived"
            kernel.close()
        else:
            kernel.close()
            assert os.read(guardian, 1 << 16).startswith(b"P%d\n" % keeper.pid)  # it told the guardian of itself
            os.close(guardian)
        assert program.wait(timeout=30) == -9  # hung up on, then killed, as the guardian ends a session
    finally:
        kernel.close()
        program.stdout.close()
        if program.poll() is None:
            program.kill()
            program.wait()
