"""Slices of a journal: head, tail, sed-style lines, bytes, a command's output, grep with context."""

import pytest

from unified_exec_kernel.core.journal.paging import PageError, PageRequest, page, parse_range

from .helpers import journaled, written


@pytest.fixture
async def shell_journal(tmp_path):
    """A shell that ran `seq 1 5000`, `printf 'a\\nb\\nc'` and `seq 7 9`."""
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["bash", "-i"], name="sh")
        for command in ("seq 1 5000", "printf 'alpha\\nbeta\\ngamma\\n'", "seq 7 9"):
            await manager.write("sh", command + "\n")
        with await written(store, "sh") as journal:
            yield journal


def lines(result) -> list[str]:
    return result.text.replace("\r\n", "\n").splitlines()


async def test_lines_are_sed_style_one_based_and_inclusive(shell_journal):
    # line 1 is the prompt with `seq 1 5000` typed, so seq's N is line N + 1
    assert lines(page(shell_journal, PageRequest(lines=(101, 103)))) == ["100", "101", "102"]
    assert lines(page(shell_journal, PageRequest(lines=(4001, 4001)))) == ["4000"]


async def test_a_command_narrows_and_its_lines_count_from_its_output(shell_journal):
    assert lines(page(shell_journal, PageRequest(command=1, head=2))) == ["1", "2"]
    assert lines(page(shell_journal, PageRequest(command=1, tail=2))) == ["4999", "5000"]
    assert lines(page(shell_journal, PageRequest(command=-1))) == ["7", "8", "9"]
    second = page(shell_journal, PageRequest(command=2, lines=(2, 3)))
    assert lines(second) == ["beta", "gamma"] and second.total_lines == 3
    assert second.command.text == "printf 'alpha\\nbeta\\ngamma\\n'" and second.command.exit_code == 0


async def test_grep_shows_line_numbers_and_context_as_grep_n_does(shell_journal):
    result = page(shell_journal, PageRequest(command=1, grep=r"^(250|4999)$", context=1))
    assert result.text.splitlines() == ["249-249", "250:250", "251-251", "--", "4998-4998", "4999:4999", "5000-5000"]
    assert page(shell_journal, PageRequest(command=1, grep=r"^(1|3|4)$")).text.splitlines() == ["1:1", "3:3", "4:4"]
    adjacent = page(shell_journal, PageRequest(command=1, grep=r"^(10|12)$", context=1))
    assert adjacent.text.splitlines() == ["9-9", "10:10", "11-11", "12:12", "13-13"]


async def test_grep_keeps_each_number_apart_from_its_line_so_a_carriage_return_cannot_wipe_it(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["printf", "step 1\\nx\\033[2K\\rstep 2\\nold\\rstep 3\\n"], name="bar")
        with await written(store, "bar") as journal:
            result = page(journal, PageRequest(grep="step"))
    assert [prefix for prefix, _ in result.grep_lines] == ["1:", "2:", "3:"]
    assert result.grep_lines[1][1] == "x\x1b[2K\rstep 2"
    assert result.text == "".join(prefix + line + "\n" for prefix, line in result.grep_lines)


async def test_bytes_use_the_output_offsets_of_the_protocol(shell_journal):
    command = shell_journal.chapters()[2]
    result = page(shell_journal, PageRequest(byte_range=(command.start, command.start + 3)))
    assert result.text == "7\r\n" and (result.start, result.end) == (command.start, command.start + 3)


async def test_a_page_over_its_size_is_cut_at_a_line_and_says_so(shell_journal):
    result = page(shell_journal, PageRequest(command=1, max_bytes=1000))
    assert result.text.endswith("\r\n") and len(result.text) <= 1000
    assert result.notes == [f"showing lines 1-{result.last_line} only (1,000 bytes at most): ask for a narrower range"]


@pytest.mark.parametrize(
    "request_, message",
    [
        (PageRequest(lines=(9000, 9010)), "lines 9000:9010 are past the end: the output has 5010 lines"),
        # the range as the user typed it (`--lines 99999:`), not one made of the total
        (PageRequest(lines=(99999, None)), "lines 99999: are past the end: the output has 5010 lines"),
        (PageRequest(lines=(7, 3)), "--lines takes A:B with 1 <= A <= B, not 7:3"),
        (PageRequest(command=4), "no command 4: the session ran 3 (1 to 3, or -1 for the last)"),
        (PageRequest(command=0), "no command 0: the session ran 3 (1 to 3, or -1 for the last)"),
        (PageRequest(grep="("), "--grep is not a valid regular expression: missing ), unterminated subpattern at position 0"),
        (PageRequest(head=1, tail=1), "give at most one of --head, --tail, --lines and --bytes"),
        (PageRequest(lines=(5, 2)), "--lines takes A:B with 1 <= A <= B, not 5:2"),
        (PageRequest(byte_range=(10**9, None)), "bytes 1000000000:"),
    ],
)
async def test_bad_requests_get_one_clear_line(shell_journal, request_, message):
    with pytest.raises(PageError) as caught:
        page(shell_journal, request_)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_ranges_read_as_sed_would():
    assert parse_range("3:7", "--lines") == (3, 7)
    assert parse_range("3:", "--lines") == (3, None)
    assert parse_range("4", "--lines") == (4, 4)
    with pytest.raises(PageError, match=r"^--lines takes A:B \(whole numbers\), not 'a:b'$"):
        parse_range("a:b", "--lines")


async def test_a_session_without_commands_says_so(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        await manager.start(["seq", "1", "3"], name="plain")
        with await written(store, "plain") as journal:
            assert lines(page(journal, PageRequest(tail=1))) == ["3"]
            with pytest.raises(PageError, match="no commands on record"):
                page(journal, PageRequest(command=-1))
