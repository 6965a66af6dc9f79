"""A shell started integrated in a real PTY, read through the scanner, for tests to drive.

Every wait has a bounded deadline; `run` waits as the session manager will
(core/completion/collect.py): drain what the shell printed, write, then feed
the events to a CommandEnd until the shell is back at its prompt.
"""

from __future__ import annotations

import os
import platform
import select
import signal
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from unified_exec_kernel.core.process import procs
from unified_exec_kernel.core.completion.collect import CommandEnd
from unified_exec_kernel.core.completion.semantic_prompt import PromptEvent, SemanticPromptScanner
from unified_exec_kernel.core.completion.shell_integration import integrate, new_nonce
from unified_exec_kernel.core.process.spawn import spawn_pty
from unified_exec_kernel.core.output.utf8 import Utf8Stream

WAIT_S = 30.0
# read, poll, select, pselect6, ppoll (what a line editor blocks in), by machine
_WAIT_FOR_INPUT_SYSCALLS = {"x86_64": {"0", "7", "23", "270", "271"}, "aarch64": {"63", "72", "73"}}


@dataclass
class Run:
    output: str  # what the command printed: the text between its C and its D
    status: int | None  # the last D's status before the prompt, None without a D
    events: list[PromptEvent]  # every marker from the write to the prompt, foreign ones too


class Shell:
    """A shell started integrated in a real PTY; events carry absolute indexes into `text`."""

    def __init__(self, argv: list[str], home: Path, env: dict[str, str] | None = None):
        self.nonce = new_nonce()
        base = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "xterm-256color", "LANG": "C.UTF-8"}
        rewritten = integrate(argv, {**base, **(env or {})}, self.nonce)
        assert rewritten is not None, argv
        self.argv, self.env = rewritten
        self.pty = spawn_pty(self.argv, self.env, handoff=f"{self.nonce}\n".encode())
        self.scanner = SemanticPromptScanner(self.nonce)
        self.utf8 = Utf8Stream()
        self.text = ""
        self.events: list[PromptEvent] = []
        self.eof = False
        self.exit_status: int | None = None

    # -- reading -------------------------------------------------------------

    def _read_once(self, timeout: float) -> None:
        ready, _, _ = select.select([self.pty.master_fd], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(self.pty.master_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.eof = True
            self.text += (self.utf8.feed(b"", final=True) + self.scanner.flush()).decode()
            return
        clean, events = self.scanner.feed(self.utf8.feed(data))
        # The scanner counts bytes (a session's output); these tests index the text.
        self.events += [PromptEvent(e.kind, len(self.text) + len(clean[: e.index].decode()), e.ours, e.exit_status, e.typeahead) for e in events]
        self.text += clean.decode()

    def wait_for(self, predicate, what: str, timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.eof:
                raise AssertionError(
                    f"{what}: not seen within {timeout}s (eof={self.eof});\n"
                    f"text: {self.text[-1500:]!r}\nevents: {self.events[-12:]}"
                )
            self._read_once(min(remaining, 0.5))

    def wait_text(self, needle: str, start: int = 0) -> int:
        self.wait_for(lambda: self.text.find(needle, start) != -1, repr(needle))
        return self.text.find(needle, start)

    def ours(self, since: int = 0, kind: str | None = None) -> list[PromptEvent]:
        return [e for e in self.events[since:] if e.ours and (kind is None or e.kind == kind)]

    def wait_event(self, kind: str, since: int) -> int:
        """Index in `events` of the first of ours of this kind from `since` on (A: not typeahead)."""

        def found() -> int | None:
            for i in range(since, len(self.events)):
                event = self.events[i]
                if event.ours and event.kind == kind and not (kind == "A" and event.typeahead):
                    return i
            return None

        self.wait_for(lambda: found() is not None, f"our {kind} after event {since}")
        return found()

    # -- driving -------------------------------------------------------------

    def write(self, data: str) -> int:
        """Write input; returns the event count at the write (what came after is its answer)."""
        # Markers printed before the write are read first, as the session will do.
        self._read_once(0)
        mark = len(self.events)
        os.write(self.pty.master_fd, data.encode())
        return mark

    def started(self) -> None:
        self.wait_event("A", 0)

    def editing(self) -> None:
        """The line editor reads keys now: the prompt is drawn and the terminal left line mode."""
        last_a = max(i for i, e in enumerate(self.events) if e.ours and e.kind == "A")
        self.wait_event("B", last_a)
        line_mode = lambda: termios.tcgetattr(self.pty.master_fd)[3] & (termios.ICANON | termios.ECHO)  # noqa: E731
        self.wait_for(lambda: not line_mode(), "the line editor")

    def wait_blocked_reading(self) -> None:
        """The shell sleeps in the call that waits for a key.

        A signal that lands while the line editor is busy (redrawing the line it just
        echoed) is only acted on after the next key, even in a plain bash: Ctrl-C is
        deterministic only once the shell waits.
        """

        def waiting() -> bool:
            try:
                with open(f"/proc/{self.pty.pid}/syscall") as syscall:
                    number = syscall.read().split()[0]
            except (OSError, IndexError):
                return False
            return number in _WAIT_FOR_INPUT_SYSCALLS.get(platform.machine(), {number})

        self.wait_for(waiting, "the shell waiting for a key")

    def wait_foreground(self, program: str) -> None:
        """`program` runs in the foreground (exec'd: a signal now reaches it, not a forked shell)."""

        def running() -> bool:
            try:
                with open(f"/proc/{os.tcgetpgrp(self.pty.master_fd)}/cmdline", "rb") as cmdline:
                    return cmdline.read().split(b"\0")[0] == program.encode()
            except OSError:
                return False

        self.wait_for(running, f"{program} in the foreground")

    def run(self, line: str) -> Run:
        mark = self.write(line + "\n")
        wait = CommandEnd()
        fed = mark

        def back_at_prompt() -> bool:
            nonlocal fed
            for event in self.events[fed:]:
                wait.feed(event)
            fed = len(self.events)
            return wait.done

        self.wait_for(back_at_prompt, f"the prompt after {line!r}")
        prompt = next(i for i in range(mark, len(self.events)) if self.events[i] is wait.prompt)
        events = self.events[mark : prompt + 1]
        output = ""
        ds = [e for e in events if e.ours and e.kind == "D"]
        cs = [e for e in events if e.ours and e.kind == "C" and ds and e.index <= ds[-1].index]
        if cs:
            output = self.text[cs[-1].index : ds[-1].index]
        return Run(output, wait.exit_code, events)

    def wait_exit(self) -> int:
        deadline = time.monotonic() + WAIT_S
        while not self.eof and time.monotonic() < deadline:
            self._read_once(0.5)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pty.pid, os.WNOHANG)
            if pid:
                self.exit_status = os.waitstatus_to_exitcode(status)
                return self.exit_status
            time.sleep(0.01)
        raise AssertionError("the shell did not exit")

    def close(self) -> None:
        members = procs.session_members([self.pty.pid])[self.pty.pid]
        procs.signal_pids(members, [signal.SIGKILL])
        if self.exit_status is None:
            try:
                os.waitpid(self.pty.pid, 0)
            except ChildProcessError:
                pass
        os.close(self.pty.master_fd)
