"""BPMUX (bpmux/rel) sans-I/O engine: ``BpmuxConnection``, its events and errors.

The packets are ``wirestream.generated.bpmux.rel``; the state machines are the ``machines:``
section of ``idl/bpmux/rel.yaml`` (generated into ``wirestream.generated.bpmux.rel.machines``);
credit is ``wirestream.runtime.flow``.  See ``engine`` for the decisions taken where the seed
(shared/seeds/002) is silent.
"""

from wirestream.runtime.bpmux.engine import BpmuxConnection
from wirestream.runtime.bpmux.flows import Direction
from wirestream.runtime.bpmux.credit import CHARGE, Charge, OutboundCredit, charge_of
from wirestream.runtime.bpmux.errors import (
    ConnectionClosedError,
    CreditExceeded,
    GreedyNotEnabled,
    InvalidInnerId,
)
from wirestream.runtime.bpmux.events import (
    ConnectionDone,
    ConnectionEnded,
    Event,
    InnerAborted,
    InnerCancelled,
    InnerCreditReceived,
    InnerEnded,
    InnerErrored,
    InnerKind,
    InnerOpened,
    ItemReceived,
    MainCreditReceived,
    BpmuxMessageReceived,
    MinimumReceived,
    PeerClosed,
    RequestAborted,
    RequestCancelled,
    BpmuxRequestReceived,
    ResponseErrorReceived,
    ResponseReceived,
)

__all__ = [
    "BpmuxConnection",
    "CHARGE",
    "Charge",
    "ConnectionClosedError",
    "ConnectionDone",
    "ConnectionEnded",
    "CreditExceeded",
    "Direction",
    "Event",
    "GreedyNotEnabled",
    "InnerAborted",
    "InnerCancelled",
    "InnerCreditReceived",
    "InnerEnded",
    "InnerErrored",
    "InnerKind",
    "InnerOpened",
    "InvalidInnerId",
    "ItemReceived",
    "MainCreditReceived",
    "BpmuxMessageReceived",
    "MinimumReceived",
    "OutboundCredit",
    "PeerClosed",
    "RequestAborted",
    "RequestCancelled",
    "BpmuxRequestReceived",
    "ResponseErrorReceived",
    "ResponseReceived",
    "charge_of",
]

# The asyncio peer (runtime.bpmux.aio): connect / serve, every pattern, two-level credit.
from wirestream.runtime.bpmux.aio import (  # noqa: E402
    BpmuxApplicationError,
    BpmuxPeer,
    BpmuxServer,
    Duplex,
    Handler,
    ItemStream,
    ItemWriter,
    MessageStream,
    connect,
    serve,
)

__all__ += ["connect", "serve", "BpmuxPeer", "BpmuxServer", "Handler", "BpmuxApplicationError",
            "ItemStream", "ItemWriter", "Duplex", "MessageStream"]  # fmt: skip
