"""`ReplayWidget`: a recording played back in the notebook, by the live view's own xterm.js.

A session's journal or any asciicast file (what asciinema records), with
play/pause, speed, seek and a chapter per command the shell ran. The
recording itself goes to the page on request, as one buffer (behind a
gateway, which relays no buffers, as the answer's text), and is never part
of the widget's state: a notebook saved with its replays stays small, and
shows each replay's last screen where no kernel answers.
"""

from __future__ import annotations

import json

from traitlets import Float, Int, List, Unicode

from ..core.journal.playback import Playback
from ..screen.html import screen_html
from ..screen.render import render_terminal_text
from ..jupyter.remote import behind_gateway
from .loaded import LoadedWidget
from ..core.errors import quoted


class ReplayWidget(LoadedWidget):
    title = Unicode(help="what was recorded").tag(sync=True)
    cols = Int(80).tag(sync=True)
    rows = Int(24).tag(sync=True)
    duration = Float(help="seconds, long pauses shortened").tag(sync=True)
    chapters = List(help="[{index, time, label, exit_code}]: one per command").tag(sync=True)

    def __init__(self, played: Playback, *, title: str = "", **kwargs):
        chapters = [
            {"index": c.index, "time": round(c.time, 3), "label": c.label, "exit_code": c.exit_code} for c in played.chapters
        ]
        super().__init__(
            view="player", title=title, cols=played.cols, rows=played.rows, duration=played.duration, chapters=chapters, **kwargs
        )
        self._played = played

    def on_custom(self, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("type") == "recording":
            events = json.dumps(self._played.events, separators=(",", ":"), ensure_ascii=False)
            answer = {"type": "recording", "events": len(self._played.events)}
            if behind_gateway():
                self.send({**answer, "text": events})
            else:
                self.send(answer, buffers=[events.encode()])
        else:
            kind = content.get("type") if isinstance(content, dict) else type(content).__name__
            self.send({"type": "error", "error": "BadRequest", "message": f"a replay answers `recording` only, not {quoted(kind)}"})

    def _repr_mimebundle_(self, **kwargs):
        bundle, metadata = super()._repr_mimebundle_(**kwargs)
        played = self._played
        caption = f"replay: {self.title}, {len(played.chapters)} commands, {played.duration:.1f} s"
        self.with_screen(bundle, screen_html(played.output, played.rows, played.cols), caption)
        bundle["text/plain"] = f"{render_terminal_text(played.output).rstrip()}\n[{caption}]".lstrip("\n")
        return bundle, metadata
