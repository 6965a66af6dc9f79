"""`python -m unified_exec_kernel record`: a kept journal (or any recording) as asciicast v3 or v2."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from unified_exec_kernel.core.journal import JournalStore, open_journal
from unified_exec_kernel.core.manager import UnifiedExecSessionManager

from .malformed_casts import MALFORMED
from .unreadable_files import PEAK_KB, SAYS, run_bounded, unreadable_files


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unified_exec_kernel", *args], capture_output=True, text=True, timeout=60)


async def kept_journal(tmp_path) -> str:
    store = JournalStore(str(tmp_path / "kernel"), keep=True)
    manager = UnifiedExecSessionManager(journals=store)
    await manager.start(["bash", "-c", "echo kept; echo journal"])
    path = store.find(0).path
    await manager.close_all()  # the kernel ended; the directory stays
    return path


async def test_record_exports_a_kept_journal_that_asciinema_plays(tmp_path):
    journal = await kept_journal(tmp_path)
    done = await asyncio.to_thread(cli, "record", journal, str(tmp_path / "out.cast"), "--v2")
    assert done.returncode == 0 and done.stdout.startswith(f"wrote {tmp_path / 'out.cast'}: asciicast v2, ")
    shown = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "asciinema", "cat", str(tmp_path / "out.cast")], capture_output=True, timeout=60)
    assert shown.stdout == b"kept\r\njournal\r\n", shown.stderr
    assert (await asyncio.to_thread(cli, "record", journal, str(tmp_path / "v3.cast"))).returncode == 0
    with open_journal(str(tmp_path / "v3.cast")) as v3:
        assert v3.version == 3 and v3.read(0, v3.end) == b"kept\r\njournal\r\n"


def test_record_of_a_file_that_is_not_asciicast_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("just text\n")
    done = cli("record", str(tmp_path / "notes.txt"), str(tmp_path / "out.cast"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: notes.txt is not an asciicast recording: its first line is not a JSON header\n"
    assert not (tmp_path / "out.cast").exists()


@pytest.mark.parametrize("name", sorted(MALFORMED))
@pytest.mark.parametrize("v2", [False, True])
def test_record_of_a_malformed_recording_is_one_line_naming_the_file(tmp_path, name, v2):
    (tmp_path / name).write_text(MALFORMED[name])
    done = cli("record", str(tmp_path / name), str(tmp_path / "out.cast"), *(["--v2"] if v2 else []))
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {name}") and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "out.cast").exists()


async def test_record_v2_counts_only_the_events_it_wrote(tmp_path):
    """v2 has no exit event and no comments: they were counted all the same."""
    journal = await kept_journal(tmp_path)
    done = await asyncio.to_thread(cli, "record", journal, str(tmp_path / "out.cast"), "--v2")
    written = len((tmp_path / "out.cast").read_text().splitlines()) - 1  # the header is no event
    assert done.stdout == f"wrote {tmp_path / 'out.cast'}: asciicast v2, {written:,} events\n"


@pytest.mark.parametrize("name", sorted(SAYS))
def test_record_of_what_is_no_recording_is_one_line_in_bounded_memory(tmp_path, name):
    """/dev/zero was read as one endless first line (MemoryError, or the OOM killer) and a FIFO blocked for ever."""
    path = unreadable_files(tmp_path)[name]
    done = run_bounded([sys.executable, "-m", "unified_exec_kernel", "record", path, str(tmp_path / "out.cast")], tmp_path)
    assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stderr[-2000:])
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and SAYS[name] in done.stderr, done.stderr
    assert os.path.basename(path) in done.stderr
    assert done.peak_kb < PEAK_KB, f"{done.peak_kb} KB"
    assert not (tmp_path / "out.cast").exists()


@pytest.mark.timeout(300)  # a loaded machine writes 200,000 events in a minute or more
def test_record_of_a_recording_of_many_events_holds_none_of_them(tmp_path):
    """The export streams: an index of the file (32 bytes per event, built with copies) came first,
    ~13 MB over python's own 25 MB here."""
    path = tmp_path / "many.cast"
    with open(path, "wb") as file:
        file.write(b'{"version": 2, "width": 80, "height": 24}\n')
        file.write(b'[1, "o", "x"]\n' * 200_000)
    done = run_bounded([sys.executable, "-m", "unified_exec_kernel", "record", str(path), str(tmp_path / "out.cast")], tmp_path, timeout=240)
    assert done.returncode == 0 and done.stdout.startswith(f"wrote {tmp_path / 'out.cast'}: asciicast v3, 200,000 events"), (done.stdout, done.stderr[-2000:])
    assert done.peak_kb < 32 * 1024, f"{done.peak_kb} KB"  # main: 38 MB
