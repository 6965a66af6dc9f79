"""UTF-8 at the byte level: whole characters in, whole characters out, wherever a cut falls."""

from hypothesis import given
from hypothesis import strategies as st

from unified_exec_kernel.core.output.utf8 import Utf8Stream, boundary_at_or_after, newest, pieces

TEXT = st.text(alphabet=st.sampled_from(["a", "\n", "é", "€", "😀"]), max_size=60)


def test_a_character_split_across_reads_waits_for_its_second_half():
    stream = Utf8Stream()
    assert stream.feed(b"x\xe2\x82") == b"x"
    assert stream.feed(b"\xac!") == "€!".encode()


def test_invalid_bytes_become_replacement_characters_and_ascii_passes_as_is():
    stream = Utf8Stream()
    plain = b"plain ascii"
    assert stream.feed(plain) is plain
    assert stream.feed(b"ok \xff end") == "ok \ufffd end".encode()
    assert stream.feed(b"\xe2", final=True) == "\ufffd".encode()


@given(text=TEXT, cut=st.integers(0, 300))
def test_cuts_land_on_character_boundaries(text, cut):
    data = text.encode()
    index = boundary_at_or_after(data, min(cut, len(data)))
    data[:index].decode()
    data[index:].decode()
    kept = newest(data, cut)
    assert data.endswith(kept) and len(kept) <= max(cut, 0)
    kept.decode()


@given(text=TEXT, size=st.integers(1, 20))
def test_pieces_are_whole_characters_that_cover_everything_in_order(text, size):
    data = text.encode()
    found = list(pieces(data, size))
    assert b"".join(piece for _, piece in found) == data
    assert [start for start, _ in found] == [sum(len(p) for _, p in found[:i]) for i in range(len(found))]
    for _, piece in found:
        piece.decode()
