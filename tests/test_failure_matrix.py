"""The failure matrix (docs/architecture.md): the kernel, its guardian and the keeper die or stall, one
or two at a time, and each cell holds its four promises: no program outlives its kernel id's end, no
output is lost without a word, the person is told what became of each session, and a new session can
always start (and a shutdown ends everything).

Real kernels through jupyter_client, real keepers and guardians, programs that ignore the hangup and
SIGTERM (so only our ending ends them); SIGKILL and SIGSTOP are sent to the real processes.
"""

from __future__ import annotations

import os
import re
import signal
import time

import psutil
import pytest

from .conftest import kill_processes, pidfds_held_by
from .kernel_harness import Kernel
from .test_kept_sessions import DEADLINE_S, configure, gone, keepers, leftovers, restart, runtime, session_pids  # noqa: F401 (a fixture)

TICKER = "bash -c \"trap '' HUP TERM; i=0; while :; do echo tick $((i++)); sleep 0.05; done\""


def start_ticker(kernel: Kernel, name: str = "tick", keep: bool = True) -> int:
    kernel.run(f"%%uexec {'--keep ' if keep else ''}--name {name} --timeout 200\n{TICKER}")
    return session_pids(kernel)[name]


def keeper_of(program: int) -> psutil.Process:
    keeper = psutil.Process(program).parent()
    assert any("uexec keeper" in part for part in keeper.cmdline())
    return keeper


def guardian_of(kernel: Kernel) -> psutil.Process:
    found = [child for child in psutil.Process(kernel.pid).children() if _is_guardian(child)]
    assert len(found) == 1, found
    return found[0]


def _is_guardian(process: psutil.Process) -> bool:
    try:
        return any("uexec guardian" in part for part in process.cmdline())
    except psutil.Error:
        return False  # gone, or a zombie not reaped yet


def wait_for(condition, timeout: float = DEADLINE_S, what: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


def table_saying(kernel: Kernel, words: str) -> str:
    def table():
        text = kernel.run("%uexec_sessions")
        return text if words in text else None

    return wait_for(table, what=f"%uexec_sessions says {words!r}")


def ticks(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^tick (\d+)$", text, re.M)]


def journal_grows(kernel: Kernel, name: str = "tick") -> None:
    """The journal goes on: a tick printed after now reaches it."""
    before = max(ticks(kernel.run(f"%uexec_output {name} --tail 5")))
    wait_for(lambda: max(ticks(kernel.run(f"%uexec_output {name} --tail 5"))) > before + 5, what="the journal grows")


def kill_kernel(kernel: Kernel) -> None:
    os.kill(kernel.pid, signal.SIGKILL)
    kernel.manager.provisioner.process.wait(timeout=DEADLINE_S)


def stopped(process: psutil.Process):
    try:
        return process.status() == psutil.STATUS_STOPPED
    except psutil.NoSuchProcess:
        return False


def resume(process: psutil.Process) -> None:
    try:
        process.resume()
    except psutil.NoSuchProcess:
        pass


def test_a_dead_keeper_s_session_is_read_by_the_kernel_and_ends_with_it(runtime):
    """Keeper dies, kernel lives: the journal goes on, the session says so, and it ends with the kernel."""
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper_of(program).kill()
        listed = table_saying(kernel, "no longer kept: its keeper died")
        assert re.search(r"tick .*running \(no longer kept: its keeper died\)", listed), listed
        journal_grows(kernel)
        assert "no longer kept" in kernel.run("%uexec_output tick --commands")  # a chapter where it happened
        told = kernel.run("%uexec -s tick -t 100")
        assert "session tick is no longer kept: its keeper died" in told, told
        kill_kernel(kernel)
        assert gone([program])
    finally:
        kernel.manager.shutdown_kernel(now=True)
        kernel.client.stop_channels()


def test_a_stalled_keeper_is_ended_and_its_session_read_by_the_kernel(runtime):
    """Keeper stalls (SIGSTOP), kernel lives: a stall is a death; resuming it later changes nothing."""
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        keeper.suspend()
        listed = table_saying(kernel, "stopped answering")
        assert re.search(r"tick .*running \(no longer kept: its keeper stopped answering for 5 s and was ended\)", listed), listed
        assert gone([keeper.pid])
        journal_grows(kernel)
        again = kernel.run("%%uexec --keep --name again --timeout 100\nsleep 300")  # a new keeper
        assert "running" in again and keeper_of(session_pids(kernel)["again"]).pid != keeper.pid
    finally:
        kernel.manager.shutdown_kernel(now=False)
    assert gone([program]) and leftovers(runtime) == []


def test_a_keeper_that_dies_after_its_kernel_takes_its_sessions_along(runtime):
    """Kernel dies, then its keeper (in the grace): the last kernel's guardian ends the kept program,
    and the next kernel says which session went."""
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        kill_kernel(kernel)
        time.sleep(0.5)  # not a race: any moment in the grace is this cell; the program must still run here
        assert psutil.pid_exists(program)
        keeper.kill()
        assert gone([program])
        kernel.manager.restart_kernel(now=True)
        kernel.client.wait_for_ready(timeout=60)
        listed = kernel.run("%uexec_sessions")
        assert re.search(r"the keeper of kept sessions had died; with it ended kept session\(s\) 0 'tick' \(bash -c", listed), listed
        assert "running" in kernel.run("%%uexec --keep --name again --timeout 100\nsleep 300")
    finally:
        kernel.manager.shutdown_kernel(now=False)
    assert leftovers(runtime) == []


def test_a_keeper_stalled_for_good_after_its_kernel_died_is_ended_after_the_grace(runtime, tmp_path):
    """Kernel dies while the keeper is stopped and never resumed: the guardian ends both after the grace."""
    configure(tmp_path, keep_grace_s=1.0)
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        guardian = guardian_of(kernel)
        keeper.suspend()
        kill_kernel(kernel)
        assert gone([program, keeper.pid, guardian.pid], timeout=DEADLINE_S + 10)
    finally:
        kernel.manager.shutdown_kernel(now=True)
        kernel.client.stop_channels()


@pytest.mark.parametrize("then", ["resumed", "not resumed"])
def test_a_keeper_stalled_through_a_restart_is_ended_and_the_next_kernel_says_so(runtime, then):
    """The take-back gets no answer: the keeper is ended, its session with it, the person is told by
    name; a new kept session starts; a shutdown leaves nothing (the old keeper is no second owner)."""
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        keeper.suspend()
        restart(kernel, "graceful")
        listed = kernel.run("%uexec_sessions")
        assert re.search(r"did not answer in 5 s and was ended; with it ended kept session\(s\) 0 'tick' \(bash -c", listed), listed
        assert gone([program, keeper.pid])
        if then == "resumed":
            resume(keeper)
        assert "running" in kernel.run("%%uexec --keep --name again --timeout 100\nsleep 300")
        again = session_pids(kernel)["again"]
        new_keeper = keeper_of(again)
    finally:
        kernel.manager.shutdown_kernel(now=False)
    assert gone([again, new_keeper.pid]) and leftovers(runtime) == []


def test_a_shutdown_ends_a_stalled_keeper_too(runtime):
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        keeper.suspend()
        wait_for(lambda: stopped(keeper), what="the keeper stopped")
    finally:
        kernel.manager.shutdown_kernel(now=False)
    assert gone([program, keeper.pid]) and leftovers(runtime) == []


def test_a_replaced_guardian_learns_the_kept_sessions(runtime):
    """Guardian dies, the kernel replaces it; then the kernel and the keeper die together: the new
    guardian, told of the kept session by the keeper, ends it."""
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        first = guardian_of(kernel)
        first.kill()
        second = wait_for(lambda: next((g for g in [guardian_of_or_none(kernel)] if g is not None and g.pid != first.pid), None),
                          what="a new guardian")
        wait_for(lambda: program in held_by(second), what="the new guardian holds the kept program")
        keeper.kill()
        kill_kernel(kernel)
        assert gone([program, second.pid])
    finally:
        kernel.manager.shutdown_kernel(now=True)
        kernel.client.stop_channels()


def held_by(process: psutil.Process) -> list[int]:
    return pidfds_held_by(process.pid)


def guardian_of_or_none(kernel: Kernel):
    try:
        return guardian_of(kernel)
    except AssertionError:
        return None


def test_a_stalled_guardian_is_replaced_before_the_kernel_needs_it(runtime):
    """Guardian stopped: the kernel replaces it (a stall is a death); a kernel killed after that
    still takes its (unkept) session along."""
    kernel = Kernel()
    first = None
    try:
        program = start_ticker(kernel, keep=False)
        first = guardian_of(kernel)
        first.suspend()
        second = wait_for(lambda: next((g for g in [guardian_of_or_none(kernel)] if g is not None and g.pid != first.pid), None),
                          what="a new guardian")
        assert gone([first.pid])
        kill_kernel(kernel)
        assert gone([program, second.pid])
    finally:
        kernel.manager.shutdown_kernel(now=True)
        kernel.client.stop_channels()
        kill_processes([first] if first is not None else [])  # (a kernel that failed to replace it left it stopped)


SHELLS = ["bash -i", "bash --norc -i", "bash --noprofile --norc", "zsh -i", "zsh -f", "sh -i"]


def test_kept_sessions_start_as_unkept_ones_do(runtime, tmp_path):
    """Same directory (the kernel's, after %cd), same environment, same shell integration."""
    kernel = Kernel()
    folder = tmp_path / "work dir"
    folder.mkdir()
    try:
        kernel.run(f"%cd {folder}")
        for index, shell in enumerate(SHELLS):
            seen = {}
            for keep in (False, True):
                name = f"s{index}{'k' if keep else 'u'}"
                started = kernel.run(f"%%uexec {'--keep ' if keep else ''}--name {name} --timeout 3000\n{shell}")
                done = kernel.run(f"%uexec -s {name} -t 3000 pwd; env | grep -v -e '^_=' -e '^UEXEC_' -e '^SHLVL=' | sort | md5sum")
                exit_line = "command exited with code 0" in done
                seen[keep] = (exit_line, re.findall(r"^(/.*|[0-9a-f]{32})\s*-?$", done, re.M), "running" in started)
            assert seen[True] == seen[False], (shell, seen)
            assert str(folder) in seen[True][1], (shell, seen)
            assert seen[True][0] == (not shell.startswith("sh")), (shell, seen)  # integrated, as unkept, where there is any
    finally:
        kernel.shutdown()


def test_a_guardian_and_keeper_killed_together_leave_the_kernel_in_charge(runtime):
    """Both helpers die at once while the kernel lives: it reads the kept session itself, starts a new
    guardian that knows it, and a kernel killed after that takes it along."""
    kernel = Kernel()
    try:
        program = start_ticker(kernel)
        keeper = keeper_of(program)
        first = guardian_of(kernel)
        keeper.kill()
        first.kill()
        table_saying(kernel, "no longer kept: its keeper died")
        second = wait_for(lambda: next((g for g in [guardian_of_or_none(kernel)] if g is not None and g.pid != first.pid), None),
                          what="a new guardian")
        wait_for(lambda: program in held_by(second), what="the new guardian holds the program")
        journal_grows(kernel)
        kill_kernel(kernel)
        assert gone([program, second.pid])
    finally:
        kernel.manager.shutdown_kernel(now=True)
        kernel.client.stop_channels()


@pytest.mark.parametrize("first", ["kernel", "guardian"])
def test_a_kernel_and_its_guardian_killed_at_once_leave_the_keeper_to_end_the_unkept_sessions(runtime, first):
    """The pair whose death leaves neither process that knew the unkept sessions: the keeper, told the
    guardian's news, ends them as the guardian would have (a program ignoring the hangup included);
    the kept session goes on for the next kernel."""
    kernel = Kernel()
    try:
        kept = start_ticker(kernel)
        unkept = start_ticker(kernel, "loose", keep=False)
        keeper, guardian = keeper_of(kept), guardian_of(kernel)
        wait_for(lambda: unkept in held_by(keeper), what="the keeper holds the unkept program too")
        for pid in (kernel.pid, guardian.pid) if first == "kernel" else (guardian.pid, kernel.pid):
            os.kill(pid, signal.SIGKILL)
        kernel.manager.provisioner.process.wait(timeout=DEADLINE_S)
        assert gone([unkept]), "the unkept program outlived its kernel and guardian"
        assert psutil.pid_exists(kept) and keeper.is_running()
        kernel.manager.restart_kernel(now=True)
        kernel.client.wait_for_ready(timeout=60)
        listed = kernel.run("%uexec_sessions")
        assert re.search(r"tick .*running", listed) and "loose" not in listed, listed
        journal_grows(kernel)
    finally:
        kernel.manager.shutdown_kernel(now=False)
    assert gone([kept]) and leftovers(runtime) == []


def test_a_stalled_kernel_loses_nothing_of_a_kept_session(runtime):
    """The kernel stopped for a while (the keeper reads on into its ring), then resumed: the journal has every line."""
    kernel = Kernel()
    try:
        program = psutil.Process(start_ticker(kernel))
        process = psutil.Process(kernel.pid)
        process.suspend()
        try:
            wait_for(lambda: stopped(process), what="the kernel stopped")
            switches = program.num_ctx_switches().voluntary
            # The program goes on meanwhile (a loop turn is a few switches): twenty turns, at least.
            wait_for(lambda: program.num_ctx_switches().voluntary > switches + 40, what="the program runs on")
        finally:
            process.resume()
        journal_grows(kernel)
        whole = ticks(kernel.run("%uexec_output tick --head 100000"))
        assert whole == list(range(len(whole))), whole[-20:]
    finally:
        kernel.shutdown()
