"""Everything a session printed, on disk: the journal (asciicast v3), its index, reading and paging it.

Writing is what every kernel with sessions does; reading (reader.py: a
replay, `%uexec_output`, a kept session taken back) is what some do, so the
reader's names load on first use (PEP 562) and a hub's kernels that never
read a journal never hold it (benchmarks/bench_costs.py).
"""

from __future__ import annotations

from .index import Command, Drop
from .store import DEFAULT_KERNEL_BYTES, DEFAULT_SESSION_BYTES, JournalEntry, JournalNotFound, JournalStore

__all__ = [
    "Command", "Drop", "Event", "Journal", "JournalError", "open_journal",
    "DEFAULT_KERNEL_BYTES", "DEFAULT_SESSION_BYTES", "JournalEntry", "JournalNotFound", "JournalStore",
]
_READER_NAMES = ("Event", "Journal", "JournalError", "open_journal")


def __getattr__(name: str):
    if name in _READER_NAMES:
        from . import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
