"""One `%%uexec` request, run in the cell that asked for it.

It sends its `Turn` (turns.py) as every call of sessions.py does, shows the output as
it arrives (the cell's display, or a live terminal), waits on the loop that
awaits it while the session is read on the engine's (the kernel's loop, not
blocked; or, where a cell cannot await, blocking.py's own), and ends the
wait, but not the program, when the stop button is pressed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from IPython.core.error import UsageError
from IPython.display import display

from .cell_output import CellOutput, captured_output, interrupted_line, status_line
from ..core.agent_format import format_for_agent
from ..core.errors import StdinClosedError, UnifiedExecError
from ..core.manager import UnifiedExecSessionManager
from ..core.models import UnifiedExecResult
from ..jupyter.bridge import Bridge
from .turns import Turn, finish_turn, open_turn


class LiveView(Protocol):
    """What `--live` shows (the extension passes the live face's; the notebook face knows no widget)."""

    def __call__(self, session_id: int) -> object:
        """The view of this session, to display."""

    def unavailable(self) -> str | None:
        """Why no view can render here (its front end was not built), or None."""


@dataclass(frozen=True)
class CellRequest:
    """What a `%%uexec` cell asks (its `Turn`, as any call of sessions.py makes one) and how it shows the answer."""

    turn: Turn
    raw: bool = False
    agent_format: bool = False
    live: bool = False


async def run_in_cell(
    manager: UnifiedExecSessionManager, bridge: Bridge, request: CellRequest, live_view: LiveView | None, *, more: bool = False
) -> UnifiedExecResult:
    """Runs on the loop that awaits it (the kernel's, or a blocking call's own: blocking.py); the
    session's side of it runs on the engine's, through `bridge`.

    `more`: code follows in the cell (an interrupt's one error line says it was skipped).
    """
    if request.live and live_view is None:
        raise UsageError("--live needs ipywidgets and a kernel (the live view is a widget)")
    # Without its front end the view could show only a snapshot: the cell
    # shows the output as it arrives instead, as a cell without --live does.
    not_built = live_view.unavailable() if request.live else None
    live = request.live and not_built is None
    # Captured (`%%capture`, `capture_output()`), a run gives its final text on stdout, as
    # `%%bash` does there: no display to update, and nothing of the updates kept.
    captured = captured_output()
    view = None if live else CellOutput(raw=request.raw, printed=captured)
    deliver = bridge.to_caller()
    watch = None if view is None or captured else (lambda session: view.watch(session, deliver))
    turn = request.turn
    if request.live:
        # The view is shown before the wait: its id must come back first.
        with _one_line_errors():
            opened = await bridge.run(open_turn, manager, turn, watch)  # the fallback's text view follows it too
            if live:
                display(live_view(opened.session_id))
            else:
                print(f"[--live shows text here: {not_built}]")
    else:
        opened = None  # opened by `collect`, in the same trip to the engine (each trip is two thread wake-ups)
    stop = asyncio.Event()

    async def collect() -> UnifiedExecResult:
        return await finish_turn(manager, turn, opened if opened is not None else await open_turn(manager, turn, watch), stop)

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
        if isinstance(error, StdinClosedError):  # the engine words it for Codex's models (`exec_command`)
            raise UsageError(str(StdinClosedError(error.session_id, "it runs on pipes (started with tty=False); %%uexec starts one in a terminal"))) from None
        if isinstance(error, UnifiedExecError):
            raise UsageError(str(error)) from None
        return False


def _uncancel() -> None:
    # Python >= 3.11 counts cancellations; this cell has handled its one.
    task = asyncio.current_task()
    if task is not None and hasattr(task, "uncancel"):
        task.uncancel()
