"""A result as Codex's newest exec tool reports it to a model.

Programs that drive notebooks (agents) parse this shape already; giving it to
them saves a translation step and the tokens of a second poll.
"""

from __future__ import annotations

from .models import UnifiedExecResult


def format_for_agent(result: UnifiedExecResult) -> str:
    if result.session_id is not None:
        state = f"Process running with session ID {result.session_id}"
    elif result.exit_code is not None:
        state = f"Process exited with code {result.exit_code}"
    else:
        state = "Process exited"
    return (
        f"Wall time: {result.wall_time:.4f} seconds\n"
        f"{state}\n"
        f"Original token count: {result.original_token_count}\n"
        f"Output:\n{result.output}"
    )
