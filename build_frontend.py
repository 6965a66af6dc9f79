"""The front end's build step for hatch-jupyter-builder: optional, so a clone installs without Node.

pyproject.toml names `build` as the hook's build function. With Node >= 18
and npm on PATH it runs hatch-jupyter-builder's npm build, then insists the
built files exist (a broken front end build must fail the install). Without
them it builds the Python package alone and says so in one line: the kernel,
the magics and the comm need no Node; the live view then shows text. pip
shows a build's output only with `-v`, so the package says the same at run
time (unified_exec_kernel/frontend.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

NODE_MIN = 18


def node_problem() -> str | None:
    """Why the front end cannot be built here, or None when it can."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "node and npm were not found on PATH" if node is None and npm is None else f"{'node' if node is None else 'npm'} was not found on PATH"
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        return f"`node --version` failed ({error})"
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major[1]) < NODE_MIN:
        return f"node {version or '(unknown version)'} is older than {NODE_MIN}"
    return None


def build(target_name: str, version: str, *, ensured_targets=(), **npm_kwargs) -> None:
    problem = node_problem()
    if problem is not None:
        print(
            f"unified-exec-kernel: the front end (live terminal view, Sessions panel) was NOT built: {problem}. "
            f"The kernel, %%uexec and the comm work; live views show text. "
            f"To get it, install Node >= {NODE_MIN} and reinstall.",
            file=sys.stderr,
            flush=True,
        )
        return
    from hatch_jupyter_builder import npm_builder

    npm_builder(target_name, version, **npm_kwargs)
    missing = [target for target in ensured_targets if not Path(target).exists()]
    if missing:
        raise RuntimeError(f"the front end build finished without writing {', '.join(missing)}")
