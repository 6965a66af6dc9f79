"""The direct channel's Unix socket, spoken as the server's relay speaks it (docs/protocol.md, "Direct channel")."""

from __future__ import annotations

import asyncio
import json
import time

from unified_exec_kernel.protocol import frames


class DirectClient:
    """One connection to a kernel's socket; frames read while looking for others are kept, in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.backlog: list[tuple[bytes, object]] = []

    @classmethod
    async def connect(cls, path: str, timeout: float = 10) -> DirectClient:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(path, limit=frames.MAX_FRAME_BYTES + 64), timeout)
        return cls(reader, writer)

    def send(self, message: dict) -> None:
        self.writer.write(frames.text_frame(json.dumps(message).encode()))

    def keys(self, session_id: int, keys: bytes) -> None:
        self.writer.write(frames.input_frame(session_id, keys))

    def raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def frame(self, timeout: float = 15) -> tuple[bytes, object] | None:
        """The next frame (backlog first): (`T`, message dict) or (`B`, (session_id, offset, skipped, data)); None at EOF."""
        if self.backlog:
            return self.backlog.pop(0)
        return await self._read(timeout)

    async def _read(self, timeout: float) -> tuple[bytes, object] | None:
        try:
            head = await asyncio.wait_for(self.reader.readexactly(frames.HEADER.size), timeout)
            kind, length = frames.HEADER.unpack(head)
            payload = await asyncio.wait_for(self.reader.readexactly(length), timeout)
        except asyncio.IncompleteReadError:
            return None
        except asyncio.TimeoutError:
            raise AssertionError(f"no frame within {timeout:.1f} s") from None
        if kind == frames.TEXT:
            return kind, json.loads(payload)
        if kind == frames.OUTPUT:
            return kind, frames.read_output(payload)
        return kind, payload

    async def message(self, wanted, what: str, timeout: float = 15) -> dict:
        """The first `T` message `wanted(message)` accepts; other frames stay in the backlog."""
        for index, (kind, body) in enumerate(self.backlog):
            if kind == frames.TEXT and wanted(body):
                return self.backlog.pop(index)[1]
        deadline = time.monotonic() + timeout
        kept = []
        try:
            while True:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"timed out waiting for {what}; saw {kept[-10:]}"
                got = await self._read(remaining)
                assert got is not None, f"the socket closed while waiting for {what}"
                kind, body = got
                if kind == frames.TEXT and wanted(body):
                    return body
                kept.append(got)
        finally:
            self.backlog.extend(kept)

    async def output_until(self, session_id: int, done, what: str, timeout: float = 15) -> str:
        """Text of this session's `B` frames (backlog first) until `done(text)`; other frames stay in the backlog."""
        text = ""
        deadline = time.monotonic() + timeout
        kept = []
        pending = self.backlog
        self.backlog = []
        try:
            while not done(text):
                if pending:
                    got = pending.pop(0)
                else:
                    remaining = deadline - time.monotonic()
                    try:
                        assert remaining > 0, "timed out"
                        got = await self._read(remaining)
                    except AssertionError as error:
                        raise AssertionError(f"{error} waiting for {what}; so far {text[-300:]!r}") from None
                    assert got is not None, f"the socket closed while waiting for {what}; so far {text[-300:]!r}"
                kind, body = got
                if kind == frames.OUTPUT and body[0] == session_id:
                    text += body[3].decode()
                else:
                    kept.append(got)
            return text
        finally:
            self.backlog = kept + pending + self.backlog

    async def closed(self, timeout: float = 15) -> bool:
        """True once the kernel has closed this connection (frames read meanwhile are kept)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = await self._read(deadline - time.monotonic())
            if got is None:
                return True
            self.backlog.append(got)
        return False

    def close(self) -> None:
        self.writer.close()
