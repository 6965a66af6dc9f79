"""Two users of a real JupyterHub: uexec kernels through the hub's proxy, each user's sessions out of the other's reach.

One JupyterHub on 127.0.0.1 (its configurable-http-proxy, the shared-password
authenticator, the local process spawner) serves the module. Each user logs
in through the hub's token API with the password, starts a server with that
token, and drives a `uexec` kernel only through the proxy: the server's REST
API and the kernel websocket (tests/kernel_ws.py), as JupyterLab would.

SimpleLocalProcessSpawner runs every single-user server as the hub's own Unix
user (root here), so what keeps users apart is Jupyter's: a token reaches its
owner's server and nobody else's, and each server's kernels hold their own
sessions. With LocalProcessSpawner and real Unix users (or a container per
user), the operating system separates them too.

configurable-http-proxy is an npm package. When it is not on PATH the test
installs a pinned major version with npm into the user's cache
(~/.cache/unified-exec-kernel-tests, or $XDG_CACHE_HOME): outside the
repository, so the tree stays clean and every clone, worktree and CI run
reuses it, and with nothing for README's test command to add (Node and npm
are already needed to build the front end).

Every process the hub starts carries a marker variable (the hub's own
environment, and `Spawner.environment` for the servers, whose kernels and
sessions inherit it): whatever is still running at the end is killed by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from .conftest import free_port, kill_processes, processes_marked, session_processes
from .kernel_ws import Channels

USERS = ("alice", "bob")
PROXY_PACKAGE = "configurable-http-proxy@5"
MARK = "UEXEC_JUPYTERHUB_TEST"
STARTED = re.compile(r"\[session (\S+) running")
HUB_START_S = 60
SERVER_START_S = 120

HUB_CONFIG = """
c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {folder!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///" + {folder!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {folder!r} + "/cookie_secret"
c.JupyterHub.pid_file = {folder!r} + "/hub.pid"

c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allowed_users = set({users!r})

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {folder!r} + "/home/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = ["--allow-root"]
c.Spawner.ip = "127.0.0.1"
c.Spawner.environment = {{{mark!r}: {folder!r}}}
c.Spawner.start_timeout = {server_start_s}
c.Spawner.http_timeout = {server_start_s}
c.JupyterHub.cleanup_servers = True
"""


# -- configurable-http-proxy ------------------------------------------------------


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "unified-exec-kernel-tests"


def proxy_command() -> str:
    """configurable-http-proxy from PATH, else from the cache, installed there with npm the first time."""
    on_path = shutil.which("configurable-http-proxy")
    if on_path:
        return on_path
    target = _cache() / PROXY_PACKAGE.replace("@", "-")
    program = target / "node_modules" / ".bin" / "configurable-http-proxy"
    if program.exists():
        return str(program)
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"JupyterHub needs configurable-http-proxy: put it on PATH (npm install -g {PROXY_PACKAGE}), "
                    f"or npm on PATH so this test installs it into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="install-", dir=target.parent))
    try:
        done = subprocess.run([npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error", PROXY_PACKAGE],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            pytest.fail(f"npm install {PROXY_PACKAGE} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        try:
            staging.rename(target)  # whole or not at all; a concurrent run may have put it there first
        except OSError:
            if not program.exists():
                raise
    except subprocess.TimeoutExpired:
        pytest.fail(f"npm install {PROXY_PACKAGE} took more than 300 s")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(program)


# -- the hub ----------------------------------------------------------------------


def _marked(value: str) -> list[psutil.Process]:
    return processes_marked(MARK, value)


def _owned_by(user: str) -> list[psutil.Process]:
    """Live processes started for this hub user: the spawner sets JUPYTERHUB_USER, kernels and sessions inherit it."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and process.environ().get("JUPYTERHUB_USER") == user:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


class Hub:
    def __init__(self, folder: Path, port: int, process: subprocess.Popen, log: Path, password: str):
        self.folder, self.port, self.process, self.log = folder, port, process, log
        self.password = password  # the authenticator's shared password

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def request(self, method: str, path: str, token: str | None = None, body=None, timeout: float = 30) -> tuple[int, object]:
        """One HTTP request through the proxy; redirects are answers here, not followed."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"token {token}"
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            return response.status, (json.loads(raw) if raw else None)
        except ValueError:
            return response.status, raw.decode(errors="replace")

    def spawn(self, name: str, token: str) -> tuple[int, object]:
        """Ask for `name`'s server. The spawner picks a free port that the server binds only later, and
        another test's process may take it first ("port N is not available"): then once more, after
        the hub has seen that server end. A second failure is the answer."""
        seen = self.log.stat().st_size
        status, body = self.request("POST", f"/hub/api/users/{name}/server", token)
        with self.log.open("rb") as log:
            log.seek(seen)
            lost_port = b"could not be started because port" in log.read()
        if status in (201, 202) or not lost_port:
            return status, body
        deadline = time.monotonic() + SERVER_START_S
        while (self.request("GET", f"/hub/api/users/{name}", token)[1] or {}).get("servers", {}).get(""):
            assert time.monotonic() < deadline, f"{name}'s failed server is still listed\n{self.log_tail()}"
            time.sleep(0.3)
        return self.request("POST", f"/hub/api/users/{name}/server", token)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with running_hub(tmp_path_factory.mktemp("jupyterhub")) as server:
        yield server


@contextlib.contextmanager
def running_hub(folder: Path, users: tuple[str, ...] = USERS, extra_config: str = ""):
    """A hub on loopback for `users`, configured as HUB_CONFIG then `extra_config` (Python, `c` in scope);
    stopped, and everything it started gone, on the way out."""
    bin_dir = Path(sys.executable).parent
    jupyterhub, singleuser = bin_dir / "jupyterhub", bin_dir / "jupyterhub-singleuser"
    if not jupyterhub.exists():
        pytest.fail("jupyterhub is not installed (it is in the test extra: pip install -e '.[test]')")
    password = secrets.token_hex(12)
    port = free_port()
    config = folder / "jupyterhub_config.py"
    config.write_text(HUB_CONFIG.format(
        proxy_port=port, hub_port=free_port(), proxy_api_port=free_port(), proxy=proxy_command(), folder=str(folder),
        password=password, users=list(users), singleuser=str(singleuser), mark=MARK, server_start_s=SERVER_START_S,
    ) + extra_config)
    env = {name: value for name, value in os.environ.items() if not name.startswith(("JUPYTERHUB_", "JPY_", "CONFIGPROXY_"))}
    env.update({"PATH": str(bin_dir) + os.pathsep + env.get("PATH", ""), MARK: str(folder)})
    log = folder / "jupyterhub.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(jupyterhub), "-f", str(config)], cwd=folder, env=env,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    server = Hub(folder, port, process, log, password)
    try:
        deadline = time.monotonic() + HUB_START_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"jupyterhub exited with {process.returncode}:\n{server.log_tail()}")
            try:
                if server.request("GET", "/hub/api/", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyterhub did not answer through its proxy within {HUB_START_S} s:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # the hub stops the servers it spawned, then its proxy
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (left := _marked(str(folder))) and time.monotonic() < deadline:
            time.sleep(0.2)
        described = []
        for leftover in left:
            try:
                described.append(f"{leftover.pid} {' '.join(leftover.cmdline())}")
            except psutil.Error:
                pass  # ended meanwhile
        kill_processes(left)
        assert described == [], "still running 10 s after the hub stopped (killed now)"


@dataclass
class User:
    hub: Hub
    name: str
    token: str
    kernel_id: str

    def api(self, method: str, path: str, body=None, token: str | None = None):
        return self.hub.request(method, path, token or self.token, body)

    def channels_url(self, kernel_id: str | None = None) -> str:
        return f"ws://127.0.0.1:{self.hub.port}/user/{self.name}/api/kernels/{kernel_id or self.kernel_id}/channels"

    def direct_url(self, kernel_id: str | None = None) -> str:
        """The live view's direct channel (server/relay.py) to one of this user's kernels."""
        return f"ws://127.0.0.1:{self.hub.port}/user/{self.name}/uexec/kernels/{kernel_id or self.kernel_id}/channel"

    def channels(self):
        return Channels.connect(self.channels_url(), self.token)

    def server_ready(self) -> bool:
        status, model = self.api("GET", f"/hub/api/users/{self.name}")
        assert status == 200, model
        return bool(model["servers"].get("", {}).get("ready"))


def _log_in(hub: Hub, name: str) -> str:
    """A token for `name`, from the authenticator (username and password in the token request)."""
    status, model = hub.request("POST", f"/hub/api/users/{name}/tokens",
                                body={"auth": {"username": name, "password": hub.password}, "note": "uexec test", "expires_in": 3600})
    assert status == 201, f"{status} {model}\n{hub.log_tail()}"
    return model["token"]


def _start_server(hub: Hub, name: str, token: str) -> None:
    status, body = hub.spawn(name, token)
    assert status in (201, 202), f"{status} {body}\n{hub.log_tail()}"
    deadline = time.monotonic() + SERVER_START_S
    while True:
        status, model = hub.request("GET", f"/hub/api/users/{name}", token)
        assert status == 200, model
        server = model["servers"].get("")
        if server and server.get("ready"):
            return
        assert time.monotonic() < deadline, f"{name}'s server not ready after {SERVER_START_S} s: {model}\n{hub.log_tail()}"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def users(hub) -> dict[str, User]:
    """Both users logged in, each with a running server and one uexec kernel on it."""
    found = {}
    for name in USERS:
        token = _log_in(hub, name)
        _start_server(hub, name, token)
        status, kernel = hub.request("POST", f"/user/{name}/api/kernels", token, {"name": "uexec"})
        assert status == 201, f"{status} {kernel}\n{hub.log_tail()}"
        found[name] = User(hub, name, token, kernel["id"])
    return found


async def _uexec_sessions(user: User, start: list[str] | None = None) -> list[dict]:
    """The sessions of the user's kernel, from the comm's `list`; after starting `start` there, if given."""
    channels = await user.channels()
    try:
        comm = await channels.open_unified_exec()
        if start:
            started = await channels.ask(comm, {"type": "exec", "request_id": "start", "session_id": None,
                                                "input_chunks": start, "timeout_ms": 0})
            assert started["type"] == "result" and started["session_id"] is not None, started
        return (await channels.ask(comm, {"type": "list", "request_id": "list"}))["sessions"]
    finally:
        channels.close()


# -- the tests --------------------------------------------------------------------------


async def test_each_user_keeps_a_shell_across_uexec_cells_through_the_proxy(users):
    for user in users.values():
        channels = await user.channels()
        try:
            reply, text = await channels.execute("%%uexec -t 1500\nbash --norc -i\n")
            assert reply["status"] == "ok", text
            sid = STARTED.search(text)
            assert sid, text
            reply, text = await channels.execute(f"%%uexec -s {sid[1]}\nexport OWNER={user.name}\n")
            assert reply["status"] == "ok", text
            reply, text = await channels.execute(f"%%uexec -s {sid[1]}\necho owner=$OWNER in $JUPYTERHUB_USER\n")
            assert reply["status"] == "ok", text
            assert f"owner={user.name} in {user.name}" in [line.strip() for line in text.splitlines()], text
        finally:
            channels.close()


async def test_the_comm_drives_a_live_session_through_the_proxy(users):
    alice = users["alice"]
    channels = await alice.channels()
    try:
        comm = await channels.open_unified_exec()
        result = await channels.ask(comm, {"type": "exec", "request_id": "start", "session_id": None,
                                           "input_chunks": ["bash", "--norc", "-i"], "timeout_ms": 500})
        assert result["type"] == "result" and result["session_id"] is not None, result
        sid = result["session_id"]
        attached = await channels.ask(comm, {"type": "attach", "request_id": "view", "session_id": sid})
        assert attached["type"] == "attached" and attached["alive"], attached
        channels.comm_send(comm, {"type": "input", "session_id": sid, "data": "echo $((6*7))\r"})
        deadline = time.monotonic() + 15
        live = ""
        while not re.search(r"[\r\n]42\r\n", live):  # the answer's own line, not the typed `$((6*7))`
            event = await channels.comm_next(comm, lambda d: d.get("type") == "data" and d.get("request_id") is None,
                                             deadline, f"live 42 (so far {live!r})")
            assert event["session_id"] == sid
            live += event["data"]
        killed = await channels.ask(comm, {"type": "kill", "request_id": "stop", "session_id": sid})
        assert killed["type"] == "ok", killed
    finally:
        channels.close()


async def test_a_users_token_reaches_neither_the_other_users_server_nor_kernels(users):
    alice, bob = users["alice"], users["bob"]
    # alice's own token: her kernels (the positive control for every refusal below)
    status, kernels = alice.api("GET", "/user/alice/api/kernels")
    assert status == 200 and alice.kernel_id in [k["id"] for k in kernels], (status, kernels)

    # bob's token on alice's server: refused, and nothing of hers in the answer
    for method, path, body in (("GET", "/user/alice/api/kernels", None), ("GET", f"/user/alice/api/kernels/{alice.kernel_id}", None),
                               ("POST", "/user/alice/api/kernels", {"name": "uexec"}), ("GET", "/user/alice/api/sessions", None),
                               ("DELETE", f"/user/alice/api/kernels/{alice.kernel_id}", None)):
        status, answer = bob.api(method, path, body)
        assert status == 403, f"bob's {method} {path}: {status} {answer}"
        assert alice.kernel_id not in json.dumps(answer)
    # no token at all: sent to log in, never served
    status, answer = bob.hub.request("GET", "/user/alice/api/kernels")
    assert status in (302, 403), (status, answer)

    # bob's token cannot open alice's kernel websocket
    request = HTTPRequest(alice.channels_url(), headers={"Authorization": f"token {bob.token}"}, connect_timeout=10, request_timeout=30)
    with pytest.raises(HTTPClientError) as refused:
        ws = await asyncio.wait_for(websocket_connect(request), 30)
        ws.close()
    assert refused.value.code == 403

    # nor see, start or stop alice's server through the hub
    for method, path in (("GET", "/hub/api/users/alice"), ("POST", "/hub/api/users/alice/server"),
                         ("DELETE", "/hub/api/users/alice/server"), ("POST", "/hub/api/users/alice/tokens")):
        status, answer = bob.api(method, path, {} if method == "POST" else None)
        assert status in (403, 404), f"bob's {method} {path}: {status} {answer}"
    assert alice.server_ready()

    # and the kernels do not share sessions: bob's list holds none of alice's processes
    alice_pids = {s["pid"] for s in await _uexec_sessions(alice, ["sleep", "600"])}
    bob_pids = {s["pid"] for s in await _uexec_sessions(bob, ["sleep", "601"])}
    assert alice_pids and bob_pids and not alice_pids & bob_pids, (alice_pids, bob_pids)

    # the live view's direct channel: alice's token opens hers through the proxy (the positive control) ...
    own = await asyncio.wait_for(websocket_connect(HTTPRequest(alice.direct_url(), headers={"Authorization": f"token {alice.token}"},
                                                               connect_timeout=10, request_timeout=30)), 30)
    try:
        hello = json.loads(await asyncio.wait_for(own.read_message(), 30))
        assert hello["type"] == "hello" and hello["carrier"] == "direct", hello
    finally:
        own.close()
    # ... bob's does not, nor does no token at all
    for headers in ({"Authorization": f"token {bob.token}"}, {}):
        request = HTTPRequest(alice.direct_url(), headers=headers, connect_timeout=10, request_timeout=30)
        with pytest.raises(HTTPClientError) as refused:
            ws = await asyncio.wait_for(websocket_connect(request), 30)
            ws.close()
        assert refused.value.code == 403, headers.keys()
    # and bob's server knows no kernel of alice's: her id on his channel route is refused
    request = HTTPRequest(bob.direct_url(alice.kernel_id), headers={"Authorization": f"token {bob.token}"}, connect_timeout=10, request_timeout=30)
    with pytest.raises(HTTPClientError) as refused:
        ws = await asyncio.wait_for(websocket_connect(request), 30)
        ws.close()
    assert refused.value.code == 404


async def test_stopping_a_users_server_ends_every_process_of_their_sessions_and_nobody_elses(users):
    alice, bob = users["alice"], users["bob"]
    channels = await alice.channels()
    try:
        # a session that ignores hangups, with two children; and a shell with a background job
        reply, text = await channels.execute("%%uexec -t 300 --shell\ntrap '' HUP; sleep 300 & sleep 301 & wait\n")
        assert reply["status"] == "ok", text
        reply, text = await channels.execute("%%uexec -t 500\nbash --norc -i\n")
        sid = STARTED.search(text)
        assert reply["status"] == "ok" and sid, text
        reply, text = await channels.execute(f"%%uexec -s {sid[1]} -t 300\nsleep 302 &\n")
        assert reply["status"] == "ok", text
    finally:
        channels.close()
    leaders = [s["pid"] for s in await _uexec_sessions(alice) if s["alive"]]
    bob_leaders = [s["pid"] for s in await _uexec_sessions(bob, ["sleep", "602"]) if s["alive"]]
    assert len(leaders) >= 2 and bob_leaders, (leaders, bob_leaders)
    deadline = time.monotonic() + 10
    while sum(len(session_processes(pid)) for pid in leaders) < 5:  # the trap's shell + 2 sleeps, bash + its job
        assert time.monotonic() < deadline, {pid: session_processes(pid) for pid in leaders}
        await asyncio.sleep(0.1)
    assert _owned_by("alice")

    status, answer = alice.api("DELETE", "/hub/api/users/alice/server")
    assert status in (202, 204), (status, answer)
    deadline = time.monotonic() + 60
    while True:
        status, model = alice.api("GET", "/hub/api/users/alice")
        if status == 200 and not model["servers"]:
            break
        assert time.monotonic() < deadline, f"alice's server still listed 60 s after the stop: {model}\n{alice.hub.log_tail()}"
        await asyncio.sleep(0.3)
    deadline = time.monotonic() + 30
    while True:
        left = {pid: session_processes(pid) for pid in leaders}
        owned = [p.pid for p in _owned_by("alice")]
        if not any(left.values()) and not owned:
            break
        assert time.monotonic() < deadline, f"30 s after alice's server stopped: sessions {left}, her processes {owned}"
        await asyncio.sleep(0.2)

    # bob's server, kernel and sessions live on
    assert bob.server_ready()
    assert all(session_processes(pid) for pid in bob_leaders), {pid: session_processes(pid) for pid in bob_leaders}
    status, kernels = bob.api("GET", "/user/bob/api/kernels")
    assert status == 200 and bob.kernel_id in [k["id"] for k in kernels], (status, kernels)
