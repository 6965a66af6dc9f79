import os
import signal
import subprocess

from unified_exec_kernel.core import procs


def test_members_of_a_session_are_found_and_signalled():
    leader = subprocess.Popen(["bash", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        import time

        time.sleep(0.2)
        members = procs.session_members([leader.pid])[leader.pid]
        assert leader.pid in members and len(members) == 3
        assert os.getpid() not in members
        procs.signal_pids(members, [signal.SIGKILL])
        leader.wait(5)
        time.sleep(0.1)
        assert procs.session_members([leader.pid])[leader.pid] == []
    finally:
        leader.kill()
        leader.wait()


def test_unknown_session_has_no_members():
    assert procs.session_members([2**22 + 12345]) == {2**22 + 12345: []}
    assert procs.session_members([]) == {}
