"""A kernel tells every open comm of a session's end and of the line a cell's `--until` waited for (issue 34, 5).

The page's notifications (labextension/src/notify.ts) listen on the direct
channel; the comm carries the same `session_event`, so any front end can.
"""

from __future__ import annotations

import pytest

from ..kernel_harness import Kernel


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    yield k
    k.shutdown()


def test_a_cells_until_and_a_sessions_end_reach_the_comm(kernel):
    comm = kernel.comm_open("unified_exec")
    kernel.comm_messages(comm, lambda d: d["type"] == "hello")
    # Sent while the cell runs, so read before the cell's own messages are (the harness files them by parent).
    cell = kernel.start_execute("%%uexec --until 'model ready' -t 20000 --name train\nsh -c 'echo loading; echo model ready; read x; exit 1'")
    matched = kernel.comm_messages(comm, lambda d: d["type"] == "session_event")[-1]
    assert kernel.finish_execute(cell).reply["status"] == "ok"
    assert (matched["event"], matched["by"], matched["name"], matched["line"]) == ("matched", "until", "train", "model ready")
    sid = matched["session_id"]
    cell = kernel.start_execute(f"%%uexec -s {sid} -t 10000\nbye")
    ended = kernel.comm_messages(comm, lambda d: d["type"] == "session_event")[-1]
    assert kernel.finish_execute(cell).reply["status"] == "ok"
    assert (ended["event"], ended["session_id"], ended["exit_code"]) == ("exited", sid, 1)
    assert ended["seconds"] > 0
    kernel.comm_close(comm)
