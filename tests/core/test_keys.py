import pytest

from unified_exec_kernel.core.keys import key_bytes, keys_text


@pytest.mark.parametrize(
    "name, sent",
    [("C-c", "\x03"), ("C-d", "\x04"), ("C-z", "\x1a"), ("Enter", "\r"), ("Tab", "\t"), ("Escape", "\x1b"),
     ("Up", "\x1b[A"), ("Down", "\x1b[B"), ("Left", "\x1b[D"), ("Right", "\x1b[C"), ("BSpace", "\x7f"),
     ("C-[", "\x1b"), ("^C", "\x03")],
)
def test_named_keys_send_what_a_terminal_sends(name, sent):
    assert key_bytes(name) == sent


def test_keys_are_sent_in_order():
    assert keys_text(["Up", "Enter"]) == "\x1b[A\r"


@pytest.mark.parametrize("name", ["C-", "Ctrl-C", "F99", "", "C-1"])
def test_unknown_key_is_a_clear_error(name):
    with pytest.raises(ValueError, match="unknown key"):
        key_bytes(name)


@pytest.mark.parametrize("size", [1024 * 1024, 10 * 1024 * 1024])
def test_an_unknown_key_or_signal_is_told_in_one_short_line(size):
    from unified_exec_kernel.core.keys import signal_number

    for refuse, name in ((key_bytes, "K" * size), (keys_text, ["Up", "K" * size]), (signal_number, "S" * size)):
        with pytest.raises(ValueError) as refused:
            refuse(name)
        assert len(str(refused.value)) <= 1024 and "\n" not in str(refused.value)
