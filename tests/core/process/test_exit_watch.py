"""The exit watch: one callback per child, on the loop, with the status a shell would see."""

import asyncio
import os
import signal

import pytest

from unified_exec_kernel.core.process.exit_watch import watch_exit


@pytest.mark.parametrize("argv, code", [(["true"], 0), (["sh", "-c", "exit 7"], 7), (["sh", "-c", "kill -TERM $$"], -signal.SIGTERM)])
async def test_exit_is_noticed_on_the_loop_with_its_code(argv, code):
    loop = asyncio.get_running_loop()
    seen = loop.create_future()
    pid = os.posix_spawnp(argv[0], argv, dict(os.environ))
    watch_exit(pid, loop, seen.set_result)
    assert await asyncio.wait_for(seen, 10) == code
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no zombie is left


async def test_a_child_reaped_by_somebody_else_reports_a_lost_status():
    loop = asyncio.get_running_loop()
    seen = loop.create_future()
    pid = os.posix_spawnp("sleep", ["sleep", "0.2"], dict(os.environ))
    watch_exit(pid, loop, seen.set_result)
    os.waitpid(pid, 0)  # blocking here is fine: this test owns its loop
    assert await asyncio.wait_for(seen, 10) is None
