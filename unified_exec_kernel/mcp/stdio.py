"""stdin and stdout on the server's own loop: no thread hop per message.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`, a
worker thread for each line read, each write and each flush: three hops
per call, each a wake-up of another thread and a GIL handover, which on a
loaded 2-core machine cost ~0.3 ms of every tool call (bench_agent.py).
Pipes can be read and written by the loop itself (`connect_read_pipe`,
`connect_write_pipe`), so here they are; the SDK still frames, parses and
dispatches every message (its `stdio_server` given these two streams).

As the SDK does, fd 0 and fd 1 are moved out of the way while serving
(the null device and stderr): a stray read or print of the server, or of
anything it starts that inherits them, never reaches the wire. Standard
streams the loop cannot watch (a regular file) are served by the SDK's
own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat

from mcp.server.stdio import stdio_server

LINE_LIMIT = 64 * 1024 * 1024  # one JSON-RPC message (a write_stdin's 1 MiB `chars` escaped fits many times)


class _Lines:
    """`async for line in stdin`, as the SDK reads its stdin: text lines until EOF."""

    def __init__(self, reader: asyncio.StreamReader):
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _Out:
    """`write` and `flush`, as the SDK writes its stdout; the transport buffers, `flush` waits while the pipe is full."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _Drain):
        self._transport = transport
        self._protocol = protocol

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._protocol.drained()


class _Drain(asyncio.Protocol):
    def __init__(self) -> None:
        self._resumed: asyncio.Future | None = None
        self._paused = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)

    def connection_lost(self, exc) -> None:
        self.resume_writing()

    async def drained(self) -> None:
        if self._paused:
            self._resumed = asyncio.get_running_loop().create_future()
            await self._resumed


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.asynccontextmanager
async def serve_stdio():
    """The SDK's (read_stream, write_stream) over fd 0 and fd 1, read and written on this loop."""
    if not (_watchable(0) and _watchable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    transports = []
    try:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0))
        transports.append(transport)
        transport, protocol = await loop.connect_write_pipe(_Drain, os.fdopen(wire_out, "wb", buffering=0))
        transports.append(transport)
        async with stdio_server(_Lines(reader), _Out(transport, protocol)) as streams:
            yield streams
    finally:
        for transport in transports:
            transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
