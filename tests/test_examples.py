"""The examples a newcomer runs: they must work as the docs say."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parent.parent / "examples"


async def test_agent_harness_plans_from_what_it_reads():
    spec = importlib.util.spec_from_file_location("agent_harness", EXAMPLES / "agent_harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    transcript, statuses = await module.run_plan()
    text = "\n".join(transcript)
    assert "the file has 2 lines" in text
    assert "job-42" in text
    assert statuses[1:4] == [0, 0, 0]  # each typed command answers with its status
    assert "job-42" in transcript[-2] and "step-1" in transcript[-2]  # the watch saw the whole job
    assert transcript[0].splitlines()[2].startswith("Process running with session ID ")
    assert transcript[-1].splitlines()[2] == "Process exited with code 0"


def test_engine_demo_runs():
    run = subprocess.run([sys.executable, "-m", "unified_exec_kernel.demo"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "kept-between-requests" in run.stdout
    assert "tokens truncated" in run.stdout
    assert "no session with id" in run.stdout
