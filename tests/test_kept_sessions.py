"""Kept sessions through real kernel restarts: jupyter_client's two restarts, a SIGKILL, the server's REST call.

Each test starts a real uexec kernel in a runtime directory of its own, so
what is left after it (sockets, journals, processes) can be looked for.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from .conftest import kill_processes
from .kernel_harness import Kernel
from .kernel_ws import Channels
from .server_process import JupyterServer
from unified_exec_kernel.jupyter.keeping import keeper_socket

COUNT = 400  # lines, one every 10 ms: the restart falls in the middle (or after: what is checked holds either way)


def counter(go) -> str:
    """Counts, then runs until the file `go` exists: still running after a restart however long it took."""
    return f"bash -c 'for i in $(seq 1 {COUNT}); do echo n$i; sleep 0.01; done; until [ -e {go} ]; do sleep 0.02; done'"
DEADLINE_S = 30


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A runtime directory (connection files, sockets, journals) and an IPython dir, both the test's own."""
    folder = tmp_path / "rt"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    yield folder
    # The command line as `keepers` read it: a keeper that exits since is a zombie, whose cmdline() raises.
    kill_processes([process for process in keepers() if str(folder) in " ".join(process.info["cmdline"] or [])])


def configure(tmp_path, **settings) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text("".join(f"c.UnifiedExec.{name} = {value!r}\n" for name, value in settings.items()))


def keepers() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any("uexec keeper" in part for part in process.info["cmdline"] or []):
                found.append(process)
        except psutil.Error:
            continue
    return found


def leftovers(folder) -> list[str]:
    """What a kernel's sessions may leave in its runtime directory: sockets and journal directories."""
    return sorted(name for name in os.listdir(folder) if "uexec" in name and not name.endswith(".uexec.sock"))


def gone(pids, timeout: float = DEADLINE_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids):
            return True
        time.sleep(0.05)
    return False


LIST = ("from unified_exec_kernel.jupyter import current as _c; "
        "_sessions = _c.bridge_of(get_ipython()).call(_c.manager_of(get_ipython()).list_sessions)")


def session_pids(kernel: Kernel) -> dict[str, int]:
    return json.loads(kernel.run(f"{LIST}; print(__import__('json').dumps({{s.name: s.pid for s in _sessions}}))"))


def counted(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^n(\d+)$", text, re.M)]


def restart(kernel: Kernel, how: str) -> None:
    if how == "sigkill":
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.manager.provisioner.process.wait(timeout=DEADLINE_S)
        kernel.manager.restart_kernel(now=True)
    else:
        kernel.manager.restart_kernel(now=how == "now")
    kernel.client.wait_for_ready(timeout=60)


def start_sessions(kernel: Kernel, go, shell: str = "bash") -> None:
    kernel.run(f"%%uexec --keep --name count --timeout 200\n{counter(go)}")
    kernel.run(f"%%uexec --keep --name sh\n{shell} -i")
    kernel.run("%uexec -s sh cd /tmp && export KEPT=yes")
    kernel.run("%%uexec --keep --name brief --timeout 0\nbash -c 'sleep 0.3; exit 7'")
    kernel.run("%%uexec --name plain --timeout 0\nsleep 300")


def check_after_restart(kernel: Kernel, plain_pid: int, go) -> None:
    listed = kernel.run("%uexec_sessions")
    assert re.search(r"count .*running \(kept, 1 restart\)", listed), listed
    assert re.search(r"sh .*running \(kept, 1 restart\)", listed), listed
    assert "plain" not in listed and gone([plain_pid])
    typed = kernel.run('%uexec -s sh echo "$PWD $KEPT"; (exit 3)')
    assert "/tmp yes" in typed and "command exited with code 3" in typed, typed
    assert "exited with code 7" in kernel.run("%uexec -s brief -t 10000")
    go.touch()
    assert "exited with code 0" in kernel.run("%uexec -s count -t 30000")
    journal = kernel.run(f"%uexec_output count --head {COUNT + 10}")
    assert counted(journal) == list(range(1, COUNT + 1)), journal[-400:]
    assert re.search(r"1\s+restart\s+\(kernel restarted\)", kernel.run("%uexec_output count --commands"))


@pytest.mark.parametrize("how", ["graceful", "now", "sigkill"])
def test_kept_sessions_come_back_after_a_restart_with_nothing_lost(runtime, how):
    kernel = Kernel()
    try:
        start_sessions(kernel, runtime / "go")
        plain = session_pids(kernel)["plain"]
        restart(kernel, how)
        check_after_restart(kernel, plain, runtime / "go")
    finally:
        kernel.shutdown()


def test_a_kept_zsh_keeps_its_integration_across_a_restart(runtime):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed")
    kernel = Kernel()
    try:
        start_sessions(kernel, runtime / "go", "zsh")
        plain = session_pids(kernel)["plain"]
        restart(kernel, "graceful")
        check_after_restart(kernel, plain, runtime / "go")
    finally:
        kernel.shutdown()


def start_kept_sleeper(kernel) -> tuple[int, list[int], str]:
    """A kept session (named `kept`) that ignores hangups: its pid, its keeper's (a list), the keeper's socket."""
    kernel.run("%%uexec --keep --name kept --timeout 0\nbash -c \"trap '' HUP; sleep 300\"")
    kept = session_pids(kernel)["kept"]
    return kept, [psutil.Process(kept).ppid()], keeper_socket(kernel.manager.connection_file)


def test_a_real_shutdown_ends_kept_sessions_and_leaves_nothing(runtime):
    kernel = Kernel()
    try:
        kept, keeper, socket_path = start_kept_sleeper(kernel)
        assert os.path.exists(socket_path) and keeper[0] != kernel.pid
    finally:
        kernel.manager.shutdown_kernel(now=False)
    assert gone([kept, *keeper])
    assert leftovers(runtime) == [] and not os.path.exists(socket_path)


def test_kept_sessions_end_when_no_kernel_comes_back_within_the_grace(runtime, tmp_path):
    configure(tmp_path, keep_grace_s=1.0)
    kernel = Kernel()
    try:
        kept, keeper, socket_path = start_kept_sleeper(kernel)
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.manager.provisioner.process.wait(timeout=DEADLINE_S)
        assert gone([kept, *keeper])
        # What the keeper held goes with it; the dead kernel's own journals are the guardian's to remove.
        assert [name for name in leftovers(runtime) if name.startswith("uexec-journals-kept-")] == [] and not os.path.exists(socket_path)
    finally:
        kernel.manager.shutdown_kernel(now=True)
        kernel.client.stop_channels()


def test_ten_kept_sessions_through_twenty_restarts_hold_no_more_than_they_did(runtime):
    kernel = Kernel()
    try:
        for i in range(10):
            kernel.run(f"%%uexec --keep --name s{i}\nbash -i")
        keeper = psutil.Process(session_pids(kernel)["s0"]).parent()  # the keeper is every kept program's parent
        assert any("uexec keeper" in part for part in keeper.cmdline())

        def footprint():
            kernel_process = psutil.Process(kernel.pid)
            return (keeper.num_fds(), keeper.num_threads(), len(keeper.children(recursive=True)),
                    kernel_process.num_fds(), kernel_process.num_threads(), len(kernel_process.children(recursive=True)))

        sizes = []
        for round_ in range(20):
            restart(kernel, "graceful")
            assert kernel.run(f"{LIST}; print(len(_sessions))").strip() == "10"
            kernel.run(f"%uexec -s s{round_ % 10} echo round {round_}")
            sizes.append(footprint())
        # The keeper holds exactly what it held; the kernel's own fds and threads move by one or two
        # with what it is doing (a leak would grow by one per restart: twenty here).
        assert sizes[-1][:3] == sizes[1][:3], sizes
        assert sizes[-1][3] <= sizes[1][3] + 3 and sizes[-1][4] <= sizes[1][4] + 2 and sizes[-1][5] == sizes[1][5], sizes
        assert keeper.is_running()
    finally:
        kernel.shutdown()


def test_another_kernel_of_the_same_user_cannot_take_them(runtime):
    owner, other = Kernel(), Kernel()
    try:
        owner.run("%%uexec --keep --name kept --timeout 0\nsleep 300")
        connection_file = owner.manager.connection_file
        answer = other.run(textwrap.dedent(f"""\
            from unified_exec_kernel.jupyter.keeping import keeper_socket, keeper_token
            from unified_exec_kernel.core.process.keeper import Keeper
            from ipykernel.connect import get_connection_file
            try:
                await Keeper(keeper_socket({connection_file!r}), keeper_token(get_connection_file())).take_back()
            except OSError as error:
                print(error)
            """))
        assert "refused them: this kernel is not the one its sessions were kept for" in answer
        assert "kept" in owner.run("%uexec_sessions")
    finally:
        owner.shutdown()
        other.shutdown()


def test_another_user_cannot_reach_the_keeper(runtime, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a second Unix user needs root")
    name = "uexecother"
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    kernel = Kernel()
    try:
        kernel.run("%%uexec --keep --name kept --timeout 0\nsleep 300")
        socket_path = keeper_socket(kernel.manager.connection_file)
        os.chmod(tmp_path, 0o755)  # the runtime directory itself stays 0700, as Jupyter makes it
        probe = textwrap.dedent(f"""\
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                s.connect({socket_path!r})
                print("connected")
            except OSError as error:
                print(type(error).__name__)
            """)
        python = shutil.which("python3", path="/usr/bin:/bin")  # one the other user may run (not this venv's)
        answer = subprocess.run(["runuser", "-u", name, "--", python, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
        assert answer.stdout.strip() == "PermissionError", answer
        assert "kept" in kernel.run("%uexec_sessions")
    finally:
        kernel.shutdown()


def test_the_servers_restart_brings_kept_sessions_back(tmp_path):
    async def scenario(server: JupyterServer) -> None:
        kernel_id = server.api("POST", "api/kernels", {"name": "uexec"})["id"]
        url = f"{server.ws}api/kernels/{kernel_id}/channels"
        channels = await Channels.connect(url, server.token)
        try:
            await channels.execute(f"%%uexec --keep --name count --timeout 200\n{counter(tmp_path / 'go')}", timeout=30)
        finally:
            channels.close()
        server.api("POST", f"api/kernels/{kernel_id}/restart")
        channels = await Channels.connect(url, server.token)
        try:
            _, listed = await channels.execute("%uexec_sessions", timeout=30)
            assert re.search(r"count .*\(kept, 1 restart\)", listed), listed
            (tmp_path / "go").touch()
            _, done = await channels.execute("%uexec -s count -t 30000", timeout=40)
            assert "exited with code 0" in done, done
            _, journal = await channels.execute(f"%uexec_output count --head {COUNT + 10}", timeout=30)
            assert counted(journal) == list(range(1, COUNT + 1)), journal[-400:]
        finally:
            channels.close()
        server.api("DELETE", f"api/kernels/{kernel_id}")

    server = JupyterServer(tmp_path)
    try:
        asyncio.run(scenario(server))
    finally:
        server.stop()
    assert gone([process.pid for process in keepers() if str(server.runtime) in " ".join(process.info["cmdline"] or [])])
    assert leftovers(server.runtime) == []


def test_a_kept_flood_comes_back_after_a_restart(runtime):
    """`yes` fills the keeper's ring while the kernel goes: it must hand the session on, not fail (it did once)."""
    kernel = Kernel()
    try:
        kernel.run("%%uexec --keep --name flood --timeout 500\nyes")
        program = session_pids(kernel)["flood"]
        restart(kernel, "graceful")
        assert re.search(r"flood .*running \(kept, 1 restart\)", kernel.run("%uexec_sessions"))
        assert psutil.Process(program).parent().is_running()
        kernel.run("%uexec_kill flood")
        assert gone([program])
    finally:
        kernel.shutdown()


def test_a_kept_shell_script_of_110_kb_starts_like_an_unkept_one_and_comes_back_after_a_restart(runtime):
    # Failed with "the keeper of kept sessions did not answer ([Errno 90] Message too long)".
    script = "# " + "x" * 110_000 + "\necho ran-$((6*7))\nread line\necho got-$line\n"
    kernel = Kernel()
    try:
        for keep in ("", "--keep "):
            shown = kernel.run(f"%%uexec {keep}--shell --name long{len(keep)} --until ^ran- --timeout 10000\n{script}")
            assert "ran-42" in shown, shown
        restart(kernel, "graceful")
        listed = kernel.run("%uexec_sessions")
        assert re.search(r"long7 .*running \(kept, 1 restart\)", listed) and "long0" not in listed, listed
        assert "got-typed" in kernel.run("%uexec -s long7 --until ^got- --timeout 10000 typed")
    finally:
        kernel.shutdown()
