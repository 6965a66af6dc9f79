"""What a uexec kernel costs a hub, per student, against floors measured in the same run.

    python benchmarks/bench_costs.py                   # all cases, 3 rounds of memory
    python benchmarks/bench_costs.py helpers kernel    # some
    BENCH_COSTS_ROUNDS=1 python benchmarks/bench_costs.py helpers

A hub runs one kernel per student notebook, and with each uexec kernel a
guardian (its first session) and a keeper (its first kept session). What a
node can hold is their unique memory (USS: the pages no other process
shares, psutil's memory_full_info), so every figure is set beside a floor
taken in the same round, fresh processes each round:

- helpers: the guardian and the keeper (one idle kept `bash -i`, its ring
  included) of a uexec kernel with sessions running, against the floor of
  such a helper, a `python3 -I -S` that imports only os, select, signal,
  socket and struct (goals: guardian <= 1.2x, keeper <= 1.5x); a bare
  `python3 -I -S` beside it for scale.
- kernel: that uexec kernel (a running `bash -i`, a kept one, an exited
  `echo`) against a stock python3 kernel that ran a cell (goal: + 2 MiB).
- start: bench_notebook.py's startup case (goal <= 1.1x python3's start).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import psutil
from bench_notebook import Kernel, _close_all, chosen, report_startup, startup

MIB = 1024 * 1024
FLOOR_IMPORTS = "os, select, signal, socket, struct"
GOALS = {"guardian": 1.2, "keeper": 1.5}
KERNEL_GOAL_MIB = 2.0
SETTLE_S = 1.0
"""Every process is measured this long after its last work (a kernel's reply, a prompt acknowledged)."""


def _rounds() -> int:
    return int(os.environ.get("BENCH_COSTS_ROUNDS", "3"))


def _memory(pid: int) -> dict:
    info = psutil.Process(pid).memory_full_info()
    return {"uss": info.uss / MIB, "rss": info.rss / MIB}


def _floor(imports: str | None) -> subprocess.Popen:
    """A `python3 -I -S` that has imported `imports` and then waits on stdin, as a helper waits on its pipe."""
    code = (f"import {imports}; " if imports else "") + "import os; os.write(1, b'.'); os.read(0, 1)"
    process = subprocess.Popen([sys.executable, "-I", "-S", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout.read(1) == b".", "the floor process did not start"
    return process


def _helper(kernel_pid: int, mark: str) -> int:
    """The kernel's helper whose bootstrap's first line names it (helper_wire.GUARDIAN_BOOTSTRAP, KEEPER_BOOTSTRAP)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for child in psutil.Process(kernel_pid).children():
            try:
                if any(mark in argument for argument in child.cmdline()):
                    return child.pid
            except psutil.Error:
                continue
        time.sleep(0.05)
    raise RuntimeError(f"no {mark!r} process under kernel {kernel_pid} within 30 s")


def memory_round() -> dict:
    """One round: fresh floors, a python3 kernel and a uexec kernel with sessions running, measured together."""
    floors, kernels = [], []
    try:
        bare, floor = _floor(None), _floor(FLOOR_IMPORTS)
        floors += [bare, floor]
        stock = Kernel("python3")
        kernels.append(stock)
        stock.check("1")
        ours = Kernel("uexec")
        kernels.append(ours)
        ours.check("%%uexec\necho hi")  # a session that ran and exited
        ours.check("%%uexec --name sh\nbash -i")  # one running
        ours.check("%%uexec --keep --name kept\nbash -i")  # one kept, idle at its prompt
        guardian, keeper = _helper(ours.pid, "# uexec guardian"), _helper(ours.pid, "# uexec keeper")
        time.sleep(SETTLE_S)  # the kept prompt acknowledged, the guardian's news batch handled
        return {
            "bare": _memory(bare.pid), "floor": _memory(floor.pid), "guardian": _memory(guardian), "keeper": _memory(keeper),
            "python3": _memory(stock.pid), "uexec": _memory(ours.pid),
        }
    finally:
        for process in floors:
            process.stdin.close()
            process.wait(10)
        for kernel in kernels:
            kernel.close()


def memory() -> dict:
    """The package's bytecode is compiled first, as an install has it: a helper that compiles its modules
    as it starts (an editable checkout just edited) holds the compiler's leftovers, ~1.5 MiB more."""
    import compileall
    import importlib.util

    compileall.compile_dir(os.path.dirname(importlib.util.find_spec("unified_exec_kernel").origin), quiet=1)
    return {"rounds": [memory_round() for _ in range(_rounds())]}


def _figures(rounds: list[dict], name: str, key: str) -> str:
    values = [one[name][key] for one in rounds]
    return f"{statistics.median(values):.1f} MiB [{', '.join(f'{v:.1f}' for v in values)}]"


def report_helpers(f: dict) -> None:
    rounds = f["rounds"]
    print(
        f"floors, median of {len(rounds)} rounds: bare python3 -I -S USS {_figures(rounds, 'bare', 'uss')} "
        f"(RSS {_figures(rounds, 'bare', 'rss')}); importing {FLOOR_IMPORTS} USS {_figures(rounds, 'floor', 'uss')} "
        f"(RSS {_figures(rounds, 'floor', 'rss')})"
    )
    for name, goal in GOALS.items():
        ratios = [one[name]["uss"] / one["floor"]["uss"] for one in rounds]
        print(
            f"{name}: USS {_figures(rounds, name, 'uss')}, RSS {_figures(rounds, name, 'rss')}: "
            f"{statistics.median(ratios):.2f}x the floor's USS [{', '.join(f'{r:.2f}' for r in ratios)}] (goal <= {goal}x)"
        )


def report_kernel(f: dict) -> None:
    rounds = f["rounds"]
    extra = [one["uexec"]["uss"] - one["python3"]["uss"] for one in rounds]
    print(
        f"kernel with sessions running (a bash -i, a kept bash -i, an exited echo): uexec USS {_figures(rounds, 'uexec', 'uss')} "
        f"(RSS {_figures(rounds, 'uexec', 'rss')}); python3 kernel after a cell USS {_figures(rounds, 'python3', 'uss')} "
        f"(RSS {_figures(rounds, 'python3', 'rss')}): +{statistics.median(extra):.1f} MiB "
        f"[{', '.join(f'{e:+.1f}' for e in extra)}] (goal <= +{KERNEL_GOAL_MIB:g} MiB)"
    )


CASES = {"helpers": memory, "kernel": memory, "start": startup}
REPORTS = {"helpers": report_helpers, "kernel": report_kernel, "start": report_startup}


def main(argv: list[str]) -> None:
    wanted = chosen(argv, CASES, "costs")
    measured: dict = {}
    try:
        for name in wanted:
            case = CASES[name]
            if case not in measured:  # helpers and kernel come from the same rounds
                measured[case] = case()
            REPORTS[name](measured[case])
    finally:
        _close_all()


if __name__ == "__main__":
    main(sys.argv[1:])
