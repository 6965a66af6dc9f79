"""Everything a session printed, on disk: the journal (asciicast v3), its index, reading and paging it."""

from .index import Command, Drop
from .reader import Event, Journal, JournalError, open_journal
from .store import DEFAULT_KERNEL_BYTES, DEFAULT_SESSION_BYTES, JournalEntry, JournalNotFound, JournalStore

__all__ = [
    "Command", "Drop", "Event", "Journal", "JournalError", "open_journal",
    "DEFAULT_KERNEL_BYTES", "DEFAULT_SESSION_BYTES", "JournalEntry", "JournalNotFound", "JournalStore",
]
