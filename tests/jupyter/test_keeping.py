"""Where a kernel id's keeper listens, and the token only its next kernel can show."""

import json
import os
import stat

from unified_exec_kernel.jupyter.keeping import MAX_SOCKET_PATH_BYTES, keeper_socket, keeper_token


def connection_file(folder, name="kernel-1234.json", key="secret"):
    path = folder / name
    path.write_text(json.dumps({"key": key, "shell_port": 1}))
    return str(path)


def test_the_socket_sits_beside_the_connection_file(tmp_path):
    assert keeper_socket(connection_file(tmp_path)) == str(tmp_path / "kernel-1234.uexec-keep.sock")


def test_a_path_too_long_for_a_unix_address_goes_to_a_private_directory(tmp_path):
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    path = keeper_socket(connection_file(deep))
    assert len(os.fsencode(path)) <= MAX_SOCKET_PATH_BYTES
    info = os.stat(os.path.dirname(path))
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
    assert keeper_socket(connection_file(deep)) == path  # the next kernel finds the same one


def test_only_the_same_connection_file_gives_the_same_token(tmp_path):
    first = connection_file(tmp_path)
    assert keeper_token(first) == keeper_token(first)
    assert keeper_token(connection_file(tmp_path, "kernel-5678.json")) != keeper_token(first)  # another kernel
    other_key = tmp_path / "copy"
    other_key.mkdir()
    assert keeper_token(connection_file(other_key, key="another")) != keeper_token(connection_file(other_key))
