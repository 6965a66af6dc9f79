"""Where a kernel's direct channel listens, as the server reads it: beside the connection file, or where the pointer says."""

from __future__ import annotations

import os
import socket

from unified_exec_kernel.protocol.address import find_socket, socket_names


def listening(path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen()
    return sock


def test_names_beside_the_connection_file():
    assert socket_names("/run/jupyter/kernel-abc.json") == ("/run/jupyter/kernel-abc.uexec.sock", "/run/jupyter/kernel-abc.uexec.sockpath")
    assert socket_names("/x/odd-name") == ("/x/odd-name.uexec.sock", "/x/odd-name.uexec.sockpath")


def test_the_socket_beside_then_the_pointer_wins(tmp_path):
    connection_file = str(tmp_path / "kernel-1.json")
    beside, pointer = socket_names(connection_file)
    assert find_socket(connection_file) is None
    with listening(beside):
        assert find_socket(connection_file) == beside
        elsewhere = tmp_path / "elsewhere"
        with listening(elsewhere):
            with open(pointer, "w") as file:
                file.write(f"{elsewhere}\n")
            os.chmod(pointer, 0o600)
            assert find_socket(connection_file) == str(elsewhere)
            os.chmod(pointer, 0o622)  # others could have written it: not trusted
            assert find_socket(connection_file) is None


def test_a_pointer_to_something_that_is_no_socket_is_no_channel(tmp_path):
    connection_file = str(tmp_path / "kernel-2.json")
    _, pointer = socket_names(connection_file)
    with open(pointer, "w") as file:
        file.write("/etc/passwd\n")
    assert find_socket(connection_file) is None
