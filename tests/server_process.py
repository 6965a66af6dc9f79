"""A real `jupyter server` in a subprocess, as a spawner or systemd starts one: for tests that need the server itself.

Its stdin is /dev/null, it listens on a free loopback port with a token of
its own, and it has its own runtime directory (0700, short enough for a
kernel's socket beside its connection file). Every process it starts carries
a marker variable, so whatever outlives `stop` is found and killed.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .conftest import free_port, kill_processes, processes_marked

MARK = "UEXEC_SERVER_TEST"
START_S = 60


class JupyterServer:
    def __init__(self, folder: Path, *options: str, base_url: str = "/", env: dict[str, str] | None = None):
        """Started in `folder` (its root dir, log and runtime dir); `options` go on its command line."""
        self.folder = folder
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.base_url = base_url
        self.http = f"http://127.0.0.1:{self.port}{base_url}"
        self.ws = f"ws://127.0.0.1:{self.port}{base_url}"
        self.runtime = folder / "runtime"
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        self.log = folder / "server.log"
        environment = {**os.environ, **(env or {}), "JUPYTER_RUNTIME_DIR": str(self.runtime), MARK: str(folder),
                       "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
        environment.pop("JUPYTER_TOKEN", None)
        command = [str(Path(sys.executable).with_name("jupyter-server")), "--no-browser", "--allow-root", "--ip=127.0.0.1",
                   f"--port={self.port}", "--port-retries=0", f"--ServerApp.root_dir={folder}", f"--ServerApp.base_url={base_url}",
                   f"--IdentityProvider.token={self.token}", *options]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, cwd=folder, env=environment, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:
            self.stop(shut_kernels=False)
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_S
        while True:
            assert self.process.poll() is None, f"the server exited with {self.process.returncode}:\n{self.log_tail()}"
            try:
                self.api("GET", "api/status")
                return
            except OSError:
                assert time.monotonic() < deadline, f"the server did not answer within {START_S} s:\n{self.log_tail()}"
                time.sleep(0.2)

    def api(self, method: str, path: str, body=None):
        """A REST call with the server's token; `path` is relative to its base_url."""
        request = urllib.request.Request(self.http + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, *, shut_kernels: bool = True) -> None:
        """Shut its kernels down, stop it, and kill anything it left behind."""
        if shut_kernels and self.process.poll() is None:
            try:
                for kernel in self.api("GET", "api/kernels"):
                    self.api("DELETE", f"api/kernels/{kernel['id']}")
            except OSError:
                pass
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        kill_processes(processes_marked(MARK, str(self.folder)))  # the server too, if it would not stop
