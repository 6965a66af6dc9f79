import pytest

from unified_exec_kernel.core.protocol import MAX_INPUT_BYTES, BadRequest, input_text, optional_int, required_int, terminal_size


def test_integers_are_checked_and_booleans_are_not_integers():
    assert optional_int({}, "session_id") is None
    assert required_int({"rows": 3}, "rows") == 3
    with pytest.raises(BadRequest, match="session_id must be an integer or null"):
        optional_int({"session_id": True}, "session_id")
    with pytest.raises(BadRequest, match="session_id is required"):
        required_int({}, "session_id")


def test_input_is_a_bounded_string():
    assert input_text({"data": "\x03"}) == "\x03"
    with pytest.raises(BadRequest, match="data must be a string"):
        input_text({"data": b"x"})
    with pytest.raises(BadRequest, match="input over"):
        input_text({"data": "x" * (MAX_INPUT_BYTES + 1)})


def test_terminal_size_needs_two_integers():
    assert terminal_size({"rows": 30, "cols": 100}) == (30, 100)
    for bad in ({"rows": "many", "cols": 3}, {"rows": 3}, {"rows": True, "cols": 3}):
        with pytest.raises(BadRequest, match="rows and cols must be integers"):
            terminal_size(bad)
