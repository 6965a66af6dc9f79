"""`%%uexec`, `%uexec`, `%uexec_sessions`, `%uexec_kill`, `%uexec_output`, `%uexec_record`, `%uexec_replay`: parse the line, hand on the request.

Waiting for a session need not block the kernel's loop (a cell's display
updates, interrupts and other comm traffic run there; the sessions themselves
are read on the engine's own loop), so `rewrite.py` turns a top-level
`%%uexec` cell and `%uexec`, `%uexec_kill`, ... lines into `await`s of the
coroutines here, which ipykernel runs as a task on its loop. Where a cell
cannot await (inside `%time`, `%%capture`, a loop's `run_line_magic`, an
indented line, `%autoawait off`), the registered magic runs the same
coroutine to its end on the calling thread (blocking.py): the sessions go on
on the engine's thread, the cell's display is updated from this one.
Each request is a `Turn`, as every call of sessions.py makes one.

The `argument` decorators are the one table of options: `%%uexec?` prints
them, and the line splitter asks the same parser which options take a value.
The parser is made from them the first time a magic is used or its help is
asked for (`parser_of`), not at every kernel's start.
"""

from __future__ import annotations

import argparse
import functools
import signal

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument
from IPython.display import display

from ..core.journal.format import DEFAULT_IDLE_LIMIT_S
from .cell_output import CellOutput
from .cell_run import CellRequest, run_in_cell
from ..core.completion.collect import compile_until
from ..core.errors import UnifiedExecError, one_line, quoted
from ..core.keys import keys_text, signal_number
from ..core.manager import UnifiedExecSessionManager
from ..jupyter.bridge import Bridge
from ..jupyter.remote import kept_sessions_here
from . import shell_words
from .blocking import run_blocking
from .turns import Turn


def _session_key(text: str) -> int | str:
    """A session is named by its id or its name."""
    return int(text) if text.lstrip("-").isdigit() else text


def _one_line(run):
    """A magic's UsageError as one bounded line, whatever was typed (argparse and the engine echo what they were given)."""

    @functools.wraps(run)
    async def bounded(*args, **kwargs):
        try:
            return await run(*args, **kwargs)
        except UsageError as error:
            raise UsageError(one_line(error)) from None

    return bounded


def _options_on_first_use(magic):
    """In place of IPython's `magic_arguments()`, which made every magic's parser and help text
    as the module loaded: 3 ms and 43 KiB in each kernel, most of which never asks for help."""
    magic.getdoc = functools.partial(_usage, magic)  # what `%%uexec?` and a help tooltip show (IPython's oinspect)
    return magic


def parser_of(magic) -> argparse.ArgumentParser:
    """The magic's parser, made from its `argument` table the first time; its docstring becomes the usage."""
    function = getattr(magic, "__func__", magic)
    parser = function.__dict__.get("parser")
    if parser is None:
        from IPython.core.magic_arguments import construct_parser

        parser = function.parser = construct_parser(function)
        # IPython writes the usage as an reST literal block; `%%uexec?` showed its `::`.
        if function.__doc__.startswith("::\n"):
            function.__doc__ = function.__doc__[len("::\n") :].lstrip("\n")
    return parser


def _usage(function) -> str:
    parser_of(function)
    return function.__doc__


@magics_class
class UnifiedExecMagics(Magics):
    """Parse and dispatch; most of its length is the option table, which documents `%%uexec?`."""

    def __init__(
        self, shell, manager: UnifiedExecSessionManager, bridge: Bridge, *, shell_program: str = "bash", live_view=None, check: bool = False
    ):
        """`live_view` makes the view `--live` shows (the extension passes the live face's `LiveViews`).

        `check`: fail a cell on a non-zero exit unless it says --no-check.
        """
        super().__init__(shell)
        self.manager = manager
        self.bridge = bridge  # the manager's sessions live on the engine's loop
        self.shell_program = shell_program
        self.check = check
        self.live_view = live_view

    # -- %%uexec / %uexec ----------------------------------------------------

    @_options_on_first_use
    @argument("-s", "--session", type=_session_key, metavar="ID|NAME", help="write the body to this session (an id or a name) instead of starting one")
    @argument("-t", "--timeout", type=int, metavar="MS", help="how long to collect output at most, in ms (default 1000; typing a command into an integrated shell: 60000, its maximum)")
    @argument("--name", metavar="NAME", help="name the new session, so later cells can say -s NAME (free again once it has exited)")
    @argument("--until", metavar="REGEX", help="stop waiting as soon as a line of the output matches (Python re; ^ and $ are the line's start and end), e.g. --until '^ready$', or '>>> $' for a Python REPL")
    @argument("--quiet", type=int, metavar="MS", help="stop waiting once output came and then nothing for MS")
    @argument("--check", action="store_true", default=None, help="fail the cell (one line, after the output) when the program, or the command typed into an integrated shell, exits non-zero, as %%%%bash does; c.UnifiedExec.check makes it the default")
    @argument("--no-check", dest="check", action="store_false", default=None, help="do not fail the cell on a non-zero exit (when c.UnifiedExec.check is on)")
    @argument("--cwd", metavar="DIR", help="working directory of the new session")
    @argument("--env", action="append", metavar="KEY=VALUE", help="environment variable for the new session (repeatable)")
    @argument("--no-integration", action="store_true", help="start bash or zsh as it is, without the prompt markers that tell when a typed command is done")
    @argument("--keep", action="store_true", default=None, help="keep the new session across kernel restarts (and crashes): it is held outside the kernel until the next kernel takes it back; c.UnifiedExec.keep_sessions makes it the default")
    @argument("--shell", action="store_true", help="run the body as a script with bash (a new session)")
    @argument("--keys", nargs="+", metavar="KEY", help="named keys sent after the body: C-c, C-d, Enter, Tab, Escape, Up, Down, Left, Right, BSpace (on a %%uexec line they take the rest of the line)")
    @argument("--no-newline", action="store_true", help="write the body without its trailing newline")
    @argument("--raw", action="store_true", help="show the terminal text untouched (no rendering of \\r, colours kept as escapes)")
    @argument("--format", choices=["text", "agent"], default="text", help="agent: report as Codex's exec tool does (wall time, exit code or session id, token count, output)")
    @argument("--out", metavar="VAR", help="store the UnifiedExecResult in this variable, as sessions.run returns it: its output what the program (or the typed command) printed, lines ending in \\n (--raw: as the terminal sent it, echo and prompt included)")
    @argument("--live", action="store_true", help="show the session in a live terminal (keeps updating after the cell; type into it)")
    @no_var_expand  # `$HOME` and `{x}` are the shell's business, not IPython's
    @line_cell_magic
    def uexec(self, line, cell=None):
        """Run a command in a pseudo-terminal session, or type into a running one.

        Without --session the body is the command line (split like a shell
        would, not run by one; use --shell for pipes and scripts) and starts a
        new session. With --session ID the body is typed into that session,
        then output is collected until the timeout or the program's exit.
        As a line magic the rest of the line is the body:
        `%uexec -s 0 ls -la`.
        """
        run_blocking(self.run_uexec(line, cell))

    @_one_line
    async def run_uexec(self, line: str, cell: str | None, more: bool = False) -> None:
        """`more`: code follows this line in its cell (the rewrite knows), which an interrupt skips."""
        options, body = split_line_magic(parser_of(self.uexec), line) if cell is None else (line, cell)
        args = _parse(self.uexec, options)
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"--out needs a variable name, not {quoted(args.out)}")
        request = self._request(args, body)
        if args.keep:
            where = kept_sessions_here()  # behind a gateway a restart may not be what --keep outlives
            if where:
                print(where)
        result = await run_in_cell(self.manager, self.bridge, request, self.live_view, more=more)
        if args.out:  # as a `sessions` call returns it (`--raw`: as it came)
            self.shell.user_ns[args.out] = CellOutput.for_python(result, raw=args.raw)
        failed = _failure(result)
        if failed and (self.check if args.check is None else args.check):
            raise UsageError(failed)

    def _request(self, args, body: str) -> CellRequest:
        if args.timeout is not None and args.timeout < 0:
            raise UsageError(f"--timeout must be 0 or more milliseconds, not {args.timeout}")
        if args.quiet is not None and args.quiet < 0:
            raise UsageError(f"--quiet must be 0 or more milliseconds, not {args.quiet}")
        try:
            compile_until(args.until, "--until")  # every option is checked before anything starts
        except ValueError as error:
            raise UsageError(str(error)) from None
        shown = {"raw": args.raw, "agent_format": args.format == "agent", "live": args.live}
        waits = {"timeout_ms": args.timeout, "until": args.until, "quiet_ms": args.quiet}
        if args.session is not None:
            if args.keep:
                raise UsageError("--keep is chosen when a session starts; a running session cannot become kept (start a new one with --keep)")
            for option, given in (("--shell", args.shell), ("--name", args.name), ("--cwd", args.cwd), ("--env", args.env), ("--no-integration", args.no_integration)):
                if given:
                    raise UsageError(f"{option} starts a new session; it cannot go with --session")
            return CellRequest(Turn(session=args.session, text=_typed(body, no_newline=args.no_newline) + _keys(args.keys), **waits), **shown)
        if args.keys:
            raise UsageError("--keys goes with --session: a new session has nothing to type into yet")
        turn = Turn(
            argv=self._command(body, script=args.shell),
            name=args.name,
            cwd=args.cwd,
            env=_environment(args.env),
            integration=False if args.no_integration else None,
            keep=args.keep,
            **waits,
        )
        return CellRequest(turn, **shown)

    def _command(self, body: str, *, script: bool) -> list[str]:
        if script:
            if not body.strip():
                raise UsageError("--shell needs a script in the cell body")
            return [self.shell_program, "-c", body.rstrip("\n")]
        try:
            argv = shell_words.split(body)
        except ValueError as error:
            raise UsageError(f"cannot split the command line: {error}") from None
        if not argv:
            raise UsageError("empty command: put the program to run after %%uexec (or in the cell)")
        return argv

    # -- %uexec_sessions / %uexec_kill ---------------------------------------

    @no_var_expand  # as every uexec magic: IPython's expansion is quadratic in the line's length
    @line_magic
    def uexec_sessions(self, line=""):
        """Show the sessions of this kernel: id, command, pid, state, exit code, age."""
        if line.strip():
            raise UsageError("%uexec_sessions takes no arguments")
        from .session_table import SessionTable  # with the first table, not with every kernel

        display(SessionTable(self.bridge.call(self.manager.list_sessions), self.manager.notes))

    @_options_on_first_use
    @argument("session", nargs="?", type=_session_key, metavar="ID|NAME", help="the session to stop")
    @argument("--all", action="store_true", help="stop every session")
    @argument("--signal", metavar="NAME", help="only send this signal (INT, TERM, KILL, HUP, ... or a number) to the foreground job")
    @no_var_expand
    @line_magic
    def uexec_kill(self, line=""):
        """Stop a session (every process in it), or send it a signal."""
        run_blocking(self.run_uexec_kill(line))

    @_one_line
    async def run_uexec_kill(self, line: str) -> None:
        args = _parse(self.uexec_kill, line)
        if (args.session is None) == (not args.all):
            raise UsageError("give a session id or --all (not both)")
        sig = _signal(args.signal) if args.signal else None
        ids = [info.session_id for info in await self.bridge.run(self.manager.list_sessions)] if args.all else [args.session]
        try:
            for session_id in ids:
                await self.bridge.run(self.manager.kill, session_id, sig)
        except (UnifiedExecError, ProcessLookupError) as error:
            raise UsageError(str(error)) from None
        if not ids:
            print("no sessions to close")
            return
        done = "closed" if sig is None else f"sent {signal.Signals(sig).name} to"
        print(f"{done} session{'s' if len(ids) != 1 else ''} {', '.join(map(str, ids))}")

    # -- %uexec_output / %uexec_record (a session's journal) -----------------

    @_options_on_first_use
    @argument("session", type=_session_key, metavar="ID|NAME", help="the session (running or finished) whose output to show")
    @argument("--head", type=int, metavar="N", help="the first N lines")
    @argument("--tail", type=int, metavar="N", help="the last N lines")
    @argument("--lines", metavar="A:B", help="lines A to B, 1-based and inclusive as sed -n A,Bp (A: to the end)")
    @argument("--bytes", metavar="START:END", help="output bytes START to END (0-based, END excluded; as a comm read and a cut result's hint say)")
    @argument("--grep", metavar="REGEX", help="only the lines that match (Python re), numbered as grep -n shows them")
    @argument("-C", "--context", type=int, default=0, metavar="N", help="with --grep: N lines of context around each match")
    @argument("--command", type=int, metavar="K", help="the output of the K-th command typed into the shell (1-based; -1 the last); the other options then count within it")
    @argument("--commands", action="store_true", help="list the commands typed into the shell, with their exit codes")
    @argument("--raw", action="store_true", help="show the terminal text untouched (no rendering of \\r, colours kept as escapes)")
    @argument("--drop", action="store_true", help="delete the session's journal now (it is kept until the kernel ends otherwise)")
    @no_var_expand
    @line_magic
    def uexec_output(self, line=""):
        """Show a slice of everything a session printed, from its journal (kept after the program ended).

        With no option: all of it (at most 1 MiB; narrow it with --head, --tail,
        --lines, --bytes, --grep, --command). `%uexec_output web --command -1 --tail 20`.
        """
        run_blocking(self.run_uexec_output(line))

    @_one_line
    async def run_uexec_output(self, line: str) -> None:
        args = _parse(self.uexec_output, line)
        from . import journal_pages  # with the renderer (pyte): at the first read, not at every kernel start
        from ..core.journal.paging import PageError, PageRequest, parse_range

        store = self.manager.journals
        if args.drop or args.commands:
            others = [option for option in ("head", "tail", "lines", "bytes", "grep", "command") if getattr(args, option) is not None]
            if others:
                raise UsageError(f"{'--drop' if args.drop else '--commands'} goes alone, not with --{others[0]}")
            if args.drop:
                journal_pages.drop(store, args.session)
            else:
                await journal_pages.list_commands(store, args.session)
            return
        try:
            request = PageRequest(
                head=args.head,
                tail=args.tail,
                lines=None if args.lines is None else parse_range(args.lines, "--lines"),
                byte_range=None if args.bytes is None else parse_range(args.bytes, "--bytes"),
                grep=args.grep,
                context=args.context,
                command=args.command,
            )
        except PageError as error:
            raise UsageError(str(error)) from None
        await journal_pages.show_output(store, args.session, request, raw=args.raw)

    @_options_on_first_use
    @argument("session", type=_session_key, metavar="ID|NAME", help="the session (running or finished) to record")
    @argument("file", metavar="FILE", help="where to write the recording (replaced if it exists)")
    @argument("--v2", action="store_true", help="write asciicast v2 (what the asciinema CLI 2.x on PyPI and older players read) instead of v3")
    @no_var_expand
    @line_magic
    def uexec_record(self, line=""):
        """Write a session's journal (so far, or all of it once the program ended) as an asciicast recording."""
        run_blocking(self.run_uexec_record(line))

    @_one_line
    async def run_uexec_record(self, line: str) -> None:
        args = _parse(self.uexec_record, line)
        from . import journal_pages

        await journal_pages.record(self.manager.journals, args.session, args.file, version=2 if args.v2 else 3)

    # -- %uexec_replay ---------------------------------------------------------

    @_options_on_first_use
    @argument("source", metavar="FILE|ID|NAME", help="an asciicast file (v3 or v2, as asciinema records), or a session whose journal to play")
    @argument("--idle", type=float, default=DEFAULT_IDLE_LIMIT_S, metavar="S", help="shorten pauses longer than S seconds (default %(default)s; 0 keeps them; a recording's idle_time_limit wins)")
    @no_var_expand
    @line_magic
    def uexec_replay(self, line=""):
        """Play a recording in the notebook: play/pause, speed, seek, and a chapter per command the shell ran."""
        run_blocking(self.run_uexec_replay(line))

    @_one_line
    async def run_uexec_replay(self, line: str) -> None:
        args = _parse(self.uexec_replay, line)
        if args.idle < 0:
            raise UsageError(f"--idle must be 0 or more seconds, not {args.idle:g}")
        from . import replays

        await replays.show_replay(self.manager.journals, args.source, self.live_view, idle_limit=args.idle or None)


def split_line_magic(parser: argparse.ArgumentParser, line: str) -> tuple[str, str]:
    """Split `%uexec` options from its body, keeping the body exactly as typed.

    The options end at the first word that is not an option or an option's
    value, as the magic's own parser defines them; `--` ends them too. Only
    the options are tokenised (as a shell would), never the body.
    """
    tokens = shell_words.words(line)  # lazily: the body is never tokenised
    end = values_due = 0
    while True:
        start = _skip_blanks(line, end)
        if start >= len(line):
            return line, ""
        if not values_due and not line.startswith("-", start):
            return line[:start], line[start:]
        try:
            token, end = next(tokens)
        except StopIteration:
            return line, ""
        except ValueError as error:
            raise UsageError(f"cannot read the options: {error}") from None
        if values_due:
            values_due -= 1
            continue
        if token == "--":
            return line[:start], line[_skip_blanks(line, end) :]
        action = _option(parser, token)
        if action is None:
            continue  # not ours: the parser will say so
        if action.nargs in ("+", "*", argparse.REMAINDER):
            return line, ""  # --keys takes the rest of the line
        if "=" not in token:
            values_due = 1 if action.nargs is None else action.nargs if isinstance(action.nargs, int) else 0


def _parse(magic, line: str):
    """The options as a shell would split them (IPython's own splitter keeps the quotes)."""
    try:
        words = shell_words.split(line)
    except ValueError as error:  # an unbalanced quote
        raise UsageError(f"cannot read the options: {error}") from None
    return parser_of(magic).parse_args(words)  # its errors are UsageErrors


def _option(parser: argparse.ArgumentParser, token: str) -> argparse.Action | None:
    name = token.split("=", 1)[0]
    actions = parser._option_string_actions  # argparse's own table of option strings
    if name in actions:
        return actions[name]
    matches = {actions[known] for known in actions if name.startswith("--") and known.startswith(name)}
    return matches.pop() if len(matches) == 1 else None


def _skip_blanks(line: str, position: int) -> int:
    while position < len(line) and line[position] in " \t":
        position += 1
    return position


def _environment(pairs: list[str] | None) -> dict[str, str] | None:
    if not pairs:
        return None
    environment = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key or "\0" in pair:
            raise UsageError(f"--env needs KEY=VALUE, not {quoted(pair)}")
        environment[key] = value
    return environment


def _failure(result) -> str | None:
    """What --check fails a cell for: a program's non-zero exit, or a typed command's."""
    if result.exit_code not in (None, 0):
        return f"the program exited with code {result.exit_code}"
    if result.command_exit_code not in (None, 0):
        return f"the command exited with code {result.command_exit_code}"
    return None


def _typed(body: str, *, no_newline: bool) -> str:
    if not body:
        return ""
    if no_newline:
        return body[:-1] if body.endswith("\n") else body
    return body if body.endswith("\n") else body + "\n"


def _keys(names: list[str] | None) -> str:
    try:
        return keys_text(names or [])
    except ValueError as error:
        raise UsageError(str(error)) from None


def _signal(name: str) -> int:
    try:
        return signal_number(name)
    except ValueError as error:
        raise UsageError(str(error)) from None
