"""The manager (with its bridge and magics) of the running kernel, for code that was not handed them.

`%load_ext` makes one manager per kernel and keeps it on the IPython shell
(not in the user's namespace, which `%reset` clears). A user's
`TerminalWidget(0)` finds it here.
"""

from __future__ import annotations

from ..core.manager import UnifiedExecSessionManager

_MANAGER = "unified_exec_manager"
_MAGICS = "unified_exec_magics"
_BRIDGE = "unified_exec_bridge"
_KERNEL_ID = "unified_exec_kernel_id"
_NOT_LOADED = "load the extension first: %load_ext unified_exec_kernel"


def set_manager(shell, manager: UnifiedExecSessionManager | None, magics=None, bridge=None) -> None:
    setattr(shell, _MANAGER, manager)
    setattr(shell, _MAGICS, magics)
    setattr(shell, _BRIDGE, bridge)


def set_kernel_id(shell, kernel_id: str) -> None:
    """The id live views name to reach this kernel's direct channel ("": they use the comm)."""
    setattr(shell, _KERNEL_ID, kernel_id)


def direct_kernel_id() -> str:
    """The running kernel's id when its direct channel is on, else ""."""
    from IPython import get_ipython

    return getattr(get_ipython(), _KERNEL_ID, "") or ""


def manager_of(shell) -> UnifiedExecSessionManager | None:
    return getattr(shell, _MANAGER, None)


def bridge_of(shell):
    """The `Bridge` to the engine's loop, where the manager's sessions live."""
    return getattr(shell, _BRIDGE, None)


def magics_of(shell):
    """The `UnifiedExecMagics` of this shell (what a rewritten cell awaits)."""
    magics = getattr(shell, _MAGICS, None)
    if magics is None:
        raise RuntimeError(_NOT_LOADED)
    return magics


def current_engine():
    """The running kernel's manager and the bridge to it."""
    from IPython import get_ipython

    shell = get_ipython()
    manager = manager_of(shell)
    if manager is None:
        raise RuntimeError(_NOT_LOADED)
    return manager, bridge_of(shell)


def current_manager() -> UnifiedExecSessionManager:
    return current_engine()[0]
