"""A Jupyter server extension: kernel websocket frames go out without Nagle's delay.

ipykernel publishes `status: busy` for every message a front end sends, a
keystroke included, then `idle`, then the session's echo a millisecond later.
jupyter_server never sets TCP_NODELAY on kernel websockets, so Nagle's
algorithm holds the idle and the echo until the browser acknowledges the busy
frame, and the browser delays that acknowledgement (~40 ms). Measured here
(benchmarks/bench_live.py): keystroke-to-echo in the page 59 ms p50 with
Nagle, 22 ms without.

tornado's `set_nodelay` is meant to be called in a websocket handler's
`open`; this extension routes the kernel channels to a subclass that does
that, leaving everything else of jupyter_server's handler as it is. It is
enabled by the `jupyter_server_config.d` file the wheel installs, like any
server extension (`jupyter server extension disable unified_exec_kernel`).
"""

from __future__ import annotations


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

    replaced = _route_without_nagle(serverapp.web_app.default_router, KernelWebsocketHandler)
    if replaced:
        serverapp.log.info("unified_exec_kernel: kernel websockets send without Nagle's delay")
    else:
        serverapp.log.warning("unified_exec_kernel: no kernel websocket route found; latency unchanged")


def _route_without_nagle(router, base: type) -> int:
    """Point every route to a `base` handler at a no-delay subclass of it; how many were changed."""
    replaced = 0
    for rule in getattr(router, "rules", []):
        target = rule.target
        if isinstance(target, type) and issubclass(target, base):
            if not getattr(target, "_uexec_nodelay", False):
                rule.target = _no_delay(target)
                replaced += 1
        else:
            replaced += _route_without_nagle(target, base)
    return replaced


def _no_delay(handler: type) -> type:
    class NoDelayHandler(handler):
        _uexec_nodelay = True

        async def open(self, *args, **kwargs):
            self.set_nodelay(True)
            return await super().open(*args, **kwargs)

    NoDelayHandler.__name__ = NoDelayHandler.__qualname__ = f"NoDelay{handler.__name__}"
    return NoDelayHandler
