"""A slice of a journal's output: head, tail, lines, bytes, a command's output, grep with context.

One function for every face (`%uexec_output`, the comm's `read`), so the
same question gets the same answer and the same one-line refusal. A slice
is first narrowed to a command's output (`command`), then to lines or bytes
within it (`head`, `tail`, `lines`, `byte_range`), then filtered (`grep`).
Line numbers count from the start of what was narrowed to, so
`--command -1 --lines 3:5` means lines 3 to 5 of the last command's output.
Everything but grep finds its bytes through the index (no scan).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from .index import Command
from .reader import Journal
from ..errors import quoted

MAX_PAGE_BYTES = 1024 * 1024
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])|\r")


class PageError(ValueError):
    """The request asks for something the journal does not have (one line)."""

    name = "BadRequest"


@dataclass(frozen=True)
class PageRequest:
    head: int | None = None
    tail: int | None = None
    lines: tuple[int, int | None] | None = None  # 1-based, inclusive; None: to the end
    byte_range: tuple[int, int | None] | None = None  # output offsets, [start, end)
    grep: str | None = None
    context: int = 0
    command: int | None = None  # 1-based; negative from the last
    max_bytes: int = MAX_PAGE_BYTES


@dataclass
class Page:
    text: str  # terminal text (escapes kept): the face renders it
    start: int  # output offsets of what it covers
    end: int
    first_line: int | None  # the first line shown (in the numbering the request used)
    last_line: int | None
    total_lines: int  # in what was narrowed to (the whole output, or the command's)
    command: Command | None = None
    notes: list[str] = field(default_factory=list)  # one line each: cut to the page's size, output not kept
    # --grep: each shown line as (`N:`, `N-` or `--`; its terminal text), what `text` joins.
    # A face that renders must render each line on its own: a line's `\r` or erase
    # (a progress bar's `\x1b[2K\r`) would otherwise wipe the number before it.
    grep_lines: list[tuple[str, str]] | None = None


def parse_range(text: str, what: str) -> tuple[int, int | None]:
    """`A:B`, `A:` or `A` (one); raises PageError."""
    first, colon, last = text.partition(":")
    try:
        start = int(first)
        end = (int(last) if last else None) if colon else start
    except ValueError:
        raise PageError(f"{what} takes A:B (whole numbers), not {quoted(text)}") from None
    return start, end


def page(journal: Journal, request: PageRequest) -> Page:
    chosen = [name for name in ("head", "tail", "lines", "byte_range") if getattr(request, name) is not None]
    if len(chosen) > 1:
        raise PageError("give at most one of --head, --tail, --lines and --bytes")
    for name in ("head", "tail"):
        value = getattr(request, name)
        if value is not None and value < 0:
            raise PageError(f"--{name} takes a number of lines, 0 or more, not {value}")
    if request.context < 0:
        raise PageError(f"context takes a number of lines, 0 or more, not {request.context}")
    pattern = _compile(request.grep)
    command = _command(journal, request.command)
    low, high = (journal.start, journal.end) if command is None else (command.start, command.end if command.end is not None else journal.end)
    base = journal.newlines_before(low)  # the line before the narrowed output's first
    total = _lines_between(journal, low, high, base)
    if request.byte_range is not None:
        start, end = request.byte_range
        if start < 0 or (end is not None and end < start):
            raise PageError(f"--bytes takes START:END with 0 <= START <= END, not {start}:{'' if end is None else end}")
        if start >= high and high > low:
            raise PageError(f"bytes {start}:{'' if end is None else end} are past the end: the output ends at byte {high}")
        end = high if end is None else end
        start, end = max(start, low), min(end, high)
        first = last = None
    else:
        first, last = _line_span(request, total)
        start = _line_offset(journal, base, first, low, high)
        end = _line_offset(journal, base, last + 1, low, high) if last < total else high
    result = Page("", start, end, first, last, total, command)
    if pattern is not None:
        result.grep_lines = _grep(_lines(journal.chunks(start, end)), pattern, request.context, first or 1, request.max_bytes, result.notes)
        result.text = "".join(prefix + line + "\n" for prefix, line in result.grep_lines)
    else:
        data = journal.read(start, end, request.max_bytes + 1)
        if len(data) > request.max_bytes:
            cut = data.rfind(b"\n", 0, request.max_bytes) + 1 or request.max_bytes
            shown_lines = data[:cut].count(b"\n")
            data = data[:cut]
            result.end = start + cut
            where = f"lines {first}-{first + shown_lines - 1}" if first is not None else f"bytes {start}:{start + cut}"
            result.notes.append(f"showing {where} only ({request.max_bytes:,} bytes at most): ask for a narrower range")
            if first is not None:
                result.last_line = first + shown_lines - 1
        result.text = data.decode("utf-8", "replace")
    result.notes += [drop.describe() for drop in journal.drops if drop.offset < end and drop.offset + drop.size > start]
    return result


def _compile(pattern: str | None) -> re.Pattern | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as error:
        raise PageError(f"--grep is not a valid regular expression: {error}") from None


def _command(journal: Journal, number: int | None) -> Command | None:
    if number is None:
        return None
    commands = journal.chapters()
    if not commands:
        raise PageError("this session has no commands on record (only an integrated bash or zsh reports them)")
    if number == 0 or not -len(commands) <= number <= len(commands):
        raise PageError(f"no command {number}: the session ran {len(commands)} (1 to {len(commands)}, or -1 for the last)")
    return commands[number - 1 if number > 0 else number]


def _lines_between(journal: Journal, low: int, high: int, base: int) -> int:
    if high <= low:
        return 0
    newlines = journal.newlines_before(high) - base
    return newlines + (0 if journal.read(high - 1, high) == b"\n" else 1)


def _line_span(request: PageRequest, total: int) -> tuple[int, int]:
    if request.head is not None:
        return 1, min(request.head, total)
    if request.tail is not None:
        return max(1, total - request.tail + 1), total
    if request.lines is None:
        return 1, total
    first, last = request.lines
    typed = f"{first}:{'' if last is None else last}"  # refusals quote what the user gave
    if first < 1 or (last is not None and last < first):
        raise PageError(f"--lines takes A:B with 1 <= A <= B, not {typed}")
    if first > total:
        raise PageError(f"lines {typed} are past the end: the output has {total} line{'s' if total != 1 else ''}")
    return first, total if last is None else min(last, total)


def _line_offset(journal: Journal, base: int, line: int, low: int, high: int) -> int:
    """Where `line` (1-based, counted from `low`) starts, within [low, high]."""
    if line <= 1:
        return low
    offset = journal.line_start(base + line)
    return high if offset is None else min(max(offset, low), high)


def _lines(chunks) -> Iterator[str]:
    """The text of a range a line at a time (without its `\\n`), holding one event and one line."""
    carry = b""
    for chunk in chunks:
        pieces = (carry + chunk).split(b"\n")
        carry = pieces.pop()
        for piece in pieces:
            yield piece.decode("utf-8", "replace")
    if carry:
        yield carry.decode("utf-8", "replace")


def _grep(lines: Iterator[str], pattern: re.Pattern, context: int, first: int, max_bytes: int, notes: list[str]) -> list[tuple[str, str]]:
    """Matching lines as `grep -n` shows them: `N:` a match, `N-` its context, `--` between groups.

    One pass, holding the `context` lines before the current one and nothing else."""
    shown: list[tuple[str, str]] = []
    size = 0
    before: deque[tuple[int, str]] = deque(maxlen=context)
    after = 0  # context lines still to show after the last match
    last_shown = -1
    matches = 0
    for number, line in enumerate(lines, start=first):
        line = line.rstrip("\r")
        matched = pattern.search(_ESCAPES.sub("", line)) is not None
        if matched:
            matches += 1
            numbered = [(n, (f"{n}-", text)) for n, text in before if n > last_shown] + [(number, (f"{number}:", line))]
            if context and shown and numbered[0][0] > last_shown + 1:
                shown.append(("--", ""))  # as grep separates groups that are not adjacent
            group = [numbered_line for _, numbered_line in numbered]
            before.clear()
            after = context
        elif after:
            group, after = [(f"{number}-", line)], after - 1
        else:
            if context:
                before.append((number, line))
            continue
        for prefix, text in group:
            size += len(prefix) + len(text) + 1
            if size > max_bytes:
                notes.append(f"more matches than {max_bytes:,} bytes can show: narrow --grep or the range")
                return shown
            shown.append((prefix, text))
        last_shown = number
    if not matches:
        notes.append(f"no line matches {quoted(pattern.pattern)}")
    return shown
