from unified_exec_kernel.core.output.readers import Readers


def test_a_new_reader_starts_where_the_latest_call_left_off():
    readers = Readers(start=10)
    assert readers.cursor("a") == 10
    readers.read_to("a", 50)
    assert readers.cursor("b") == 50 and readers.cursor("a") == 50


def test_each_reader_keeps_its_own_cursor_and_the_oldest_bounds_what_is_kept():
    readers = Readers(start=0)
    readers.read_to("a", 10)
    readers.read_to("b", 30)
    assert (readers.cursor("a"), readers.cursor("b"), readers.oldest()) == (10, 30, 10)
    readers.read_to("a", 40)
    assert readers.oldest() == 30


def test_overlapping_calls_of_one_reader_keep_the_furthest():
    readers = Readers(start=0)
    readers.read_to("a", 40)
    readers.read_to("a", 20)  # an earlier call that ended later
    assert readers.cursor("a") == 40


def test_the_least_recently_used_reader_is_forgotten_past_the_limit():
    readers = Readers(start=0, max_readers=2)
    readers.read_to("a", 1)
    readers.read_to("b", 2)
    readers.read_to("a", 3)
    readers.read_to("c", 4)
    assert readers.oldest() == 3  # b went: a and c are kept
    assert readers.cursor("b") == 4  # and starts again as new
