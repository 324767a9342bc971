"""wirestream runtime: the error tree, codec support, and (later) engines and transports."""

from wirestream.runtime.errors import ProtocolError

__all__ = ["ProtocolError"]
