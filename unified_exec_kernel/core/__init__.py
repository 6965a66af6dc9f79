"""The engine: PTY sessions on an asyncio loop, with no Jupyter import.

Usable from any asyncio program (an agent harness, a script) as well as from
the kernel faces above it.
"""

from .buffer import UNIFIED_EXEC_OUTPUT_MAX_BYTES, OutputBuffer
from .errors import (
    CreateSessionError,
    MissingCommandLineError,
    UnifiedExecError,
    UnknownSessionIdError,
    WriteToStdinError,
)
from .manager import UnifiedExecSessionManager
from .models import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, SessionInfo, UnifiedExecRequest, UnifiedExecResult
from .session import PtySession
from .truncate import truncate_middle

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
    "truncate_middle",
]
