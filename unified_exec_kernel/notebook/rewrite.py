"""The cell rewrite that makes `%%uexec` cooperative: its magics become `await`s on the kernel loop.

A synchronous magic that waits would block the loop every session is read
on. So a `%%uexec` cell, and each `%uexec`/`%uexec_kill` line at the top level
of a cell, becomes an `await` of the magic's coroutine, which ipykernel runs
as a task on its loop. Lines are found by IPython's own tokenizer (a token
transformer, like the one that turns `%magic` into a call), so text inside a
string literal is never touched. The rewritten code reaches the magics
through `__import__`, never through a name in the user's namespace, which
`%reset` clears and any assignment can replace. What is not rewritten (an
indented line, `x = %uexec ...`, `%autoawait off`) still works: the magic
then blocks until done (blocking.py), and never expands `$var` or `{expr}`.

Only a cell's own top level is rewritten, never code that another piece of
code transforms while a cell runs: `%time`, `%timeit` and `%%time` compile
their body themselves (an `await` there is a SyntaxError), `%%capture` and
`run_cell` run theirs from inside the running cell (a second run of the
kernel's loop). ipykernel transforms a cell before IPython says it runs
(`pre_run_cell`), so a transform while a cell is running is such a body.
"""

from __future__ import annotations

import re

from IPython import get_ipython
from IPython.core.inputtransformer2 import (
    TokenTransformBase,
    assemble_continued_line,
    find_end_of_continued_line,
)

from ..jupyter.patches import wake_on_signals

_CELL_MAGIC = re.compile(r"%%uexec(?=\s|$)(.*)")
# The name must end at a space or the line's end, so `%uexec?` (IPython's
# help) is left alone while `%uexec -s 0 echo $?` is not.
_LINE_MAGIC = re.compile(r"%(uexec|uexec_kill|uexec_output|uexec_record|uexec_replay)(?=\s|$)(.*)", re.DOTALL)
_HERE = '__import__("unified_exec_kernel.notebook.rewrite", fromlist=["_"])'


def run_uexec(line: str, cell: str | None, more: bool = False):
    """The coroutine of `%%uexec` / `%uexec` (what a rewritten cell awaits); `more`: code follows the line."""
    return _magics().run_uexec(line, cell, more)


def run_uexec_kill(line: str):
    return _magics().run_uexec_kill(line)


def run_uexec_output(line: str):
    return _magics().run_uexec_output(line)


def run_uexec_record(line: str):
    return _magics().run_uexec_record(line)


def run_uexec_replay(line: str):
    return _magics().run_uexec_replay(line)


def _magics():
    from ..jupyter.current import magics_of

    wake_on_signals()  # an awaiting cell's interrupt lands at once
    return magics_of(get_ipython())


def _rewrites() -> bool:
    """Whether a transform now is of a cell's top level that can await."""
    shell = get_ipython()
    return bool(getattr(shell, "autoawait", False)) and not getattr(shell, _RUNNING, None)


_RUNNING = "_uexec_running_cells"  # on the shell: the cells running now (a stack: %%capture runs one inside another)


def _cell_starts(info) -> None:
    getattr(get_ipython(), _RUNNING).append(info)


def _cell_ends(result) -> None:
    running = getattr(get_ipython(), _RUNNING)
    info = getattr(result, "info", None)
    if info is not None and any(entry is info for entry in running):
        running[:] = [entry for entry in running if entry is not info]
    elif result is None and running:
        running.pop()  # IPython had no result to say which ended: the innermost did


def rewrite_cell_magic(lines: list[str]) -> list[str]:
    """A cleanup transform: a cell whose first line is `%%uexec ...` becomes one await."""
    if not lines or not _rewrites():
        return lines
    cell = _CELL_MAGIC.fullmatch(lines[0].rstrip("\n"))
    if cell is None:
        return lines
    return [f"await {_HERE}.run_uexec({cell.group(1).strip()!r}, {''.join(lines[1:])!r})\n"]


class AwaitLineMagic(TokenTransformBase):
    """A token transform: a top-level `%uexec`, `%uexec_kill`, `%uexec_output`, `%uexec_record` or `%uexec_replay` line becomes an await."""

    # Before IPython's EscapedCommand (10), which would make the same line a call.
    priority = 5

    @classmethod
    def find(cls, tokens_by_line):
        if not _rewrites():
            return None
        for tokens in tokens_by_line:
            # Only at column 0: an indented line may sit in a `def`, where
            # `await` is not allowed.
            first = tokens[0] if tokens else None
            if first is not None and first.string == "%" and first.start[1] == 0 and _LINE_MAGIC.match(first.line):
                return cls(first.start)
        return None

    def transform(self, lines: list[str]) -> list[str]:
        end_line = find_end_of_continued_line(lines, self.start_line)
        line = assemble_continued_line(lines, (self.start_line, self.start_col), end_line)
        magic = _LINE_MAGIC.fullmatch(line.rstrip("\n"))
        name, rest = magic.group(1), magic.group(2).strip()
        if name == "uexec":
            # whether an interrupt here skips code of the cell (its error line says so)
            more = any(later.strip() and not later.lstrip().startswith("#") for later in lines[end_line + 1 :])
            call = f"run_uexec({rest!r}, None{', True' if more else ''})"
        else:
            call = f"run_{name}({rest!r})"
        return lines[: self.start_line] + [f"await {_HERE}.{call}\n"] + lines[end_line + 1 :]


def install(shell) -> None:
    setattr(shell, _RUNNING, [])
    shell.events.register("pre_run_cell", _cell_starts)
    shell.events.register("post_run_cell", _cell_ends)
    shell.input_transformers_cleanup.append(rewrite_cell_magic)
    shell.input_transformer_manager.token_transformers.insert(0, AwaitLineMagic)


def uninstall(shell) -> None:
    shell.input_transformers_cleanup.remove(rewrite_cell_magic)
    shell.input_transformer_manager.token_transformers.remove(AwaitLineMagic)
    shell.events.unregister("pre_run_cell", _cell_starts)
    shell.events.unregister("post_run_cell", _cell_ends)
