"""What ends a wait on a session: its exit, a finished command, a pattern, quiet, the timeout, an interrupt.

A request waits on one session for up to its timeout; an agent's watch may
wait an hour. Either way nothing polls: each condition is a callback the
session calls (output, a prompt marker, the exit) or one timer, so a thousand
idle waits cost a thousand small objects and no CPU. The first condition met
ends the wait, and says which it was.
"""

from __future__ import annotations

import asyncio
import enum
import re
from dataclasses import dataclass

from .command_wait import CommandWait
from .semantic_prompt import PromptEvent
from ..session import PtySession

# A pattern is searched in what arrived since the last look plus this much
# before it, so a match split across two reads is still found.
_MATCH_OVERLAP = 4096


class EndedBy(str, enum.Enum):
    EXIT = "exit"  # the program exited and its output is drained
    COMMAND = "command"  # the shell reported the typed command done and its prompt back
    MATCH = "match"  # the output matched `until`
    QUIET = "quiet"  # something arrived, then nothing for `quiet_ms`
    TIMEOUT = "timeout"
    INTERRUPT = "interrupt"  # the caller's stop event (a cell's stop button)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class WaitFor:
    timeout_s: float
    until: re.Pattern[str] | None = None
    quiet_s: float | None = None
    command: bool = False  # end at the shell's next prompt (shell integration)


def compile_until(pattern: str | None) -> re.Pattern[str] | None:
    """`until` as the engine takes it: Python `re`, MULTILINE. Raises ValueError with the reason."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise ValueError(f"until is not a valid regular expression: {error}") from None


class Wait:
    """One wait on one session, from construction until `ended` resolves."""

    def __init__(
        self, session: PtySession, wait_for: WaitFor, stop: asyncio.Event | None = None, *, already: bytes = b"", prompted: bool = False
    ):
        """`already`: output this wait counts as its own though it arrived before (an empty poll's unread text).

        `prompted`: the shell already showed the prompt this wait is for (a new shell's first).
        """
        self._loop = asyncio.get_running_loop()
        self._wait_for = wait_for
        self.ended: asyncio.Future[EndedBy] = self._loop.create_future()
        self._command = CommandWait()
        self._text = ""
        self._quiet_timer: asyncio.TimerHandle | None = None
        self._cleanups = [
            session.subscribe(self._on_output),
            session.on_exit(lambda _session: self._end(EndedBy.EXIT)),
        ]
        if wait_for.command:
            self._cleanups.append(session.on_prompt(self._on_prompt))
        timer = self._loop.call_later(wait_for.timeout_s, self._end, EndedBy.TIMEOUT)
        self._cleanups.append(timer.cancel)
        if stop is not None:
            stopper = asyncio.ensure_future(stop.wait())
            stopper.add_done_callback(lambda _task: self._end(EndedBy.INTERRUPT))
            self._cleanups.append(stopper.cancel)
        if already:
            self._on_output(already, 0)
        if prompted:
            self._end(EndedBy.COMMAND)

    def _on_output(self, data: bytes, _offset: int) -> None:
        if self._wait_for.until is not None:
            # A match inside the kept overlap alone would have ended the wait already.
            self._text = self._text[-_MATCH_OVERLAP:] + data.decode("utf-8")
            if self._wait_for.until.search(self._text):
                self._end(EndedBy.MATCH)
                return
        if self._wait_for.quiet_s is not None:
            if self._quiet_timer is not None:
                self._quiet_timer.cancel()
            self._quiet_timer = self._loop.call_later(self._wait_for.quiet_s, self._end, EndedBy.QUIET)

    @property
    def command_exit_code(self) -> int | None:
        """The status of the last command that finished during the wait (shell integration)."""
        return self._command.exit_code

    def _on_prompt(self, mark: PromptEvent) -> None:
        if self._command.feed([mark]):
            self._end(EndedBy.COMMAND)

    def _end(self, reason: EndedBy) -> None:
        if self.ended.done():
            return
        self.ended.set_result(reason)
        self.close()

    def close(self) -> None:
        """Let go of the session (also when the wait is abandoned)."""
        for cleanup in self._cleanups:
            cleanup()
        self._cleanups = []
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
            self._quiet_timer = None
