"""A manager whose sessions keep journals in a test's directory, and a way to read them once written."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest

from unified_exec_kernel.core.journal import JournalStore, open_journal
from unified_exec_kernel.core.manager import UnifiedExecSessionManager


@contextlib.asynccontextmanager
async def journaled(tmp_path, **store_options):
    store = JournalStore(str(tmp_path / "kernel"), keep=True, **store_options)
    manager = UnifiedExecSessionManager(shell_integration=True, journals=store)
    try:
        yield manager, store
    finally:
        await manager.close_all()


async def written(store: JournalStore, key):
    """The journal of `key` with everything recorded so far on disk."""
    await asyncio.wrap_future(store.flushed())
    return open_journal(store.find(key).path)


def mode(path) -> int:
    return os.stat(path).st_mode & 0o777


@contextlib.contextmanager
def small_disk(tmp_path):
    """A 256 KiB tmpfs (a disk that fills), unmounted after; skips where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    if os.system(f"mount -t tmpfs -o size=256k tmpfs {mount} 2>/dev/null") != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        os.system(f"umount {mount}")
