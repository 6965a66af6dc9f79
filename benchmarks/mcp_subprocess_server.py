"""The second baseline of bench_agent.py: what a shell MCP server does, on the same SDK.

One tool, `run`, that does a bare `subprocess.run(["/bin/bash", "-c", cmd])`
and answers its output: the official SDK's low-level server over the SDK's
own stdio transport, in its own process, called through the same SDK stdio
client as ours. Against it, our `exec_command` figure says what our engine
and server cost beyond the least any MCP shell tool can do.
"""

from __future__ import annotations

import asyncio
import subprocess

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
    return types.ListToolsResult(tools=[types.Tool(name="run", description="Runs a shell command.", input_schema=schema)])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    done = subprocess.run(["/bin/bash", "-c", params.arguments["cmd"]], capture_output=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=done.stdout.decode())])


async def main() -> None:
    server = Server("subprocess-baseline", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
