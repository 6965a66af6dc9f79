"""The command a terminal showed, from the echo of a shell's line editor (bytes captured from bash 5.2 and zsh 5.9)."""

from unified_exec_kernel.core.journal.command_line import command_text

PROMPT = b"\x1b[?2004hroot@vm:/# "  # what bash draws from the prompt's start (A) to its end (B)


def test_a_command_is_the_echoed_line_without_escapes_or_edits():
    assert command_text(b"echo hi; false\r\n\x1b[?2004l\r") == "echo hi; false"
    assert command_text(b"ecx\x08 \x08ho ok\r\n") == "echo ok"
    assert command_text(b"for i in 1 2\r\n> do echo $i\r\n> done\r\n\x1b[?2004l\r") == "for i in 1 2\ndo echo $i\ndone"
    assert command_text(b"\x1b]0;title\x07ls\r\n") == "ls"
    assert command_text(b"ls \r\n") == "ls"  # a typed trailing space, then Enter
    assert command_text(b"cat fiel\x1b[2Dle\r\n") == "cat file"  # moved left and typed over


def test_ctrl_u_redrawn_from_column_zero_leaves_nothing_of_the_erased_text():
    # bash with PS1='$ ': back to the row's start, then forward by the prompt's width
    echo = b"$ echo some long text\r\x1b[C\x1b[C\x1b[Kecho via-enter\r\n\x1b[?2004l\r"
    assert command_text(echo, 2) == "echo via-enter"
    assert command_text(b"$ echo some long text\r\x1b[2C\x1b[Kecho via-enter\r\n", 2) == "echo via-enter"


def test_the_editors_redraws_are_undone():
    bash = {
        b"echo some long text" + b"\x08" * 19 + b"\x1b[Kecho via-enter\r\n": "echo via-enter",  # Ctrl+U
        b"echo one two three\x08\x08\x08\x08\x08\x1b[K\x08\x08\x08\x08\x1b[Kfour\r\n": "echo one four",  # Ctrl+W twice
        b"cho x\x08\x08\x08\x08\x08\x1b[1@e\r\n": "echo x",  # Ctrl+A, then a key inserted
        b"echo abcd\x08\x1b[K\x08\x1b[Kef\r\n": "echo abef",  # backspaces
    }
    zsh = {
        b"e\x08echo some long text\x1b[19D" + b" " * 19 + b"\x1b[19De\x08echo via-enter\x1b[?1l\x1b>\x1b[?2004l\r\r\n": "echo via-enter",
        b"e\x08echo one two three\x08\x08\x08\x08\x08     \x08\x08\x08\x08\x08\x08\x08\x08\x08   \x08\x08\x08four\r\r\n": "echo one four",
        b"c\x08cho x\x08\x08\x08\x08\x08echo x\x08\x08\x08\x08\x08\x1b[?1l\x1b>\x1b[?2004l\r\r\n": "echo x",
        b"e\x08echo abcd\x08 \x08\x08 \x08ef\r\r\n": "echo abef",
    }
    for echo, typed in {**bash, **zsh}.items():
        assert command_text(PROMPT + echo, len(PROMPT)) == typed, echo


def test_a_line_the_terminal_wrapped_is_joined_where_the_editor_marked_the_new_row():
    # `echo word0 ... word19` typed a key at a time at 30 columns (bash's prompt 23 wide, zsh's 4): at
    # each wrap bash writes a space and \r, zsh a space, \r, ESC[K and the row's first character.
    typed = "echo " + " ".join(f"word{i}" for i in range(20))
    prompt = b"p" * 23
    bash = b"echo wo \rrd0 word1 word2 word3 word4 wo \rrd5 word6 word7 word8 word9 wo \rrd10 word11 word12 word13 word \r14 word15 word16 word17 word18 \r word19\r\n\x1b[?2004l\r"
    zsh = b"e\x08echo word0 word1 word2 wor \r\x1b[Kd\rd3 word4 word5 word6 word7 wor \r\x1b[Kd\rd8 word9 word10 word11 word12  \r\x1b[Kw\rword13 word14 word15 word16 wo \r\x1b[Kr\rrd17 word18 word19\x1b[?2004l\r\r\n"
    assert command_text(prompt + bash, 23, cols=30) == command_text(b"vm# " + zsh, 4, cols=30) == typed
    # written at once, the line wraps by the terminal alone
    assert command_text(prompt + b"echo " + b"x" * 100 + b"\r\n", 23, cols=30) == "echo " + "x" * 100


def test_a_wrapped_line_erased_from_the_rows_above_is_gone():
    # Ctrl+U on a 105-character line at 80 columns, prompt 26 wide: up a row, back, erase, down, erase, up
    echo = b"echo " + b"y" * 100 + b"\x1b[A" + b"\x08" * 25 + b"\x1b[K\r\n\r\x1b[K\x1b[A" + b"\x1b[C" * 26 + b"echo short\r\n\x1b[?2004l\r"
    assert command_text(b"r" * 26 + echo, 26) == "echo short"
    zsh = b"e\x08echo " + b"y" * 71 + b" \r\x1b[Ky\r" + b"y" * 29 + b"\x1b[A\x1b[25D\x1b[K\x1b[1B\r\x1b[K\x1b[A\x1b[4Ce\x08echo short\x1b[?1l\x1b>\x1b[?2004l\x1b[1B\r"
    assert command_text(b"vm# " + zsh, 4) == "echo short"


def test_wide_and_combining_characters_take_their_cells():
    assert command_text(PROMPT + "echo héllo wörld ✓ 日本\r\n".encode(), len(PROMPT)) == "echo héllo wörld ✓ 日本"
    # a wide character erased with one backspace per cell, as the editor does
    assert command_text("echo 日本\x08\x08\x1b[K語\r\n".encode()) == "echo 日語"
    assert command_text("echo e\u0301t\u00e9\r\n".encode()) == "echo e\u0301t\u00e9"
    # a wide character that does not fit the row's last cell goes to the next row, joined
    assert command_text(("x" * 9 + "日本\r\n").encode(), cols=10) == "x" * 9 + "日本"


def test_continuation_prompts_are_not_part_of_the_command():
    zsh = b"f\x08for i in 1 2\x1b[?1l\x1b>\x1b[?2004l\r\r\n\r\x1b[0m\x1b[27m\x1b[24m\x1b[Jfor> \x1b[K\x1b[?1h\x1b=\x1b[?2004hd\x08do echo $i; done\x1b[?1l\x1b>\x1b[?2004l\r\r\n"
    bash = b"for i in 1 2\r\n\x1b[?2004l\r\x1b[?2004h> do echo $i; done\r\n\x1b[?2004l\r"
    assert command_text(zsh) == command_text(bash) == "for i in 1 2\ndo echo $i; done"
    assert command_text(b'echo "a\r\n\x1b[Jdquote> b"\r\n') == 'echo "a\nb"'


def test_a_prompt_redrawn_after_clearing_the_screen_counts_from_its_new_end():
    prompt = b"\x1b[?2004hroot@vm:/# "
    echo = prompt + b"echo old\x1b[H\x1b[2J" + prompt + b"echo new\r\n"
    assert command_text(echo, len(echo) - len(b"echo new\r\n")) == "echo new"


def test_without_a_prompt_end_nothing_is_guessed():
    assert command_text(b"vm% echo hi\r\n", None) == ""


def test_any_bytes_give_a_bounded_line_and_no_error():
    for echo in (b"\x1b[", b"\x1b]133;", b"\x1b[999999999A\x1b[999999999C\x1b[9999@x", b"\n" * 5000 + b"x", bytes(range(256)) * 8):
        assert len(command_text(echo)) <= 1000
