"""A result as Codex's newest exec tool reports it to a model.

Programs that drive notebooks (agents) parse this shape already; giving it to
them saves a translation step and the tokens of a second poll.
"""

from __future__ import annotations

import signal

from .models import UnifiedExecResult


def format_for_agent(result: UnifiedExecResult) -> str:
    if result.session_id is not None:
        state = f"Process running with session ID {result.session_id}"
        if result.command_exit_code is not None:
            state += f"\nCommand exited with code {shell_exit_status(result.command_exit_code)}"
    elif result.exit_code is not None:
        state = f"Process exited with code {shell_exit_status(result.exit_code)}"
    else:
        state = "Process exited"
    return (
        f"Wall time: {result.wall_time:.4f} seconds\n"
        f"{state}\n"
        f"Original token count: {result.original_token_count}\n"
        f"Output:\n{result.output}"
    )


def shell_exit_status(exit_code: int) -> str:
    """The status a shell (and Codex) reports: 128 + N for a program killed by signal N.

    The engine keeps Python's negative code for a signal; a model has learnt
    `130` for Ctrl-C, so that is what it reads, with the signal's name.
    """
    if exit_code >= 0:
        return str(exit_code)
    try:
        name = f" ({signal.Signals(-exit_code).name})"
    except ValueError:
        name = ""
    return f"{128 - exit_code}{name}"
