"""`python -m unified_exec_kernel mcp`: choose the engine from the options, then serve over stdio."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from .stderr_log import StderrLines


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m unified_exec_kernel mcp",
        description="An MCP server (stdio): Codex's exec_command and write_stdin, list_sessions, read_output, kill_session, watch_output. "
        "Standalone by default; --kernel or --connection-file drives a running uexec kernel's sessions.",
    )
    parser.add_argument("--kernel", metavar="ID", help="attach to this running kernel (its id, or a unique prefix)")
    parser.add_argument("--server", metavar="URL", help="the Jupyter server that runs --kernel (default: found in the runtime directory)")
    parser.add_argument("--token", help="that server's token")
    parser.add_argument("--connection-file", metavar="F", help="attach to the kernel of this connection file")
    parser.add_argument("--carrier", choices=["auto", "direct", "comm"], default="auto", help="attached: the kernel's direct socket, its comm, or the socket where there is one (default)")
    parser.add_argument("--journal-dir", metavar="DIR", help="standalone: keep the sessions' journals here (default: a private directory in Jupyter's runtime directory, removed as the server ends)")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, handlers=[StderrLines()])
    from .server import serve

    if args.kernel or args.connection_file:
        from .attached import attached_engine

        try:
            make_engine = attached_engine(kernel=args.kernel, server=args.server, token=args.token, connection_file=args.connection_file, carrier=args.carrier)
        except (OSError, ValueError, LookupError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    else:
        from .standalone import StandaloneEngine

        def make_engine(notifier):
            return StandaloneEngine(notifier, journal_dir=args.journal_dir)

    try:
        asyncio.run(serve(make_engine))
    except KeyboardInterrupt:
        pass
    return 0
