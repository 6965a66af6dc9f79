"""Middle truncation of tool output, byte for byte as codex's truncate.rs of the seed's time.

A model (or a person) learns most from the start and the end of a long output,
so the middle gives way to a marker saying how much went. The cut prefers line
ends, works on UTF-8 bytes, and never splits a character. Quirks kept on
purpose: the marker's own `\\n` is not in the budget (a result can be
`max_bytes + 1` bytes long), and a half-budget that falls inside a character
skips the newline search (Rust's `str::get` refuses such a slice).

The algorithm only ever looks at the first and the last `max_bytes` bytes, so
`truncate_parts` can run on a head, a tail and a length: a request collecting
a flood keeps just those (see `head_tail.py`) and gets the same answer as
truncating everything.
"""

from __future__ import annotations

from .utf8 import is_continuation

APPROX_BYTES_PER_TOKEN = 4
_FIXED_POINT_ROUNDS = 4


def approx_token_count(byte_count: int) -> int:
    return -(-byte_count // APPROX_BYTES_PER_TOKEN)


def truncate_middle(text: str, max_bytes: int) -> tuple[str, int | None]:
    """Return the text (cut in the middle if over `max_bytes`) and, if cut, its token count."""
    data = text.encode("utf-8", "surrogatepass")
    return truncate_parts(data, data, len(data), max_bytes)


def truncate_parts(head: bytes, tail: bytes, total: int, max_bytes: int) -> tuple[str, int | None]:
    """`truncate_middle` of a text known by its first and last bytes and its UTF-8 length.

    `head` holds the text's first bytes and `tail` its last ones, each at least
    `max_bytes` long unless it is the whole text.
    """
    text = _Utf8(head, tail, total)
    if total <= max_bytes:
        return text.slice(0, total), None
    est_tokens = approx_token_count(total)
    marker_only = f"…{est_tokens} tokens truncated…"
    if max_bytes == 0:
        return marker_only, est_tokens

    guess = est_tokens
    for _ in range(_FIXED_POINT_ROUNDS):
        cut = _cut(text, max_bytes, guess)
        if cut is None:
            return marker_only, est_tokens
        prefix_end, suffix_start = cut
        tokens = approx_token_count(total - prefix_end - (total - suffix_start))
        if tokens == guess:
            break
        guess = tokens
    else:
        cut = _cut(text, max_bytes, guess)
        if cut is None:
            return marker_only, est_tokens
        prefix_end, suffix_start = cut
    marker = f"…{guess} tokens truncated…\n"
    return text.slice(0, prefix_end) + marker + text.slice(suffix_start, total), est_tokens


def _cut(text: _Utf8, max_bytes: int, tokens: int) -> tuple[int, int] | None:
    marker_len = len(f"…{tokens} tokens truncated…".encode())
    keep_budget = max(max_bytes - marker_len, 0)
    if keep_budget == 0:
        return None
    left_budget = keep_budget // 2
    right_budget = keep_budget - left_budget
    prefix_end = _prefix_end(text, left_budget)
    suffix_start = max(_suffix_start(text, right_budget), prefix_end)
    return prefix_end, suffix_start


def _prefix_end(text: _Utf8, left_budget: int) -> int:
    if text.is_char_boundary(left_budget):
        newline = text.head.rfind(b"\n", 0, left_budget)
        if newline >= 0:
            return newline + 1
    end = left_budget
    while end > 0 and not text.is_char_boundary(end):
        end -= 1
    return end


def _suffix_start(text: _Utf8, right_budget: int) -> int:
    start = max(text.total - right_budget, 0)
    if text.is_char_boundary(start):
        newline = text.tail.find(b"\n", start - text.tail_offset)
        if newline >= 0:
            return text.tail_offset + newline + 1
    while start < text.total and not text.is_char_boundary(start):
        start += 1
    return start


class _Utf8:
    """A UTF-8 text of which only the head and the tail bytes are at hand."""

    __slots__ = ("head", "tail", "total", "tail_offset")

    def __init__(self, head: bytes, tail: bytes, total: int):
        self.head = head
        self.tail = tail
        self.total = total
        self.tail_offset = total - len(tail)

    def byte_at(self, index: int) -> int:
        if index < len(self.head):
            return self.head[index]
        return self.tail[index - self.tail_offset]

    def is_char_boundary(self, index: int) -> bool:
        return index >= self.total or index == 0 or not is_continuation(self.byte_at(index))

    def slice(self, start: int, end: int) -> str:
        if end <= len(self.head):
            piece = self.head[start:end]
        else:
            piece = self.tail[start - self.tail_offset : end - self.tail_offset]
        return piece.decode("utf-8", "surrogatepass")
