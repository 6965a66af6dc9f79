"""The kernel's manager is found on the shell, not in the user's namespace."""

import pytest

from unified_exec_kernel import UnifiedExecSessionManager
from unified_exec_kernel.jupyter import current


class Shell:
    """Stands for the IPython shell: `current` only keeps an attribute on it."""


def test_a_manager_kept_on_the_shell_is_found_and_can_be_dropped():
    shell, manager = Shell(), UnifiedExecSessionManager()
    assert current.manager_of(shell) is None
    current.set_manager(shell, manager)
    assert current.manager_of(shell) is manager
    current.set_manager(shell, None)
    assert current.manager_of(shell) is None


def test_without_the_extension_the_error_says_how_to_load_it():
    with pytest.raises(RuntimeError, match="%load_ext unified_exec_kernel"):
        current.current_manager()
