"""A tiny agent harness on the engine alone: no Jupyter, just asyncio.

An agent decides what to type from what it reads. Here the "agent" is a
fixed plan, but the loop is the real one: start a shell, send a command,
read the result (agent format, as Codex's exec tool reports it), decide, and
poll a long job instead of sleeping blindly.

    python examples/agent_harness.py
"""

from __future__ import annotations

import asyncio
import re

from unified_exec_kernel import UnifiedExecRequest, UnifiedExecSessionManager
from unified_exec_kernel.core.agent_format import format_for_agent
from unified_exec_kernel.render import render_terminal_text


async def run_plan() -> list[str]:
    transcript = []
    manager = UnifiedExecSessionManager(env={"PS1": "$ "})
    try:

        async def tool(session_id, text, timeout_ms):
            chunks = [text] if session_id is not None and text else (text.split() if text else [])
            result = await manager.handle_request(UnifiedExecRequest(session_id, chunks, timeout_ms))
            report = format_for_agent(result)
            transcript.append(report)
            return result, report

        shell, _ = await tool(None, "bash --norc -i", 500)
        sid = shell.session_id
        await tool(sid, "cd \"$(mktemp -d)\" && printf 'alpha\\nbeta\\n' > notes.txt\n", 500)
        result, _ = await tool(sid, "wc -l < notes.txt\n", 500)
        # Read what a terminal would show, not the raw escape sequences.
        lines = int(re.search(r"^(\d+)$", render_terminal_text(result.output), re.M).group(1))
        # A decision made from what was read:
        await tool(sid, f"echo 'the file has {lines} lines'\n", 500)
        # A long job: start it, then poll until its marker shows, not a fixed sleep.
        await tool(sid, "for i in 1 2 3; do sleep 0.3; echo step-$i; done; echo job-$((40+2))\n", 100)
        for _ in range(20):
            _, report = await tool(sid, "", 400)
            if "job-42" in report:
                break
        _, report = await tool(sid, "exit 0\n", 2000)
        assert "Process exited with code 0" in report
    finally:
        await manager.close_all()
    return transcript


if __name__ == "__main__":
    for step in asyncio.run(run_plan()):
        print(step.replace("\r\n", "\n"))
        print("-" * 40)
