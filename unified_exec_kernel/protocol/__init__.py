"""The `unified_exec` protocol (docs/protocol.md): its messages, a live view's stream, one endpoint.

Both carriers, the kernel comm and the terminal widget, hand every incoming
message to an `Endpoint` (endpoint.py) and send what it answers; neither
knows a message type. The engine below knows sessions and bytes, not JSON.

Nothing is imported here: a kernel loads `address` at start, and the
endpoint and its messages come with the first page or agent that talks to
it, not with every kernel a hub runs (benchmarks/bench_costs.py).
"""
