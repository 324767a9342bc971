"""The asyncio layer: transports, one driver loop, and the backpressured stream API.

Everything protocol-specific stays in the sans-I/O engines; a protocol's asyncio peer
(``wirestream.runtime.rsocket.aio``, ``wirestream.runtime.rsio.aio``, ``wirestream.runtime.bpmux.aio``) is an
``EngineDriver`` plus the mapping from engine events to futures and streams.
"""

from wirestream.runtime.aio.driver import Engine, EngineDriver
from wirestream.runtime.aio.endpoints import (
    Endpoint,
    Listener,
    OnTransport,
    listen,
    open_transport,
    parse_url,
)
from wirestream.runtime.aio.streams import (
    InboundSink,
    InboundStream,
    OutboundDemand,
    StreamCancelled,
    pump,
)
from wirestream.runtime.aio.transport import (
    HIGH_WATER,
    MemoryTransport,
    StreamTransport,
    Transport,
    WebSocketTransport,
    memory_pair,
)

__all__ = [
    "Transport",
    "StreamTransport",
    "WebSocketTransport",
    "MemoryTransport",
    "memory_pair",
    "HIGH_WATER",
    "Endpoint",
    "parse_url",
    "open_transport",
    "listen",
    "Listener",
    "OnTransport",
    "Engine",
    "EngineDriver",
    "InboundStream",
    "InboundSink",
    "OutboundDemand",
    "StreamCancelled",
    "pump",
]
