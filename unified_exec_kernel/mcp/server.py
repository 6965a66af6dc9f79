"""The MCP server: tools listed, calls dispatched to an engine, every failure one line.

Speaks MCP over stdio with the official SDK's low-level server (1.x or
2.x: sdk.py), so the tool schemas are exactly ours (Codex's names, defaults and descriptions,
tools.py). An engine (standalone.py, or attached.py for a kernel's
sessions) does the work; here a call becomes a text result, and anything
it raises becomes one line in an error result: a model's bad input never
ends the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import warnings

from ..core import codex_profile as codex
from . import sdk
from .notify import Notifier
from .sdk import types
from .stdio import serve_stdio
from .tools import TOOLS
from ..core.errors import one_line, quoted

log = logging.getLogger(__name__)

NAME = "unified-exec"


class Service:
    """One client's server: the engine, the notifier, and the session notifications go to."""

    def __init__(self, make_engine):
        self._session = None  # the client's, learnt from its first request
        self.notifier = Notifier(self._notify)
        self.engine = make_engine(self.notifier)

    async def _notify(self, data: dict) -> None:
        if self._session is None:
            return  # nobody asked for anything yet: nobody started a session
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated for the newest protocol era; our clients speak the handshake era
            await self._session.send_log_message("info", data, logger="uexec")

    async def list_tools(self) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, description=spec["description"], inputSchema=spec["inputSchema"]) for name, spec in TOOLS.items()]
        )

    async def call_tool(self, session, name: str, arguments: dict | None) -> types.CallToolResult:
        self._session = session
        arguments = arguments or {}
        method = getattr(self.engine, name, None) if name in TOOLS else None
        if method is None:
            return _error(f"unknown tool {quoted(name)}; expected one of {', '.join(TOOLS)}")
        try:
            answer = await method(dict(arguments))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - one line to the model, the server lives on
            failed = codex.failure(name, error)
            log.warning("uexec mcp: %s", failed)  # the handler (stderr_log.py) writes one bounded line, or none while stderr is full
            log.debug("uexec mcp: %s failed", name, exc_info=error)
            return _error(failed)
        text = answer if isinstance(answer, str) else json.dumps(answer, indent=1)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=one_line(text))], isError=True)


async def serve(make_engine) -> None:
    """Serve one client over stdin and stdout until it goes away; then end every session."""
    service = Service(make_engine)
    server = sdk.server(NAME, service.list_tools, service.call_tool)
    try:
        async with serve_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await service.engine.close()
