from unified_exec_kernel.core.buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES, OutputBuffer


def test_push_chunk_trims_only_excess_bytes():
    buffer = OutputBuffer()
    buffer.push_chunk("a" * UNIFIED_EXEC_OUTPUT_MAX_BYTES)
    buffer.push_chunk("b")
    buffer.push_chunk("c")
    assert buffer.total_bytes == UNIFIED_EXEC_OUTPUT_MAX_BYTES
    assert len(buffer.chunks) == 3
    assert len(buffer.chunks[0]) == UNIFIED_EXEC_OUTPUT_MAX_BYTES - 2
    assert buffer.chunks.pop() == "c"
    assert buffer.chunks.pop() == "b"


def test_drain_empties_and_reports_dropped_bytes():
    buffer = OutputBuffer(max_bytes=10)
    buffer.push_chunk("0123456789")
    buffer.push_chunk("abcd")
    chunks, dropped = buffer.drain()
    assert "".join(chunks) == "456789abcd"
    assert dropped == 4
    assert buffer.drain() == ([], 0)
    assert buffer.total_bytes == 0


def test_whole_old_chunks_are_dropped_first():
    buffer = OutputBuffer(max_bytes=4)
    for chunk in ["ab", "cd", "ef"]:
        buffer.push_chunk(chunk)
    assert list(buffer.chunks) == ["cd", "ef"]
    assert buffer.dropped_bytes == 2


def test_trimming_never_leaves_a_broken_character():
    buffer = OutputBuffer(max_bytes=5)
    buffer.push_chunk("€€")  # 6 bytes: one over
    assert buffer.text() == "€"
    assert buffer.total_bytes == 3
    assert buffer.dropped_bytes == 3


def test_text_reads_without_draining():
    buffer = OutputBuffer()
    buffer.push_chunk("x")
    assert buffer.text() == "x"
    assert buffer.text() == "x"
