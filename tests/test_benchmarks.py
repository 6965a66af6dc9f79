"""The benchmarks are kept working like tests (issue 39 item 7), cheaply: the figures are theirs, not ours.

Each script's case names, what the benchmarks expect of the product's output, the engine's quickest cases,
and bench_live's browser cases with a few keys (the view's own direct channel found beside the
notifications' ones); none of them leaves a file in the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from unified_exec_kernel import UnifiedExecResult
from unified_exec_kernel.notebook.cell_output import interrupted_line

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
WITH_CASES = ["bench_agent", "bench_costs", "bench_direct", "bench_engine", "bench_live", "bench_notebook"]
# What tests and tools leave in a checkout on their own (caches; a browser test's screenshots on failure).
NOT_THE_BENCHMARKS = ("__pycache__/", ".pytest_cache/", ".hypothesis/", "test-artifacts/")


def bench(*args: str, timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    """A benchmark script run from the project's root, as its usage says."""
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
    )


def checkout_files() -> set[str]:
    """The checkout's untracked files, ignored ones too (a database a server left is ignored by no rule)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    return {line[3:] for line in listed if line[:2] in ("??", "!!") and not any(part in line for part in NOT_THE_BENCHMARKS)}


@pytest.mark.parametrize("script", WITH_CASES)
def test_a_script_imports_and_refuses_an_unknown_case_in_one_line(script):
    done = bench(str(BENCHMARKS / f"{script}.py"), "no_such_case", timeout=60)
    assert done.returncode != 0, done
    assert done.stderr.strip().startswith("unknown case no_such_case; choose from "), done.stderr


def test_the_interrupt_case_knows_the_line_an_interrupted_cell_fails_with(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_notebook

    line = interrupted_line(UnifiedExecResult(session_id=1, output="", wall_time=1.0))
    assert bench_notebook.INTERRUPTED_LINE.search(line), line


def test_the_semantic_prompt_scanner_benchmark_runs():
    done = bench(str(BENCHMARKS / "bench_semantic_prompt.py"), "0.05", timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [(row[0], row[1]) for row in rows] == [
        (shape, size) for shape in ("plain", "colour", "markers") for size in ("4096", "65536")
    ], done.stdout
    assert all(int(row[3]) > 0 for row in rows if row[0] == "markers"), done.stdout


def test_the_engine_benchmarks_quickest_cases_run():
    before = checkout_files()
    done = bench(str(BENCHMARKS / "bench_engine.py"), "spawn", "rss", "stalls", timeout=110)
    assert done.returncode == 0, done.stderr
    for figure in ("spawn-to-result", "peak RSS growth", "engine-loop stall"):
        assert figure in done.stdout, done.stdout
    assert checkout_files() - before == set()


def test_the_helpers_cost_what_the_goals_allow():
    """One round of bench_costs' helpers: the guardian within 1.2x and the keeper within 1.5x the USS of a
    `python3 -I -S` importing os, select, signal, socket and struct (memory, not time: steady under load)."""
    before = checkout_files()
    done = bench(str(BENCHMARKS / "bench_costs.py"), "helpers", timeout=120, env={**os.environ, "BENCH_COSTS_ROUNDS": "1"})
    assert done.returncode == 0, done.stderr
    for name, goal in (("guardian", 1.2), ("keeper", 1.5)):
        found = re.search(rf"^{name}: USS .*: ([\d.]+)x the floor's USS", done.stdout, re.M)
        assert found and float(found[1]) <= goal, done.stdout
    assert checkout_files() - before == set()


@pytest.mark.timeout(400)
@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="no Chromium")
def test_the_live_views_browser_cases_run_with_notifications_on():
    """keys_browser, keys_fallback and keys_tab with 3 keys each, in a lab whose notifications (on, as a person
    has them) open a direct channel per kernel: each case waits for its own view's channel, or its absence."""
    before = checkout_files()
    env = {**os.environ, "BENCH_LIVE_KEYS": "3"}
    done = bench(str(BENCHMARKS / "bench_live.py"), "keys_browser", "keys_fallback", "keys_tab", timeout=380, env=env)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-6000:]}"
    out = done.stdout
    assert re.search(r"keys in the browser \(.*over direct, .*n=3\)", out), out
    assert re.search(r"keys in the browser, the direct channel turned away \(.*over widget messages", out), out
    assert re.search(r"keys in a Sessions panel tab .*n=3\)", out), out
    assert "direct channel / widget messages, keystroke to echo, same run" in out, out
    assert "processes left behind" not in done.stderr, done.stderr[-3000:]
    assert checkout_files() - before == set()  # no .jupyter_ystore.db from the lab's server
