"""A tiny agent harness on the engine alone: no Jupyter, just asyncio, and no polling.

An agent decides what to type from what it reads. Here the "agent" is a
fixed plan, but the loop is the real one: start a shell, send a command,
read the result (agent format, as Codex's exec tool reports it), decide.
With shell integration each typed command answers when it is done, and the
structured result beside the text holds its exit code; a long job in another session is waited on with a watch that
fires when its marker appears, not by polling or sleeping blindly.

    python examples/agent_harness.py
"""

from __future__ import annotations

import asyncio
import re

from unified_exec_kernel import UnifiedExecSessionManager
from unified_exec_kernel.core.agent_format import format_for_agent
from unified_exec_kernel.screen.render import render_terminal_text


async def run_plan() -> tuple[list[str], list[int | None]]:
    """What the agent read, and each typed command's exit code (None: no command ended)."""
    transcript: list[str] = []
    statuses: list[int | None] = []
    manager = UnifiedExecSessionManager(env={"PS1": "$ "}, shell_integration=True)

    def read(result):
        report = format_for_agent(result)
        transcript.append(report)
        statuses.append(result.command_exit_code)
        return report

    try:
        shell = await manager.start(["bash", "--norc", "-i"], name="work")
        read(shell)
        read(await manager.write("work", "cd \"$(mktemp -d)\" && printf 'alpha\\nbeta\\n' > notes.txt\n"))
        result = await manager.write("work", "wc -l < notes.txt\n")
        read(result)
        # Read what a terminal would show, not the raw escape sequences.
        lines = int(re.search(r"^(\d+)$", render_terminal_text(result.output), re.M).group(1))
        # A decision made from what was read; a failing command says so.
        read(await manager.write("work", f"echo 'the file has {lines} lines'; test {lines} -eq 2\n"))
        # A long job in its own session: watch it instead of polling it.
        job = await manager.start(["bash", "-c", "for i in 1 2 3; do sleep 0.3; echo step-$i; done; echo job-$((40+2)); sleep 30"], timeout_ms=0, name="job")
        read(job)
        read(await manager.watch("job", until=r"job-\d+"))
        await manager.kill("job")
        read(await manager.write("work", "exit 0\n"))
    finally:
        await manager.close_all()
    return transcript, statuses


if __name__ == "__main__":
    transcript, statuses = asyncio.run(run_plan())
    for step, status in zip(transcript, statuses):
        print(step.replace("\r\n", "\n"))
        print(f"---------------------------------------- command exit code: {status}")
