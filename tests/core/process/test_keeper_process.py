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


async def test_a_connection_that_says_nothing_does_not_hold_the_keeper_up(place):
    first = place.kernel()
    await first.start(["sleep", "60"], keep=True, timeout_ms=0)
    await let_go(first)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    silent.connect(place.socket)  # and never says hello
    try:
        second = place.kernel()
        started = time.monotonic()
        assert await second.take_back() == [0]
        assert time.monotonic() - started < 5  # the keeper gave the silent one up (0.5 s), not us
        await second.close_all()
    finally:
        silent.close()


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
