"""The manager of the running kernel, for code that was not handed one.

`%load_ext` makes one manager per kernel and keeps it on the IPython shell
(not in the user's namespace, which `%reset` clears). A user's
`TerminalWidget(0)` finds it here.
"""

from __future__ import annotations

from .core.manager import UnifiedExecSessionManager

_ATTRIBUTE = "unified_exec_manager"


def set_manager(shell, manager: UnifiedExecSessionManager | None) -> None:
    setattr(shell, _ATTRIBUTE, manager)


def manager_of(shell) -> UnifiedExecSessionManager | None:
    return getattr(shell, _ATTRIBUTE, None)


def current_manager() -> UnifiedExecSessionManager:
    from IPython import get_ipython

    manager = manager_of(get_ipython())
    if manager is None:
        raise RuntimeError("load the extension first: %load_ext unified_exec_kernel")
    return manager
