"""The SDK either generation: the installed one's server answers as ours expects, its validator and results read alike.

The whole tests/mcp suite runs on whichever SDK is installed (2.x with the
test extra); the fresh environment of test_install_beside_jupyter_ai.py runs
the server on 1.x.
"""

import importlib.metadata
import warnings

import anyio
import pydantic
import pytest
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from unified_exec_kernel.mcp import sdk
from unified_exec_kernel.mcp.sdk import types


def test_the_generation_is_the_installed_sdks_major_version():
    assert sdk.GENERATION == int(importlib.metadata.version("mcp").split(".")[0])


async def test_the_server_lists_calls_and_notifies_through_the_handlers_it_was_given():
    calls, logged = [], []

    async def list_tools():
        return types.ListToolsResult(tools=[types.Tool(name="t", description="d", inputSchema={"type": "object"})])

    async def call_tool(session, name, arguments):
        calls.append((name, arguments))
        await session.send_log_message("info", {"event": "probe"}, logger="uexec")  # as server.py notifies
        return types.CallToolResult(content=[types.TextContent(type="text", text="no")], isError=True)

    async def on_log(params):
        logged.append((params.logger, params.data))

    server = sdk.server("probe", list_tools, call_tool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2.x: logging is deprecated for the newest protocol era
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            async with anyio.create_task_group() as group:
                group.start_soon(server.run, *server_streams, server.create_initialization_options())
                with anyio.fail_after(30):
                    async with ClientSession(*client_streams, logging_callback=on_log) as client:
                        initialized = await client.initialize()
                        (listed,) = (await client.list_tools()).tools
                        result = await client.call_tool("t", {"a": 1})
                group.cancel_scope.cancel()
    assert initialized.model_dump(by_alias=True)["serverInfo"]["name"] == "probe"
    assert listed.model_dump(by_alias=True)["inputSchema"] == {"type": "object"}
    assert sdk.is_error(result) and result.content[0].text == "no"
    assert calls == [("t", {"a": 1})] and logged == [("uexec", {"event": "probe"})]


def test_a_json_rpc_request_passes_the_check_and_a_broken_one_does_not():
    sdk.validate_message(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    sdk.validate_message('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for broken in (b'{"jsonrpc":"2.0","id":1}', b"[1,2]", b'{"jsonrpc":"1.0","id":1,"method":"x"}'):
        with pytest.raises(pydantic.ValidationError):
            sdk.validate_message(broken)


def test_a_result_built_with_camel_case_names_reads_as_an_error_or_not():
    text = [types.TextContent(type="text", text="x")]
    assert sdk.is_error(types.CallToolResult(content=text, isError=True))
    assert not sdk.is_error(types.CallToolResult(content=text))
    dumped = types.CallToolResult(content=text, isError=True).model_dump(by_alias=True, exclude_none=True)
    assert dumped["isError"] is True  # the wire name, either generation
