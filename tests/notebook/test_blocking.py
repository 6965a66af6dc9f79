"""The plain (blocking) form: a coroutine run to its end on this thread, and IPython's own tools around a uexec line.

`%time`, `%timeit`, `%%capture`, `capture_output()` and a loop of
`run_line_magic` cannot await; there the magic blocks the cell's thread
(the sessions go on on the engine's) and shows what a cell shows.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time

import pytest

from unified_exec_kernel.notebook.blocking import run_blocking

from ..kernel_harness import Kernel

pytestmark = pytest.mark.timeout(120)


# -- run_blocking, in this process ---------------------------------------------


def test_it_runs_inside_a_running_loop_and_gives_that_loop_back():
    async def inner():
        await asyncio.sleep(0)
        return asyncio.get_running_loop()

    async def outer():
        mine = asyncio.get_running_loop()
        theirs = run_blocking(inner())
        return mine, theirs, asyncio.get_running_loop()

    mine, theirs, after = asyncio.run(outer())
    assert theirs is not mine and theirs.is_closed()
    assert after is mine


def _interrupt_when(started: threading.Event) -> threading.Thread:
    def send() -> None:
        if started.wait(10):
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def test_an_interrupt_cancels_the_coroutine_which_may_answer_and_the_handler_is_put_back():
    started = threading.Event()
    handler = signal.getsignal(signal.SIGINT)

    async def waits():
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "stopped early"
        return "slept"

    sender = _interrupt_when(started)
    began = time.monotonic()
    assert run_blocking(waits()) == "stopped early"
    sender.join()
    assert time.monotonic() - began < 10  # not the 30 s sleep
    assert signal.getsignal(signal.SIGINT) is handler


def test_an_interrupt_nothing_handles_is_a_keyboard_interrupt():
    started = threading.Event()

    async def waits():
        started.set()
        await asyncio.sleep(30)

    sender = _interrupt_when(started)
    with pytest.raises(KeyboardInterrupt):
        run_blocking(waits())
    sender.join()


def test_errors_come_through_as_they_are():
    async def fails():
        raise LookupError("no such thing")

    with pytest.raises(LookupError, match="no such thing"):
        run_blocking(fails())


# -- IPython's tools around a uexec line, in a real kernel ----------------------


@pytest.fixture(scope="module")
def kernel():
    k = Kernel("uexec")
    k.run("import os\nos.environ['PS1'] = '$ '")
    k.run("%%uexec --name sh\nbash --norc -i\n")
    yield k
    k.shutdown()


STATUS = r"\[session \d+ running · command exited with code 0 · \d+\.\d\d s\]"


def test_cell_time_around_a_uexec_line(kernel):
    text = kernel.run("%%time\n%uexec -s sh echo timed-cell\n")
    assert re.search(r"\ntimed-cell\n\$\n" + STATUS + r"\n", text), text
    assert "Wall time:" in text


def test_line_time_of_a_uexec_line(kernel):
    text = kernel.run("%time %uexec -s sh echo timed-line")
    assert re.search(r"\ntimed-line\n\$\n" + STATUS, text) and "Wall time:" in text, text


def test_cell_time_around_a_uexec_cell(kernel):
    text = kernel.run("%%time\n%%uexec -s sh\necho timed-uexec-cell\n")
    assert "\ntimed-uexec-cell\n" in text and "Wall time:" in text, text


def test_timeit_of_a_uexec_line(kernel):
    text = kernel.run("%timeit -n1 -r3 %uexec -s sh true")
    assert len(re.findall(STATUS, text)) == 3, text
    assert re.search(r"per loop \(mean ± std\. dev\. of 3 runs, 1 loop each\)", text), text


def test_cell_capture_of_a_uexec_line_keeps_its_final_text(kernel):
    execution = kernel.execute("%%capture c\n%uexec -s sh echo captured-line\n")
    assert execution.reply["status"] == "ok" and execution.outputs == [], execution.text
    stdout = kernel.run("print(c.stdout, end='')")
    assert re.fullmatch(r"echo captured-line\ncaptured-line\n\$\n" + STATUS + r"\n", stdout), stdout
    assert kernel.run("print(len(c.outputs))") == "0\n"


def test_cell_capture_of_a_journal_read(kernel):
    kernel.run("%uexec -s sh echo in-the-journal")
    execution = kernel.execute("%%capture c\n%uexec_output sh --grep in-the-journal\n")
    assert execution.reply["status"] == "ok" and execution.outputs == []
    assert re.search(r"^\d+:in-the-journal$", kernel.run("print(c.stdout)"), re.M)


def test_capture_output_around_run_line_magic(kernel):
    text = kernel.run(
        "from IPython.utils.capture import capture_output\n"
        "with capture_output() as c:\n"
        "    get_ipython().run_line_magic('uexec', '-s sh echo captured-call')\n"
        "print(repr(c.stdout), len(c.outputs))"
    )
    stdout, outputs = text.rsplit(" ", 1)
    assert re.fullmatch(r"echo captured-call\ncaptured-call\n\$\n" + STATUS + r"\n", eval(stdout)), text  # noqa: S307
    assert outputs.strip() == "0"


def test_run_line_magic_in_a_loop_collects_each_exit_code(kernel):
    execution = kernel.execute(
        "codes = []\n"
        "for n in range(4):\n"
        "    get_ipython().run_line_magic('uexec', f'--out r -s sh (exit {n})')\n"
        "    codes.append(r.command_exit_code)\n"
        "print(codes)"
    )
    assert execution.reply["status"] == "ok", execution.text
    assert execution.text.endswith("[0, 1, 2, 3]\n")
    statuses = re.findall(r"command exited with code (\d)", execution.text)
    assert statuses == ["0", "1", "2", "3"]  # each run's display, in the cell, in order


def test_a_blocking_run_updates_its_display_while_it_waits_and_ends_on_the_final_text(kernel):
    execution = kernel.execute("%time %uexec -t 10000 --shell for i in 1 2 3 4; do echo tick-$i; sleep 0.25; done")
    assert execution.reply["status"] == "ok"
    assert execution.count("update_display_data") >= 2  # a tail while it ran, then the final text
    assert re.search(r"tick-1\ntick-2\ntick-3\ntick-4\n\[exited with code 0 · \d+\.\d\d s\]", execution.text), execution.text
    assert "[…running]" not in execution.text


def test_an_interrupt_ends_a_blocking_wait_and_keeps_the_session(kernel, tmp_path):
    marker = tmp_path / "begun"
    msg_id = kernel.start_execute(f"if True:\n    %uexec -t 30000 bash -c 'touch {marker}; sleep 100'\nprint('not reached')")
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    interrupted = time.monotonic()
    kernel.manager.interrupt_kernel()
    execution = kernel.finish_execute(msg_id, timeout=40)
    assert time.monotonic() - interrupted < 10  # not the 30 s timeout
    assert (execution.reply["status"], execution.reply["ename"]) == ("error", "UsageError")
    assert "still runs" in execution.reply["evalue"] and "not reached" not in execution.text
    sid = re.search(r"session (\d+) still runs", execution.reply["evalue"]).group(1)
    assert re.search(rf"\n{sid} +bash -c .* running", kernel.run("%uexec_sessions"))
    kernel.run(f"%uexec_kill {sid}")
    # and a cooperative cell afterwards is interrupted as fast as before (its wakeup fd is back)
    assert "\nstill-cooperative\n" in kernel.run("%uexec -s sh echo still-cooperative")


def test_a_top_level_line_still_awaits_without_blocking_the_loop(kernel):
    # A callback of the kernel's loop runs during a top-level %uexec (the cooperative form), before the next line.
    text = kernel.run(
        "import asyncio\nticks = []\nasyncio.get_running_loop().call_later(0.2, lambda: ticks.append(1))\n"
        "%uexec -s sh sleep 0.6\n"
        "print('ticks', len(ticks))"
    )
    assert text.endswith("ticks 1\n"), text
