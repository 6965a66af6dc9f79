"""A two-minute tour of the engine from plain asyncio: `python -m unified_exec_kernel.demo`."""

from __future__ import annotations

import asyncio

from . import UnifiedExecRequest, UnifiedExecSessionManager, UnknownSessionIdError
from .screen.render import render_terminal_text


def show(title: str, result, *, lines: int = 12) -> None:
    state = f"session {result.session_id} running" if result.session_id is not None else f"exited with code {result.exit_code}"
    print(f"--- {title} ({state}, {result.wall_time * 1000:.0f} ms)")
    shown = render_terminal_text(result.output).splitlines()
    if len(shown) > lines:
        marker = next((i for i, line in enumerate(shown) if "tokens truncated" in line), lines // 2)
        shown = shown[:3] + ["..."] + shown[marker - 1 : marker + 2] + ["..."] + shown[-3:]
    print("\n".join(shown))


async def tour() -> None:
    manager = UnifiedExecSessionManager(env={"PS1": "$ "})
    try:
        show("a one-shot command returns as soon as it exits", await manager.handle_request(
            UnifiedExecRequest(None, ["bash", "-c", "echo hello from a pty; tty"], timeout_ms=60_000)))
        shell = await manager.handle_request(UnifiedExecRequest(None, ["bash", "--norc", "-i"], timeout_ms=500))
        show("an interactive shell stays open", shell)
        sid = shell.session_id
        await manager.handle_request(UnifiedExecRequest(sid, ["export GREETING=kept-between-requests\n"], 300))
        show("state survives between requests", await manager.handle_request(
            UnifiedExecRequest(sid, ["echo $GREETING\n"], 300)))
        show("a slow command: collect what is there so far", await manager.handle_request(
            UnifiedExecRequest(sid, ["for i in 1 2 3; do echo step $i; sleep 0.4; done\n"], 600)))
        show("...and poll for the rest", await manager.handle_request(UnifiedExecRequest(sid, [], 1_000)))
        show("a flood is middle-truncated", await manager.handle_request(
            UnifiedExecRequest(None, ["seq", "1", "100000"], 10_000)))
        show("exit ends the session", await manager.handle_request(UnifiedExecRequest(sid, ["exit 3\n"], 1_000)))
        try:
            await manager.handle_request(UnifiedExecRequest(sid, [], 100))
        except UnknownSessionIdError as error:
            print(f"--- and its id is then unknown: {error}")
    finally:
        await manager.close_all()


if __name__ == "__main__":
    asyncio.run(tour())
