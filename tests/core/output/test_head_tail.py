from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel import truncate_middle
from unified_exec_kernel.core.output.head_tail import HeadTailCollector


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(st.text(alphabet=st.sampled_from(["a", "\n", "é", "€", "😀"]), max_size=80), max_size=40),
    max_bytes=st.integers(min_value=0, max_value=200),
)
def test_result_is_identical_to_truncating_everything(chunks, max_bytes):
    collector = HeadTailCollector(max_bytes)
    for chunk in chunks:
        collector.push(chunk.encode())
    assert collector.truncated() == truncate_middle("".join(chunks), max_bytes)
    assert collector.total_bytes == len("".join(chunks).encode())


def test_memory_stays_bounded_under_a_flood():
    collector = HeadTailCollector(1024)
    for _ in range(10_000):
        collector.push(b"x" * 1000 + b"\n")
    assert len(collector._head) + len(collector._tail) <= 3 * 1024
    assert collector.total_bytes == 10_010_000
    out, tokens = collector.truncated()
    assert tokens == 10_010_000 // 4
    assert "tokens truncated" in out
