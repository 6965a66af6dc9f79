"""A graded notebook that uses uexec sessions: nbgrader's autograde and otter-grader's grading run it,
score its checks (written with the Python API, `sessions`) and leave no process behind.

The student's notebook starts a shell, types its work into it, and leaves a
command running there, as a student may. The checks (docs/grading.md) read
the student's results without waiting behind that command: a fresh
`sessions.run` for a file, `sh.commands()` for each typed command's exit code,
`wait_for` with a timeout for the busy shell. nbgrader runs the notebook on
the uexec kernel (its metadata); otter-grader 7 runs it on `python3` (its
`force_python3_kernel` default), where the notebook's first cell loads the
extension; otter's checks are Python test files, where no magic can go.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from .conftest import kill_processes, processes_marked

pytestmark = pytest.mark.timeout(300)

MARK = "UEXEC_GRADING_TEST"  # in the environment of everything a run starts

STUDENT_CELLS = [
    "%%uexec --name sh\nbash --norc -i",
    "%%uexec -s sh\nmkdir -p out && echo $((6 * 7)) > out/answer && cat out/answer",
    # still running when the checks come: they must not wait behind it
    "%uexec -s sh -t 300 sleep 100",
]

# The check, as nbgrader's autograder test cell and otter's test case both run it.
CHECK = """\
from unified_exec_kernel import sessions

sh = sessions.get("sh")
answer = sessions.run(["cat", "out/answer"], timeout=20)  # a fresh process: the shell is busy
assert (answer.exit_code, answer.output) == (0, "42\\n"), answer
typed = sh.commands()
assert [c.exit_code for c in typed if not c.running] == [0], typed
assert sh.wait_for(timeout=0.5).timed_out  # still on `sleep 100`: the check does not wait it out
"""

# One that fails, so a score shows a check can fail (the student's answer is not 41).
FAILING_CHECK = 'assert sessions.run(["cat", "out/answer"]).output == "41\\n"'


def _environment(marker: str, home: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    env = {**os.environ, MARK: marker, "PS1": "$ ", "HOME": str(home)}
    env.pop("JUPYTER_RUNTIME_DIR", None)
    return env


def _nothing_left(marker: str) -> list[str]:
    """What still runs of a finished grading run (waits a bounded time for it to go)."""
    deadline = time.monotonic() + 10
    while processes_marked(MARK, marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = processes_marked(MARK, marker)
    described = [" ".join(process.cmdline()) for process in left]
    kill_processes(left)
    return described


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


# -- nbgrader ------------------------------------------------------------------


def _grade_cell(source: str, grade_id: str, points: int) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": True, "grade_id": grade_id, "locked": True, "points": points, "schema_version": 3, "solution": False, "task": False,
    }
    return cell


def test_nbgrader_autograde_scores_the_python_checks_of_a_uexec_notebook(tmp_path):
    pytest.importorskip("nbgrader")
    course = tmp_path / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(f'c = get_config()\nc.CourseDirectory.root = r"{course}"\nc.CourseDirectory.course_id = "uexec"\n')
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in STUDENT_CELLS]
        + [_grade_cell(CHECK, "answer", 2), _grade_cell("from unified_exec_kernel import sessions\n" + FAILING_CHECK, "not-41", 1)]
    )
    nb.metadata["kernelspec"] = {"name": "uexec", "display_name": "Python 3 (uexec)", "language": "python"}
    nbformat.write(nb, course / "source" / "ps1" / "ps1.ipynb")
    marker = secrets.token_hex(8)
    env = _environment(marker, tmp_path / "home")

    def nbgrader(*args: str) -> None:
        done = subprocess.run([_bin("nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr

    nbgrader("generate_assignment", "ps1", "--force")
    submitted = course / "submitted" / "student1" / "ps1"
    submitted.mkdir(parents=True)
    shutil.copy(course / "release" / "ps1" / "ps1.ipynb", submitted / "ps1.ipynb")
    nbgrader("autograde", "ps1", "--create", "--force")

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook("ps1", "ps1", "student1")
        scores = {grade.name: (grade.auto_score, grade.max_score) for grade in submission.grades}
    assert scores == {"answer": (2, 2), "not-41": (0, 1)}, scores
    graded = nbformat.read(course / "autograded" / "student1" / "ps1" / "ps1.ipynb", as_version=4)
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in graded.cells[1].outputs)
    assert "\n42\n" in shown and "command exited with code 0" in shown, shown
    assert _nothing_left(marker) == []


# -- otter-grader -----------------------------------------------------------------

OTTER_TEST = '''\
OK_FORMAT = False

from otter.test_files import test_case

name = "q1"
points = 3


@test_case(points=2)
def test_the_answer_and_each_typed_command(env):
{check}

@test_case(points=1)
def test_not_41(env):
    from unified_exec_kernel import sessions
    {failing}
'''


def test_otter_grader_scores_python_checks_of_a_uexec_notebook(tmp_path):
    pytest.importorskip("otter")
    from otter.execute import grade_notebook

    check = "".join(f"    {line}\n" for line in CHECK.splitlines())
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "q1.py").write_text(OTTER_TEST.format(check=check, failing=FAILING_CHECK))
    cells = ["%load_ext unified_exec_kernel", *STUDENT_CELLS]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = tmp_path / "submission.ipynb"
    nbformat.write(nb, notebook)
    marker = secrets.token_hex(8)
    saved = dict(os.environ)
    os.environ.update(_environment(marker, tmp_path / "home"))
    here = os.getcwd()
    os.chdir(tmp_path)  # where otter runs a submission (its kernel's working directory)
    try:
        results = grade_notebook(str(notebook), tests_glob=[str(tmp_path / "tests" / "q1.py")], test_dir=str(tmp_path / "tests"), cwd=str(tmp_path))
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
    outcome = results.to_dict()["q1"]
    assert (results.total, results.possible) == (2, 3), outcome
    assert [case["passed"] for case in outcome["test_case_results"]] == [True, False], outcome  # the answer; not 41
    assert _nothing_left(marker) == []
