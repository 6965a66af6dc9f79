"""A child forked from a process with sessions (os.fork, multiprocessing's fork) never ends or disturbs them.

Only the process that started the engine ends its sessions: at its exit, on
SIGTERM, at shutdown. A forked child inherits every atexit function, signal
handler and fd of its parent; before, a script's child that exited with
`sys.exit` ran the package's atexit and killed its parent's sessions (exit
-1), and a kernel's multiprocessing child ended by `terminate()` ran the
kernel's SIGTERM handler and did the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from .kernel_harness import Kernel

pytestmark = pytest.mark.timeout(120)

ECHO = ["bash", "-c", "trap '' HUP; while read line; do echo got-$line; done"]  # outlives a mere hangup

SCRIPT = textwrap.dedent(
    f"""
    import multiprocessing, os, sys
    from unified_exec_kernel import sessions

    s = sessions.start({ECHO!r}, timeout=0)
    print(s.info.pid, flush=True)
    guardian = sessions._own_engine().manager._guardian  # started with the first session
    deadline = __import__("time").monotonic() + 10
    while guardian._pipe is None and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.01)
    pipe = guardian._pipe
    pipe_inode = os.fstat(pipe).st_ino

    child = os.fork()
    if child == 0:
        try:  # the guardian's pipe is not the child's to hold: it must see its parent's EOF alone
            held = os.fstat(pipe).st_ino == pipe_inode
        except OSError:
            held = False
        sys.exit(7 if held else 0)
    _, status = os.waitpid(child, 0)
    print("forked", os.waitstatus_to_exitcode(status), flush=True)

    forked = multiprocessing.get_context("fork").Process(target=sys.exit, args=(3,))
    forked.start()
    forked.join(30)
    print("multiprocessing", forked.exitcode, flush=True)

    # The child's own first call gets an engine of its own, and its exit ends only that one.
    def own_session():
        inner = sessions.start(["bash", "-c", "echo inner; exit 5"], timeout=10)
        sys.exit(0 if inner.id == 0 else 1)
    user = multiprocessing.get_context("fork").Process(target=own_session)
    user.start()
    user.join(30)
    print("own", user.exitcode, flush=True)

    print(s.info.alive, "got-ping" in s.write("ping\\n", until="^got-ping", timeout=10).output, flush=True)
    """
)


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_scripts_forked_children_leave_its_sessions_and_its_own_exit_ends_them(tmp_path):
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=90, env=env)
    lines = done.stdout.splitlines()
    pid = int(lines[0]) if lines and lines[0].isdigit() else None
    try:
        assert done.returncode == 0, done.stderr
        assert lines[1:] == ["forked 0", "multiprocessing 3", "own 0", "True True"], done.stdout + done.stderr
        assert _gone(pid), "the script's session outlived the script"
    finally:
        if pid is not None and not _gone(pid, 0):
            _kill(pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


@pytest.fixture
def kernel():
    k = Kernel("uexec")
    yield k
    if k.manager.is_alive():
        k.shutdown()


def test_a_kernels_forked_children_leave_its_sessions(kernel):
    pids = kernel.run(f"import atexit, multiprocessing, os, signal, sys, time\nfrom unified_exec_kernel import sessions\n"
                      f"s = sessions.start({ECHO!r}, timeout=0)\nk = sessions.start({ECHO!r}, keep=True, timeout=0)\n"
                      "print(s.info.pid, k.info.pid, k.info.kept)").split()
    assert pids[2] == "True", pids
    pids = [int(pid) for pid in pids[:2]]
    try:
        # IPython catches a cell's SystemExit, so the child's interpreter exit is what ends it here:
        # its atexit functions run (as at any exit), then it is gone.
        text = kernel.run(
            "child = os.fork()\n"
            "if child == 0:\n"
            "    try:\n"
            "        sys.exit(0)\n"
            "    finally:\n"
            "        atexit._run_exitfuncs()  # IPython's among them: the namespace is cleared\n"
            "        __import__('os')._exit(0)\n"
            "print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))"
        )
        assert text == "0\n"
        # A child cannot reach the parent's engine (its thread is not in the child): one clear error, nothing started.
        text = kernel.run(
            "child = os.fork()\n"
            "if child == 0:\n"
            "    try:\n"
            "        s.info\n"
            "        os._exit(5)\n"
            "    except RuntimeError as error:\n"
            "        os._exit(0 if 'forked child' in str(error) else 6)\n"
            "print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))"
        )
        assert text == "0\n"
        # multiprocessing's fork: one that exits, one ended by terminate() (SIGTERM, the kernel's handler inherited)
        text = kernel.run(
            "fork = multiprocessing.get_context('fork')\n"
            "exits = fork.Process(target=sys.exit, args=(3,))\n"
            "exits.start(); exits.join(30)\n"
            "ready = fork.Event()\n"
            "stays = fork.Process(target=lambda: (ready.set(), time.sleep(60)))\n"
            "stays.start(); ready.wait(30); stays.terminate(); stays.join(30)\n"
            "print(exits.exitcode, stays.exitcode)"
        )
        # (IPython's history may complain first: the child's exit saved the history it shares with its parent)
        assert text.splitlines()[-1] == f"3 {-15}"
        for session in "sk":  # the kept one's keeper still serves the kernel, not a child that closed its copy
            answer = kernel.run(f"print({session}.info.alive, 'got-ping' in {session}.write('ping\\n', until='^got-ping', timeout=10).output)")
            assert answer == "True True\n", session
        kernel.shutdown()
        assert all(_gone(pid) for pid in pids), "the kernel's sessions outlived its shutdown"
    finally:
        for pid in pids:
            if not _gone(pid, 0):
                _kill(pid)
