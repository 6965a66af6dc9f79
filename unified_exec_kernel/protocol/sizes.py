"""One size for a terminal that several views show: the view a person used last gives it.

A session has one PTY and one size, but any number of views (a notebook's
live view, a Sessions tab, the same notebook in a collaborator's page), each
as large as its own page lets it be. A full-screen program draws for one
size; a view of another size shows it garbled. The rule is tmux's
`window-size latest`: the PTY takes the size of the view that was used last,
by typing into it or clicking into it (a `resize` with `claim`). Every
view says its own size whenever it changes; a view that is not the one in
use keeps its size here, and the PTY takes it the moment that view types. So
the person typing always sees the program at their own size, and every
other view is told the PTY's size (`size`) and shows the program at that
size, saying so ("showing 24x120, another view's size").

A view is known by a key its carrier gives: a direct-channel connection is
one view, and a comm or widget carries many, each named by the `view` field
of its `resize` and `input` messages. A view that detaches or whose carrier
closes is forgotten; if it was the one in use, the view used before it (or
else the last to say its size) gives the PTY its size.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable

from ..core.session import PtySession

SIZE_MAX = 1000
"""The largest rows or columns a view may ask for (the session refuses more)."""


class ViewSizes:
    """The views of one session, their sizes, and which one is in use."""

    def __init__(self, session: PtySession):
        self._session = session
        self._sizes: dict[Hashable, tuple[int, int]] = {}
        self._used: list[Hashable] = []  # views that typed or claimed, the latest last

    @property
    def in_use(self) -> Hashable | None:
        return self._used[-1] if self._used else None

    def resize(self, view: Hashable, rows: int, cols: int, *, claim: bool = False) -> None:
        """`view` is `rows` x `cols` now; `claim`: a person just turned to it (focus).

        The PTY takes the size when this view is the one in use, claims it, or
        no view is in use yet (the first to show the session).
        """
        if not (1 <= rows <= SIZE_MAX and 1 <= cols <= SIZE_MAX):
            raise ValueError(f"terminal size must be 1..{SIZE_MAX} rows and columns, not {rows}x{cols}")
        self._sizes[view] = (rows, cols)
        if claim or self.in_use in (None, view):
            self._use(view)

    def typed(self, view: Hashable) -> None:
        """`view` typed: from now on its size is the PTY's (before its keys reach the program)."""
        if view in self._sizes and self.in_use != view:
            self._use(view)

    def forget(self, view: Hashable) -> None:
        """`view` is gone (detached, its carrier closed)."""
        self._sizes.pop(view, None)
        was_in_use = self.in_use == view
        self._used = [used for used in self._used if used != view]
        if was_in_use:
            following = self.in_use if self.in_use is not None else next(reversed(self._sizes), None)
            if following is not None:
                self._use(following)

    def views(self) -> list[Hashable]:
        return list(self._sizes)

    def _use(self, view: Hashable) -> None:
        self._used = [used for used in self._used if used != view] + [view]
        size = self._sizes[view]
        if self._session.alive and self._session.size != size:
            self._session.resize(*size)


_BY_SESSION: weakref.WeakKeyDictionary[PtySession, ViewSizes] = weakref.WeakKeyDictionary()


def sizes_of(session: PtySession) -> ViewSizes:
    """The one `ViewSizes` of `session` (every carrier's views meet there)."""
    sizes = _BY_SESSION.get(session)
    if sizes is None:
        sizes = _BY_SESSION[session] = ViewSizes(session)
    return sizes


def typed(session: PtySession, view: Hashable) -> None:
    """Keys from `view` are about to be written to `session`: its size first, if views are known."""
    sizes = _BY_SESSION.get(session)
    if sizes is not None:
        sizes.typed(view)


def forget(session: PtySession, view: Hashable) -> None:
    """`view` of `session` is gone."""
    sizes = _BY_SESSION.get(session)
    if sizes is not None:
        sizes.forget(view)
