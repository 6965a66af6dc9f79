"""The official SDK's own client over stdio, speaking to `python -m unified_exec_kernel mcp` as an agent's harness would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import warnings

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from unified_exec_kernel.mcp.sdk import is_error


class Agent:
    """A connected client: `call` a tool (its text and whether it is an error), `notifications` as they came."""

    def __init__(self, session: ClientSession):
        self.session = session
        self.notifications: list[dict] = []

    async def call(self, tool: str, **arguments) -> tuple[str, bool]:
        result = await self.session.call_tool(tool, arguments)
        return "".join(part.text for part in result.content), is_error(result)

    async def text(self, tool: str, **arguments) -> str:
        text, error = await self.call(tool, **arguments)
        assert not error, text
        return text

    async def sessions(self) -> list[dict]:
        return json.loads(await self.text("list_sessions"))

    async def notification(self, predicate, timeout: float = 15) -> dict:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for found in self.notifications:
                if predicate(found):
                    return found
            assert loop.time() < deadline, f"no such notification within {timeout}s; got {self.notifications}"
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def connected(*options: str, env: dict | None = None):
    """An MCP server in a subprocess, started with `options`, and a client session to it; both ended after."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "unified_exec_kernel", "mcp", *options], env=env)
    holder: list[Agent] = []

    async def on_log(params) -> None:
        if params.logger == "uexec":
            holder[0].notifications.append(params.data)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log) as session:
                await session.initialize()
                agent = Agent(session)
                holder.append(agent)
                yield agent
