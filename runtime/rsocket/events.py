"""What the RSocket engine reports to its application.

``RSocketConnection.receive_data``, ``handle_timer`` and ``close`` return lists of these.
Both sides of a connection can be requester and responder at once, so stream events
name the stream; ``RequestReceived`` opens a stream on which we respond, the other
stream events concern streams of either kind.

``PayloadReceived`` is the hot-path event (one per item of a stream): a plain slotted
dataclass, not frozen, because frozen dataclasses pay for ``object.__setattr__`` on
every construction.  The others are small frozen slotted dataclasses.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

__all__ = [
    "FrameReceived",
    "InteractionModel",
    "SetupInfo",
    "ConnectionEstablished",
    "ConnectionRejected",
    "ConnectionResumed",
    "ConnectionClosing",
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
    "ExtReceived",
    "LeaseReceived",
    "KeepaliveReceived",
    "Event",
]


class InteractionModel(enum.Enum):
    """The four interaction models; the value is the name of the IDL machine."""

    REQUEST_RESPONSE = "request_response"
    FIRE_AND_FORGET = "request_fnf"
    REQUEST_STREAM = "request_stream"
    REQUEST_CHANNEL = "request_channel"

    # Members are singletons: hash them by identity (Enum's own __hash__ is a Python-level
    # call, paid on every lookup of a model's machine or dispatch).
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class SetupInfo:
    """The contents of a SETUP frame (ours on the client, the peer's on the server).

    Times are in milliseconds, as on the wire.  ``resume_token`` is None when the R
    flag is clear.  MIME types are passed through uninterpreted ("The protocol
    implementation MUST NOT interpret the MIME type itself").
    """

    major_version: int
    minor_version: int
    keepalive_interval: int
    max_lifetime: int
    metadata_mime_type: str
    data_mime_type: str
    metadata: bytes | None
    data: bytes
    lease: bool
    resume_token: bytes | None
    strict: bool = False  # 0.2 only: the S flag


# --- connection ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectionEstablished:
    """SETUP was accepted: by us (server) or, as far as the client can tell, by the peer
    ("A client assumes a SETUP is accepted if it receives a response to a request, a
    LEASE frame, or if it sees a REQUEST type")."""

    setup: SetupInfo


@dataclass(frozen=True, slots=True)
class ConnectionRejected:
    """SETUP (or RESUME) was rejected with ``error_code``; the connection is closed.
    ``by_peer`` is False on the server that rejected it."""

    error_code: int
    message: bytes
    by_peer: bool


@dataclass(frozen=True, slots=True)
class ConnectionResumed:
    """RESUME_OK was sent (server) or received (client); the session continues.
    ``retransmitted`` frames were queued again from ``peer_position`` on."""

    peer_position: int
    retransmitted: int


@dataclass(frozen=True, slots=True)
class ConnectionClosing:
    """A graceful close began: ERROR[CONNECTION_CLOSE] was sent (``by_peer`` False) or
    received.  "Sender or Receiver of this frame MUST wait for outstanding streams to
    terminate before closing the connection. New requests MAY not be accepted": open
    streams run on, new requests are refused both ways, and ``ConnectionClosed`` (with
    ``graceful``) follows once the last stream has ended."""

    error_code: int
    message: bytes
    by_peer: bool


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The connection is over: ERROR on stream 0 (``error_code``), our ``close()``, or
    transport EOF (``error_code`` None).  ``resumable``: the session (streams, positions,
    retransmit buffer) is kept and ``RSocketConnection.resume`` may continue it.
    ``graceful``: a graceful close (``ConnectionClosing``) ended with its last stream; both
    sides now close the transport."""

    error_code: int | None
    message: bytes
    by_peer: bool
    resumable: bool = False
    graceful: bool = False


@dataclass(frozen=True, slots=True)
class ConnectionDead:
    """No KEEPALIVE from the peer for longer than the SETUP's Max Lifetime.  The engine
    does not close anything ("The decision to close a connection due to inactivity is
    the applications choice")."""

    silent_for: float


# --- streams -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """The peer opened a stream on which we are the responder (the whole request,
    reassembled).  ``initial_request_n``: the credit the requester granted us (0 when
    the model has none); ``complete``: a channel request that already completed the
    requester's side."""

    stream_id: int
    model: InteractionModel
    data: bytes
    metadata: bytes | None
    initial_request_n: int
    complete: bool = False


@dataclass(slots=True)
class PayloadReceived:
    """One item (PAYLOAD with N; in 0.2 RESPONSE with N or a channel's later
    REQUEST_CHANNEL).  ``complete``: it also ended the peer's side of the stream
    (a ``StreamCompleted`` follows)."""

    stream_id: int
    data: bytes
    metadata: bytes | None
    complete: bool


@dataclass(frozen=True, slots=True)
class StreamCompleted:
    """The peer completed its side of the stream (the stream is over unless it is a
    channel whose other half is still open)."""

    stream_id: int


@dataclass(frozen=True, slots=True)
class ErrorReceived:
    """The peer ended the stream with ERROR ``error_code``."""

    stream_id: int
    error_code: int
    message: bytes


@dataclass(frozen=True, slots=True)
class StreamCanceled:
    """The requester canceled a stream we respond on."""

    stream_id: int


@dataclass(frozen=True, slots=True)
class RequestNReceived:
    """The peer granted ``n`` more items on a stream we send on."""

    stream_id: int
    n: int


@dataclass(frozen=True, slots=True)
class StreamAborted:
    """The stream ended without the peer ending it: the peer broke a stream rule (we sent
    ERROR ``error_code`` or CANCEL, ``message`` says why), or the connection ended."""

    stream_id: int
    error_code: int
    message: str


# --- connection-level frames ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetadataPushReceived:
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ExtReceived:
    """An EXT frame of an extended type the application declared it understands
    (``RSocketConnection(extensions=...)``), on stream 0 or a stream's id; ``ignore``:
    its I flag.  EXT frames of other types never become events (I set: dropped; I
    clear: a connection error)."""

    stream_id: int
    extended_type: int
    data: bytes
    metadata: bytes | None
    ignore: bool


@dataclass(frozen=True, slots=True)
class FrameReceived:
    """A frame the protocol's own events do not cover, as decoded: what an engine
    handler of a frame added to the IDL reports (``idl/README.md``, "Adding a frame with
    behaviour").  The asyncio peer hands it to ``RSocketHandler.on_frame``."""

    frame: object


@dataclass(frozen=True, slots=True)
class LeaseReceived:
    """The peer's responder lets our requester send ``number_of_requests`` requests
    during ``ttl`` milliseconds from now."""

    ttl: int
    number_of_requests: int
    metadata: bytes | None


@dataclass(frozen=True, slots=True)
class KeepaliveReceived:
    """A KEEPALIVE; with ``respond`` the engine already queued the echo."""

    data: bytes
    respond: bool
    last_received_position: int


Event = Union[
    ConnectionEstablished,
    ConnectionRejected,
    ConnectionResumed,
    ConnectionClosing,
    ConnectionClosed,
    ConnectionDead,
    RequestReceived,
    PayloadReceived,
    StreamCompleted,
    ErrorReceived,
    StreamCanceled,
    RequestNReceived,
    StreamAborted,
    MetadataPushReceived,
    ExtReceived,
    LeaseReceived,
    KeepaliveReceived,
    FrameReceived,
]
