"""Notifications: matching lines batched and capped per session, the exit always delivered after what waited."""

import asyncio

from unified_exec_kernel.mcp import notify
from unified_exec_kernel.mcp.notify import Notifier


async def delivered(sent: list, count: int, timeout: float = 5) -> list:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(sent) < count:
        assert loop.time() < deadline, sent
        await asyncio.sleep(0.01)
    return sent


async def test_lines_wait_a_moment_and_go_together():
    sent = []
    notifier = Notifier(lambda message: _append(sent, message))
    for number in range(3):
        notifier.line(7, f"line {number}")
    await asyncio.sleep(0)
    assert sent == []  # batched, not one notification a line
    await delivered(sent, 1)
    assert sent == [{"event": "output", "session_id": 7, "lines": ["line 0", "line 1", "line 2"]}]


async def test_a_full_batch_goes_at_once_and_a_session_is_capped():
    sent = []
    notifier = Notifier(lambda message: _append(sent, message))
    for number in range(notify.SESSION_LINES + 30):
        notifier.line(1, str(number))
    await delivered(sent, notify.SESSION_LINES // notify.BATCH_LINES)
    assert all(len(message["lines"]) == notify.BATCH_LINES for message in sent)
    notifier.exited(1, 0, False, ["last"])
    await delivered(sent, notify.SESSION_LINES // notify.BATCH_LINES + 2)
    assert sent[-2] == {"event": "output", "session_id": 1, "lines": [], "left_out": 30}
    assert sent[-1] == {"event": "exited", "session_id": 1, "exit_code": 0, "closed": False, "lines": ["last"]}


async def test_the_exit_comes_after_the_lines_still_waiting_and_a_failed_send_is_no_crash():
    sent = []
    notifier = Notifier(lambda message: _append(sent, message))
    notifier.line(2, "ready")
    notifier.exited(2, 130, False, [])
    await delivered(sent, 2)
    assert [message["event"] for message in sent] == ["output", "exited"]

    async def broken(_message):
        raise BrokenPipeError("client gone")

    Notifier(broken).exited(3, 0, False, [])
    await asyncio.sleep(0.05)


async def test_an_exit_waits_for_a_call_that_may_report_it_and_goes_only_if_it_did_not():
    sent = []
    notifier = Notifier(lambda message: _append(sent, message))
    with notifier.answering(3):
        notifier.exited(3, 0, False, [])  # the poll's answer says it: dropped
        notifier.told(3)
    with notifier.answering(4), notifier.answering(4):
        notifier.exited(4, 2, False, ["x"])  # the answers did not say it: sent once the last returns
    notifier.exited(3, 0, False, [])  # a late report of a told exit (an attached kernel's watch): dropped too
    await delivered(sent, 1)
    await asyncio.sleep(0.05)
    assert sent == [{"event": "exited", "session_id": 4, "exit_code": 2, "closed": False, "lines": ["x"]}]


async def _append(sent: list, message: dict) -> None:
    sent.append(message)
