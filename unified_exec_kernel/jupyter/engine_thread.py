"""The engine's own asyncio loop, in one daemon thread the kernel extension owns.

The kernel's main loop is the one a running cell holds: a PTY read there
waits for the cell, so a session printing during `time.sleep(3)` kept 1-2%
of its pace and blocked once ~64 KB were unread. Every session, reader,
timer and live stream therefore lives on this loop instead, whatever the
main thread does. It has ipykernel's own threads' shape (Control, IOPub,
subshells): one loop per thread, stopped through the loop's thread-safe
callback, joined on the way out. Only jupyter/bridge.py hands it work.

A service (the direct channel's socket, direct_socket.py) lives exactly as
long as the loop: started on it first thing each time the thread starts,
stopped on it after the sessions close, and released from the stopping
thread whatever happened to the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Protocol

from ..core.process.forks import drop_in_child

log = logging.getLogger(__name__)

THREAD_NAME = "uexec-engine"
JOIN_TIMEOUT_S = 5.0


class Service(Protocol):
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop, before any work handed to it; must not raise or block."""

    async def stop(self) -> None:
        """On the loop, after the closing work, before it stops."""

    def release(self) -> None:
        """From any thread, after the loop has stopped (or failed to): what must not outlive it (idempotent)."""


class EngineThread:
    """One loop in one thread, started on first use; `stop` ends both, and it can start again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # start and stop may race from the main and control threads
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._services: list[Service] = []
        self._forked = False
        drop_in_child(self)

    def forked_child(self) -> None:
        """A forked child has no engine thread, and its sessions are the parent's: none starts here
        (a script's child gets an engine of its own, notebook/sessions.py). The lock may have been held."""
        self._lock = threading.Lock()
        self._thread = self._loop = None
        self._forked = True

    def add_service(self, service: Service) -> None:
        """Run `service` with the loop from now on (started now if the loop already runs)."""
        with self._lock:
            self._services.append(service)
            loop = self._loop if self.running else None
        if loop is not None:
            loop.call_soon_threadsafe(_start_service, service, loop)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def ident(self) -> int | None:
        return self._thread.ident if self._thread is not None else None

    def loop(self) -> asyncio.AbstractEventLoop:
        """The engine's loop, the thread started if need be (it runs by the time this returns)."""
        with self._lock:
            if self._forked:
                raise RuntimeError("the sessions are the parent process's: a forked child cannot use its engine")
            if self._loop is None or not self.running:
                self._start()
            return self._loop

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        thread = threading.Thread(target=self._run, args=(loop, ready, list(self._services)), name=THREAD_NAME, daemon=True)
        thread.start()
        ready.wait()
        self._loop, self._thread = loop, thread

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event, services: list[Service]) -> None:
        asyncio.set_event_loop(loop)
        for service in services:  # before `ready`: ahead of any work handed over
            loop.call_soon(_start_service, service, loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            try:
                _cancel_remaining(loop)
            finally:
                loop.close()

    def stop(self, before: Callable[[], Awaitable[None]] | None = None, *, timeout: float = JOIN_TIMEOUT_S) -> bool:
        """Run `before()` on the loop (closing the sessions), stop it and join the thread. Blocks.

        For the thread that shuts the kernel down (ipykernel's control thread,
        atexit), never for a loop's own thread. True if the thread ended.
        """
        thread, loop = self._retire()
        if thread is None:
            return True
        if thread is threading.current_thread():
            raise RuntimeError("the engine thread cannot join itself")
        services = list(self._services)
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(_then_stop(loop, before, services)))
        thread.join(timeout)
        _release(services)
        if thread.is_alive():
            log.warning("uexec: the engine thread did not end within %.0f s", timeout)
            return False
        return True

    async def stop_async(self, before: Callable[[], Awaitable[None]] | None = None) -> None:
        """`stop` for code on another loop (an unload on the kernel's): waits without blocking it."""
        thread, loop = self._retire()
        if thread is None:
            return
        finished = asyncio.get_running_loop().create_future()
        caller = asyncio.get_running_loop()
        services = list(self._services)

        async def end() -> None:
            try:
                await _then_stop(loop, before, services)
            finally:
                caller.call_soon_threadsafe(_resolve, finished)

        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(end()))
        await finished
        # The loop has stopped; what is left of the thread is closing the loop.
        thread.join(JOIN_TIMEOUT_S)
        _release(services)

    def _retire(self) -> tuple[threading.Thread | None, asyncio.AbstractEventLoop | None]:
        with self._lock:
            thread, loop = self._thread, self._loop
            self._thread = self._loop = None
        if thread is None or not thread.is_alive():
            return None, None
        return thread, loop


async def _then_stop(loop: asyncio.AbstractEventLoop, before, services: list[Service]) -> None:
    try:
        if before is not None:
            await before()
    except Exception:
        log.exception("uexec: closing the sessions failed")
    finally:
        for service in services:
            try:
                await service.stop()
            except Exception:
                log.exception("uexec: stopping %s failed", type(service).__name__)
        loop.stop()


def _start_service(service: Service, loop: asyncio.AbstractEventLoop) -> None:
    try:
        service.start(loop)
    except Exception:
        log.exception("uexec: starting %s failed", type(service).__name__)


def _release(services: list[Service]) -> None:
    for service in services:
        try:
            service.release()
        except Exception:
            log.exception("uexec: releasing %s failed", type(service).__name__)


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    """Tasks still pending when the loop stops (a watch, a wait) end as cancelled, not as warnings."""
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
