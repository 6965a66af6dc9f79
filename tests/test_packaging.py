"""What a user installs works with no source tree beside it: the wheel, and Binder's install steps.

Each test builds or installs into a fresh virtual environment in its own
temporary directory (removed afterwards), checks the `uexec` kernelspec and
the prebuilt lab extension that environment's `jupyter` reports, and runs
examples/tour.ipynb on the `uexec` kernel with that environment's nbclient.

Every child process gets a marker variable in its environment; the kernel and
what it starts inherit it, so a test can prove that nothing it started is left
running (and end what is, by pid).

Installs use pip's own cache (no --no-cache-dir): both tests and later runs
share it. binder/postBuild runs unchanged, its `--no-cache-dir` included.
A step's output is in the failure message; `-s` prints each step's time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import psutil
import pytest

from .conftest import kill_processes, processes_marked

REPO = Path(__file__).resolve().parent.parent
TOUR = REPO / "examples" / "tour.ipynb"
KERNEL = "uexec"
LABEXT = "unified-exec-kernel"
MARK = "UEXEC_PACKAGING_TEST"  # environment variable naming the test's temp dir
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# never inherited from the session running pytest: they would let the checks see another environment
SCRUBBED = {
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "JUPYTER_PATH",
    "JUPYTER_CONFIG_PATH",
    "JUPYTER_DATA_DIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JUPYTER_PREFER_ENV_PATH",
}

# Run by the fresh environment's python, in a temporary directory holding a copy of the tour.
# It adds a last cell that says which python the kernel runs and where it imported the package from.
TOUR_RUNNER = '''
import sys
import nbformat
from nbclient import NotebookClient

source, target = sys.argv[1], sys.argv[2]
nb = nbformat.read(source, as_version=4)
for cell in nb.cells:  # this run's outputs, not the saved ones
    if cell.cell_type == "code":
        cell.outputs = []
        cell.execution_count = None
nb.cells.append(nbformat.v4.new_code_cell(
    "import sys, unified_exec_kernel\\nprint(sys.executable)\\nprint(unified_exec_kernel.__file__)",
    metadata={"tags": ["packaging-where"]},
))
client = NotebookClient(nb, kernel_name="uexec", timeout=120, resources={"metadata": {"path": "."}})
try:
    client.execute()  # raises CellExecutionError if a cell fails; shuts the kernel down either way
finally:
    nbformat.write(nb, target)
'''


# -- processes and the port -------------------------------------------------


def _port_is_free(port: int) -> bool:
    """Nobody listens there (a bind probe would trip over a previous run's TIME_WAIT)."""
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _marked(value: str) -> list[psutil.Process]:
    return processes_marked(MARK, value)


def _describe(processes: list[psutil.Process]) -> list[str]:
    described = []
    for process in processes:
        try:
            described.append(f"{process.pid}: {' '.join(process.cmdline())}")
        except psutil.Error:
            described.append(str(process.pid))
    return described


def _tail(path: Path, chars: int = 6000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text if len(text) <= chars else "...\n" + text[-chars:]


@dataclass
class Sandbox:
    """One test's temporary directory, and the environment its child processes run with."""

    root: Path
    steps: list[tuple[str, float]]

    @property
    def marker(self) -> str:
        return str(self.root)

    def environ(self, venv: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
        # drop the bin directory of the environment running pytest from PATH
        own_bin = {Path(sys.prefix, "bin").resolve(), Path(sys.executable).parent.resolve()}
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() not in own_bin]
        if venv is not None:
            path.insert(0, str(venv / "bin"))
            env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = os.pathsep.join(path)
        env["PYTHONNOUSERSITE"] = "1"  # nothing from ~/.local
        jupyter = self.root / "jupyter-home"  # nothing from ~/.jupyter or ~/.local/share/jupyter
        env["JUPYTER_CONFIG_DIR"] = str(jupyter / "config")
        env["JUPYTER_DATA_DIR"] = str(jupyter / "data")
        env["JUPYTER_RUNTIME_DIR"] = str(jupyter / "runtime")
        env[MARK] = self.marker
        return env

    def run(self, name: str, cmd: list, *, cwd: Path, env: dict[str, str], timeout: float) -> str:
        """Run cmd to completion (output to a file, so a stray grandchild cannot hold a pipe open)."""
        log = self.root / "logs" / f"{len(self.steps):02d}-{re.sub(r'[^A-Za-z0-9]+', '-', name)}.log"
        log.parent.mkdir(exist_ok=True)
        args = [str(part) for part in cmd]
        started = time.monotonic()
        with log.open("wb") as out:
            process = subprocess.Popen(
                args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                returncode = process.wait(timeout=timeout)
            except BaseException:  # timeout, or pytest-timeout / ^C while waiting
                try:
                    os.killpg(process.pid, signal.SIGKILL)  # its own process group, started just above
                except ProcessLookupError:
                    pass
                process.wait(timeout=10)
                if not isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
                    raise
                pytest.fail(f"{name}: `{' '.join(args)}` did not finish in {timeout} s:\n{_tail(log)}")
        self.steps.append((name, time.monotonic() - started))
        output = log.read_text(errors="replace")
        assert returncode == 0, f"{name}: `{' '.join(args)}` exited with {returncode}:\n{_tail(log)}"
        return output

    def make_venv(self, name: str = "venv") -> Path:
        venv = self.root / name
        self.run("create venv", [sys.executable, "-m", "venv", venv], cwd=self.root, env=self.environ(), timeout=120)
        return venv

    def timings(self) -> str:
        return ", ".join(f"{name} {seconds:.0f} s" for name, seconds in self.steps)


@pytest.fixture
def sandbox():
    root = Path(tempfile.mkdtemp(prefix="uexec-packaging-"))
    box = Sandbox(root=root, steps=[])
    try:
        yield box
    finally:
        # if the test failed half way, end what it started (by pid), then remove everything
        kill_processes(_marked(box.marker))
        print(f"step timings: {box.timings()}")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def tour_runner(tmp_path_factory) -> Path:
    """The script both tests run with their fresh environment's python."""
    script = tmp_path_factory.mktemp("tour-runner") / "run_tour.py"
    script.write_text(TOUR_RUNNER)
    return script


# -- the checks both tests make on an installed environment ------------------


IMPORT_ALL = """
import importlib, pkgutil, sysconfig, unified_exec_kernel
for module in pkgutil.walk_packages(unified_exec_kernel.__path__, "unified_exec_kernel."):
    importlib.import_module(module.name)  # each module's imports are installed
print(sysconfig.get_paths()["purelib"])
print(unified_exec_kernel.__file__)
"""


def _check_import_resolves_inside(box: Sandbox, venv: Path) -> None:
    """`import unified_exec_kernel` (and every submodule) finds the installed copy, in the venv's site-packages."""
    elsewhere = box.root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    out = box.run(
        "import from the venv",
        [venv / "bin" / "python", "-c", IMPORT_ALL],
        cwd=elsewhere,
        env=box.environ(venv),
        timeout=60,
    )
    purelib, module = (Path(line).resolve() for line in out.strip().splitlines()[-2:])
    assert purelib.is_relative_to(venv.resolve()), purelib
    assert module.is_relative_to(purelib), f"unified_exec_kernel imported from {module}, not from {purelib}"
    assert not module.is_relative_to(REPO), module


def _check_kernelspec(box: Sandbox, venv: Path) -> None:
    out = box.run("jupyter kernelspec list", [venv / "bin" / "jupyter", "kernelspec", "list"], cwd=box.root, env=box.environ(venv), timeout=60)
    found = re.search(rf"^\s*{KERNEL}\s+(\S+)\s*$", out, re.M)
    assert found, f"`jupyter kernelspec list` does not show {KERNEL}:\n{out}"
    assert Path(found[1]).resolve() == (venv / "share" / "jupyter" / "kernels" / KERNEL).resolve(), out


def _check_labextension(box: Sandbox, venv: Path) -> None:
    out = ANSI.sub("", box.run("jupyter labextension list", [venv / "bin" / "jupyter", "labextension", "list"], cwd=box.root, env=box.environ(venv), timeout=120))
    section, found_in = None, None
    for line in out.splitlines():
        if line.startswith("/"):
            section = line.strip()
        elif re.match(rf"\s+{re.escape(LABEXT)} v\S+ enabled\s+OK\b", line):
            found_in = section
    assert found_in, f"`jupyter labextension list` does not show {LABEXT} enabled OK:\n{out}"
    assert Path(found_in).resolve() == (venv / "share" / "jupyter" / "labextensions").resolve(), out


def _tagged(nb, tag: str):
    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"expected one cell tagged {tag!r}, found {len(cells)}"
    return cells[0]


def _check_tour(box: Sandbox, venv: Path, runner: Path) -> None:
    """The tour runs on the uexec kernel of this venv, shows what its prose says, and leaves nothing behind."""
    work = box.root / "tour"
    work.mkdir()
    shutil.copy2(TOUR, work / "tour.ipynb")
    box.run(
        "run the tour",
        [venv / "bin" / "python", runner, "tour.ipynb", "executed.ipynb"],
        cwd=work,
        env=box.environ(venv),
        timeout=300,
    )
    nb = nbformat.read(work / "executed.ipynb", as_version=4)

    def text(tag: str) -> str:
        parts = []
        for output in _tagged(nb, tag).outputs:
            assert output.output_type != "error", "\n".join(output.traceback)
            parts.append(output.text if output.output_type == "stream" else output.data.get("text/plain", ""))
        return "".join(part if part.endswith("\n") else part + "\n" for part in parts)

    assert nb.metadata.kernelspec.name == KERNEL
    where = [output for output in _tagged(nb, "packaging-where").outputs if output.get("name") == "stdout"]
    lines = "".join(output.text for output in where).splitlines()
    # What else the cell showed (a late line of an earlier cell's program, a warning) is said, not unpacked.
    assert len(lines) == 2, f"the last cell printed {lines!r}; all it showed: {text('packaging-where')!r}"
    kernel_python, module = map(Path, lines)
    assert kernel_python.parent == venv / "bin", f"the uexec kernel ran {kernel_python}, not the venv's python"
    assert module.resolve().is_relative_to(venv.resolve()), f"the kernel imported unified_exec_kernel from {module}"

    assert "\nhello from sh\n" in text("tour-echo") and "command exited with code 0" in text("tour-echo")
    assert "\nthe answer is 42\n" in text("tour-python-print")
    serving = re.search(r"Serving HTTP on 127\.0\.0\.1 port (\d+)", text("tour-server-start"))
    assert serving, text("tour-server-start")  # on a port the system picked: never one another user holds
    port = int(serving[1])
    assert text("tour-url") == f"http://127.0.0.1:{port}/\n"
    agent = text("tour-agent")
    assert re.match(
        r"Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\nProcess running with session ID \d+\nOriginal token count: \d+\nOutput:\n",
        agent,
    ), agent
    assert "\necho hello, agent\nhello, agent\n" in agent  # shown as a cell shows it (issue 26, 15)
    assert [row.split()[1] for row in text("tour-sessions-end").strip().splitlines()[1:]] == ["sh"]  # the live view's

    # nbclient shut the kernel down: nothing this test started runs, nobody listens on the port
    deadline = time.monotonic() + 10
    while (_marked(box.marker) or not _port_is_free(port)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _describe(_marked(box.marker)) == []
    assert _port_is_free(port), f"something still listens on 127.0.0.1:{port} after the tour"


# -- the tests ---------------------------------------------------------------


@pytest.mark.timeout(900)
def test_wheel_installs_everything_in_a_fresh_environment(sandbox, tour_runner):
    box = sandbox

    # one wheel, built as pip builds it (isolated build; npm runs if the prebuilt extension is absent)
    dist = box.root / "dist"
    box.run(
        "build the wheel",
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, REPO],
        cwd=box.root,
        env=box.environ(),
        timeout=600,
    )
    wheels = sorted(dist.glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["unified_exec_kernel"], wheels
    wheel = wheels[0]
    version = wheel.name.split("-")[1]

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        data = f"unified_exec_kernel-{version}.data/data/share/jupyter/"
        # the package: every module and resource of the source tree
        package = REPO / "unified_exec_kernel"
        sources = {
            p.relative_to(REPO).as_posix()
            for p in package.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.relative_to(package).parts[0] != "labextension"
        }
        assert "unified_exec_kernel/__init__.py" in sources
        assert sources - names == set(), "missing from the wheel"
        # every file pyproject.toml maps into the environment (read after the build: its hook writes the extension)
        shared = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
        for source, target in shared.items():
            origin = REPO / source
            if origin.is_dir():
                files = {f"{target}/{p.relative_to(origin).as_posix()}" for p in origin.rglob("*") if p.is_file()}
            else:
                files = {target} if origin.is_file() else set()
            assert files, f"shared-data {source!r} is missing or empty after the build"
            missing = {f"unified_exec_kernel-{version}.data/data/{f}" for f in files} - names
            assert missing == set(), f"shared-data {source!r} -> {target!r}: missing from the wheel"
        # the kernelspec
        assert f"{data}kernels/uexec/kernel.json" in names, sorted(names)
        spec = json.loads(zf.read(f"{data}kernels/uexec/kernel.json"))
        assert spec["argv"][1:3] == ["-m", "unified_exec_kernel"] and spec["display_name"] == "Python 3 (uexec)", spec
        # the prebuilt lab extension
        ext = f"{data}labextensions/{LABEXT}/"
        for required in ("package.json", "install.json", "static/style.js"):
            assert ext + required in names, f"{ext + required} missing; wheel has {sorted(n for n in names if n.startswith(ext))}"
        meta = json.loads(zf.read(ext + "package.json"))
        assert meta["name"] == LABEXT
        assert ext + meta["jupyterlab"]["_build"]["load"] in names, meta["jupyterlab"]["_build"]
        assert len([n for n in names if n.startswith(ext + "static/") and n.endswith(".js")]) >= 2
        assert json.loads(zf.read(ext + "install.json"))["packageName"] == "unified-exec-kernel"

    # a fresh environment: the wheel alone first (pip fetches the dependencies it declares),
    # enough to import every module; then what the checks need
    venv = box.make_venv()
    box.run("install the wheel", [venv / "bin" / "python", "-m", "pip", "install", wheel], cwd=box.root, env=box.environ(venv), timeout=600)
    _check_import_resolves_inside(box, venv)
    box.run(
        "add jupyterlab and nbclient",
        [venv / "bin" / "python", "-m", "pip", "install", "jupyterlab", "nbclient"],
        cwd=box.root,
        env=box.environ(venv),
        timeout=600,
    )

    _check_kernelspec(box, venv)
    _check_labextension(box, venv)
    _check_tour(box, venv, tour_runner)


def _copy_sources(dest: Path) -> None:
    """The working tree as a clone would have it: tracked and unignored files, no build output."""
    never = ("unified_exec_kernel/labextension/", "labextension/node_modules/")
    try:
        listed = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=60,
            check=True,
        ).stdout.decode()
        files = [f for f in listed.split("\0") if f and not f.startswith(never)]
    except (OSError, subprocess.SubprocessError):
        files = None
    if files is None:  # not a git checkout: copy, leaving out what git ignores here
        shutil.copytree(
            REPO,
            dest,
            ignore=shutil.ignore_patterns(".git", "node_modules", "lib", "build-test", "__pycache__", "*.egg-info", ".venv", ".pytest_cache", ".hypothesis", "build", "dist"),
        )
        shutil.rmtree(dest / "unified_exec_kernel" / "labextension", ignore_errors=True)
        return
    for name in files:
        source = REPO / name
        if source.is_file():  # a tracked file may be deleted in the working tree
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@pytest.mark.timeout(900)
def test_binder_install_steps_then_the_tour(sandbox, tour_runner):
    box = sandbox
    assert shutil.which("node") and shutil.which("npm"), "Binder's environment.yml has nodejs; this test needs node and npm on PATH"

    # the repository as Binder clones it: no prebuilt extension, no node_modules
    repo = box.root / "repo"
    _copy_sources(repo)
    assert (repo / "binder" / "postBuild").is_file()
    assert not (repo / "unified_exec_kernel" / "labextension").exists()
    assert not (repo / "labextension" / "node_modules").exists()

    # environment.yml: python 3.11 and pip (this interpreter), nodejs (on PATH);
    # repo2docker's base environment brings JupyterLab (and with it nbclient)
    venv = box.make_venv()
    box.run(
        "base environment",
        [venv / "bin" / "python", "-m", "pip", "install", "jupyterlab", "nbclient"],
        cwd=box.root,
        env=box.environ(venv),
        timeout=600,
    )

    # repo2docker runs postBuild from the repository root, the environment's bin first on PATH
    box.run("binder/postBuild", ["bash", "binder/postBuild"], cwd=repo, env=box.environ(venv), timeout=600)
    assert (repo / "unified_exec_kernel" / "labextension" / "package.json").is_file(), "postBuild did not build the extension"

    _check_import_resolves_inside(box, venv)
    _check_kernelspec(box, venv)
    _check_labextension(box, venv)
    _check_tour(box, venv, tour_runner)


# -- a clone installed without Node ---------------------------------------------

NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack", "yarn", "yarnpkg", "pnpm", "pnpx"}
NOT_BUILT_AT_BUILD = "the front end (live terminal view, Sessions panel) was NOT built"

# Run by the Node-less environment's python with the clone's path: its own kernel, through the clone's harness.
NODELESS_RUNNER = r'''
import json, pathlib, re, sys, tempfile
sys.path.insert(0, sys.argv[1])
from tests.kernel_harness import Kernel
from unified_exec_kernel.live import frontend

report = {"frontend_installed": frontend.built(), "not_built": frontend.NOT_BUILT}
kernel = Kernel("uexec")
try:
    report["start"] = kernel.run("%%uexec -t 1500\nbash --norc -i\n")
    sid = re.search(r"\[session (\S+) running", report["start"])[1]
    report["echo"] = kernel.run(f"%uexec -s {sid} echo $((6*7))")
    comm = kernel.comm_open("unified_exec")
    report["hello"] = kernel.comm_messages(comm, lambda d: d.get("type") == "hello")[-1]
    kernel.comm_send(comm, {"type": "list", "request_id": "list"})
    report["list"] = kernel.comm_messages(comm, lambda d: d.get("request_id") == "list")[-1]
    # the program goes on only once the cell showed "one" while it ran: no race with the update timer
    go = pathlib.Path(tempfile.mkdtemp()) / "go"
    def shown(msg):
        return msg["content"]["data"].get("text/plain", "") if msg["msg_type"] in ("display_data", "update_display_data") else ""
    def during(messages):
        if any("one" in shown(m) and "[…running]" in shown(m) for m in messages):
            go.touch()
    live = kernel.execute(
        f"%%uexec --live -t 30000 --until '^two$'\nbash --norc -c 'echo one; until [ -e {go} ]; do sleep 0.05; done; echo two; exec cat'\n",
        during=during,
    )
    report["live_reply"] = live.reply["status"]
    report["live_bundles"] = [m["content"]["data"] for m in live.messages if m["msg_type"] in ("display_data", "update_display_data")]
    report["live_text"] = live.text
    kernel.run("%uexec_kill --all")
finally:
    kernel.shutdown()
print("REPORT " + json.dumps(report))
'''


def _path_without_node(box: Sandbox, path: str) -> str:
    """One folder of links to every program on `path` but Node's: PATH as on a machine without Node."""
    shadow = box.root / "bin-without-node"
    shadow.mkdir()
    for folder in path.split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = shadow / entry.name
            if entry.name in NODE_TOOLS or link.exists() or link.is_symlink():
                continue
            if not entry.is_dir() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return str(shadow)


@pytest.mark.timeout(900)
def test_a_clone_installs_and_runs_without_node(sandbox):
    box = sandbox
    repo = box.root / "repo"
    _copy_sources(repo)
    assert not (repo / "unified_exec_kernel" / "labextension").exists()

    venv = box.make_venv()
    env = box.environ(venv)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), _path_without_node(box, box.environ()["PATH"])])
    assert shutil.which("node", path=env["PATH"]) is None and shutil.which("npm", path=env["PATH"]) is None
    assert shutil.which("bash", path=env["PATH"]), "the shadow PATH lost the other programs"
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-v"]  # -v: pip shows a successful build's output only then

    # README's two ways: a plain install, then the editable one with JupyterLab
    for name, args in (("pip install .", ["."]), ("pip install -e .[lab]", ["-e", ".[lab]"])):
        out = box.run(name, [*pip, *args], cwd=repo, env=env, timeout=600)
        said = [line.strip() for line in out.splitlines() if NOT_BUILT_AT_BUILD in line]
        assert len(said) == 1, f"{name}: expected one line saying the front end was not built, got {said}"
        assert "node and npm were not found on PATH" in said[0] and "install Node >= 18 and reinstall" in said[0], said[0]
    assert not (repo / "unified_exec_kernel" / "labextension").exists()

    _check_kernelspec(box, venv)
    listed = ANSI.sub("", box.run("jupyter labextension list", [venv / "bin" / "jupyter", "labextension", "list"], cwd=box.root, env=env, timeout=120))
    assert not re.search(rf"^\s+{re.escape(LABEXT)} v\S+ enabled\s+OK\b", listed, re.M), listed

    runner = box.root / "nodeless_runner.py"
    runner.write_text(NODELESS_RUNNER)
    out = box.run("a kernel without the front end", [venv / "bin" / "python", runner, repo], cwd=box.root, env=env, timeout=180)
    report = json.loads(out.rsplit("REPORT ", 1)[1])
    assert report["frontend_installed"] is False
    assert re.search(r"\[session \S+ running", report["start"]), report["start"]
    assert "42" in [line.strip() for line in report["echo"].splitlines()], report["echo"]
    assert report["hello"]["protocol_version"] == 2, report["hello"]
    assert report["list"]["type"] == "sessions" and len(report["list"]["sessions"]) == 1, report["list"]
    # --live falls back to the cell's own text view: the line saying why, the output as it arrives, the status
    # line; no widget that could not load
    assert report["live_reply"] == "ok", report["live_text"]
    assert report["live_text"].startswith(f"[--live shows text here: {report['not_built']}]\n"), report["live_text"]
    assert not any("application/vnd.jupyter.widget-view+json" in bundle for bundle in report["live_bundles"]), report
    # a display came while the command ran (else it never went on to "two")
    assert re.search(r"^two\s*$", report["live_text"], re.M), report["live_text"]
    assert any("one" in b["text/plain"] and "[…running]" in b["text/plain"] for b in report["live_bundles"]), report
    assert re.search(r"^one\s*$", report["live_text"], re.M), report["live_text"]
    assert re.search(r"\[session \S+ running", report["live_text"]), report["live_text"]

    deadline = time.monotonic() + 10
    while _marked(box.marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _describe(_marked(box.marker)) == []
