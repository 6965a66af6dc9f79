"""`%%uexec`, `%uexec`, `%uexec_sessions`, `%uexec_kill`: the notebook face of the engine.

Waiting for a session must not block the kernel's loop (that loop reads every
session, feeds live views and runs timers). A synchronous magic would block
it, so `extension.py` rewrites `%%uexec` cells and `%uexec`/`%uexec_kill`
lines into `await`s of the coroutines here, which ipykernel runs as a task on
its loop. The registered magics remain for calls that bypass the rewrite
(`run_cell_magic`, `%autoawait off`): they start the same coroutine as a
background task, whose output still lands in the calling cell.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import signal
import time
from dataclasses import replace

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .cell_output import CellOutput, status_line
from .core.agent_format import format_for_agent
from .core.errors import UnifiedExecError
from .core.keys import keys_text, signal_number
from .core.manager import UnifiedExecSessionManager
from .core.models import UnifiedExecRequest, UnifiedExecResult

# Options of %uexec that take a value; the line magic's body starts after them.
_VALUE_OPTIONS = {"-s", "--session", "-t", "--timeout", "--out", "--format"}


@magics_class
class UnifiedExecMagics(Magics):
    def __init__(self, shell, manager: UnifiedExecSessionManager, *, shell_program: str = "bash", live_view=None):
        """`live_view(session_id)` makes the widget `--live` shows (the extension passes TerminalWidget)."""
        super().__init__(shell)
        self.manager = manager
        self.shell_program = shell_program
        self.live_view = live_view
        self._background: set[asyncio.Task] = set()

    # -- %%uexec / %uexec ----------------------------------------------------

    @magic_arguments()
    @argument("-s", "--session", type=int, metavar="ID", help="write the body to this session instead of starting one")
    @argument("-t", "--timeout", type=int, metavar="MS", help="how long to collect output, in ms (default 1000, at most 60000)")
    @argument("--shell", action="store_true", help="run the body as a script with bash (a new session)")
    @argument("--keys", nargs="+", metavar="KEY", help="named keys sent after the body: C-c, C-d, Enter, Tab, Escape, Up, Down, Left, Right, BSpace (on a %%uexec line they take the rest of the line)")
    @argument("--no-newline", action="store_true", help="write the body without its trailing newline")
    @argument("--raw", action="store_true", help="show the terminal text untouched (no rendering of \\r, colours kept as escapes)")
    @argument("--format", choices=["text", "agent"], default="text", help="agent: report as Codex's exec tool does (wall time, exit code or session id, token count, output)")
    @argument("--out", metavar="VAR", help="store the UnifiedExecResult in this variable")
    @argument("--live", action="store_true", help="show the session in a live terminal (keeps updating after the cell; type into it)")
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
        self._in_background(self.run_uexec(line, cell))

    async def run_uexec(self, line: str, cell: str | None) -> None:
        if cell is None:
            options_text, body = split_line_magic(line)
        else:
            options_text, body = line, cell
        args = parse_argstring(self.uexec, options_text)
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"--out needs a variable name, not {args.out!r}")
        request = self._request(args, body)
        _wake_on_signals()
        if args.live:
            result = await self._collect_live(request, raw=args.raw)
        else:
            view = CellOutput(raw=args.raw or args.format == "agent")
            result, interrupted = await self._collect(request, view)
            if args.format == "agent":
                view.finish_text(format_for_agent(result))
            else:
                view.finish(result, interrupted=interrupted)
        if args.out:
            self.shell.user_ns[args.out] = result

    async def _collect_live(self, request: UnifiedExecRequest, *, raw: bool) -> UnifiedExecResult:
        """Show the session's live view first, then wait as usual; the view shows the output."""
        if self.live_view is None:
            raise UsageError("--live needs ipywidgets and a kernel (the live view is a widget)")
        first = None
        if request.session_id is None:
            # Start it without waiting, so the view appears before the program prints.
            first, _ = await self._collect(UnifiedExecRequest(None, request.input_chunks, 0), None)
            if first.session_id is None:
                CellOutput(raw=raw).finish(first)  # gone already: nothing to watch live
                return first
            request = UnifiedExecRequest(first.session_id, (), request.timeout_ms)
        try:
            display(self.live_view(request.session_id))
        except UnifiedExecError as error:
            raise UsageError(str(error)) from None
        result, interrupted = await self._collect(request, None)
        if first is not None:
            result = replace(result, output=first.output + result.output, wall_time=first.wall_time + result.wall_time)
        print(status_line(result, interrupted=interrupted))
        return result

    def _request(self, args, body: str) -> UnifiedExecRequest:
        if args.timeout is not None and args.timeout < 0:
            raise UsageError(f"--timeout must be 0 or more milliseconds, not {args.timeout}")
        keys = _keys(args.keys)
        if args.session is None:
            if args.keys:
                raise UsageError("--keys goes with --session: a new session has nothing to type into yet")
            if args.shell:
                if not body.strip():
                    raise UsageError("--shell needs a script in the cell body")
                argv = [self.shell_program, "-c", body.rstrip("\n")]
            else:
                try:
                    argv = shlex.split(body)
                except ValueError as error:
                    raise UsageError(f"cannot split the command line: {error}") from None
                if not argv:
                    raise UsageError("empty command: put the program to run after %%uexec (or in the cell)")
            return UnifiedExecRequest(None, argv, args.timeout)
        if args.shell:
            raise UsageError("--shell starts a new session; it cannot go with --session")
        text = _typed(body, no_newline=args.no_newline) + keys
        return UnifiedExecRequest(args.session, [text] if text else [], args.timeout)

    async def _collect(self, request: UnifiedExecRequest, view: CellOutput | None) -> tuple[UnifiedExecResult, bool]:
        """Run the request; an interrupt (the stop button) ends the wait but keeps the session."""
        stop = asyncio.Event()
        on_output = view.feed if view is not None else None
        work = asyncio.ensure_future(self.manager.handle_request(request, on_output=on_output, stop=stop))
        try:
            try:
                return await asyncio.shield(work), False
            except asyncio.CancelledError:
                if work.done() and work.cancelled():
                    raise
                stop.set()
                _uncancel()
                return await work, True
        except UnifiedExecError as error:
            raise UsageError(str(error)) from None

    # -- %uexec_sessions / %uexec_kill ---------------------------------------

    @line_magic
    def uexec_sessions(self, line=""):
        """Show the sessions of this kernel: id, command, pid, state, exit code, age."""
        if line.strip():
            raise UsageError("%uexec_sessions takes no arguments")
        display(SessionTable(self.manager.list_sessions()))

    @magic_arguments()
    @argument("session", nargs="?", type=int, metavar="ID", help="the session to stop")
    @argument("--all", action="store_true", help="stop every session")
    @argument("--signal", metavar="NAME", help="only send this signal (INT, TERM, KILL, HUP, ... or a number) to the foreground job")
    @line_magic
    def uexec_kill(self, line=""):
        """Stop a session (every process in it), or send it a signal."""
        self._in_background(self.run_uexec_kill(line))

    async def run_uexec_kill(self, line: str) -> None:
        args = parse_argstring(self.uexec_kill, line)
        if (args.session is None) == (not args.all):
            raise UsageError("give a session id or --all (not both)")
        sig = _signal(args.signal) if args.signal else None
        ids = [info.session_id for info in self.manager.list_sessions()] if args.all else [args.session]
        try:
            for session_id in ids:
                await self.manager.kill(session_id, sig)
        except (UnifiedExecError, ProcessLookupError) as error:
            raise UsageError(str(error)) from None
        if not ids:
            print("no sessions to close")
            return
        if sig is None:
            done = "closed"
        else:
            done = f"sent {signal.Signals(sig).name if sig in signal.valid_signals() else f'signal {sig}'} to"
        print(f"{done} session{'s' if len(ids) != 1 else ''} {', '.join(map(str, ids))}")

    # -- plumbing ------------------------------------------------------------

    def _in_background(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)

        def done(finished: asyncio.Task) -> None:
            self._background.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                error = finished.exception()
                if isinstance(error, UsageError):
                    print(f"UsageError: {error}")
                else:
                    self.shell.showtraceback((type(error), error, error.__traceback__))

        task.add_done_callback(done)


def split_line_magic(line: str) -> tuple[str, str]:
    """Split `%uexec` options from its body, keeping the body exactly as typed."""
    tokens = list(re.finditer(r"\S+", line))
    index = 0
    while index < len(tokens):
        token = tokens[index].group()
        if token == "--":
            return line[: tokens[index].start()], line[tokens[index].end() :].lstrip(" ")
        if not token.startswith("-"):
            break
        if token == "--keys":
            return line, ""
        index += 2 if token in _VALUE_OPTIONS else 1
    if index >= len(tokens):
        return line, ""
    start = tokens[index].start()
    return line[:start], line[start:]


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


def _wake_on_signals() -> None:
    """Let an interrupt reach an idle loop at once.

    ipykernel cancels an awaiting cell from a Python SIGINT handler, which only
    runs when the main thread wakes up; an idle loop sleeps in its selector
    until its next timer. Any asyncio signal handler installs the loop's
    wakeup fd, so every signal then wakes the selector within milliseconds.
    SIGWINCH is one a kernel (which has no terminal) never otherwise gets.
    """
    loop = asyncio.get_running_loop()
    if getattr(loop, "_uexec_wakeup", False):
        return
    try:
        loop.add_signal_handler(signal.SIGWINCH, lambda: None)
    except (RuntimeError, ValueError, NotImplementedError):
        return  # not the main thread, or a loop without signal support
    loop._uexec_wakeup = True


def _uncancel() -> None:
    # Python >= 3.11 counts cancellations; this cell has handled its one.
    task = asyncio.current_task()
    if task is not None and hasattr(task, "uncancel"):
        task.uncancel()


class SessionTable:
    """`%uexec_sessions` output: HTML in a notebook, aligned text elsewhere."""

    headers = ("id", "command", "pid", "state", "exit code", "age")

    def __init__(self, sessions):
        now = time.time()
        self.rows = [
            (
                str(info.session_id),
                command_label(info.command),
                str(info.pid),
                "running" if info.alive else "exited",
                "" if info.exit_code is None else str(info.exit_code),
                _age(now - info.started),
            )
            for info in sessions
        ]

    def __repr__(self) -> str:
        if not self.rows:
            return "no uexec sessions"
        widths = [max(len(row[i]) for row in [self.headers, *self.rows]) for i in range(len(self.headers))]
        return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [self.headers, *self.rows])

    def _repr_html_(self) -> str:
        if not self.rows:
            return "<p>no uexec sessions</p>"
        from html import escape

        head = "".join(f"<th>{escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in self.rows)
        return f"<table class='uexec-sessions'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def command_label(argv: list[str], width: int = 60) -> str:
    """A command on one line (a --shell script has newlines), shortened to `width`."""
    label = shlex.join(arg.rstrip("\n") for arg in argv).replace("\n", "↵")
    return label if len(label) <= width else label[: width - 1] + "…"


def _age(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
