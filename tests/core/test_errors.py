import pytest

from unified_exec_kernel import (
    CreateSessionError,
    MissingCommandLineError,
    UnifiedExecError,
    UnknownSessionIdError,
    WriteToStdinError,
)
from unified_exec_kernel.core.errors import InvalidSessionNameError


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


BIG = [1024 * 1024, 10 * 1024 * 1024]


def test_a_quoted_value_keeps_both_ends_around_an_ellipsis():
    from unified_exec_kernel.core.errors import quoted

    assert quoted("short") == "'short'"
    long = "head" + "x" * (1024 * 1024) + "tail\n"
    shown = quoted(long)
    assert len(shown) == 200 and shown.startswith("'headxx") and shown.endswith("xxtail\\n'") and "…" in shown
    assert len(quoted(10**5000)) <= 200 and len(quoted(b"\0" * 10**6)) == 200


@pytest.mark.parametrize("size", BIG)
def test_every_engine_error_is_one_short_line_and_keeps_the_whole_input(size):
    big = "p" * size
    errors = [
        UnknownSessionIdError(big, [big, "sh", 4]),
        UnknownSessionIdError(size),
        CreateSessionError([big, big], FileNotFoundError(2, "No such file")),
        CreateSessionError([big], OSError(big + "\n" + big)),
        WriteToStdinError(1, OSError(big)),
        InvalidSessionNameError(f"{big!r} cannot name a session"),
        UnifiedExecError(big + "\n" + big),
    ]
    for error in errors:
        text = str(error)
        assert len(text) <= 1024 and "\n" not in text, (type(error).__name__, len(text))
    assert errors[0].session_id == big and errors[2].argv == [big, big]
    assert str(errors[2]).startswith("Failed to create session: ppp") and str(errors[2]).endswith("ppp: command not found")
