from unified_exec_kernel.core.output.buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES, OutputBuffer


def test_push_chunk_trims_only_excess_bytes():
    buffer = OutputBuffer()
    buffer.push("a".encode() * UNIFIED_EXEC_OUTPUT_MAX_BYTES)
    buffer.push("b".encode())
    buffer.push("c".encode())
    assert buffer.total_bytes == UNIFIED_EXEC_OUTPUT_MAX_BYTES
    assert len(buffer.chunks) == 3
    assert len(buffer.chunks[0]) == UNIFIED_EXEC_OUTPUT_MAX_BYTES - 2
    assert buffer.chunks.pop() == b"c"
    assert buffer.chunks.pop() == b"b"


def test_drain_empties_and_reports_dropped_bytes():
    buffer = OutputBuffer(max_bytes=10)
    buffer.push("0123456789".encode())
    buffer.push("abcd".encode())
    data, dropped = buffer.drain()
    assert data == b"456789abcd"
    assert dropped == 4
    assert buffer.drain() == (b"", 0)
    assert buffer.total_bytes == 0


def test_whole_old_chunks_are_dropped_first():
    buffer = OutputBuffer(max_bytes=4)
    for chunk in ["ab", "cd", "ef"]:
        buffer.push(chunk.encode())
    assert list(buffer.chunks) == [b"cd", b"ef"]
    assert buffer.dropped_bytes == 2


def test_trimming_never_leaves_a_broken_character():
    buffer = OutputBuffer(max_bytes=5)
    buffer.push("€€".encode())  # 6 bytes: one over
    assert buffer.data() == "€".encode()
    assert buffer.total_bytes == 3
    assert buffer.dropped_bytes == 3


def test_data_reads_without_draining():
    buffer = OutputBuffer()
    buffer.push("x".encode())
    assert buffer.data() == b"x"
    assert buffer.data() == b"x"


def test_since_reads_from_an_offset_without_draining():
    buffer = OutputBuffer(max_bytes=100)
    buffer.push(b"hello ", 0)
    buffer.push(b"world", 6)
    assert buffer.since(6) == (b"world", 0)
    assert buffer.since(0) == (b"hello world", 0)
    assert buffer.since(11) == (b"", 0)
    assert buffer.total_bytes == 11


def test_since_counts_what_gave_way_before_the_offset_was_read():
    buffer = OutputBuffer(max_bytes=4)
    buffer.push(b"abcdefgh", 0)
    assert buffer.since(2) == (b"efgh", 2)


def test_forget_before_lets_go_of_what_was_read_and_counts_no_drop():
    buffer = OutputBuffer(max_bytes=100)
    buffer.push(b"abc", 0)
    buffer.push(b"def", 3)
    buffer.forget_before(4)
    assert (buffer.data(), buffer.start, buffer.dropped_bytes) == (b"ef", 4, 0)
    buffer.forget_before(100)
    assert (buffer.data(), buffer.start, buffer.end) == (b"", 6, 6)
