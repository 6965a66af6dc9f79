"""The manager's sessions that a keeper holds: what it takes back, lets go of, acknowledges and takes over.

A kept session (`--keep`) runs under the keeper (process/keeper.py), which
holds its terminal while no kernel does. The manager opens, reads and closes
it like any other session; what only a kept session has is here: taking the
keeper's sessions back after a restart (their ids, names, journals and the
history a view replays), letting go of them when this process ends without
ending them, telling the keeper how much output is safely in the journal (it
keeps the rest to send the next kernel), the exits the keeper reaps, and the
keeper's loss, after which this kernel reads and ends them itself.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable

from .output.utf8 import newest
from .process.keeper import Keeper, KeeperError
from .session import Kept, PtySession

log = logging.getLogger(__name__)

KEPT_ACK_S = 0.2
"""How often a kept session's keeper is told what the journal holds (it keeps the rest until then)."""
RESTART_MARKER = "(kernel restarted)"


class KeptSessions:
    def __init__(self, manager, keeper: Keeper):
        """`manager`: the UnifiedExecSessionManager this part serves (its table, journals and guardian)."""
        self._manager = manager
        self.keeper = keeper
        self._acks: dict[int, int] = {}  # kept session id -> raw offset last acknowledged
        self._held: dict[int, PtySession] = {}  # kept sessions until closed (a closing one still hears its exit)
        self._early_exits: dict[int, int | None] = {}  # told before the session was registered (a fast exit)
        self._ack_timer: asyncio.TimerHandle | None = None
        keeper.on_exit(self._exited)
        keeper.on_lost(self._lost)
        keeper.guarded_by(self._guardian_pipe, self._guardian_news)

    def opened(self, session: PtySession) -> None:
        """A kept session the keeper started is in the manager's table."""
        self._hold(session)
        self._acknowledge_soon()

    def removed(self, session_id: int) -> Callable[[object], None]:
        """A kept session left the table; what to call once it is closed (the keeper forgets it then, not before)."""
        self._acks.pop(session_id, None)

        def forget(_closed) -> None:
            self._held.pop(session_id, None)
            self.keeper.forget(session_id)

        return forget

    def end(self) -> None:
        """Every session is closed (a real shutdown): the keeper ends what it holds and goes."""
        self._held.clear()
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        self.keeper.end_threadsafe()
        self.keeper.close()

    def let_go(self) -> None:
        """Stop holding kept sessions without ending them, as a kernel that exits does (the keeper holds them)."""
        for session_id, managed in list(self._manager._sessions.items()):
            if managed.session.kept:
                self._manager._take_out(session_id)
                self._held.pop(session_id, None)
                managed.session.terminal.release()
        self.keeper.close()

    async def take_back(self) -> list[int]:
        """The sessions the keeper held for this kernel id, back in the manager's table: their ids."""
        manager = self._manager
        taken = []
        try:
            handed_back = await self.keeper.take_back()
        except KeeperError as error:
            manager.notes.append(str(error))
            raise
        for held in handed_back:
            meta = held.meta
            session_id = int(meta["id"])
            kept = Kept(held.spawn.pid, held.spawn.master_fd, held.spawn.output_fd, restarts=int(meta.get("restarts", 1)),
                        started=float(meta.get("started") or 0), offset=held.clean_offset, raw_offset=int(meta.get("raw", 0)),
                        state=held.state)
            session = PtySession(session_id, meta.get("command") or [], {}, buffer_bytes=manager.output_max_bytes,
                                 scrollback_bytes=manager.scrollback_bytes, prompt_nonce=meta.get("nonce"), name=meta.get("name"),
                                 command=meta.get("command"), kept=kept)
            self._adopt_journal(session)
            manager._add(session)
            if held.exited:
                session.report_exit(held.exit_code)
            self._hold(session)
            taken.append(session_id)
        if taken:
            manager._next_id = itertools.count(max(taken) + 1)
            self._acknowledge_soon()
            manager._changed()
        return taken

    def _adopt_journal(self, session: PtySession) -> None:
        journals, directory = self._manager.journals, self.keeper.journal_dir
        if journals is None or directory is None:
            return
        path = os.path.join(directory, f"session-{session.session_id}.cast")
        try:
            entry = journals.adopt(session, path, marker=RESTART_MARKER)
        except (OSError, ValueError) as error:
            log.warning("uexec: the journal of kept session %s could not be taken back (%s); a new one starts", session.session_id, error)
            journals.record(session, directory)
            return
        end = entry.file.resumed.output_end
        session.resume_after(end, _history(path, end, self._manager.scrollback_bytes))

    def _lost(self, why: str) -> None:
        """Its programs have no keeper now: this kernel reads their terminals (it holds the masters),
        its guardian ends them with it, however it ends, like any session; each says so."""
        manager = self._manager
        note = f"no longer kept: its keeper {why}"
        kept, self._held = list(self._held.values()), {}
        if kept and manager.journals is not None and self.keeper.journal_dir is not None:
            manager.journals.own_directory(self.keeper.journal_dir)  # their journals are there: ours to remove now
            if manager._guardian is not None:
                manager._guardian.remove_with_kernel(self.keeper.journal_dir)
        for session in kept:
            if session.terminal.released:
                continue
            session.take_over(note)
            if manager.journals is not None:
                manager.journals.mark(session, f"(the keeper {why}; output it had not relayed is lost; no longer kept)")
            managed = manager._sessions.get(session.session_id)
            if managed is not None:
                managed.notice += f"Note: session {session.name or session.session_id} is {note}.\n"
            self._acks.pop(session.session_id, None)
            manager._guard(session.pid)
            log.warning("uexec: session %s is %s (it ends with this kernel now)", session.name or session.session_id, note)
        if kept:
            manager._changed()

    def _guardian_pipe(self) -> int | None:
        """A copy of the guardian's pipe for the keeper, which tells the guardian of kept sessions itself."""
        return self._manager._the_guardian().share() if self._manager.guardian else None

    def _guardian_news(self) -> bytes:
        """All the guardian was told, for the keeper: it ends the unkept sessions if the kernel and guardian die at once."""
        return self._manager._the_guardian().news() if self._manager.guardian else b""

    def _hold(self, session: PtySession) -> None:
        self._held[session.session_id] = session
        if session.session_id in self._early_exits:
            session.report_exit(self._early_exits.pop(session.session_id))

    def _exited(self, session_id: int, exit_code: int | None) -> None:
        session = self._held.get(session_id)
        if session is not None:
            session.report_exit(exit_code)
        else:
            # The keeper reaped it before its spawn's answer or a take-back was handled here.
            self._early_exits[session_id] = exit_code

    def _acknowledge_soon(self) -> None:
        if self._ack_timer is None:
            self._ack_timer = asyncio.get_running_loop().call_later(KEPT_ACK_S, self._acknowledge)

    def _acknowledge(self) -> None:
        """Tell the keeper what of each kept session's output is safely in its journal (it keeps the rest)."""
        self._ack_timer = None
        manager = self._manager
        kept = [session for session_id, session in self._held.items() if session_id in manager._sessions and not session.terminal.released]
        if not kept or not self.keeper.connected:
            return
        points = {}
        for session in kept:
            point = session.ack_point()
            if point is not None and point[0] != self._acks.get(session.session_id):
                points[session.session_id] = point
        if points and manager.journals is None:
            self._send_acks(points)
        elif points:
            loop = asyncio.get_running_loop()
            barrier = manager.journals.flushed()
            barrier.add_done_callback(lambda _done: _call_soon_threadsafe(loop, self._send_acks, points))
        self._acknowledge_soon()

    def _send_acks(self, points: dict[int, tuple[int, int, dict]]) -> None:
        for session_id, (raw, clean, state) in points.items():
            if session_id in self._manager._sessions:
                self._acks[session_id] = raw
                self.keeper.ack(session_id, raw, clean, state)


def _history(path: str, end: int, size: int) -> bytes:
    """The last `size` bytes of output before `end` in a journal (a few reads through its index)."""
    from .journal.reader import open_journal  # with the first session taken back, not with every kernel

    try:
        with open_journal(path) as journal:
            return newest(journal.read(max(journal.start, end - size), end), size)
    except (OSError, ValueError) as error:
        log.warning("uexec: cannot read the history of %s (%s)", path, error)
        return b""


def _call_soon_threadsafe(loop: asyncio.AbstractEventLoop, callback, *args) -> None:
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        pass  # the loop closed meanwhile: the next kernel is sent the output again
