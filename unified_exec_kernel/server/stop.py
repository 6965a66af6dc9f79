"""A Jupyter server extension: SIGINT without a terminal stops the server cleanly, kernels first.

JupyterHub stops a single-user server with SIGINT (then SIGTERM after 10 s,
then SIGKILL). jupyter_server handles SIGINT only when its stdin is a
terminal (for its "shut down? y/n" prompt, which JupyterHub's singleuser
replaces with a plain stop). Without a terminal, as under a hub run by
systemd or in a container, SIGINT raises KeyboardInterrupt in the server's
loop and the server exits without shutting its kernels down. Each kernel
then finds its parent gone and leaves at once (ipykernel's parent poller
calls `os._exit`), so none of its cleanup runs, and the processes of its
sessions that ignore SIGHUP (`nohup`, `trap '' HUP`) outlive the user's
server (found by tests/test_jupyterhub.py).

So when nothing but Python's default handler answers SIGINT, this gives it
what SIGTERM already does: log, and stop the server the clean way, which
shuts every kernel down (and each uexec kernel closes its sessions). A
second SIGINT during that stop ends the server at once, as before.
"""

from __future__ import annotations

import os
import signal


def _load_jupyter_server_extension(serverapp) -> None:
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return  # a terminal's prompt, JupyterHub's stop, or someone else's choice: keep it
    server = os.getpid()

    def on_sigint(signum, frame) -> None:
        if os.getpid() != server:  # a forked child of the server (multiprocessing): Python's default, as without us
            signal.default_int_handler(signum, frame)
        _stop(serverapp, signum)

    signal.signal(signal.SIGINT, on_sigint)
    serverapp.log.info("unified_exec_kernel: SIGINT stops the server after shutting its kernels down")


def _stop(serverapp, signum: int) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    serverapp.log.critical("received signal %s, shutting kernels down, then stopping", signum)
    serverapp.stop(from_signal=True)
