"""`UnifiedExecKernel`: an IPython kernel with `%load_ext unified_exec_kernel` already done."""

from __future__ import annotations

import atexit
import gc

from ipykernel.ipkernel import IPythonKernel

from . import __version__


class UnifiedExecKernel(IPythonKernel):
    """The kernel composes the extension and knows nothing of its sessions: loading it hooks the
    kernel's shutdown (ipykernel 7 runs `do_shutdown` on its control thread), as in any kernel."""

    implementation = "unified_exec_kernel"
    implementation_version = __version__
    banner = "Python (uexec): %%uexec starts and drives long-lived terminal sessions"

    def __init__(self, **kwargs):
        atexit.register(_collect_then_freeze)  # before the shell's: runs after IPython's own exit work
        super().__init__(**kwargs)
        self.shell.extension_manager.load_extension("unified_exec_kernel")


def _collect_then_freeze() -> None:
    """Spare the exiting interpreter its collections over the live heap.

    CPython's teardown runs full collections over every object still alive
    (~60,000 in a kernel): ~250 ms of each restart's exit, 35-40% of Restart
    Kernel, and more for this kernel than for the stock one, whose heap is
    smaller. Here, after the sessions, journals, engine thread and IPython's
    reset of the user namespace, what is garbage is collected once (its
    finalizers run, as at any exit) and the rest is frozen: the teardown's
    collections skip it, and the system frees the memory.
    """
    gc.collect()
    gc.freeze()
