"""Sans-I/O RSocket: one engine for RSocket 1.0 and ReactiveSocket 0.2.

``RSocketConnection(role="client" | "server", version="1.0" | "0.2", ...)`` drives the
generated codec and state machines of ``generated/rsocket/<version>``; see
``runtime.rsocket.connection`` for the engine and ``runtime.rsocket.events`` for what it
reports.
"""

from runtime.rsocket.connection import (
    ResumableSession,
    ResumeLookup,
    RSocketConnection,
    SetupPolicy,
)
from runtime.rsocket.errors import (
    FragmentOrderViolated,
    NoLease,
    ReassemblyLimitExceeded,
    ResumeNotAllowed,
    ResumePositionLost,
    StreamIdsExhausted,
    UnknownStream,
)
from runtime.rsocket.events import (
    ConnectionClosed,
    ConnectionDead,
    ConnectionEstablished,
    ConnectionRejected,
    ConnectionResumed,
    ErrorReceived,
    Event,
    InteractionModel,
    KeepaliveReceived,
    LeaseReceived,
    MetadataPushReceived,
    PayloadReceived,
    RequestNReceived,
    RequestReceived,
    SetupInfo,
    StreamAborted,
    StreamCanceled,
    StreamCompleted,
)
from runtime.rsocket.versions import V0_2, V1_0, VERSIONS, Version

__all__ = [
    "RSocketConnection",
    "ResumableSession",
    "ResumeLookup",
    "SetupPolicy",
    "Version",
    "VERSIONS",
    "V1_0",
    "V0_2",
    "InteractionModel",
    "SetupInfo",
    "Event",
    "ConnectionEstablished",
    "ConnectionRejected",
    "ConnectionResumed",
    "ConnectionClosed",
    "ConnectionDead",
    "RequestReceived",
    "PayloadReceived",
    "StreamCompleted",
    "ErrorReceived",
    "StreamCanceled",
    "RequestNReceived",
    "StreamAborted",
    "MetadataPushReceived",
    "LeaseReceived",
    "KeepaliveReceived",
    "NoLease",
    "StreamIdsExhausted",
    "UnknownStream",
    "ResumeNotAllowed",
    "ReassemblyLimitExceeded",
    "FragmentOrderViolated",
    "ResumePositionLost",
]
