"""Events the client engine returns from ``receive_data`` and ``handle_timer``.

Small frozen dataclasses with slots, one per thing the application must learn about.
Request outcomes carry the ``correlation_id`` the command method returned, so the
layer above can resolve the right waiter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wirestream.generated.rabbitmq_stream.v1 import Broker, StreamMetadata
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rabbitmq_stream.errors import ResponseError

__all__ = [
    "Event",
    "ConnectionOpened",
    "ConnectionFailed",
    "SaslChallenge",
    "BrokerConnectionClosed",
    "ConnectionTimedOut",
    "RequestFailed",
    "StreamCreated",
    "StreamDeleted",
    "MetadataReceived",
    "MetadataChanged",
    "RouteReceived",
    "PartitionsReceived",
    "SuperStreamCreated",
    "SuperStreamDeleted",
    "StreamStatsReceived",
    "PublisherDeclared",
    "PublisherDeleted",
    "PublisherClosed",
    "PublishConfirmed",
    "PublishErrored",
    "PublishAbandoned",
    "PublisherSequence",
    "Subscribed",
    "Unsubscribed",
    "SubscriptionClosed",
    "MessageReceived",
    "MessagesReceived",
    "ChunkDelivered",
    "ChunkFailed",
    "ChunkSkipped",
    "ConsumerUpdateRequested",
    "OffsetQueried",
]


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event."""


# --- connection -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectionOpened(Event):
    """The handshake is over: tuned values and what the broker told about itself."""

    frame_max: int  # negotiated; 0 = no limit
    heartbeat: int  # negotiated, seconds; 0 = none
    server_properties: dict[str, str | None]
    connection_properties: dict[str, str | None]  # e.g. advertised_host / advertised_port


@dataclass(frozen=True, slots=True)
class ConnectionFailed(Event):
    """The handshake failed (the broker closes the socket after such an answer)."""

    step: str  # "peer_properties", "sasl_handshake", "sasl_authenticate", "open"
    error: ProtocolError  # a ResponseError, or MechanismNotOffered


@dataclass(frozen=True, slots=True)
class SaslChallenge(Event):
    """The broker sent a SASL challenge: answer with ``answer_sasl_challenge``."""

    mechanism: str
    challenge: bytes


@dataclass(frozen=True, slots=True)
class BrokerConnectionClosed(Event):
    """The connection is over. ``by_peer``: the broker closed it (CloseRequest, or EOF
    when ``code`` is None)."""

    code: int | None
    reason: str
    by_peer: bool


@dataclass(frozen=True, slots=True)
class ConnectionTimedOut(Event):
    """Nothing came from the broker for two heartbeat intervals: consider it dead."""

    silence: float  # seconds without any byte from the broker


# --- requests -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestFailed(Event):
    """A request was refused (``error`` is a ``ResponseError``) or can no longer be
    answered (the connection closed: ``error`` is None)."""

    correlation_id: int
    command: str  # the request frame's name, e.g. "CreateRequest"
    error: ResponseError | None


@dataclass(frozen=True, slots=True)
class StreamCreated(Event):
    correlation_id: int
    stream: str


@dataclass(frozen=True, slots=True)
class StreamDeleted(Event):
    correlation_id: int
    stream: str


@dataclass(frozen=True, slots=True)
class MetadataReceived(Event):
    """'MetadataResponse => ... [Broker] [StreamMetadata]': a code per stream."""

    correlation_id: int
    brokers: tuple[Broker, ...]
    streams: tuple[StreamMetadata, ...]


@dataclass(frozen=True, slots=True)
class MetadataChanged(Event):
    """MetadataUpdate: something changed about ``stream`` (3.10.8: code 6, the stream
    is gone or its member is down). Publishers and subscriptions of the stream are
    closed (their own events follow)."""

    stream: str
    code: int


@dataclass(frozen=True, slots=True)
class RouteReceived(Event):
    """Route: the partition streams a routing key goes to (3.10.8 answers without the
    response bit; matched by correlation id all the same)."""

    correlation_id: int
    streams: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsReceived(Event):
    """Partitions: the partition streams of a super stream, in order."""

    correlation_id: int
    streams: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SuperStreamCreated(Event):
    """CreateSuperStream answered OK (RabbitMQ 3.13+)."""

    correlation_id: int
    name: str


@dataclass(frozen=True, slots=True)
class SuperStreamDeleted(Event):
    """DeleteSuperStream answered OK (RabbitMQ 3.13+)."""

    correlation_id: int
    name: str


@dataclass(frozen=True, slots=True)
class StreamStatsReceived(Event):
    """StreamStats (3.11+): the broker's statistics of the stream, e.g. first_chunk_id
    and committed_chunk_id (-1 when the stream has no chunk)."""

    correlation_id: int
    stream: str
    stats: dict[str, int]


# --- publishers -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PublisherDeclared(Event):
    correlation_id: int
    publisher_id: int


@dataclass(frozen=True, slots=True)
class PublisherDeleted(Event):
    correlation_id: int
    publisher_id: int


@dataclass(frozen=True, slots=True)
class PublisherClosed(Event):
    """The broker dropped the publisher (MetadataUpdate for its stream)."""

    publisher_id: int
    stream: str
    code: int


@dataclass(frozen=True, slots=True)
class PublishConfirmed(Event):
    """PublishConfirm: these outstanding publishing ids are stored (ids that were not
    outstanding are left out)."""

    publisher_id: int
    publishing_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PublishErrored(Event):
    """PublishError: this publishing id was not stored."""

    publisher_id: int
    publishing_id: int
    error: ResponseError


@dataclass(frozen=True, slots=True)
class PublishAbandoned(Event):
    """These publishing ids will get no outcome (publisher deleted or closed, connection
    closed): they may or may not be stored."""

    publisher_id: int
    publishing_ids: tuple[int, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class PublisherSequence(Event):
    """QueryPublisherSequence: the last publishing id stored for the reference (0 when
    none)."""

    correlation_id: int
    reference: str
    stream: str
    sequence: int


# --- subscriptions --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscribed(Event):
    correlation_id: int
    subscription_id: int


@dataclass(frozen=True, slots=True)
class Unsubscribed(Event):
    correlation_id: int
    subscription_id: int


@dataclass(frozen=True, slots=True)
class SubscriptionClosed(Event):
    """The broker dropped the subscription (MetadataUpdate for its stream, or a
    CreditResponse saying it does not know the id)."""

    subscription_id: int
    code: int


@dataclass(frozen=True, slots=True)
class MessageReceived(Event):
    """One message of a delivered chunk, with its offset in the stream."""

    subscription_id: int
    offset: int
    timestamp: int  # the chunk's, milliseconds since the epoch
    message: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class MessagesReceived(Event):
    """The messages of one delivered chunk at once, at offsets ``first_offset``,
    ``first_offset + 1``... (records before an asked offset already dropped). Sent
    instead of one ``MessageReceived`` per message when the engine is built with
    ``message_events=False``: the asyncio consumer's path, one event per chunk."""

    subscription_id: int
    first_offset: int
    timestamp: int  # the chunk's, milliseconds since the epoch
    messages: list[bytes] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ChunkDelivered(Event):
    """A chunk's messages were all returned (the ``MessageReceived`` events before this
    one). With a credit strategy, call ``chunk_consumed`` once the application is
    done with them."""

    subscription_id: int
    chunk_id: int  # the chunk's first offset
    num_records: int  # records in the chunk
    messages: int  # MessageReceived events emitted (records before the asked offset dropped)
    timestamp: int
    committed_chunk_id: int | None = None  # Deliver version 2 only


@dataclass(frozen=True, slots=True)
class ChunkFailed(Event):
    """A chunk could not be decoded (bad CRC, malformed entries, unsupported
    compression). Its credit is spent; it counts as consumed."""

    subscription_id: int
    chunk_id: int
    error: ProtocolError


@dataclass(frozen=True, slots=True)
class ChunkSkipped(Event):
    """A non-user chunk (tracking delta/snapshot): no messages; counts as consumed."""

    subscription_id: int
    chunk_id: int
    chunk_type: int


@dataclass(frozen=True, slots=True)
class ConsumerUpdateRequested(Event):
    """ConsumerUpdate (single active consumer, 3.11+): the subscription is now the
    active one of its group (``active``) or no longer is. Answer with
    ``answer_consumer_update(correlation_id, offset)``: the broker delivers nothing to
    the group until it has the answer."""

    correlation_id: int  # the broker's
    subscription_id: int
    active: bool


@dataclass(frozen=True, slots=True)
class OffsetQueried(Event):
    """QueryOffset: the offset stored for the reference."""

    correlation_id: int
    reference: str
    stream: str
    offset: int
