"""A result as Codex's newest exec tool reports it to a model.

Programs that drive notebooks (agents) parse this shape already; giving it to
them saves a translation step and the tokens of a second poll. So the text is
exactly Codex's grammar, field by field and in its order (Chunk ID, Wall time,
Process exited with code N or Process running with session ID N, Original
token count, Output): a harness that parses Codex reads every field of ours.
What we know beyond it (a typed command's exit code, a signal's name) is in
the structured result (`UnifiedExecResult.command_exit_code`, `exit_code`) and
the notebook's status line, never in this text. One addition, after the
output, where Codex's grammar reads it as the output's last line: when the
middle was cut and the session keeps a journal, one line says how to read
the whole of it (Codex has no way to fetch that middle at all).
"""

from __future__ import annotations

import json
import secrets

from .models import UnifiedExecResult


def format_for_agent(result: UnifiedExecResult, chunk_id: str | None = None) -> str:
    """`chunk_id`: Codex's id of this piece of output (six hex digits; a fresh one by default)."""
    if result.session_id is not None:
        state = f"Process running with session ID {result.session_id}\n"
    elif result.exit_code is not None:
        state = f"Process exited with code {shell_exit_status(result.exit_code)}\n"
    else:
        state = ""  # Codex too says nothing when the code is unknown
    return (
        f"Chunk ID: {chunk_id or secrets.token_hex(3)}\n"
        f"Wall time: {result.wall_time:.4f} seconds\n"
        f"{state}"
        f"Original token count: {result.original_token_count}\n"
        f"Output:\n{result.output}{rest_hint(result)}"
    )


def rest_hint(result: UnifiedExecResult) -> str:
    """The one line saying how to read what the cut left out ('' when nothing was cut or kept)."""
    if result.journal_range is None:
        return ""
    key, start, end = result.journal_range
    newline = "" if not result.output or result.output.endswith("\n") else "\n"
    return (
        f"{newline}[The middle was cut; all of it: %uexec_output {key} --bytes {start}:{end}, "
        f'or the comm\'s read request {{"session_id": {json.dumps(key)}, "start": {start}, "end": {end}}}]\n'
    )


def shell_exit_status(exit_code: int) -> int:
    """The status a shell (and Codex) reports: 128 + N for a program killed by signal N.

    The engine keeps Python's negative code for a signal; a model has learnt
    `130` for Ctrl-C, so that is what it reads.
    """
    return exit_code if exit_code >= 0 else 128 - exit_code
