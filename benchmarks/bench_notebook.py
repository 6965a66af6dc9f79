"""Notebook benchmarks: what a person at a notebook feels, against baselines measured in the same run.

    python benchmarks/bench_notebook.py                 # all cases
    python benchmarks/bench_notebook.py flood render    # some

The engine can be fast while the notebook still feels slow: every figure here
is taken client side through jupyter_client, as a front end sees it, and set
beside what the same kernel already offers (`%%bash`, `!cmd`) or the physical
floor (a bare PTY read), so a regression shows as a ratio, not a guess.
Kernel cells are timed from the execute_request leaving the client to the
kernel's idle status arriving. Goals (issue 3): a `%%uexec` round trip within
0.9x `%%bash` (issue 26); a 2-million-line flood within 1.2x a bare PTY read, in
<= 50 iopub messages and <= 20 MB of kernel RSS growth; the stop button ends
a `%%uexec` wait within 50 ms; a session keeps >= 0.9 of its pace while a
cell sleeps and >= 0.8 while it computes (busy); a uexec kernel starts and
restarts within 1.1x the stock python3 kernel (startup, issue 26), and Restart
Kernel as a person clicks it (the old kernel's polite shutdown, the new one
ready, `1` run) within 1.1x too (startup, issue 34). Figures are medians
because the machine's few cores are shared; the header prints its load.
"""

from __future__ import annotations

import os
import queue
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections import Counter
from dataclasses import dataclass, field

import psutil
import zmq
from jupyter_client.manager import KernelManager
from pty_floor import PTY_MAGIC, drain_pty

FLOOD_LINES = 2_000_000
FLOOD_COMMAND = f"seq 1 {FLOOD_LINES}"
BASH_CAP_S = 120.0
CONTRAST_CAP_S = 15.0

_open_kernels: list["Kernel"] = []


# -- a small jupyter_client driver (after tests/kernel_harness.py) ---------------


@dataclass
class Run:
    """One cell as the client saw it. Times are seconds after the execute_request was sent."""

    started: float
    idle_at: float | None = None
    reply_at: float | None = None
    busy_at: float | None = None
    reply: dict | None = None
    iopub: int = 0  # every iopub message whose parent is the request, status included
    kinds: Counter = field(default_factory=Counter)
    last_text: str = ""  # the latest text/plain shown (a display update replaces it)
    capped: bool = False


class Kernel:
    def __init__(self, kernel_name: str = "uexec"):
        self.name = kernel_name
        self.manager = KernelManager(kernel_name=kernel_name)
        self.client = None
        # The kernel's stderr goes to a file, echoed at close without the one
        # warning every TCP kernel prints, so the report stays readable.
        self._stderr = tempfile.TemporaryFile()
        _open_kernels.append(self)  # registered before anything can fail, so close() always runs
        self.manager.start_kernel(stderr=self._stderr)
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.pid = self.manager.provisioner.process.pid
        self._poller = zmq.Poller()
        self._poller.register(self.client.iopub_channel.socket, zmq.POLLIN)
        self._poller.register(self.client.shell_channel.socket, zmq.POLLIN)

    def run(self, code: str, *, cap: float = 60.0, tick=None) -> Run:
        """Execute a cell and follow it to both its idle status and its reply.

        `tick(run, now)` is called at least every 10 ms while waiting (e.g. to interrupt).
        Past `cap` seconds the wait stops and the run is marked capped.
        """
        self._drain()
        started = time.perf_counter()
        msg_id = self.client.execute(code)
        run = Run(started)
        iopub, shell = self.client.iopub_channel, self.client.shell_channel
        while run.idle_at is None or run.reply_at is None:
            now = time.perf_counter()
            if now - started > cap:
                run.capped = True
                break
            if tick is not None:
                tick(run, now - started)
            ready = dict(self._poller.poll(10))
            now = time.perf_counter() - started
            if iopub.socket in ready:
                while iopub.msg_ready():
                    self._on_iopub(run, iopub.get_msg(timeout=0), msg_id, now)
            if shell.socket in ready:
                while shell.msg_ready():
                    msg = shell.get_msg(timeout=0)
                    if msg["parent_header"].get("msg_id") == msg_id:
                        run.reply, run.reply_at = msg["content"], now
        return run

    @staticmethod
    def _on_iopub(run: Run, msg: dict, msg_id: str, now: float) -> None:
        if msg["parent_header"].get("msg_id") != msg_id:
            return
        kind, content = msg["msg_type"], msg["content"]
        run.iopub += 1
        run.kinds[kind] += 1
        if kind == "status":
            if content["execution_state"] == "busy" and run.busy_at is None:
                run.busy_at = now
            elif content["execution_state"] == "idle":
                run.idle_at = now
        elif kind in ("display_data", "update_display_data", "execute_result"):
            run.last_text = content["data"].get("text/plain", "")
        elif kind == "stream":
            run.last_text = content["text"]

    def _drain(self) -> None:
        for channel in (self.client.iopub_channel, self.client.shell_channel):
            while channel.msg_ready():
                channel.get_msg(timeout=0)

    def check(self, code: str) -> Run:
        run = self.run(code)
        assert not run.capped and run.reply["status"] == "ok", (code, run.reply, run.last_text)
        return run

    def close(self, *, now: bool = False) -> None:
        """Shut down, then end any process the kernel left behind (a session outliving a kill)."""
        if self in _open_kernels:
            _open_kernels.remove(self)
        try:
            left = psutil.Process(self.pid).children(recursive=True) if getattr(self, "pid", None) else []
        except psutil.Error:
            left = []
        try:
            if self.client is not None:
                self.client.stop_channels()
            if self.manager.has_kernel:
                self.manager.shutdown_kernel(now=now)
        finally:
            for proc in left:
                try:
                    if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                        proc.kill()
                except psutil.Error:
                    pass
            self._stderr.seek(0)
            for line in self._stderr.read().decode(errors="replace").splitlines():
                if line.strip() and "running over TCP without encryption" not in line:
                    print(f"[{self.name} kernel stderr] {line}", file=sys.stderr)
            self._stderr.close()


def _close_all() -> None:
    while _open_kernels:
        try:
            _open_kernels[-1].close(now=True)
        except Exception as error:  # keep closing the others
            print(f"warning: closing a kernel failed: {error!r}", file=sys.stderr)


class RssSampler:
    """Peak RSS of a process, sampled every 20 ms in a thread (VmHWM would be a lifetime peak)."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.before = statistics.median(self._rss() for _ in range(5))
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _rss(self) -> int:
        return self.proc.memory_info().rss

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self._rss())
            except psutil.Error:
                return
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()
        try:
            self.peak = max(self.peak, self._rss())
        except psutil.Error:
            pass

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.before) / 1e6


def _vm_hwm_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


# -- cases -----------------------------------------------------------------------

ROUND_TRIP_CELLS = {
    "%%uexec": "%%uexec\necho hi",
    "%%bash": "%%bash\necho hi",
    "!echo": "!echo hi",
    "pass": "pass",
    "%%pty_floor": "%%pty_floor\necho hi",
}


def round_trip(runs: int = 30, warmup: int = 5) -> dict:
    kernel = Kernel("uexec")
    try:
        first = kernel.check(ROUND_TRIP_CELLS["%%uexec"])
        assert "hi" in first.last_text, first.last_text
        kernel.check(PTY_MAGIC)
        times: dict[str, list[float]] = {name: [] for name in ROUND_TRIP_CELLS}
        # A new order each round, so each cell follows each other one as often. A rotation gave every cell
        # the same predecessor: `%%uexec` always ran after `pass` after `!echo` (pexpect: a fork of the
        # kernel, polled every 50 ms), and measured 1.17x `%%bash` where a shuffle measures 1.00x.
        names, rng = list(ROUND_TRIP_CELLS), random.Random(26)
        for index in range(warmup + runs):
            for name in rng.sample(names, len(names)):
                run = kernel.check(ROUND_TRIP_CELLS[name])
                if index >= warmup:
                    times[name].append(run.idle_at)
    finally:
        kernel.close()
    return {
        name: {"median_ms": statistics.median(values) * 1000, "p90_ms": _p90(values) * 1000}
        for name, values in times.items()
    } | {"runs": runs}


def bare_pty_drain() -> dict:
    """The floor: the same command on a PTY, read in a tight os.read loop until EIO."""
    return drain_pty(FLOOD_COMMAND.split())


def _flood_in_fresh_kernel(cell: str, warm: str, *, cap: float = 60.0) -> dict:
    """One flooding cell in a kernel of its own, after a small cell of the same kind warmed it up."""
    kernel = Kernel("uexec")
    try:
        kernel.check(warm)
        hwm_before = _vm_hwm_kb(kernel.pid)
        with RssSampler(kernel.pid) as rss:
            run = kernel.run(cell, cap=cap)
        hwm_after = _vm_hwm_kb(kernel.pid)
        if not run.capped:
            assert run.reply["status"] == "ok", (cell, run.reply)
    finally:
        kernel.close(now=True)  # a capped %%bash would otherwise keep printing for a minute
    return {
        "seconds": cap if run.capped else run.idle_at,
        "capped": run.capped,
        "iopub": run.iopub,
        "kinds": dict(run.kinds),
        "rss_growth_mb": rss.growth_mb,
        "hwm_growth_mb": (hwm_after - hwm_before) / 1000,
        "last_text": run.last_text[-200:],
    }


def flood(uexec_runs: int = 3) -> dict:
    # The floor is taken in turns with %%uexec, so a neighbour's load that comes or goes weighs on both.
    floor, uexec = [], []
    for _ in range(uexec_runs):
        floor.append(bare_pty_drain())
        figures = _flood_in_fresh_kernel(f"%%uexec --timeout 60000\n{FLOOD_COMMAND}", "%%uexec\necho hi")
        assert f"{FLOOD_LINES}" in figures["last_text"] and "exited with code 0" in figures["last_text"], figures
        uexec.append(figures)
    bang = _flood_in_fresh_kernel(f"!{FLOOD_COMMAND}", "!echo hi")
    bash = _flood_in_fresh_kernel(f"%%bash\n{FLOOD_COMMAND}", "%%bash\necho hi", cap=BASH_CAP_S)
    middle = sorted(uexec, key=lambda figures: figures["seconds"])[len(uexec) // 2]
    return {
        "floor_seconds": statistics.median(f["seconds"] for f in floor),
        "floor_bytes": floor[0]["bytes"],
        "uexec": middle,
        "uexec_seconds_all": [f["seconds"] for f in uexec],
        "uexec_iopub_max": max(f["iopub"] for f in uexec),
        "uexec_rss_max_mb": max(f["rss_growth_mb"] for f in uexec),
        "bang": bang,
        "bash": bash,
    }


INTERRUPTED_LINE = re.compile(r"interrupted after \d+\.\d\d s: session \d+ still runs")


def _interrupt_after(delay: float, kernel: Kernel, marks: dict):
    def tick(run: Run, elapsed: float) -> None:
        if "interrupted" not in marks and run.busy_at is not None and elapsed - run.busy_at >= delay:
            marks["interrupted"] = elapsed
            kernel.manager.interrupt_kernel()

    return tick


def interrupt(runs: int = 10, contrast_runs: int = 3) -> dict:
    uexec_idle, uexec_reply, statuses = [], [], Counter()
    kernel = Kernel("uexec")
    try:
        kernel.check("%%uexec\necho hi")
        for _ in range(runs):
            marks: dict = {}
            run = kernel.run("%%uexec -t 30000\nsleep 100\n", cap=40, tick=_interrupt_after(1.0, kernel, marks))
            assert not run.capped and "interrupted" in marks, (run, marks)
            # the cell fails with one line (cell_output.interrupted_line): the session still runs
            assert INTERRUPTED_LINE.search(run.last_text), run.last_text
            statuses[run.reply["status"]] += 1
            uexec_idle.append(run.idle_at - marks["interrupted"])
            uexec_reply.append(run.reply_at - marks["interrupted"])
            kernel.check("%uexec_kill --all")
    finally:
        kernel.close()

    # Contrast: a plain ipykernel (no extension) awaiting asyncio.sleep notices
    # the interrupt only when its loop next wakes up. One capped wait says so;
    # more would only spend another 15 s each.
    contrast, capped = [], False
    plain = Kernel("python3")
    try:
        plain.check("import asyncio")
        for _ in range(contrast_runs):
            marks = {}
            run = plain.run(
                "await asyncio.sleep(100)", cap=1.5 + CONTRAST_CAP_S, tick=_interrupt_after(1.0, plain, marks)
            )
            if run.idle_at is None or run.idle_at - marks["interrupted"] > CONTRAST_CAP_S:
                capped = True
                contrast.append(CONTRAST_CAP_S)
                break
            contrast.append(run.idle_at - marks["interrupted"])
    finally:
        plain.close(now=capped)  # a capped kernel is still in its sleep
    return {
        "runs": runs,
        "idle_median_ms": statistics.median(uexec_idle) * 1000,
        "idle_max_ms": max(uexec_idle) * 1000,
        "reply_median_ms": statistics.median(uexec_reply) * 1000,
        "reply_max_ms": max(uexec_reply) * 1000,
        "reply_statuses": dict(statuses),
        "contrast_runs": len(contrast),
        "contrast_median_s": statistics.median(contrast),
        "contrast_max_s": max(contrast),
        "contrast_capped": capped,
    }


def _seq_text(size: int) -> str:
    lines, total, n = [], 0, 0
    while total < size:
        n += 1
        line = f"{n}\r\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def render(repeats: int = 10) -> dict:
    from unified_exec_kernel.screen.render import render_terminal_text

    figures = {}
    for label, size in (("128 KiB", 128 * 1024), ("1 MB", 1_000_000)):
        text = _seq_text(size)
        render_terminal_text(text)  # warm up
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            render_terminal_text(text)
            times.append(time.perf_counter() - started)
        median = statistics.median(times)
        figures[label] = {"median_ms": median * 1000, "mb_per_s": size / median / 1e6}
    return figures


def typed(runs: int = 30, warmup: int = 5) -> dict:
    """`echo hi` typed into an integrated bash (returns when the command is done) against `%%bash echo hi`."""
    kernel = Kernel("uexec")
    try:
        kernel.check("%%uexec --name bench-sh\nbash --norc -i")
        cells = {"typed": "%uexec -s bench-sh echo hi", "%%bash": "%%bash\necho hi"}
        first = kernel.check(cells["typed"])
        assert "command exited with code 0" in first.last_text, first.last_text
        times: dict[str, list[float]] = {name: [] for name in cells}
        for index in range(warmup + runs):
            for name in (list(cells) if index % 2 else list(cells)[::-1]):
                run = kernel.check(cells[name])
                if index >= warmup:
                    times[name].append(run.idle_at)
    finally:
        kernel.close()
    return {name: {"median_ms": statistics.median(v) * 1000, "p90_ms": _p90(v) * 1000} for name, v in times.items()} | {"runs": runs}


def tour(runs: int = 3) -> dict:
    """Run All of examples/tour.ipynb with nbclient, kernel start excluded."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(__file__).resolve().parent.parent / "examples" / "tour.ipynb"
    seconds = []
    for _ in range(runs):
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, kernel_name="uexec", timeout=120)
        with client.setup_kernel():
            started = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            seconds.append(time.perf_counter() - started)
    return {"seconds": seconds, "cells": sum(1 for c in nb.cells if c.cell_type == "code")}


BUSY_S = 3.0
# A program printing numbered lines (`WIDTH` bytes each, a pause of `PAUSE` s between flushes of
# `EVERY` lines), its line count kept in a file (not the PTY), so its progress can be read whatever
# happens to its output.
_WRITER = """
import os, sys, time
count = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
width, pause, every = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
i = 0
while True:
    i += 1
    sys.stdout.write(f"{i:08d} " + "x" * (width - 10) + "\\n")
    if i % every == 0:
        sys.stdout.flush()
        os.pwrite(count, b"%16d" % i, 0)
        if pause:
            time.sleep(pause)
"""


class _Writer:
    """Where a `_WRITER` program is, and how many lines it has written so far."""

    def __init__(self, width: int, pause: float, every: int):
        self.counter = Path(tempfile.mkdtemp()) / "count"
        script = self.counter.with_name("writer.py")
        script.write_text(_WRITER)
        self.command = f"{sys.executable} {script} {self.counter} {width} {pause} {every}"

    def written(self) -> int:
        text = self.counter.read_bytes().strip() if self.counter.exists() else b""
        return int(text) if text else 0


def busy(rounds: int = 3) -> dict:
    """Lines a fast-printing session writes during a 3 s cell of Python, over lines in 3 s with the kernel idle."""
    kernel = Kernel("uexec")
    chatty = _Writer(200, 0.0005, 1)  # ~200-byte lines every 0.5 ms
    written = chatty.written
    cells = {
        "time.sleep": f"import time\ntime.sleep({BUSY_S})",
        "pure Python loop": f"import time\nend = time.monotonic() + {BUSY_S}\nwhile time.monotonic() < end:\n    pass",
    }
    lines: dict[str, list[float]] = {"idle": [], **{name: [] for name in cells}}
    try:
        kernel.check(f"%%uexec --name chatty -t 0\n{chatty.command}")
        while written() < 100:  # started and printing
            time.sleep(0.05)
        for _ in range(rounds):
            start = written()
            time.sleep(BUSY_S)  # the client waits; the kernel is idle
            lines["idle"].append(written() - start)
            for name, cell in cells.items():
                start = written()
                run = kernel.check(cell)
                lines[name].append((written() - start) * BUSY_S / run.idle_at)
            kernel.check("%%uexec -s chatty -t 0")  # read what piled up, as a notebook would
    finally:
        kernel.close()
    return {name: statistics.median(values) for name, values in lines.items()} | {"rounds": rounds}


RESTART_PACE_S = 2.0


def _restart_until_listed(kernel: Kernel, needle: str) -> float:
    """Restart Kernel (jupyter_client's, as a front end's menu asks the server), until `%uexec_sessions` shows `needle`."""
    started = time.perf_counter()
    kernel.manager.restart_kernel(now=False)
    kernel.client.wait_for_ready(timeout=60)
    kernel.pid = kernel.manager.provisioner.process.pid
    while needle not in kernel.check("%uexec_sessions").last_text:
        pass
    return time.perf_counter() - started


def restart(rounds: int = 5) -> dict:
    """Restart Kernel with kept sessions (a shell, a counter) against the same restart with none; then a
    program writing as fast as it can through restarts: its pace, and what its journal lost."""
    plain, kernel = Kernel("uexec"), Kernel("uexec")
    bare, kept = [], []
    try:
        plain.check("%uexec_sessions")
        kernel.check("%%uexec --keep --name sh\nbash -i")
        kernel.check("%%uexec --keep --name count -t 0\nbash -c 'while :; do date +%s.%N; sleep 0.1; done'")
        for _ in range(rounds):  # interleaved, so the machine's load weighs on both alike
            bare.append(_restart_until_listed(plain, "no uexec sessions"))
            kept.append(_restart_until_listed(kernel, "(kept,"))
    finally:
        plain.close()
        kernel.close()
    kernel = Kernel("uexec")
    fast = _Writer(100, 0, 64)  # as fast as it can
    written = fast.written
    pace = []
    try:
        kernel.check(f"%%uexec --keep --name fast -t 0\n{fast.command}")
        while written() < 1000:
            time.sleep(0.05)
        start = written()
        time.sleep(RESTART_PACE_S)
        idle = (written() - start) / RESTART_PACE_S
        for _ in range(rounds):
            start, began = written(), time.perf_counter()
            _restart_until_listed(kernel, "(kept,")
            pace.append((written() - start) / (time.perf_counter() - began) / idle)
        kernel.check("%uexec_kill fast --signal TERM")
        kernel.check("%uexec -s fast -t 60000")
        tail = kernel.check("%uexec_output fast --tail 1").last_text
    finally:
        kernel.close()
    import re

    last = int(re.search(r"^(\d{8}) ", tail, re.M).group(1))
    lines = int(re.search(r"of ([\d,]+)", tail).group(1).replace(",", ""))
    return {"bare": statistics.median(bare), "kept": statistics.median(kept), "pace": statistics.median(pace), "idle": idle,
            "last": last, "lines": lines, "rounds": rounds}


def dead_keeper(rounds: int = 3) -> dict:
    """A kept program writing as fast as it can when its keeper is killed while the kernel lives: how long
    until the kernel reads it itself and says so, and what its journal lost (what the keeper had read and
    not relayed: the figure a person is told may be missing); then Restart Kernel with that session, no
    longer kept, against a plain restart in the same round."""
    takeover, lost, through, bare = [], [], [], []
    for _ in range(rounds):
        kernel, plain = Kernel("uexec"), Kernel("uexec")
        fast = _Writer(100, 0, 64)
        try:
            plain.check("%uexec_sessions")
            kernel.check(f"%%uexec --keep --name fast -t 0\n{fast.command}")
            while fast.written() < 1000:
                time.sleep(0.05)
            program = int(kernel.check(f"{_LIST}; print(_sessions[0].pid)").last_text)
            with open(f"/proc/{program}/stat", "rb") as stat:
                keeper = int(stat.read().rsplit(b")", 1)[1].split()[1])
            began = time.perf_counter()
            os.kill(keeper, signal.SIGKILL)
            while "no longer kept" not in kernel.check("%uexec_sessions").last_text:
                pass
            takeover.append(time.perf_counter() - began)
            kernel.check("%uexec_kill fast --signal TERM")
            kernel.check("%uexec -s fast -t 60000")
            tail = kernel.check("%uexec_output fast --tail 1").last_text
            last = int(re.search(r"^(\d{8}) ", tail, re.M).group(1))
            lines = int(re.search(r"of ([\d,]+)", tail).group(1).replace(",", ""))
            lost.append(last - lines)
            kernel.check("%%uexec --name sh\nbash -i")  # one running session through the restart, as the plain kernel has none
            bare.append(_restart_until_listed(plain, "no uexec sessions"))
            through.append(_restart_until_listed(kernel, "no uexec sessions"))
        finally:
            plain.close()
            kernel.close()
    return {"takeover": statistics.median(takeover), "lost": max(lost), "through": statistics.median(through),
            "bare": statistics.median(bare), "rounds": rounds}


_LIST = ("from unified_exec_kernel.jupyter import current as _c; "
         "_sessions = _c.bridge_of(get_ipython()).call(_c.manager_of(get_ipython()).list_sessions)")


def startup(runs: int = 5) -> dict:
    """Start and restart of a uexec kernel against the stock python3 kernel, interleaved, as a front end waits.

    Start: from start_kernel to the first kernel_info reply (what a notebook
    waits for before it runs a cell). Restart, as a person clicks it in a
    kernel that has run a cell (`%%uexec echo hi`; python3 `!echo hi`):
    restart_kernel(now=False) (the old kernel's polite shutdown, then a
    start, as the notebook's Restart does) to the next reply, and on to the
    reply of a `1` executed then ("clicked").
    The package's bytecode is compiled first, as an install has it: under
    PYTHONDONTWRITEBYTECODE an editable install would compile every module at
    every start (~40 ms here), a cost no installed kernel pays. Beside each
    wall time, the CPU time the kernel's process had used by its reply: on a
    shared machine the wall times follow the neighbours' load, the CPU times
    much less.
    """
    import compileall
    import importlib.util

    compileall.compile_dir(os.path.dirname(importlib.util.find_spec("unified_exec_kernel").origin), quiet=1)
    kinds = ("start", "restart", "clicked", "start_cpu", "restart_cpu")
    used = {"python3": "!echo hi", "uexec": "%%uexec\necho hi"}  # what the old kernel has run
    times: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in kinds} for name in ("python3", "uexec")}

    def executed(client, code: str) -> None:
        sent, deadline = client.execute(code), time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, f"no execute_reply to {code!r} within 60 s"
            try:
                reply = client.shell_channel.get_msg(timeout=0.01)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == sent:
                assert reply["content"]["status"] == "ok", reply["content"]
                return

    def answered(manager: KernelManager, client) -> None:
        # Not wait_for_ready: it ends with 0.2 s of listening to iopub (the same
        # for both kernels, so it hides their difference) and, after a restart,
        # may take a reply that was already on its way. A request sent before a
        # restarted kernel listens can be lost: it is sent again every 0.5 s.
        sent: set[str] = set()
        deadline, again = time.monotonic() + 60, 0.0
        while True:
            now = time.monotonic()
            assert now < deadline, "no kernel_info reply within 60 s"
            if not manager.is_alive():
                raise RuntimeError(f"the {manager.kernel_name} kernel died before it answered (run it by hand to see its error)")
            if now >= again:
                sent.add(client.kernel_info())
                again = now + 0.5
            try:
                reply = client.shell_channel.get_msg(timeout=0.01)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") in sent:
                return

    def cpu(manager: KernelManager) -> float:
        used = psutil.Process(manager.provisioner.process.pid).cpu_times()
        return used.user + used.system

    # The client connects before the kernel listens, and zmq retries a refused
    # connection every 100 ms by default: at that grain both kernels' figures
    # would be the retry timer's. Retrying every 5 ms times the kernels.
    context = zmq.Context()
    context.setsockopt(zmq.RECONNECT_IVL, 5)
    for _ in range(runs):
        for name in times:
            manager = KernelManager(kernel_name=name, context=context)
            client = None
            try:
                started = time.perf_counter()
                manager.start_kernel(stderr=subprocess.DEVNULL)
                client = manager.blocking_client()
                client.start_channels()
                answered(manager, client)
                times[name]["start"].append(time.perf_counter() - started)
                times[name]["start_cpu"].append(cpu(manager))
                executed(client, used[name])
                started = time.perf_counter()
                manager.restart_kernel(now=False)
                answered(manager, client)
                times[name]["restart"].append(time.perf_counter() - started)
                times[name]["restart_cpu"].append(cpu(manager))
                executed(client, "1")
                times[name]["clicked"].append(time.perf_counter() - started)
            finally:
                if client is not None:
                    client.stop_channels()
                if manager.has_kernel:
                    manager.shutdown_kernel(now=True)
    context.term()
    return {name: {what: sorted(values) for what, values in figures.items()} for name, figures in times.items()} | {"runs": runs}


CASES = {"startup": startup, "round_trip": round_trip, "typed": typed, "tour": tour, "flood": flood, "interrupt": interrupt, "render": render, "busy": busy, "restart": restart, "dead_keeper": dead_keeper}


# -- report ----------------------------------------------------------------------


def report_round_trip(f: dict) -> None:
    ours, bash = f["%%uexec"], f["%%bash"]
    others = ", ".join(
        f"{name} {f[name]['median_ms']:.1f} ms (p90 {f[name]['p90_ms']:.1f})" for name in ("%%bash", "!echo", "pass")
    )
    print(
        f"round trip, send -> idle, {f['runs']} interleaved runs each: %%uexec echo hi median {ours['median_ms']:.1f} ms "
        f"(p90 {ours['p90_ms']:.1f}); {others}: {ours['median_ms'] / bash['median_ms']:.2f}x %%bash (goal <= 0.9x, issue 26); "
        f"floor, %%pty_floor echo hi (the command on a PTY read on the kernel's main thread: no engine thread, display "
        f"or journal) {f['%%pty_floor']['median_ms']:.1f} ms, {f['%%pty_floor']['median_ms'] / bash['median_ms']:.2f}x %%bash"
    )


def _flood_figures(f: dict) -> str:
    seconds = f">{f['seconds']:.0f} s (capped; kernel killed)" if f["capped"] else f"{f['seconds']:.2f} s"
    return f"{seconds}, {f['iopub']:,} iopub msgs, kernel RSS +{f['rss_growth_mb']:.1f} MB (VmHWM +{f['hwm_growth_mb']:.1f})"


def report_flood(f: dict) -> None:
    floor, ours = f["floor_seconds"], f["uexec"]
    runs = ", ".join(f"{s:.2f}" for s in f["uexec_seconds_all"])
    print(
        f"flood {FLOOD_COMMAND} ({f['floor_bytes'] / 1e6:.1f} MB on a PTY) to idle: %%uexec --timeout 60000 "
        f"{_flood_figures(ours)} [median of {len(f['uexec_seconds_all'])} fresh kernels: {runs} s; worst "
        f"{f['uexec_iopub_max']} msgs, +{f['uexec_rss_max_mb']:.1f} MB]; bare os.read {floor:.2f} s: "
        f"{ours['seconds'] / floor:.2f}x (goal <= 1.2x, <= 50 msgs, <= 20 MB; floor and %%uexec in turns)"
    )
    for label, key in (("!seq", "bang"), ("%%bash seq", "bash")):
        other = f[key]
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in sorted(other["kinds"].items()))
        print(
            f"flood baseline {label}: {_flood_figures(other)} [{kinds}]: "
            f"{other['seconds'] / floor:.1f}x the floor, {other['seconds'] / ours['seconds']:.1f}x %%uexec"
        )


def report_interrupt(f: dict) -> None:
    statuses = ", ".join(f"{status} {count}" for status, count in f["reply_statuses"].items())
    ratio = f["contrast_max_s"] * 1000 / f["idle_median_ms"]
    if f["contrast_capped"]:
        contrast = f"no idle within {CONTRAST_CAP_S:.0f} s (capped after {f['contrast_runs']} run(s)): > {ratio:.0f}x slower"
    else:
        contrast = (
            f"{f['contrast_runs']} runs: median {f['contrast_median_s'] * 1000:.0f} ms "
            f"(max {f['contrast_max_s'] * 1000:.0f}): {f['contrast_median_s'] * 1000 / f['idle_median_ms']:.0f}x slower"
        )
    print(
        f"interrupt during a %%uexec -t 30000 wait (sleep 100), {f['runs']} runs: to idle median "
        f"{f['idle_median_ms']:.1f} ms (max {f['idle_max_ms']:.1f}), to execute_reply median {f['reply_median_ms']:.1f} ms "
        f"(max {f['reply_max_ms']:.1f}; {statuses}) (goal <= 50 ms); contrast, plain python3 kernel without the "
        f"extension, await asyncio.sleep(100): {contrast}"
    )


def report_render(f: dict) -> None:
    parts = "; ".join(f"{label} {v['median_ms']:.1f} ms ({v['mb_per_s']:.1f} MB/s)" for label, v in f.items())
    print(f"render_terminal_text over seq output with CRLF, median of 10: {parts}")


def report_typed(f: dict) -> None:
    ours, bash = f["typed"], f["%%bash"]
    print(
        f"a command typed into an integrated bash (%uexec -s NAME echo hi), send -> idle, {f['runs']} interleaved runs: "
        f"median {ours['median_ms']:.1f} ms (p90 {ours['p90_ms']:.1f}); %%bash echo hi {bash['median_ms']:.1f} ms "
        f"(p90 {bash['p90_ms']:.1f}): {ours['median_ms'] / bash['median_ms']:.2f}x (goal <= 1.5x)"
    )


def report_tour(f: dict) -> None:
    runs = ", ".join(f"{s:.2f}" for s in f["seconds"])
    print(
        f"tour Run All ({f['cells']} code cells, kernel start excluded): median {statistics.median(f['seconds']):.2f} s "
        f"[{runs}] (goal <= 5 s)"
    )


def report_busy(f: dict) -> None:
    idle = f["idle"]
    parts = [f"{name} {f[name]:.0f} lines: {f[name] / idle:.2f}x" for name in ("time.sleep", "pure Python loop")]
    goals = {"time.sleep": 0.9, "pure Python loop": 0.8}
    print(
        f"progress while busy: a session printing 200-byte lines every 0.5 ms wrote {idle:.0f} lines in {BUSY_S:.0f} s "
        f"with the kernel idle; during a {BUSY_S:.0f} s cell of " + "; ".join(parts) + " (medians of "
        f"{f['rounds']}; goals >= {goals['time.sleep']}x and >= {goals['pure Python loop']}x)"
    )


def report_restart(f: dict) -> None:
    print(
        f"restart: until the new kernel lists its kept sessions {f['kept'] * 1000:.0f} ms vs {f['bare'] * 1000:.0f} ms "
        f"with no sessions = {f['kept'] / f['bare']:.2f}x (goal <= 1.2x); a program writing as fast as it can "
        f"({f['idle']:,.0f} lines/s idle) kept {f['pace']:.2f}x its pace through each restart (goal >= 0.9); "
        f"its journal holds {f['lines']:,} lines for {f['last']:,} written: {f['last'] - f['lines']:,} lost "
        f"(goal 0) (medians of {f['rounds']})"
    )


def report_dead_keeper(f: dict) -> None:
    print(
        f"dead keeper: the kernel reads a kept flood itself and says so {f['takeover'] * 1000:.0f} ms after its keeper's "
        f"SIGKILL; its journal lost at most {f['lost']:,} lines (what the keeper held unrelayed; the journal's chapter "
        f"says so); Restart Kernel after it {f['through'] * 1000:.0f} ms vs {f['bare'] * 1000:.0f} ms with no sessions "
        f"= {f['through'] / f['bare']:.2f}x (goal <= 1.2x) (medians of {f['rounds']})"
    )


def report_startup(f: dict) -> None:
    ours, stock = (statistics.median(f[name]["clicked"]) for name in ("uexec", "python3"))
    print(
        f"Restart Kernel as clicked (restart_kernel(now=False) after a cell, to the reply of `1` run then), median of "
        f"{f['runs']} interleaved: uexec {ours:.2f} s [{', '.join(f'{s:.2f}' for s in f['uexec']['clicked'])}], python3 "
        f"{stock:.2f} s [{', '.join(f'{s:.2f}' for s in f['python3']['clicked'])}]: {ours / stock:.2f}x (goal <= 1.1x, issue 34)"
    )
    for what in ("start", "restart"):
        ours, stock = (statistics.median(f[name][what]) for name in ("uexec", "python3"))
        cpu_ours, cpu_stock = (statistics.median(f[name][f"{what}_cpu"]) for name in ("uexec", "python3"))
        print(
            f"kernel {what} to the first kernel_info reply, median of {f['runs']} interleaved: uexec {ours:.2f} s "
            f"[{', '.join(f'{s:.2f}' for s in f['uexec'][what])}], python3 {stock:.2f} s "
            f"[{', '.join(f'{s:.2f}' for s in f['python3'][what])}]: {ours / stock:.2f}x (goal <= 1.1x); "
            f"the kernel's CPU time by then: uexec {cpu_ours:.2f} s, python3 {cpu_stock:.2f} s: {cpu_ours / cpu_stock:.2f}x"
        )


REPORTS = {
    "startup": report_startup,
    "restart": report_restart,
    "dead_keeper": report_dead_keeper,
    "busy": report_busy,
    "round_trip": report_round_trip,
    "typed": report_typed,
    "tour": report_tour,
    "flood": report_flood,
    "interrupt": report_interrupt,
    "render": report_render,
}


def chosen(argv: list[str], cases: dict, title: str) -> list[str]:
    """The cases named (every case if none), in their order, after a header with the machine's load;
    an unknown name ends the run in one line."""
    unknown = [name for name in argv if name not in cases]
    if unknown:
        sys.exit(f"unknown case {', '.join(unknown)}; choose from {', '.join(cases)}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"unified-exec-kernel {title} ({os.cpu_count()} cores, load {load})")
    return [name for name in cases if name in argv] if argv else list(cases)


def main(argv: list[str]) -> None:
    wanted = chosen(argv, CASES, "notebook benchmarks")
    took = {}
    try:
        for name in wanted:
            started = time.perf_counter()
            figures = CASES[name]()
            took[name] = time.perf_counter() - started
            REPORTS[name](figures)
    finally:
        _close_all()
    print("case times: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in took.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
