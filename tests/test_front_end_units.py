"""The front end's unit tests (labextension/test, TypeScript under `node --test`) run with the rest.

They were run by hand (`npm test`, labextension/README.md) and so never in CI,
where a suite that nobody runs goes stale. The install that CI does builds the
front end with npm, so node and the packages are there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


@pytest.mark.timeout(300)
def test_the_front_end_unit_tests_pass():
    if shutil.which("npm") is None or not (LABEXTENSION / "node_modules" / "typescript").is_dir():
        pytest.skip("the front end was not built here (no npm, or no labextension/node_modules): nothing to test")
    result = subprocess.run(["npm", "test"], cwd=LABEXTENSION, capture_output=True, text=True, timeout=280)
    summary = [line for line in result.stdout.splitlines() if line.startswith(("# tests", "# pass", "# fail", "not ok"))]
    assert result.returncode == 0, "\n".join(summary) + "\n" + result.stdout[-3000:] + result.stderr[-2000:]
    assert "# fail 0" in summary, summary
