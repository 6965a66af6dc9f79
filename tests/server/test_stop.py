"""SIGINT to a Jupyter server without a terminal shuts its kernels down, so no session outlives it.

A real `jupyter server` with stdin from /dev/null (as a spawner or systemd
starts it), one uexec kernel driven over its websocket, a session whose
processes ignore SIGHUP; then SIGINT, as JupyterHub sends to stop a user's
server. With this package's server extensions the kernel is shut down and
closes the session; without them (the control) the server dies at once and
the session's processes outlive it.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from ..conftest import free_port, kill_processes, session_processes
from ..kernel_ws import Channels

STUBBORN = "%%uexec -t 300 --shell\ntrap '' HUP; sleep 300 & sleep 301 & wait\n"


def _request(port: int, token: str, method: str, path: str, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


@pytest.mark.timeout(180)
@pytest.mark.parametrize("enabled", [True, False], ids=["extension", "control-without-it"])
async def test_sigint_without_a_terminal_ends_every_session_process(tmp_path, enabled):
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    env.pop("JUPYTER_TOKEN", None)
    log = tmp_path / "server.log"
    command = [str(Path(sys.executable).with_name("jupyter-server")), "--no-browser", "--allow-root", "--ip=127.0.0.1",
               f"--port={port}", "--port-retries=0", f"--ServerApp.root_dir={tmp_path}", f"--IdentityProvider.token={token}"]
    if not enabled:
        command.append("--ServerApp.jpserver_extensions=unified_exec_kernel=False")
        # The guardian would end the sessions of the dying kernel too: the
        # control shows what the server extension alone changes.
        profile = tmp_path / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        (profile / "ipython_kernel_config.py").write_text("c.UnifiedExec.guardian = False\n")
        env["IPYTHONDIR"] = str(tmp_path / "ipython")
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    leaders: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log.read_text()
            try:
                _request(port, token, "GET", "/api/status")
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        kernel = _request(port, token, "POST", "/api/kernels", {"name": "uexec"})
        channels = await Channels.connect(f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels", token)
        try:
            reply, text = await channels.execute(STUBBORN)
            assert reply["status"] == "ok", text
            comm = await channels.open_unified_exec()
            sessions = (await channels.ask(comm, {"type": "list", "request_id": "list"}))["sessions"]
        finally:
            channels.close()
        leaders = [s["pid"] for s in sessions if s["alive"]]
        assert len(leaders) == 1, sessions
        deadline = time.monotonic() + 10
        while len(session_processes(leaders[0])) < 3:  # the shell that traps HUP and its two sleeps
            assert time.monotonic() < deadline, session_processes(leaders[0])
            time.sleep(0.1)

        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        deadline = time.monotonic() + 15
        while session_processes(leaders[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = session_processes(leaders[0])
        if enabled:
            assert left == [], f"still running after the server stopped: {left}\n{log.read_text()[-3000:]}"
            assert "Shutting down 1 kernel" in log.read_text(), log.read_text()[-3000:]
        else:
            assert left, "the control lost its point: without the extension the session's processes used to survive"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        survivors = []
        for pid in (pid for leader in leaders for pid in session_processes(leader)):
            try:
                survivors.append(psutil.Process(pid))
            except psutil.Error:
                pass
        kill_processes(survivors)


FORKED = """
import os, signal
from unified_exec_kernel.server import stop

class App:
    stopped = []
    class log:
        info = critical = staticmethod(lambda *args: None)
    def stop(self, from_signal):
        App.stopped.append(os.getpid())

stop._load_jupyter_server_extension(App())
child = os.fork()
if child == 0:
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        os._exit(3 if App.stopped else 0)
    os._exit(4)
print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
signal.raise_signal(signal.SIGINT)
print(App.stopped == [os.getpid()])
"""


def test_sigint_in_a_forked_child_of_the_server_stops_only_the_child():
    done = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (0, "0\nTrue\n"), done.stderr
