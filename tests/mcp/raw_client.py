"""A client that writes raw bytes to a real `python -m unified_exec_kernel mcp` and reads its lines: for what the SDK's client would never send."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time


class RawServer:
    """The server in a subprocess, initialized; `ask(bytes, id)` waits (bounded) for the answer with that id."""

    def __init__(self, *options: str, read_stderr: bool = True):
        """`read_stderr=False`: nobody reads the server's stderr pipe (as some MCP clients do)."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "unified_exec_kernel", "mcp", *options],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ},
        )
        self._answers: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        if read_stderr:
            threading.Thread(target=self._read_stderr, daemon=True).start()
        self.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).encode() + b"\n")
        assert self.answer("init", 60)["result"]["serverInfo"]["name"] == "unified-exec"
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def _read(self) -> None:
        for line in self.process.stdout:
            self._answers.put(line)

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self, request_id, timeout: float) -> dict:
        """The answer with this id (notifications and other answers skipped), within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._answers.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                raise AssertionError(f"no answer to request {request_id!r} within {timeout} s") from None
            message = json.loads(line)
            assert line.count(b"\n") == 1, line  # one line
            if message.get("id") == request_id:
                return message

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
