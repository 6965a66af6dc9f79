"""What %uexec_output shows around a page, and its refusals when there is no journal to read."""

import asyncio

import pytest
from IPython.core.error import UsageError

from unified_exec_kernel.core.journal import JournalStore
from unified_exec_kernel.core.journal.index import Command
from unified_exec_kernel.core.journal.paging import Page, PageRequest
from unified_exec_kernel.notebook import journal_pages


def test_the_status_line_names_the_session_the_command_and_the_lines():
    command = Command(2, "make test\nsecond line", 10, 0.5, end=90, exit_code=2)
    shown = Page("x", 10, 90, 5, 9, 1200, command)
    # plain numbers throughout, as --lines takes them back (not `5-9 of 1,200`)
    assert journal_pages.status_line("build", shown) == "[session build · command 2 (exit 2): make test · lines 5-9 of 1200]"
    assert journal_pages.status_line("3", Page("", 4, 8, None, None, 0)) == "[session 3 · bytes 4:8]"


def test_without_journals_every_read_says_they_are_off():
    with pytest.raises(UsageError, match=r"^journals are off in this kernel \(c.UnifiedExec.journal = False\)$"):
        asyncio.run(journal_pages.show_output(None, "x", PageRequest()))


def test_an_unknown_session_is_a_usage_error_naming_the_journals(tmp_path):
    store = JournalStore(str(tmp_path / "k"))
    try:
        with pytest.raises(UsageError, match=r"^no journal for session 'x' \(journals: none\)$"):
            asyncio.run(journal_pages.record(store, "x", str(tmp_path / "out.cast"), version=3))
    finally:
        store.close()


def test_every_grep_line_keeps_its_number_whatever_the_line_does_to_the_cursor():
    grep_lines = [("1:", "step 1"), ("2-", "x\x1b[2K\rstep 2"), ("--", ""), ("9:", "old\rstep 3")]
    shown = Page("".join(prefix + line + "\n" for prefix, line in grep_lines), 0, 60, 1, 9, 9, grep_lines=grep_lines)
    assert journal_pages.page_text(shown) == "1:step 1\n2-step 2\n--\n9:step 3\n"
    assert journal_pages.page_text(shown, raw=True) == shown.text
