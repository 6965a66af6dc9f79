"""The MCP face: Codex's exec tools and the session list for any MCP client (`python -m unified_exec_kernel mcp`).

One more face over the same engine, beside notebook/ and live/: standalone
(its own manager on the server's loop, nothing of Jupyter) or attached to a
running uexec kernel (its sessions, over the kernel's direct socket), so an
agent and a person share sessions. It knows core and protocol, nothing else.
"""
