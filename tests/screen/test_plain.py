"""The renderer's quick path gives what the terminal parser gives, and loads no parser."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from unified_exec_kernel.screen import render as parser
from unified_exec_kernel.screen.plain import plain_text

# Private modes that leave no trace, as prompts and programs send them (bracketed paste, cursor keys,
# the cursor's visibility), and the alternate screen's, which do.
TRACELESS = ["\x1b[?2004h", "\x1b[?2004l", "\x1b[?1h", "\x1b[?25l", "\x1b[?25h", "\x1b[?1;2004h"]
ALT_SCREEN = ["\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?1;1049h"]


def parsed(text: str) -> str:
    """The parser's answer, forced (render_terminal_text would take the quick path first)."""
    lines = parser._Lines()
    parser.feed(parser.pyte.Stream(lines), text.replace("\r\n", "\n"))
    return lines.text()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["\r\n", "\n", " ", "  ", "a", *TRACELESS]),
                          st.characters(min_codepoint=0x20, max_codepoint=0x7E)), max_size=60).map("".join))
def test_plain_text_and_traceless_modes_take_the_quick_path_with_the_parsers_result(text):
    assert plain_text(text) == parsed(text)


def test_a_shells_prompt_takes_the_quick_path():
    assert plain_text("\x1b[?2004hroot@vm:~# ") == "root@vm:~#"


def test_the_alternate_screen_and_other_escapes_go_to_the_parser():
    for text in [*ALT_SCREEN, "\x1b[1mbold", "\x1b]0;title\x07", "a\rb", "tab\there", "é", "\x1b[?2004", "\x1b\x1b[?25h"]:
        assert plain_text(f"x{text}y") is None, text


def test_a_cell_shows_plain_output_and_a_prompt_without_loading_pyte():
    """pyte and wcwidth cost a kernel ~1.5 MiB: they come with the first output that needs them."""
    code = (
        "import sys\n"
        "from unified_exec_kernel.notebook.cell_output import _render\n"
        "assert _render('1\\r\\n2\\r\\n\\x1b[?2004hroot@vm:~# ') == '1\\n2\\nroot@vm:~#'\n"
        "assert 'pyte' not in sys.modules and 'wcwidth' not in sys.modules, 'loaded for plain output'\n"
        "_render('\\x1b[1mbold\\x1b[0m')\n"
        "assert 'pyte' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
