"""Field checks of the protocol (docs/protocol.md), shared by both of its carriers.

The comm and the widget carry the same `input` and `resize` messages; a
malformed one must get the same clear answer whichever way it came.
"""

from __future__ import annotations

MAX_INPUT_BYTES = 1024 * 1024


class BadRequest(ValueError):
    name = "BadRequest"


def optional_int(data: dict, field: str) -> int | None:
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{field} must be an integer or null")
    return value


def required_int(data: dict, field: str) -> int:
    value = optional_int(data, field)
    if value is None:
        raise BadRequest(f"{field} is required")
    return value


def input_text(data: dict) -> str:
    """The keystrokes of an `input` message."""
    text = data.get("data")
    if not isinstance(text, str):
        raise BadRequest("data must be a string")
    if len(text) > MAX_INPUT_BYTES:
        raise BadRequest(f"input over {MAX_INPUT_BYTES} bytes")
    return text


def terminal_size(data: dict) -> tuple[int, int]:
    """The rows and columns of a `resize` message (the session checks the range)."""
    rows, cols = data.get("rows"), data.get("cols")
    if any(isinstance(value, bool) or not isinstance(value, int) for value in (rows, cols)):
        raise BadRequest("rows and cols must be integers")
    return rows, cols
