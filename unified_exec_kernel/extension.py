"""`%load_ext unified_exec_kernel`: one session manager per kernel, and its faces.

The manager lives on the kernel's own asyncio loop. Loading wires the magics,
the cell rewrite that makes them cooperative (rewrite.py), the comm target, and the
cleanup that ends every session's processes when the kernel shuts down or
restarts and at interpreter exit. Shutdown runs on ipykernel 7's control
thread, so that cleanup signals by pid and never touches the loop.
"""

from __future__ import annotations

import asyncio
import atexit

from .jupyter import current, patches
from .notebook import rewrite
from .live.comm import COMM_TARGET, open_handler
from .jupyter.config import UnifiedExec
from .core.manager import UnifiedExecSessionManager
from .jupyter.sigterm import close_sessions_on_sigterm, restore_sigterm
from .notebook.magics import UnifiedExecMagics
from .live.widget import LiveViews

_closing: set[asyncio.Task] = set()  # keeps unload's close_all alive until done


def load_ipython_extension(ipython) -> None:
    if current.manager_of(ipython) is not None:
        return
    settings = UnifiedExec(parent=ipython)
    manager = UnifiedExecSessionManager(**settings.manager_options())
    live_view = LiveViews(manager)
    magics = UnifiedExecMagics(ipython, manager, shell_program=settings.shell, live_view=live_view, check=settings.check)
    ipython.register_magics(magics)
    rewrite.install(ipython)
    ipython.events.register("pre_run_cell", patches.reset_last_traceback)
    atexit.register(manager.terminate_all_threadsafe)
    kernel = getattr(ipython, "kernel", None)
    if kernel is not None:
        from .kernel import UnifiedExecKernel

        if not isinstance(kernel, UnifiedExecKernel):  # ours ends sessions in its own do_shutdown
            patches.end_sessions_on_shutdown(kernel, manager.terminate_all_threadsafe)
        _open_comm_target(kernel, manager)
    close_sessions_on_sigterm(ipython, manager)
    current.set_manager(ipython, manager, magics)


def unload_ipython_extension(ipython) -> None:
    manager = current.manager_of(ipython)
    if manager is None:
        return
    rewrite.uninstall(ipython)
    ipython.events.unregister("pre_run_cell", patches.reset_last_traceback)
    atexit.unregister(manager.terminate_all_threadsafe)
    restore_sigterm(ipython)
    current.set_manager(ipython, None)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        manager.terminate_all_threadsafe()  # no loop (a terminal IPython): blocking is fine
        return
    # %unload_ext runs on the kernel's loop: close without sleeping on it.
    task = loop.create_task(manager.close_all())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


def _open_comm_target(kernel, manager: UnifiedExecSessionManager) -> None:
    import comm

    def kernel_loop() -> asyncio.AbstractEventLoop:
        # `io_loop` exists once the kernel has started (UnifiedExecKernel loads
        # this extension before that); comm handlers may run on another thread.
        io_loop = getattr(kernel, "io_loop", None)
        return io_loop.asyncio_loop if io_loop is not None else asyncio.get_event_loop()

    comm.get_comm_manager().register_target(COMM_TARGET, open_handler(manager, kernel_loop))
