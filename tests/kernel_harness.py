"""Drive a real kernel through jupyter_client and read what a notebook would show.

`Execution.text` applies display updates the way a front end does: each
display_id shows its latest data, in the place it was first displayed.
"""

from __future__ import annotations

import queue
import time
import uuid
from dataclasses import dataclass, field

from jupyter_client.manager import KernelManager


@dataclass
class Execution:
    reply: dict
    messages: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def outputs(self) -> list[tuple[str, str]]:
        """(kind, text) in order; a display shows its latest update."""
        shown: list[list] = []
        by_id: dict[str, list] = {}
        for msg in self.messages:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                # A front end appends to the stream it is showing: one print
                # may arrive as several messages.
                if shown and shown[-1][0] == "stream" and shown[-1][2] == content["name"]:
                    shown[-1][1] += content["text"]
                else:
                    shown.append(["stream", content["text"], content["name"]])
            elif kind in ("display_data", "execute_result"):
                entry = [kind, content["data"].get("text/plain", "")]
                shown.append(entry)
                display_id = content.get("transient", {}).get("display_id")
                if display_id:
                    by_id[display_id] = entry
            elif kind == "update_display_data":
                display_id = content.get("transient", {}).get("display_id")
                if display_id in by_id:
                    by_id[display_id][1] = content["data"].get("text/plain", "")
            elif kind == "error":
                shown.append(["error", "\n".join(content["traceback"])])
        return [tuple(entry[:2]) for entry in shown]

    @property
    def text(self) -> str:
        return "".join(text if text.endswith("\n") else text + "\n" for _, text in self.outputs)

    @property
    def error(self) -> str | None:
        errors = [text for kind, text in self.outputs if kind == "error"]
        return errors[0] if errors else None

    @property
    def iopub_count(self) -> int:
        return len(self.messages)

    def count(self, msg_type: str) -> int:
        return sum(1 for msg in self.messages if msg["msg_type"] == msg_type)


class Kernel:
    def __init__(self, kernel_name: str = "uexec", env: dict[str, str] | None = None, connection_file: str | None = None):
        """`connection_file`: where the kernel's goes (default: jupyter_client's, a temporary file)."""
        for attempt in (1, 2):
            self.manager = KernelManager(kernel_name=kernel_name, **({"connection_file": connection_file} if connection_file else {}))
            self.manager.start_kernel(**({"env": env} if env is not None else {}))
            self.client = self.manager.blocking_client()
            self.client.start_channels()
            try:
                self.client.wait_for_ready(timeout=60)
                break
            except RuntimeError:
                # jupyter_client picks free ports and the kernel binds them later: another process
                # may take one in between (the kernel dies with "Address already in use"). A second
                # start picks new ones; a kernel that dies at start twice is a failure.
                if attempt == 2 or self.manager.is_alive():
                    raise
                self.client.stop_channels()
                self.manager.cleanup_resources()  # its connection file too: the next start chooses new ports
        self.backlog: list[dict] = []  # iopub messages read while looking for others

    @property
    def pid(self) -> int:
        return self.manager.provisioner.process.pid

    def execute(self, code: str, timeout: float = 60, *, during=None) -> Execution:
        """Run a cell; `during(elapsed_messages)` is called after each iopub message (e.g. to interrupt)."""
        return self.finish_execute(self.start_execute(code), timeout, during=during)

    def start_execute(self, code: str) -> str:
        """Send a cell without waiting for it (to talk to the kernel while it runs); its msg_id."""
        self._started_at = time.monotonic()
        return self.client.execute(code)

    def finish_execute(self, msg_id: str, timeout: float = 60, *, during=None) -> Execution:
        """The cell `start_execute` sent, once it is idle (messages read meanwhile included)."""
        started = getattr(self, "_started_at", time.monotonic())
        messages = []
        deadline = time.monotonic() + timeout
        pending = [msg for msg in self.backlog if msg["parent_header"].get("msg_id") == msg_id]
        self.backlog = [msg for msg in self.backlog if msg["parent_header"].get("msg_id") != msg_id]
        while True:
            if pending:
                msg = pending.pop(0)
            else:
                msg = self.client.get_iopub_msg(timeout=max(deadline - time.monotonic(), 0.01))
            if msg["parent_header"].get("msg_id") != msg_id:
                self.backlog.append(msg)
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    break
                continue
            if msg["msg_type"] == "execute_input":
                continue
            messages.append(msg)
            if during is not None:
                during(messages)
        reply = self.client.get_shell_msg(timeout=10)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=10)
        return Execution(reply=reply["content"], messages=messages, seconds=time.monotonic() - started)

    def run(self, code: str, timeout: float = 60) -> str:
        """Execute and insist it succeeded; returns the text shown."""
        execution = self.execute(code, timeout)
        assert execution.reply["status"] == "ok", execution.text
        return execution.text

    # -- comms, as a front end opens them --------------------------------------

    def comm_open(self, target: str, data: dict | None = None, *, subshell: str | None = None) -> str:
        comm_id = uuid.uuid4().hex
        self._send_shell("comm_open", {"comm_id": comm_id, "target_name": target, "data": data or {}}, subshell)
        return comm_id

    def comm_send(self, comm_id: str, data, *, subshell: str | None = None) -> None:
        """A comm message, over `subshell` as JupyterLab >= 4.4 sends them (None: the main shell)."""
        self._send_shell("comm_msg", {"comm_id": comm_id, "data": data}, subshell)

    def comm_close(self, comm_id: str) -> None:
        self._send_shell("comm_close", {"comm_id": comm_id, "data": {}}, None)

    def _send_shell(self, msg_type: str, content: dict, subshell: str | None) -> None:
        msg = self.client.session.msg(msg_type, content)
        if subshell is not None:
            msg["header"]["subshell_id"] = subshell
        self.client.shell_channel.send(msg)

    # -- subshells (kernel protocol 5.5), as JupyterLab opens them for comms -------

    def create_subshell(self) -> str:
        return self._control("create_subshell_request", {})["subshell_id"]

    def delete_subshell(self, subshell_id: str) -> None:
        reply = self._control("delete_subshell_request", {"subshell_id": subshell_id})
        assert reply["status"] == "ok", reply

    def _control(self, msg_type: str, content: dict) -> dict:
        msg = self.client.session.msg(msg_type, content)
        self.client.control_channel.send(msg)
        while True:
            reply = self.client.get_control_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]

    def comm_messages(self, comm_id: str, until, timeout: float = 20) -> list:
        """Data of the kernel's messages on this comm, up to and including the first `until(data)` is true for.

        Other messages read meanwhile (a running cell's) stay in the backlog, in order.
        """
        found = self.messages_until(
            lambda msg: msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id,
            lambda msg: until(msg["content"]["data"]),
            timeout,
            what=lambda found: [m["content"]["data"].get("type") for m in found],
        )
        return [msg["content"]["data"] for msg in found]

    def messages_until(self, wanted, until, timeout: float = 20, *, what=None) -> list[dict]:
        """The iopub messages `wanted(msg)` picks, up to and including the first `until(msg)` is true for.

        Others read meanwhile stay in the backlog, in order.
        """
        found = []
        others = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                if self.backlog:
                    msg = self.backlog.pop(0)
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        seen = what(found) if what is not None else [m["msg_type"] for m in found]
                        raise AssertionError(f"timed out; saw {seen}")
                    try:
                        msg = self.client.get_iopub_msg(timeout=remaining)
                    except queue.Empty:
                        continue
                if wanted(msg):
                    found.append(msg)
                    if until(msg):
                        return found
                else:
                    others.append(msg)
        finally:
            self.backlog[:0] = others

    def shutdown(self, restart: bool = False) -> None:
        if restart:
            self.manager.restart_kernel(now=False)
            self.client.wait_for_ready(timeout=60)
            return
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=False)
