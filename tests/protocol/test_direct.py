"""The direct channel end to end in a real kernel: its socket, its frames, its flow control.

A real uexec kernel through jupyter_client, its connection file in a private
runtime directory of its own (as Jupyter's is), spoken to over the socket
the way the server's relay does (tests/direct_client.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import socket
import stat
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from unified_exec_kernel.core.manager import UnifiedExecSessionManager
from unified_exec_kernel.protocol import frames
from unified_exec_kernel.protocol.direct import INPUT_WINDOW, DirectConnection
from unified_exec_kernel.protocol.address import find_socket, socket_names
from unified_exec_kernel.protocol.window import VIEW_BACKLOG, WINDOW

from ..direct_client import DirectClient
from ..kernel_harness import Kernel

pytestmark = pytest.mark.timeout(180)

WAIT_FOR = "sh -c 'while [ ! -e {go} ]; do sleep 0.02; done; {command}; touch {done}'"


def seq_text(last: int) -> str:
    """What `seq 1 LAST` prints through a terminal (which makes each \\n a \\r\\n)."""
    return "".join(f"{n}\r\n" for n in range(1, last + 1))


def make_runtime() -> Path:
    """A private runtime directory (0700, as Jupyter's), short enough for a socket beside its files."""
    folder = Path(tempfile.mkdtemp(prefix="uexec-test-")) / "runtime"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def runtime_folder():
    folder = make_runtime()
    yield folder
    shutil.rmtree(folder.parent, ignore_errors=True)


def kernel_in(folder: Path) -> tuple[Kernel, str]:
    connection_file = str(folder / f"kernel-{uuid.uuid4()}.json")
    return Kernel("uexec", connection_file=connection_file), connection_file


def start_session(kernel: Kernel, name: str, command: str) -> int:
    text = kernel.run(f"%%uexec --name {name} -t 0\n{command}\n")
    found = re.search(r"\[session (\d+) ", text)
    assert found, text
    return int(found[1])


async def attach(client: DirectClient, name: str) -> dict:
    client.send({"type": "attach", "request_id": f"attach-{name}", "session_id": name})
    attached = await client.message(lambda m: m.get("request_id") == f"attach-{name}", f"attached {name}")
    assert attached["type"] == "attached", attached
    return attached


def says_hello(path: str) -> None:
    """Whatever listens at `path` answers a new connection with `hello` (asked from a loop of its own)."""

    async def hello() -> None:
        client = await DirectClient.connect(path)
        try:
            assert (await client.message(lambda m: True, "hello"))["type"] == "hello"
        finally:
            client.close()

    asyncio.run(hello())


async def output_until_exited(client: DirectClient):
    """(offset, skipped, data) of each `B` frame, until the session's `exited` (the only `T` frame expected)."""
    while True:
        kind, body = await client.frame(timeout=60)
        if kind == frames.TEXT and body["type"] == "session_event":
            continue  # every connection hears of every end (notices.py)
        if kind == frames.TEXT:
            assert body["type"] == "exited", body
            return
        _, offset, skipped, data = body
        yield offset, skipped, data


@contextlib.asynccontextmanager
async def viewed_from_the_start(kernel: Kernel, tmp_path: Path, name: str, command: str):
    """`command` in a session of its own that waits for `go`, and a connection attached to it before it starts.

    Yields (client, attached, go, done): touching `go` starts the command; `done` appears once it has written everything.
    """
    go, done = tmp_path / "go", tmp_path / "done"
    start_session(kernel, name, WAIT_FOR.format(go=go, command=command, done=done))
    client = await connect(kernel)
    try:
        yield client, await attach(client, name), go, done
    finally:
        client.close()


@pytest.fixture(scope="module")
def kernel():
    runtime = make_runtime()
    started, connection_file = kernel_in(runtime)
    started.connection_file = connection_file
    try:
        start_session(started, "shell", "bash --norc --noprofile -i")
        yield started
    finally:
        started.shutdown()
        shutil.rmtree(runtime.parent, ignore_errors=True)


async def connect(kernel: Kernel) -> DirectClient:
    path = find_socket(kernel.connection_file)
    assert path is not None, os.listdir(os.path.dirname(kernel.connection_file))
    client = await DirectClient.connect(path)
    hello = await client.message(lambda m: True, "hello")
    assert hello["type"] == "hello" and hello["carrier"] == "direct" and hello["protocol_version"] == 2, hello
    return client


# -- the socket -------------------------------------------------------------------


def test_the_socket_sits_beside_the_connection_file_0600_in_a_0700_directory(kernel):
    beside, pointer = socket_names(kernel.connection_file)
    assert find_socket(kernel.connection_file) == beside
    assert not os.path.exists(pointer)
    mode = os.stat(beside).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600, oct(mode)
    assert stat.S_IMODE(os.stat(os.path.dirname(beside)).st_mode) & 0o777 == 0o700  # jupyter_client adds the sticky bit


async def test_keystrokes_as_input_frames_echo_as_output_frames(kernel):
    client = await connect(kernel)
    try:
        attached = await attach(client, "shell")
        assert attached["alive"] and attached["rows"] == 24
        sid = attached["session_id"]
        client.keys(sid, b"echo $((6*7))\r")
        text = await client.output_until(sid, lambda t: re.search(r"[\r\n]42\r\n", t), "the answer")
        assert "echo $((6*7))" in text
        # JSON input still works on this carrier, answered when it has a request_id
        client.send({"type": "input", "request_id": "typed", "session_id": sid, "data": "echo $((7*8))\r"})
        ok = await client.message(lambda m: m.get("request_id") == "typed", "ok for the JSON input")
        assert ok == {"type": "ok", "request_id": "typed", "session_id": sid}
        await client.output_until(sid, lambda t: re.search(r"[\r\n]56\r\n", t), "the second answer")
    finally:
        client.close()


async def test_keystrokes_on_the_direct_channel_publish_nothing_on_iopub(kernel):
    """The comm costs a busy/idle pair per keystroke; this channel costs the kernel's iopub nothing."""
    kernel.run("pass")
    kernel.backlog.clear()
    client = await connect(kernel)
    try:
        sid = (await attach(client, "shell"))["session_id"]
        for index in range(20):
            client.keys(sid, f"echo key{index}\r".encode())
        await client.output_until(sid, lambda t: re.search(r"[\r\n]key19\r\n", t), "the last echo")
    finally:
        client.close()
    marker = kernel.start_execute("pass")
    kernel.finish_execute(marker)
    strays = [msg["msg_type"] for msg in kernel.backlog]
    assert strays == [], f"iopub messages not from the cell: {strays}"


async def test_keys_echo_while_a_cell_runs_python(kernel, tmp_path):
    """The socket is the engine's, not the kernel's main loop: a busy cell holds up nothing."""
    release = tmp_path / "release"
    client = await connect(kernel)
    try:
        sid = (await attach(client, "shell"))["session_id"]
        busy = kernel.start_execute(
            f"import os\nwhile not os.path.exists({str(release)!r}):\n    pass\nprint('cell done')\n"
        )
        client.keys(sid, b"echo busy-$((3*3))\r")
        # the echo comes while the cell still spins: it cannot end before `release` exists
        await client.output_until(sid, lambda t: re.search(r"[\r\n]busy-9\r\n", t), "the echo during the cell")
        release.touch()
        assert "cell done" in kernel.finish_execute(busy).text
    finally:
        release.touch()
        client.close()


async def test_replay_then_live_output_then_exited_with_contiguous_offsets(kernel, tmp_path):
    async with viewed_from_the_start(kernel, tmp_path, "counted", "seq 1 1000") as (client, attached, go, _):
        sid, end = attached["session_id"], attached["offset"]
        go.touch()
        text = ""
        while True:
            kind, body = await client.frame()
            if kind == frames.TEXT and body["type"] == "session_event":
                continue  # every connection hears of every end (notices.py)
            if kind == frames.TEXT:
                assert body["type"] == "exited" and body["session_id"] == sid and body["exit_code"] == 0, body
                break
            session_id, offset, skipped, data = body
            assert session_id == sid and offset == end and skipped == 0, (offset, end, skipped)
            end = offset + len(data)
            text += data.decode()
        assert text == seq_text(1000)
        # a second connection attaching late gets the same bytes as a replay, then exited at once
        late = await connect(kernel)
        try:
            again = await attach(late, "counted")
            assert not again["alive"] and again["exit_code"] == 0
            replayed = await late.output_until(sid, lambda t: t.endswith("1000\r\n"), "the replay")
            assert replayed == seq_text(1000)
            assert (await late.message(lambda m: m["type"] == "exited", "exited"))["exit_code"] == 0
        finally:
            late.close()


# -- bad frames ---------------------------------------------------------------------


async def test_each_bad_frame_gets_one_error_and_the_connection_the_kernel_and_other_connections_live_on(kernel):
    client, other = await connect(kernel), await connect(kernel)
    try:
        sid = (await attach(other, "shell"))["session_id"]
        bad = [
            (frames.HEADER.pack(b"X", 3) + b"abc", "BadRequest", "unknown frame kind 'X'"),
            (frames.text_frame(b"{not json"), "BadRequest", "JSON"),
            (frames.text_frame(b"[" * 100000), "BadRequest", "JSON"),
            (frames.text_frame(b"\xff\xfe"), "BadRequest", "UTF-8"),
            (frames.text_frame(b'"a string"'), "BadRequest", "JSON object"),
            (frames.text_frame(b'{"type": "exec", "input_chunks": ["ls"]}'), "BadRequest", "unknown message type 'exec'"),
            (frames.text_frame(b'{"type": "attach", "session_id": 4242}'), "UnknownSessionId", "4242"),
            (frames.text_frame(b'{"type": "ack", "session_id": 0}'), "BadRequest", "end is required"),
            (frames.input_frame(4242, b"ls\r"), "UnknownSessionId", "4242"),
            (frames.HEADER.pack(frames.INPUT, 2) + b"ab", "BadRequest", "4-byte session id"),
        ]
        for frame, name, words in bad:
            client.raw(frame)
            error = await client.message(lambda m: True, f"the answer to {frame[:20]!r}")
            assert error["type"] == "error" and error["error"] == name and words in error["message"], (frame, error)
            assert "\n" not in error["message"] and "Traceback" not in error["message"]
        # still the same connection, answering
        attached = await attach(client, "shell")
        assert attached["session_id"] == sid
        # a frame over the cap: one error, then only that connection closes
        client.raw(frames.HEADER.pack(frames.TEXT, frames.MAX_FRAME_BYTES + 1))
        error = await client.message(lambda m: True, "the answer to an oversize frame")
        assert error["error"] == "BadRequest" and "over the limit" in error["message"], error
        assert await client.closed()
        other.keys(sid, b"echo still-$((40+2))\r")
        await other.output_until(sid, lambda t: "still-42" in t, "the other connection's echo")
        assert "alive" in kernel.run("print('alive')")
    finally:
        client.close()
        other.close()


async def test_keys_past_the_input_window_of_a_program_that_does_not_read_are_refused_in_one_line(kernel):
    sid = start_session(kernel, "unread", "sleep 600")
    client = await connect(kernel)
    try:
        client.keys(sid, b"a" * 4 * INPUT_WINDOW)  # taken, as nothing waited; the terminal holds far less
        client.keys(sid, b"b" * 2000)  # past the window, with most of the first still waiting
        error = await client.message(lambda m: m.get("type") == "error", "the refusal")
        assert error["error"] == "WriteToStdin" and "not reading its input" in error["message"], error
        assert "these 2,000 were not sent" in error["message"] and "\n" not in error["message"]
    finally:
        client.close()
        kernel.run("%uexec_kill unread")


# -- flow control -------------------------------------------------------------------


async def test_a_flood_arrives_whole_when_the_view_acknowledges(kernel, tmp_path):
    async with viewed_from_the_start(kernel, tmp_path, "flood", "seq 1 300000") as (client, attached, go, _):
        sid, end, acked = attached["session_id"], attached["offset"], attached["offset"]
        go.touch()
        pieces = []
        most_in_flight = 0
        async for offset, skipped, data in output_until_exited(client):
            assert offset == end and skipped == 0, (offset, end, skipped)
            end += len(data)
            pieces.append(data)
            most_in_flight = max(most_in_flight, end - acked)
            if end - acked >= 64 * 1024:  # as the page does: every 64 KiB written
                client.send({"type": "ack", "session_id": sid, "end": end})
                acked = end
        assert b"".join(pieces).decode() == seq_text(300000)
        assert most_in_flight <= WINDOW + 3


async def test_without_acks_at_most_the_window_is_in_flight_and_after_its_hold_the_view_skips_its_oldest(kernel, tmp_path):
    # The view holds the program (window.py) for the kernel's live_view_hold_s (5 s), then lets go and skips.
    last = 1_500_000  # ~12.4 MB through the terminal: more than the window and the backlog together
    expected = seq_text(last).encode()
    async with viewed_from_the_start(kernel, tmp_path, "unread", f"seq 1 {last}") as (client, attached, go, done):
        sid, start = attached["session_id"], attached["offset"]
        go.touch()
        deadline = time.monotonic() + 60
        while not done.exists():  # held, let go, then the program wrote everything: the kernel read all but what the terminal holds
            assert time.monotonic() < deadline, "seq did not finish"
            await asyncio.sleep(0.05)
        # An answer is sent after every frame sent before it: what arrived by then is all there is in flight.
        client.send({"type": "resize", "request_id": "fence", "session_id": sid, "rows": 24, "cols": 80})
        await client.message(lambda m: m.get("request_id") == "fence", "the fence")
        received = [body for kind, body in client.backlog if kind == frames.OUTPUT]
        client.backlog.clear()
        in_flight = sum(len(data) for *_, data in received)
        assert WINDOW - 3 <= in_flight <= WINDOW + 3, in_flight

        end = acked = start + in_flight
        client.send({"type": "ack", "session_id": sid, "end": end})
        skipped_total = 0
        newest: list[bytes] = []  # what arrived after the last skip
        async for offset, skipped, data in output_until_exited(client):
            assert offset - skipped == end, (offset, skipped, end)  # the gap rule holds across every skip
            if skipped:
                skipped_total += skipped
                newest = []
            end = offset + len(data)
            newest.append(data)
            if end - acked >= 64 * 1024:
                client.send({"type": "ack", "session_id": sid, "end": end})
                acked = end
        assert skipped_total > 0
        assert end - start == len(expected)  # every byte was sent or counted as skipped
        after = b"".join(newest)
        assert expected.endswith(after) and len(after) >= VIEW_BACKLOG * 7 // 8, len(after)



async def test_a_view_that_hangs_up_lets_go_of_the_program_it_held():
    """In-process (no kernel): the view's long hold ends with its connection, not with its timer."""
    manager = UnifiedExecSessionManager()
    folder = tempfile.mkdtemp(prefix="uexec-test-")
    server = await asyncio.get_running_loop().create_unix_server(
        lambda: DirectConnection(manager, hold_s=600), os.path.join(folder, "s")
    )
    try:
        session = manager.session(manager.spawn(["seq", "1", "2000000"]))
        client = await DirectClient.connect(os.path.join(folder, "s"))
        await client.message(lambda m: m["type"] == "hello", "hello")
        client.send({"type": "attach", "request_id": "a", "session_id": session.session_id})
        deadline = time.monotonic() + 30
        while not session.terminal.paused:  # nothing acknowledged: the view holds the program
            assert time.monotonic() < deadline, "the view never held the session"
            await asyncio.sleep(0.01)
        client.close()
        await asyncio.wait_for(session.wait_finished(), 60)
        assert not session.terminal.paused
    finally:
        server.close()
        await manager.close_all()
        shutil.rmtree(folder, ignore_errors=True)

# -- where the socket goes, and when it goes away --------------------------------------


def test_a_long_runtime_path_uses_a_private_directory_named_by_a_pointer_file(runtime_folder):
    deep = runtime_folder / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    kernel, connection_file = kernel_in(deep)
    try:
        start_session(kernel, "shell", "bash --norc --noprofile -i")
        beside, pointer = socket_names(connection_file)
        assert len(os.fsencode(beside)) > 107 and not os.path.exists(beside)
        path = Path(pointer).read_text().strip()
        assert find_socket(connection_file) == path != beside
        assert stat.S_IMODE(os.stat(pointer).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        says_hello(path)
    finally:
        kernel.shutdown()
    assert not os.path.exists(pointer) and not os.path.exists(path) and not os.path.exists(os.path.dirname(path))


def test_a_stale_socket_does_not_block_a_new_kernel_and_shutdown_removes_the_socket(runtime_folder):
    connection_file = str(runtime_folder / f"kernel-{uuid.uuid4()}.json")
    beside, _ = socket_names(connection_file)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(beside)  # bound, never listened on, closed: the file a kernel killed hard leaves
    stale.close()
    assert stat.S_ISSOCK(os.stat(beside).st_mode)
    kernel = Kernel("uexec", connection_file=connection_file)
    try:
        start_session(kernel, "shell", "bash --norc --noprofile -i")
        assert find_socket(connection_file) == beside
        says_hello(beside)
    finally:
        kernel.shutdown()
    assert not os.path.exists(beside)


def test_the_socket_is_removed_when_sigterm_ends_the_kernel(runtime_folder):
    kernel, connection_file = kernel_in(runtime_folder)
    try:
        start_session(kernel, "shell", "bash --norc --noprofile -i")
        beside, _ = socket_names(connection_file)
        assert os.path.exists(beside)
        kernel.manager.provisioner.process.terminate()
        kernel.manager.provisioner.process.wait(timeout=30)
        assert not os.path.exists(beside)
    finally:
        kernel.client.stop_channels()
        kernel.manager.shutdown_kernel(now=True)


def test_no_socket_before_the_first_session_and_none_when_the_channel_is_off(runtime_folder, tmp_path):
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text("c.UnifiedExec.direct_channel = False\n")
    kernel, connection_file = kernel_in(runtime_folder)
    off_file = str(runtime_folder / f"kernel-{uuid.uuid4()}.json")
    off = Kernel("uexec", env={**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")}, connection_file=off_file)
    widget_kernel_id = "from unified_exec_kernel.live.widget import TerminalWidget\nprint(repr(TerminalWidget({sid}).kernel_id))"
    try:
        assert find_socket(connection_file) is None  # the engine starts with the first session, the socket with it
        sid = start_session(kernel, "shell", "sleep 60")
        assert find_socket(connection_file) is not None
        kernel_id = os.path.basename(connection_file)[len("kernel-") : -len(".json")]
        assert kernel.run(widget_kernel_id.format(sid=sid)).strip() == repr(kernel_id)

        sid = start_session(off, "shell", "sleep 60")
        assert find_socket(off_file) is None
        assert not any(os.path.exists(name) for name in socket_names(off_file))
        assert off.run(widget_kernel_id.format(sid=sid)).strip() == "''"
    finally:
        kernel.shutdown()
        off.shutdown()


def test_a_client_that_sends_and_never_reads_cannot_grow_the_kernels_memory(kernel):
    """protocol.md's 256 KiB per session and connection, for input too: 200 x 1 MiB of keys to a program
    that never reads grew the kernel by ~206 MiB, and 400 attaches that each re-sent the whole
    scrollback to a client that never reads by ~100 MiB."""
    from ..misbehaving_client import MIB, attach_storm, keystroke_flood, rss_bytes, settled_rss

    deaf = start_session(kernel, "deaf", "sleep 600")  # never reads its terminal
    start_session(kernel, "full", "head -c 300000 /dev/zero | tr '\\\\0' x; sleep 600")  # a full scrollback
    path = find_socket(kernel.connection_file)
    before = settled_rss(kernel.pid, 1.0)
    keys, sent = keystroke_flood(path, deaf)
    try:
        after_keys = settled_rss(kernel.pid)
        storm, attaches = attach_storm(path, "full")
        try:
            after_attaches = settled_rss(kernel.pid)
        finally:
            storm.close()
    finally:
        keys.close()
    print(f"kernel RSS: {before / MIB:.1f} MiB; after {sent} x 1 MiB of keys {after_keys / MIB:.1f} MiB; after {attaches} attaches {after_attaches / MIB:.1f} MiB")
    assert after_keys - before < 24 * MIB, (before, after_keys)
    assert after_attaches - after_keys < 24 * MIB, (after_keys, after_attaches)
    kernel.run("%uexec_kill deaf\n%uexec_kill full")
    assert rss_bytes(kernel.pid) > 0
