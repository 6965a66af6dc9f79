"""The server's stdio transport: read and written on the loop (no worker thread), the wire kept from stray output."""

import json
import subprocess
import sys
import textwrap
import time
import warnings

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# A server on our transport whose one tool prints to fd 1, reads fd 0 and says how many threads run.
SERVER = textwrap.dedent(
    """
    import asyncio, os, threading
    from unified_exec_kernel.mcp import sdk
    from unified_exec_kernel.mcp.sdk import types
    from unified_exec_kernel.mcp.stdio import serve_stdio

    async def list_tools():
        return types.ListToolsResult(tools=[types.Tool(name="probe", description="probe", inputSchema={"type": "object"})])

    async def call_tool(session, name, arguments):
        os.write(1, b"stray output\\n")  # must not reach the wire
        stdin = os.read(0, 100)  # the null device: EOF, not the client's next message
        text = f"threads={threading.active_count()} stdin={stdin!r} size={len(arguments.get('blob', ''))}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def main():
        server = sdk.server("probe", list_tools, call_tool)
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


def test_on_a_regular_file_the_sdks_transport_serves_and_fd_1_is_still_out_of_the_way(tmp_path):
    # stdout a regular file (no loop can watch it): the SDK's own transport, given our descriptors. Its 1.x
    # alone would leave fd 1 on the wire, and the tool's stray print would land in the answers.
    answers = tmp_path / "answers.jsonl"
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "file", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "probe", "arguments": {}}},
    ]
    with answers.open("wb") as sink:
        server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.PIPE)
    try:
        server.stdin.write(b"".join(json.dumps(request).encode() + b"\n" for request in requests))
        server.stdin.flush()  # stdin stays open (a pipe): the answers are read before the server ends
        deadline = time.monotonic() + 60
        while answers.read_bytes().count(b"\n") < 2 and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.05)
    finally:
        try:
            stderr = server.communicate(timeout=30)[1]  # closes its stdin: the server ends
        except subprocess.TimeoutExpired:
            server.kill()
            stderr = server.communicate()[1]
    lines = answers.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2], lines
    assert "stdin=b''" in json.loads(lines[1])["result"]["content"][0]["text"]
    assert b"stray output" in stderr
