"""`%load_ext unified_exec_kernel`: one session manager per kernel, and its faces.

The manager lives on the kernel's own asyncio loop. Loading wires the magics,
the cell rewrite that makes them cooperative, and the cleanup that ends every
session's processes when the kernel shuts down or restarts (ipykernel 7 runs
`do_shutdown` on its control thread, so that cleanup signals by pid and never
touches the loop) and at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import re

from .comm import COMM_TARGET, open_handler
from .config import UnifiedExec
from .core.manager import UnifiedExecSessionManager
from .kernel_lifecycle import close_sessions_on_sigterm, restore_sigterm
from .magics import UnifiedExecMagics
from .widget import TerminalWidget

_ATTR = "_unified_exec"
_closing: set[asyncio.Task] = set()  # keeps unload's close_all alive until done
# The magic's name must end at a space or the line's end, so `%%uexec?`
# (IPython's help) is left alone while `%uexec -s 0 echo $?` is not.
_CELL_MAGIC = re.compile(r"%%uexec(?=\s|$)(.*)")
_LINE_MAGIC = re.compile(r"%(uexec|uexec_kill)(?=\s|$)(.*)")


def load_ipython_extension(ipython) -> None:
    if getattr(ipython, _ATTR, None) is not None:
        return
    settings = UnifiedExec(parent=ipython)
    manager = UnifiedExecSessionManager(**settings.manager_options(), guardian=settings.guardian)
    magics = UnifiedExecMagics(ipython, manager, shell_program=settings.shell, live_view=TerminalWidget)
    ipython.register_magics(magics)
    ipython.push({"__uexec__": magics}, interactive=False)
    rewrite = _make_rewrite(ipython)
    ipython.input_transformers_cleanup.append(rewrite)
    ipython.events.register("pre_run_cell", _reset_last_traceback)
    atexit.register(manager.terminate_all_threadsafe)
    _end_sessions_on_kernel_shutdown(ipython, manager)
    close_sessions_on_sigterm(ipython, manager)
    _open_comm_target(ipython, manager)
    TerminalWidget.manager = manager
    setattr(ipython, _ATTR, (manager, magics, rewrite))


def unload_ipython_extension(ipython) -> None:
    state = getattr(ipython, _ATTR, None)
    if state is None:
        return
    manager, _magics, rewrite = state
    ipython.input_transformers_cleanup.remove(rewrite)
    ipython.events.unregister("pre_run_cell", _reset_last_traceback)
    atexit.unregister(manager.terminate_all_threadsafe)
    restore_sigterm(ipython)
    setattr(ipython, _ATTR, None)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        manager.terminate_all_threadsafe()  # no loop (a terminal IPython): blocking is fine
        return
    # %unload_ext runs on the kernel's loop: close without sleeping on it.
    task = loop.create_task(manager.close_all())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


def _make_rewrite(ipython):
    def rewrite_uexec(lines: list[str]) -> list[str]:
        """`%%uexec` cells and `%uexec` lines -> awaits on the kernel loop (see magics.py)."""
        if not lines or not getattr(ipython, "autoawait", False):
            return lines
        first = lines[0].rstrip("\n")
        cell = _CELL_MAGIC.fullmatch(first)
        if cell:
            return [f"await __uexec__.run_uexec({cell.group(1).strip()!r}, {''.join(lines[1:])!r})\n"]
        rewritten = []
        for line in lines:
            stripped = line.rstrip("\n")
            magic = _LINE_MAGIC.fullmatch(stripped)
            if magic:
                name, rest = magic.group(1), magic.group(2).strip()
                call = f"__uexec__.run_uexec({rest!r}, None)" if name == "uexec" else f"__uexec__.run_uexec_kill({rest!r})"
                rewritten.append(f"await {call}\n")
            else:
                rewritten.append(line)
        return rewritten

    return rewrite_uexec


def _reset_last_traceback(_info=None) -> None:
    """Give ipykernel's error reply a clean slate before every cell.

    ipykernel 7 resets `shell._last_traceback` only on its synchronous path;
    an awaiting cell (ours) that ends in a UsageError (which prints one line
    and records no traceback) would otherwise make `do_execute` fail on the
    missing attribute, or reply with an older cell's traceback.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell._last_traceback = None


def _open_comm_target(ipython, manager: UnifiedExecSessionManager) -> None:
    kernel = getattr(ipython, "kernel", None)
    if kernel is None:
        return  # a terminal IPython: no front end to talk to
    import comm

    def kernel_loop() -> asyncio.AbstractEventLoop:
        # `io_loop` exists once the kernel has started (UnifiedExecKernel loads
        # this extension before that); comm handlers may run on another thread.
        io_loop = getattr(kernel, "io_loop", None)
        return io_loop.asyncio_loop if io_loop is not None else asyncio.get_event_loop()

    comm.get_comm_manager().register_target(COMM_TARGET, open_handler(manager, kernel_loop))


def _end_sessions_on_kernel_shutdown(ipython, manager: UnifiedExecSessionManager) -> None:
    kernel = getattr(ipython, "kernel", None)
    if kernel is None:
        return
    original = kernel.do_shutdown

    def do_shutdown(restart):
        manager.terminate_all_threadsafe()
        return original(restart)

    kernel.do_shutdown = do_shutdown
