"""What reaches into ipykernel and IPython: each patch still does its job on the versions we run."""

from __future__ import annotations

import threading

import pytest

from IPython.core.interactiveshell import InteractiveShell

from unified_exec_kernel.jupyter.patches import reset_last_traceback

from ..kernel_harness import Kernel
from ..test_kernel import STUBBORN, leaders, wait_gone


def test_plain_ipykernel_with_load_ext():
    kernel = Kernel("python3")
    try:
        kernel.run("%load_ext unified_exec_kernel")
        kernel.run("%load_ext unified_exec_kernel")  # loading twice is harmless
        text = kernel.run("%%uexec\nbash -c 'echo from-a-plain-kernel'\n")
        assert "from-a-plain-kernel" in text and "[exited with code 0" in text
        kernel.run(STUBBORN)
        pids = leaders(kernel)
        kernel.shutdown()
        assert wait_gone(pids) == []
    finally:
        if kernel.manager.is_alive():
            kernel.shutdown()


def test_the_last_traceback_is_reset_before_every_cell():
    shell = InteractiveShell.instance()
    shell._last_traceback = ["an older cell's traceback"]
    reset_last_traceback()
    assert shell._last_traceback is None


def test_message_ids_stay_unique_when_threads_publish_at_once():
    from jupyter_client.session import Session

    from unified_exec_kernel.jupyter.patches import atomic_message_ids

    session = Session()
    session.message_count = 5
    atomic_message_ids(session)
    atomic_message_ids(session)  # twice is once
    assert isinstance(session, Session) and type(session).__name__ == "Session"
    ids: list[list[str]] = [[] for _ in range(4)]

    def publish(found):
        for _ in range(20_000):
            found.append(session.msg_id)

    threads = [threading.Thread(target=publish, args=(found,)) for found in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [msg_id for found in ids for msg_id in found]
    assert len(set(every)) == len(every) == 80_000
    assert min(int(msg_id.rsplit("_", 1)[1]) for msg_id in every) == 5  # the count goes on where it was


@pytest.mark.filterwarnings("ignore:The `ipykernel.comm.Comm` class has been deprecated:DeprecationWarning")  # what create_comm makes in a kernel
def test_our_comms_take_front_end_messages_on_the_subshell_they_came_by():
    from ipykernel.comm import Comm

    from unified_exec_kernel.jupyter.patches import route_by_own_subshell

    comm = Comm(target_name="unified_exec", primary=False)
    comm._reply_subshell_id = "deleted-subshell"  # what ipykernel 7.4 keeps after a publish
    assert comm._reply_subshell_for({}, "subshell-b") == "deleted-subshell"
    route_by_own_subshell(comm)
    assert comm._reply_subshell_for({}, "subshell-b") == "subshell-b"
    assert comm._reply_subshell_for({"request_id": 3}, None) is None


def test_a_display_flushes_only_a_stream_with_text_waiting_and_keeps_the_order():
    """Each flush is a round trip to ipykernel's IOPub thread; a display after nothing printed needs none.

    On main before this patch, the display with nothing printed flushed both streams (counted 2).
    """
    kernel = Kernel("uexec")
    try:
        kernel.run(
            "import sys\n"
            "_flushes = []\n"
            "for _s in (sys.stdout, sys.stderr):\n"
            "    _s.flush = (lambda s, f, seen: lambda: (seen.append(s), f())[1])(_s.name, _s.flush, _flushes)\n"
        )
        quiet = kernel.execute("_flushes.clear(); display({'text/plain': 'shown'}, raw=True); _count = len(_flushes)")
        assert quiet.outputs == [("display_data", "shown")]
        assert kernel.run("print(_count, end='')").startswith("0")
        printed = kernel.execute("_flushes.clear(); print('before'); display({'text/plain': 'after'}, raw=True); _count = list(_flushes); print('then', file=sys.stderr)")
        assert printed.outputs == [("stream", "before\n"), ("display_data", "after"), ("stream", "then\n")]
        assert kernel.run("print(_count, end='')").startswith("['stdout']")  # the stream with text, not the other
        kernel.run("%unload_ext unified_exec_kernel")
        kernel.run("_flushes.clear(); display({'text/plain': 'x'}, raw=True); _count = len(_flushes)")
        assert kernel.run("print(_count, end='')").startswith("2")  # unloaded: ipykernel's own again
    finally:
        kernel.shutdown()
