"""What a session hands its journal: resizes, command text from the echo, input only when asked."""

import asyncio
import os
import shutil
import tempfile
import time

import psutil
import pytest

from unified_exec_kernel.core.journal import JournalStore
from unified_exec_kernel.core.manager import UnifiedExecSessionManager
from unified_exec_kernel.core.process.keeper import Keeper

from ..stubborn import async_wait_until
from .helpers import journaled, written


async def _keys(session, keys) -> None:
    """Each key (or string) once the terminal echoed the last, as a person types: the line editor redraws per key."""
    for key in keys:
        before = session.offset
        session.write(key)
        deadline = time.monotonic() + 10
        while session.offset == before:
            assert time.monotonic() < deadline, f"no echo of {key!r}"
            await asyncio.sleep(0.002)


@pytest.mark.parametrize("argv", [["bash", "--norc", "-i"], ["zsh", "-f", "-i"]], ids=lambda argv: argv[0])
async def test_a_long_line_typed_into_a_narrow_shell_is_recorded_as_typed(tmp_path, monkeypatch, argv):
    monkeypatch.delenv("PS1", raising=False)  # zsh marks no prompt end (B) in an exported PS1
    typed = "echo " + " ".join(f"word{i}" for i in range(20))  # 136 characters: wraps 4 times at 30
    async with journaled(tmp_path) as (manager, store):
        await manager.start(argv, name="narrow", env={"TERM": "xterm-256color", "HOME": str(tmp_path)})
        session = manager.session("narrow")
        session.resize(24, 30)
        await _keys(session, typed)
        result = await manager.write("narrow", "\n")
        assert result.command_exit_code == 0, result.output
        with await written(store, "narrow") as journal:
            assert [command.text for command in journal.chapters()] == [typed]


async def test_a_resize_is_an_r_event_and_the_header_has_the_size_at_the_start(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        manager.spawn(["cat"], name="cat")
        manager.session("cat").resize(30, 100)
        await manager.write("cat", "x\n")
        with await written(store, "cat") as journal:
            assert journal.size == (80, 24)
            assert [event.data for event in journal.events() if event.code == "r"] == ["100x30"]


async def test_input_is_left_out_unless_asked_for(tmp_path):
    async with journaled(tmp_path) as (manager, store):
        manager.spawn(["cat"], name="quiet")
        await manager.write("quiet", "hunter2\n")
        with await written(store, "quiet") as journal:
            assert not [event for event in journal.events() if event.code == "i"]
    async with journaled(tmp_path / "second", record_input=True) as (manager, store):
        manager.spawn(["cat"], name="told")
        await manager.write("told", "typed\n")
        with await written(store, "told") as journal:
            assert [event.data for event in journal.events() if event.code == "i"] == ["typed\n"]


# Each edit: the keys, each written once the terminal echoed the one before (a person at the
# keyboard), then Enter; and what the commands list must say the shell ran.
EDITS = [
    (["echo some long text", "\x15", "echo via-enter"], "echo via-enter"),  # Ctrl+U
    (["echo one two three", "\x17", "\x17", "four"], "echo one four"),  # Ctrl+W twice
    (["cho x", "\x01", "e"], "echo x"),  # Ctrl+A, then a key inserted at the start
    (["echo abcd", "\x7f", "\x7f", "ef"], "echo abef"),  # backspaces
    (["\x1b[A"], "echo abef"),  # the last line again (up arrow)
    (["echo héllo wörld ✓ 日本"], "echo héllo wörld ✓ 日本"),  # UTF-8, wide characters
    (["for i in 1 2", "\r", "do echo $i; done"], "for i in 1 2\ndo echo $i; done"),  # two lines
    (["echo " + "y" * 70, "\x15", "echo short"], "echo short"),  # wrapped at 40 columns, then erased
]
LONG = "echo " + " ".join(f"w{i}" for i in range(16))  # 82 characters, typed a key at a time: wraps twice at 40


RCS = {"bash": (".bashrc", "PS1='$ '\n"), "zsh": (".zshrc", "PS1='%% '\n")}


@pytest.mark.parametrize("prompt", ["short", "default"])
@pytest.mark.parametrize("shell", ["bash", "zsh"])
async def test_the_commands_list_says_what_the_terminal_showed_after_each_edit(tmp_path, monkeypatch, shell, prompt):
    """bash redraws after Ctrl+U from column 0 (`\\r`, then forward by the prompt's width) when that
    is shorter than going back: with a short prompt; zsh moves and writes over. Either way the
    command is what was on the screen at Enter, not every byte the editor sent."""
    monkeypatch.delenv("PS1", raising=False)  # zsh marks no prompt end (B) in an exported PS1
    if prompt == "short":
        name, text = RCS[shell]
        (tmp_path / name).write_text(text)
    async with journaled(tmp_path) as (manager, store):
        await manager.start([shell, "-i"], name="sh", env={"TERM": "xterm-256color", "HOME": str(tmp_path), "LANG": "C.UTF-8"})
        session = manager.session("sh")
        session.resize(24, 40)
        for keys, _ in EDITS:
            await _keys(session, keys)
            result = await manager.write("sh", "\r")
            assert result.command_exit_code == 0, (keys, result.output)
        await _keys(session, LONG)
        assert (await manager.write("sh", "\r")).command_exit_code == 0
        with await written(store, "sh") as journal:
            assert [command.text for command in journal.chapters()] == [typed for _, typed in EDITS] + [LONG]


class _Kernels:
    """Managers that share one keeper, as kernels of one kernel id do across restarts."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="uk-")  # short: a Unix address holds 107 bytes
        self.count = 0

    def next(self) -> UnifiedExecSessionManager:
        self.count += 1
        keeper = Keeper(os.path.join(self.root, "keep.sock"), "proof", journal_root=self.root, grace=30.0)
        store = JournalStore(os.path.join(self.root, f"journals-{self.count}"))
        return UnifiedExecSessionManager(keeper=keeper, journals=store, shell_integration=True)

    def end(self) -> None:
        for process in psutil.process_iter(["cmdline"]):
            cmdline = process.info["cmdline"] or []
            if any("uexec keeper" in part for part in cmdline) and any(part.startswith(self.root) for part in cmdline):
                process.kill()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def kernels():
    kernels = _Kernels()
    yield kernels
    kernels.end()


@pytest.mark.parametrize("typist", ["cell", "keys"])
@pytest.mark.parametrize("shell", ["bash", "zsh"])
async def test_the_first_command_after_a_restart_has_its_text_whoever_types_it(kernels, monkeypatch, shell, typist):
    """The next kernel's recorder never saw the prompt the shell waits at: it reads it back from the
    journal, with what was typed at it before the restart (`echo par`)."""
    monkeypatch.delenv("PS1", raising=False)
    first = kernels.next()
    await first.start([shell, "-i"], keep=True, name="sh", timeout_ms=10_000, env={"HOME": kernels.root, "LANG": "C.UTF-8"})
    assert (await first.write("sh", "echo one\n")).command_exit_code == 0
    session = first.session("sh")
    await _keys(session, ["echo par"])
    # The bug showed once the keeper had been told the prompt is journaled (every 0.2 s).
    await async_wait_until(lambda: first.kept._acks.get(session.session_id) == session.terminal.raw_read)
    first.let_go_of_kept()
    await first.close_all()
    await asyncio.wrap_future(first.journals.close_soon())
    second = kernels.next()
    try:
        await second.take_back()
        if typist == "cell":
            assert (await second.write("sh", "tial\n")).command_exit_code == 0
        else:  # a live view's keys, an agent's write_stdin: written as they come
            await _keys(second.session("sh"), list("tial"))
            assert (await second.write("sh", "\r")).command_exit_code == 0
        assert (await second.write("sh", "echo three\n")).command_exit_code == 0
        with await written(second.journals, "sh") as journal:
            assert [command.text for command in journal.chapters()] == ["echo one", "(kernel restarted)", "echo partial", "echo three"]
    finally:
        await second.close_all()
