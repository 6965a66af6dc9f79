"""The `unified_exec` protocol (docs/protocol.md): its messages, a live view's stream, one endpoint.

Both carriers, the kernel comm and the terminal widget, hand every incoming
message to an `Endpoint` and send what it answers; neither knows a message
type. The engine below knows sessions and bytes, not JSON.
"""

from .endpoint import Endpoint
from .messages import MAX_INPUT_BYTES, PROTOCOL_VERSION, BadRequest

__all__ = ["MAX_INPUT_BYTES", "PROTOCOL_VERSION", "BadRequest", "Endpoint"]
