"""Sans-I/O engine of the Reactive Streams network protocol, version 0 (idl/rsio/v0.yaml).

``RsioConnection`` speaks the protocol on one connection, as client or server, in the
binary (LEB128) or MessagePack encoding; either side may subscribe to the other.  The
behaviour is the generated machines of ``wirestream.generated.rsio.v0.machines`` plus demand
(``wirestream.runtime.flow``), split reassembly and packing (``engine``).
"""

from wirestream.runtime.rsio.engine import PROTOCOL_VERSION, RsioConfig, RsioConnection
from wirestream.runtime.rsio.errors import (
    ElementSizeError,
    IncompleteSplitElement,
    PeerElementSizeError,
    ReassemblyLimitExceeded,
    TransportClosed,
    UnsupportedVersion,
)
from wirestream.runtime.rsio.events import (
    RsioConnectionClosed,
    DemandReceived,
    ElementReceived,
    Event,
    GoodbyeReceived,
    HelloReceived,
    SubscribeReceived,
    SubscriptionCancelled,
    SubscriptionCompleted,
    SubscriptionFailed,
    SubscriptionStarted,
)
from wirestream.runtime.rsio.framing import Encoding

__all__ = [
    "PROTOCOL_VERSION",
    "RsioConfig",
    "RsioConnection",
    "Encoding",
    "ElementSizeError",
    "IncompleteSplitElement",
    "PeerElementSizeError",
    "ReassemblyLimitExceeded",
    "TransportClosed",
    "UnsupportedVersion",
    "Event",
    "HelloReceived",
    "GoodbyeReceived",
    "RsioConnectionClosed",
    "SubscriptionStarted",
    "ElementReceived",
    "SubscriptionCompleted",
    "SubscriptionFailed",
    "SubscribeReceived",
    "DemandReceived",
    "SubscriptionCancelled",
]

# The asyncio peer (runtime.rsio.aio): connect / serve, both roles on one connection.
from wirestream.runtime.rsio.aio import (  # noqa: E402
    Publisher,
    PublisherFactory,
    RsioPeer,
    RsioServer,
    StreamError,
    connect,
    serve,
)

__all__ += ["connect", "serve", "RsioPeer", "RsioServer", "Publisher", "PublisherFactory",
            "StreamError"]  # fmt: skip
