"""wirestream runtime: the error tree, codec support, and (later) engines and transports."""

from runtime.errors import ProtocolError

__all__ = ["ProtocolError"]
