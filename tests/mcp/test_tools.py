"""The listed schemas and what the profile accepts agree: every listed parameter is taken, no other."""

import pytest

from unified_exec_kernel.core.codex_profile import ExecCommand, ProfileError, WriteStdin
from unified_exec_kernel.mcp.tools import TOOLS

SAMPLE = {"cmd": "true", "workdir": "/tmp", "shell": "/bin/sh", "tty": True, "login": False, "yield_time_ms": 300, "max_output_tokens": 5, "session_id": 1, "chars": "x"}


@pytest.mark.parametrize("tool, parse", [("exec_command", ExecCommand.from_arguments), ("write_stdin", WriteStdin.from_arguments)])
def test_every_listed_parameter_is_taken_and_no_other(tool, parse):
    properties = TOOLS[tool]["inputSchema"]["properties"]
    parse({name: SAMPLE[name] for name in properties})
    with pytest.raises(ProfileError, match="unknown argument 'timeout_ms'"):
        parse({**{name: SAMPLE[name] for name in TOOLS[tool]["inputSchema"]["required"]}, "timeout_ms": 5})


def test_every_tool_refuses_what_it_does_not_list():
    for spec in TOOLS.values():
        assert spec["inputSchema"]["additionalProperties"] is False and spec["description"]
