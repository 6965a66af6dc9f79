"""What reaches into ipykernel and IPython: each patch still does its job on the versions we run."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from unified_exec_kernel.jupyter.patches import reset_last_traceback

from ..kernel_harness import Kernel
from ..test_kernel import STUBBORN, leaders, wait_gone


def test_plain_ipykernel_with_load_ext():
    kernel = Kernel("python3")
    try:
        kernel.run("%load_ext unified_exec_kernel")
        kernel.run("%load_ext unified_exec_kernel")  # loading twice is harmless
        text = kernel.run("%%uexec\nbash -c 'echo from-a-plain-kernel'\n")
        assert "from-a-plain-kernel" in text and "[exited with code 0" in text
        kernel.run(STUBBORN)
        pids = leaders(kernel)
        kernel.shutdown()
        assert wait_gone(pids) == []
    finally:
        if kernel.manager.is_alive():
            kernel.shutdown()


def test_the_last_traceback_is_reset_before_every_cell():
    shell = InteractiveShell.instance()
    shell._last_traceback = ["an older cell's traceback"]
    reset_last_traceback()
    assert shell._last_traceback is None
