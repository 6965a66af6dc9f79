"""A recording a user names: opened only if it is a regular file, read a bounded line at a time.

A name can lead anywhere: `/dev/zero` never ends a line (a plain `readline`
grows until MemoryError, or the OOM killer), a FIFO blocks its reader until
someone writes (for ever, in a kernel's worker thread), a directory cannot be
read at all. So the file is opened without waiting (O_NONBLOCK: a FIFO with no
writer opens at once), refused in one line unless it is a regular file, and
every line is read with a bound: a reader never holds more than
`MAX_LINE_BYTES` of one line (a header, `MAX_HEADER_BYTES`), and a longer one
is refused saying so. Our own journals' lines are far below both (an event
holds at most 64 KiB of output, ~400 KB as JSON); asciinema's are too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

MAX_HEADER_BYTES = 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024

_NOT_FILES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class JournalError(ValueError):
    """The file cannot be read as asciicast; the message is one line for a person (reader.py raises it too)."""

    name = "BadJournal"


def what_it_is(mode: int) -> str | None:
    """What a file of this mode is, when it is not a regular file."""
    for test, kind in _NOT_FILES:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def open_file(path: str) -> BinaryIO:
    """`path` opened for reading if it is a regular file; JournalError (one line) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise JournalError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        kind = what_it_is(os.fstat(fd).st_mode)
        if kind is not None:
            raise JournalError(f"{path} is {kind}, not a recording: only a regular file is read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_line(file: BinaryIO, path: str, limit: int = MAX_LINE_BYTES, what: str = "a line") -> bytes:
    """The next line (b"" at the end), at most `limit` bytes; JournalError for a longer one."""
    line = file.readline(limit + 1)
    if len(line) > limit:
        raise JournalError(too_long(file, path, len(line), limit, what))
    return line


def bounded_lines(file: BinaryIO, path: str) -> Iterator[bytes]:
    """The lines from where the file stands, each read with the bound."""
    readline = file.readline
    while True:
        line = readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            raise JournalError(too_long(file, path, len(line), MAX_LINE_BYTES, "a line"))
        yield line


def too_long(file: BinaryIO, path: str, read: int, limit: int, what: str) -> str:
    try:
        where = f" at byte {file.tell() - read:,}"
    except OSError:
        where = ""
    return f"{os.path.basename(path) or path}: {what}{where} is longer than {_size(limit)}, the longest this reader takes"


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"
