"""The engine: PTY sessions on an asyncio loop, with no Jupyter import.

Usable from any asyncio program (an agent harness, a script) as well as from
the kernel faces above it. Its public names are re-exported, with the rest of
the package's, by `unified_exec_kernel`.
"""
