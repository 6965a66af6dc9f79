"""Start bash or zsh so that they report where prompts and commands begin and end.

A program reading a terminal cannot tell when a command typed into a shell is done:
the shell says nothing when it finishes one. Terminals (VS Code, iTerm2, WezTerm,
kitty) solve this with OSC 133 "semantic prompt" markers that a small script makes
the shell print; `integrate` rewrites a shell's argv and environment so that it
loads ours (in `shell_scripts/`), without touching any file of the user's:

- bash, by default or with `--rcfile F`: our file becomes bash's `--rcfile` and
  sources what bash would have read (F, else `~/.bashrc`) before adding its hooks.
  bash still reads its system file (`/etc/bash.bashrc` on Debian) first, as always.
- bash with `--norc`, or a login shell (`-l`, `--login`): bash reads its own startup
  files (none, or the profile ones) unchanged, and the environment's PROMPT_COMMAND
  sources our file at the first prompt. A profile that assigns PROMPT_COMMAND from
  scratch drops it: that shell runs unintegrated.
- zsh: ZDOTDIR points at our startup files, each of which sources the user's file
  of the same name from the original ZDOTDIR (else HOME) and, after the last one,
  gives ZDOTDIR back. `zsh -f` becomes a zsh whose files are ours alone (`-f` also
  skips the global ones after `/etc/zsh/zshenv`; our .zshenv turns them off).

Markers are `ESC ] 133 ; <kind> [; <status>] ; uexec=<nonce> [; typeahead=1] BEL`:
`A` prompt start, `B` prompt end, `C` command output start, `D;<status>` the
command line finished (no D when a line ran no command: empty, a comment, a syntax
error, Ctrl-C at the prompt). `typeahead=1` on an A says a complete line was already
waiting, so the shell runs it at once instead of waiting for input.

The nonce never enters an environment: the shell reads it from a pipe on
descriptor HANDOFF_FD (the environment says which: NONCE_VARIABLE) and closes it
before any user file runs, so no process can read it from /proc/PID/environ, and
nothing started inside the shell, nested shells included, inherits it. The scripts
remove every UEXEC_* variable from the shell's environment at the same time, and
their hooks run with their trace hidden, so `set -x` (`setopt xtrace`) shows none
of them. The caller hands the nonce to the spawn (`spawn_pty(handoff=...)`).

Not integrated (`integrate` returns None): other programs; a shell that runs a
command or a script (`-c`, a script operand without `-s`) or prints and exits
(`--version`, `--help`, dumps); bash in POSIX mode (`--posix`, `-o posix`: it reads
$ENV, not an rc file) or restricted (`-r`, `--restricted`); zsh emulating another
shell (`--emulate`) or privileged (`-p`). bash older than 4.4 (no PS0) runs the
user's startup files unchanged and prints no markers.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..process.spawn import HANDOFF_FD
from ..errors import quoted

SCRIPTS = Path(__file__).with_name("shell_scripts")
BASH_SCRIPT = SCRIPTS / "bash-integration.sh"
ZSH_DOTDIR = SCRIPTS / "zsh"

NONCE_VARIABLE = "UEXEC_SHELL_INTEGRATION"
# Every variable the scripts read; an inherited stale one is dropped first.
PARENT_PID_VARIABLE = "UEXEC_PARENT_PID"
"""The pid of the process that spawns the shell: a process other than this one (a kept session's
keeper) puts its own there (keeper_process.py), as the script checks it against `$PPID`."""
_OUR_VARIABLES = (
    NONCE_VARIABLE,
    "UEXEC_BASH_STARTUP",
    "UEXEC_BASH_RCFILE",
    "UEXEC_BASH_BOOTSTRAP",
    "UEXEC_BASH_PROMPT_COMMAND",
    PARENT_PID_VARIABLE,
    "UEXEC_ZSH_ZDOTDIR",
    "UEXEC_ZSH_NORCS",
)
# The scripts paste the nonce into prompt strings: nothing there may be special.
_NONCE = re.compile(r"[0-9A-Za-z_-]{1,64}")

_BASH_LONG_OPTIONS = {
    "debug", "debugger", "dump-po-strings", "dump-strings", "help", "init-file", "login",
    "noediting", "noprofile", "norc", "posix", "pretty-print", "rcfile", "restricted",
    "verbose", "version", "wordexp",
}  # fmt: skip
_BASH_NOT_INTEGRATED = {
    "dump-po-strings", "dump-strings", "help", "posix", "pretty-print", "restricted",
    "version", "wordexp",
}  # fmt: skip


def new_nonce() -> str:
    """A fresh per-session nonce: 64 random bits, hex."""
    return secrets.token_hex(8)


def integrate(
    argv: Sequence[str],
    env: Mapping[str, str],
    nonce: str,
    *,
    parent_pid: int | None = None,
) -> tuple[list[str], dict[str, str]] | None:
    """The argv and environment that start this shell integrated, or None to start it as given.

    `parent_pid` is the pid of the process that will spawn the shell (default: this
    one): a bash started through PROMPT_COMMAND integrates only if its parent is that
    process, so a shell that its own startup files start (tmux, screen) and that
    inherits the bootstrap stays unintegrated.
    """
    if not _NONCE.fullmatch(nonce):
        raise ValueError(f"shell integration nonce must be 1-64 letters, digits, '-' or '_', not {quoted(nonce)}")
    if not argv:
        return None
    program = os.path.basename(argv[0])
    clean_env = {key: value for key, value in env.items() if key not in _OUR_VARIABLES}
    if program == "bash" and BASH_SCRIPT.is_file():
        return _integrate_bash(list(argv), clean_env, nonce, os.getpid() if parent_pid is None else parent_pid)
    if program == "zsh" and (ZSH_DOTDIR / ".zshenv").is_file():
        return _integrate_zsh(list(argv), clean_env, nonce)
    return None


def _integrate_bash(
    argv: list[str], env: dict[str, str], nonce: str, parent_pid: int
) -> tuple[list[str], dict[str, str]] | None:
    # bash reads its long options first (one or two dashes), then single letters.
    rcfile: str | None = None
    login = norc = False
    long_kept: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-", "--") or not arg.startswith("-"):
            break
        name = arg[2:] if arg.startswith("--") else arg[1:]
        if name not in _BASH_LONG_OPTIONS:
            if arg.startswith("--"):
                return None  # bash refuses an unknown long option
            break
        if name in _BASH_NOT_INTEGRATED:
            return None
        if name in ("rcfile", "init-file"):
            if i + 1 >= len(argv):
                return None
            rcfile = argv[i + 1]
            i += 2
            continue
        login = login or name == "login"
        norc = norc or name == "norc"
        long_kept.append(arg)
        i += 1
    rest = argv[i:]

    reads_stdin = False
    j = i
    while j < len(argv):
        arg = argv[j]
        if arg in ("-", "--"):
            j += 1
            break
        if len(arg) < 2 or arg[0] not in "-+":
            break
        letters = arg[1:]
        if "c" in letters or "D" in letters or (arg[0] == "-" and "r" in letters):
            return None
        login = login or (arg[0] == "-" and "l" in letters)
        reads_stdin = reads_stdin or "s" in letters
        takes = [letter for letter in letters if letter in "oO"]
        values = argv[j + 1 : j + 1 + len(takes)]
        if len(values) < len(takes):
            return None
        if arg[0] == "-" and any(letter == "o" and value == "posix" for letter, value in zip(takes, values)):
            return None
        j += 1 + len(takes)
    if argv[j:] and not reads_stdin:
        return None  # a script

    env[NONCE_VARIABLE] = str(HANDOFF_FD)
    if login or norc:
        # bash reads its startup files itself; ours comes in at the first prompt
        # its trace hidden too, should a profile have turned on `set -x`
        bootstrap = "{ . " + shlex.quote(str(BASH_SCRIPT)) + "; } 2>/dev/null"
        env["UEXEC_BASH_STARTUP"] = "prompt"
        env["UEXEC_BASH_BOOTSTRAP"] = bootstrap
        env[PARENT_PID_VARIABLE] = str(parent_pid)
        if "PROMPT_COMMAND" in env:
            env["UEXEC_BASH_PROMPT_COMMAND"] = env["PROMPT_COMMAND"]
        env["PROMPT_COMMAND"] = bootstrap
        return argv, env
    env["UEXEC_BASH_STARTUP"] = "rcfile"
    if rcfile is not None:
        env["UEXEC_BASH_RCFILE"] = rcfile
    return [argv[0], "--rcfile", str(BASH_SCRIPT), *long_kept, *rest], env


def _zsh_option(name: str) -> str:
    """zsh ignores case, '_' and '-' in option names."""
    return name.lower().replace("_", "").replace("-", "")


def _integrate_zsh(argv: list[str], env: dict[str, str], nonce: str) -> tuple[list[str], dict[str, str]] | None:
    norcs = False
    reads_stdin = False
    kept = [argv[0]]
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-", "--"):
            kept.append(arg)
            i += 1
            break
        if len(arg) < 2 or arg[0] not in "-+":
            break
        on = arg[0] == "-"
        if arg.startswith("--"):
            name = _zsh_option(arg[2:])
            if name in ("version", "help", "privileged") or name.startswith("emulate"):
                return None
            if name in ("rcs", "norcs"):
                norcs = (name == "norcs") == on
                i += 1
                continue  # our .zshenv does what NO_RCS would
            if name in ("shinstdin", "noshinstdin"):
                reads_stdin = (name == "shinstdin") == on
            kept.append(arg)
            i += 1
            continue
        letters = arg[1:]
        if "c" in letters or (on and "p" in letters):
            return None
        takes = letters.count("o")
        values = iter(argv[i + 1 : i + 1 + takes])
        if i + 1 + takes > len(argv):
            return None
        stay_letters: list[str] = []
        stay_values: list[str] = []
        for letter in letters:
            if letter == "f":
                norcs = on
                continue  # our .zshenv does what NO_RCS would: zsh must still read it
            if letter == "s":
                reads_stdin = on
            if letter == "o":
                value = next(values)
                name = _zsh_option(value)
                if name in ("rcs", "norcs"):
                    norcs = (name == "norcs") == on
                    continue
                if name in ("privileged", "noprivileged") and (name == "privileged") == on:
                    return None
                if name == "shinstdin":
                    reads_stdin = on
                stay_values.append(value)
            stay_letters.append(letter)
        if stay_letters:
            kept.append(arg[0] + "".join(stay_letters))
        kept.extend(stay_values)
        i += 1 + takes
        if "b" in letters:  # the end of the options, like --
            break
    if argv[i:] and not reads_stdin:
        return None  # a script

    env[NONCE_VARIABLE] = str(HANDOFF_FD)
    user_zdotdir = env.get("ZDOTDIR")
    if user_zdotdir is not None and os.path.realpath(user_zdotdir) != os.path.realpath(ZSH_DOTDIR):
        env["UEXEC_ZSH_ZDOTDIR"] = user_zdotdir
    if norcs:
        env["UEXEC_ZSH_NORCS"] = "1"
    env["ZDOTDIR"] = str(ZSH_DOTDIR)
    return [*kept, *argv[i:]], env

