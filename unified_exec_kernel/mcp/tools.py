"""The tools an MCP client sees: Codex's two with its names, defaults and descriptions, and ours.

The schemas are JSON Schema as MCP lists them. `exec_command` and
`write_stdin` are Codex's (core/codex_profile.py holds their defaults and
limits); `list_sessions`, `read_output`, `kill_session` and `watch_output`
are what an agent needs beyond them (what Codex's `/ps` shows, a journal's
pages, an end, a notification instead of a poll).
"""

from __future__ import annotations

from ..core import codex_profile as codex

_MAX_TOKENS = {"type": "number", "description": "Maximum number of tokens to return. Excess output will be truncated."}
_YIELD = {"type": "number", "description": "How long to wait (in milliseconds) for output before yielding."}
_SESSION = {"type": "number", "description": "Identifier of the running unified exec session."}

TOOLS: dict[str, dict] = {
    "exec_command": {
        "description": codex.EXEC_COMMAND_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "cmd": {"type": "string", "description": "Shell command to execute."},
                "workdir": {"type": "string", "description": "Optional working directory to run the command in; defaults to the turn cwd."},
                "shell": {"type": "string", "description": "Shell binary to launch. Defaults to the user's default shell."},
                "tty": {
                    "type": "boolean",
                    "description": "Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process.",
                },
                "login": {"type": "boolean", "description": "Whether to run the shell with -l/-i semantics. Defaults to true."},
                "yield_time_ms": _YIELD,
                "max_output_tokens": _MAX_TOKENS,
            },
            "required": ["cmd"],
            "additionalProperties": False,
        },
    },
    "write_stdin": {
        "description": codex.WRITE_STDIN_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "session_id": _SESSION,
                "chars": {"type": "string", "description": "Bytes to write to stdin (may be empty to poll)."},
                "yield_time_ms": _YIELD,
                "max_output_tokens": _MAX_TOKENS,
            },
            "required": ["session_id"],
            "additionalProperties": False,
        },
    },
    "list_sessions": {
        "description": "Lists the background terminals: id, name, command, cwd, pid, running or exit code, age, CPU %, RSS, listening TCP ports, the last 3 lines.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
    },
    "read_output": {
        "description": (
            "Reads a session's whole output from its journal, also after it ended: one of head, tail, "
            "lines (\"A:B\", 1-based) or bytes (\"START:END\"), optionally one command's output (1-based, -1 the last), "
            "filtered by grep (a regex) with context lines."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "session_id": {"type": ["number", "string"], "description": "The session's id or name."},
                "head": {"type": "number", "description": "The first N lines."},
                "tail": {"type": "number", "description": "The last N lines."},
                "lines": {"type": "string", "description": "Lines A:B (1-based, inclusive; A: to the end)."},
                "bytes": {"type": "string", "description": "Output bytes START:END."},
                "command": {"type": "number", "description": "Only this command's output (1-based; -1 is the last)."},
                "grep": {"type": "string", "description": "Only lines matching this regular expression."},
                "context": {"type": "number", "description": "Lines of context around each grep match."},
            },
            "required": ["session_id"],
            "additionalProperties": False,
        },
    },
    "kill_session": {
        "description": "Ends a session and every process in it (or just sends it a signal, such as SIGINT).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "session_id": {"type": ["number", "string"], "description": "The session's id or name."},
                "signal": {"type": "string", "description": "Send this signal (SIGINT, TERM, 9, ...) instead of ending the session."},
            },
            "required": ["session_id"],
            "additionalProperties": False,
        },
    },
    "watch_output": {
        "description": (
            "Asks to be told, without polling, when a line of a session's output matches a regular expression "
            "(a notification per batch of matching lines). Every session exec_command leaves running notifies its exit by itself."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "session_id": _SESSION,
                "pattern": {"type": "string", "description": "A regular expression (Python re) matched against each output line."},
            },
            "required": ["session_id", "pattern"],
            "additionalProperties": False,
        },
    },
}
