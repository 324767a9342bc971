"""Errors of the RabbitMQ stream client engine, as leaves of ``wirestream.runtime.errors``.

- ``ResponseError``: the broker answered a request with a response code other than
  OK. One subclass per code a client reacts to differently (``StreamDoesNotExist``,
  ``AuthenticationError``, ...); ``ResponseError.from_code`` picks it. It is a
  ``RemoteProtocolError`` in the sense of "the failure comes from the peer": the engine
  does not raise it, it hands it to the application in an event.
- Connection-level violations by the broker (``UnknownCorrelationId``,
  ``MismatchedResponse``) are raised from ``receive_data``.
- Chunk problems (``ChunkCrcMismatch``, ``MalformedChunk`` and its compressed-batch
  cases, ``UnsupportedCompression``, ``BatchTooLarge``) concern one chunk of one
  subscription and travel in a ``ChunkFailed`` event.
- Local misuse (``MessageTooLarge``, ``PublishingIdNotIncreasing``,
  ``MechanismNotOffered``, ...) is raised from the command methods, and so is
  ``UnsupportedByBroker``: a 3.11+/3.13+ feature asked of a broker that lacks it.
"""

from __future__ import annotations

from typing import ClassVar

from wirestream.generated.rabbitmq_stream.v1 import ResponseCode
from wirestream.runtime.errors import LocalProtocolError, ProtocolError, RemoteProtocolError

__all__ = [
    "ResponseError",
    "StreamDoesNotExist",
    "SubscriptionIdAlreadyExists",
    "SubscriptionIdDoesNotExist",
    "StreamAlreadyExists",
    "StreamNotAvailable",
    "AuthenticationError",
    "VirtualHostAccessFailure",
    "AccessRefused",
    "PreconditionFailed",
    "PublisherDoesNotExist",
    "NoOffset",
    "UnknownCorrelationId",
    "MismatchedResponse",
    "ChunkError",
    "ChunkCrcMismatch",
    "MalformedChunk",
    "UnsupportedCompression",
    "BatchTooLarge",
    "CorruptCompressedBatch",
    "UncompressedSizeMismatch",
    "UncompressedSizeExceeded",
    "MessageTooLarge",
    "PublishingIdNotIncreasing",
    "MechanismNotOffered",
    "NoRouteFound",
    "UnsupportedByBroker",
    "response_code_name",
]


def response_code_name(code: int) -> str:
    """The name of a response code ('STREAM_DOES_NOT_EXIST'), or 'UNKNOWN_0x..'."""
    try:
        return ResponseCode(code).name
    except ValueError:
        return f"UNKNOWN_0x{code:04x}"


class ResponseError(RemoteProtocolError):
    """The broker refused a request: ``code`` (an int, ``ResponseCode`` when known) and
    ``name`` ('Stream Protocol Response Codes' table of PROTOCOL.adoc)."""

    CODES: ClassVar[tuple[int, ...]] = ()

    def __init__(self, code: int, message: str = "") -> None:
        self.code = code
        self.name = response_code_name(code)
        super().__init__(f"{self.name} (0x{code:02x}){': ' + message if message else ''}")

    @staticmethod
    def from_code(code: int, message: str = "") -> ResponseError:
        """The most precise subclass for ``code`` (``ResponseError`` itself when none)."""
        return _BY_CODE.get(code, ResponseError)(code, message)


class StreamDoesNotExist(ResponseError):
    CODES = (ResponseCode.STREAM_DOES_NOT_EXIST,)


class SubscriptionIdAlreadyExists(ResponseError):
    CODES = (ResponseCode.SUBSCRIPTION_ID_ALREADY_EXISTS,)


class SubscriptionIdDoesNotExist(ResponseError):
    CODES = (ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST,)


class StreamAlreadyExists(ResponseError):
    CODES = (ResponseCode.STREAM_ALREADY_EXISTS,)


class StreamNotAvailable(ResponseError):
    CODES = (ResponseCode.STREAM_NOT_AVAILABLE,)


class AuthenticationError(ResponseError):
    """SASL failed: mechanism not supported, bad credentials, SASL error, loopback only."""

    CODES = (
        ResponseCode.SASL_MECHANISM_NOT_SUPPORTED,
        ResponseCode.AUTHENTICATION_FAILURE,
        ResponseCode.SASL_ERROR,
        ResponseCode.SASL_AUTHENTICATION_FAILURE_LOOPBACK,
    )


class VirtualHostAccessFailure(ResponseError):
    CODES = (ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE,)


class AccessRefused(ResponseError):
    CODES = (ResponseCode.ACCESS_REFUSED,)


class PreconditionFailed(ResponseError):
    CODES = (ResponseCode.PRECONDITION_FAILED,)


class PublisherDoesNotExist(ResponseError):
    CODES = (ResponseCode.PUBLISHER_DOES_NOT_EXIST,)


class NoOffset(ResponseError):
    """QueryOffset: no offset is stored for that reference (0x13, 3.10.8)."""

    CODES = (ResponseCode.NO_OFFSET,)


_BY_CODE: dict[int, type[ResponseError]] = {
    int(code): cls
    for cls in (
        StreamDoesNotExist,
        SubscriptionIdAlreadyExists,
        SubscriptionIdDoesNotExist,
        StreamAlreadyExists,
        StreamNotAvailable,
        AuthenticationError,
        VirtualHostAccessFailure,
        AccessRefused,
        PreconditionFailed,
        PublisherDoesNotExist,
        NoOffset,
    )
    for code in cls.CODES
}


# --- connection-level violations (raised from receive_data) ----------------------------


class UnknownCorrelationId(RemoteProtocolError):
    """A response whose correlation id matches no outstanding request.

    PROTOCOL.adoc: 'CorrelationId => uint32 // correlation id to correlate the
    response'. The engine never gives up on a request by itself, so every response it
    can legitimately receive has an outstanding entry: anything else is the broker's
    mistake (decision: an error, not ignored).
    """


class MismatchedResponse(RemoteProtocolError):
    """A response whose correlation id belongs to a request of another command."""


# --- one chunk of one subscription (ChunkFailed event) --------------------------------


class ChunkError(ProtocolError):
    """A chunk that cannot be turned into messages."""


class ChunkCrcMismatch(ChunkError, RemoteProtocolError):
    """'ChunkCrc => int32': the CRC-32 of the entries is not the one in the header."""


class MalformedChunk(ChunkError, RemoteProtocolError):
    """Entries that contradict the chunk header or their own sizes."""


class UnsupportedCompression(ChunkError):
    """A sub-entry batch whose 3-bit compression type is none of the five codecs
    (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd: the Java client's ``Compression`` enum)."""


class CorruptCompressedBatch(MalformedChunk):
    """The codec refuses a compressed sub-entry batch: a bad header or magic, a checksum
    that does not match, a stream that ends inside a frame, bytes after its end."""


class UncompressedSizeMismatch(MalformedChunk):
    """A compressed sub-entry batch inflates to fewer bytes than its 'UncompressedLen'."""


class UncompressedSizeExceeded(MalformedChunk):
    """A compressed sub-entry batch would inflate to more bytes than its
    'UncompressedLen': decoding stops at the declared size (nothing beyond it is held)."""


class BatchTooLarge(ChunkError):
    """A sub-entry batch whose uncompressed size exceeds the engine's configured limit
    (memory stays bounded: nothing is inflated beyond it)."""


# --- local misuse (raised from command methods) ---------------------------------------


class MessageTooLarge(LocalProtocolError, ValueError):
    """A message that does not fit one frame of the negotiated frame_max."""


class PublishingIdNotIncreasing(LocalProtocolError, ValueError):
    """Publishing ids must increase strictly per publisher (deduplication)."""


class MechanismNotOffered(LocalProtocolError):
    """The broker does not offer the SASL mechanism the client was configured with."""


class NoRouteFound(LocalProtocolError, LookupError):
    """A super stream producer has no partition for a message: the broker's Route
    answered no stream for its routing key (no binding with that key). The Java client
    reports such a message as not confirmed with ``CODE_NO_ROUTE_FOUND``
    (SuperStreamProducer.java send); it is raised here at ``send``, where nothing waits
    for a confirm that cannot come."""

    def __init__(self, super_stream: str, routing_key: str) -> None:
        self.super_stream = super_stream
        self.routing_key = routing_key
        super().__init__(
            f"super stream {super_stream!r} has no partition bound to routing key "
            f"{routing_key!r} (Route answered no stream)"
        )


class UnsupportedByBroker(LocalProtocolError):
    """A feature newer than the broker (``runtime.rabbitmq_stream.features``): refused
    before anything is sent, since a broker that lacks the command closes the connection
    ('unknown frame') or, for subscription properties, silently ignores them (a 3.10
    broker would make a "single active" consumer an ordinary one). ``feature`` is the
    ``Feature`` value, ``since`` the first RabbitMQ version that has it."""

    def __init__(
        self,
        feature: str,
        description: str,
        broker_version: str | None,
        since: str,
        detail: str = "",
    ) -> None:
        self.feature = feature
        self.broker_version = broker_version
        self.since = since
        broker = f"RabbitMQ {broker_version}" if broker_version else "of unknown version"
        super().__init__(
            f"{description} needs RabbitMQ {since} or later; the broker is {broker}"
            + (f" ({detail})" if detail else "")
        )
