"""Integrated bash and zsh in real PTYs: their markers, and everything of the user's they keep.

Each test gets a fresh HOME with the user's startup files; tests/core/shells.py
drives the shell (bounded waits, `run` ends as core/completion/collect.py says).
"""

from __future__ import annotations

import re

import pytest

from unified_exec_kernel.core.completion.semantic_prompt import PromptEvent
from unified_exec_kernel.core.completion.shell_integration import BASH_SCRIPT, NONCE_VARIABLE, ZSH_DOTDIR, integrate, new_nonce
from unified_exec_kernel.core.process.spawn import HANDOFF_FD

from ..shells import Shell

BASHRC = r"""
PS1='user$SHLVL[$?]> '
PROMPT_COMMAND='echo "hook:$?"'
alias greet='echo hello-from-alias'
BASHRC_READ=yes
"""

ZSHRC = r"""
PS1='user%L[%?]> '
precmd() { print -r -- "hook:$?" }
hook2() { print -r -- "hook2:$?" }
precmd_functions+=(hook2)
preexec() { print -r -- "preexec:$1" }
alias greet='echo hello-from-alias'
ZSHRC_READ=yes
"""


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    (path / ".bashrc").write_text(BASHRC)
    (path / ".zshrc").write_text(ZSHRC)
    return path


@pytest.fixture
def start(home):
    shells: list[Shell] = []

    def start(argv, env=None, wait_prompt=True) -> Shell:
        shell = Shell(argv, home, env)
        shells.append(shell)
        if wait_prompt:
            shell.started()
        return shell

    yield start
    for shell in shells:
        shell.close()


def kinds(events: list[PromptEvent], but: str = "") -> list[str]:
    """Kinds in order, "?" after a foreign one; the previous prompt's B may come after a write."""
    return [e.kind + ("" if e.ours else "?") for e in events if e.kind not in but]


both = pytest.mark.parametrize("shell", ["bash", "zsh"])


# -- what integrate does to argv and env ---------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["python3"], ["sh"], ["/usr/bin/fish"], ["bash", "-c", "echo"], ["bash", "-lc", "echo"],
        ["bash", "script.sh"], ["bash", "-x", "script.sh"], ["bash", "--", "script.sh"],
        ["bash", "--posix"], ["bash", "-o", "posix"], ["bash", "--restricted"], ["bash", "-r"],
        ["bash", "--version"], ["bash", "--help"], ["bash", "--no-such-option"], ["bash", "--rcfile"],
        ["bash", "-D"], ["zsh", "-c", "echo"], ["zsh", "script.zsh"], ["zsh", "--emulate", "sh"],
        ["zsh", "--version"], ["zsh", "-p"], ["zsh", "-o", "privileged"], ["zsh", "-o"], [],
    ],
)  # fmt: skip
def test_not_integrated(argv):
    assert integrate(argv, {"HOME": "/h"}, "n") is None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bash"], ["bash", "--rcfile", str(BASH_SCRIPT)]),
        (["/bin/bash", "-i"], ["/bin/bash", "--rcfile", str(BASH_SCRIPT), "-i"]),
        (["bash", "--noediting", "-o", "vi", "-s", "a"], ["bash", "--rcfile", str(BASH_SCRIPT), "--noediting", "-o", "vi", "-s", "a"]),
        (["bash", "--rcfile", "my.rc", "-i"], ["bash", "--rcfile", str(BASH_SCRIPT), "-i"]),
        (["bash", "-init-file", "my.rc"], ["bash", "--rcfile", str(BASH_SCRIPT)]),
    ],
)  # fmt: skip
def test_bash_reads_our_rc_file(argv, expected):
    new_argv, env = integrate(argv, {"HOME": "/h"}, "n")
    assert new_argv == expected
    assert env["UEXEC_BASH_STARTUP"] == "rcfile" and env[NONCE_VARIABLE] == str(HANDOFF_FD)
    assert "n" not in env.values(), "the nonce travels by a pipe, never in the environment"
    assert env.get("UEXEC_BASH_RCFILE") == ("my.rc" if "my.rc" in argv else None)


@pytest.mark.parametrize("argv", [["bash", "--norc"], ["bash", "-norc", "-i"], ["bash", "-l"], ["bash", "-il"], ["bash", "--login", "--rcfile", "x"]])
def test_bash_login_and_norc_start_from_prompt_command(argv):
    new_argv, env = integrate(argv, {"HOME": "/h", "PROMPT_COMMAND": "mine"}, "n", parent_pid=42)
    assert new_argv == argv
    assert env["UEXEC_BASH_STARTUP"] == "prompt"
    assert env["PROMPT_COMMAND"] == env["UEXEC_BASH_BOOTSTRAP"] == f"{{ . {BASH_SCRIPT}; }} 2>/dev/null"
    assert env["UEXEC_BASH_PROMPT_COMMAND"] == "mine" and env["UEXEC_PARENT_PID"] == "42"


@pytest.mark.parametrize(
    ("argv", "expected", "norcs"),
    [
        (["zsh"], ["zsh"], False),
        (["zsh", "-i"], ["zsh", "-i"], False),
        (["zsh", "-f"], ["zsh"], True),
        (["zsh", "-fi", "-l"], ["zsh", "-i", "-l"], True),
        (["zsh", "--no-rcs"], ["zsh"], True),
        (["zsh", "-o", "NO_RCS", "-o", "vi"], ["zsh", "-o", "vi"], True),
        (["zsh", "-f", "+o", "norcs"], ["zsh"], False),
        (["zsh", "-s", "a", "b"], ["zsh", "-s", "a", "b"], False),
    ],
)  # fmt: skip
def test_zsh_reads_our_zdotdir(argv, expected, norcs):
    new_argv, env = integrate(argv, {"HOME": "/h", "ZDOTDIR": "/mine"}, "n")
    assert new_argv == expected
    assert env["ZDOTDIR"] == str(ZSH_DOTDIR) and env["UEXEC_ZSH_ZDOTDIR"] == "/mine"
    assert ("UEXEC_ZSH_NORCS" in env) == norcs


def test_stale_variables_are_dropped_and_the_nonce_checked():
    _, env = integrate(["zsh"], {"HOME": "/h", "UEXEC_ZSH_NORCS": "1", "UEXEC_BASH_RCFILE": "x"}, "n")
    assert "UEXEC_ZSH_NORCS" not in env and "UEXEC_BASH_RCFILE" not in env and "UEXEC_ZSH_ZDOTDIR" not in env
    with pytest.raises(ValueError, match="nonce"):
        integrate(["bash"], {}, "a;b")
    assert re.fullmatch(r"[0-9a-f]{16}", new_nonce()) and new_nonce() != new_nonce()


def test_shell_files_are_in_the_package():
    assert BASH_SCRIPT.is_file()
    assert {p.name for p in ZSH_DOTDIR.iterdir()} >= {".zshenv", ".zprofile", ".zshrc", ".zlogin"}


# -- markers from real shells ---------------------------------------------------------


@both
def test_exit_status_of_each_command(start, shell):
    sh = start([shell])
    assert sh.run("true").status == 0
    assert sh.run("false").status == 1
    assert sh.run("(exit 3)").status == 3
    assert sh.run("no-such-command-here").status == 127
    result = sh.run("echo one; echo two")
    assert result.status == 0 and "one\r\ntwo\r\n" in result.output
    assert kinds(result.events, "B") == ["C", "D", "A"]


@both
def test_a_line_that_runs_nothing_gives_a_prompt_and_no_status(start, shell):
    sh = start([shell])
    sh.run("false")
    for line in ("", "   "):
        result = sh.run(line)
        assert result.status is None
        assert kinds(result.events, "B") == ["A"]


@both
def test_user_hooks_prompt_aliases_and_status_survive(start, shell):
    sh = start([shell])
    mark = sh.write("false\n")
    prompt = sh.wait_event("A", mark)
    # the user's prompt hook runs after our D and before our A, and sees the status
    c = sh.ours(mark, "C")[0]
    d = sh.ours(mark, "D")[0]
    assert d.exit_status == 1
    before_prompt = sh.text[d.index : sh.events[prompt].index]
    if shell == "bash":
        assert "hook:1" in before_prompt
    else:
        # zsh calls a precmd function before the precmd_functions (ours among them)
        assert "hook:1" in sh.text[c.index : d.index]
        assert "hook2:1" in before_prompt
    # the user's prompt, with its own view of $?, between A and B
    b = sh.wait_event("B", prompt)
    assert sh.text[sh.events[prompt].index : sh.events[b].index].endswith("user1[1]> ")
    assert "hello-from-alias" in sh.run("greet").output
    sh.run("false")
    assert sh.run("echo status=$?").output.startswith("status=1")
    sh.run("echo last-word")
    assert sh.run("echo $_").output.startswith("last-word")
    if shell == "zsh":
        # the user's preexec runs before our C
        mark = sh.write("echo one\n")
        c = sh.events[sh.wait_event("C", mark)]
        assert "preexec:echo one\r\n" in sh.text[c.index - 30 : c.index]


def test_bash_array_prompt_command(start, home):
    (home / ".bashrc").write_text("""PROMPT_COMMAND=('echo "a1:$?"' 'echo "a2:$?"')\n""")
    sh = start(["bash"])
    mark = sh.write("false\n")
    prompt = sh.wait_event("A", mark)
    d = sh.ours(mark, "D")[0]
    assert d.exit_status == 1
    assert "a1:1\r\na2:1\r\n" in sh.text[d.index : sh.events[prompt].index]


def test_bash_prompt_command_reshaped_in_the_session(start):
    sh = start(["bash"])
    sh.run('PROMPT_COMMAND="echo pre:\\$?; $PROMPT_COMMAND"')
    sh.run('PROMPT_COMMAND+=$\'\\necho post:$?\'')
    mark = sh.write("(exit 6)\n")
    prompt = sh.wait_event("A", mark)
    d = sh.ours(mark, "D")[0]
    assert d.exit_status == 6
    # the user's own `echo pre:$?` sets $? for what follows, as it would unintegrated
    assert "pre:6\r\nhook:0\r\npost:0\r\n" in sh.text[d.index : sh.events[prompt].index]


@pytest.mark.parametrize(
    ("shell", "rc"),
    [("bash", ".bashrc"), ("zsh", ".zshrc")],
)
def test_strict_user_options_leave_the_hooks_working(start, home, shell, rc):
    options = "set -u" if shell == "bash" else "setopt nounset ksh_arrays sh_word_split glob_subst"
    (home / rc).write_text(options + "\n")
    sh = start([shell])
    assert sh.run("false").status == 1
    assert sh.run("echo ok").output.startswith("ok")
    assert sh.run("").status is None
    assert not re.search(r"unbound|not set|bad", sh.text), sh.text


@both
def test_no_trace_in_the_environment_of_commands(start, shell):
    sh = start([shell])
    result = sh.run("env | grep -e UEXEC_ -e ZDOTDIR -e __uexec || echo clean")
    assert result.output.startswith("clean"), result.output


@both
def test_the_nonce_is_in_no_environment_and_its_pipe_is_closed(start, shell):
    sh = start([shell])
    # /proc/PID/environ keeps what the shell started with, for its whole life
    found = sh.run("tr '\\0' '\\n' < /proc/$$/environ | grep -c -e " + sh.nonce)
    assert found.output.split()[:1] == ["0"] and found.status == 1, found.output  # grep found nothing
    # A builtin, so no pipeline's pipe (which a shell opens at the lowest free fd) is counted.
    fd = sh.run(f"test -e /proc/$$/fd/{HANDOFF_FD} && echo fd-open || echo fd-closed")
    assert "fd-closed" in fd.output, fd.output


@pytest.mark.parametrize(
    ("argv", "trace_on"),
    [
        (["bash"], "set -x"),
        # --norc and login shells load ours from PROMPT_COMMAND (Debian's bash 5.2 traced
        # the no-op left where the bootstrap was: `++ __uexec_pass`, `++ return 0`)
        (["bash", "--norc"], "set -x"),
        (["bash", "-l"], "set -x"),
        (["zsh"], "setopt xtrace"),
        (["zsh", "-l"], "setopt xtrace"),
        (["zsh", "-f"], "setopt xtrace"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_tracing_shows_none_of_the_hooks(start, argv, trace_on):
    sh = start(argv)
    sh.run(trace_on)
    before = len(sh.text)
    result = sh.run("echo traced-$((6*7))")
    assert result.status == 0 and "traced-42" in result.output
    shown = sh.text[before:]
    assert "echo traced-" in shown, "the user's own command is traced as always"
    assert "uexec" not in shown and sh.nonce not in shown, shown
    assert not re.search(r"^\++ ?return\b", shown, re.M), shown


def test_bash_norc_reads_no_rc_file(start):
    sh = start(["bash", "--norc"], env={"PROMPT_COMMAND": 'echo "envhook:$?"'})
    assert sh.run("echo ${BASHRC_READ-unread}").output.startswith("unread")
    assert sh.run("env | grep -e PROMPT_COMMAND -e UEXEC_ || echo clean").output.startswith("clean")
    result = sh.run("false")
    assert result.status == 1
    assert "envhook:1" in sh.text[sh.text.rfind("envhook:") :]


@pytest.mark.parametrize("name", ["absolute", "~/other.rc"])
def test_bash_rcfile_is_read_instead_of_bashrc(start, home, name):
    (home / "other.rc").write_text("OTHER_READ=yes\nPS1='other$ '\n")
    sh = start(["bash", "--rcfile", str(home / "other.rc") if name == "absolute" else name])
    assert sh.run("echo ${OTHER_READ-unread} ${BASHRC_READ-unread}").output.startswith("yes unread")
    assert sh.run("(exit 5)").status == 5
    assert "other$ " in sh.text


def test_bash_login_reads_the_profile_and_keeps_its_prompt_command(start, home):
    (home / ".bash_profile").write_text(
        'PROFILE_READ=yes\nPROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND; }echo profilehook:\\$?"\n'
    )
    sh = start(["bash", "-l"])
    result = sh.run("echo ${PROFILE_READ-unread} ${BASHRC_READ-unread}; shopt -q login_shell && echo login")
    assert result.output.startswith("yes unread\r\nlogin")
    assert sh.run("false").status == 1
    assert "profilehook:1" in sh.text[sh.text.rfind("profilehook:") :]


def test_a_shell_that_the_profile_starts_is_not_integrated(start, home):
    # it inherits the bootstrap PROMPT_COMMAND, but its parent is not the spawner
    (home / ".bash_profile").write_text("bash --norc -i </dev/null; echo nested-done\n")
    sh = start(["bash", "-l"])
    done = sh.wait_text("nested-done")
    assert [e for e in sh.events if e.index <= done] == []
    assert sh.run("false").status == 1


def test_zsh_f_reads_no_user_file(start):
    sh = start(["zsh", "-f"])
    assert sh.run("echo ${ZSHRC_READ-unread}").output.startswith("unread")
    assert sh.run("[[ -o rcs ]] || echo norcs; [[ -o globalrcs ]] && echo globalrcs").output.startswith(
        "norcs\r\nglobalrcs"
    )
    assert sh.run("false").status == 1


def test_zsh_with_the_users_zdotdir(start, home, tmp_path):
    zdot = tmp_path / "zdot"
    zdot.mkdir()
    (zdot / ".zshrc").write_text("ZDOT_READ=yes\nPS1='zdot%# '\n")
    sh = start(["zsh"], env={"ZDOTDIR": str(zdot)})
    result = sh.run('echo ${ZDOT_READ-unread} ${ZSHRC_READ-unread}; zsh -fc \'echo "child:$ZDOTDIR"\'')
    assert result.output.startswith(f"yes unread\r\nchild:{zdot}\r\n")
    assert sh.run("false").status == 1


def test_zsh_zshenv_may_move_zdotdir(start, home):
    (home / "conf").mkdir()
    (home / ".zshenv").write_text("ZDOTDIR=$HOME/conf\n")
    (home / "conf" / ".zshrc").write_text("CONF_READ=yes\n")
    sh = start(["zsh"])
    assert sh.run('echo ${CONF_READ-unread} ${ZSHRC_READ-unread} "$ZDOTDIR"').output.startswith(
        f"yes unread {home}/conf"
    )


def test_zsh_gets_its_zdotdir_back_when_the_user_turns_startup_files_off(start, home):
    (home / ".zshenv").write_text("unsetopt rcs\n")
    sh = start(["zsh"], wait_prompt=False)
    sh.write('echo "zdotdir:${ZDOTDIR-unset}"\n')
    sh.wait_text("zdotdir:unset")
    assert sh.events == []  # no .zshrc, ours included: no integration


def test_zsh_login_reads_zprofile_and_zlogin(start, home):
    (home / ".zprofile").write_text("ZPROFILE_READ=yes\n")
    (home / ".zlogin").write_text("ZLOGIN_READ=yes\n")
    sh = start(["zsh", "-l"])
    result = sh.run("echo $ZPROFILE_READ $ZSHRC_READ $ZLOGIN_READ ${ZDOTDIR-unset}; [[ -o login ]] && echo login")
    assert result.output.startswith("yes yes yes unset\r\nlogin")


@both
def test_a_command_typed_while_another_runs(start, shell, tmp_path):
    sh = start([shell])
    flag = tmp_path / "flag"
    first = sh.write(f"until [ -e {flag} ]; do sleep 0.05; done\n")
    sh.wait_event("C", first)
    second = sh.write("echo typed-ahead\n")
    flag.touch()
    prompt = sh.wait_event("A", second)
    ours = [e for e in sh.events[second : prompt + 1] if e.ours and e.kind != "B"]
    assert [(e.kind, e.exit_status, e.typeahead) for e in ours] == [
        ("D", 0, False),
        ("A", None, True),
        ("C", None, False),
        ("D", 0, False),
        ("A", None, False),
    ]
    assert "typed-ahead\r\n" in sh.text[ours[2].index : ours[3].index]


@both
def test_ctrl_c_at_the_prompt_gives_a_prompt_without_status(start, shell):
    sh = start([shell])
    sh.editing()
    sh.write("echo never")
    # the line editor echoes it (the terminal's own echo is off): it reads keys, so
    # Ctrl-C is a key to it, not a signal to a shell still setting up
    sh.wait_text("echo never")
    sh.wait_blocked_reading()
    mark = sh.write("\x03")
    prompt = sh.wait_event("A", mark)
    assert kinds([e for e in sh.events[mark:prompt] if e.ours]) == []
    assert "never\r\n" not in sh.text
    assert sh.run("echo after").output.startswith("after")


@both
def test_ctrl_c_during_a_command(start, shell):
    sh = start([shell])
    mark = sh.write("sleep 100\n")
    sh.wait_event("C", mark)
    sh.wait_foreground("sleep")
    interrupt = sh.write("\x03")
    prompt = sh.wait_event("A", interrupt)
    assert [e.exit_status for e in sh.events[interrupt:prompt] if e.ours and e.kind == "D"] == [130]


@both
def test_a_nested_shell_is_not_integrated(start, shell):
    sh = start([shell])
    mark = sh.write(f"{shell}\n")
    c = sh.wait_event("C", mark)
    sh.wait_text("user2[", sh.events[c].index)
    sh.write("echo inner-$((40+2)); env | grep -c UEXEC_\n")
    sh.wait_text("inner-42\r\n0\r\n")
    sh.wait_text("user2[1]")  # grep -c found nothing: the inner prompt shows its status
    assert sh.events[c + 1 :] == []  # the inner shell printed no marker at all
    exit_mark = sh.write("exit\n")
    prompt = sh.wait_event("A", exit_mark)
    assert [e.exit_status for e in sh.ours(exit_mark, "D")] == [1]  # the inner shell's last status
    assert sh.events[prompt].index > sh.text.rfind("user2[")


@both
def test_an_exported_ps1_carries_no_marker_into_a_nested_shell(start, home, shell):
    # PS1 came from the environment, so it stays exported when the rc file sets it
    (home / ".bashrc").write_text("PS1='exported$ '\n")
    (home / ".zshrc").write_text("PS1='exported$ '\n")
    sh = start([shell], env={"PS1": "$ "})
    mark = sh.write("bash --norc\n" if shell == "bash" else "zsh -f\n")
    c = sh.wait_event("C", mark)
    sh.wait_text("exported$ ", sh.events[c].index)
    sh.write("echo inner\n")
    sh.wait_text("inner\r\n")
    sh.wait_text("exported$ ", sh.text.find("inner\r\n"))
    assert sh.events[c + 1 :] == []
    exit_mark = sh.write("exit\n")
    sh.wait_event("A", exit_mark)


def test_a_prompt_that_ends_in_a_dollar_sign_stays_as_it_is(start):
    # `%env PS1=$ ` in IPython exports PS1="$": our reference must not make it `$$`.
    sh = start(["bash", "--norc", "-i"], env={"PS1": "$"})
    sh.started()
    run = sh.run("echo ok")
    assert run.status == 0
    sh.editing()  # the prompt is drawn
    prompt = sh.text[sh.text.rfind("ok\r\n") + len("ok\r\n") :]
    assert prompt.endswith("$") and str(sh.pty.pid) not in prompt


@both
def test_a_read_prompt_is_not_a_shell_prompt(start, shell):
    sh = start([shell])
    line = "read -r 'v?name? '" if shell == "zsh" else "read -r -p 'name? ' v"
    mark = sh.write(line + "; echo got-$v\n")
    c = sh.wait_event("C", mark)
    sh.wait_text("name? ", sh.events[c].index)
    assert sh.events[c + 1 :] == []
    answer = sh.write("bob\n")
    prompt = sh.wait_event("A", answer)
    d = sh.ours(answer, "D")
    assert [e.exit_status for e in d] == [0]
    assert "got-bob\r\n" in sh.text[sh.events[c].index : sh.events[prompt].index]


@both
def test_fake_markers_do_not_count(start, shell, tmp_path):
    log = tmp_path / "recorded.log"
    log.write_text("\x1b]133;D;0;uexec=0123456789abcdef\a\x1b]133;A;uexec=0123456789abcdef\a")
    sh = start([shell])
    result = sh.run(
        r"printf '\033]133;D;0\a\033]133;A\a'; printf '\033]133;A;uexec=wrong\a'; cat " + str(log) + "; false"
    )
    assert result.status == 1
    foreign = [e for e in result.events if not e.ours]
    assert [(e.kind, e.exit_status) for e in foreign] == [("D", 0), ("A", None), ("A", None), ("D", 0), ("A", None)]
    assert "\x1b]133;" not in sh.text


@both
def test_exit_ends_without_a_status(start, shell):
    sh = start([shell])
    mark = sh.write("exit 4\n")
    sh.wait_exit()
    assert sh.exit_status == 4
    assert kinds(sh.ours(mark), "B") == ["C"]
