"""Agent-face benchmarks (issue 27): an MCP call against the paths under it, measured in the same run.

    python benchmarks/bench_agent.py              # all cases
    python benchmarks/bench_agent.py standalone   # some: standalone attached restart stdin

- `standalone`: `exec_command` of `echo hi` (bash -c, no login) through the MCP
  server's own engine, from the official SDK's client over stdio, against two
  baselines measured in the same run, calls interleaved round-robin (so a
  change of the machine's load reaches every figure alike): a bare
  `subprocess.run` of the same `bash -c 'echo hi'` (the issue's goal: <= 1.5x),
  and an MCP tool that does that `subprocess.run` (mcp_subprocess_server.py:
  the same SDK server, its own stdio transport, the same client), which is
  what a shell MCP server costs. Beside them, the same two calls from a lean
  client (`LeanClient`: a JSON line out, a line back, as a compiled client
  such as Codex's costs), and `sdk_client_floor_ratio`: the SDK client's empty
  call plus the bare command, over the bare command, which no server under
  that client can beat.
- `attached`: the same call through an MCP server attached to a uexec kernel
  (over its direct socket, the default, and over its comm), against the same
  `exec` (`"profile": "codex"`) sent straight to the kernel's comm from
  jupyter_client. Goal (issue 33): <= 0.8x.
- `restart`: an MCP server attached to a kernel across Restart Kernel
  (jupyter_client's polite restart, no kept sessions: the new kernel's engine
  starts when the server opens its comm): the time from the new kernel's
  first kernel_info reply to the agent's first answered `exec_command`,
  median of RESTARTS (goal: <= 2 s), beside the same call without a restart.
- `stdin`: a `write_stdin` round trip into a running `python3 -i` (tty), with
  the smallest yield (250 ms: Codex waits the whole yield for a write with text,
  so the floor is the yield, and the figure says what the round trip adds).

Medians of N calls after warm-up; each figure beside its baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

N = 30
RESTARTS = 5
ROUNDS = 200  # standalone: interleaved rounds (the figures are medians)
ECHO = {"cmd": "echo hi", "login": False, "shell": "/bin/bash"}


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


@contextlib.asynccontextmanager
async def mcp_client(*options: str, args: list[str] | None = None):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=args or ["-m", "unified_exec_kernel", "mcp", *options])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


class LeanClient:
    """MCP over stdio with nothing in between: a JSON line out, a JSON line back, on blocking pipes.

    What a compiled client (Codex's Rust one) costs, next to the Python SDK's
    client: the SDK's empty call (`mcp_noop_call_ms`) is ~0.75 ms here, more
    than half a bare `subprocess.run`, in the client alone. With this client
    the figure is what the server adds.
    """

    def __init__(self, *options: str):
        self._process = subprocess.Popen(
            [sys.executable, "-m", "unified_exec_kernel", "mcp", *options], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._ids = iter(range(1, 1 << 62))
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict) -> None:
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        self._process.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        request_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            answer = json.loads(self._process.stdout.readline())
            if answer.get("id") == request_id:  # (a notification may come first)
                assert "result" in answer, answer
                return answer["result"]

    def call(self, tool: str, arguments: dict) -> None:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not result.get("isError"), result

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(timeout=30)


async def timed_calls(session, tool: str, arguments: dict, n: int = N) -> float:
    samples = []
    for _ in range(n + 3):
        started = time.perf_counter()
        result = await session.call_tool(tool, arguments)
        samples.append(time.perf_counter() - started)
        assert not result.is_error, result.content[0].text
    return median_ms(samples[3:])


async def engine_exec() -> float:
    """The same exec_command in this process, on the engine alone (no MCP, no JSON)."""
    from unified_exec_kernel.core import codex_profile as codex
    from unified_exec_kernel.core.manager import UnifiedExecSessionManager

    manager = UnifiedExecSessionManager(max_sessions=codex.MAX_PROCESSES)
    request = codex.ExecCommand.from_arguments(ECHO)
    samples = []
    try:
        for _ in range(N + 3):
            started = time.perf_counter()
            await codex.exec_command(manager, request)
            samples.append(time.perf_counter() - started)
    finally:
        await manager.close_all()
    return median_ms(samples[3:])


async def standalone() -> dict:
    """Ours, the bare subprocess.run and the MCP subprocess.run tool, one call each per round."""
    engine = await engine_exec()
    baseline_server = str(Path(__file__).resolve().parent / "mcp_subprocess_server.py")
    lean = LeanClient()
    async with mcp_client() as ours, mcp_client(args=[baseline_server]) as shell_tool:

        def bare() -> None:
            subprocess.run(["/bin/bash", "-c", "echo hi"], capture_output=True, check=True)

        async def call(session, tool: str, arguments: dict) -> None:
            result = await session.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text

        cases = {
            "mcp_exec_ms": lambda: call(ours, "exec_command", ECHO),
            "bare_subprocess_ms": bare,
            "mcp_subprocess_tool_ms": lambda: call(shell_tool, "run", {"cmd": "echo hi"}),
            # The SDK's own floor: a call that starts nothing (an empty session list).
            "mcp_noop_call_ms": lambda: call(ours, "list_sessions", {}),
            "lean_client_exec_ms": lambda: lean.call("exec_command", ECHO),
            "lean_client_noop_call_ms": lambda: lean.call("list_sessions", {}),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(ROUNDS + 5):
            for name, case in cases.items():
                started = time.perf_counter()
                done = case()
                if done is not None:
                    await done
                samples[name].append(time.perf_counter() - started)
    lean.close()
    figures = {name: median_ms(values[5:]) for name, values in samples.items()}
    mcp, bare_ms, tool = figures["mcp_exec_ms"], figures["bare_subprocess_ms"], figures["mcp_subprocess_tool_ms"]
    return {
        "case": "standalone", "rounds": ROUNDS, **figures,
        "ratio_vs_bare": round(mcp / bare_ms, 2), "goal_vs_bare": "<= 1.5",
        "lean_client_ratio_vs_bare": round(figures["lean_client_exec_ms"] / bare_ms, 2),
        # The floor of any server under the SDK's client: its empty call plus the bare command.
        "sdk_client_floor_ratio": round((figures["mcp_noop_call_ms"] + bare_ms) / bare_ms, 2),
        "ratio_vs_mcp_subprocess_tool": round(mcp / tool, 2),
        "engine_exec_ms": engine, "engine_ratio_vs_bare": round(engine / bare_ms, 2),
    }


async def attached() -> dict:
    from jupyter_client import KernelManager
    from jupyter_client.asynchronous import AsyncKernelClient

    folder = tempfile.mkdtemp(prefix="uexec-bench-")
    connection_file = os.path.join(folder, "kernel-bench.json")
    kernel = KernelManager(kernel_name="uexec", connection_file=connection_file)
    kernel.start_kernel()
    try:
        client = AsyncKernelClient(connection_file=connection_file)
        client.load_connection_file()
        client.start_channels(hb=False)  # a heartbeat late under load is no dead kernel: kernel_info answers tell
        await client.wait_for_ready(timeout=60)
        comm_id = uuid.uuid4().hex
        client.shell_channel.send(client.session.msg("comm_open", {"comm_id": comm_id, "target_name": "unified_exec", "data": {}}))

        async def comm_exec(rid: str) -> None:
            message = {"type": "exec", "profile": "codex", "session_id": None, "request_id": rid, **ECHO}
            client.shell_channel.send(client.session.msg("comm_msg", {"comm_id": comm_id, "data": message}))
            while True:
                msg = await client.get_iopub_msg(timeout=30)
                data = msg["content"].get("data") or {}
                if msg["msg_type"] == "comm_msg" and data.get("request_id") == rid and data.get("type") in ("result", "error"):
                    assert data["type"] == "result", data
                    return

        samples = []
        for index in range(N + 3):
            started = time.perf_counter()
            await comm_exec(f"bench-{index}")
            samples.append(time.perf_counter() - started)
        comm = median_ms(samples[3:])
        client.stop_channels()
        async with mcp_client("--connection-file", connection_file, "--carrier", "direct") as session:
            direct = await timed_calls(session, "exec_command", ECHO)
        async with mcp_client("--connection-file", connection_file, "--carrier", "comm") as session:
            over_comm = await timed_calls(session, "exec_command", ECHO)
    finally:
        kernel.shutdown_kernel(now=True)
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "case": "attached", "mcp_direct_exec_ms": direct, "mcp_comm_exec_ms": over_comm, "comm_exec_ms": comm,
        "ratio": round(direct / comm, 2), "ratio_over_comm": round(over_comm / comm, 2), "goal": "<= 0.8",
    }


async def restart() -> dict:
    from jupyter_client import KernelManager
    from jupyter_client.asynchronous import AsyncKernelClient

    folder = tempfile.mkdtemp(prefix="uexec-bench-")
    connection_file = os.path.join(folder, "kernel-bench.json")
    kernel = KernelManager(kernel_name="uexec", connection_file=connection_file)
    kernel.start_kernel()
    client = AsyncKernelClient(connection_file=connection_file)
    client.load_connection_file()
    client.start_channels(hb=False)
    try:
        await client.wait_for_ready(timeout=60)
        async with mcp_client("--connection-file", connection_file) as session:
            steady = await timed_calls(session, "exec_command", ECHO)
            after = []
            for _ in range(RESTARTS):
                await asyncio.to_thread(kernel.restart_kernel)
                ready = await first_kernel_info(client)
                result = await session.call_tool("exec_command", ECHO)
                after.append(time.perf_counter() - ready)
                assert not result.is_error, result.content[0].text
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=True)
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "case": "restart", "first_call_after_ready_ms": median_ms(after), "each_ms": [round(x * 1000) for x in after],
        "steady_call_ms": steady, "goal_ms": "<= 2000",
    }


async def first_kernel_info(client) -> float:
    """When the (new) kernel first answers a kernel_info on its shell channel (time.perf_counter()), asked every 50 ms."""
    asked = set()
    while True:
        request = client.session.msg("kernel_info_request", {})
        asked.add(request["header"]["msg_id"])
        client.shell_channel.send(request)
        deadline = time.perf_counter() + 0.05
        while time.perf_counter() < deadline:
            try:
                reply = await client.get_shell_msg(timeout=max(deadline - time.perf_counter(), 0.001))
            except Exception:  # noqa: BLE001 - queue.Empty: ask again
                break
            if reply["parent_header"].get("msg_id") in asked:
                return time.perf_counter()


async def stdin() -> dict:
    async with mcp_client() as session:
        started = await session.call_tool("exec_command", {"cmd": "python3 -i -q", "tty": True, "login": False, "yield_time_ms": 1000})
        text = started.content[0].text
        session_id = int(text.split("Process running with session ID ")[1].split()[0])
        round_trip = await timed_calls(session, "write_stdin", {"session_id": session_id, "chars": "1+1\n", "yield_time_ms": 250}, n=10)
    return {"case": "stdin", "write_stdin_ms": round_trip, "yield_floor_ms": 250, "added_ms": round(round_trip - 250, 2)}


CASES = {"standalone": standalone, "attached": attached, "restart": restart, "stdin": stdin}


def main(names: list[str]) -> None:
    unknown = [name for name in names if name not in CASES]
    if unknown:
        sys.exit(f"unknown case {', '.join(unknown)}; choose from {', '.join(CASES)}")
    one, five, fifteen = os.getloadavg()
    print(f"# bench_agent on {os.cpu_count()} cores, load average {one:.2f} {five:.2f} {fifteen:.2f}; medians", flush=True)
    for name in names or list(CASES):
        print(asyncio.run(CASES[name]()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
