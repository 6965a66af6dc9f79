"""The server's log on stderr: one bounded line a record, dropped rather than waited for.

An MCP client starts the server with a stderr pipe it may never read. A
blocking write to a full pipe would stop the server's loop (and every call)
for good, so records are written to a non-blocking handle of that pipe of
its own (the pipe reopened through /proc: O_NONBLOCK set on fd 2 itself would
reach every process sharing it); a record that does not fit is counted and
the count is told with the next line that does. Each line is at most
MESSAGE_LIMIT bytes (under PIPE_BUF, so never written in part); a traceback
is folded into its line for a DEBUG record only.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import stat

from ..core.errors import MESSAGE_LIMIT, one_line


class StderrLines(logging.Handler):
    def __init__(self, fd: int = 2):
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        self.dropped = 0
        self._socket: socket.socket | None = None
        self._fd, self._nonblocking = _own_handle(fd)
        if self._fd is not None and stat.S_ISSOCK(os.fstat(self._fd).st_mode):
            self._socket = socket.socket(fileno=self._fd)

    def emit(self, record: logging.LogRecord) -> None:
        if self._fd is None:
            return
        try:
            if record.exc_info and record.levelno > logging.DEBUG:
                error = record.exc_info[1]
                told = f"{record.getMessage()} ({type(error).__name__}: {error})"
                record = logging.makeLogRecord({**record.__dict__, "msg": told, "args": None, "exc_info": None, "exc_text": None})
            text = self.format(record)
            if self.dropped:
                text = f"({self.dropped} log lines dropped: stderr was full) {text}"
            data = one_line(text, MESSAGE_LIMIT - 1).encode("utf-8", "backslashreplace")
            data = data[: MESSAGE_LIMIT - 1].decode("utf-8", "ignore").encode() + b"\n"
            if self._write(data):
                self.dropped = 0
            else:
                self.dropped += 1
        except OSError:
            self.dropped += 1  # a closed pipe: nobody reads; the server goes on

    def _write(self, data: bytes) -> bool:
        if self._socket is not None:
            try:
                return self._socket.send(data, socket.MSG_DONTWAIT) == len(data)
            except BlockingIOError:
                return False
        if not self._nonblocking and not select.select([], [self._fd], [], 0)[1]:
            return False  # a pipe we could not reopen: written only while it has room
        try:
            os.write(self._fd, data)
        except BlockingIOError:
            return False
        return True

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
        elif self._fd is not None:
            os.close(self._fd)
        self._fd = self._socket = None
        super().close()


def _own_handle(fd: int) -> tuple[int | None, bool]:
    """(a descriptor of fd's file that the server alone uses, whether its writes never wait)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None, False
    if stat.S_ISFIFO(mode):
        try:
            return os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC), True
        except OSError:
            pass  # no /proc (not Linux), or the reader is gone
    return os.dup(fd), False
