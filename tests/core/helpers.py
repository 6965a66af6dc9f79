"""A tiny client so each session test reads as a scenario (after terminado's `read_stdout`)."""

from __future__ import annotations

import asyncio
import os

from unified_exec_kernel.core.session import PtySession

ENV = {**os.environ, "TERM": "xterm-256color", "PS1": "$ "}


class Reader:
    """Collects a session's output as a subscriber."""

    def __init__(self, session: PtySession):
        self.session = session
        self.text = ""
        session.subscribe(self._on_output)

    def _on_output(self, data: bytes, offset: int) -> None:
        self.text += data.decode()

    async def until(self, needle: str, timeout: float = 10.0) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while needle not in self.text:
            if loop.time() > deadline:
                raise AssertionError(f"{needle!r} not seen within {timeout}s; got {self.text[-500:]!r}")
            await asyncio.sleep(0.01)
        return self.text


def spawn(argv, backend="posix_spawn", **kwargs) -> PtySession:
    return PtySession(0, argv, ENV, backend=backend, **kwargs)
