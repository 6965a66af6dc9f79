"""When is what was typed into an integrated shell done, and how did it end?

Fed the marker events that follow a write (or a spawn), in order: the wait is over
at the first prompt start (A) of the session's own that is not flagged as
typeahead, and the exit code is that of the last command-finished (D) before it,
None if no command finished (an empty line, Ctrl-C at the prompt, a line typed
into a program that still runs). A prompt flagged as typeahead is passed over: a
line typed while the last command ran is about to run, and its own D and A follow.

Markers the shell printed before the write must be fed before the write happens
(read the PTY until it is empty first), or an A of the previous command could end
this wait.
"""

from __future__ import annotations

from collections.abc import Iterable

from .semantic_prompt import PromptEvent


class CommandWait:
    def __init__(self) -> None:
        self.done = False
        self.exit_code: int | None = None
        self.commands = 0  # how many command lines finished (Ds seen)
        self.prompt: PromptEvent | None = None  # the A that ended the wait; the prompt's text follows it

    def feed(self, events: Iterable[PromptEvent]) -> bool:
        """Take the events of one chunk; True once the shell is back at its prompt."""
        for event in events:
            if self.done or not event.ours:
                continue
            if event.kind == "D":
                self.exit_code = event.exit_status
                self.commands += 1
            elif event.kind == "A" and not event.typeahead:
                self.done = True
                self.prompt = event
        return self.done
