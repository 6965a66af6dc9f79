"""Files a user may name that are no recording, and a way to read them in a child bounded in memory and time.

Each is what someone can type by mistake or on purpose: a device that never
ends a line, a FIFO nobody writes to, a directory, a name that is not there,
a file whose first line, or a later one, is 100 MB (sparse: no disk used).
A reader that blocked or grew without bound must fail the test, not hang
the suite or wake the OOM killer: the child runs under RLIMIT_AS and a
deadline, and its peak RSS (from wait4, in a small launcher) is the measure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass

HUGE = 100 * 2**20
CHILD_MEMORY = 1024 * 2**20  # address space: python and its imports take ~300 MB of it
DEADLINE_S = 60
PEAK_KB = 100 * 1024
"""What a reader may reach (RSS): python with its imports is ~25 MB, a line at the 16 MiB bound ~60 MB;
reading a 100 MB line whole took 230 MB."""


def unreadable_files(folder) -> dict[str, str]:
    """name -> path, made in `folder` (a test's tmp_path)."""
    fifo = os.path.join(folder, "fifo.cast")
    os.mkfifo(fifo)
    directory = os.path.join(folder, "directory.cast")
    os.mkdir(directory)
    long_header = os.path.join(folder, "long-header.cast")
    with open(long_header, "wb") as file:
        file.seek(HUGE)
        file.write(b"\n")
    long_event = os.path.join(folder, "long-event.cast")
    with open(long_event, "wb") as file:
        file.write(b'{"version": 2, "width": 80, "height": 24}\n[0.1, "o", "')
        file.seek(HUGE, os.SEEK_CUR)
        file.write(b'"]\n')
    return {
        "device": "/dev/zero",
        "fifo": fifo,
        "directory": directory,
        "missing": os.path.join(folder, "missing.cast"),
        "long-header": long_header,
        "long-event": long_event,
    }


# What the one line says of each
SAYS = {
    "device": "is a character device, not a recording",
    "fifo": "is a FIFO (named pipe), not a recording",
    "directory": "is a directory, not a recording",
    "missing": "No such file or directory",
    "long-header": "its first line (the header) at byte 0 is longer than 1 MiB, the longest this reader takes",
    "long-event": "a line at byte 42 is longer than 16 MiB, the longest this reader takes",
}


@dataclass
class Finished:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    peak_kb: int | None  # None: killed at the deadline


# The child is started by a small python (no site: ~9 MB) and its peak RSS read by wait4 there: a
# process forked from pytest itself would count pytest's own pages, which the high-water mark keeps
# across exec.
_LAUNCHER = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as peak:
    peak.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""


def run_bounded(argv: list[str], folder, timeout: float = DEADLINE_S) -> Finished:
    """Run `argv` with its address space limited; kill it at the deadline. Its output and peak RSS."""
    out_path, err_path, peak_path = (os.path.join(folder, f"child.{name}") for name in ("out", "err", "peak"))
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        child = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, peak_path, str(CHILD_MEMORY), *argv],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
    try:
        returncode = child.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        returncode = None
    with open(out_path, encoding="utf-8", errors="replace") as out, open(err_path, encoding="utf-8", errors="replace") as err:
        peak = int(open(peak_path).read()) if returncode is not None else None
        return Finished(returncode, out.read(), err.read(), peak)
