"""The one output a `%%uexec` cell shows, updated while the session prints.

A cell that prints two million lines must not send two million messages (the
kernel's iopub socket drops past 1000 queued, the server rate-limits at 1 MB/s
and 1000 messages/s). So the cell owns a single display (a `display_id`),
updated at most ~10 times a second at first and less often as a wait drags
on, each update carrying only a bounded tail of the output; the final update
shows the whole result and a status line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from IPython import get_ipython
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.display import display

from ..core.output.batcher import Batch, Batcher
from ..core.models import UnifiedExecResult, exit_state
from ..core.session import PtySession
from ..core.output.truncate import APPROX_BYTES_PER_TOKEN
from ..core.output.utf8 import newest
from ..screen.plain import plain_text

TAIL_BYTES = 16 * 1024
TAIL_LINES = 40


def _update_interval(elapsed: float) -> float:
    """Fast while a person watches closely, slower as a long wait goes on."""
    if elapsed < 2:
        return 0.1
    if elapsed < 10:
        return 0.5
    return 1.0


class CellOutput:
    def __init__(self, *, raw: bool = False, printed: bool = False):
        """`printed`: the final text goes to stdout, not to a display (a captured cell's)."""
        self.raw = raw
        self.printed = printed
        self._handle = None
        self._tail = b""

    def watch(self, session: PtySession, deliver: Callable[..., None]):
        """Show the session's output as it arrives; returns the function that stops it.

        Call it on the session's loop (the engine's); `deliver(function, batch)`
        runs the display update on the cell's (the bridge's `to_kernel`).
        """
        batches = Batcher(
            lambda batch: deliver(self._show_tail, batch),
            interval=_update_interval,
            budget=lambda wanted: min(wanted, TAIL_BYTES),
            keep_bytes=TAIL_BYTES,
            offset=session.offset,
            leading=False,
        )
        unsubscribe = session.subscribe(batches.push)

        def stop() -> None:
            unsubscribe()
            batches.cancel()

        return stop

    def _show_tail(self, batch: Batch) -> None:
        self._tail = newest(self._tail + batch.data if not batch.skipped else batch.data, TAIL_BYTES)
        window = self._tail.decode("utf-8")
        if not self.raw:
            window = "\n".join(_render(window).splitlines()[-TAIL_LINES:])
        self._show(window + "\n[…running]")

    def finish(self, result: UnifiedExecResult, *, interrupted: bool = False) -> None:
        """The final update: the whole result, rendered, and its status line.

        Interrupted, the status is the cell's error line (`interrupted_line`): one line, not two.
        """
        body = result.output if self.raw else _TOKENS_MARKER.sub(_bytes_left_out, _render_with_the_cut(result.output))
        if body and not body.endswith("\n"):
            body += "\n"
        self.finish_text(body if interrupted else body + status_line(result))

    @staticmethod
    def rendered(result: UnifiedExecResult) -> UnifiedExecResult:
        """The result with its output as a cell shows it (what the agent format puts in a notebook).

        The terminal's modes (bracketed paste's `\x1b[?2004h`/`l`), `\r`s and
        redraws are resolved, as in every other cell, so neither the page nor the
        saved notebook keeps them (they showed a blank line after the command);
        colours stay. The seed's truncation marker is text and stays as it is.
        """
        return dataclasses.replace(result, output=_render_with_the_cut(result.output))

    @staticmethod
    def for_python(result: UnifiedExecResult, *, raw: bool = False) -> UnifiedExecResult:
        """The result Python code gets (`sessions` calls, `%%uexec --out VAR`): one rule for both.

        `output` is what the program printed, rendered as a cell shows it (lines end in `\n`);
        for a command typed into an integrated shell, what the command printed (`command_output`,
        rendered too): a check reads `make test`'s words, not the echoed line or the next
        prompt, which the cell shows around them. `raw`: the engine's result as it came, its
        `output` the whole transcript as the terminal sent it.
        """
        if raw:
            return result
        if result.command_output is None:
            return CellOutput.rendered(result)
        printed = _render_with_the_cut(result.command_output)
        return dataclasses.replace(result, output=printed, command_output=printed)

    def finish_text(self, text: str) -> None:
        self._show(text)

    def _show(self, text: str) -> None:
        if self.printed:
            print(text, end="" if text.endswith("\n") else "\n")
            return
        bundle = {"text/plain": text}
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)


def captured_output() -> bool:
    """Inside `%%capture` or `capture_output()`: a run then prints its final text, as `%%bash` does there
    (what was captured is text to read, not a display and its updates)."""
    shell = get_ipython()
    return shell is not None and isinstance(shell.display_pub, CapturingDisplayPublisher)


# The engine's marker counts tokens (a model's unit, as in Codex); a person reads bytes.
_TOKENS_MARKER = re.compile(r"…(\d+) tokens truncated…")


def _bytes_left_out(match: re.Match) -> str:
    return f"[… about {int(match[1]) * APPROX_BYTES_PER_TOKEN:,} bytes left out of the middle …]"


def status_line(result: UnifiedExecResult, *, live: bool = False) -> str:
    """What the cell's wait saw, in one line.

    `live`: a live view above shows the session's state and keeps it current;
    the line says the state the wait ended in (`was running`), which stays
    true when the view's state moves on.
    """
    if result.session_id is not None:
        state = f"session {result.session_id} {'was running' if live else exit_state(True, None)}"
    else:
        state = exit_state(False, result.exit_code, result.closed)
    parts = [state]
    if result.command_exit_code is not None:
        parts.append(f"command exited with code {result.command_exit_code}")
    parts.append(_ENDINGS.get(result.ended_by, ""))
    if result.ended_by == "paused":  # the terminal holds the output (XOFF): never leave that unsaid
        parts.append(f"Ctrl+Q resumes it: %uexec -s {result.session_id} --keys C-q")
    parts.append(f"{result.wall_time:.2f} s")
    return "[" + " · ".join(part for part in parts + _notes(result) if part) + "]"


def interrupted_line(result: UnifiedExecResult, *, more: bool = False) -> str:
    """The one line an interrupted cell fails with: its status and how to stop what still runs.

    `more`: code followed in the cell, which the failure skips.
    """
    sid = result.session_id
    if sid is not None:
        state = f"session {sid} still runs (stop it with %uexec_kill {sid} or %uexec -s {sid} --keys C-c)"
    else:
        state = exit_state(False, result.exit_code, result.closed)
    line = " · ".join([f"interrupted after {result.wall_time:.2f} s: {state}", *_notes(result)])
    return line + ("; the rest of the cell was not run" if more else "")


def _notes(result: UnifiedExecResult) -> list[str]:
    parts = []
    if result.dropped_bytes:
        parts.append(f"{result.dropped_bytes:,} earlier bytes dropped (buffer full)")
    if result.journal_range is not None:
        key, start, end = result.journal_range
        parts.append(f"the middle is in the journal: %uexec_output {key} --bytes {start}:{end}")
    if result.left_out_bytes:
        parts.append(f"{result.left_out_bytes:,} earlier bytes not shown (see them with an empty %%uexec -s)")
    return parts


# What ended a wait, when the state does not already say it (exit, timeout).
_ENDINGS = {"command": "", "input": "waits for input (no end from the shell)", "match": "--until matched", "quiet": "went quiet", "paused": "output paused (Ctrl+S, XOFF)", "interrupt": ""}


def _render_with_the_cut(output: str) -> str:
    """`_render` of a result's output, its cut marker drawn through an ASCII stand-in.

    The marker's `…` is the only thing outside ASCII in a flood's output, and
    it denied the whole text the renderer's plain path: ~130 KB went through
    the terminal parser at the end of every cut cell (0.1-0.2 s of a
    2-million-line flood's 0.9 s). A stand-in of the same width (`~` for
    `…`), in text with no escape before it, changes nothing a terminal would
    do, so the result is the same text (the parser draws the rest as before).
    """
    cut = _TOKENS_MARKER.search(output)
    head, tail = (output, "") if cut is None else (output[: cut.start()], output[cut.end() :])
    if cut is None or "\x1b" in head or not (head.isascii() and tail.isascii()):
        return _render(output)  # the parser's work either way (and a cut inside an escape reads the marker as it is)
    stand_in = f"~{cut[1]} tokens truncated~"
    return _render(head + stand_in + tail).replace(stand_in, cut[0], 1)


def _render(text: str) -> str:
    plain = plain_text(text)
    if plain is not None:
        return plain
    # The renderer brings pyte and wcwidth (~1.5 MiB): imported by the first output that needs a
    # terminal's parsing, not at kernel start nor for a command's plain lines or a shell's prompt.
    from ..screen.render import render_terminal_text

    return render_terminal_text(text)
