from unified_exec_kernel import (
    CreateSessionError,
    MissingCommandLineError,
    UnifiedExecError,
    UnknownSessionIdError,
    WriteToStdinError,
)


def test_each_error_is_also_the_builtin_a_caller_would_catch():
    assert isinstance(UnknownSessionIdError(3), LookupError)
    assert isinstance(MissingCommandLineError(), ValueError)
    assert isinstance(CreateSessionError(["x"], FileNotFoundError()), OSError)
    assert isinstance(WriteToStdinError(1), OSError)
    for error in [UnknownSessionIdError(3), MissingCommandLineError(), WriteToStdinError(1)]:
        assert isinstance(error, UnifiedExecError)


def test_messages_read_as_one_line_for_a_person():
    assert str(UnknownSessionIdError(7)) == "no session with id 7"
    assert UnknownSessionIdError(7).session_id == 7
    named = UnknownSessionIdError("nosuchsession", ["sh", 4])
    assert str(named) == "no session named 'nosuchsession'; open sessions: sh, 4"
    assert named.session_id == "nosuchsession"
    assert str(UnknownSessionIdError("x", [])) == "no session named 'x'; no session is open"
    error = CreateSessionError(["nosuchprog", "-x"], FileNotFoundError(2, "No such file"))
    assert str(error) == "Failed to create session: nosuchprog: command not found"
    assert isinstance(error.cause, FileNotFoundError)
    assert "\n" not in str(MissingCommandLineError())


def test_names_are_the_seeds_variant_names():
    assert [cls.name for cls in (UnknownSessionIdError, WriteToStdinError, MissingCommandLineError, CreateSessionError)] == [
        "UnknownSessionId",
        "WriteToStdin",
        "MissingCommandLine",
        "CreateSession",
    ]
