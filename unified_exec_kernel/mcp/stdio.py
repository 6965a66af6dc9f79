"""stdin and stdout on the server's own loop: no thread hop per message.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`, a
worker thread for each line read, each write and each flush: three hops
per call, each a wake-up of another thread and a GIL handover, which on a
loaded 2-core machine cost ~0.3 ms of every tool call (bench_agent.py).
Pipes can be read and written by the loop itself (`connect_read_pipe`,
`connect_write_pipe`), so here they are; the SDK still frames, parses and
dispatches every message (its `stdio_server` given these two streams).

Every request gets an answer (the SDK drops a message it cannot validate,
and its client then waits for ever): a line that is too long, not UTF-8, not
JSON, not a JSON-RPC message, or that holds a lone surrogate (`"\\ud800"`,
which Python's json.dumps writes) is answered here, in one line, when an id
can be found in it (incoming.py); one without is logged once, to stderr.
Only what the SDK's own check accepts is handed to it.

As the SDK's 2.x does, fd 0 and fd 1 are moved out of the way while
serving (the null device and stderr): a stray read or print of the server,
or of anything it starts that inherits them, never reaches the wire.
Standard streams the loop cannot watch (a regular file) are served by the
SDK's own transport, on the wire's descriptors moved aside here too (its
1.x would leave them in place).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat

import anyio
from mcp.server.stdio import stdio_server

from .incoming import LINE_LIMIT, TooLong, check

log = logging.getLogger(__name__)

HEAD_BYTES = 64 * 1024
"""What is kept of a line over LINE_LIMIT, to find its id in."""


class _Lines:
    """`async for line in stdin`, as the SDK reads its stdin: the lines it can take; the others answered here."""

    def __init__(self, reader: asyncio.StreamReader, out: _Out):
        self._reader = reader
        self._out = out

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._read_line()
            if not line:
                raise StopAsyncIteration
            text, answer, dropped = check(line)
            if text is not None:
                return text
            if answer is not None:
                self._out.write_now(answer)
            elif dropped is not None:
                log.warning("uexec mcp: dropped a message with no id to answer: %s", dropped)

    async def _read_line(self) -> bytes | TooLong:
        """One line, or what is kept of one over LINE_LIMIT (the rest read and dropped: memory stays bounded)."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            return end.partial  # EOF: a last line without its newline, or nothing
        except asyncio.LimitOverrunError as over:
            head = await self._reader.read(min(over.consumed, HEAD_BYTES))
            length = len(head) + len(await self._reader.read(over.consumed - len(head)))
        while True:
            try:
                return TooLong(head, length + len(await self._reader.readuntil(b"\n")))
            except asyncio.IncompleteReadError as end:
                return TooLong(head, length + len(end.partial))
            except asyncio.LimitOverrunError as over:
                length += len(await self._reader.read(over.consumed))


class _Out:
    """`write` and `flush`, as the SDK writes its stdout; the transport buffers, `flush` waits while the pipe is full."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _Drain):
        self._transport = transport
        self._protocol = protocol

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))

    def write_now(self, line: bytes) -> None:
        """A whole line of our own (an error answer): the SDK's writes are whole lines too, on this loop, so none interleave."""
        self._transport.write(line)

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


@contextlib.contextmanager
def _wire_aside():
    """(the wire's stdin, its stdout) as descriptors of their own, for the caller to close; meanwhile fd 0 reads the null device and fd 1 writes to stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


@contextlib.asynccontextmanager
async def serve_stdio():
    """The SDK's (read_stream, write_stream) over fd 0 and fd 1, read and written on this loop."""
    if not (_watchable(0) and _watchable(1)):
        # The SDK's threaded transport, on our descriptors: its 1.x moves neither fd 0 nor fd 1 aside itself.
        with _wire_aside() as (wire_in, wire_out):
            with open(wire_in, "r", encoding="utf-8", errors="replace") as stdin, open(wire_out, "w", encoding="utf-8") as stdout:
                async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as streams:
                    yield streams
        return
    loop = asyncio.get_running_loop()
    transports = []
    with _wire_aside() as (wire_in, wire_out):
        try:
            reader = asyncio.StreamReader(limit=LINE_LIMIT)
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0))
            transports.append(transport)
            transport, protocol = await loop.connect_write_pipe(_Drain, os.fdopen(wire_out, "wb", buffering=0))
            transports.append(transport)
            out = _Out(transport, protocol)
            async with stdio_server(_Lines(reader, out), out) as streams:
                yield streams
        finally:
            for transport in transports:
                transport.close()
