"""The uexec kernel and its kernelspec; cleanup when a kernel shuts down or restarts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from .conftest import session_processes
from .kernel_harness import Kernel

STUBBORN = "%%uexec -t 300 --shell\ntrap '' HUP; sleep 300 & sleep 301 & wait\n"


def leaders(kernel: Kernel) -> list[int]:
    table = kernel.run("%uexec_sessions")
    return [int(pid) for pid in re.findall(r"\n\d+ +.*? +(\d+) +running", table)]


def wait_gone(pids: list[int], timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if session_processes(pid)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


def test_uexec_kernelspec_is_installed():
    spec = KernelSpecManager().get_kernel_spec("uexec")
    assert spec.display_name == "Python 3 (uexec)"
    assert spec.argv[1:3] == ["-m", "unified_exec_kernel"]


@pytest.mark.parametrize("restart", [False, True], ids=["shutdown", "restart"])
def test_kernel_shutdown_ends_every_session_process(restart):
    kernel = Kernel("uexec")
    try:
        kernel.run(STUBBORN)
        kernel.run("%%uexec -t 500\nbash --norc -i\n")
        pids = leaders(kernel)
        assert len(pids) == 2 and all(len(session_processes(pid)) >= 1 for pid in pids)
        members = [p for pid in pids for p in session_processes(pid)]
        assert len(members) >= 4
        kernel.shutdown(restart=restart)
        assert wait_gone(pids) == []
        if restart:
            assert "no uexec sessions" in kernel.run("%uexec_sessions")
    finally:
        if restart:
            kernel.shutdown()


def test_bad_configuration_is_a_clear_error_at_load():
    kernel = Kernel("python3")
    try:
        kernel.run("%config UnifiedExec.max_sessions = 0")
        execution = kernel.execute("%load_ext unified_exec_kernel")
        assert execution.reply["status"] == "error"
        assert "'max_sessions' trait of an UnifiedExec instance should not be less than 1" in execution.reply["evalue"]
        kernel.run("%config UnifiedExec.max_sessions = 3")
        kernel.run("%config UnifiedExec.env = {'GREETING': 'configured'}")
        kernel.run("%load_ext unified_exec_kernel")
        assert "configured" in kernel.run("%%uexec\nprintenv GREETING\n")
    finally:
        kernel.shutdown()


def test_install_cli_writes_a_kernelspec(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "unified_exec_kernel", "install", "--prefix", str(tmp_path), "--name", "uexec-test"],
        check=True, capture_output=True, timeout=60,
    )
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "uexec-test"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m", "unified_exec_kernel", "-f", "{connection_file}"]
    assert spec["display_name"] == "Python 3 (uexec)"
    assert (spec_dir / "logo-svg.svg").exists()


def test_install_cli_refuses_two_places(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "unified_exec_kernel", "install", "--user", "--sys-prefix"],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 2 and "not allowed with argument" in run.stderr


def test_unloading_the_extension_ends_its_sessions_and_the_kernel_lives_on():
    kernel = Kernel("python3")
    try:
        kernel.run("%load_ext unified_exec_kernel")
        kernel.run(STUBBORN)
        pids = leaders(kernel)
        assert pids and all(session_processes(pid) for pid in pids)
        kernel.run("%unload_ext unified_exec_kernel")
        assert wait_gone(pids) == []
        assert kernel.run("print(6 * 7)").strip() == "42"
    finally:
        kernel.shutdown()


def test_after_unloading_the_magics_are_gone_and_nothing_restarts_the_engine():
    """`%%uexec` after `%unload_ext` ran on a restarted engine; now it is unknown, as before loading."""
    kernel = Kernel("python3")
    try:
        kernel.run("%load_ext unified_exec_kernel")
        kernel.run("%%uexec\ntrue\n")
        kernel.run("%unload_ext unified_exec_kernel")
        count = "import threading\nprint(sum(t.name == 'uexec-engine' for t in threading.enumerate()))"
        deadline = time.monotonic() + 20
        while kernel.run(count).strip() != "0":
            assert time.monotonic() < deadline, "the engine's thread did not end after the unload"
            time.sleep(0.05)
        ran = kernel.execute("%%uexec\necho should-not-run\n")
        assert ran.reply["evalue"] == "Cell magic `%%uexec` not found."
        ran = kernel.execute("%uexec_sessions")
        assert ran.reply["evalue"].startswith("Line magic function `%uexec_sessions` not found")
        assert kernel.run(count).strip() == "0"
        kernel.run("%load_ext unified_exec_kernel")  # and loading again brings them back
        assert "back" in kernel.run("%%uexec\necho back\n")
    finally:
        kernel.shutdown()


LAZY_MODULES = ("anywidget", "ipywidgets", "pyte", "unified_exec_kernel.live.widget", "unified_exec_kernel.notebook.journal_pages")


def test_a_started_kernel_has_its_comm_target_and_none_of_what_only_a_live_view_or_a_read_needs():
    # anywidget and ipywidgets cost a third of loading the extension (issue 26, item 19):
    # they come with the first live view, the renderer with the first output
    kernel = Kernel("uexec")
    try:
        probe = f"import sys, comm\nprint([m for m in {LAZY_MODULES!r} if m in sys.modules], 'unified_exec' in comm.get_comm_manager().targets)"
        assert kernel.run(probe) == "[] True\n"
        text = kernel.run("%%uexec --name lazy --live -t 2000\nbash --norc -i\n")
        assert "[live terminal: session 0 (bash --norc -i), running]" in text, text
        loaded = kernel.run("print('unified_exec_kernel.live.widget' in sys.modules, 'anywidget' in sys.modules)")
        assert loaded == "True True\n"
        widget = kernel.run("from unified_exec_kernel.live.widget import TerminalWidget\nprint(TerminalWidget(0).title)")
        assert widget == "bash --norc -i\n", widget
        assert kernel.run("%uexec_output lazy --head 0").startswith("[session lazy")
    finally:
        kernel.shutdown()


UNUSED_UNTIL_ASKED = (
    "unified_exec_kernel.protocol.endpoint",  # a page's or agent's comm, or the direct channel
    "unified_exec_kernel.protocol.messages",
    "unified_exec_kernel.notebook.sessions",  # the Python API
    "unified_exec_kernel.notebook.session_table",  # %uexec_sessions
    "unified_exec_kernel.core.journal.reader",  # a read, a replay, a session taken back
    "unified_exec_kernel.core.journal.resume",
    "unified_exec_kernel.core.pipe_session",  # tty=False
    "unified_exec_kernel.core.process.guardian_process",  # the helpers' own code runs in the helpers
    "unified_exec_kernel.core.process.keeper_process",
)


def test_a_kernel_with_sessions_running_holds_only_the_code_it_used():
    # What a hub pays per kernel (issue 38, item 5; benchmarks/bench_costs.py): the state
    # bench_costs measures, a shell, a kept shell and a program that ended, without a page.
    kernel = Kernel("uexec")
    try:
        for cell in ("%%uexec\necho hi", "%%uexec --name sh\nbash --norc -i", "%%uexec --keep --name kept\nbash --norc -i"):
            kernel.run(cell)
        probe = f"import sys\nprint([m for m in {UNUSED_UNTIL_ASKED!r} if m in sys.modules])"
        assert kernel.run(probe) == "[]\n"
        comm_id = kernel.comm_open("unified_exec")  # the Sessions panel opens one: the protocol comes with it
        hello = kernel.comm_messages(comm_id, lambda data: data.get("type") == "hello")
        assert hello[-1]["type"] == "hello"
        loaded = "print(all(m in sys.modules for m in ('unified_exec_kernel.protocol.endpoint', 'unified_exec_kernel.protocol.messages')))"
        assert kernel.run(loaded) == "True\n"
        assert "sh" in kernel.run("%uexec_sessions") and kernel.run("print('unified_exec_kernel.notebook.session_table' in sys.modules)") == "True\n"
    finally:
        kernel.shutdown()


# A module nothing else refers to goes when the interpreter's teardown empties sys.modules, its
# object with it: its __del__ sees what that teardown is about to collect.
TEARDOWN_PROBE = """
import gc, sys, types
class _Probe:
    def __del__(self, gc=gc, open=open, path={path!r}):
        with open(path, "w") as file:
            file.write(str(gc.get_freeze_count()))
_module = types.ModuleType("uexec_teardown_probe")
_module.probe = _Probe()
sys.modules["uexec_teardown_probe"] = _module
del _module, _Probe
"""

# A cycle with a finalizer, left in the user's namespace: IPython's exit clears the namespace,
# and only a collection after that runs the finalizer.
CYCLE_WITH_FINALIZER = """
class Node:
    def __del__(self, path={path!r}):
        with open(path, "w") as file:
            file.write("finalized")
node = Node()
node.me = node
"""


def test_a_restarting_kernel_finalizes_what_a_cell_left_and_leaves_its_teardown_no_heap_to_collect(tmp_path):
    # CPython's teardown ran full collections over the ~60,000 live objects: ~250 ms of each
    # Restart Kernel. The heap is frozen at exit, after one last collection: the teardown's
    # collections skip it, and a cycle a cell left is finalized all the same.
    probe, finalized = tmp_path / "freeze-count", tmp_path / "finalized"
    kernel = Kernel("uexec")
    try:
        kernel.run(TEARDOWN_PROBE.format(path=str(probe)) + CYCLE_WITH_FINALIZER.format(path=str(finalized)))
        kernel.shutdown(restart=True)
        assert finalized.read_text() == "finalized"
        assert probe.exists(), "the probe module was not torn down"
        assert int(probe.read_text()) > 10_000
    finally:
        kernel.shutdown()
