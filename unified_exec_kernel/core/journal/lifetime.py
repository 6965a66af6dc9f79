"""A kernel's journal directory from its making to its removal, by whoever notices the kernel's end first.

Journals are the kernel's, not the disk's: they go when the kernel process
ends, whichever way. Three parties may notice, and each calls
`remove_kernel_journals` on the directory: the kernel itself (the store
closes, or SIGTERM), its guardian (the kernel died hard: SIGKILL, out of
memory; guardian_process.py learns the directory as a `J` line) and the next
kernel's startup sweep (`sweep_dead_kernels`: there was no guardian, or it
died too). Removal is idempotent and keeps what must stay:

- `KEEP` in the directory (`c.UnifiedExec.journal_keep`): nothing is removed.
  (Kept sessions' journals are not here: their keeper has a directory of its
  own, made the same way, whose lock it holds for its life; see
  core/process/keeper.py.)

Made fresh (`make_kernel_dir`): `mkdir` of a name with 64 random bits, which
fails rather than reuse anything already there (another user's directory, a
symlink), then opened without following links and checked to be ours and
0700. A live kernel holds an exclusive `flock` on `OWNER` inside it for its
whole life; the sweep takes that lock without waiting, so it only ever
removes directories whose kernel is provably gone (the kernel's death
releases the lock; a live kernel's lock cannot be taken), only ours
(`st_uid`), and never follows a link.

Standard library only, and no asyncio: the guardian (`python -I -S`) loads
this module alone.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time

PREFIX = "uexec-journals-"
OWNER = ".owner"
KEEP = ".keep"
LEGACY_AFTER_S = 60.0
"""A directory without `OWNER` (made before owners existed) is swept only when this old and its pid is gone."""
_LEGACY_PID = r".*?-(\d+)(?:-\d+)?"


class JournalDirError(OSError):
    """The journal directory could not be made safely (the message says why, in one line)."""


def make_kernel_dir(base: str, kernel_id: str, *, keep: bool = False) -> tuple[str, int]:
    """A new directory of this kernel's under `base`, and the fd of its held `OWNER` lock (keep it open)."""
    import re  # here, not at the top: the guardian loads this module for `remove_kernel_journals` alone

    label = re.sub(r"[^A-Za-z0-9_.-]", "_", kernel_id)[:64] or f"pid{os.getpid()}"
    for _ in range(10):
        path = os.path.join(base, f"{PREFIX}{label}-{os.urandom(8).hex()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        break
    else:
        raise JournalDirError(f"cannot make a fresh journal directory in {base}")
    try:
        directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise JournalDirError(f"the journal directory {path} changed under us: {error.strerror or error}") from error
    try:
        info = os.fstat(directory)
        if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise JournalDirError(f"the journal directory {path} is not private to this user (uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o})")
        lock = os.open(OWNER, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=directory)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, b"%d\n" % os.getpid())
        if keep:
            os.close(os.open(KEEP, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=directory))
    finally:
        os.close(directory)
    return path, lock


def open_own_dir(base: str, label: str, *, keep: bool = False) -> tuple[str, int]:
    """This process's journal directory under `base` (made if missing, 0700), after sweeping the dead's.

    What a kernel and a standalone MCP server both do as they start: remove
    what processes that died hard left in `base`, then make a fresh directory
    and hold its lock (`make_kernel_dir`).
    """
    os.makedirs(base, mode=0o700, exist_ok=True)
    sweep_dead_kernels(base)
    return make_kernel_dir(base, label, keep=keep)


def remove_kernel_journals(directory: str) -> bool:
    """Remove a kernel's journals and then the directory; True if it is gone.

    Never follows a link: entries are unlinked by name inside the directory,
    and a directory that is a link, or not ours, is left alone.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return not os.path.lexists(directory)
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return False
        names = os.listdir(fd)
        if KEEP in names:
            return False
        left = False
        for name in names:
            if name == OWNER:
                continue
            try:
                os.unlink(name, dir_fd=fd)
            except IsADirectoryError:
                left = True  # not something we made: leave it
            except FileNotFoundError:
                pass
            except OSError:
                left = True
        if left:
            return False
        try:
            os.unlink(OWNER, dir_fd=fd)
        except FileNotFoundError:
            pass
    finally:
        os.close(fd)
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def sweep_dead_kernels(base: str) -> list[str]:
    """Remove the journals of this user's kernels under `base` that are provably gone; the directories removed."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    removed = []
    for entry in entries:
        try:
            if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            if _gone(entry) and remove_kernel_journals(entry.path):
                removed.append(entry.path)
        except OSError:
            continue  # another kernel swept it first
    return removed


def _gone(entry: os.DirEntry) -> bool:
    """Whether the kernel that made this directory has ended: its `OWNER` lock is free (we then hold it)."""
    try:
        lock = os.open(os.path.join(entry.path, OWNER), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return _legacy_gone(entry)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # a live kernel holds it
    finally:
        os.close(lock)  # (our lock goes with it; the directory's kernel is gone for good)
    return True


def _legacy_gone(entry: os.DirEntry) -> bool:
    """A directory of an older version (`uexec-journals-<name>-<pid>[-<n>]`, no owner lock): gone if old and its pid is."""
    if time.time() - entry.stat(follow_symlinks=False).st_mtime < LEGACY_AFTER_S:
        return False  # or a new kernel's, between its mkdir and its lock
    import re  # (as in make_kernel_dir)

    match = re.fullmatch(_LEGACY_PID, entry.name[len(PREFIX) :])
    return match is not None and not os.path.exists(f"/proc/{match.group(1)}")
