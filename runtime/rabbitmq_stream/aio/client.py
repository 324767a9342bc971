"""One connection to a RabbitMQ stream broker over asyncio, and its recovery: ``Client``,
made by ``connect``. Its commands are here; the connection, its events and its recovery
are ``RecoveringConnection`` (``recovering_connection``), which ``Client`` extends.

``Client`` runs the sans-I/O ``ClientConnection`` on a ``wirestream.runtime.aio`` transport with
the shared ``EngineDriver`` (reads, coalesced writes, the heartbeat timer). It turns
the engine's correlated events into awaitable results, routes publisher and
subscription events to their ``Producer`` / ``Consumer``, and, when the connection
ends without our asking (EOF, reset, ``rabbitmqctl close_connection``, a broker gone
silent past two heartbeat intervals), re-dials with backoff and lets every producer
and consumer restore itself on the new connection (``Producer._recover``: declare,
query the sequence, re-send what is unconfirmed; ``Consumer._recover``: subscribe
after the last offset received). Requests in flight at the drop fail with
``ConnectionLost``; nothing a producer or consumer holds is lost.
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from wirestream.generated.rabbitmq_stream.v1 import ResponseCode
from wirestream.runtime.aio import EngineDriver
from wirestream.runtime.capture import CaptureWriter
from wirestream.runtime.errors import ConnectionLost, HandshakeTimeout, TransportTimeout
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rabbitmq_stream.chunk import DEFAULT_MAX_BATCH_SIZE
from wirestream.runtime.rabbitmq_stream.engine import (
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    DEFAULT_MAX_IN_FLIGHT,
    ClientConnection,
)
from wirestream.runtime.rabbitmq_stream.errors import (
    AuthenticationError,
    NoOffset,
    UnsupportedByBroker,
    StreamAlreadyExists,
    StreamDoesNotExist,
)
from wirestream.runtime.rabbitmq_stream.features import Feature
from wirestream.runtime.rabbitmq_stream.events import (
    Event,
    MetadataReceived,
    OffsetQueried,
    PartitionsReceived,
    PublisherSequence,
    RouteReceived,
    StreamStatsReceived,
    SuperStreamCreated,
    SuperStreamDeleted,
)
from wirestream.runtime.rabbitmq_stream.aio.recovering_connection import RecoveringConnection
from wirestream.runtime.rabbitmq_stream.aio.consumer import Consumer, OffsetLike, PostFilter
from wirestream.runtime.rabbitmq_stream.aio.producer import Body, Compression, FilterValue, Producer
from wirestream.runtime.rabbitmq_stream.aio.super_consumer import SuperStreamConsumer
from wirestream.runtime.rabbitmq_stream.aio.super_producer import RoutingMode, SuperStreamProducer
from wirestream.runtime.rabbitmq_stream.aio.uri import DEFAULT_URI, parse_stream_uri

__all__ = ["Client", "connect", "Metadata"]

_SUPER_STREAM_RECIPE: Final = (
    "on this broker create one with its CLI: rabbitmq-streams add_super_stream NAME "
    "--partitions N (or --routing-keys k1,k2,...), remove it with rabbitmq-streams "
    "delete_super_stream NAME; or declare the exchange, the streams and their "
    "bindings with x-stream-partition-order over AMQP 0.9.1"
)

E = TypeVar("E", bound=Event)

_MAX_IDS: Final = 256  # PublisherId / SubscriptionId are uint8


Metadata = MetadataReceived
"""``brokers`` and ``streams`` (each with its response code, leader and replicas)."""


async def connect(
    uri: str = DEFAULT_URI,
    *,
    ssl: ssl_module.SSLContext | None = None,
    mechanism: str = "PLAIN",
    connection_name: str | None = None,
    heartbeat: int = DEFAULT_HEARTBEAT,
    frame_max: int = DEFAULT_FRAME_MAX,
    timeout: float = 10.0,
    reconnect: bool = True,
    recovery_timeout: float = 60.0,
    capture: CaptureWriter | None = None,
    limits: ConnectionLimits | None = None,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
) -> Client:
    """Open a connection (PeerProperties, SASL, Tune, Open) and return the ``Client``.

    ``mechanism`` is PLAIN (user and password from the URI) or EXTERNAL (the identity of
    the TLS client certificate in ``ssl``). ``heartbeat`` and ``frame_max`` are what we
    propose; the connection runs on the minimum of both sides (0 = no limit/none).
    ``reconnect``: restore the connection, producers and consumers when it drops,
    trying for ``recovery_timeout`` seconds. A failed first connection raises at once
    (``AuthenticationError`` for wrong credentials, ``ConnectionLost`` when nobody
    listens, ``TransportTimeout``). ``capture`` records every frame (``wirestream.runtime.capture``,
    protocol ``rabbitmq_stream/1``; each recovered connection is a connection of its own).
    ``limits`` (``ConnectionLimits``): the broker must complete the handshake (Tune and
    Open answered) within ``handshake_timeout`` (``HandshakeTimeout``; without
    ``limits``: ``timeout``), and its frames obey ``idle_timeout`` and ``frame_timeout``.
    ``max_batch_size`` (bytes, 16 MiB by default): the largest uncompressed sub-entry
    batch the consumers accept (``BatchTooLarge`` beyond it; ``consumer(max_batch_size=)``
    sets one per consumer) and so the largest the producers write: a producer closes its
    batch before it grows past it, so what it publishes a consumer with the same limits
    can read.
    """
    client = Client(
        parse_stream_uri(uri),
        ssl=ssl,
        mechanism=mechanism,
        connection_name=connection_name,
        heartbeat=heartbeat,
        frame_max=frame_max,
        timeout=timeout,
        reconnect=reconnect,
        recovery_timeout=recovery_timeout,
        capture=capture,
        limits=limits,
        max_batch_size=max_batch_size,
    )
    await client._open()
    return client


class Client(RecoveringConnection):
    """A connection to one broker. Create it with ``connect``; use it as ``async with``.

    The connection, its events and its recovery are ``RecoveringConnection``'s; this
    class has the commands (streams, super streams, offsets, producers, consumers)."""

    # ------------------------------------------------------------------ commands

    async def create_stream(
        self, stream: str, arguments: Mapping[str, str | int] | None = None, *,
        exist_ok: bool = False,
    ) -> None:  # fmt: skip
        """Create ``stream``; ``arguments`` as the broker reads them, e.g.
        ``{"max-length-bytes": 10**9, "max-age": "24h", "stream-max-segment-size-bytes": ...}``."""
        args = {key: str(value) for key, value in (arguments or {}).items()}
        try:
            await self.request(lambda e: e.create_stream(stream, args), Event)
        except StreamAlreadyExists:
            if not exist_ok:
                raise

    async def delete_stream(self, stream: str, *, missing_ok: bool = False) -> None:
        try:
            await self.request(lambda e: e.delete_stream(stream), Event)
        except StreamDoesNotExist:
            if not missing_ok:
                raise

    async def metadata(self, *streams: str) -> Metadata:
        return await self.request(lambda e: e.metadata(streams), MetadataReceived)

    async def stream_exists(self, stream: str) -> bool:
        """True when the broker knows ``stream`` (Metadata answers a code per stream,
        in no particular order)."""
        for meta in (await self.metadata(stream)).streams:
            if meta.stream == stream:
                return meta.response_code == ResponseCode.OK
        return False

    async def route(self, routing_key: str, super_stream: str) -> tuple[str, ...]:
        """The partitions of ``super_stream`` bound with ``routing_key``."""
        event = await self.request(lambda e: e.route(routing_key, super_stream), RouteReceived)
        return event.streams

    async def partitions(self, super_stream: str) -> tuple[str, ...]:
        return (
            await self.request(lambda e: e.partitions(super_stream), PartitionsReceived)
        ).streams

    async def stream_stats(self, stream: str) -> dict[str, int]:
        """StreamStats (RabbitMQ 3.11+): e.g. ``{"first_chunk_id": 0,
        "committed_chunk_id": 4200}`` (-1: no chunk yet), whatever the broker sends.
        ``UnsupportedByBroker`` on an older broker (nothing is sent)."""
        event = await self.request(lambda e: e.stream_stats(stream), StreamStatsReceived)
        return event.stats

    async def _require_super_stream_management(self, command: str) -> None:
        """CreateSuperStream / DeleteSuperStream exist from RabbitMQ 3.13 (rabbit_stream.hrl
        at v3.13.0: 0x001d, 0x001e); an older broker answers an unknown command key by
        closing the connection (CloseRequest 13), so refuse before sending. As the Java
        client (Client.java superStreamManagementSupported), the broker's
        ExchangeCommandVersions answer decides (``features``); the refusal says how to
        make one on the older broker."""
        await self.wait_ready()
        try:
            self.engine.features.require(Feature.SUPER_STREAM_MANAGEMENT)
        except UnsupportedByBroker as missing:
            raise UnsupportedByBroker(
                missing.feature, f"{command} (super stream management)",
                missing.broker_version, missing.since, _SUPER_STREAM_RECIPE,
            ) from None  # fmt: skip

    async def create_super_stream(
        self,
        name: str,
        partitions: int | None = None,
        binding_keys: Sequence[str] | None = None,
        arguments: Mapping[str, str | int] | None = None,
        *,
        exist_ok: bool = False,
    ) -> tuple[str, ...]:
        """Create super stream ``name`` (RabbitMQ 3.13+, ``UnsupportedByBroker`` before):
        ``partitions`` streams ``name-0`` .. ``name-{N-1}`` bound with keys "0" .. "N-1",
        or one stream ``name-<key>`` per binding key (the Java client's naming,
        StreamStreamCreator.java create; 3 partitions when neither is given).
        ``arguments``: each partition stream's, as for ``create_stream``. Returns the
        partition streams, in partition order."""
        if partitions is not None and binding_keys is not None:
            raise ValueError("give partitions or binding_keys, not both")
        if binding_keys is not None:
            keys = list(binding_keys)
        else:
            count = 3 if partitions is None else partitions
            if count < 1:
                raise ValueError(f"partitions={count}: a super stream needs at least one")
            keys = [str(index) for index in range(count)]
        if not keys or len(set(keys)) != len(keys):
            raise ValueError(f"binding keys {keys!r}: at least one, each once")
        streams = [f"{name}-{key}" for key in keys]
        args = {key: str(value) for key, value in (arguments or {}).items()}
        await self._require_super_stream_management("CreateSuperStream")
        try:
            await self.request(
                lambda e: e.create_super_stream(name, streams, keys, args), SuperStreamCreated
            )
        except StreamAlreadyExists:
            if not exist_ok:
                raise
        return tuple(streams)

    async def delete_super_stream(self, name: str, *, missing_ok: bool = False) -> None:
        """Delete super stream ``name`` and its partitions (RabbitMQ 3.13+)."""
        await self._require_super_stream_management("DeleteSuperStream")
        try:
            await self.request(lambda e: e.delete_super_stream(name), SuperStreamDeleted)
        except StreamDoesNotExist:
            if not missing_ok:
                raise

    async def query_offset(self, reference: str, stream: str) -> int | None:
        """The offset stored for ``reference`` on ``stream``; None when none is."""
        try:
            return (
                await self.request(lambda e: e.query_offset(reference, stream), OffsetQueried)
            ).offset
        except NoOffset:
            return None

    def store_offset(self, reference: str, stream: str, offset: int) -> None:
        """StoreOffset ('Expects response? No'); written this loop iteration. Dropped
        while disconnected (the next store carries a newer offset anyway)."""
        if self._ready.is_set():
            self.engine.store_offset(reference, stream, offset)
            self.wakeup()

    async def query_publisher_sequence(self, reference: str, stream: str) -> int:
        """The last publishing id the broker stored for ``reference`` (0 when none)."""
        return (
            await self.request(
                lambda e: e.query_publisher_sequence(reference, stream), PublisherSequence
            )
        ).sequence

    # ------------------------------------------------------------------ producers, consumers

    def _free_id(self, taken: Mapping[int, object]) -> int:
        for candidate in range(_MAX_IDS):
            if candidate not in taken:
                return candidate
        raise ValueError(f"a connection has at most {_MAX_IDS} of them (the id is a uint8)")

    async def producer(
        self,
        stream: str,
        *,
        reference: str | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        raw: bool = False,
        sub_entry_size: int = 1,
        compression: Compression = "none",
        filter_value: FilterValue | None = None,
    ) -> Producer:
        """Declare a publisher on ``stream``. With a ``reference`` the broker
        deduplicates: publishing ids continue after the stored sequence and a message
        re-sent after a reconnect is stored once. ``raw``: bodies go as they are, not
        wrapped in an AMQP 1.0 message. ``sub_entry_size`` > 1 (the Java client's
        ``subEntrySize``): ``send`` / ``send_many`` group up to that many messages in one
        sub-entry batch compressed with ``compression`` ("none", "gzip", "snappy",
        "lz4", "zstd"; the Java client's codecs byte for byte), each message still
        confirmed with its own publishing id. ``max_in_flight`` then counts batches.

        ``filter_value`` (stream filtering, RabbitMQ 3.13+): called with each body
        given to ``send``/``send_many``, returns the message's filter value (or None);
        every message then goes in Publish version 2 (Java's
        ``ProducerBuilder.filterValue``; not with sub-entry batching, as in Java).
        ``UnsupportedByBroker`` at once on an older broker."""
        if filter_value is not None:
            await self.wait_ready()
            self.engine.features.require(Feature.FILTERING)
        publisher_id = self._free_id(self.producers)
        producer = Producer(self, publisher_id, stream, reference, max_in_flight, raw,
                            sub_entry_size, compression, filter_value)  # fmt: skip
        self.producers[publisher_id] = producer
        try:
            await self.until_established(producer._establish)
        except BaseException:
            del self.producers[publisher_id]
            raise
        return producer

    async def consumer(
        self,
        stream: str,
        offset: OffsetLike = "next",
        *,
        reference: str | None = None,
        credit: int = 10,
        max_buffered: int = 10_000,
        raw: bool = False,
        until: int | None = None,
        name: str | None = None,
        single_active: bool = False,
        super_stream: str | None = None,
        filter: Sequence[str] | None = None,
        match_unfiltered: bool = False,
        post_filter: PostFilter | None = None,
        max_batch_size: int | None = None,
    ) -> Consumer:
        """Subscribe to ``stream`` from ``offset`` ("first", "last", "next", an offset,
        a ``datetime`` or an ``OffsetSpec...``). ``credit`` chunks are in flight at
        most; more are granted as chunks arrive while fewer than ``max_buffered``
        messages wait for the application. ``reference`` names the consumer for
        ``store_offset``. ``until``: the offset after the last one the reader wants (a
        range read): credit stops once the chunks on their way will reach it, so the
        subscription does not pull the stream beyond it (the broker sends whole chunks,
        so a few records past it still come).

        Newer brokers (each raises ``UnsupportedByBroker`` at once where missing):

        - ``single_active`` (3.11+): one consumer of the group (stream, ``name``) gets
          messages at a time; ``name`` is Java's word for ``reference`` (give either).
          When the broker makes this one active it resumes after the offset stored for
          the name (``store_offset``), else at ``offset`` (Java's default); an inactive
          one gets nothing (``Consumer.is_active``). ``super_stream``: the super stream
          this partition belongs to (sent as the ``super-stream`` property).
        - ``filter`` (3.13+): only chunks holding messages with one of these filter
          values (the producer's ``filter_value``) are sent, plus those with unfiltered
          messages when ``match_unfiltered``. The broker decides per chunk (bloom
          filter), so other messages come too: ``post_filter`` (required, as Java's
          ``filter().postFilter``) keeps the messages the application wants.

        ``max_batch_size``: the largest uncompressed sub-entry batch this consumer
        accepts (a larger one fails the subscription with ``BatchTooLarge``: its size is
        what decompressing it would allocate); None: ``connect(max_batch_size=)``."""
        if name is not None and reference is not None and name != reference:
            raise ValueError("name and reference are the same thing: give one")
        reference = reference if reference is not None else name
        if single_active or filter is not None:
            await self.wait_ready()
            if single_active:
                self.engine.features.require(Feature.SINGLE_ACTIVE_CONSUMER)
            if filter is not None:
                self.engine.features.require(Feature.FILTERING)
        return await self.attach_consumer(
            lambda subscription_id: Consumer(
                self,
                subscription_id,
                stream,
                offset,
                reference,
                credit,
                max_buffered,
                raw,
                until=until,
                single_active=single_active,
                super_stream=super_stream,
                filter_values=filter,
                match_unfiltered=match_unfiltered,
                post_filter=post_filter,
                max_batch_size=max_batch_size,
            )
        )

    async def attach_consumer(self, build: Callable[[int], Consumer]) -> Consumer:
        """Give the consumer ``build`` makes a free subscription id, and subscribe."""
        subscription_id = self._free_id(self.consumers)
        consumer = build(subscription_id)
        self.consumers[subscription_id] = consumer
        try:
            await self.until_established(consumer._establish)
        except BaseException:
            del self.consumers[subscription_id]
            raise
        return consumer

    # ------------------------------------------------------------------ super streams

    async def super_stream_producer(
        self,
        super_stream: str,
        *,
        routing: Callable[[Body], str],
        routing_mode: RoutingMode = "hash",
        reference: str | None = None,
        **producer_options: Any,
    ) -> SuperStreamProducer:
        """A producer on ``super_stream`` (its partitions asked once, now): ``routing``
        gives each message's routing key; ``"hash"`` routing picks the partition as the
        Java client does (MurmurHash3, seed 104729), ``"key"`` routing asks the broker
        (Route, cached per key). One producer per partition, each with ``reference``
        (deduplication per partition) and ``producer_options`` (``max_in_flight``,
        ``raw``, ... as for ``producer``)."""
        producer = SuperStreamProducer(
            self, super_stream, routing, routing_mode, reference, producer_options
        )
        await producer._start()
        return producer

    async def super_stream_consumer(
        self,
        super_stream: str,
        offset: OffsetLike = "next",
        *,
        reference: str | None = None,
        credit: int = 10,
        max_buffered: int = 10_000,
        raw: bool = False,
    ) -> SuperStreamConsumer:
        """Subscribe to every partition of ``super_stream`` from ``offset``; with a
        ``reference``, each partition from after the offset stored for it instead (when
        one is). ``credit`` and ``max_buffered`` are per partition."""
        consumer = SuperStreamConsumer(
            self, super_stream, offset, reference, credit, max_buffered, raw
        )
        await consumer._start()
        return consumer

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
