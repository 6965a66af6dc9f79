"""unified-exec-kernel: long-lived PTY sessions inside a Jupyter kernel.

The engine (`unified_exec_kernel.core`) is importable without Jupyter; the
notebook faces load with `%load_ext unified_exec_kernel`; `sessions` is the
same from Python code (`from unified_exec_kernel import sessions`), imported
when first asked for.
"""

from .core.output.buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES, OutputBuffer
from .core.errors import (
    CreateSessionError,
    MissingCommandLineError,
    UnifiedExecError,
    UnknownSessionIdError,
    WriteToStdinError,
)
from .core.manager import UnifiedExecSessionManager
from .core.models import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, SessionInfo, UnifiedExecRequest, UnifiedExecResult
from .core.session import PtySession
from .core.output.truncate import truncate_middle

__version__ = "0.1.0"
__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "MAX_TIMEOUT_MS",
    "UNIFIED_EXEC_OUTPUT_MAX_BYTES",
    "CreateSessionError",
    "MissingCommandLineError",
    "OutputBuffer",
    "PtySession",
    "SessionInfo",
    "UnifiedExecError",
    "UnifiedExecRequest",
    "UnifiedExecResult",
    "UnifiedExecSessionManager",
    "UnknownSessionIdError",
    "WriteToStdinError",
    "__version__",
    "load_ipython_extension",
    "sessions",
    "truncate_middle",
    "unload_ipython_extension",
]


def __getattr__(name: str):
    # `sessions` imports IPython: not for a program that only wants the engine.
    if name == "sessions":
        from .notebook import sessions

        return sessions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _jupyter_server_extension_points():
    return [
        {"module": "unified_exec_kernel.server.nodelay"},
        {"module": "unified_exec_kernel.server.stop"},
        {"module": "unified_exec_kernel.server.relay"},
        {"module": "unified_exec_kernel.server.culling"},
        {"module": "unified_exec_kernel.server.gateway_connection"},
    ]


def load_ipython_extension(ipython):  # pragma: no cover - exercised through real kernels
    from .extension import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):  # pragma: no cover
    from .extension import unload_ipython_extension as unload

    unload(ipython)
