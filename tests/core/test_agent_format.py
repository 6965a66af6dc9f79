"""The agent format is Codex's grammar exactly: a harness that parses Codex reads every field."""

import re

from unified_exec_kernel import UnifiedExecResult
from unified_exec_kernel.core.agent_format import format_for_agent

# Codex's fields, in its order, each optional but Wall time and Output, as its
# own tests and the harnesses built on it parse them (`Process exited with code (-?\d+)\n`).
CODEX_GRAMMAR = re.compile(
    r"(?:Chunk ID: (?P<chunk>[0-9a-f]+)\n)?"
    r"Wall time: (?P<wall>\d+\.\d{4}) seconds\n"
    r"(?:Process exited with code (?P<exit>-?\d+)\n)?"
    r"(?:Process running with session ID (?P<session>\d+)\n)?"
    r"(?:Original token count: (?P<tokens>\d+)\n)?"
    r"Output:\n(?P<output>.*)",
    re.DOTALL,
)


def parse(text: str) -> dict:
    match = CODEX_GRAMMAR.fullmatch(text)
    assert match, f"not Codex's grammar: {text!r}"
    return match.groupdict()


def test_an_exited_process_reads_every_field():
    result = UnifiedExecResult(session_id=None, output="hi\r\n", exit_code=0, wall_time=0.0123, original_token_count=1)
    fields = parse(format_for_agent(result, chunk_id="a1b2c3"))
    assert fields == {"chunk": "a1b2c3", "wall": "0.0123", "exit": "0", "session": None, "tokens": "1", "output": "hi\r\n"}


def test_a_running_process_reads_its_session_and_nothing_else_in_between():
    result = UnifiedExecResult(session_id=4, output="$ ", wall_time=1.5, original_token_count=1, command_exit_code=7)
    fields = parse(format_for_agent(result))
    assert (fields["session"], fields["exit"], fields["tokens"], fields["output"]) == ("4", None, "1", "$ ")
    assert re.fullmatch(r"[0-9a-f]{6}", fields["chunk"])


def test_a_program_killed_by_a_signal_reads_as_a_shell_reports_it():
    interrupted = UnifiedExecResult(session_id=None, output="", exit_code=-2, wall_time=0.1)
    assert parse(format_for_agent(interrupted))["exit"] == "130"
    killed = UnifiedExecResult(session_id=None, output="", exit_code=-9, wall_time=0.1)
    assert "\nProcess exited with code 137\n" in format_for_agent(killed)


def test_an_unknown_exit_code_leaves_the_line_out_as_codex_does():
    result = UnifiedExecResult(session_id=None, output="", exit_code=None, wall_time=0.1)
    fields = parse(format_for_agent(result))
    assert fields["exit"] is None and fields["session"] is None


def test_a_cut_output_ends_with_one_line_on_how_to_read_all_of_it_and_still_parses():
    output = "1\n2\n…40 tokens truncated…\n99\n100\n"
    result = UnifiedExecResult(session_id=None, output=output, exit_code=0, wall_time=0.2, original_token_count=90, journal_range=("build", 10, 400))
    fields = parse(format_for_agent(result, chunk_id="abcdef"))
    assert (fields["exit"], fields["tokens"]) == ("0", "90")
    assert fields["output"].startswith(output)  # the seed's truncation text, untouched
    hint = fields["output"][len(output) :]
    assert hint == '[The middle was cut; all of it: %uexec_output build --bytes 10:400, or the comm\'s read request {"session_id": "build", "start": 10, "end": 400}]\n'


def test_an_output_that_was_not_cut_has_no_hint():
    result = UnifiedExecResult(session_id=3, output="short\n", wall_time=0.1, original_token_count=2)
    assert parse(format_for_agent(result))["output"] == "short\n"
