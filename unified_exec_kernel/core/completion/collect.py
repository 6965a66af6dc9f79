"""Collecting a session's output until the request is done: the one way a request or a watch waits.

`collect` keeps what the session prints (flat memory, a head and a tail),
types the request's input if any, and waits for the first of its conditions:

- EXIT: the program exited and its output is drained;
- COMMAND: an integrated shell reported the typed command done and drew its
  prompt again (OSC 133 markers, see shell_integration.py);
- INPUT: a command typed into an integrated shell took the terminal and waits
  for keys, so no end can come from the shell (a nested shell, a REPL, ssh,
  an editor, a password prompt, or `exec` replaced the shell): the terminal
  is in key-by-key or no-echo mode and nothing arrived for INPUT_QUIET_S;
- MATCH: a line of the output matched `until`;
- QUIET: something arrived, then nothing for `quiet_s`;
- PAUSED: the terminal's output is stopped (XOFF: Ctrl+S, `--keys C-s`) and
  stays so for PAUSED_WAIT_S: nothing can arrive until Ctrl+Q, so the wait
  says so instead of running out its time in silence;
- TIMEOUT, INTERRUPT: the caller's limit, or its stop event.

Nothing polls: each condition is a callback the session calls (output, a
prompt marker, the exit) or one timer, so a thousand idle watches cost a
thousand small objects and no CPU. What comes before (a request reads what
its caller has not read yet) and after (it moves that caller's cursor, and may
report the exit and forget the session) is the manager's part; nothing is held
for a wait, so several callers collect from one session at once.
"""

from __future__ import annotations

import asyncio
import enum
import re
import time
from dataclasses import dataclass

from .semantic_prompt import PromptEvent
from ..output.head_tail import HeadTailCollector
from ..session import PtySession

# How long a program that reads keys must stay quiet before it counts as waiting for them.
INPUT_QUIET_S = 0.3
# After the shell's prompt starts (A), how long its end (B) may take: a prompt is
# drawn at once, and only then does the line editor read keys itself. Ending at B
# keeps the next request's text from being echoed twice (once by the terminal
# while still in line mode, once by the line editor).
PROMPT_END_WAIT_S = 0.5
# `until` sees each line whole once it ends, and an unfinished line as it grows;
# a line longer than this is matched by its last this-many characters.
MAX_UNFINISHED_LINE = 65536
# The longest `until` pattern a request may give, in characters (what a line is waited for needs few).
MAX_UNTIL_CHARS = 1000
# How long stopped output must stay stopped to end a wait: a request that types Ctrl+S then Ctrl+Q pauses nothing.
PAUSED_WAIT_S = 0.3


class EndedBy(str, enum.Enum):
    EXIT = "exit"
    COMMAND = "command"
    INPUT = "input"
    MATCH = "match"
    QUIET = "quiet"
    PAUSED = "paused"
    TIMEOUT = "timeout"
    INTERRUPT = "interrupt"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class WaitFor:
    timeout_s: float
    until: re.Pattern[str] | None = None
    quiet_s: float | None = None
    command: bool = False  # the typed command's end (shell integration), or the shell's first prompt


@dataclass(frozen=True)
class Collected:
    output: str  # middle-truncated
    token_count: int  # of everything collected, before truncation
    ended_by: EndedBy
    command_exit_code: int | None
    seconds: float
    command_output: str | None = None  # what the typed commands printed (CommandOutput); None if none started


def compile_until(pattern: str | None, field: str = "until") -> re.Pattern[str] | None:
    """`until` as the engine takes it: Python `re`, MULTILINE (a line's `^` and `$`).

    The one check of a pattern, which every face makes before it starts a
    program: a bad one raises ValueError, one line that names the face's own
    `field` (`--until`, `pattern`). Python's compiler recurses once per
    nesting level, so `(((...` a few hundred deep is a RecursionError with a
    traceback the size of the stack, and `a{99999999999}` an OverflowError:
    both are refused as what they are, and so is a pattern longer than
    MAX_UNTIL_CHARS.
    """
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise ValueError(f"{field} must be a string (a regular expression), not {type(pattern).__name__}")
    if len(pattern) > MAX_UNTIL_CHARS:
        raise ValueError(f"{field} is too long: {len(pattern)} characters, at most {MAX_UNTIL_CHARS}")
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        reason = error
    except RecursionError:
        reason = "nested too deeply"
    except (OverflowError, MemoryError) as error:
        reason = str(error) or "too large"
    raise ValueError(f"{field} is not a valid regular expression: {reason}")


async def collect(
    session: PtySession,
    wait_for: WaitFor,
    *,
    max_bytes: int,
    text: str = "",
    already: bytes = b"",
    prompted: bool = False,
    stop: asyncio.Event | None = None,
) -> Collected:
    """Subscribe, type `text`, wait, truncate.

    `already`: earlier output this wait counts as its own (an empty poll's unread text).
    `prompted`: the shell already showed the prompt this wait is for (a new shell's first).
    """
    started = time.monotonic()
    collector = HeadTailCollector(max_bytes)
    collector.push(already)
    printed = CommandOutput(max_bytes) if wait_for.command else None
    stops = [session.subscribe(collector.push)]
    if printed is not None:
        stops += [session.subscribe(printed.push), session.on_prompt(printed.mark)]
    wait = _Wait(session, wait_for, stop, already=already, prompted=prompted)
    try:
        # A program that exited while a grandchild holds the terminal cannot
        # read: collect its last words instead (as Codex does).
        if text and session.alive:
            session.write(text)
            wait.typed()
        ended_by = await wait.ended if not session.finished else EndedBy.EXIT
        if ended_by is EndedBy.COMMAND:
            # The shell prints its prompt right after saying so: show it when it is already there.
            session.terminal.read_pending()
    finally:
        wait.close()
        for unsubscribe in stops:
            unsubscribe()
    output, _ = collector.truncated()
    return Collected(
        output, collector.token_count, ended_by, wait.command.exit_code, time.monotonic() - started, None if printed is None else printed.text()
    )


class _Wait:
    """One wait on one session, from construction until `ended` resolves."""

    def __init__(self, session: PtySession, wait_for: WaitFor, stop: asyncio.Event | None, *, already: bytes, prompted: bool):
        self._loop = asyncio.get_running_loop()
        self._session = session
        self._wait_for = wait_for
        self.ended: asyncio.Future[EndedBy] = self._loop.create_future()
        self.command = CommandEnd()
        self._lines = None if wait_for.until is None else _LineMatcher(wait_for.until)
        self._quiet_timer: asyncio.TimerHandle | None = None
        self._input_timer: asyncio.TimerHandle | None = None
        self._prompt_end_timer: asyncio.TimerHandle | None = None
        self._paused_timer: asyncio.TimerHandle | None = None
        self._cleanups = [
            session.subscribe(self._on_output),
            session.on_exit(lambda _session: self._end(EndedBy.EXIT)),
            session.on_flow(self._on_flow),
        ]
        if session.paused:
            self._on_flow(True)
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
            prompt = session.prompt
            if prompt is not None and prompt[1] is None and session.prompt_has_end is not False:
                self.command.prompt_started()  # its A came before this wait: its B is still to come
                self._prompt_end_timer = self._loop.call_later(PROMPT_END_WAIT_S, self._end, EndedBy.COMMAND)
            else:
                self._end(EndedBy.COMMAND)

    def typed(self) -> None:
        """The request's text went to the terminal: to a command that runs, it may be keys it waits for."""
        self._watch_for_input()

    def _on_output(self, data: bytes, _offset: int) -> None:
        if self._lines is not None and self._lines.feed(data):
            self._end(EndedBy.MATCH)
            return
        if self._wait_for.quiet_s is not None:
            self._quiet_timer = _restart(self._quiet_timer, self._loop, self._wait_for.quiet_s, self._end, EndedBy.QUIET)
        self._watch_for_input()

    def _on_prompt(self, mark: PromptEvent) -> None:
        ending = self.command.feed(mark, self._session.prompt_has_end is not False)
        if ending is CommandEnd.DONE:
            self._end(EndedBy.COMMAND)
        elif ending is CommandEnd.PROMPT_STARTED:
            # Its end marker will come with the prompt; a shell that stopped marking it still ends.
            self._prompt_end_timer = self._loop.call_later(PROMPT_END_WAIT_S, self._end, EndedBy.COMMAND)
        elif mark.kind == "C":
            self._watch_for_input()

    def _watch_for_input(self) -> None:
        # Only while a typed command runs: at its own prompt the shell reads keys too, and says so.
        if self._wait_for.command and self._session.in_command and not self.ended.done():
            self._input_timer = _restart(self._input_timer, self._loop, INPUT_QUIET_S, self._check_input)

    def _check_input(self) -> None:
        self._input_timer = None
        if self._session.in_command and self._session.terminal.reads_keys():
            self._end(EndedBy.INPUT)

    def _on_flow(self, stopped: bool) -> None:
        if stopped and not self.ended.done():
            self._paused_timer = _restart(self._paused_timer, self._loop, PAUSED_WAIT_S, self._check_paused)

    def _check_paused(self) -> None:
        self._paused_timer = None
        if self._session.paused:
            self._end(EndedBy.PAUSED)

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
        for timer in (self._quiet_timer, self._input_timer, self._prompt_end_timer, self._paused_timer):
            if timer is not None:
                timer.cancel()
        self._quiet_timer = self._input_timer = self._prompt_end_timer = self._paused_timer = None


def _restart(timer: asyncio.TimerHandle | None, loop: asyncio.AbstractEventLoop, delay: float, callback, *args) -> asyncio.TimerHandle:
    if timer is not None:
        timer.cancel()
    return loop.call_later(delay, callback, *args)


class CommandEnd:
    """When is what was typed into an integrated shell done, and how did it end?

    Fed the shell's own markers after a write (or a spawn), in order: done once
    the shell shows its prompt again, at the prompt's end (B) after its start (A)
    when its prompts mark their end, else at the A. The exit code is that of the
    last command-finished (D) before it; None if no command finished (an empty
    line, Ctrl-C at the prompt, a line typed into a program that still runs). A
    prompt flagged as typeahead is passed over: a line typed while the last
    command ran is about to run, and its own D and A follow.

    Markers the shell printed before the write must be fed before it happens
    (the manager reads the terminal until it is empty first), or an A of the
    previous command could end this wait.
    """

    DONE = "done"
    PROMPT_STARTED = "prompt started"

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.commands = 0  # how many command lines finished (Ds seen)
        self.prompt: PromptEvent | None = None  # the A of the prompt the shell is back at
        self.done = False

    def prompt_started(self) -> None:
        """The shell's prompt began (its A) before the wait did."""
        self.prompt = PromptEvent("A", 0, True)

    def feed(self, mark: PromptEvent, prompt_end_comes: bool = True) -> str | None:
        """DONE once the shell is back at its prompt; PROMPT_STARTED at an A whose B is still to come."""
        if self.done or not mark.ours:
            return None
        if mark.kind == "D":
            self.exit_code = mark.exit_status
            self.commands += 1
        elif mark.kind == "A" and not mark.typeahead:
            self.prompt = mark
            if not prompt_end_comes:
                self.done = True
                return self.DONE
            return self.PROMPT_STARTED
        elif mark.kind == "B" and self.prompt is not None:
            self.done = True
            return self.DONE
        elif mark.kind == "C":
            self.prompt = None  # that prompt was passed by (typeahead the shell did not flag)
        return None


class CommandOutput:
    """What the commands typed into an integrated shell printed: the output between each one's
    start (C) and its end (D, or the next prompt's start A when a line ran no command).

    The rest of a typed command's output is the terminal's echo of the line before C and the
    next prompt after D: a check of what `make test` printed wants neither. The session tells
    its markers between the chunks it hands out (session.py), so a flag flipped at each marker
    splits the output exactly; kept as a request keeps its output (head and tail, `max_bytes`).
    """

    def __init__(self, max_bytes: int):
        self._collector = HeadTailCollector(max_bytes)
        self._inside = False
        self._started = False
        self._last = b""  # the newest chunk, held until the next: zsh's end-of-line mark may end it

    def push(self, data: bytes, _offset: int = 0) -> None:
        if self._inside:
            self._collector.push(self._last)
            self._last = bytes(data)

    def mark(self, mark: PromptEvent) -> None:
        if not mark.ours:
            return
        if mark.kind == "C":
            self._inside = self._started = True
        elif mark.kind in ("D", "A") and self._inside:
            self._inside = False
            # zsh draws PROMPT_SP (its `%` for an unfinished line, a row of spaces, `\r \r`) before
            # its precmd hook prints D: the shell's, not the command's.
            self._collector.push(_ZSH_PROMPT_SP.sub(b"", self._last))
            self._last = b""

    def text(self) -> str | None:
        """Middle-truncated as a request's output; None if no command started during the wait."""
        if not self._started:
            return None
        self._collector.push(self._last)
        self._last = b""
        return self._collector.truncated()[0]


# zsh's default PROMPT_EOL_MARK (`%B%S%#%s%b`: `%`, or `#` for root, bold and reversed), then the spaces and `\r \r`.
_ZSH_PROMPT_SP = re.compile(rb"(?:\x1b\[[0-9;]*m)*[%#](?:\x1b\[[0-9;]*m)* *\r \r\Z")


class _LineMatcher:
    """`until` on terminal lines as a person reads them: each line once it ends, the unfinished last one as it grows.

    The terminal ends lines with `\\r\\n`; the pattern sees `\\n`, so `^ready$`
    matches a line `ready`. What a terminal does not show is not matched
    either: escape sequences are taken out, and a line redrawn after a `\\r`
    is what follows it (bash begins a command's output with `ESC[?2004l\\r`,
    its bracketed paste turned off, so `^begun` meets `begun` there). New text
    is searched as one block, which costs one regex search per read however
    many lines came; only a block that matched is looked at line by line, so a
    pattern never matches across a line end.
    """

    def __init__(self, pattern: re.Pattern[str]):
        self._pattern = pattern
        self._unfinished = ""

    def feed(self, data: bytes) -> bool:
        text = self._unfinished + data.decode("utf-8", "replace").replace("\r\n", "\n")
        cut = text.rfind("\n") + 1
        self._unfinished = text[cut:][-MAX_UNFINISHED_LINE:]
        shown = _UNSHOWN.sub("", text)
        if not self._pattern.search(shown.replace("\r", "\n")):
            return False
        return any(self._pattern.search(line) for line in shown_lines(shown))


def shown_lines(text: str) -> list[str]:
    """Terminal text as the lines a person reads: no control sequences, each line what follows its last `\\r`."""
    return [line.rsplit("\r", 1)[-1] for line in _UNSHOWN.sub("", text.replace("\r\n", "\n")).split("\n")]


# A terminal's control sequences (CSI, OSC, two-character escapes) and control characters but \t, \n
# and \r: none of them is text on a line.
_UNSHOWN = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
