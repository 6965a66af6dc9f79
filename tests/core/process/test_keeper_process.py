"""The keeper process on its own socket: who it serves, and that nobody can stall it."""

from __future__ import annotations

import socket
import time

import pytest

from unified_exec_kernel.core.process.keeper import KeeperError

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
