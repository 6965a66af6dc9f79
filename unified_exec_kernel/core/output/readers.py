"""Where each caller of a session has read to: one cursor per caller.

A session is shared: a person's cells, each `Session` object of their Python
code, each attached agent. Each is a reader with its own cursor (an offset in
the session's output, as Codex's exec-server gives each client its own
`afterSeq`), so what one caller collected is not taken from another: a
caller's "output since my last call" is its own. A caller new to the session
starts where the latest call of any caller left off, so a lone caller (the
seed's single reader) sees exactly what it always did.

Readers are few and short-lived (a `Session` object, an agent's connection):
the newest `MAX_READERS` are kept, and one forgotten starts again as new.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

MAX_READERS = 32


class Readers:
    def __init__(self, start: int, max_readers: int = MAX_READERS):
        """`start`: the session's output offset when it was first read (a kept session's may not be 0)."""
        self._cursors: OrderedDict[Hashable, int] = OrderedDict()
        self._max_readers = max_readers
        self.latest = start  # where the latest call of any caller left off

    def cursor(self, reader: Hashable) -> int:
        """Where `reader` goes on from (a new one: where the latest call left off)."""
        return self._cursors.get(reader, self.latest)

    def read_to(self, reader: Hashable, offset: int) -> None:
        """`reader` has collected the output up to `offset` (calls of one reader may overlap: the furthest counts)."""
        self._cursors[reader] = max(self._cursors.pop(reader, offset), offset)
        while len(self._cursors) > self._max_readers:
            self._cursors.popitem(last=False)
        self.latest = max(self.latest, offset)

    def oldest(self) -> int:
        """Before this offset every reader has read: what is kept for them begins here."""
        return min(self._cursors.values(), default=self.latest)
