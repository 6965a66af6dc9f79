import pytest

from unified_exec_kernel.protocol.messages import MAX_INPUT_BYTES, BadRequest, input_text, optional_int, request_id, session_key, terminal_size


def test_integers_are_checked_and_booleans_are_not_integers():
    assert optional_int({}, "session_id") is None
    assert optional_int({"rows": 3}, "rows") == 3 and session_key({"session_id": 3}) == 3
    with pytest.raises(BadRequest, match="session_id must be an integer or null"):
        optional_int({"session_id": True}, "session_id")
    with pytest.raises(BadRequest, match="session_id is required"):
        session_key({})


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


def test_input_limits_count_bytes_not_characters():
    fits = "é" * (MAX_INPUT_BYTES // 2)
    assert input_text({"data": fits}) == fits
    with pytest.raises(BadRequest, match="input over"):
        input_text({"data": fits + "é"})


def test_a_request_id_that_is_not_a_string_or_integer_is_not_echoed():
    assert request_id({"request_id": "a"}) == "a"
    assert request_id({"request_id": 7}) == 7
    for bad in ([1], True, 1.5, {"x": 1}):
        assert request_id({"request_id": bad}) is None


def test_end_reasons_are_the_same_in_the_doc_python_and_typescript():
    """`exited.reason`: one list, mirrored in protocol.ts and named in docs/protocol.md."""
    import re
    from pathlib import Path

    from unified_exec_kernel.protocol.messages import END_REASONS

    root = Path(__file__).resolve().parents[2]
    ts = (root / "labextension" / "src" / "protocol.ts").read_text()
    listed = re.search(r"END_REASONS\s*=\s*\[([^\]]*)\]", ts)
    assert listed and tuple(re.findall(r"'(\w+)'", listed.group(1))) == END_REASONS
    row = next(line for line in (root / "docs" / "protocol.md").read_text().splitlines() if line.startswith("| `exited` |"))
    said = re.search(r"`reason` \(why it ended: (.*)\)", row).group(1)
    assert re.findall(r"(?:^|; )`(\w+)`, ", said) == list(END_REASONS)
