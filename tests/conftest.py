"""Shared fixtures: a fresh manager per test, and proof that nothing outlives it."""

from __future__ import annotations

import os

import psutil
import pytest

from unified_exec_kernel import UnifiedExecSessionManager


def descendants() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True) if child.status() != "zombie"}


def session_processes(leader: int) -> list[int]:
    """Every live process whose session id is `leader` (what closing a session must end)."""
    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getsid(proc.pid) == leader:
                found.append(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


@pytest.fixture
async def manager():
    mgr = UnifiedExecSessionManager()
    try:
        yield mgr
    finally:
        await mgr.close_all()
