import os
import signal
import subprocess
import time

from unified_exec_kernel.core.process import procs


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


def test_process_ids_name_the_parent_and_session():
    ids = procs.process_ids(os.getpid())
    assert ids == (os.getppid(), os.getsid(0), False)
    assert procs.process_ids(2**22 + 1) is None


def test_a_member_is_opened_only_while_it_is_in_the_session():
    leader = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        pidfd = procs.open_member(leader.pid, leader.pid, parent=os.getpid())
        assert pidfd is not None
        os.close(pidfd)
        assert procs.open_member(leader.pid, leader.pid + 1) is None  # another session
        assert procs.open_member(leader.pid, leader.pid, parent=1) is None  # not that parent's child
        assert procs.open_member(os.getpid(), leader.pid) is None
    finally:
        leader.kill()
        leader.wait()


def test_signal_members_signals_only_processes_of_that_session():
    member = subprocess.Popen(["sleep", "30"], start_new_session=True)
    outsider = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        # the outsider's pid is passed as if a scan had found it: it is checked, and spared
        procs.signal_members(member.pid, [member.pid, outsider.pid], [signal.SIGKILL])
        assert member.wait(5) == -signal.SIGKILL
        assert outsider.poll() is None
    finally:
        for process in (member, outsider):
            process.kill()
            process.wait()
