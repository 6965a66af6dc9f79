"""One `%%uexec` request, run in the cell that asked for it.

It starts the session or picks the one to type into, shows the output as it
arrives (the cell's display, or a live terminal), waits on the kernel's loop
without blocking it while the session is read on the engine's, and ends the
wait, but not the program, when the stop button is pressed.
"""

from __future__ import annotations

import asyncio
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
from ..protocol.notices import noticeboard


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


async def run_in_cell(
    manager: UnifiedExecSessionManager, bridge: Bridge, request: CellRequest, live_view: LiveView | None, *, more: bool = False
) -> UnifiedExecResult:
    """Runs on the kernel's loop; the session's side of it runs on the engine's, through `bridge`.

    `more`: code follows in the cell (an interrupt's one error line says it was skipped).
    """
    if request.live and live_view is None:
        raise UsageError("--live needs ipywidgets and a kernel (the live view is a widget)")
    # Without its front end the view could show only a snapshot: the cell
    # shows the output as it arrives instead, as a cell without --live does.
    not_built = live_view.unavailable() if request.live else None
    live = request.live and not_built is None
    view = None if live else CellOutput(raw=request.raw)

    spawned: list[float] = []  # when a new session started (the engine's clock is this process's)

    async def begin() -> tuple[int, Callable[[], None]]:
        # On the engine's loop, in one step once the session is open: it reads a new
        # session at once, so the view must hear it from the start, or miss its first words.
        if request.argv is not None:
            spawned.append(time.monotonic())
            session_id = await manager.launch(request.argv, name=request.name, cwd=request.cwd, env=request.env, integration=request.integration, keep=request.keep)
        else:
            session_id = manager.session(request.session_id).session_id
        watching = view.watch(manager.session(session_id), bridge.to_kernel) if view is not None else (lambda: None)
        return session_id, watching

    if request.live:
        # The view is shown before the wait: its id must come back first.
        with _one_line_errors():
            opened = await bridge.run(begin)
            if live:
                display(live_view(opened[0]))
            else:
                print(f"[--live shows text here: {not_built}]")
    else:
        opened = None  # opened by `collect`, in the same trip to the engine (each trip is two thread wake-ups)
    stop = asyncio.Event()

    async def collect() -> UnifiedExecResult:
        session_id, stop_watching = opened if opened is not None else await begin()
        waited_from = time.monotonic()
        session = manager.session(session_id)
        try:
            result = await manager.write(
                session_id,
                request.text,
                timeout_ms=request.timeout_ms,
                stop=stop,
                until=request.until,
                quiet_ms=request.quiet_ms,
                # A cell that types shows what its own input produced, not what came before.
                earlier_output=not request.text,
                # A new session's wait is a start's: an integrated shell waits for its first prompt.
                first_prompt=request.argv is not None,
            )
        finally:
            stop_watching()
        if result.ended_by == "match":  # a person away from the page hears of it (protocol/notices.py)
            noticeboard(manager).matched(session, request.until, result.output, "until")
        # A start's time runs from the spawn: showing the live view came between
        # it and the wait, and a shell at its prompt by then read as `0.00 s`.
        return dataclasses.replace(result, wall_time=result.wall_time + waited_from - spawned[0]) if spawned else result

    result, interrupted = await _wait(bridge, collect, stop)
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


async def _wait(bridge: Bridge, collect, stop: asyncio.Event) -> tuple[UnifiedExecResult, bool]:
    """The result, and whether an interrupt (the stop button) ended the wait early.

    The interrupt cancels this cell's task on the kernel's loop; the wait on
    the engine is shielded from it and told to stop instead, so it still
    answers with what arrived, and the session lives on.
    """
    task = asyncio.ensure_future(bridge.run(collect))
    with _one_line_errors():
        try:
            return await asyncio.shield(task), False
        except asyncio.CancelledError:
            if task.done() and task.cancelled():
                raise
            bridge.post(stop.set)
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
