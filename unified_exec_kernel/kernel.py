"""`UnifiedExecKernel`: an IPython kernel with `%load_ext unified_exec_kernel` already done."""

from __future__ import annotations

from ipykernel.ipkernel import IPythonKernel

from . import __version__
from .extension import end_sessions
from .jupyter import current


class UnifiedExecKernel(IPythonKernel):
    implementation = "unified_exec_kernel"
    implementation_version = __version__
    banner = "Python (uexec): %%uexec starts and drives long-lived terminal sessions"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.shell.extension_manager.load_extension("unified_exec_kernel")

    def do_shutdown(self, restart):
        # ipykernel 7 calls this on its control thread: end the sessions by
        # signalling their processes, then the engine's thread.
        manager = current.manager_of(self.shell)
        if manager is not None:
            end_sessions(manager, current.bridge_of(self.shell), restart=restart)
        return super().do_shutdown(restart)
