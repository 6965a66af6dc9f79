"""`%load_ext unified_exec_kernel`: one session manager per kernel, and its faces.

The manager's sessions live on the engine's own loop, in one thread
(jupyter/engine_thread.py), reached only through the bridge (jupyter/bridge.py),
so they keep running while a cell runs Python. Loading wires the magics,
the cell rewrite that makes them cooperative (notebook/rewrite.py), the comm
target, the direct channel's socket for live views and the signal that
makes sessions count as the kernel's activity to an idle culler (services
of the engine's loop, so they live and go with it), and the cleanup that ends
every session's processes and the engine's thread when the kernel shuts
down or restarts and at interpreter exit.
Shutdown runs on ipykernel 7's control thread, so that cleanup signals by
pid and never touches the engine's loop from outside.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import itertools
import logging
import os

from .jupyter import current, patches
from .jupyter.activity import ActivityBeacon, iopub_publisher
from .jupyter.bridge import Bridge
from .notebook import rewrite
from .live.comm import COMM_TARGET, open_handler
from .jupyter.config import UnifiedExec
from .jupyter.direct_socket import DirectSocket, kernel_connection_file, kernel_id_of
from .jupyter.keeping import keeper_for
from .core.process.forks import this_process_only
from .core.process.keeper import KeeperError
from .protocol.address import socket_names
from .core.activity import ActivityWatch
from .core.manager import UnifiedExecSessionManager
from .jupyter.sigterm import close_sessions_on_sigterm, restore_sigterm
from .notebook.magics import UnifiedExecMagics

log = logging.getLogger(__name__)
_closing: set[asyncio.Task] = set()  # keeps unload's close_all alive until done
_loads = itertools.count()
TAKE_BACK_S = 15.0
"""How long loading waits for kept sessions to come back (the keeper answers in milliseconds)."""


def load_ipython_extension(ipython) -> None:
    if current.manager_of(ipython) is not None:
        return
    settings = UnifiedExec(parent=ipython)
    kernel = getattr(ipython, "kernel", None)
    keeper = _keeper(settings) if kernel is not None else None
    manager = UnifiedExecSessionManager(**settings.manager_options(), journals=_journal_store(settings), keeper=keeper)
    bridge = Bridge(kernel_loop=functools.partial(_kernel_loop, kernel))
    magics = UnifiedExecMagics(
        ipython, manager, bridge, shell_program=settings.shell, live_view=_LiveViewsOnDemand(manager, bridge), check=settings.check
    )
    ipython.register_magics(magics)
    rewrite.install(ipython)
    ipython.events.register("pre_run_cell", patches.reset_last_traceback)
    end = functools.partial(end_sessions, manager, bridge)
    at_exit = this_process_only(end)  # a forked child's exit (a cell's os.fork) ends none of them
    atexit.register(at_exit)
    if kernel is not None:
        # The engine's thread publishes beside the kernel's own threads.
        patches.atomic_message_ids(kernel.session)
        ipython._uexec_unpatch_display = patches.flush_only_pending_streams(ipython.display_pub)
        patches.end_sessions_on_shutdown(kernel, lambda restart: end(restart=restart))
        import comm

        comm.get_comm_manager().register_target(COMM_TARGET, open_handler(manager, bridge))
        # Sessions count as the kernel's activity to an idle culler (jupyter/activity.py).
        watch = ActivityWatch(manager, settings.activity)
        bridge.engine.add_service(ActivityBeacon(watch, iopub_publisher(kernel), settings.activity_interval_s))
    direct, kernel_id = _direct_channel(settings, manager, bridge) if kernel is not None else (None, "")
    close_sessions_on_sigterm(ipython, manager, also=functools.partial(_before_sigterm, direct, manager.journals))
    current.set_manager(ipython, manager, magics, bridge)
    current.set_kernel_id(ipython, kernel_id)
    ipython._uexec_end = at_exit  # what unload takes off atexit
    if keeper is not None and os.path.exists(keeper.socket_path):
        _take_back(manager, bridge)


def _take_back(manager: UnifiedExecSessionManager, bridge: Bridge) -> None:
    """The sessions the last kernel with this id kept: back before the first cell runs."""
    try:
        taken = bridge.wait(manager.take_back, timeout=TAKE_BACK_S)
    except (KeeperError, OSError) as error:
        log.warning("uexec: %s", error)
        return
    if taken:
        log.info("uexec: took back kept session(s) %s", ", ".join(map(str, taken)))


def _keeper(settings: UnifiedExec):
    connection_file = kernel_connection_file()
    if connection_file is None:
        return None
    try:
        return keeper_for(connection_file, journal_root=settings.journal_base(), grace=settings.keep_grace_s)
    except OSError as error:
        log.warning("uexec: kept sessions are off: %s", error)
        return None


def unload_ipython_extension(ipython) -> None:
    manager, bridge = current.manager_of(ipython), current.bridge_of(ipython)
    if manager is None:
        return
    rewrite.uninstall(ipython)
    _unregister_magics(ipython, current.magics_of(ipython))  # else %%uexec would restart the engine
    ipython.events.unregister("pre_run_cell", patches.reset_last_traceback)
    getattr(ipython, "_uexec_unpatch_display", lambda: None)()
    if getattr(ipython, "kernel", None) is not None:
        patches.end_sessions_on_shutdown(ipython.kernel, None)
    atexit.unregister(getattr(ipython, "_uexec_end", None))
    restore_sigterm(ipython)
    current.set_manager(ipython, None)
    current.set_kernel_id(ipython, "")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        end_sessions(manager, bridge, restart=False)  # no loop (a terminal IPython): blocking is fine
        return
    # %unload_ext runs on the kernel's loop: close the sessions on the engine's,
    # then end its thread, without sleeping on this one.
    task = loop.create_task(bridge.stop_async(manager.close_all))
    _closing.add(task)
    task.add_done_callback(_closing.discard)


def _before_sigterm(direct: DirectSocket | None, journals) -> None:
    """What must not outlive a kernel that SIGTERM ends: the direct channel's files, the journals."""
    if direct is not None:
        direct.release()
    if journals is not None:
        journals.remove_now()


def _unregister_magics(ipython, magics) -> None:
    """Take our magics off the shell (IPython has no call for it): `%%uexec` then is unknown, as before loading."""
    table = ipython.magics_manager.magics
    for kind, names in magics.magics.items():
        for name in names:
            if getattr(table[kind].get(name), "__self__", None) is magics:
                del table[kind][name]
    ipython.magics_manager.registry.pop(type(magics).__name__, None)


def end_sessions(manager: UnifiedExecSessionManager, bridge: Bridge, *, restart: bool = True) -> None:
    """End every session's processes, then the engine's thread, from any thread but the engine's. Blocks.

    For shutdown and restart (ipykernel 7 runs `do_shutdown` on its control
    thread) and atexit: the processes are signalled by pid, which touches
    no loop, so it works even when the engine's loop is busy or gone.
    Kept sessions stay with their keeper unless this is a real shutdown
    (`restart=False`): atexit and SIGTERM cannot tell, so they keep them.
    """
    for info in manager.list_sessions():  # what ends with the kernel is told so (protocol/messages.py `exited`)
        if info.alive and not (restart and info.kept):
            manager.session(info.session_id).ended_with_kernel = True
    manager.terminate_all_threadsafe(kept=not restart)
    bridge.stop()
    if manager.journals is not None:
        manager.journals.close()  # the writer's thread writes what is queued and is joined


def _journal_store(settings: UnifiedExec):
    """The kernel's journals, named after its connection file and process (a restarted kernel
    keeps its connection file, and a journal kept by the last one must not be in the way)."""
    try:
        from ipykernel.connect import get_connection_file

        name = f"{os.path.splitext(os.path.basename(get_connection_file()))[0]}-{os.getpid()}"
    except Exception:  # noqa: BLE001 - no kernel app (a terminal IPython): the process is the kernel
        name = f"pid-{os.getpid()}"
    loads = next(_loads)
    if loads:
        name += f"-{loads + 1}"  # a reloaded extension: the last one's directory may still be going
    try:
        return settings.journal_store(name)
    except OSError as error:
        log.warning("uexec: journals are off: cannot make their directory (%s)", error)
        return None


def _direct_channel(settings: UnifiedExec, manager: UnifiedExecSessionManager, bridge: Bridge) -> tuple[DirectSocket | None, str]:
    """The live views' socket beside the kernel's connection file, listening whenever the engine runs; the kernel's id."""
    connection_file = kernel_connection_file()
    if not settings.direct_channel or connection_file is None:
        return None, ""

    def connection(on_lost):
        from .protocol.direct import DirectConnection  # at the first view that connects, not at every kernel start

        return DirectConnection(manager, on_lost, hold_s=settings.live_view_hold_s)

    channel = DirectSocket(connection_file, socket_names, connection)
    bridge.engine.add_service(channel)
    return channel, kernel_id_of(connection_file)


class _LiveViewsOnDemand:
    """The live face's `LiveViews`, imported when a live view or a player is first asked for.

    The widget module imports anywidget and ipywidgets (about a third of what
    loading the extension cost): a kernel that never shows a live view never
    pays for them. The comm target needs none of it and is registered at load.
    """

    def __init__(self, manager: UnifiedExecSessionManager, bridge: Bridge):
        self._manager, self._bridge = manager, bridge
        self._views = None

    def _loaded(self):
        if self._views is None:
            from .live.widget import LiveViews

            self._views = LiveViews(self._manager, self._bridge)
        return self._views

    def __call__(self, session_id: int):
        return self._loaded()(session_id)

    def replay(self, played, title: str):
        return self._loaded().replay(played, title)

    def unavailable(self) -> str | None:
        return self._loaded().unavailable()


def _kernel_loop(kernel) -> asyncio.AbstractEventLoop | None:
    # `io_loop` exists once the kernel has started (UnifiedExecKernel loads
    # this extension before that).
    io_loop = getattr(kernel, "io_loop", None)
    return io_loop.asyncio_loop if io_loop is not None else None
