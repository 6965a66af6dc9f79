"""Find OSC 133 "semantic prompt" markers in a session's output and take them out.

An integrated shell (core/shell_integration.py) prints `ESC ] 133 ; <kind> ... BEL`
around its prompts and commands. They must never reach a person, and other
programs print them too (a nested shell that a terminal integrated, a `cat` of a
recorded session, a test printing a fake one), so every OSC 133 sequence is
removed and reported, and only those carrying this session's nonce
(`uexec=<nonce>`) count as the shell's own.

The scanner runs on every chunk the session reads (bytes of whole UTF-8
characters; markers are ASCII, so byte positions are exact; ~80 MB/s when a
program floods), so output without `ESC ] 133 ;` costs a search for ESC (and,
if there is one, for ']' or the whole introducer). A
marker split across chunks is completed on the next one: only a trailing
incomplete `ESC ] 133 ...` is held back, never other text, and not beyond
MAX_SEQUENCE characters nor past a character a marker cannot contain (a control
character such as a newline): then it was not a marker and goes out as text.
Other OSC sequences (window titles) pass through untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OSC_133 = b"\x1b]133;"
# Ours are short; fish 4 puts the URL-encoded command line in its C. This bounds what
# a stray `ESC ] 133 ;` can hold back (only until a control character, usually a newline).
MAX_SEQUENCE = 4096
# Everything a marker's parameters can contain: no control character (BEL and ESC
# end them; any other one means the sequence was not a marker).
_PARAMETERS = re.compile(rb"[^\x00-\x1f\x7f]*")
_STATUS = re.compile(r"-?[0-9]{1,10}")


@dataclass(frozen=True)
class PromptEvent:
    """One OSC 133 marker, removed from the text.

    kind: "A" prompt start, "B" prompt end (input starts), "C" command output
      starts, "D" command finished; another letter if a foreign shell sent one.
    index: where the marker was, as a byte index into the clean output returned by
      the `feed` call that reported it.
    ours: it carried this session's nonce (a marker without it is never ours).
    exit_status: D only: the command's exit status, None when the marker had none.
    typeahead: A only: a typed line was already waiting, so the shell runs it at
      once instead of waiting for input.
    """

    kind: str
    index: int
    ours: bool
    exit_status: int | None = None
    typeahead: bool = False


class SemanticPromptScanner:
    """Incremental: feed it a session's decoded text in order, chunk by chunk."""

    def __init__(self, nonce: str | None, max_sequence: int = MAX_SEQUENCE):
        self.nonce = nonce
        self.max_sequence = max_sequence
        self._held = b""

    @property
    def held(self) -> bytes:
        """The incomplete marker held back until the next chunk completes it."""
        return self._held

    def feed(self, text: bytes) -> tuple[bytes, list[PromptEvent]]:
        """The output without OSC 133 markers, and the markers found, in order."""
        if self._held:
            text = self._held + text
            self._held = b""
        # A search for one byte runs at memory speed (~20 GB/s), one for
        # OSC_133 at ~2 GB/s: most output has no ESC, and colour has no ']'.
        if b"\x1b" not in text:
            return text, []
        if b"]" not in text or OSC_133 not in text:
            # the only thing to watch: a chunk ending inside "ESC ] 1 3 3 ;"
            tail = text.rfind(b"\x1b", max(0, len(text) - len(OSC_133) + 1))
            if tail != -1 and OSC_133.startswith(text[tail:]):
                self._held = text[tail:]
                return text[:tail], []
            return text, []
        return self._scan(text)

    def flush(self) -> bytes:
        """Give up on a held-back incomplete marker (end of output): it is text after all."""
        held, self._held = self._held, b""
        return held

    def _scan(self, text: bytes) -> tuple[bytes, list[PromptEvent]]:
        pieces: list[bytes] = []
        events: list[PromptEvent] = []
        clean_length = 0
        copied = 0  # text[:copied] is already in pieces or dropped
        search = 0
        while True:
            start = text.find(OSC_133, search)
            if start == -1:
                break
            body = start + len(OSC_133)
            end = _PARAMETERS.match(text, body, body + self.max_sequence + 1).end()
            if end - body > self.max_sequence:
                search = start + 1  # too long for a marker
                continue
            if end == len(text) or (text[end] == 0x1B and end + 1 == len(text)):
                # the chunk ends inside it: hold it back for the next one
                piece = text[copied:start]
                pieces.append(piece)
                clean_length += len(piece)
                self._held = text[start:]
                copied = len(text)
                break
            if text[end] == 0x07:
                after = end + 1
            elif text[end] == 0x1B and text[end + 1] == 0x5C:  # ESC \ (ST)
                after = end + 2
            else:
                search = start + 1  # a control character inside: not a marker
                continue
            piece = text[copied:start]
            pieces.append(piece)
            clean_length += len(piece)
            events.append(self._event(text[body:end].decode("utf-8", "replace"), clean_length))
            copied = search = after
        if copied == 0:
            clean = text
        else:
            pieces.append(text[copied:])
            clean = b"".join(pieces)
        if not self._held:
            # the part after the last marker may end inside the next one
            tail = clean.rfind(b"\x1b", max(0, len(clean) - len(OSC_133) + 1))
            if tail != -1 and OSC_133.startswith(clean[tail:]) and tail >= clean_length:
                self._held = clean[tail:]
                clean = clean[:tail]
        return clean, events

    def _event(self, parameters: str, index: int) -> PromptEvent:
        kind, _, rest = parameters.partition(";")
        exit_status = None
        ours = typeahead = False
        for field in rest.split(";") if rest else ():
            key, equals, value = field.partition("=")
            if not equals:
                if kind == "D" and exit_status is None and _STATUS.fullmatch(field):
                    exit_status = int(field)
            elif key == "uexec":
                ours = self.nonce is not None and value == self.nonce
            elif key == "typeahead":
                typeahead = value == "1"
        return PromptEvent(kind, index, ours, exit_status, typeahead)
