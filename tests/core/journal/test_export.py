"""Recordings written from a journal play in asciinema: v2 through the real asciinema CLI."""

import json
import shutil
import subprocess
import sys

import pytest

from unified_exec_kernel.core.journal import open_journal
from unified_exec_kernel.core.journal.export import export

from .helpers import journaled, written

ASCIINEMA = [sys.executable, "-m", "asciinema"]


def asciinema_available() -> bool:
    return subprocess.run([*ASCIINEMA, "--version"], capture_output=True).returncode == 0


async def test_a_v2_recording_prints_its_output_with_asciinema_cat(tmp_path):
    if not asciinema_available():
        pytest.skip("asciinema (the test extra) is not installed")
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-c", "echo héllo; printf '\\033[31mred\\033[0m\\n'"], name="demo")
        with await written(store, "demo") as journal:
            export(journal, str(tmp_path / "demo.cast"), version=2)
    shown = subprocess.run([*ASCIINEMA, "cat", str(tmp_path / "demo.cast")], capture_output=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.decode() == "héllo\r\n\x1b[31mred\x1b[0m\r\n"
    header = json.loads((tmp_path / "demo.cast").read_text().splitlines()[0])
    assert header["version"] == 2 and header["width"] == 80 and header["height"] == 24


async def test_a_v3_recording_keeps_commands_exit_codes_and_reads_back_alike(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-i"], name="sh")
        await manager.write("sh", "echo a; false\n")
        await manager.write("sh", "exit 5\n")
        with await written(store, "sh") as journal:
            export(journal, str(tmp_path / "sh.cast"))
            original = ([(c.text, c.exit_code) for c in journal.chapters()], journal.read(0, journal.end))
    with open_journal(str(tmp_path / "sh.cast")) as exported:
        assert exported.version == 3
        assert ([(c.text, c.exit_code) for c in exported.chapters()], exported.read(0, exported.end)) == original
        assert list(exported.events())[-1].data == "5"  # the exit
    assert (tmp_path / "sh.cast").stat().st_mode & 0o777 == 0o600


def test_a_v2_recording_exports_to_v3_and_back(tmp_path):
    source = tmp_path / "in.cast"
    source.write_text('{"version": 2, "width": 90, "height": 20}\n[0.25, "o", "a"]\n[1.5, "o", "b"]\n')
    with open_journal(str(source)) as journal:
        export(journal, str(tmp_path / "v3.cast"), version=3)
    with open_journal(str(tmp_path / "v3.cast")) as journal:
        assert journal.size == (90, 20)
        assert [(e.time, e.data) for e in journal.events()] == [(0.25, "a"), (1.5, "b")]
