from unified_exec_kernel import UnifiedExecResult
from unified_exec_kernel.core.agent_format import format_for_agent


def test_exited_process_reports_its_code():
    result = UnifiedExecResult(session_id=None, output="hi\r\n", exit_code=0, wall_time=0.0123, original_token_count=1)
    assert format_for_agent(result) == (
        "Wall time: 0.0123 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nhi\r\n"
    )


def test_running_process_reports_its_session():
    result = UnifiedExecResult(session_id=4, output="$ ", wall_time=1.5, original_token_count=1)
    assert format_for_agent(result).splitlines()[1] == "Process running with session ID 4"


def test_a_program_killed_by_a_signal_reads_as_a_shell_reports_it():
    result = UnifiedExecResult(session_id=None, output="", exit_code=-2, wall_time=0.1)
    assert format_for_agent(result).splitlines()[1] == "Process exited with code 130 (SIGINT)"
    killed = UnifiedExecResult(session_id=None, output="", exit_code=-9, wall_time=0.1)
    assert "Process exited with code 137 (SIGKILL)" in format_for_agent(killed)
