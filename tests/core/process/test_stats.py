"""A session's figures from /proc: its processes' memory and CPU, the ports they listen on, the leader's directory."""

import os
import socket
import subprocess
import sys
import time

from unified_exec_kernel.core.process.stats import session_stats

LISTENER = "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)"


def test_a_child_that_listens_is_counted_in_its_leaders_session(tmp_path):
    # The leader (a shell in a new session) starts the listener as its child: the port is the session's.
    leader = subprocess.Popen(["sh", "-c", f'{sys.executable} -c "{LISTENER}"'], stdout=subprocess.PIPE, text=True, start_new_session=True, cwd=tmp_path)
    try:
        port = int(leader.stdout.readline())
        stats = session_stats([leader.pid])[leader.pid]
        assert stats.listening_ports == (port,)
        assert stats.rss_bytes > 1_000_000 and stats.cpu_percent is not None and stats.cwd == str(tmp_path)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()


def test_a_session_that_is_gone_has_no_figures():
    gone = subprocess.Popen(["true"], start_new_session=True)
    gone.wait()
    time.sleep(0.01)
    stats = session_stats([gone.pid])[gone.pid]
    assert (stats.rss_bytes, stats.cpu_percent, stats.listening_ports, stats.cwd) == (None, None, (), None)
