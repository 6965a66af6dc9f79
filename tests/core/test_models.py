import pytest

from unified_exec_kernel import UnifiedExecRequest, UnifiedExecResult


def test_request_defaults_poll_nothing_with_the_default_timeout():
    request = UnifiedExecRequest()
    assert (request.session_id, request.input_chunks, request.timeout_ms) == (None, (), None)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"timeout_ms": -1}, ValueError),
        ({"timeout_ms": 1.5}, TypeError),
        ({"input_chunks": "bash"}, TypeError),
        ({"input_chunks": ["ok", 3]}, TypeError),
        ({"session_id": "1"}, TypeError),
        ({"session_id": True}, TypeError),
        ({"session_id": ""}, TypeError),
        ({"quiet_ms": -5}, ValueError),
        ({"quiet_ms": "5"}, TypeError),
    ],
)
def test_bad_requests_are_refused_with_a_clear_error(kwargs, error):
    with pytest.raises(error):
        UnifiedExecRequest(**kwargs)


def test_a_session_may_be_named_and_a_new_one_given_a_place_and_an_environment():
    request = UnifiedExecRequest("build", ["make\n"], until="done$", quiet_ms=200)
    assert (request.session_id, request.until, request.quiet_ms) == ("build", "done$", 200)
    start = UnifiedExecRequest(None, ["bash"], name="sh", cwd="/tmp", env={"A": "1"})
    assert (start.name, start.cwd, start.env) == ("sh", "/tmp", {"A": "1"})


def test_a_results_repr_shows_what_says_something_and_cuts_a_long_output_to_its_ends():
    done = UnifiedExecResult(None, "hi\n", exit_code=0, wall_time=0.0234, ended_by="exit")
    assert repr(done) == "UnifiedExecResult(session_id=None, exit_code=0, wall_time=0.02, ended_by='exit', output='hi\\n')"
    long = repr(UnifiedExecResult(3, "a" * 5000 + "z"))
    assert len(long) < 400 and "…" in long and long.endswith("az')")


def test_a_wait_that_ran_to_its_timeout_says_so():
    assert UnifiedExecResult(3, "").timed_out
    assert not UnifiedExecResult(None, "", exit_code=0, ended_by="exit").timed_out


def test_a_command_is_shown_as_a_shell_reads_it_and_an_agents_cmd_as_written():
    from unified_exec_kernel.core.models import command_line

    assert command_line(["bash", "-c", "echo 'a b'"]) == """bash -c 'echo '"'"'a b'"'"''"""
    assert command_line(["sleep 30 # build"]) == "sleep 30 # build"
    assert command_line([]) == ""
