"""A recording made ready to play: its output and resizes in order, and a chapter per command.

The player (the live face's `ReplayWidget`, drawn by xterm.js) needs little:
what to write when, where each chapter starts, how long it all takes. It
seeks by replaying output up to a point, so a chapter is an index into the
events, not a time: output written in the same microsecond as a command's
start would otherwise land on either side of it. Long pauses (a person
thinking between commands) are shortened to `idle_limit`, as asciinema's
player does with a recording's `idle_time_limit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .index import OFFSET
from .format import DEFAULT_IDLE_LIMIT_S
from .reader import Journal

MAX_OUTPUT_BYTES = 64 * 1024 * 1024
"""A replay is sent to the page in one piece; past this, `asciinema play` is the better tool."""


class TooLargeToPlay(ValueError):
    name = "TooLarge"


@dataclass
class Chapter:
    index: int  # how many events come before it
    time: float  # seconds into the (shortened) playback
    label: str  # the command, as the shell ran it
    exit_code: int | None


@dataclass
class Playback:
    cols: int
    rows: int
    # [time, "o", text] output and [time, "r", "COLSxROWS"] resizes, in order
    events: list[list] = field(default_factory=list)
    chapters: list[Chapter] = field(default_factory=list)
    duration: float = 0.0
    output: str = ""  # all of it, for the last screen


def playback(journal: Journal, *, idle_limit: float | None = DEFAULT_IDLE_LIMIT_S) -> Playback:
    """Raises TooLargeToPlay past MAX_OUTPUT_BYTES, JournalError for a file that is not asciicast."""
    limit = journal.header.get("idle_time_limit", idle_limit) if idle_limit is not None else None
    cols, rows = journal.size
    played = Playback(cols=cols, rows=rows)
    commands = journal.chapters()
    next_command = 0
    outputs = 0  # output events so far: the index has each one's exact offset, across drops
    offset = journal.start
    pieces: list[str] = []
    size = 0
    last_time = shown = 0.0
    for event in journal.events():
        gap = event.time - last_time
        last_time = event.time
        before = shown
        shown += min(gap, limit) if limit is not None else gap
        if event.code == "r":
            played.events.append([shown, "r", event.data])
        elif event.code == "o":
            if outputs < len(journal.records):
                offset = journal.records[outputs][OFFSET]
            outputs += 1
            encoded = event.data.encode("utf-8", "surrogatepass")
            # A command's output may start inside this event: split it there.
            while next_command < len(commands) and commands[next_command].start < offset + len(encoded):
                command = commands[next_command]
                cut = max(command.start - offset, 0)
                if cut:
                    head = encoded[:cut].decode("utf-8", "replace")
                    played.events.append([shown, "o", head])
                    pieces.append(head)
                    encoded, offset = encoded[cut:], offset + cut
                # At the command's own time, within the pause before this event as shortened.
                at = max(before, shown - max(event.time - command.time, 0.0))
                played.chapters.append(Chapter(len(played.events), at, command.text, command.exit_code))
                next_command += 1
            size += len(encoded)
            if size > MAX_OUTPUT_BYTES:
                raise TooLargeToPlay(
                    f"{journal.path} holds more than {MAX_OUTPUT_BYTES // 2**20} MiB of output, too much to play in a notebook: "
                    "use `asciinema play` on its export (%uexec_record)"
                )
            text = encoded.decode("utf-8", "replace")
            played.events.append([shown, "o", text])
            pieces.append(text)
            offset += len(encoded)
    # Commands whose output never came (the recording ended first) still get their chapter.
    for command in commands[next_command:]:
        played.chapters.append(Chapter(len(played.events), shown, command.text, command.exit_code))
    played.duration = shown
    played.output = "".join(pieces)
    return played
