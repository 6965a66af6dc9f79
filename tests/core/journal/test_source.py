"""Only a regular file is read as a recording, a bounded line at a time: one line for anything else."""

from __future__ import annotations

import sys

import pytest

from unified_exec_kernel.core.journal import open_journal
from unified_exec_kernel.core.journal.source import MAX_LINE_BYTES

from ...unreadable_files import PEAK_KB, SAYS, run_bounded, unreadable_files

READ = """
import sys
from unified_exec_kernel.core.journal import JournalError, open_journal
from unified_exec_kernel.core.journal.playback import playback
try:
    with open_journal(sys.argv[1]) as journal:
        playback(journal)
        journal.read(0, journal.end)
        print("read")
except JournalError as error:
    print(error)
"""


@pytest.mark.parametrize("name", sorted(SAYS))
def test_the_reader_refuses_what_is_no_recording_in_one_line_in_bounded_memory(tmp_path, name):
    path = unreadable_files(tmp_path)[name]
    done = run_bounded([sys.executable, "-c", READ, path], tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # neither killed at the deadline nor a traceback
    assert done.stderr == "" and done.stdout.count("\n") == 1 and SAYS[name] in done.stdout, done.stdout
    assert done.peak_kb < PEAK_KB, f"{done.peak_kb} KB"


def test_a_line_just_under_the_bound_is_read(tmp_path):
    path = tmp_path / "wide.cast"
    data = "x" * (MAX_LINE_BYTES - 100)
    path.write_text('{"version": 2, "width": 80, "height": 24}\n' + f'[0.5, "o", "{data}"]\n')
    with open_journal(str(path)) as journal:
        assert journal.read(0, journal.end) == data.encode()
