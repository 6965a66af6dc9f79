"""The server's stdio transport: read and written on the loop (no worker thread), the wire kept from stray output."""

import sys
import textwrap
import warnings

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# A server on our transport whose one tool prints to fd 1, reads fd 0 and says how many threads run.
SERVER = textwrap.dedent(
    """
    import asyncio, os, threading
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from unified_exec_kernel.mcp.stdio import serve_stdio

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="probe", description="probe", input_schema={"type": "object"})])

    async def call_tool(ctx, params):
        os.write(1, b"stray output\\n")  # must not reach the wire
        stdin = os.read(0, 100)  # the null device: EOF, not the client's next message
        text = f"threads={threading.active_count()} stdin={stdin!r} size={len(params.arguments.get('blob', ''))}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def main():
        server = Server("probe", on_list_tools=list_tools, on_call_tool=call_tool)
        async with serve_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    asyncio.run(main())
    """
)


async def test_messages_go_over_pipes_on_the_loop_and_fd_0_and_1_are_out_of_the_way():
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                answers = [(await session.call_tool("probe", {"blob": "x" * size})).content[0].text for size in (0, 3_000_000)]
    # The SDK's own transport runs a worker thread for each read, write and flush: here there is none.
    assert answers == ["threads=1 stdin=b'' size=0", "threads=1 stdin=b'' size=3000000"]
