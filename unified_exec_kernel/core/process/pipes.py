"""Start a program on pipes, not a terminal: stdin closed, stdout and stderr one pipe.

This is how Codex runs an agent's command unless it asks for `tty`: a program
that sees no terminal does not page, colour, prompt or wait for keys, and an
agent gets plain text. stdout and stderr share one pipe so their lines keep
the order the program wrote them in, as on a terminal.

The program leads a new session (`setsid`), as a PTY session's does, so
Ctrl-C (a signal to its process group) and the kill by session id
(procs.py) reach everything it started. `posix_spawn` cannot change
directory, so a `cwd` goes through a `/bin/sh` that changes into it and then
execs the program (one exec more, no fork of the caller).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .spawn import _DEFAULT_SIGNALS
from .terminal import Terminal

# `$0` is the directory; the program and its arguments follow.
_CHANGE_DIRECTORY = 'cd -- "$0" && exec "$@"'


@dataclass(frozen=True)
class SpawnedPipes:
    pid: int
    read_fd: int  # non-blocking; the program's stdout and stderr


def spawn_pipes(argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> SpawnedPipes:
    """Raises OSError (FileNotFoundError for a missing program) in the caller."""
    argv = list(argv)
    if cwd is not None:
        argv = ["/bin/sh", "-c", _CHANGE_DIRECTORY, cwd, *argv]
    read_fd, write_fd = os.pipe()
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            dict(env),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, write_fd, 1),
                (os.POSIX_SPAWN_DUP2, write_fd, 2),
            ],
            setsid=True,
            setsigmask=(),
            setsigdef=_DEFAULT_SIGNALS,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)  # the child holds its copies: EOF comes when the last one closes
    os.set_blocking(read_fd, False)
    return SpawnedPipes(pid, read_fd)


class PipeOutput(Terminal):
    """The read end of a pipes session's output, read as a terminal's master is.

    Everything a `Terminal` does for output (reads until EAGAIN, whole UTF-8
    characters, pauses for a slow reader, EOF) holds for a pipe as it is;
    only what needs a terminal is absent: there is no size to set, and no
    foreground group (a signal goes to the session's leader's group).
    """

    __slots__ = ()

    NOMINAL_SIZE = (24, 80)  # what a view that asks is told; a pipe has no size

    @property
    def size(self) -> tuple[int, int]:
        return self.NOMINAL_SIZE

    def resize(self, rows: int, cols: int) -> None:
        pass  # nothing reads a pipe's size; a view's resize changes nothing

    def foreground_group(self) -> int | None:
        return None

    def reads_keys(self) -> bool:
        return False
