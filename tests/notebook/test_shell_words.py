import shlex
import time

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel.notebook import shell_words

CASES = ["", "   ", "a b  c", "a\tb\nc\r d", "echo 'a b' \"c d\" e\\ f", "x='1 2'", "--until '^ready$' -s sh", "é ü  ß"]


@pytest.mark.parametrize("text", CASES)
def test_words_are_shlexs_words(text):
    assert shell_words.split(text) == shlex.split(text)
    assert [word for word, _end in shell_words.words(text)] == shlex.split(text)


@pytest.mark.parametrize("text", ["-s sh echo hi", "--name 'a b' body", "a  b"])
def test_each_word_ends_where_the_rest_of_the_text_begins(text):
    for word, end in shell_words.words(text):
        assert shlex.split(text[:end])[-1] == word


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=" \t\r\n'\"\\ab\u00e9", max_size=30))
def test_any_text_splits_as_shlex_splits_it_or_fails_as_it_does(text):
    try:
        expected = shlex.split(text)
    except ValueError as error:
        with pytest.raises(ValueError, match=f"^{re.escape(str(error))}$"):
            shell_words.split(text)
    else:
        assert shell_words.split(text) == expected
        assert [word for word, _end in shell_words.words(text)] == expected


def test_an_unbalanced_quote_is_shlexs_error():
    with pytest.raises(ValueError, match="No closing quotation"):
        shell_words.split("echo 'open")


@pytest.mark.parametrize("quote", ["", "'", '"'])
def test_a_megabyte_word_is_split_at_once_quoted_or_not(quote):
    # shlex takes about a minute for this (a word grows a character at a time); one regex pass does not.
    started = time.process_time()
    assert shell_words.split(f"{quote}{'x' * 1_000_000}{quote} y") == ["x" * 1_000_000, "y"]
    assert time.process_time() - started < 5  # CPU time, not wall time: the machine's load does not count
