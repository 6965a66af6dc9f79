"""Both ways of starting a program give it the same terminal."""

import asyncio
import signal

import pytest

from unified_exec_kernel.core.process.spawn import HANDOFF_FD, spawn_pty

from ..helpers import Reader, spawn

BACKENDS = ["posix_spawn", "ptyprocess"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


async def run_to_end(argv, backend):
    session = spawn(argv, backend)
    reader = Reader(session)
    try:
        await asyncio.wait_for(session.wait_finished(), 10)
    finally:
        await session.close()
    return reader.text, session.exit_code


async def test_child_has_the_pty_as_controlling_terminal(backend):
    text, code = await run_to_end(["bash", "-c", "tty; stty size; ps -o sid=,pgid=,tpgid= -p $$"], backend)
    assert code == 0
    lines = text.splitlines()
    assert lines[0].startswith("/dev/pts/")
    assert lines[1] == "24 80"
    sid, pgid, tpgid = lines[2].split()
    assert sid == pgid == tpgid  # session leader, and its group is in the foreground


async def test_ctrl_c_interrupts_the_foreground_program(backend):
    session = spawn(["bash", "--norc", "-i"], backend)
    reader = Reader(session)
    try:
        await reader.until("$ ")
        session.write("sleep 100\n")
        await asyncio.sleep(0.3)
        session.write("\x03")
        await reader.until("^C")
        session.write("echo after-$?\n")
        await reader.until("after-130")
    finally:
        await session.close()


async def test_job_control_in_an_interactive_shell(backend):
    session = spawn(["bash", "--norc", "-i"], backend)
    reader = Reader(session)
    try:
        await reader.until("$ ")
        session.write("sleep 100 &\njobs; echo jobs-done\n")
        await reader.until("jobs-done")
        assert "Running" in reader.text and "sleep 100" in reader.text
        assert "no job control" not in reader.text
    finally:
        await session.close()


async def test_inherited_ignored_signals_are_reset(backend):
    # Python ignores SIGPIPE and SIGXFSZ; a child must not inherit that
    # (`yes | head` would print "Broken pipe" errors instead of ending quietly).
    text, code = await run_to_end(["bash", "-c", "grep SigIgn /proc/self/status"], backend)
    ignored = int(text.split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
        assert not ignored & (1 << (sig - 1)), text


async def test_missing_program_raises_in_the_caller(backend):
    with pytest.raises(FileNotFoundError):
        spawn_pty(["/no/such/program"], {}, backend=backend)


async def test_a_handoff_reaches_the_child_on_its_descriptor_alone(backend):
    # How the shell integration's nonce travels: a pipe on HANDOFF_FD, then end of file; never the environment.
    # A nonce no environment holds by chance (a run's paths held "abc" once).
    script = f'IFS= read -r x <&{HANDOFF_FD}; echo "got-$x"; cat <&{HANDOFF_FD}; echo end; grep -c Zq81nonceXw /proc/$$/environ'
    session = spawn(["bash", "-c", script], backend, prompt_nonce="Zq81nonceXw")
    reader = Reader(session)
    try:
        await asyncio.wait_for(session.wait_finished(), 10)
    finally:
        await session.close()
    assert "got-Zq81nonceXw\r\nend\r\n0\r\n" in reader.text, reader.text


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="unknown spawn backend"):
        spawn_pty(["true"], {}, backend="telepathy")
