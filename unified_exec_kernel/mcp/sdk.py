"""The official MCP SDK, either generation: 1.x (from 1.24) or 2.x; the one place that knows which.

Why both: jupyter-ai 3.x, in many JupyterLab images, pins `mcp<2.0`
(through fastmcp), while newer Jupyter packages take 2.x; requiring either
would make `pip install unified-exec-kernel` fail beside the other.

What differs, for what we use, is small and all here: the low-level
server takes its handlers as `on_*` arguments and hands each the request's
context in 2.x, where 1.x registers them by request type and keeps the
context in a contextvar; the JSON-RPC validator has another name; 2.x
wraps every message in an OpenTelemetry span. The wire types' fields are
camelCase in 1.x and snake_case with camelCase aliases in 2.x: written
camelCase (as here and in every caller) they build on both. The stdio
transport (`stdio_server(stdin, stdout)`), `send_log_message`, the
initialization options and the client are the same in both.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import mcp.types as types
from mcp.server.lowlevel import Server

GENERATION = 2 if "on_call_tool" in inspect.signature(Server.__init__).parameters else 1


def server(name: str, list_tools: Callable[[], Awaitable[types.ListToolsResult]],
           call_tool: Callable[[object, str, dict | None], Awaitable[types.CallToolResult]]) -> Server:
    """A low-level server answering `tools/list` and `tools/call`; `call_tool(session, name, arguments)`."""
    if GENERATION == 2:
        async def on_list_tools(ctx, params) -> types.ListToolsResult:
            return await list_tools()

        async def on_call_tool(ctx, params) -> types.CallToolResult:
            return await call_tool(ctx.session, params.name, params.arguments)

        made = Server(name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        _untraced(made)
        return made

    made = Server(name)

    # Registered by type, not with 1.x's decorators: those validate arguments with jsonschema
    # first, so a bad input would get the SDK's words instead of the engine's (as on 2.x).
    async def on_list(request) -> types.ServerResult:
        return types.ServerResult(await list_tools())

    async def on_call(request) -> types.ServerResult:
        params = request.params
        return types.ServerResult(await call_tool(made.request_context.session, params.name, params.arguments))

    made.request_handlers[types.ListToolsRequest] = on_list
    made.request_handlers[types.CallToolRequest] = on_call
    return made


def _untraced(made: Server) -> None:
    """Nobody configured tracing: the SDK's span per message records nothing and costs ~0.3 ms a call."""
    from opentelemetry import trace  # 2.x's own dependency

    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        made.middleware = [m for m in made.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]


def validate_message(line: bytes | str) -> None:
    """The SDK's own check of one incoming line (raises pydantic's ValidationError): what it accepts, it reads."""
    if GENERATION == 2:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    else:
        types.JSONRPCMessage.model_validate_json(line)


def is_error(result) -> bool:
    """A client's `CallToolResult` says the call failed (`isError` in 1.x, `is_error` in 2.x)."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))
