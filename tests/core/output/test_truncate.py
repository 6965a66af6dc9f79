from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel import truncate_middle
from unified_exec_kernel.core.output.truncate import truncate_parts


def test_text_that_fits_is_returned_whole():
    assert truncate_middle("hello\n", 6) == ("hello\n", None)


def test_known_vector_cuts_on_line_ends():
    text = "".join(f"{i:03}\n" for i in range(1, 21))
    assert len(text) == 80
    assert truncate_middle(text, 64) == (
        "001\n002\n003\n004\n…12 tokens truncated…\n017\n018\n019\n020\n",
        20,
    )


def test_budget_smaller_than_marker_gives_marker_alone():
    text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert truncate_middle(text, 16) == ("…16 tokens truncated…", 16)


def test_zero_budget_gives_marker_alone():
    assert truncate_middle("abcdefgh", 0) == ("…2 tokens truncated…", 2)


def test_without_newlines_cuts_on_character_boundaries():
    text = "é" * 100  # 200 bytes, every character two bytes
    out, tokens = truncate_middle(text, 64)
    assert tokens == 50
    prefix, suffix = out.split("\n", 1)[0].split("…")[0], out.split("\n", 1)[1]
    assert set(prefix) == {"é"} and set(suffix) == {"é"}


def test_result_may_exceed_budget_by_the_marker_newline():
    out, tokens = truncate_middle("x" * 100, 40)
    assert out == "xxxxxxx…22 tokens truncated…\nxxxxxxxx"
    assert len(out.encode()) == 41


def test_half_budget_inside_a_character_skips_the_newline_search():
    # Rust's `str::get(..n)` is None inside a character, so the prefix falls
    # back to the character boundary even though a newline precedes it.
    text = "a\n" + "€" * 40 + "\nz" * 40
    out, _ = truncate_middle(text, 61)  # left half-budget 18: inside the sixth €
    assert not out.startswith("a\n…")
    assert out.startswith("a\n€")


texts = st.text(
    alphabet=st.one_of(st.sampled_from("ab\n"), st.characters(blacklist_categories=("Cs",))),
    max_size=400,
)


@settings(max_examples=300, deadline=None)
@given(text=texts, max_bytes=st.integers(min_value=0, max_value=300))
def test_truncation_properties(text, max_bytes):
    data = text.encode()
    out, tokens = truncate_middle(text, max_bytes)
    if len(data) <= max_bytes:
        assert (out, tokens) == (text, None)
        return
    assert tokens == -(-len(data) // 4)
    marker_only = f"…{tokens} tokens truncated…"
    if out == marker_only:
        return
    assert len(out.encode()) <= max_bytes + 1
    head, _, rest = out.partition("…")
    _, _, tail = rest.partition("tokens truncated…\n")
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head.encode()) + len(tail.encode()) < len(data)


@settings(max_examples=200, deadline=None)
@given(text=texts, max_bytes=st.integers(min_value=0, max_value=120), extra=st.integers(0, 50))
def test_head_and_tail_are_enough(text, max_bytes, extra):
    data = text.encode()
    keep = max_bytes + extra
    if len(data) <= 2 * keep:
        return
    assert truncate_parts(data[:keep], data[-keep:], len(data), max_bytes) == truncate_middle(text, max_bytes)
