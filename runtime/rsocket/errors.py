"""RSocket-specific errors, leaves of the one tree in ``wirestream.runtime.errors``.

State-machine refusals are ``wirestream.runtime.errors.IllegalSend`` / ``UnexpectedFrame`` and
request-n violations are the ``wirestream.runtime.flow`` errors; ``ReassemblyLimitExceeded``
is the shared class, re-exported here; these cover the rest.
"""

from __future__ import annotations

from wirestream.runtime import errors
from wirestream.runtime.errors import (
    DecodeError,
    InvalidString,
    LocalProtocolError,
    ReassemblyLimitExceeded,
    RemoteProtocolError,
    TrailingBytes,
    Truncated,
)

__all__ = [
    "NoLease",
    "LeaseQueueFull",
    "LeaseDeadlineExceeded",
    "NoNewRequests",
    "UnsupportedExtension",
    "StreamIdsExhausted",
    "UnknownStream",
    "ResumeNotAllowed",
    "ReassemblyLimitExceeded",
    "FragmentOrderViolated",
    "ResumePositionLost",
    "MalformedMetadata",
    "MetadataTruncated",
    "MetadataTrailingBytes",
    "InvalidMimeTypeName",
    "InvalidMetadataText",
]


class NoLease(LocalProtocolError):
    """The requester holds no valid LEASE ("The Requester MUST NOT send more than Number
    of Requests specified in the LEASE frame within the Time-To-Live value")."""


class LeaseQueueFull(NoLease):
    """No LEASE allows the request now and the bounded queue of requests waiting for one
    (``LeaseQueue.max_pending``) is full."""


class LeaseDeadlineExceeded(NoLease):
    """The request waited for a LEASE that allows it for its whole deadline
    (``LeaseQueue.deadline``) and none came: it was never sent."""


class NoNewRequests(LocalProtocolError):
    """A new request while the connection closes gracefully (ERROR[CONNECTION_CLOSE] sent
    or received): "Sender or Receiver of this frame MUST wait for outstanding streams to
    terminate before closing the connection. New requests MAY not be accepted."  The
    requests already open run to their end."""


class UnsupportedExtension(RemoteProtocolError):
    """An EXT frame whose extended type we do not understand, with the I flag clear:
    "An implementation MAY send an ERROR[CONNECTION_ERROR] frame and close the underlying
    transport connection on reception of a frame that it does not understand with this
    bit not set."  (With I set it is dropped.)"""


class StreamIdsExhausted(LocalProtocolError):
    """Every stream id of our parity is in use, or (without re-use) the 2^31-1 space is
    spent: "a new connection MUST be established"."""


class UnknownStream(LocalProtocolError, KeyError):
    """A command names a stream that is not open (never opened, or terminated)."""


class ResumeNotAllowed(LocalProtocolError):
    """The session cannot be resumed: resumption was not negotiated, or the server said
    never to retry (1.0 REJECTED_RESUME, 0.2 CONNECTION_ERROR_NO_RETRY)."""


class FragmentOrderViolated(RemoteProtocolError):
    """Metadata arrived after data had started ("the Metadata MUST be transmitted
    completely before the Data")."""


class ResumePositionLost(RemoteProtocolError):
    """RESUME_OK names a position this side no longer retains (or never sent)."""


# --- metadata extensions (runtime.rsocket.metadata) -----------------------------------


class MalformedMetadata(DecodeError):
    """Metadata declared as one of the RSocket extensions (composite, routing,
    authentication, per-stream data MIME types) whose bytes break that extension's
    layout.  The frame that carried it was well formed; the leaves say what is wrong."""


class MetadataTruncated(MalformedMetadata, Truncated):
    """A length field (or the field itself) runs past the end of the metadata: a
    composite entry's 24-bit Metadata Length or content, a MIME type name shorter than its
    length byte, a routing tag, a simple-auth username."""


class MetadataTrailingBytes(MalformedMetadata, TrailingBytes):
    """Bytes follow a value that the extension defines as the whole payload (the one
    MIME type of ``message/x.rsocket.mime-type.v0``)."""


class InvalidMimeTypeName(MalformedMetadata, InvalidString):
    """A MIME type or authentication type name is not US-ASCII, or is null terminated
    ("This SHOULD be a US-ASCII string ... The string MUST NOT be null terminated")."""


class InvalidMetadataText(MalformedMetadata, InvalidString):
    """A routing tag, username, password or bearer token is not UTF-8, or is null
    terminated ("UTF-8 encoded ... The string MUST NOT be null terminated")."""


# --- what the asyncio peer (runtime.rsocket.peer) raises to applications ------------


class RSocketStreamError(errors.StreamError):
    """The peer ended a stream with ERROR ``error_code`` (APPLICATION_ERROR, REJECTED,
    CANCELED, INVALID ...), or the engine ended it because the peer broke a stream rule.
    ``str()`` is the peer's message.  The shared ``wirestream.runtime.errors.StreamError``
    with RSocket's error code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class ApplicationError(RSocketStreamError):
    """ERROR[APPLICATION_ERROR]: the peer's handler failed.  Raise it in a handler to send
    one with your message (any other exception is sent as one with ``str(exception)``)."""

    def __init__(self, message: str, error_code: int = 0x201) -> None:
        super().__init__(error_code, message)


class SetupRejected(RemoteProtocolError):
    """The server rejected our SETUP or RESUME (``error_code``: INVALID_SETUP,
    UNSUPPORTED_SETUP, REJECTED_SETUP, REJECTED_RESUME)."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
