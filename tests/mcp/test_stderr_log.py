"""The server's stderr: one bounded line a record, and a pipe nobody reads never stops the server."""

from __future__ import annotations

import json
import logging
import os
import select
import time

from .raw_client import RawServer

BATCHES, PER_BATCH = 20, 100


def call_line(request_id: int, tool: str, arguments: dict) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}) + "\n").encode()


def read_to_end(fd: int, timeout: float) -> bytes:
    data = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([fd], [], [], max(deadline - time.monotonic(), 0))[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                return bytes(data)
            data += chunk
    raise AssertionError(f"stderr did not end within {timeout} s")


def test_a_server_whose_stderr_nobody_reads_answers_after_thousands_of_failures():
    server = RawServer(read_stderr=False)
    try:
        # Each failed call is logged, and so is each message with no id to answer; a 10 KB key
        # holding a lone surrogate is named in its line: unbounded, a few such lines fill the pipe.
        no_id = json.dumps({"jsonrpc": "2.0", "method": "ping", "params": {"k" * 10_000: "\ud800"}}).encode() + b"\n"
        request_id = 0
        for _ in range(BATCHES):
            batch = bytearray()
            for _ in range(PER_BATCH):
                request_id += 1
                batch += call_line(request_id, "kill_session", {"session_id": 10**9 + request_id, "signal": "S" * 10_000}) + no_id
            server.send(bytes(batch))
            found = server.answer(request_id, 20)
            assert found["result"]["isError"] and len(found["result"]["content"][0]["text"]) <= 1024
        server.send(b'{"jsonrpc":"2.0","id":"last","method":"ping"}\n')
        assert server.answer("last", 20)["result"] == {}
        server.process.stdin.close()
        logged = read_to_end(server.process.stderr.fileno(), 30)
        assert server.process.wait(timeout=30) == 0
    finally:
        server.close()
    lines = logged.decode("utf-8").splitlines()
    assert lines and all(len(line.encode()) < 1024 for line in lines), max(map(len, lines))
    assert "log lines dropped: stderr was full" in logged.decode()  # the pipe filled, and the count was told once it had room


def test_a_record_is_one_line_with_its_traceback_only_at_debug(tmp_path):
    from unified_exec_kernel.mcp.stderr_log import StderrLines

    path = tmp_path / "stderr"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    handler = StderrLines(fd)
    os.close(fd)
    log = logging.getLogger("uexec-test-stderr-lines")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        try:
            raise OSError("x" * 1_000_000 + "\nsecond line")
        except OSError:
            log.exception("call failed: %s", "y" * 1_000_000)
            log.debug("the traceback", exc_info=True)
    finally:
        log.removeHandler(handler)
        handler.close()
    first, second = path.read_text().splitlines()
    assert len(first.encode()) < 1024 and first.startswith("ERROR:uexec-test-stderr-lines:call failed: yyy") and "Traceback" not in first
    assert len(second.encode()) < 1024 and "Traceback" in second
