"""`python -m unified_exec_kernel`: run the uexec kernel, or install its kernelspec.

    python -m unified_exec_kernel -f CONNECTION_FILE      # what the kernelspec runs
    python -m unified_exec_kernel install [--user | --sys-prefix | --prefix P] [--name N] [--display-name D]
    python -m unified_exec_kernel record JOURNAL FILE [--v2]   # a kept journal (or any recording) as asciicast
    python -m unified_exec_kernel mcp [--kernel ID | --connection-file F]   # an MCP server (docs/agents.md)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "uexec"
DISPLAY_NAME = "Python 3 (uexec)"


def kernel_json(display_name: str = DISPLAY_NAME) -> dict:
    return {
        "argv": [sys.executable, "-m", "unified_exec_kernel", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": True},
    }


def install(argv: list[str]) -> str:
    parser = argparse.ArgumentParser(prog="python -m unified_exec_kernel install", description="Install the uexec kernelspec.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user")
    where.add_argument("--sys-prefix", action="store_true", help="install into sys.prefix (this environment)")
    where.add_argument("--prefix", help="install into this prefix")
    parser.add_argument("--name", default=KERNEL_NAME, help=f"kernelspec name (default {KERNEL_NAME})")
    parser.add_argument("--display-name", default=DISPLAY_NAME, help=f"display name (default {DISPLAY_NAME!r})")
    args = parser.parse_args(argv)

    from jupyter_client.kernelspec import KernelSpecManager

    prefix = sys.prefix if args.sys_prefix else args.prefix
    shipped = Path(__file__).parent / "resources"
    with tempfile.TemporaryDirectory() as folder:
        for logo in shipped.glob("logo-*"):
            shutil.copy(logo, folder)
        Path(folder, "kernel.json").write_text(json.dumps(kernel_json(args.display_name), indent=1))
        destination = KernelSpecManager().install_kernel_spec(folder, args.name, user=args.user, prefix=prefix)
    print(f"Installed kernelspec {args.name} in {destination}")
    return destination


def record(argv: list[str]) -> int:
    """Write a journal (c.UnifiedExec.journal_keep leaves them) or any asciicast recording as v3 or v2."""
    parser = argparse.ArgumentParser(prog="python -m unified_exec_kernel record", description=record.__doc__)
    parser.add_argument("journal", help="a session's journal (session-N.cast in a kernel's journal directory) or an asciicast file")
    parser.add_argument("file", help="where to write the recording (replaced if it exists)")
    parser.add_argument("--v2", action="store_true", help="write asciicast v2 (the asciinema CLI 2.x reads it) instead of v3")
    args = parser.parse_args(argv)

    from .core.journal import open_journal
    from .core.journal.export import export
    from .core.journal.reader import UNEXPECTED, unreadable

    version = 2 if args.v2 else 3
    try:
        with open_journal(args.journal, indexed=False) as journal:
            events = export(journal, args.file, version=version)
    except UNEXPECTED as error:  # JournalError among them: the file's problem, in one line
        print(f"error: {unreadable(args.journal, error)}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"error: cannot write {args.file}: {error.strerror or error}", file=sys.stderr)
        return 1
    print(f"wrote {args.file}: asciicast v{version}, {events:,} events")
    return 0


def main(argv: list[str]) -> None:
    if argv[:1] == ["install"]:
        install(argv[1:])
        return
    if argv[:1] == ["record"]:
        sys.exit(record(argv[1:]))
    if argv[:1] == ["mcp"]:
        from .mcp.main import main as mcp_main

        sys.exit(mcp_main(argv[1:]))
    from ipykernel.kernelapp import IPKernelApp

    from .jupyter.config import UnifiedExec
    from .kernel import UnifiedExecKernel

    class UnifiedExecKernelApp(IPKernelApp):
        # Listed so `--help-all` documents c.UnifiedExec.* beside the kernel's own options.
        classes = [*IPKernelApp.classes, UnifiedExecKernel, UnifiedExec]

    UnifiedExecKernelApp.launch_instance(argv=argv, kernel_class=UnifiedExecKernel)


if __name__ == "__main__":
    main(sys.argv[1:])
