"""c.UnifiedExec.*: each knob, its validation, and that config files and --help-all reach it."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import time
import sys
import tempfile

import pytest
from pathlib import Path

from traitlets import TraitError
from traitlets.config import Config

from unified_exec_kernel.jupyter.config import UnifiedExec

from ..kernel_harness import Kernel


def settings(**values) -> UnifiedExec:
    config = Config()
    for name, value in values.items():
        setattr(config.UnifiedExec, name, value)
    return UnifiedExec(config=config)


def test_defaults_are_the_engines():
    assert settings().manager_options() == {
        "max_sessions": 64, "default_timeout_ms": 1000, "max_timeout_ms": 60000,
        "scrollback_bytes": 262144, "env": {}, "env_remove": [], "shell_integration": True, "max_watch_ms": 3_600_000, "guardian": True, "keep_sessions": False,
    }
    assert settings().shell == "bash"


def test_each_knob_reaches_the_manager():
    options = settings(max_sessions=5, default_timeout_ms=200, max_timeout_ms=5000, scrollback_bytes=4096, env={"PAGER": "cat"}, env_remove=["JUPYTERHUB_*"], shell_integration=False, max_watch_ms=1000, guardian=False, keep_sessions=True).manager_options()
    assert options == {
        "max_sessions": 5, "default_timeout_ms": 200, "max_timeout_ms": 5000, "scrollback_bytes": 4096,
        "env": {"PAGER": "cat"}, "env_remove": ["JUPYTERHUB_*"], "shell_integration": False, "max_watch_ms": 1000, "guardian": False, "keep_sessions": True,
    }


@pytest.mark.parametrize(
    "values, message",
    [
        ({"max_sessions": 0}, "'max_sessions' trait .* should not be less than 1"),
        ({"default_timeout_ms": -1}, "'default_timeout_ms' trait .* should not be less than 0"),
        ({"max_timeout_ms": -5}, "'max_timeout_ms' trait .* should not be less than 0"),
        ({"scrollback_bytes": 10}, "'scrollback_bytes' trait .* should not be less than 1024"),
        ({"env": {"A=B": "x"}}, "is not an environment variable name"),
        ({"env": {"A": 3}}, "env"),
        ({"shell": "no-such-shell-here"}, "is not a program on PATH"),
        ({"max_sessions": "many"}, "max_sessions"),
        ({"activity": "busy"}, "'activity' trait .* expected any of \\['output', 'running', 'none'\\]"),
        ({"activity_interval_s": 0}, "'activity_interval_s' trait .* should not be less than 0.1"),
    ],
)
def test_bad_values_are_clear_errors(values, message):
    with pytest.raises(TraitError, match=message):
        settings(**values).manager_options()


def test_default_timeout_cannot_exceed_the_maximum():
    with pytest.raises(TraitError, match="default_timeout_ms .* exceeds max_timeout_ms"):
        settings(default_timeout_ms=9000, max_timeout_ms=5000).manager_options()


def test_help_all_documents_every_knob():
    out = subprocess.run([sys.executable, "-m", "unified_exec_kernel", "--help-all"], capture_output=True, text=True, timeout=60).stdout
    for knob in ["max_sessions", "default_timeout_ms", "max_timeout_ms", "scrollback_bytes", "env", "env_remove", "shell_integration", "check", "max_watch_ms", "shell", "activity", "activity_interval_s"]:
        assert f"--UnifiedExec.{knob}" in out


def test_a_config_file_configures_the_kernel(tmp_path):
    profile = tmp_path / "profile_default"
    profile.mkdir()
    (profile / "ipython_kernel_config.py").write_text(
        "c.UnifiedExec.env = {'GREETING': 'from-config-file'}\n"
        "c.UnifiedExec.max_timeout_ms = 2000\n"
        "c.UnifiedExec.shell = 'sh'\n"
        "c.UnifiedExec.env_remove = ['UEXEC_SECRET_*']\n"
    )
    os.environ.update(IPYTHONDIR=str(tmp_path), UEXEC_SECRET_TOKEN="hidden", UEXEC_PUBLIC="shown")
    try:
        kernel = Kernel("uexec")
    finally:
        for name in ("IPYTHONDIR", "UEXEC_SECRET_TOKEN", "UEXEC_PUBLIC"):
            del os.environ[name]
    try:
        assert "from-config-file" in kernel.run("%%uexec\nprintenv GREETING\n")
        assert "clamping to 2000ms" in kernel.run("%%uexec -t 3000\ntrue\n")
        assert kernel.run("%%uexec --shell\nps -o comm= -p $$\n").startswith("sh\n")
        assert kernel.run("%%uexec --shell\necho ${UEXEC_SECRET_TOKEN:-removed} $UEXEC_PUBLIC\n").startswith("removed shown\n")
    finally:
        kernel.shutdown()


def test_journals_go_in_a_private_directory_of_the_kernel_under_journal_dir(tmp_path):
    store = settings(journal_dir=str(tmp_path / "base"), journal_session_bytes=4096, journal_kernel_bytes=8192).journal_store("kernel-abc-42")
    try:
        assert re.fullmatch(re.escape(str(tmp_path / "base" / "uexec-journals-kernel-abc-42-")) + "[0-9a-f]{16}", store.directory)
        assert os.stat(store.directory).st_mode & 0o777 == 0o700
        assert (store.session_bytes, store.kernel_bytes, store.record_input, store.keep) == (4096, 8192, False, False)
    finally:
        store.close()
    assert not os.path.exists(store.directory)
    assert settings(journal=False).journal_store("kernel-abc-42") is None


def test_journal_caps_below_a_kilobyte_are_refused():
    with pytest.raises(TraitError):
        settings(journal_session_bytes=10).journal_session_bytes


def test_a_kernels_journals_live_in_the_runtime_dir_and_go_with_it(tmp_path):
    runtime = tmp_path / "runtime"
    kernel = Kernel("uexec", env={**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)})
    try:
        kernel.run("%%uexec --name j\necho journaled\n")
        assert "journaled" in kernel.run("%uexec_output j")  # on disk: a read waits for the journal writer
        (directory,) = [path for path in runtime.iterdir() if path.name.startswith("uexec-journals-")]
        assert f"-{kernel.pid}-" in directory.name and directory.stat().st_mode & 0o777 == 0o700
        assert {path.stat().st_mode & 0o777 for path in directory.iterdir()} == {0o600}
    finally:
        kernel.shutdown()
    assert not directory.exists()


OTHER_USER = "uexec-other"


def other_user() -> int:
    """The uid of a second Unix user (made if absent): a shared directory's other party."""
    if os.geteuid() != 0:
        pytest.skip("a second user's files can only be made as root")
    try:
        return pwd.getpwnam(OTHER_USER).pw_uid
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER], check=True, timeout=30)
        return pwd.getpwnam(OTHER_USER).pw_uid


@pytest.fixture
def shared():
    """A directory every user may write to, as /tmp (the test's own tmp_path is closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="uexec-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_shared_journal_dir_never_uses_what_another_user_made_there(shared):
    """With journal_dir=/tmp the name was predictable: another user's directory of that name was used
    (and its owner could move the files), and a symlink there made loading fail with a ValueError."""
    uid = other_user()
    as_other = ["runuser", "-u", OTHER_USER, "--"]
    subprocess.run([*as_other, "mkdir", "-m", "0777", str(shared / "uexec-journals-kernel-abc-42")], check=True, timeout=30)
    subprocess.run([*as_other, "ln", "-s", "/", str(shared / "uexec-journals-kernel-xyz-7")], check=True, timeout=30)
    for name in ("kernel-abc-42", "kernel-xyz-7"):
        store = settings(journal_dir=str(shared)).journal_store(name)
        try:
            info = os.lstat(store.directory)
            assert info.st_uid == os.geteuid() and info.st_mode & 0o7777 == 0o700 and not os.path.islink(store.directory)
            assert os.path.basename(store.directory).startswith(f"uexec-journals-{name}-")
        finally:
            store.close()
    assert os.stat(shared / "uexec-journals-kernel-abc-42").st_uid == uid  # theirs, untouched
    assert os.path.islink(shared / "uexec-journals-kernel-xyz-7")


def journal_dir_of(runtime) -> Path:
    (directory,) = [path for path in runtime.iterdir() if path.name.startswith("uexec-journals-")]
    return directory


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_kernel_that_is_killed_leaves_no_journals(tmp_path, how):
    """SIGTERM (the kernel's own handler) and SIGKILL (its guardian) used to leave everything the sessions printed."""
    runtime = tmp_path / "runtime"
    kernel = Kernel("uexec", env={**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)})
    try:
        kernel.run("%%uexec --name j\necho journaled; sleep 300 &\n")
        assert "journaled" in kernel.run("%uexec_output j")  # on disk: a read waits for the journal writer
        directory = journal_dir_of(runtime)
        assert any(path.name.startswith("session-") for path in directory.iterdir())
        os.kill(kernel.pid, how)
        deadline = time.monotonic() + 20
        while directory.exists():
            assert time.monotonic() < deadline, sorted(path.name for path in directory.iterdir())
            time.sleep(0.05)
    finally:
        kernel.shutdown()


def test_a_starting_kernel_sweeps_the_journals_of_kernels_that_are_gone_and_only_those(tmp_path):
    base = tmp_path / "base"
    dead = subprocess.run(
        [sys.executable, "-c", "from unified_exec_kernel.core.journal.lifetime import make_kernel_dir; print(make_kernel_dir(%r, 'kernel-dead')[0])" % str(base.mkdir() or base)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    open(os.path.join(dead, "session-0.cast"), "w").close()
    live = settings(journal_dir=str(base)).journal_store("kernel-live")
    try:
        assert not os.path.exists(dead)  # its kernel (the process above) is gone: swept
        newer = settings(journal_dir=str(base)).journal_store("kernel-newer")
        try:
            assert os.path.isdir(live.directory)  # a live kernel's is never swept
        finally:
            newer.close()
    finally:
        live.close()
    assert not os.path.exists(live.directory)


def test_a_kernel_killed_without_a_guardian_has_its_journals_swept_by_the_next_kernel(tmp_path):
    """Nobody was left to notice the first kernel's end: the next kernel's start does, and leaves live ones alone."""
    runtime = tmp_path / "runtime"
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text("c.UnifiedExec.guardian = False\n")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "IPYTHONDIR": str(tmp_path / "ipython")}
    first, live = Kernel("uexec", env=env), Kernel("uexec", env=env)
    try:
        first.run("%%uexec --name j\necho journaled\n")
        assert "journaled" in first.run("%uexec_output j")  # on disk: a read waits for the journal writer
        live_dirs = {path for path in runtime.iterdir() if path.name.startswith("uexec-journals-") and f"-{live.pid}-" in path.name}
        (dead,) = [path for path in runtime.iterdir() if path.name.startswith("uexec-journals-") and f"-{first.pid}-" in path.name]
        os.kill(first.pid, signal.SIGKILL)
        first.manager.provisioner.process.wait(10)  # gone; with no guardian nothing removes its journals yet
        assert dead.exists() and any(path.name.startswith("session-") for path in dead.iterdir())
        after = Kernel("uexec", env=env)
        try:
            assert "ok" in after.run("print('ok')")
            assert not dead.exists()
            assert live_dirs and all(path.exists() for path in live_dirs)  # a live kernel's is never swept
        finally:
            after.shutdown()
    finally:
        first.shutdown()
        live.shutdown()
