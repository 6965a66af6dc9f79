"""README's "In a notebook" example runs as pasted, cell by cell, in a real kernel.

Each fenced block of that section is one cell. They are read from README.md
at test time, whatever they say, so the example cannot rot: a cell that
raises, prints an error, or makes a magic reject its options fails here. It
runs on a stock `python3` kernel (the example's first cell loads the
extension) and on the `uexec` kernel (where that cell finds it loaded).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .conftest import descendants
from .kernel_harness import Execution, Kernel

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## In a notebook"
# What IPython and the magics print when something went wrong, even without an `error` message.
ERROR_TEXT = re.compile(r"\b\w*(Error|Exception)\b|unrecognized arguments|unknown key|Traceback")


def readme_cells(text: str) -> list[str]:
    """The fenced blocks of the section, in order, each as a cell's source."""
    found = re.search(rf"^{re.escape(SECTION)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert found, f"README.md has no {SECTION!r} section"
    return re.findall(r"^```[^\n]*\n(.*?)^```", found[1], re.M | re.S)


def problems(execution: Execution) -> list[str]:
    """Every sign that a cell failed: its reply, error outputs, error text on stderr or in what it shows."""
    found = []
    if execution.reply["status"] != "ok":
        found.append(f"reply {execution.reply['status']}: {execution.reply.get('ename')} {execution.reply.get('evalue')}")
    for msg in execution.messages:
        content = msg["content"]
        if msg["msg_type"] == "error":
            found.append(f"error: {content['ename']}: {content['evalue']}")
        elif msg["msg_type"] == "stream" and content["name"] == "stderr" and ERROR_TEXT.search(content["text"]):
            found.append(f"stderr: {content['text'].strip()}")
    shown = ERROR_TEXT.search(execution.text)
    if shown:
        found.append(f"shows {shown[0]!r}")
    return found


def test_the_example_has_cells_with_magics():
    cells = readme_cells(README.read_text())
    assert len(cells) >= 3, cells
    assert any(cell.startswith("%%uexec") for cell in cells), cells
    assert all(cell.strip() for cell in cells), "an empty block in the example"


def test_cells_are_read_block_by_block():
    text = "# x\n\n## In a notebook\n\nprose\n\n```python\n%a 1\n```\n\nmore\n\n```\n%%b\nc\n\nd\n```\n\n## Next\n\n```\nno\n```\n"
    assert readme_cells(text) == ["%a 1\n", "%%b\nc\n\nd\n"]


def test_error_signs_are_caught():
    """What the old README's trailing comments produced is recognised as a failure."""
    old = [
        {"msg_type": "error", "content": {"ename": "ModuleNotFoundError", "evalue": "No module named 'x  # or'", "traceback": []}},
        {"msg_type": "stream", "content": {"name": "stderr", "text": "UsageError: unknown key '#'\n"}},
    ]
    for msg in old:
        assert problems(Execution(reply={"status": "ok"}, messages=[msg]))
    assert problems(Execution(reply={"status": "error", "ename": "UsageError", "evalue": "unrecognized arguments: #"}))
    fine = {"msg_type": "stream", "content": {"name": "stdout", "text": "hello\n[session 0 running · 1.50 s]\n"}}
    assert problems(Execution(reply={"status": "ok"}, messages=[fine])) == []


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kernel_name", ["python3", "uexec"])
def test_readme_notebook_example_runs_as_pasted(kernel_name):
    cells = readme_cells(README.read_text())
    before = descendants()
    kernel = Kernel(kernel_name)
    try:
        for index, cell in enumerate(cells):
            execution = kernel.execute(cell, timeout=60)
            assert problems(execution) == [], f"README cell {index + 1}:\n{cell}\nshowed:\n{execution.text}"
    finally:
        kernel.shutdown()
    deadline = time.monotonic() + 15
    while descendants() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert descendants() - before == set(), "processes left after the kernel shut down"
