"""The terminal's master side: queued writes that never block the loop."""

import asyncio

from ..helpers import Reader, spawn


async def test_a_megabyte_paste_does_not_block_the_loop():
    cat = spawn(["bash", "-c", "stty -echo; echo ready; cat"])
    ticker = spawn(["bash", "-c", "for i in $(seq 1 40); do echo tick$i; sleep 0.02; done"])
    cat_reader, tick_reader = Reader(cat), Reader(ticker)
    await cat_reader.until("ready")  # no echo from here on: only cat's copy comes back
    line = "y" * 99 + "\n"
    cat.write(line * 10_000)
    assert cat.pending_write_bytes > 0  # the PTY could not take it at once: it was queued
    await tick_reader.until("tick40")
    await cat_reader.until("y" * 99 + "\r\n", timeout=10)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while cat_reader.text.count("\n") < 10_001 and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert cat_reader.text.count("\n") == 10_001  # "ready" and the paste
    assert cat.pending_write_bytes == 0
    await asyncio.gather(cat.close(), ticker.close())



async def test_the_size_outlives_the_terminal_for_a_last_screen():
    shell = spawn(["bash", "--norc", "-c", "echo drawn"], rows=30, cols=100)
    await shell.wait_finished()
    await shell.close()
    assert shell.terminal.released
    assert shell.size == (30, 100)


async def test_pauses_are_counted_and_reading_resumes_with_the_last():
    talker = spawn(["bash", "-c", "echo before; read x; echo after; read y"])
    reader = Reader(talker)
    await reader.until("before")
    talker.terminal.pause_reading()
    talker.terminal.pause_reading()
    talker.write("x\r")
    talker.terminal.resume_reading()
    assert talker.terminal.paused
    talker.terminal.read_pending()  # not even asked to: a paused terminal is not read
    await asyncio.sleep(0.3)  # time enough for the echo and "after", were the terminal read
    assert "after" not in reader.text
    talker.terminal.resume_reading()
    await reader.until("after")
    await talker.close()


async def test_xoff_and_xon_are_reported_exactly_and_only_where_they_stop_output():
    shell = spawn(["bash", "--norc", "-i"])
    reader = Reader(shell)
    flows: list[bool] = []
    shell.on_flow(flows.append)
    await reader.until("$ ")
    loop = asyncio.get_running_loop()

    async def until(condition, what):
        deadline = loop.time() + 5
        while not condition():
            assert loop.time() < deadline, what
            await asyncio.sleep(0.01)

    shell.write("\x13")  # Ctrl+S: the terminal stops the program's output
    await until(lambda: shell.paused, "the terminal to say it stopped")
    assert flows == [True] and shell.terminal.stopped
    shell.write("echo held-$((6*7))\r")
    await asyncio.sleep(0.3)
    assert "held-42\r\n" not in reader.text  # no output while stopped (not a wait for a race: it cannot come)
    shell.write("\x11")  # Ctrl+Q starts it again: what waited comes
    await reader.until("held-42\r\n")
    assert flows == [True, False] and not shell.paused
    # Without IXON, Ctrl+S is just a key (the program gets it): nothing stops.
    shell.write("stty -ixon -echo; echo no-ixon-$((1+1)); cat -v\r")
    await reader.until("no-ixon-2\r\n")
    shell.write("\x13key\r")
    await reader.until("^Skey\r\n")
    assert flows == [True, False] and not shell.paused
    await shell.close()
