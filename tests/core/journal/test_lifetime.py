"""A kernel's journal directory: made fresh and private, removed by whoever sees its kernel end, kept when asked."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from unified_exec_kernel.core.journal.lifetime import (
    KEEP,
    LEGACY_AFTER_S,
    OWNER,
    PREFIX,
    make_kernel_dir,
    open_own_dir,
    remove_kernel_journals,
    sweep_dead_kernels,
)


def touch(path, text="x") -> None:
    with open(path, "w") as file:
        file.write(text)


def dead_kernel_dir(base) -> str:
    """A directory whose kernel (a process that made it and exited) is gone."""
    return subprocess.run(
        [sys.executable, "-c", f"from unified_exec_kernel.core.journal.lifetime import make_kernel_dir; print(make_kernel_dir({str(base)!r}, 'kernel-dead')[0])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()


def test_made_fresh_private_and_locked_each_time(tmp_path):
    first, lock = make_kernel_dir(str(tmp_path), "kernel-abc")
    second, lock2 = make_kernel_dir(str(tmp_path), "kernel-abc")
    try:
        assert first != second and os.path.basename(first).startswith(f"{PREFIX}kernel-abc-")
        assert os.stat(first).st_mode & 0o7777 == 0o700 and os.listdir(first) == [OWNER]
        assert sweep_dead_kernels(str(tmp_path)) == []  # both are held by this live process
    finally:
        os.close(lock)
        os.close(lock2)
    assert sorted(sweep_dead_kernels(str(tmp_path))) == sorted([first, second])  # their locks went


def test_removal_keeps_a_kept_directory_and_never_follows_a_link(tmp_path):
    directory, lock = make_kernel_dir(str(tmp_path), "k")
    os.close(lock)
    outside = tmp_path / "outside"
    touch(outside)
    for name in ("session-0.cast", "session-0.cast.idx", "session-1.cast", "session-1.cast.idx", "session-2.cast"):
        touch(os.path.join(directory, name))
    os.symlink(outside, os.path.join(directory, "session-3.cast"))
    assert remove_kernel_journals(directory) is True and not os.path.exists(directory)
    assert outside.exists()  # the link went, not what it points at
    assert remove_kernel_journals(directory) is True  # again: nothing to do

    kept, lock = make_kernel_dir(str(tmp_path), "k", keep=True)
    os.close(lock)
    touch(os.path.join(kept, "session-0.cast"))
    assert remove_kernel_journals(kept) is False and KEEP in os.listdir(kept)
    assert os.path.exists(os.path.join(kept, "session-0.cast"))


def test_the_sweep_takes_only_what_is_provably_gone_and_ours(tmp_path):
    dead = dead_kernel_dir(tmp_path)
    touch(os.path.join(dead, "session-0.cast"))
    live, lock = make_kernel_dir(str(tmp_path), "live")
    theirs = dead_kernel_dir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    target = dead_kernel_dir(tmp_path / "elsewhere")  # dead, but reached only through a link
    link = tmp_path / f"{PREFIX}link"
    os.symlink(target, link)
    legacy_dead = tmp_path / f"{PREFIX}kernel-1a2b-{2**22 + 12345}"  # no owner file; a pid that cannot exist
    legacy_live = tmp_path / f"{PREFIX}kernel-1a2b-{os.getpid()}-2"
    legacy_young = tmp_path / f"{PREFIX}kernel-1a2b-{2**22 + 12346}"
    for folder in (legacy_dead, legacy_live, legacy_young):
        folder.mkdir(mode=0o700)
        touch(folder / "session-0.cast")
    old = time.time() - LEGACY_AFTER_S - 10
    for folder in (legacy_dead, legacy_live):
        os.utime(folder, (old, old))
    if os.geteuid() == 0:
        os.chown(theirs, 12345, 12345)
    try:
        removed = sweep_dead_kernels(str(tmp_path))
        expected = {dead, str(legacy_dead)} | (set() if os.geteuid() == 0 else {theirs})
        assert set(removed) == expected
        assert os.path.isdir(live) and os.path.isdir(target) and os.path.islink(link)
        assert legacy_live.exists() and legacy_young.exists()
        if os.geteuid() == 0:
            assert os.path.isdir(theirs)  # another user's is never ours to remove
    finally:
        os.close(lock)


def test_a_process_opening_its_own_directory_sweeps_the_dead_first(tmp_path):
    base = tmp_path / "runtime"  # made if missing, private
    base.mkdir(mode=0o700)
    dead = dead_kernel_dir(base)
    directory, lock = open_own_dir(str(base), "mcp-1")
    try:
        assert not os.path.exists(dead) and os.path.isdir(directory)
        assert os.path.basename(directory).startswith(f"{PREFIX}mcp-1-") and OWNER in os.listdir(directory)
        assert sweep_dead_kernels(str(base)) == []  # ours is held
    finally:
        os.close(lock)
    fresh, lock = open_own_dir(str(tmp_path / "new" / "base"), "k")
    os.close(lock)
    assert os.stat(tmp_path / "new" / "base").st_mode & 0o777 == 0o700 and os.path.isdir(fresh)


def test_a_store_closing_removes_its_directory(tmp_path):
    from unified_exec_kernel.core.journal import JournalStore

    directory, lock = make_kernel_dir(str(tmp_path), "k")
    store = JournalStore(directory, owner_fd=lock)
    touch(os.path.join(directory, "session-4.cast"))
    store.close()
    assert not os.path.exists(directory) and sweep_dead_kernels(str(tmp_path)) == []


@pytest.mark.parametrize("name", ["../escape", "a/b", ""])
def test_a_kernel_id_never_leaves_the_base(tmp_path, name):
    directory, lock = make_kernel_dir(str(tmp_path), name)
    os.close(lock)
    assert os.path.dirname(directory) == str(tmp_path)
