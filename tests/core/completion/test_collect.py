"""One collection: what was already there, what the input produced, until the first condition."""

import asyncio

from unified_exec_kernel.core.completion.collect import collect
from unified_exec_kernel.core.completion.waits import EndedBy, WaitFor, compile_until

from ..helpers import Reader, spawn


async def test_input_is_typed_and_its_output_collected_until_the_pattern():
    session = spawn(["bash", "-c", "stty -echo; echo ready; read line; echo got-$line; sleep 30"])
    await Reader(session).until("ready")
    collected = await collect(session, WaitFor(20, until=compile_until("got-x")), max_bytes=1024, text="x\n", already=b"earlier\n")
    assert collected.ended_by is EndedBy.MATCH
    assert collected.output.startswith("earlier\n") and "got-x" in collected.output
    await session.close()


async def test_a_flood_is_truncated_and_counted_and_the_exit_ends_it():
    session = spawn(["bash", "-c", "head -c 100000 /dev/zero | tr '\\0' a"])
    collected = await collect(session, WaitFor(30), max_bytes=1000)
    assert collected.ended_by is EndedBy.EXIT
    assert collected.token_count == 25_000 and "tokens truncated" in collected.output
    await session.close()


async def test_a_program_that_has_exited_is_not_written_to():
    session = spawn(["bash", "-c", "exit 3"])
    await asyncio.wait_for(session.wait_finished(), 10)
    collected = await collect(session, WaitFor(5), max_bytes=100, text="too late\n")
    assert collected.ended_by is EndedBy.EXIT and session.exit_code == 3
    await session.close()
