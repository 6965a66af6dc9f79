"""`c.UnifiedExec.*`: every knob of the extension as a traitlet with help text.

Being a `Configurable` makes config files (`ipython_kernel_config.py`,
`ipython_config.py`) and `--help-all` work as for any Jupyter component, and
validation runs when the extension loads: a bad value is a clear error then,
not a crash in the middle of a cell.
"""

from __future__ import annotations

import shutil

from traitlets import Bool, Dict, Enum, Float, Int, List, TraitError, Unicode, validate
from traitlets.config import Configurable

from ..core.activity import MODES as ACTIVITY_MODES
from ..core.journal import DEFAULT_KERNEL_BYTES, DEFAULT_SESSION_BYTES, JournalStore
from ..core.journal.lifetime import open_own_dir
from ..core.manager import MAX_SESSIONS, MAX_WATCH_MS
from ..core.models import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS
from ..core.session import HOLD_S, SCROLLBACK_BYTES
from ..core.errors import quoted
from .activity import DEFAULT_INTERVAL_S as ACTIVITY_INTERVAL_S


class UnifiedExec(Configurable):
    max_sessions = Int(MAX_SESSIONS, min=1, help="Sessions kept at once; past it the least recently used is closed (exited ones first, never the 8 newest).").tag(config=True)
    default_timeout_ms = Int(DEFAULT_TIMEOUT_MS, min=0, help="How long %%uexec collects output when no --timeout is given, in ms.").tag(config=True)
    max_timeout_ms = Int(MAX_TIMEOUT_MS, min=0, help="Longest wait a request may ask for, in ms; longer ones are clamped with a warning line.").tag(config=True)
    scrollback_bytes = Int(SCROLLBACK_BYTES, min=1024, help="Output kept per session for live views that attach late, in bytes.").tag(config=True)
    env = Dict(value_trait=Unicode(), per_key_traits=None, help="Extra environment for every session's program, e.g. {'PAGER': 'cat', 'NO_COLOR': '1'}. TERM defaults to xterm-256color.").tag(config=True)
    env_remove = List(
        Unicode(),
        help="Names or glob patterns (JUPYTERHUB_API_TOKEN, AWS_*) of the kernel's environment that sessions do not inherit. Default: none, as with !cmd; see docs/deployment.md.",
    ).tag(config=True)
    shell_integration = Bool(
        True,
        help="Start bash and zsh sessions so that they report where each typed command ends (OSC 133 prompt markers): a cell that types a command then returns when it is done, with its exit code. --no-integration opts a session out.",
    ).tag(config=True)
    check = Bool(False, help="Make every %%uexec cell fail (one line) when its program, or the command it typed into an integrated shell, exits non-zero, as if it said --check.").tag(config=True)
    max_watch_ms = Int(MAX_WATCH_MS, min=0, help="Longest a comm `watch` may wait, in ms (an agent's watch may outlast any request).").tag(config=True)
    shell = Unicode("bash", help="The shell that runs %%uexec --shell scripts.").tag(config=True)
    direct_channel = Bool(
        True,
        help="Let live views reach this kernel's sessions through a Unix socket beside its connection file (0600), relayed by the Jupyter server extension, instead of comm messages: keystrokes echo at terminal speed and a flood is not rate-limited. Off: live views use the comm only.",
    ).tag(config=True)
    live_view_hold_s = Float(
        HOLD_S,
        min=0,
        help="How long a live view on the direct channel may keep its session's program waiting while the page draws a flood, in seconds: within it the program is paced to the page and nothing is skipped; a view that takes longer (a background or frozen tab) lets go and skips the oldest output instead, as over the comm. 0: views never hold a program.",
    ).tag(config=True)
    journal = Bool(True, help="Keep everything each session prints in a journal on disk (asciicast v3, with resizes, commands and the exit), for %uexec_output, %uexec_record and the comm's read.").tag(config=True)
    journal_dir = Unicode("", help="Where each kernel makes its own journal directory (a fresh one with a random name, 0700, files 0600; a shared directory such as /tmp is safe). Directories of this user's kernels that ended are removed from it as a kernel starts. Default: Jupyter's runtime dir (`jupyter --runtime-dir`).").tag(config=True)
    journal_session_bytes = Int(DEFAULT_SESSION_BYTES, min=1024, help="Most bytes on disk one session's journal may take (journal + index); past it the journal keeps the head and notes what it dropped. Default 256 MiB.").tag(config=True)
    journal_kernel_bytes = Int(DEFAULT_KERNEL_BYTES, min=1024, help="Most bytes on disk all of a kernel's journals may take; past it the oldest finished journals are removed first, then new output is dropped (and noted). Default 1 GiB.").tag(config=True)
    journal_input = Bool(False, help="Also journal what is typed into sessions (`i` events). Off by default: typed input holds passwords.").tag(config=True)
    journal_keep = Bool(False, help="Leave the kernel's journal directory when the kernel ends (for `python -m unified_exec_kernel record`). By default it is removed when the kernel ends, however it ends: by the kernel, its guardian, or the next kernel's start.").tag(config=True)
    keep_sessions = Bool(False, help="Keep every new session across kernel restarts, as if each said --keep: a process outside the kernel holds it while no kernel does, and the next kernel with this kernel's id takes it back.").tag(config=True)
    keep_grace_s = Float(300.0, min=0, help="How long kept sessions wait for a kernel to take them back after theirs ended without shutting down (a restart, a crash), in seconds; then they are ended as any session is.").tag(config=True)
    activity = Enum(ACTIVITY_MODES, "output", help="What of the sessions counts as the kernel's activity to the Jupyter server's idle culler (MappingKernelManager.cull_idle_timeout) and, through the server's last_activity, to JupyterHub's: `output`, a session printed (as a terminal's output counts); `running`, any session runs (a silent training job); `none`, sessions never keep the kernel. Told with one IOPub message per activity_interval_s at most, which no cell shows and never makes the kernel busy.").tag(config=True)
    activity_interval_s = Float(ACTIVITY_INTERVAL_S, min=0.1, help="How often the sessions' activity is told to the server, at most, in seconds: keep it under the shortest cull timeout in use (cull_idle_timeout, jupyterhub-idle-culler's --timeout). Default 15, half of a 30 s cull timeout.").tag(config=True)
    guardian = Bool(True, help="Start a small guardian process with the first session that ends every session's processes if the kernel dies without closing them (SIGKILL, out of memory, a forced restart).").tag(config=True)

    @validate("env")
    def _valid_env(self, proposal):
        for key, value in proposal["value"].items():
            if not isinstance(key, str) or not key or "=" in key or "\0" in key:
                raise TraitError(f"UnifiedExec.env: {quoted(key)} is not an environment variable name")
            if not isinstance(value, str) or "\0" in value:
                raise TraitError(f"UnifiedExec.env[{quoted(key)}] must be a string without NUL bytes")
        return proposal["value"]

    @validate("shell")
    def _valid_shell(self, proposal):
        if shutil.which(proposal["value"]) is None:
            raise TraitError(f"UnifiedExec.shell: {quoted(proposal['value'])} is not a program on PATH")
        return proposal["value"]

    def journal_base(self) -> str:
        """Where journal directories go (kept sessions' too)."""
        if self.journal_dir:
            return self.journal_dir
        from jupyter_core.paths import jupyter_runtime_dir

        return jupyter_runtime_dir()

    def journal_store(self, kernel_name: str) -> JournalStore | None:
        """This kernel's journals, in a directory of its own under `journal_dir` (None: journals are off)."""
        if not self.journal:
            return None
        directory, owner = open_own_dir(self.journal_base(), kernel_name, keep=self.journal_keep)
        return JournalStore(
            directory,
            session_bytes=self.journal_session_bytes,
            kernel_bytes=self.journal_kernel_bytes,
            record_input=self.journal_input,
            keep=self.journal_keep,
            owner_fd=owner,
        )

    def manager_options(self) -> dict:
        if self.default_timeout_ms > self.max_timeout_ms:
            raise TraitError(
                f"UnifiedExec.default_timeout_ms ({self.default_timeout_ms}) exceeds max_timeout_ms ({self.max_timeout_ms})"
            )
        return {
            "max_sessions": self.max_sessions,
            "default_timeout_ms": self.default_timeout_ms,
            "max_timeout_ms": self.max_timeout_ms,
            "scrollback_bytes": self.scrollback_bytes,
            "env": dict(self.env),
            "env_remove": list(self.env_remove),
            "shell_integration": self.shell_integration,
            "max_watch_ms": self.max_watch_ms,
            "guardian": self.guardian,
            "keep_sessions": self.keep_sessions,
        }
