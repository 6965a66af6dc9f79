"""`%uexec_output` and `%uexec_record` past their options: read a session's journal, show or write it.

The journal is written on its own thread; a read first waits (without
blocking the kernel's loop) until what the session printed so far is on
disk, then reads in a worker thread: a page is a few reads through the
index, but `--grep` scans and an export copies the whole file.
"""

from __future__ import annotations

import asyncio
import os

from IPython.core.error import UsageError
from IPython.display import display

from ..core.errors import UnifiedExecError
from ..core.journal import Command, JournalEntry, JournalError, JournalNotFound, JournalStore, open_journal
from ..core.journal.export import export
from ..core.journal.reader import UNEXPECTED, unreadable
from ..core.journal.paging import Page, PageError, PageRequest, page
from ..screen.render import render_terminal_text
from .cell_output import captured_output


async def show_output(store: JournalStore | None, key: int | str, request: PageRequest, *, raw: bool = False) -> None:
    try:
        entry, shown = await read_page(store, key, request)
    except (UnifiedExecError, PageError, JournalError) as error:
        raise UsageError(str(error)) from None
    # What the journal is dropping right now is in no file yet: the store says it.
    notes = shown.notes + [note for note in entry.notes() if note not in shown.notes]
    text = page_text(shown, raw=raw) + "".join(f"[{note}]\n" for note in notes) + status_line(entry.label, shown)
    if captured_output():
        print(text)
    else:
        display({"text/plain": text}, raw=True)


async def read_page(store: JournalStore | None, key: int | str, request: PageRequest) -> tuple[JournalEntry, Page]:
    """A page of a session's journal, once what it printed so far is on disk; the engine's errors as they are.

    For `%uexec_output` and for `Session.output()` (sessions.py) alike.
    """
    if store is None:
        raise UnifiedExecError("journals are off in this kernel (c.UnifiedExec.journal = False)")
    entry = store.find(key)
    await asyncio.wrap_future(store.flushed())
    return entry, await asyncio.get_running_loop().run_in_executor(None, _read, entry.path, request)


def _read(path: str, request: PageRequest) -> Page:
    with open_journal(path) as journal:
        return page(journal, request)


def page_text(shown: Page, *, raw: bool = False) -> str:
    """A page as a cell shows it: rendered as a terminal would leave it, ending in a newline.

    Grep's lines are rendered one at a time, each after its number: a `\r` or an
    erase inside a line (a progress bar's) acts on that line alone, never on the number.
    """
    if shown.grep_lines is not None and not raw:
        text = "".join(prefix + render_terminal_text(line).rstrip("\n").replace("\n", " ") + "\n" for prefix, line in shown.grep_lines)
    else:
        text = shown.text if raw else render_terminal_text(shown.text)
    if text and not text.endswith("\n"):
        text += "\n"
    return text


async def read_commands(store: JournalStore | None, key: int | str) -> tuple[JournalEntry, list[Command]]:
    """The commands typed into a session's shell, from its journal, once what it printed so far is
    on disk; the engine's errors as they are. For `%uexec_output --commands` and `Session.commands()` alike."""
    if store is None:
        raise UnifiedExecError("journals are off in this kernel (c.UnifiedExec.journal = False)")
    entry = store.find(key)
    await asyncio.wrap_future(store.flushed())
    return entry, await asyncio.get_running_loop().run_in_executor(None, _chapters, entry.path)


async def list_commands(store: JournalStore | None, key: int | str) -> None:
    try:
        entry, commands = await read_commands(store, key)
    except (UnifiedExecError, JournalError) as error:
        raise UsageError(str(error)) from None
    if not commands:
        print(f"session {entry.label} has no commands on record (only an integrated bash or zsh reports them)")
        return
    rows = []
    for command in commands:
        state = "restart" if command.restart else "running" if command.end is None else f"exit {command.exit_code}" if command.exit_code is not None else "done"
        rows.append(f"{command.number:>4}  {state:<9} {command.text.splitlines()[0] if command.text else ''}")
    print("\n".join(rows))


async def record(store: JournalStore | None, key: int | str, destination: str, *, version: int) -> None:
    entry = _entry(store, key)
    await asyncio.wrap_future(store.flushed())
    destination = os.path.expanduser(destination)
    events = await asyncio.get_running_loop().run_in_executor(None, _export, entry.path, destination, version)
    print(f"wrote {destination}: asciicast v{version}, {events:,} events of session {entry.label}" + ("" if entry.finished else " so far"))


def drop(store: JournalStore | None, key: int | str) -> None:
    entry = _entry(store, key)
    try:
        store.drop(key)
    except JournalNotFound as error:
        raise UsageError(str(error)) from None
    print(f"dropped the journal of session {entry.label}")


def status_line(label: str, shown: Page) -> str:
    parts = [f"session {label}"]
    if shown.command is not None:
        command = shown.command
        state = "restart" if command.restart else "running" if command.end is None else f"exit {command.exit_code}" if command.exit_code is not None else "done"
        first = command.text.splitlines()[0] if command.text else ""
        parts.append(f"command {command.number} ({state}): {first}")
    if shown.first_line is not None:
        if shown.total_lines == 0:
            parts.append("no output")
        else:
            # plain numbers, as `--lines A:B` takes them back
            parts.append(f"lines {shown.first_line}-{shown.last_line} of {shown.total_lines}")
    else:
        parts.append(f"bytes {shown.start}:{shown.end}")
    return "[" + " · ".join(parts) + "]"


def _entry(store: JournalStore | None, key: int | str):
    if store is None:
        raise UsageError("journals are off in this kernel (c.UnifiedExec.journal = False)")
    try:
        return store.find(key)
    except JournalNotFound as error:
        raise UsageError(str(error)) from None


def _chapters(path: str) -> list[Command]:
    try:
        with open_journal(path) as journal:
            return journal.chapters()
    except UNEXPECTED as error:  # JournalError among them
        raise unreadable(path, error) from None


def _export(path: str, destination: str, version: int) -> int:
    try:
        with open_journal(path, indexed=False) as journal:
            return export(journal, destination, version=version)
    except UNEXPECTED as error:  # JournalError among them
        raise UsageError(str(unreadable(path, error))) from None
    except OSError as error:
        raise UsageError(f"cannot write {destination}: {error.strerror or error}") from None
