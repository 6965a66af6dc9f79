"""The MCP server attached to a real uexec kernel (jupyter_client): the agent's sessions are the notebook's, and the other way round."""

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from ..core.test_agent_format import parse
from ..kernel_harness import Kernel
from .client import connected


@pytest.fixture(scope="module")
def kernel():
    folder = Path(tempfile.mkdtemp(prefix="uexec-test-"))
    os.chmod(folder, 0o700)
    connection_file = str(folder / "kernel-mcp.json")
    running = Kernel("uexec", connection_file=connection_file)
    running.connection_file = connection_file
    running.run("%uexec -t 100 true")  # the engine runs, so its direct socket listens
    yield running
    running.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("carrier", ["direct", "comm"])
async def test_a_session_the_agent_starts_is_listed_in_the_notebook_and_takes_input_from_a_cell(kernel, carrier):
    async with connected("--connection-file", kernel.connection_file, "--carrier", carrier) as agent:
        started = parse(await agent.text("exec_command", cmd="cat", tty=True, login=False, yield_time_ms=500))
        session_id = int(started["session"])
        listed = kernel.run("%uexec_sessions")
        assert str(session_id) in listed and "cat" in listed
        shown = kernel.run(f"%uexec -s {session_id} -t 1000 typed-in-a-cell")
        assert shown.count("typed-in-a-cell") == 2  # the terminal's echo, then cat's: the cell collected them
        assert (await agent.text("read_output", session_id=session_id, tail=2)).count("typed-in-a-cell") == 2
        assert [entry["session_id"] for entry in await agent.sessions()] == [session_id]
        ended = parse(await agent.text("write_stdin", session_id=session_id, chars="\u0004", yield_time_ms=2000))  # EOF: cat ends
        assert ended["exit"] == "0"


@pytest.mark.parametrize("carrier", ["direct", "comm"])
async def test_an_exit_is_told_once_when_no_answer_reported_it_and_not_when_a_poll_did(kernel, carrier):
    async with connected("--connection-file", kernel.connection_file, "--carrier", carrier) as agent:
        polled_id = int(parse(await agent.text("exec_command", cmd="echo start; sleep 0.5; echo done", login=False, yield_time_ms=250))["session"])
        polled = parse(await agent.text("write_stdin", session_id=polled_id))  # an empty write waits for the exit
        assert polled["exit"] == "0" and "done" in polled["output"]
        # Nobody polls this one: its end is told, after the polled one's would have been.
        left_id = int(parse(await agent.text("exec_command", cmd="sleep 0.5; echo bye; exit 3", login=False, yield_time_ms=250))["session"])
        told = await agent.notification(lambda n: n["event"] == "exited" and n["session_id"] == left_id)
        assert told["exit_code"] == 3 and told["lines"] == ["bye"]
        assert [n["session_id"] for n in agent.notifications if n["event"] == "exited"] == [left_id]


@pytest.mark.parametrize("carrier", ["direct", "comm"])
async def test_a_session_started_in_a_cell_is_driven_through_mcp(kernel, carrier):
    kernel.run("%uexec --name person --no-integration -t 500 bash --norc -i")
    async with connected("--connection-file", kernel.connection_file, "--carrier", carrier) as agent:
        (entry,) = [entry for entry in await agent.sessions() if entry["name"] == "person"]
        answer = parse(await agent.text("write_stdin", session_id=entry["session_id"], chars="echo $((6*7))\n", yield_time_ms=1000))
        assert "42" in answer["output"] and answer["session"] == str(entry["session_id"])
        assert "42" in await agent.text("read_output", session_id="person", tail=5)
        assert await agent.text("kill_session", session_id="person") == f"session {entry['session_id']}: closed"
    assert "person" not in kernel.run("%uexec_sessions")


async def test_bad_input_against_the_kernel_is_one_line(kernel):
    async with connected("--connection-file", kernel.connection_file) as agent:
        text, error = await agent.call("write_stdin", session_id=4242, chars="x")
        assert error and text.startswith("write_stdin failed: no session with id 4242") and "\n" not in text
        text, error = await agent.call("exec_command", cmd="true", yield_time_ms=-1)
        assert error and text == "exec_command failed: yield_time_ms must be a non-negative integer, not -1"


async def test_a_kernel_is_found_by_its_id_in_the_runtime_directory(kernel):
    runtime = os.path.dirname(kernel.connection_file)
    async with connected("--kernel", "mcp", env={**os.environ, "JUPYTER_RUNTIME_DIR": runtime}) as agent:
        shown = parse(await agent.text("exec_command", cmd="echo found", login=False))
    assert shown["output"] == "found\n" and shown["exit"] == "0"


async def test_over_the_direct_socket_a_call_does_not_wait_for_a_running_cell(kernel):
    async with connected("--connection-file", kernel.connection_file, "--carrier", "direct") as agent:
        busy = kernel.start_execute("import time; time.sleep(4); print('cell done')")
        try:
            started = asyncio.get_running_loop().time()
            shown = parse(await agent.text("exec_command", cmd="echo while-busy", login=False))
            assert shown["output"] == "while-busy\n" and asyncio.get_running_loop().time() - started < 3
        finally:
            assert "cell done" in kernel.finish_execute(busy).text


async def test_a_kernel_of_a_jupyter_server_is_found_by_url_token_and_id(tmp_path):
    from ..server_process import JupyterServer

    server = JupyterServer(tmp_path)
    try:
        kernel_id = server.api("POST", "api/kernels", {"name": "uexec"})["id"]
        options = ("--server", server.http, "--token", server.token, "--kernel", kernel_id[:8])
        async with connected(*options, env={**os.environ, "JUPYTER_RUNTIME_DIR": str(server.runtime)}) as agent:
            shown = parse(await agent.text("exec_command", cmd="echo via-server", login=False))
        assert shown["output"] == "via-server\n"
        refused = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "unified_exec_kernel", "mcp", "--server", server.http, "--token", "wrong", "--kernel", kernel_id,
            stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )
        _, error = await asyncio.wait_for(refused.communicate(), 60)
        assert refused.returncode == 2 and "HTTP 403" in error.decode() and "--token" in error.decode()
    finally:
        server.stop()


@pytest.mark.parametrize("carrier", ["direct", "comm"])
async def test_an_agents_session_is_listed_by_its_cmd_everywhere_a_person_looks(kernel, carrier):
    async with connected("--connection-file", kernel.connection_file, "--carrier", carrier) as agent:
        session_id = int(parse(await agent.text("exec_command", cmd="sleep 30 # build", yield_time_ms=250))["session"])
        try:
            (entry,) = [entry for entry in await agent.sessions() if entry["session_id"] == session_id]
            assert entry["command"] == "sleep 30 # build"
            (row,) = [line for line in kernel.run("%uexec_sessions").splitlines() if line.startswith(f"{session_id} ")]
            assert "sleep 30 # build" in row and "-lc" not in row
            comm = kernel.comm_open("unified_exec")
            kernel.comm_send(comm, {"type": "list", "request_id": "display"})
            (listed,) = kernel.comm_messages(comm, lambda data: data.get("type") == "sessions")[-1:]
            kernel.comm_close(comm)
            (mine,) = [info for info in listed["sessions"] if info["session_id"] == session_id]
            assert mine["command"] == ["sleep 30 # build"]  # what the Sessions panel shows, whole on hover
        finally:
            await agent.text("kill_session", session_id=session_id)


def documented_mcp_servers() -> dict:
    """The `mcpServers` configuration docs/agents.md shows, as a user pastes it."""
    import json
    import re

    text = (Path(__file__).parents[2] / "docs" / "agents.md").read_text()
    (block,) = [block for block in re.findall(r"```json\n(.*?)```", text, re.S) if "mcpServers" in block]
    return json.loads(block)["mcpServers"]


async def test_the_documented_configuration_works_as_pasted_with_the_sdks_bare_environment(tmp_path, monkeypatch):
    import uuid
    import warnings

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from unified_exec_kernel.mcp.sdk import is_error

    runtime = tmp_path / "rt"  # not Jupyter's default runtime directory, and not passed on: the SDK drops JUPYTER_RUNTIME_DIR
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    kernel_id = str(uuid.uuid4())
    running = Kernel("uexec", connection_file=str(runtime / f"kernel-{kernel_id}.json"))
    try:
        (server,) = documented_mcp_servers().values()
        params = StdioServerParameters(command=server["command"], args=[kernel_id if arg == "KERNEL_ID" else arg for arg in server["args"]])
        assert params.env is None and "KERNEL_ID" in server["args"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool("exec_command", {"cmd": "sleep 30 # pasted", "yield_time_ms": 250})
                    text = "".join(part.text for part in result.content)
                    assert not is_error(result) and "Process running with session ID" in text, text
                    assert "sleep 30 # pasted" in running.run("%uexec_sessions")  # it runs in that kernel
                    await session.call_tool("kill_session", {"session_id": parse(text)["session"]})
    finally:
        running.shutdown()


@pytest.mark.parametrize("carrier", ["direct", "comm"])
async def test_a_cell_waiting_on_a_shared_shell_sees_the_line_an_agent_types_and_the_agent_does_not_wait(kernel, carrier):
    # Not integrated: the cell's typed line does not end its wait, only the agent's line does.
    kernel.run(f"%uexec --name shared-{carrier} --no-integration -t 500 bash --norc -i")
    async with connected("--connection-file", kernel.connection_file, "--carrier", carrier) as agent:
        (entry,) = [entry for entry in await agent.sessions() if entry["name"] == f"shared-{carrier}"]
        # The person's cell waits (25 s at most) for a line only the agent's input prints.
        waiting = kernel.start_execute(f"%%uexec -s shared-{carrier} --until AGENT-42 -t 25000\necho cell-$((2*2))\n")
        await _shows(kernel, waiting, "cell-4")  # its wait has begun: it shows what arrives
        asked = asyncio.get_running_loop().time()
        answer = parse(await agent.text("write_stdin", session_id=entry["session_id"], chars="echo AGENT-$((6*7))\n", yield_time_ms=2000))
        answered = asyncio.get_running_loop().time() - asked
        assert "AGENT-42" in answer["output"]
        # Its keys went in at once (not after the cell's 25 s), and its wall time is the time it took.
        assert answered < 20 and float(answer["wall"]) <= answered
        shown = await asyncio.to_thread(kernel.finish_execute, waiting, 30)
        assert shown.reply["status"] == "ok" and "AGENT-42" in shown.text and "--until matched" in shown.text, shown.text


@pytest.mark.parametrize("carrier", ["direct", "comm"])
async def test_an_agent_waiting_on_a_shared_shell_sees_the_line_a_cell_types_and_the_cell_does_not_wait(kernel, carrier):
    kernel.run(f"%uexec --name handed-{carrier} -t 10000 bash --norc -i")
    async with connected("--connection-file", kernel.connection_file, "--carrier", carrier) as agent:
        (entry,) = [entry for entry in await agent.sessions() if entry["name"] == f"handed-{carrier}"]
        # The agent polls (an empty write_stdin waits at least 5 s) while the person types.
        polling = asyncio.ensure_future(agent.text("write_stdin", session_id=entry["session_id"], chars="", yield_time_ms=10_000))
        await _agent_waits(kernel, entry["session_id"])
        typed = await asyncio.to_thread(kernel.execute, f"%uexec -s handed-{carrier} echo PERSON-$((6*7))", 20)
        assert "PERSON-42" in typed.text and typed.seconds < 20
        polled = parse(await asyncio.wait_for(polling, 60))
        assert "PERSON-42" in polled["output"]


async def _shows(kernel, msg_id: str, text: str) -> None:
    """Until the running cell `msg_id` shows `text` (its messages stay for `finish_execute`)."""
    while True:
        msg = await asyncio.to_thread(kernel.client.get_iopub_msg, timeout=20)
        kernel.backlog.append(msg)
        data = msg["content"].get("data", {})
        if msg["parent_header"].get("msg_id") == msg_id and text in data.get("text/plain", ""):
            return


async def _agent_waits(kernel, session_id: int) -> None:
    """Until the agent's call is collecting from the session (its subscribers grew), asked of the kernel itself."""
    probe = (
        "from unified_exec_kernel.jupyter.current import magics_of; m = magics_of(get_ipython()); "
        f"print(len(m.bridge.call(lambda: m.manager.session({session_id})._subscribers)))"
    )
    baseline = None
    for _ in range(400):
        count = int(kernel.run(probe).strip().splitlines()[-1])
        baseline = count if baseline is None else baseline
        if count >= 4:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the agent's call never began to wait ({baseline} subscribers)")
