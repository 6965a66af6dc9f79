"""What the kernel and its helpers share: the keeper's records, and that the kernel holds no helper's code."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys

import pytest

from unified_exec_kernel.core.process.helper_wire import (GUARDIAN_BOOTSTRAP, KEEPER_BOOTSTRAP, MAX_MESSAGE_BYTES, PART_BYTES, close_all,
                                                          receive_message, records)


def test_a_message_longer_than_a_record_goes_in_parts_and_is_read_whole_across_reads():
    message = {"op": "spawn", "argv": ["bash", "-c", "x" * 150_000]}
    parts = records(json.dumps(message).encode())
    assert len(parts) == 5 and all(len(part) <= PART_BYTES + 1 for part in parts)
    assert records(b'{"op": "ping"}') == [b'{"op": "ping"}']  # a short one is one record, as before
    sender, reader = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    reader.setblocking(False)
    partial = bytearray()
    with sender, reader, open(os.devnull) as attached:
        for part in parts[:-1]:
            sender.send(part)
        with pytest.raises(BlockingIOError):  # the rest is not there yet: what came is kept
            receive_message(reader, nonblocking=True, partial=partial)
        socket.send_fds(sender, [parts[-1]], [attached.fileno()])
        received, fds = receive_message(reader, nonblocking=True, partial=partial)
        for fd in fds:
            os.close(fd)
    assert received == message and len(fds) == 1 and partial == b""


def test_a_record_past_the_limit_or_a_message_that_is_no_object_is_refused_and_its_fds_closed():
    sender, reader = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with sender, reader:
        sender.send(b"[1, 2]")
        with pytest.raises(ValueError, match="must be an object"):
            receive_message(reader)
        sender.send(b"\x00" + b"x" * PART_BYTES)  # more to come, past the most a message may carry in all
        with pytest.raises(ValueError, match=f"longer than {MAX_MESSAGE_BYTES:,}"):
            receive_message(reader, partial=bytearray(b"y" * MAX_MESSAGE_BYTES))
        sender.close()
        assert receive_message(reader) == (None, [])  # the end of the connection


def test_close_all_skips_what_is_closed_already():
    reader, writer = os.pipe()
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    never_open = (soft if soft != resource.RLIM_INFINITY else 1 << 30) + 1  # past the limit: no thread can hold it
    try:
        close_all([writer, never_open])  # `never_open` is not an open fd: no error
        assert os.read(reader, 1) == b""  # and `writer` is closed: the pipe's end
    finally:
        os.close(reader)


def test_the_kernel_side_of_the_helpers_loads_none_of_their_code():
    # The guardian's and keeper's own modules run in their processes; a kernel that
    # starts them holds only this module (issue 38, item 5: what a hub pays per kernel).
    probe = (
        "import sys\n"
        "import unified_exec_kernel.core.process.guardian, unified_exec_kernel.core.process.keeper\n"
        "print(sorted(m for m in ('unified_exec_kernel.core.process.guardian_process', "
        "'unified_exec_kernel.core.process.keeper_process') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout == "[]\n", loaded.stderr


@pytest.mark.parametrize(("bootstrap", "module"), [(GUARDIAN_BOOTSTRAP, "guardian_process"), (KEEPER_BOOTSTRAP, "keeper_process")])
def test_each_bootstrap_names_its_helper_first_and_imports_its_module_without_the_package(bootstrap, module):
    first, *rest = bootstrap.splitlines()
    assert first.startswith("# uexec ") and f"core/process/{module}.py" in first
    assert f"from unified_exec_kernel.core.process.{module} import serve" in rest
    compile(bootstrap, "<bootstrap>", "exec")
