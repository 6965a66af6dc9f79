"""Where this kernel runs, read from its environment: behind a gateway or not, and what a kept session outlives there.

Behind Kernel Gateway or Enterprise Gateway only the kernel's messages reach
the page (jupyter_client#487), relayed as text (live/frontend.py). Kernel Gateway sets `KERNEL_GATEWAY=1` in its
kernels' environment and restarts a kernel in place, on its own host and
with the same connection file, so the keeper (jupyter/keeping.py) hands the
kept sessions to the next kernel. Enterprise Gateway's Kubernetes proxy
names the kernel's pod (`KERNEL_POD_NAME`) and restarts a kernel by deleting
that pod and starting another: the keeper, a process of the old pod, ends
with it. `--keep` says which, in one line, where it is not the plain case.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

NAME_MAX_CHARS = 63
"""A Kubernetes name's length: what a line quotes of the pod's name, at most."""


def behind_gateway(env: Mapping[str, str] | None = None) -> bool:
    """Whether a gateway started this kernel: its page gets the kernel's messages, relayed as text."""
    env = os.environ if env is None else env
    return env.get("KERNEL_GATEWAY", "").strip() not in ("", "0") or bool(env.get("KERNEL_POD_NAME", "").strip())


def kept_sessions_here(env: Mapping[str, str] | None = None) -> str | None:
    """The one line `--keep` adds under a gateway (what survives there and what does not); None elsewhere."""
    env = os.environ if env is None else env
    pod = env.get("KERNEL_POD_NAME", "").strip()
    if pod:
        return (
            f"[--keep: Enterprise Gateway replaces this kernel's pod {pod[:NAME_MAX_CHARS]!r} on restart:"
            " kept sessions end with it]"
        )
    if behind_gateway(env):
        return (
            "[--keep: a kernel gateway restarts this kernel in place: kept sessions outlive a restart, not a shutdown]"
        )
    return None
