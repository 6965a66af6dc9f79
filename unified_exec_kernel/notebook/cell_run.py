"""One `%%uexec` request, run in the cell that asked for it.

It starts the session or picks the one to type into, shows the output as it
arrives (the cell's display, or a live terminal), waits on the kernel's loop
without blocking it while the session is read on the engine's, and ends the
wait, but not the program, when the stop button is pressed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from IPython.core.error import UsageError
from IPython.display import display

from .cell_output import CellOutput, interrupted_line, status_line
from ..core.agent_format import format_for_agent
from ..core.errors import UnifiedExecError
from ..core.manager import UnifiedExecSessionManager
from ..core.models import UnifiedExecResult
from ..jupyter.bridge import Bridge


class LiveView(Protocol):
    """What `--live` shows (the extension passes the live face's; the notebook face knows no widget)."""

    def __call__(self, session_id: int) -> object:
        """The view of this session, to display."""

    def unavailable(self) -> str | None:
        """Why no view can render here (its front end was not built), or None."""


@dataclass(frozen=True)
class CellRequest:
    """What a `%%uexec` cell asks: start `argv`, or type `text` into `session_id`."""

    argv: list[str] | None = None
    session_id: int | str | None = None
    text: str = ""
    timeout_ms: int | None = None
    until: str | None = None
    quiet_ms: int | None = None
    name: str | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    integration: bool | None = None
    keep: bool | None = None  # None: the manager's default (c.UnifiedExec.keep_sessions)
    raw: bool = False
    agent_format: bool = False
    live: bool = False


@dataclass
class Started:
    """A request on its way on the engine: its output view (None for a live one), and its result to come."""

    request: CellRequest
    view: CellOutput | None
    stop: asyncio.Event  # set (on the engine) to end the wait early: the stop button
    result: concurrent.futures.Future


def start_in_cell(manager: UnifiedExecSessionManager, bridge: Bridge, request: CellRequest) -> Started:
    """Start a request that shows no live view, from any thread: the session opens and is read in one trip to
    the engine, which begins now (the extension calls this as IPython hands a `%%uexec` cell over, so the
    program runs while IPython stores and compiles the cell)."""
    view = CellOutput(raw=request.raw)
    stop = asyncio.Event()
    steps = _Steps(manager, bridge, request, view, stop)

    async def open_and_collect() -> UnifiedExecResult:
        return await steps.collect(await steps.begin())

    return Started(request, view, stop, bridge.start(open_and_collect))


async def run_in_cell(
    manager: UnifiedExecSessionManager,
    bridge: Bridge,
    request: CellRequest,
    live_view: LiveView | None,
    *,
    more: bool = False,
    started: Started | None = None,
) -> UnifiedExecResult:
    """Runs on the kernel's loop; the session's side of it runs on the engine's, through `bridge`.

    `more`: code follows in the cell (an interrupt's one error line says it was skipped).
    `started`: what `start_in_cell` began for this request, if it did.
    """
    if started is None:
        started = await _start(manager, bridge, request, live_view)
    result, interrupted = await _wait(bridge, started)
    view = started.view
    if view is None:
        if not interrupted:
            print(status_line(result, live=True))
    elif request.agent_format:
        view.finish_text(format_for_agent(result if request.raw else view.rendered(result)))
    else:
        view.finish(result, interrupted=interrupted)
    if interrupted:
        # One line, the status line's stead (IPython prints exactly UsageError
        # so, not a subclass), and the cell fails: no later line of it runs,
        # and Run All stops here as for any interrupted cell.
        raise UsageError(interrupted_line(result, more=more))
    return result


async def _start(manager: UnifiedExecSessionManager, bridge: Bridge, request: CellRequest, live_view: LiveView | None) -> Started:
    if not request.live:
        return start_in_cell(manager, bridge, request)
    if live_view is None:
        raise UsageError("--live needs ipywidgets and a kernel (the live view is a widget)")
    # Without its front end the view could show only a snapshot: the cell
    # shows the output as it arrives instead, as a cell without --live does.
    not_built = live_view.unavailable()
    view = None if not_built is None else CellOutput(raw=request.raw)
    stop = asyncio.Event()
    steps = _Steps(manager, bridge, request, view, stop)
    # The view is shown before the wait: its id must come back first.
    with _one_line_errors():
        opened = await bridge.run(steps.begin)
        if view is None:
            display(live_view(opened[0]))
        else:
            print(f"[--live shows text here: {not_built}]")
    return Started(request, view, stop, bridge.start(steps.collect, opened))


class _Steps:
    """The engine's side of a request: open (or find) the session, then wait for its result."""

    def __init__(self, manager: UnifiedExecSessionManager, bridge: Bridge, request: CellRequest, view: CellOutput | None, stop: asyncio.Event):
        self.manager, self.bridge, self.request, self.view, self.stop = manager, bridge, request, view, stop
        self.spawned: float | None = None  # when a new session started (the engine's clock is this process's)

    async def begin(self) -> tuple[int, Callable[[], None]]:
        # On the engine's loop, in one step once the session is open: it reads a new
        # session at once, so the view must hear it from the start, or miss its first words.
        request, manager = self.request, self.manager
        if request.argv is not None:
            self.spawned = time.monotonic()
            session_id = await manager.launch(request.argv, name=request.name, cwd=request.cwd, env=request.env, integration=request.integration, keep=request.keep)
        else:
            session_id = manager.session(request.session_id).session_id
        watching = self.view.watch(manager.session(session_id), self.bridge.to_kernel) if self.view is not None else (lambda: None)
        return session_id, watching

    async def collect(self, opened: tuple[int, Callable[[], None]]) -> UnifiedExecResult:
        session_id, stop_watching = opened
        request = self.request
        waited_from = time.monotonic()
        try:
            result = await self.manager.write(
                session_id,
                request.text,
                timeout_ms=request.timeout_ms,
                stop=self.stop,
                until=request.until,
                quiet_ms=request.quiet_ms,
                # A cell that types shows what its own input produced, not what came before.
                earlier_output=not request.text,
                # A new session's wait is a start's: an integrated shell waits for its first prompt.
                first_prompt=request.argv is not None,
            )
        finally:
            stop_watching()
        # A start's time runs from the spawn: showing the live view came between
        # it and the wait, and a shell at its prompt by then read as `0.00 s`.
        return dataclasses.replace(result, wall_time=result.wall_time + waited_from - self.spawned) if self.spawned is not None else result


async def _wait(bridge: Bridge, started: Started) -> tuple[UnifiedExecResult, bool]:
    """The result, and whether an interrupt (the stop button) ended the wait early.

    The interrupt cancels this cell's task on the kernel's loop; the wait on
    the engine is shielded from it and told to stop instead, so it still
    answers with what arrived, and the session lives on.
    """
    task = asyncio.wrap_future(started.result)
    with _one_line_errors():
        try:
            return await asyncio.shield(task), False
        except asyncio.CancelledError:
            if task.done() and task.cancelled():
                raise
            bridge.post(started.stop.set)
            _uncancel()
            return await task, True
        except ValueError as error:  # a bad --until pattern
            raise UsageError(str(error)) from None


class _one_line_errors:
    """The engine's errors as IPython's one-line UsageError, no traceback."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _traceback):
        if isinstance(error, UnifiedExecError):
            raise UsageError(str(error)) from None
        return False


def _uncancel() -> None:
    # Python >= 3.11 counts cancellations; this cell has handled its one.
    task = asyncio.current_task()
    if task is not None and hasattr(task, "uncancel"):
        task.uncancel()
