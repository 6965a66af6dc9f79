"""One size for a terminal several views show: the view a person used last gives it (issue 34, 3b).

Real sessions in real PTYs, real endpoints: two peers stand for two users'
pages, each view naming itself as the front end does. What the program sees
is asked of the program (`stty size`), not of our bookkeeping.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from unified_exec_kernel import UnifiedExecSessionManager
from unified_exec_kernel.protocol.endpoint import Endpoint
from unified_exec_kernel.protocol.sizes import ViewSizes

from .test_endpoint import answer

A, B = "view-a", "view-b"


@pytest.fixture
async def two_pages():
    """A session running a loop that prints the terminal's size for each line typed, and two peers attached to it."""
    manager = UnifiedExecSessionManager()
    sid = manager.spawn(["sh", "-c", "while read line; do echo \"size=$(stty size)\"; done"])
    pages = []
    for _ in range(2):
        sent = []
        page = Endpoint(manager, sent.append)
        page.receive({"type": "attach", "request_id": "at", "session_id": sid})
        await answer(sent, "attached", "at")
        pages.append((page, sent))
    try:
        yield manager, sid, pages
    finally:
        for page, _ in pages:
            page.close()
        await manager.close_all()


async def program_size(sent, sid, marker: str, timeout: float = 10) -> str:
    """What `stty size` printed after the line `marker` was typed (its echo comes first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        text = "".join(m["data"] for m in sent if m.get("type") == "data" and m.get("session_id") == sid)
        found = re.search(re.escape(marker) + r"\r\nsize=(\d+ \d+)", text)
        if found:
            return found.group(1)
        assert loop.time() < deadline, f"no size after {marker!r}: {text[-300:]!r}"
        await asyncio.sleep(0.02)


async def test_the_view_that_types_runs_the_program_at_its_own_size(two_pages):
    manager, sid, ((page_a, sent_a), (page_b, _)) = two_pages
    page_a.receive({"type": "resize", "session_id": sid, "rows": 24, "cols": 120, "view": A})
    page_b.receive({"type": "resize", "session_id": sid, "rows": 53, "cols": 101, "view": B})
    # A's view fits again (its panel moved): it is still the one in use.
    page_a.receive({"type": "resize", "session_id": sid, "rows": 24, "cols": 120, "view": A})
    assert manager.session(sid).size == (24, 120)
    # B types in a view that already had focus: its keys run at B's size (the issue saw `24 120`).
    page_b.receive({"type": "input", "session_id": sid, "data": "from-b\n", "view": B})
    assert await program_size(sent_a, sid, "from-b") == "53 101"
    # Then A types: A's size again.
    page_a.receive({"type": "input", "session_id": sid, "data": "from-a\n", "view": A})
    assert await program_size(sent_a, sid, "from-a") == "24 120"


async def test_a_view_that_is_not_in_use_keeps_its_size_and_every_view_hears_the_ptys(two_pages):
    manager, sid, ((page_a, sent_a), (page_b, sent_b)) = two_pages
    page_a.receive({"type": "resize", "session_id": sid, "rows": 30, "cols": 90, "view": A})
    page_b.receive({"type": "resize", "session_id": sid, "rows": 40, "cols": 100, "view": B})
    assert manager.session(sid).size == (30, 90)
    sizes = [(m["rows"], m["cols"]) for m in sent_b if m["type"] == "size"]
    assert sizes[-1] == (30, 90), "B's view is told the PTY's size, so it can say it shows another's"
    # A click into B's view (a claim) hands it the size at once, before any key.
    page_b.receive({"type": "resize", "session_id": sid, "rows": 40, "cols": 100, "view": B, "claim": True})
    assert manager.session(sid).size == (40, 100)
    assert [m for m in sent_a if m["type"] == "size"][-1] == {"type": "size", "session_id": sid, "rows": 40, "cols": 100}


async def test_when_the_view_in_use_goes_the_one_used_before_it_gives_the_size(two_pages):
    manager, sid, ((page_a, _), (page_b, sent_b)) = two_pages
    page_a.receive({"type": "resize", "session_id": sid, "rows": 30, "cols": 90, "view": A})
    page_b.receive({"type": "resize", "session_id": sid, "rows": 40, "cols": 100, "view": B})
    page_b.receive({"type": "input", "session_id": sid, "data": "x\n", "view": B})
    assert manager.session(sid).size == (40, 100)
    page_b.receive({"type": "detach", "request_id": "d", "session_id": sid})
    await answer(sent_b, "ok", "d")
    assert manager.session(sid).size == (30, 90)
    # A page closing (its comm, its connection) forgets its views too.
    page_b.receive({"type": "resize", "session_id": sid, "rows": 50, "cols": 110, "view": B, "claim": True})
    assert manager.session(sid).size == (50, 110)
    page_b.close()
    assert manager.session(sid).size == (30, 90)


async def test_a_bad_size_is_one_line_and_changes_nothing(two_pages):
    manager, sid, ((page_a, sent_a), _) = two_pages
    page_a.receive({"type": "resize", "session_id": sid, "rows": 30, "cols": 90, "view": A})
    page_a.receive({"type": "resize", "request_id": "bad", "session_id": sid, "rows": 0, "cols": 90, "view": A})
    error = await answer(sent_a, "error", "bad")
    assert error["error"] == "BadRequest" and error["message"] == "terminal size must be 1..1000 rows and columns, not 0x90"
    page_a.receive({"type": "resize", "request_id": "claim", "session_id": sid, "rows": 20, "cols": 60, "view": A, "claim": "yes"})
    assert (await answer(sent_a, "error", "claim"))["error"] == "BadRequest"
    assert manager.session(sid).size == (30, 90)


async def test_views_without_names_are_one_view_per_peer_as_before(two_pages):
    """A client that names no view (an older page, a script): each resize of its own applies, as it always did."""
    manager, sid, ((page_a, _), _) = two_pages
    for rows, cols in ((30, 90), (31, 91)):
        page_a.receive({"type": "resize", "session_id": sid, "rows": rows, "cols": cols})
        assert manager.session(sid).size == (rows, cols)


async def test_an_exited_session_is_never_resized():
    manager = UnifiedExecSessionManager()
    try:
        sid = manager.spawn(["true"])
        session = manager.session(sid)
        await manager.write(sid, "", timeout_ms=5000)
        sizes = ViewSizes(session)
        sizes.resize("v", 30, 90)
        assert session.size == (24, 80) and sizes.in_use == "v"
    finally:
        await manager.close_all()
