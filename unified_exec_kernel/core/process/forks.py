"""What a forked child must not do with its parent's sessions: end them, or hold their pipes.

`os.fork()` (and multiprocessing's fork start method) copies the process
with every atexit function, signal handler and fd it has. A child that then
exits with `sys.exit` ran the package's atexit and killed its parent's
sessions; one that lives on held the keeper's socket and the guardian's
pipe, so neither learnt of the parent's death from their EOF. So:

- `this_process_only(function)`: an atexit function or a signal handler that
  acts in the process that installed it and does nothing in a forked child.
- `drop_in_child(holder)`: `holder.forked_child()` runs in every child forked
  after this, first thing: close the fds the child must not hold, forget the
  state that names the parent's processes. Only fds and fields: the child has
  no engine thread, and its loop's epoll is the parent's (touching it would
  change what the parent's loop watches).
"""

from __future__ import annotations

import functools
import logging
import os
import weakref
from collections.abc import Callable
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., object])


class ForkedChildAware(Protocol):
    def forked_child(self) -> None:
        """In a forked child, before it runs anything else: drop what is the parent's (fds, fields; no loop)."""


def this_process_only(function: F) -> F:
    """`function`, run only in the process that wraps it (a forked child's call does nothing and returns None)."""
    owner = os.getpid()

    @functools.wraps(function)
    def in_owner(*args, **kwargs):
        if os.getpid() != owner:
            return None
        return function(*args, **kwargs)

    return in_owner  # type: ignore[return-value]


def close_fd(fd: int | None) -> None:
    """Close a copy of an fd inherited by fork (the parent's stays open)."""
    if fd is None:
        return
    try:
        os.close(fd)
    except OSError:
        pass


_holders: weakref.WeakSet[ForkedChildAware] = weakref.WeakSet()


def drop_in_child(holder: ForkedChildAware) -> None:
    """Have `holder.forked_child()` run in each child this process forks from now on (held weakly)."""
    _holders.add(holder)


def _after_fork_in_child() -> None:
    for holder in list(_holders):
        try:
            holder.forked_child()
        except Exception:  # noqa: BLE001 - a child must start whatever one holder does
            log.debug("uexec: dropping %s in a forked child failed", type(holder).__name__, exc_info=True)
    _holders.clear()  # what the child makes itself registers anew


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
