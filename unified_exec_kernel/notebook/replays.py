"""`%uexec_replay` past its options: a session's journal or an asciicast file, made ready to play.

The recording is read off the kernel's loop (a worker thread); the player
itself is the live face's (`LiveViews.replay`), which this face knows only
as the factory the extension hands it.
"""

from __future__ import annotations

import asyncio
import os
import stat

from IPython.core.error import UsageError
from IPython.display import display

from ..core.journal import JournalNotFound, JournalStore, open_journal
from ..core.journal.reader import UNEXPECTED, as_given, unreadable
from ..core.journal.playback import Playback, TooLargeToPlay, playback
from ..core.errors import quoted


async def show_replay(store: JournalStore | None, source: str, views, *, idle_limit: float | None) -> None:
    if views is None or views.unavailable() is not None:
        reason = "no live view here" if views is None else views.unavailable()
        raise UsageError(f"%uexec_replay shows a player, which needs the live view: {reason}")
    path, title, given = _recording(store, source)
    if store is not None and given is None:
        await asyncio.wrap_future(store.flushed())  # what the session printed so far is on disk
    played = await asyncio.get_running_loop().run_in_executor(None, _read, path, idle_limit, given)
    display(views.replay(played, title))


def _recording(store: JournalStore | None, source: str) -> tuple[str, str, str | None]:
    """(path, title, the file as given): a file if there is one at `source`, else the journal of
    the session so named. A FIFO or a device there is a file the reader refuses (in one line),
    never a session's name; a directory may share a session's name."""
    path = os.path.expanduser(source)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISDIR(mode):
        return path, os.path.basename(path), source
    if store is None:
        raise UsageError(f"no file {quoted(source)}, and journals are off in this kernel (c.UnifiedExec.journal = False)")
    key: int | str = int(source) if source.isdigit() else source
    try:
        entry = store.find(key)
    except JournalNotFound as error:
        raise UsageError(f"no file {quoted(source)}" + (" (a directory)" if mode is not None else "") + f", and {error}") from None
    return entry.path, " ".join(entry.command) if entry.command else entry.label, None


def _read(path: str, idle_limit: float | None, given: str | None) -> Playback:
    """`given`: the file as the user named it, which a refusal names (the reader names its base name)."""
    try:
        with open_journal(path) as journal:
            return playback(journal, idle_limit=idle_limit)
    except TooLargeToPlay as error:
        raise UsageError(as_given(str(error), path, given)) from None
    except UNEXPECTED as error:  # JournalError among them
        raise UsageError(as_given(str(unreadable(path, error)), path, given)) from None
