"""What the server reads: each line the SDK can take, or the one-line answer to a request it cannot read.

The SDK validates every incoming line (`sdk.validate_message`) and,
when that fails, logs and drops it: a client whose request was a lone
surrogate (`"\\ud800"`, which Python's json.dumps writes), a cut line,
bytes that are not UTF-8 or the wrong types then waits for ever. So each
line is first checked here with the SDK's own validator; what it refuses is
answered with the JSON-RPC error that fits (-32700 not JSON, -32600 not a
request, -32602 bad params; a `tools/call` whose arguments are no text gets
an error result, as any refused call does), whenever an id can be found,
even in a line cut short; a line with none is only reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from . import sdk

from ..core.errors import one_line

LINE_LIMIT = 16 * 1024 * 1024
"""One message, at most: a write_stdin's `chars` (1 MiB) fits even escaped as \\uXXXX (6 MiB)."""

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class TooLong:
    """A line over LINE_LIMIT: its first bytes (for its id) and its length; the rest was dropped."""

    head: bytes
    length: int


def check(line: bytes | TooLong) -> tuple[str | None, bytes | None, str | None]:
    """(the line for the SDK, or None; else the answer to write, or None; else why it was dropped, or None for a blank line)."""
    if isinstance(line, TooLong):
        return _refuse(line.head.decode("utf-8", "replace"), None, INVALID_REQUEST,
                       f"message too long: {line.length} bytes, at most {LINE_LIMIT} ({LINE_LIMIT // (1024 * 1024)} MiB) a line")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return _refuse(line.decode("utf-8", "replace"), None, PARSE_ERROR,
                       f"parse error: not UTF-8 (byte 0x{line[error.start]:02x} at offset {error.start})")
    if not text.strip():
        return None, None, None  # a blank line between messages: nothing to answer or report
    try:
        sdk.validate_message(line)
    except Exception as error:  # noqa: BLE001 - pydantic's ValidationError, or worse: answered, never raised
        reason = _first_line(error)
    else:
        if not _MAYBE_SURROGATE.search(line):
            return text, None, None
        reason = "lone surrogate"  # a valid pair passed the SDK's check; look at the strings themselves
    try:
        message = json.loads(text)
    except RecursionError:
        return _refuse(text, None, PARSE_ERROR, "parse error: nested too deeply")
    except ValueError as error:
        return _refuse(text, None, PARSE_ERROR, f"parse error: {_first_line(error)}")
    surrogate = _lone_surrogate(message)
    if surrogate is not None:
        where, char = surrogate
        why = f"{where} holds a lone surrogate (\\u{ord(char):04x}), which is not text: send UTF-8"
        if isinstance(message, dict) and message.get("method") == "tools/call" and isinstance(message.get("params"), dict):
            name = message["params"].get("name")
            return _refuse(text, message, None, f"{name if isinstance(name, str) else 'tools/call'} failed: {why}", tool_error=True)
        return _refuse(text, message, INVALID_PARAMS, f"invalid params: {why}")
    if reason == "lone surrogate":
        return text, None, None
    if (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str)
            and "result" not in message and "error" not in message):
        return _refuse(text, message, INVALID_PARAMS, f"invalid params: {reason}")
    return _refuse(text, message, INVALID_REQUEST, f"invalid request: {reason}")


def _refuse(text: str, message, code: int | None, why: str, *, tool_error: bool = False) -> tuple[None, bytes | None, str]:
    why = one_line(why)
    keys = message if isinstance(message, dict) else top_level(text)
    request_id = _id_of(keys)
    if request_id is None or "result" in keys or "error" in keys:
        return None, None, why  # nothing to answer: no id, or a response of the client's (never answered)
    if tool_error:
        body = {"result": {"content": [{"type": "text", "text": why}], "isError": True}}
    else:
        body = {"error": {"code": code, "message": why}}
    return None, (json.dumps({"jsonrpc": "2.0", "id": request_id, **body}) + "\n").encode(), why


def _id_of(message: dict):
    found = message.get("id")
    return found if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)) else None


def find_id(text: str):
    """The top-level `"id"` of a JSON object that may be cut short or broken after it; None if there is none to trust."""
    return _id_of(top_level(text))


def top_level(text: str) -> dict:
    """The top-level keys of a JSON object that may be cut short or broken, up to where it breaks (a key whose value broke: None)."""
    decoder = json.JSONDecoder()
    found: dict = {}
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return found
    at += 1
    try:
        while True:
            at = _skip(text, at)
            key, at = decoder.raw_decode(text, at)
            at = _skip(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                return found
            found[key] = None
            found[key], at = decoder.raw_decode(text, _skip(text, at + 1))
            at = _skip(text, at)
            if not text.startswith(",", at):
                return found
            at += 1
    except (ValueError, RecursionError):
        return found


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _lone_surrogate(message) -> tuple[str, str] | None:
    """(where, the character) of the first string holding a lone surrogate; walked without recursion (any depth)."""
    stack = [("", message)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            found = re.search("[\ud800-\udfff]", value)
            if found:
                return where or "the message", found.group()
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((key if isinstance(key, str) else where, item))
                if isinstance(key, str) and re.search("[\ud800-\udfff]", key):
                    return "a key", re.search("[\ud800-\udfff]", key).group()
        elif isinstance(value, list):
            stack.extend((where, item) for item in value)
    return None


def _first_line(error: BaseException) -> str:
    text = str(error)
    if hasattr(error, "errors"):  # pydantic: the first problem, where it is
        try:
            first = error.errors()[0]
            location = ".".join(str(part) for part in first.get("loc", ()))
            text = f"{first.get('msg', text)}{f' at {location}' if location else ''}"
        except Exception:  # noqa: BLE001
            pass
    return (text.splitlines() or [type(error).__name__])[0][:300]
