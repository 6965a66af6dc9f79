import os
import signal
import subprocess
import time

from unified_exec_kernel.core import procs


def test_members_of_a_session_are_found_and_signalled():
    leader = subprocess.Popen(["bash", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        members = until(lambda: procs.session_members([leader.pid])[leader.pid], lambda found: len(found) == 3)
        assert leader.pid in members
        assert os.getpid() not in members
        procs.signal_pids(members, [signal.SIGKILL])
        leader.wait(5)
        assert until(lambda: procs.session_members([leader.pid])[leader.pid], lambda found: found == []) == []
    finally:
        leader.kill()
        leader.wait()


def until(look, done, timeout=10.0):
    """What `look()` finds once `done` says so (bounded: the last look otherwise)."""
    deadline = time.monotonic() + timeout
    found = look()
    while not done(found) and time.monotonic() < deadline:
        time.sleep(0.02)
        found = look()
    return found


def test_unknown_session_has_no_members():
    assert procs.session_members([2**22 + 12345]) == {2**22 + 12345: []}
    assert procs.session_members([]) == {}
