"""A kernel's websocket (`/api/kernels/<id>/channels`), spoken as a front end speaks it.

For tests that reach kernels through a server (Kernel Gateway, JupyterHub's
proxy): run cells, read what a notebook would show (kernel_harness.Execution),
and talk on the `unified_exec` comm.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from .kernel_harness import Execution


class Channels:
    """One websocket on `/api/kernels/<id>/channels`; messages read while looking for others are kept."""

    def __init__(self, ws):
        self.ws = ws
        self.session = uuid.uuid4().hex
        self.backlog: list[dict] = []

    @classmethod
    async def connect(cls, url: str, token: str) -> Channels:
        """`url` is the kernel's `ws://.../api/kernels/<id>/channels`; the token goes in the Authorization header."""
        request = HTTPRequest(url, headers={"Authorization": f"token {token}"}, connect_timeout=10, request_timeout=30)
        return cls(await asyncio.wait_for(websocket_connect(request), 30))

    def send(self, channel: str, msg_type: str, content: dict) -> str:
        msg_id = uuid.uuid4().hex
        self.ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "test",
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": [],
        }))
        return msg_id

    async def next(self, wanted, deadline: float, what: str) -> dict:
        """The first message (backlog first) `wanted(msg)` accepts; others stay in the backlog."""
        for index, msg in enumerate(self.backlog):
            if wanted(msg):
                return self.backlog.pop(index)
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                raw = await asyncio.wait_for(self.ws.read_message(), remaining)
            except asyncio.TimeoutError:
                kinds = [(m["channel"], m["header"]["msg_type"], m["content"].get("data", {}).get("type")) for m in self.backlog[-20:]]
                raise AssertionError(f"timed out waiting for {what}; last unclaimed messages: {kinds}") from None
            assert raw is not None, f"the websocket closed while waiting for {what}"
            msg = json.loads(raw)
            if wanted(msg):
                return msg
            self.backlog.append(msg)

    async def execute(self, code: str, timeout: float = 15) -> tuple[dict, str]:
        """Run a cell; returns the execute_reply content and the text shown (each display at its latest update)."""
        deadline = time.monotonic() + timeout
        msg_id = self.send("shell", "execute_request", {"code": code, "silent": False, "store_history": True,
                                                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        mine = lambda m: m.get("parent_header", {}).get("msg_id") == msg_id  # noqa: E731
        messages = []
        while True:
            msg = await self.next(lambda m: mine(m) and m["channel"] == "iopub", deadline, f"the output of {code!r}")
            kind = msg["header"]["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            messages.append({**msg, "msg_type": kind})  # the shape jupyter_client gives
        reply = await self.next(lambda m: mine(m) and m["channel"] == "shell", deadline, f"the reply to {code!r}")
        return reply["content"], Execution(reply["content"], messages).text

    # -- the unified_exec comm -----------------------------------------------------

    def comm_open(self, target: str) -> str:
        comm_id = uuid.uuid4().hex
        self.send("shell", "comm_open", {"comm_id": comm_id, "target_name": target, "data": {}})
        return comm_id

    def comm_send(self, comm_id: str, data: dict) -> None:
        self.send("shell", "comm_msg", {"comm_id": comm_id, "data": data})

    async def comm_next(self, comm_id: str, wanted, deadline: float, what: str) -> dict:
        msg = await self.next(
            lambda m: m["header"]["msg_type"] == "comm_msg" and m["content"].get("comm_id") == comm_id and wanted(m["content"]["data"]),
            deadline, what)
        return msg["content"]["data"]

    async def ask(self, comm_id: str, request: dict, timeout: float = 10) -> dict:
        """Send a request; its answer (result, sessions, ok, attached or error) with the same request_id."""
        self.comm_send(comm_id, request)
        answers = ("result", "sessions", "ok", "attached", "error")
        return await self.comm_next(comm_id, lambda d: d.get("type") in answers and d.get("request_id") == request["request_id"],
                                    time.monotonic() + timeout, f"the answer to {request}")

    async def open_unified_exec(self, timeout: float = 10) -> str:
        comm_id = self.comm_open("unified_exec")
        hello = await self.comm_next(comm_id, lambda d: d.get("type") == "hello", time.monotonic() + timeout, "hello")
        assert hello["protocol_version"] == 2
        return comm_id

    def close(self) -> None:
        self.ws.close()
