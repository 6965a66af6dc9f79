"""Every request gets an answer: malformed JSON, bytes that are not UTF-8, lone surrogates, wrong types, huge and deep messages.

The fuzzing runs against one real server process (standalone) through raw
pipes; each request must be answered, in one line, within ANSWER_S (a
generous bound for a refusal, not a speed claim), and the server must still
answer a ping after each.
"""

from __future__ import annotations

import itertools
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_exec_kernel.mcp.incoming import LINE_LIMIT, check, find_id

from .raw_client import RawServer

ANSWER_S = 1.0
TOOLS = ["exec_command", "write_stdin", "list_sessions", "read_output", "kill_session", "watch_output", "nope"]
METHODS = ["tools/call", "tools/list", "ping", "initialize", "resources/list", "notifications/cancelled", "x"]

ids = itertools.count(1)


def request_line(request_id: int, method: str = "tools/call", params=None) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, **({} if params is None else {"params": params})}) + "\n").encode()


@pytest.fixture(scope="module")
def server():
    running = RawServer()
    yield running
    running.close()


def answer(server: RawServer, line: bytes, request_id) -> dict:
    server.send(line)
    found = server.answer(request_id, ANSWER_S)
    assert ("error" in found) != ("result" in found), found
    if "error" in found:
        assert "\n" not in found["error"]["message"]
    return found


@pytest.mark.parametrize(
    "line, code, words",
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo \\ud800"}}}\n',
         None, "exec_command failed: cmd holds a lone surrogate (\\ud800)"),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec_command"\n', -32700, "parse error"),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo \xff"}}}\n',
         -32700, "not UTF-8 (byte 0xff at offset"),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":[]}\n', -32602, "invalid params"),
        (b'{"jsonrpc":"2.0","id":7,"method":5}\n', -32600, "invalid request"),
        (b'{"jsonrpc":"1.0","id":7,"method":"ping"}\n', -32600, "invalid request"),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"\\udfff"}}\n', -32602, "x holds a lone surrogate (\\udfff)"),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' + b"[" * 100_000 + b"\n", -32700, "parse error"),
    ],
)
def test_a_request_the_sdk_would_drop_is_answered_in_one_line(server, line, code, words):
    request_id = next(ids)
    found = answer(server, line.replace(b'"id":7', b'"id":%d' % request_id), request_id)
    if code is None:
        assert found["result"]["isError"] and found["result"]["content"][0]["text"].startswith(words)
    else:
        assert found["error"]["code"] == code and words in found["error"]["message"], found


def test_a_valid_surrogate_pair_is_text_and_runs(server):
    request_id = next(ids)
    line = request_line(request_id, params={"name": "exec_command", "arguments": {"cmd": "echo \U0001F600", "login": False}})
    assert b"\\ud83d\\ude00" in line  # json.dumps writes the pair escaped
    found = answer(server, line, request_id)
    assert "\U0001F600" in found["result"]["content"][0]["text"] and not found["result"]["isError"]


def test_a_line_over_the_limit_is_refused_saying_the_bound_and_the_server_lives_on(server):
    request_id = next(ids)
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":0,"chars":"' % request_id
    server.send(head + b"x" * (LINE_LIMIT + 1024) + b'"}}}\n')
    found = server.answer(request_id, 30)  # 16 MiB through a pipe first: the bound is on the answer after it
    assert found["error"]["code"] == -32600
    assert f"at most {LINE_LIMIT} (16 MiB)" in found["error"]["message"], found
    ping = next(ids)
    assert answer(server, request_line(ping, "ping"), ping)["result"] == {}


def test_a_message_with_no_id_is_logged_once_and_not_answered(server):
    before = len(server.stderr)
    server.send(b'[1, 2]\n{"jsonrpc":"2.0","method":"tools/call","params":5}\n')
    ping = next(ids)
    assert answer(server, request_line(ping, "ping"), ping)["result"] == {}
    # Written before the ping's answer; read from its own pipe by another thread, so perhaps not read yet.
    dropped = lambda: sum("dropped a message with no id" in line for line in server.stderr[before:])  # noqa: E731
    deadline = time.monotonic() + 10
    while dropped() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert dropped() == 2, server.stderr[before:]
    assert not any("Traceback" in line for line in server.stderr)


# -- fuzzing ------------------------------------------------------------------

text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40)  # lone surrogates included
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=20)


def safe_arguments(arguments):
    """Nothing the fuzzer sends runs a program but `true` in the default shell: other arguments stay wrong as they are."""
    if isinstance(arguments, dict):
        arguments = {name: value for name, value in arguments.items() if name != "shell"}
        if isinstance(arguments.get("cmd"), str):
            arguments["cmd"] = "true"
    return arguments


@st.composite
def structured(draw):
    """A JSON-RPC request with wrong parts: method, params, a tool's arguments of any type or text."""
    method = draw(st.sampled_from(METHODS) | text)
    params = draw(st.none() | values | st.fixed_dictionaries({"name": st.sampled_from(TOOLS) | text, "arguments": values.map(safe_arguments)}))
    if method == "initialize":
        params = draw(values)
    return method, params


@given(case=structured())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_fuzzed_requests_are_each_answered_within_a_second(server, case):
    method, params = case
    request_id = next(ids)
    answer(server, request_line(request_id, method, params), request_id)


@given(tail=st.binary(max_size=200).filter(lambda tail: b"\n" not in tail and b'"id"' not in tail))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_fuzzed_bytes_after_an_id_are_each_answered_within_a_second(server, tail):
    request_id = next(ids)
    answer(server, b'{"jsonrpc":"2.0","id":%d,' % request_id + tail + b"\n", request_id)


@given(depth=st.integers(1, 5000), opener=st.sampled_from([b"[", b'{"a":']))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_deep_messages_are_each_answered_within_a_second(server, depth, opener):
    request_id = next(ids)
    closer = b"]" if opener == b"[" else b"}"
    answer(server, b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"x":' % request_id + opener * depth + b"1" + closer * depth + b"}}\n", request_id)


# -- the parts, without a server -------------------------------------------------


@pytest.mark.parametrize(
    "text, found",
    [
        ('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"na', 12),
        ('  {"id" : "abc", "x": [1, {"id": 3}]', "abc"),
        ('{"params":{"id":5},"id":6', 6),
        ('{"params":{"id":5', None),  # cut before the top-level id: none to trust
        ('{"id":true}', None),
        ('{"id":[1]}', None),
        ("[1, 2]", None),
        ("not json", None),
    ],
)
def test_the_id_is_found_at_the_top_level_of_a_cut_message(text, found):
    assert find_id(text) == found


def test_a_broken_response_of_the_client_is_never_answered():
    assert check(b'{"jsonrpc":"2.0","id":3,"result":{"x":"\\ud800"}}\n')[1] is None
    assert check(b'{"jsonrpc":"2.0","id":3,"error":{"code":"x"\n')[1] is None
    assert check(b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"\n')[1] is not None  # a request: answered


def test_a_good_line_goes_to_the_sdk_untouched():
    line = request_line(1, "ping")
    assert check(line) == (line.decode(), None, None)
    assert check(b"  \n") == (None, None, None)


@pytest.mark.parametrize("size", [1024 * 1024, 10 * 1024 * 1024])
def test_a_refusal_quoting_a_huge_name_or_key_is_one_short_line(server, size):
    big = "k" * size
    lines = [
        request_line(0, params={"name": big, "arguments": {big: "\ud800"}}),
        request_line(0, big, {big: "\udfff"}),
        request_line(0, "ping", {big: "\udfff"}),
        request_line(0, "tools/call", {"name": "exec_command", "arguments": {"cmd": big + "\ud800"}}),
    ]
    for line in lines:
        request_id = next(ids)
        server.send(line.replace(b'"id": 0', b'"id": %d' % request_id, 1))
        found = server.answer(request_id, 30)  # megabytes through a pipe first: the bound is on the answer
        text = found["result"]["content"][0]["text"] if "result" in found else found["error"]["message"]
        assert len(text) <= 1024 and "\n" not in text, (len(text), text[:300])
    ping = next(ids)
    assert answer(server, request_line(ping, "ping"), ping)["result"] == {}
