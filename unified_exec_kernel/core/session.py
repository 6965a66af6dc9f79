"""One program in a pseudo-terminal, driven from the running asyncio loop.

A session is three parts and a lifecycle: the terminal it reads and writes
(`terminal.py`), the watch on its program's exit (`exit_watch.py`), and the
termination that ends every process it started (`termination.py`). Output
fans out to one list of subscribers, each seeing every byte once and in order
with its offset in the session's whole output: the request buffer and the
scrollback are two of them; requests and live views come and go.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import enum
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence

from .output.buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES, OutputBuffer
from .errors import WriteToStdinError
from .process.exit_watch import watch_exit
from .completion.semantic_prompt import PromptEvent, SemanticPromptScanner
from .process.spawn import spawn_pty
from .process.terminal import Terminal
from .process.termination import terminate

log = logging.getLogger(__name__)

SCROLLBACK_BYTES = 256 * 1024
# After the program exits, a grandchild may still hold the terminal open, so
# EOF may never come: the output counts as drained once it has been quiet
# this long.
EXIT_GRACE_S = 0.1
CLOSE_GRACE_S = 1.0
HOLD_S = 5.0
SIZES_KEPT = 64
"""How long one reader should keep the program waiting (`hold_reading`) at a stretch before it lets go."""

Subscriber = Callable[[bytes, int], None]
"""Called with output bytes (whole UTF-8 characters) and the offset of their first byte."""


PromptListener = Callable[[PromptEvent], None]
"""Hears the shell's own markers (shell_integration.py); `index` is their offset in the output."""


@dataclasses.dataclass
class Kept:
    """What a kept session starts from: the keeper's fds, and where the last kernel left off."""

    pid: int
    master_fd: int
    output_fd: int
    restarts: int = 0
    started: float = 0.0
    offset: int = 0  # the cleaned-output offset of the first byte the keeper sends
    raw_offset: int = 0  # the same point in the keeper's count of raw bytes
    state: dict = dataclasses.field(default_factory=dict)  # the prompt state at `offset`


class Lifecycle(enum.Enum):
    RUNNING = "running"  # the program runs
    DRAINING = "draining"  # it exited; a grandchild may still print
    FINISHED = "finished"  # exited and drained: nothing more will arrive


class PtySession:
    """A running program and its terminal; see the module docstring.

    Longer than its parts because it is where they meet: the lifecycle ties
    the terminal's EOF to the exit watch (and the grace between them), and
    the fan-out ties both to subscribers, prompt listeners and exit callbacks.
    """

    def __init__(
        self,
        session_id: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        rows: int = 24,
        cols: int = 80,
        buffer_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES,
        scrollback_bytes: int = SCROLLBACK_BYTES,
        backend: str = "auto",
        cwd: str | None = None,
        prompt_nonce: str | None = None,
        name: str | None = None,
        command: Sequence[str] | None = None,
        kept: Kept | None = None,
    ):
        """`prompt_nonce`: the shell was integrated with it (shell_integration.py); its
        prompt markers are taken out of the output and reported to `on_prompt`.
        `command`: what the user started, when `argv` (what runs) is a rewrite of it.
        `kept`: the program runs under the keeper (keeper.py), which started it (or held it
        through a kernel restart) and tells its exit (`report_exit`)."""
        self.session_id = session_id
        self.name = name
        self.argv = list(argv)
        # A person reads the command they gave, not our integration's rcfile in its argv.
        self.command = list(argv if command is None else command)
        self.started = time.time()
        self.state = Lifecycle.RUNNING
        self.exit_code: int | None = None
        self.offset = 0
        self.buffer = OutputBuffer(buffer_bytes)
        self.scrollback = OutputBuffer(scrollback_bytes)
        self._subscribers: list[Subscriber] = [self.scrollback.push, self.buffer.push]
        self._exit_callbacks: list[Callable[[PtySession], None]] = []
        self._prompt_listeners: list[PromptListener] = []
        self._resize_listeners: list[Callable[[int, int], None]] = []  # rows, cols (the journal)
        self._input_listeners: list[Callable[[bytes], None]] = []  # what was typed (a journal that records input)
        self._flow_listeners: list[Callable[[bool], None]] = []  # output stopped (XOFF) or started again
        self.prompts = 0  # prompts the shell has shown and then waited at (its A markers without typeahead)
        # Where the prompt the shell waits at begins and ends (None: not yet printed whole);
        # None while a command runs.
        self.prompt: tuple[int, int | None] | None = None
        # The shell said a command line started (C) and has not yet said it finished (D or
        # the next A): what is typed now goes to that command, and no end may come from the
        # shell while it runs (a nested shell, a REPL, ssh; or `exec` replaced the shell).
        self.in_command = False
        # Whether the shell marks where its prompts end (B); None until one prompt told.
        # bash always does; zsh not while PS1 is exported (B would leak into a child).
        self.prompt_has_end: bool | None = None
        self.closed = False  # the engine ended the program (a kill, pruning, shutdown): its signal is no crash
        self.note = ""  # what a person should know beside its state (a keeper that died), one line
        self._loop = asyncio.get_running_loop()
        self._finished = asyncio.Event()
        self._grace_timer: asyncio.TimerHandle | None = None
        self._closing: asyncio.Task | None = None

        self._prompts = None if prompt_nonce is None else SemanticPromptScanner(prompt_nonce)
        self.kept = kept is not None
        self.ended_with_kernel = False  # its kernel shut down or restarted, which ended it (views say so, not its signal)
        self.restarts = 0 if kept is None else kept.restarts
        # Output a restarted kernel's journal already holds is sent again by the keeper: this many
        # bytes of it are dropped here (`resume_after`).
        self._resent = 0
        if kept is None:
            # The nonce goes through a pipe the shell's startup reads and closes (shell_integration.py).
            handoff = None if prompt_nonce is None else f"{prompt_nonce}\n".encode()
            self.pid, self.terminal = self._start(env, rows, cols, backend, cwd, handoff)
            watch_exit(self.pid, self._loop, self._on_exit)
        else:
            self.pid = kept.pid
            self.started = kept.started or self.started
            self.offset = kept.offset
            self._restore(kept.state)
            self.terminal = Terminal(kept.master_fd, on_output=self._on_output, on_eof=self._on_eof,
                                     output_fd=kept.output_fd, raw_read=kept.raw_offset)
        # The terminal's size from each output offset on (the latest few): a view replays the
        # scrollback at the sizes it was written at (protocol/messages.py `attached.sizes`).
        self.sizes: collections.deque[tuple[int, int, int]] = collections.deque([(self.offset, *self.size)], maxlen=SIZES_KEPT)

    tty = True
    """The program runs in a terminal (a pipes session, pipe_session.py, runs without one)."""

    def _start(self, env: Mapping[str, str], rows: int, cols: int, backend: str, cwd: str | None, handoff: bytes | None) -> tuple[int, Terminal]:
        """Start the program; its pid and what reads its output (a kind of session starts its own way)."""
        spawned = spawn_pty(self.argv, env, rows, cols, backend, cwd=cwd, handoff=handoff)
        return spawned.pid, Terminal(
            spawned.master_fd, on_output=self._on_output, on_eof=self._on_eof, on_flow=lambda stopped: _tell(self._flow_listeners, stopped)
        )

    # -- state -----------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.state is Lifecycle.RUNNING

    @property
    def integrated(self) -> bool:
        """The shell reports its prompts and commands (OSC 133)."""
        return self._prompts is not None

    @property
    def finished(self) -> bool:
        """The program has exited and its output is drained (or quiet past the grace)."""
        return self.state is Lifecycle.FINISHED

    async def wait_finished(self) -> None:
        await self._finished.wait()

    @property
    def size(self) -> tuple[int, int]:
        return self.terminal.size

    # -- output ----------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Receive all output from now on; returns the function that stops it."""
        return _listen(self._subscribers, subscriber)

    def on_prompt(self, listener: PromptListener) -> Callable[[], None]:
        """Hear the shell's prompt markers from now on; returns the function that stops it."""
        return _listen(self._prompt_listeners, listener)

    def on_resize(self, listener: Callable[[int, int], None]) -> Callable[[], None]:
        """Hear each new terminal size (rows, cols); returns the function that stops it."""
        return _listen(self._resize_listeners, listener)

    def on_input(self, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """Hear what is written to the terminal; returns the function that stops it."""
        return _listen(self._input_listeners, listener)

    @property
    def paused(self) -> bool:
        """The program's output is stopped by XOFF (Ctrl+S, the terminal's IXON): Ctrl+Q starts it again."""
        return self.terminal.stopped

    def on_flow(self, listener: Callable[[bool], None]) -> Callable[[], None]:
        """Hear `paused` change (True: stopped); returns the function that stops it."""
        return _listen(self._flow_listeners, listener)

    def hold_reading(self) -> Callable[[], None]:
        """Stop reading the program's output until the returned function is called (once is enough).

        A reader that cannot keep up (a live view drawing a flood) holds the
        program instead of skipping what it prints; holds are counted, so
        the slowest holder paces it. Returns the function that lets go.
        """
        self.terminal.pause_reading()
        held = True

        def let_go() -> None:
            nonlocal held
            if held:
                held = False
                self.terminal.resume_reading()
                if self.state is Lifecycle.DRAINING and not self.terminal.paused:
                    self._restart_grace()  # what the exited program left in the terminal is read now

        return let_go

    def scrollback_snapshot(self) -> tuple[int, bytes]:
        """The kept scrollback and the offset of its first byte."""
        return self.offset - self.scrollback.total_bytes, self.scrollback.data()

    def on_exit(self, callback: Callable[[PtySession], None]) -> Callable[[], None]:
        """Call `callback` once the program has exited and its output is drained (soon, if it has).

        Returns the function that cancels it.
        """
        if self.finished:
            return self._loop.call_soon(callback, self).cancel
        return _listen(self._exit_callbacks, callback)

    def _on_output(self, data: bytes) -> None:
        if self._prompts is None:
            self._fan_out(data)
            return
        clean, marks = self._prompts.feed(data)
        position = 0
        for mark in marks:
            self._fan_out(clean[position : mark.index])
            position = mark.index
            if mark.ours:
                self._tell_prompt(dataclasses.replace(mark, index=self.offset))
        self._fan_out(clean[position:])

    def _tell_prompt(self, mark: PromptEvent) -> None:
        if mark.kind in ("A", "C") and self.prompt is not None and self.prompt[1] is None:
            self.prompt_has_end = False  # the last prompt came and went without its B
        if mark.kind == "A" and not mark.typeahead:
            self.prompts += 1
            self.prompt = (mark.index, None)
        elif mark.kind == "B" and self.prompt is not None:
            self.prompt = (self.prompt[0], mark.index)
            self.prompt_has_end = True
        elif mark.kind == "C":
            self.prompt = None
        self.in_command = mark.kind == "C" or (self.in_command and mark.kind not in ("A", "D"))
        if self._resent:
            return  # a marker the last kernel already told (its journal has it)
        for listener in list(self._prompt_listeners):
            try:
                listener(mark)
            except Exception:
                log.exception("uexec: a prompt listener of session %s failed", self.session_id)

    def _fan_out(self, data: bytes) -> None:
        if self._resent and data:
            # Sent again by the keeper after a restart; the journal (and the last kernel) had it.
            seen = min(len(data), self._resent)
            self._resent -= seen
            data = data[seen:]
        if not data:
            return
        start = self.offset
        self.offset += len(data)
        for subscriber in list(self._subscribers):
            try:
                subscriber(data, start)
            except Exception:
                log.exception("uexec: a subscriber of session %s failed", self.session_id)
        if self.state is Lifecycle.DRAINING:
            self._restart_grace()

    # -- a kept session ----------------------------------------------------------

    def take_over(self, note: str) -> None:
        """The keeper is gone: this process reads the terminal itself (it holds the master) and
        watches the program (not its parent: the exit code is lost); it is kept no more."""
        self.kept = False
        self.note = note
        self.terminal.read_master()
        if self.state is Lifecycle.RUNNING:
            watch_exit(self.pid, self._loop, self._on_exit)

    def report_exit(self, exit_code: int | None) -> None:
        """The keeper reaped the program (a kept session has no exit watch of its own)."""
        if self.state is Lifecycle.RUNNING:
            self._on_exit(exit_code)

    def ack_point(self) -> tuple[int, int, dict] | None:
        """(raw bytes read, cleaned offset, prompt state) at a point where nothing is half read; None if
        part of a character or a marker waits (the keeper then re-sends from the previous point)."""
        if self._resent or self.terminal.holding or (self._prompts is not None and self._prompts.held):
            return None
        state = {"prompts": self.prompts, "prompt": self.prompt, "in_command": self.in_command,
                 "prompt_has_end": self.prompt_has_end}
        return self.terminal.raw_read, self.offset, state

    def resume_after(self, journaled_until: int, history: bytes = b"") -> None:
        """The journal holds this session's output up to this offset (what the keeper sends again
        is dropped); `history`, the output just before it, is what a view attaching now replays."""
        if journaled_until > self.offset:
            self._resent = journaled_until - self.offset
            self.offset = journaled_until
        self.scrollback.push(history)

    def _restore(self, state: dict) -> None:
        self.prompts = int(state.get("prompts") or 0)
        prompt = state.get("prompt")
        self.prompt = tuple(prompt) if isinstance(prompt, list) and len(prompt) == 2 else None
        self.in_command = bool(state.get("in_command"))
        self.prompt_has_end = state.get("prompt_has_end")

    # -- the lifecycle ---------------------------------------------------------

    def _on_exit(self, exit_code: int | None) -> None:
        self.exit_code = exit_code
        self.state = Lifecycle.DRAINING
        if self.terminal.eof:
            self._finish()
        else:
            self._restart_grace()

    def _on_eof(self) -> None:
        if self._prompts is not None:
            self._fan_out(self._prompts.flush())  # a held-back half marker was text after all
        if self.state is Lifecycle.DRAINING:
            self._finish()

    def _restart_grace(self) -> None:
        if self._grace_timer is not None:
            self._grace_timer.cancel()
        self._grace_timer = self._loop.call_later(EXIT_GRACE_S, self._grace_over)

    def _grace_over(self) -> None:
        # Quiet because nobody reads is not drained: letting go restarts the grace.
        if self.terminal.paused:
            return
        # Quiet may also be a busy machine: the kernel hands a PTY's output to its reader from a
        # worker thread, and a read does that hand-over itself. What it finds restarts the grace.
        self._grace_timer = None
        self.terminal.read_pending()
        if self.state is Lifecycle.DRAINING and self._grace_timer is None:
            self._finish()

    def _finish(self) -> None:
        if self.state is Lifecycle.FINISHED:
            return
        if self._grace_timer is not None:
            self._grace_timer.cancel()
            self._grace_timer = None
        self.state = Lifecycle.FINISHED
        self._finished.set()
        # A copy: a callback may cancel others (a finished wait lets go of the session).
        callbacks, self._exit_callbacks = list(self._exit_callbacks), []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                log.exception("uexec: an exit callback of session %s failed", self.session_id)

    # -- input and control -----------------------------------------------------

    def write(self, data: str | bytes) -> None:
        """Queue `data` for the terminal; never blocks. Raises WriteToStdinError if it cannot."""
        if not self.alive or self.terminal.released:
            raise WriteToStdinError(self.session_id, ProcessLookupError("the process has exited"))
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        try:
            self.terminal.write(data)
        except OSError as error:
            raise WriteToStdinError(self.session_id, error) from error
        _tell(self._input_listeners, data)

    @property
    def pending_write_bytes(self) -> int:
        return self.terminal.pending_write_bytes

    def resize(self, rows: int, cols: int) -> None:
        if not (1 <= rows <= 1000 and 1 <= cols <= 1000):
            raise ValueError(f"terminal size must be 1..1000 rows and columns, not {rows}x{cols}")
        self.terminal.resize(rows, cols)
        if self.sizes[-1][1:] != (rows, cols):
            self.sizes.append((self.offset, rows, cols))
        _tell(self._resize_listeners, rows, cols)

    def send_signal(self, sig: int) -> None:
        """Signal the terminal's foreground process group, as a key like Ctrl-C would."""
        if not self.alive:
            raise ProcessLookupError(f"session {self.session_id} has exited")
        os.killpg(self.terminal.foreground_group() or self.pid, sig)

    async def close(self, grace: float = CLOSE_GRACE_S) -> None:
        """End every process of the session (hangup, then kill) and release the terminal."""
        if self._closing is None:
            self.closed = self.alive
            self._closing = asyncio.ensure_future(self._close(grace))
        await asyncio.shield(self._closing)

    async def _close(self, grace: float) -> None:
        try:
            # After EOF no process holds the terminal: a closing terminal hangs
            # up nobody, and what was detached from it (nohup) lives on, as it
            # would in a real terminal. Only a terminal still held needs ending.
            if not (self.state is not Lifecycle.RUNNING and self.terminal.eof):
                await terminate([self.pid], grace)
                if self.alive:
                    await self._await_reaped()
        finally:
            self.terminal.release()
            if self.state is Lifecycle.DRAINING:
                self._finish()

    async def _await_reaped(self) -> None:
        # The exit watch reaps the leader; a SIGKILLed process goes promptly.
        try:
            await asyncio.wait_for(self._finished.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            log.warning("uexec: session %s (pid %s) did not exit", self.session_id, self.pid)


def _tell(listeners: list, *args) -> None:
    for listener in list(listeners):
        try:
            listener(*args)
        except Exception:
            log.exception("uexec: a session listener failed")


def _listen(listeners: list, listener) -> Callable[[], None]:
    listeners.append(listener)

    def stop() -> None:
        if listener in listeners:
            listeners.remove(listener)

    return stop
