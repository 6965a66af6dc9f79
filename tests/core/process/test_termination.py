"""Termination: hang up, then kill, every process of a session, from the loop or from a thread."""

import asyncio
import threading

from unified_exec_kernel.core.process.termination import terminate, terminate_blocking

from ...conftest import session_processes
from ..helpers import spawn


async def test_terminate_ends_processes_that_ignore_the_hangup_without_blocking_the_loop():
    session = spawn(["bash", "-c", "trap '' HUP TERM; sleep 300 & sleep 300 & wait"])
    await asyncio.sleep(0.3)
    assert len(session_processes(session.pid)) == 3
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    tick = asyncio.ensure_future(ticker())
    await terminate([session.pid], grace=0.3)
    tick.cancel()
    assert session_processes(session.pid) == []
    assert ticks >= 2  # the loop ran while the grace passed
    await session.close()


def test_terminate_blocking_works_off_the_loop():
    async def start():
        session = spawn(["bash", "-c", "trap '' HUP; sleep 300 & wait"])
        await asyncio.sleep(0.2)
        return session

    loop = asyncio.new_event_loop()
    try:
        session = loop.run_until_complete(start())
        # ipykernel runs shutdown on its control thread: this must not need the loop.
        thread = threading.Thread(target=terminate_blocking, args=([session.pid], 0.2))
        thread.start()
        thread.join(5)
        assert session_processes(session.pid) == []
        loop.run_until_complete(session.close())
    finally:
        loop.close()
