"""Sessions count as a kernel's activity to real idle cullers: jupyter_server's and JupyterHub's (issue 38, 1).

A real `jupyter server` culls kernels idle for CULL_S (checked every second)
and runs without our server extension: the kernel's own message must do
it. Four kernels start together, one per case, each from a kernelspec that
sets `UnifiedExec.activity` (and a short interval); each starts a session
in a cell, then its websocket closes, so from then on only the session can
make it look active. The culler's own clock is what the tests read: a kept
kernel is asserted alive once the kernels that should go have gone and 3x
CULL_S has passed; a culled one is polled for with a bound. A real
JupyterHub with jupyterhub-idle-culler then does the same one level up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest

from unified_exec_kernel.jupyter.activity import MSG_TYPE

from ..conftest import kill_processes
from ..kernel_harness import Kernel
from ..kernel_ws import Channels
from ..server_process import JupyterServer
from ..test_jupyterhub import MARK, SERVER_START_S, Hub, _log_in, running_hub

pytestmark = pytest.mark.timeout(180)

CULL_S = 3
ACTIVITY_INTERVAL_S = 0.5
PRINTS = "while :; do echo tick; sleep 0.3; done"
SILENT = "sleep 600"
CASES = {  # name: (activity setting, what the session runs)
    "printing": ("output", PRINTS),
    "silent": ("output", SILENT),
    "silent_running": ("running", SILENT),
    "printing_none": ("none", PRINTS),
}


def test_the_signal_is_a_parentless_message_an_interval_that_no_cell_shows(tmp_path):
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    profile.joinpath("ipython_kernel_config.py").write_text(f"c.UnifiedExec.activity_interval_s = {ACTIVITY_INTERVAL_S}\n")
    kernel = Kernel(env={**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")})
    try:
        assert "[session" in kernel.run(f"%%uexec --shell -t 0\n{PRINTS}\n")
        signals = []

        def third_signal(msg) -> bool:
            if msg["msg_type"] == MSG_TYPE:
                signals.append(msg)
            return len(signals) == 3

        seen = kernel.messages_until(lambda m: True, third_signal, timeout=20)
    finally:
        kernel.shutdown()
    # After the cell, the signal is all the kernel publishes: no status (never busy), no output in any cell.
    assert [msg["msg_type"] for msg in seen] == [MSG_TYPE] * 3, [(m["msg_type"], m["content"]) for m in seen]
    assert all(msg["parent_header"] == {} and msg["content"] == {} for msg in signals), signals
    sent = [msg["header"]["date"] for msg in signals]
    assert all((b - a).total_seconds() >= ACTIVITY_INTERVAL_S * 0.9 for a, b in zip(sent, sent[1:])), sent  # one an interval at most


def write_kernelspecs(folder: Path) -> Path:
    """A `uexec-<setting>` kernelspec per activity setting, in a JUPYTER_PATH of their own."""
    for setting in ("output", "running", "none"):
        spec = folder / "kernels" / f"uexec-{setting}"
        spec.mkdir(parents=True, exist_ok=True)
        spec.joinpath("kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "unified_exec_kernel", "-f", "{connection_file}",
                     f"--UnifiedExec.activity={setting}", f"--UnifiedExec.activity_interval_s={ACTIVITY_INTERVAL_S}"],
            "display_name": f"uexec ({setting})", "language": "python",
        }))
    return folder


async def start_job(channels_url: str, token: str, command: str) -> None:
    """A session running `command`, started by a cell; the websocket closes after it (the page goes away)."""
    channels = await Channels.connect(channels_url, token)
    try:
        _, text = await channels.execute(f"%%uexec --name job --shell -t 0\n{command}\n", timeout=60)
        assert "[session" in text, text
    finally:
        channels.close()


def wait_for(condition, seconds: float, what: str, log=lambda: ""):
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what} within {seconds} s\n{log()}"
        time.sleep(0.25)
    return found


def server_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def culling_server(tmp_path_factory):
    """The server, and each case's kernel id; the sessions started at the same moment."""
    folder = tmp_path_factory.mktemp("culling")
    specs = write_kernelspecs(folder / "share")
    server = JupyterServer(
        folder,
        f"--MappingKernelManager.cull_idle_timeout={CULL_S}", "--MappingKernelManager.cull_interval=1",
        "--MappingKernelManager.cull_connected=True",
        "--ServerApp.jpserver_extensions=unified_exec_kernel=False",  # the kernel alone keeps itself (a hub image may lack ours)
        env={"JUPYTER_PATH": str(specs)},
    )
    try:
        kernels = {case: server.api("POST", "api/kernels", {"name": f"uexec-{setting}"})["id"] for case, (setting, _) in CASES.items()}

        async def start_all() -> None:
            await asyncio.gather(*(start_job(f"{server.ws}api/kernels/{kernels[case]}/channels", server.token, command)
                                   for case, (_, command) in CASES.items()))

        asyncio.run(start_all())
        yield server, kernels, time.monotonic()
    finally:
        server.stop()


def running(server: JupyterServer) -> dict[str, dict]:
    return {kernel["id"]: kernel for kernel in server.api("GET", "api/kernels")}


def culled(server: JupyterServer, kernel_id: str) -> bool:
    return kernel_id not in running(server)


def kept_past_three_timeouts(culling_server, case: str) -> dict:
    """The case's kernel once the culler has culled what it should and 3x CULL_S has passed: still running."""
    server, kernels, started = culling_server
    for gone in ("silent", "printing_none"):
        wait_for(lambda: culled(server, kernels[gone]), 3 * CULL_S + 15, f"the culler did not cull {gone}", server.log_tail)
    wait_for(lambda: time.monotonic() - started > 3 * CULL_S, 3 * CULL_S, "3x the timeout did not pass")
    kernel = running(server).get(kernels[case])
    assert kernel is not None, f"{case}'s kernel was culled:\n{server.log_tail()}"
    return kernel


def test_a_printing_session_keeps_its_kernel_past_three_cull_timeouts(culling_server):
    kernel = kept_past_three_timeouts(culling_server, "printing")
    server = culling_server[0]
    idle = datetime.now(timezone.utc) - server_time(kernel["last_activity"])
    assert idle.total_seconds() < CULL_S, kernel
    assert kernel["execution_state"] == "idle", kernel  # the signal never shows the kernel busy
    status = server.api("GET", "api/status")
    assert (datetime.now(timezone.utc) - server_time(status["last_activity"])).total_seconds() < CULL_S, status


def test_a_silent_session_is_culled_when_output_is_what_counts(culling_server):
    server, kernels, _ = culling_server
    wait_for(lambda: culled(server, kernels["silent"]), 3 * CULL_S + 15, "the silent kernel was not culled", server.log_tail)


def test_a_silent_session_keeps_its_kernel_when_running_is_what_counts(culling_server):
    kept_past_three_timeouts(culling_server, "silent_running")


def test_none_lets_a_printing_session_be_culled(culling_server):
    server, kernels, _ = culling_server
    wait_for(lambda: culled(server, kernels["printing_none"]), 3 * CULL_S + 15, "the kernel set to none was not culled", server.log_tail)


# -- JupyterHub's idle culler ---------------------------------------------------------

HUB_CULL_S = 5
HUB_USERS = ("printer", "idler")
HUB_CULLER = """
c.JupyterHub.services = [{{"name": "idle-culler", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}}]
c.Spawner.environment.update({{"JUPYTERHUB_ACTIVITY_INTERVAL": "1", "JUPYTER_PATH": {specs!r}}})
"""


def server_of(hub: Hub, name: str, token: str) -> dict | None:
    """The user's server as the hub lists it (asked of the hub: the user's server sees no request)."""
    status, model = hub.request("GET", f"/hub/api/users/{name}", token)
    assert status == 200, model
    return model["servers"].get("")


def _reported_within(server: dict | None, seconds: float) -> bool:
    return bool(server and server.get("last_activity")) and (datetime.now(timezone.utc) - server_time(server["last_activity"])).total_seconds() < seconds


@contextlib.contextmanager
def idle_culler(hub: Hub, token: str, folder: Path):
    """jupyterhub-idle-culler as a hub service, started now (once the sessions run: it would cull a
    server while the other starts), stopped on the way out."""
    env = {**os.environ, "JUPYTERHUB_API_TOKEN": token, MARK: str(folder)}
    log = folder / "idle-culler.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "jupyterhub_idle_culler", f"--url=http://127.0.0.1:{hub.port}/hub/api",
                                    f"--timeout={HUB_CULL_S}", "--cull-every=1"],
                                   env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield log
    finally:
        kill_processes([psutil.Process(process.pid)])
        process.wait(timeout=10)


def test_the_hubs_idle_culler_leaves_a_server_whose_session_prints_and_culls_one_without(tmp_path):
    specs = write_kernelspecs(tmp_path / "share")
    culler_token = secrets.token_hex(16)
    folder = tmp_path / "hub"
    folder.mkdir()
    with running_hub(folder, HUB_USERS, HUB_CULLER.format(token=culler_token, specs=str(specs))) as hub:
        tokens = {name: _log_in(hub, name) for name in HUB_USERS}
        for name in HUB_USERS:
            status, body = hub.spawn(name, tokens[name])
            assert status in (201, 202), f"{status} {body}\n{hub.log_tail()}"
        for name in HUB_USERS:
            wait_for(lambda: (server_of(hub, name, tokens[name]) or {}).get("ready"), SERVER_START_S,
                     f"{name}'s server did not start", hub.log_tail)
        status, kernel = hub.request("POST", "/user/printer/api/kernels", tokens["printer"], {"name": "uexec-output"})
        assert status == 201, f"{status} {kernel}\n{hub.log_tail()}"
        url = f"ws://127.0.0.1:{hub.port}/user/printer/api/kernels/{kernel['id']}/channels"
        asyncio.run(start_job(url, tokens["printer"], PRINTS))
        # The culler judges by what the servers last reported (every second here): it starts once the
        # printing server's reports arrive, or a server still starting (under load) would be judged idle.
        wait_for(lambda: _reported_within(server_of(hub, "printer", tokens["printer"]), HUB_CULL_S / 2), SERVER_START_S,
                 "the printing server's activity never reached the hub", hub.log_tail)
        with idle_culler(hub, culler_token, folder) as culler_log:
            started = time.monotonic()
            # From here on only the hub is asked: a request to a user's server is activity of its own.
            log = lambda: f"{culler_log.read_text(errors='replace')[-2000:]}\n{hub.log_tail()}"  # noqa: E731
            wait_for(lambda: server_of(hub, "idler", tokens["idler"]) is None, 3 * HUB_CULL_S + 20,
                     "the hub's culler did not cull the idle server", log)
            wait_for(lambda: time.monotonic() - started > 3 * HUB_CULL_S, 3 * HUB_CULL_S, "3x the timeout did not pass")
            printer = server_of(hub, "printer", tokens["printer"])
            assert printer is not None and printer.get("ready"), f"the printing user's server was culled:\n{log()}"
            assert (datetime.now(timezone.utc) - server_time(printer["last_activity"])).total_seconds() < HUB_CULL_S, printer
