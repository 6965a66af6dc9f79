"""The manager (and magics) of the running kernel, for code that was not handed them.

`%load_ext` makes one manager per kernel and keeps it on the IPython shell
(not in the user's namespace, which `%reset` clears). A user's
`TerminalWidget(0)` finds it here.
"""

from __future__ import annotations

from ..core.manager import UnifiedExecSessionManager

_MANAGER = "unified_exec_manager"
_MAGICS = "unified_exec_magics"


def set_manager(shell, manager: UnifiedExecSessionManager | None, magics=None) -> None:
    setattr(shell, _MANAGER, manager)
    setattr(shell, _MAGICS, magics)


def manager_of(shell) -> UnifiedExecSessionManager | None:
    return getattr(shell, _MANAGER, None)


def magics_of(shell):
    """The `UnifiedExecMagics` of this shell (what a rewritten cell awaits)."""
    magics = getattr(shell, _MAGICS, None)
    if magics is None:
        raise RuntimeError("load the extension first: %load_ext unified_exec_kernel")
    return magics


def current_manager() -> UnifiedExecSessionManager:
    from IPython import get_ipython

    manager = manager_of(get_ipython())
    if manager is None:
        raise RuntimeError("load the extension first: %load_ext unified_exec_kernel")
    return manager
