"""Slow, on purpose: `pip install` of the project beside jupyter-ai 3.2 in a fresh environment resolves, and the MCP face serves there.

jupyter-ai 3.2 (in many JupyterLab images) brings fastmcp, which pins
`mcp<2.0`; when we required 2.x pip ended in ResolutionImpossible. Here
pip's normal resolver (no --no-deps) installs both at once, so the install
itself proves they fit; then that environment's own SDK client starts
`python -m unified_exec_kernel mcp` from it, lists the tools and runs
`echo` through `exec_command`, on the 1.x SDK the resolver chose.

The slowest test of tests/mcp, bounded by its timeouts: measured on a
loaded 2-core machine (load ~10), the install 115 s (258 s the first
time), the whole test 220 s, 56 s of it removing the environment. pip's own
cache is used (no --no-cache-dir) and shared with later runs.
"""

from __future__ import annotations

import json

import pytest

from ..core.test_agent_format import parse
from ..test_packaging import REPO, sandbox  # noqa: F401 - sandbox is the fixture: a temporary directory, its processes ended

JUPYTER_AI = "jupyter-ai==3.2.0"

# Run by the fresh environment's python: its SDK's client, its server, one echo.
CLIENT = """
import asyncio, importlib.metadata, json, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from unified_exec_kernel.mcp.sdk import is_error

async def main():
    # The whole environment passed on (the SDK's default drops most): the sandbox's marker reaches the server.
    params = StdioServerParameters(command=sys.executable, args=["-m", "unified_exec_kernel", "mcp"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = sorted(tool.name for tool in (await session.list_tools()).tools)
            result = await session.call_tool("exec_command", {"cmd": "echo beside-$((6*7))", "yield_time_ms": 5000})
    return {
        "mcp": importlib.metadata.version("mcp"),
        "jupyter-ai": importlib.metadata.version("jupyter-ai"),
        "tools": tools,
        "text": "".join(part.text for part in result.content),
        "error": is_error(result),
    }

print(json.dumps(asyncio.run(asyncio.wait_for(main(), 120))))
"""


@pytest.mark.timeout(1500)
def test_installs_beside_jupyter_ai_and_serves_mcp_on_the_sdk_it_pins(sandbox):  # noqa: F811 - the imported fixture
    box = sandbox
    venv = box.make_venv()
    python = venv / "bin" / "python"
    box.run("install beside jupyter-ai", [python, "-m", "pip", "install", JUPYTER_AI, REPO], cwd=box.root, env=box.environ(venv), timeout=1200)
    box.run("pip check", [python, "-m", "pip", "check"], cwd=box.root, env=box.environ(venv), timeout=120)
    client = box.root / "client.py"
    client.write_text(CLIENT)
    output = box.run("the MCP face", [python, client], cwd=box.root, env=box.environ(venv), timeout=180)
    found = json.loads(output.strip().splitlines()[-1])

    assert found["jupyter-ai"] == "3.2.0" and found["mcp"].split(".")[0] == "1", found  # the 1.x jupyter-ai pins
    assert found["tools"] == ["exec_command", "kill_session", "list_sessions", "read_output", "watch_output", "write_stdin"], found
    answer = parse(found["text"])
    assert not found["error"] and (answer["exit"], answer["output"]) == ("0", "beside-42\n"), found
