"""One connection to a RabbitMQ stream broker over asyncio, and its recovery.

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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from wirestream.generated.rabbitmq_stream.v1 import ResponseCode
from wirestream.runtime.aio import EngineDriver, open_transport
from wirestream.runtime.capture import CaptureWriter, tap
from wirestream.runtime.errors import (
    ConnectionLost,
    HandshakeTimeout,
    ProtocolError,
    TransportTimeout,
)
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rabbitmq_stream.engine import (
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    DEFAULT_MAX_IN_FLIGHT,
    ClientConnection,
)
from wirestream.runtime.rabbitmq_stream.errors import (
    AuthenticationError,
    MechanismNotOffered,
    NoOffset,
    UnsupportedByBroker,
    StreamAlreadyExists,
    StreamDoesNotExist,
    VirtualHostAccessFailure,
)
from wirestream.runtime.rabbitmq_stream.features import BrokerFeatures, Feature
from wirestream.runtime.rabbitmq_stream.events import (
    ChunkDelivered,
    ChunkFailed,
    ChunkSkipped,
    ConnectionClosed,
    ConnectionFailed,
    ConnectionOpened,
    ConnectionTimedOut,
    ConsumerUpdateRequested,
    Event,
    MessagesReceived,
    MetadataReceived,
    OffsetQueried,
    PartitionsReceived,
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublisherSequence,
    PublishErrored,
    RequestFailed,
    RouteReceived,
    SaslChallenge,
    StreamStatsReceived,
    SubscriptionClosed,
    SuperStreamCreated,
    SuperStreamDeleted,
)
from wirestream.runtime.rabbitmq_stream.aio.consumer import Consumer, OffsetLike, PostFilter
from wirestream.runtime.rabbitmq_stream.aio.producer import Body, Compression, FilterValue, Producer
from wirestream.runtime.rabbitmq_stream.aio.super_consumer import SuperStreamConsumer
from wirestream.runtime.rabbitmq_stream.aio.super_producer import RoutingMode, SuperStreamProducer
from wirestream.runtime.rabbitmq_stream.aio.uri import DEFAULT_URI, StreamUri, parse_stream_uri

__all__ = ["Client", "connect", "Metadata"]

_SUPER_STREAM_RECIPE: Final = (
    "on this broker create one with its CLI: rabbitmq-streams add_super_stream NAME "
    "--partitions N (or --routing-keys k1,k2,...), remove it with rabbitmq-streams "
    "delete_super_stream NAME; or declare the exchange, the streams and their "
    "bindings with x-stream-partition-order over AMQP 0.9.1"
)

E = TypeVar("E", bound=Event)

_MAX_IDS: Final = 256  # PublisherId / SubscriptionId are uint8
_PERMANENT: Final = (AuthenticationError, VirtualHostAccessFailure, MechanismNotOffered)
"""Failures a new attempt cannot fix: recovery stops on them."""

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
    )
    await client._open()
    return client


class Client:
    """A connection to one broker. Create it with ``connect``; use it as ``async with``."""

    def __init__(
        self,
        uri: StreamUri,
        *,
        ssl: ssl_module.SSLContext | None,
        mechanism: str,
        connection_name: str | None,
        heartbeat: int,
        frame_max: int,
        timeout: float,
        reconnect: bool,
        recovery_timeout: float,
        capture: CaptureWriter | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self._capture = capture
        self.limits = limits or ConnectionLimits(handshake_timeout=timeout)
        if uri.tls and ssl is None:
            ssl = ssl_module.create_default_context()
        self.uri = uri
        self._ssl = ssl
        self._mechanism = mechanism
        self._properties = {"connection_name": connection_name} if connection_name else {}
        self._heartbeat = heartbeat
        self._frame_max = frame_max
        self.timeout = timeout
        self._reconnect = reconnect
        self._recovery_timeout = recovery_timeout
        self._loop = asyncio.get_running_loop()
        self.engine: ClientConnection = ClientConnection()  # replaced by _open
        self._driver: EngineDriver[Event] | None = None
        self._waiting: dict[int, asyncio.Future[Event]] = {}
        self._opened: asyncio.Future[ConnectionOpened] | None = None
        self._closed_by_us: asyncio.Future[None] | None = None
        self._ready = asyncio.Event()  # set while a connection is open
        self._gone = asyncio.Event()  # set once the client gave up or is closing
        self._closing = False
        self._ending: BaseException | None = None  # why the current connection ends
        self.error: BaseException | None = None  # why the client gave up (final)
        self._recovery: asyncio.Task[None] | None = None
        self.producers: dict[int, Producer] = {}
        self.consumers: dict[int, Consumer] = {}
        self.connections = 0  # how many connections were opened (1 + recoveries)
        self.server_properties: dict[str, str | None] = {}
        self.connection_properties: dict[str, str | None] = {}
        self._route: dict[type, Callable[[Any], None]] = {
            ConnectionOpened: self._on_opened,
            ConnectionFailed: self._on_failed,
            SaslChallenge: self._on_challenge,
            ConnectionClosed: self._on_connection_end,
            ConnectionTimedOut: self._on_connection_end,
            PublishConfirmed: self._to_producer,
            PublishErrored: self._to_producer,
            PublishAbandoned: self._to_producer,
            PublisherClosed: self._to_producer,
            MessagesReceived: self._to_consumer,
            ChunkDelivered: self._to_consumer,
            ChunkFailed: self._to_consumer,
            ChunkSkipped: self._to_consumer,
            SubscriptionClosed: self._to_consumer,
            ConsumerUpdateRequested: self._on_consumer_update,
        }

    # ------------------------------------------------------------------ state

    @property
    def is_open(self) -> bool:
        return self._ready.is_set()

    @property
    def will_recover(self) -> bool:
        """The connection dropped and will be restored (recovery on, not given up)."""
        return self._reconnect and not self._closing and self.error is None

    @property
    def closed(self) -> bool:
        return self._closing or self.error is not None

    @property
    def frame_max(self) -> int:
        """Negotiated (0: no limit)."""
        return self.engine.frame_max

    @property
    def heartbeat(self) -> int:
        """Negotiated seconds (0: none)."""
        return self.engine.heartbeat

    @property
    def broker_version(self) -> str | None:
        """The broker's ``version`` server property, e.g. "3.10.8"."""
        return self.server_properties.get("version")

    @property
    def features(self) -> BrokerFeatures:
        """What the broker of the current connection offers beyond 3.10 (its
        ExchangeCommandVersions answer, asked when its version is 3.11 or later)."""
        return self.engine.features

    def supports(self, feature: Feature | str) -> bool:
        """Whether the broker offers ``feature``: "stream_stats", "deliver_v2",
        "single_active_consumer", "filtering", "super_stream_management" (``Feature``).
        Using one it lacks raises ``UnsupportedByBroker`` before anything is sent."""
        return self.engine.features.supports(feature)

    def _on_consumer_update(self, event: ConsumerUpdateRequested) -> None:
        consumer = self.consumers.get(event.subscription_id)
        if consumer is not None:
            consumer.on_consumer_update(event)
        elif self.engine.is_open:
            # A consumer that is closing: the broker still waits for an answer.
            self.engine.answer_consumer_update(event.correlation_id, None)
            self.wakeup()

    def _to_producer(self, event: Any) -> None:
        producer = self.producers.get(event.publisher_id)
        if producer is not None:
            producer.on_event(event)

    def _to_consumer(self, event: Any) -> None:
        consumer = self.consumers.get(event.subscription_id)
        if consumer is not None:
            consumer.on_event(event)

    # ------------------------------------------------------------------ opening

    async def _open(self) -> None:
        """Dial, run the handshake, and wait for ``ConnectionOpened``."""
        transport = await open_transport(
            self.uri.transport_url, ssl=self._ssl, timeout=self.timeout
        )
        transport = tap(transport, self._capture, protocol="rabbitmq_stream/1", side="client")
        engine = ClientConnection(
            username=self.uri.username,
            password=self.uri.password,
            mechanism=self._mechanism,
            virtual_host=self.uri.virtual_host,
            frame_max=self._frame_max,
            heartbeat=self._heartbeat,
            client_properties=self._properties,
            message_events=False,  # one MessagesReceived per chunk (consumer.py)
        )
        self.engine = engine
        self._ending = None
        self._opened = self._loop.create_future()
        # The handshake's deadline is ours (below): the broker answers several steps.
        limits = self.limits
        driver = EngineDriver(engine, transport, self._on_events, self._on_driver_closed,
                              idle_timeout=limits.idle_timeout,
                              frame_timeout=limits.frame_timeout)  # fmt: skip
        self._driver = driver
        engine.initiate_connection()
        driver.start()
        handshake = limits.handshake_timeout
        deadline = asyncio.timeout(handshake)
        try:
            async with deadline:
                opened = await self._opened
        except TimeoutError:
            if not deadline.expired():  # a limit of the driver (a TransportTimeout)
                driver.abort()
                await driver.wait_closed()
                raise
            error = HandshakeTimeout(f"{self.uri}: the broker did not complete the handshake "
                                     f"(Tune, Open) within {handshake} s", limit=handshake)  # fmt: skip
            driver.abort(error)
            await driver.wait_closed()
            raise error from None
        except BaseException:
            driver.abort()
            await driver.wait_closed()
            raise
        self.server_properties = opened.server_properties
        self.connection_properties = opened.connection_properties
        self.connections += 1
        self._ready.set()

    def _on_opened(self, event: ConnectionOpened) -> None:
        if self._opened is not None and not self._opened.done():
            self._opened.set_result(event)

    def _on_failed(self, event: ConnectionFailed) -> None:
        # The broker answered a handshake step with an error, then closes the socket.
        if self._opened is not None and not self._opened.done():
            self._opened.set_exception(event.error)

    def _on_challenge(self, event: SaslChallenge) -> None:
        error = MechanismNotOffered(
            f"the broker sent a {event.mechanism} challenge; this client answers none"
        )
        if self._opened is not None and not self._opened.done():
            self._opened.set_exception(error)

    # ------------------------------------------------------------------ events

    def _on_events(self, events: list[Any]) -> None:
        route = self._route
        waiting = self._waiting
        for event in events:
            handler = route.get(type(event))
            if handler is not None:
                handler(event)
                continue
            cid = getattr(event, "correlation_id", None)
            future = waiting.pop(cid, None) if cid is not None else None
            if future is None or future.done():
                if isinstance(event, RequestFailed) and event.command.startswith("Sasl"):
                    self._dropped_during_sasl()
                continue
            if isinstance(event, RequestFailed):
                if event.error is None:
                    # The connection ended (the engine's _terminate; ConnectionClosed /
                    # ConnectionTimedOut or the transport's end follows): leave it to
                    # _on_driver_closed, which fails it with why the connection ended.
                    waiting[event.correlation_id] = future
                    continue
                future.set_exception(event.error)
            else:
                future.set_result(event)

    def _dropped_during_sasl(self) -> None:
        # The broker hung up instead of answering SaslAuthenticate: say so (RabbitMQ
        # 3.10.8 does it for EXTERNAL, a bug fixed upstream in rabbitmq-server#8488).
        self._ending = ConnectionLost(
            f"{self.uri}: the broker closed the connection during SASL {self._mechanism} "
            "authentication instead of answering it",
            reason="eof",
        )

    def _on_connection_end(self, event: ConnectionClosed | ConnectionTimedOut) -> None:
        """The engine is closed: by the broker (CloseRequest), by our CloseRequest's
        answer, by heartbeat silence, or because the transport ended."""
        if self._ending is not None:
            pass  # already explained (a drop during SASL)
        elif isinstance(event, ConnectionTimedOut):
            self._ending = ConnectionLost(
                f"{self.uri}: nothing heard from the broker for {event.silence:.1f} s",
                reason="heartbeat",
            )
        elif event.by_peer and event.code is not None:
            self._ending = ConnectionLost(
                f"{self.uri}: the broker closed the connection "
                f"(code {event.code}: {event.reason or 'no reason'})",
                reason="closed by broker",
            )
        if self._closed_by_us is not None and not self._closed_by_us.done():
            self._closed_by_us.set_result(None)
        driver = self._driver
        if driver is not None and not driver.closed:
            # Write what the engine queued (the CloseResponse), then drop the transport.
            self._loop.call_soon(driver.shutdown, self._ending)

    def _on_driver_closed(self, error: BaseException | None) -> None:
        self._ready.clear()
        error = self._ending or error
        lost = error or ConnectionLost(f"{self.uri}: connection closed", reason="closed")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(lost)
        self._waiting.clear()
        if self._opened is not None and not self._opened.done():
            self._opened.set_exception(lost)
            return
        if self._closing or self.connections == 0:
            return  # closing, or connect() failed: it raises, there is nothing to restore
        if self._reconnect and not isinstance(error, _PERMANENT):
            for party in self._parties():
                party._connection_lost(lost)
            if self._recovery is None or self._recovery.done():
                self._recovery = self._loop.create_task(self._recover(lost), name="stream recovery")
            # else: the running recovery sees the drop and dials again
        else:
            self._give_up(lost)

    def detach_producer(self, publisher_id: int) -> None:
        """The producer is over (closed or failed): its id is free again."""
        self.producers.pop(publisher_id, None)

    def detach_consumer(self, subscription_id: int) -> None:
        """The consumer is over (closed or failed): its id is free again."""
        self.consumers.pop(subscription_id, None)

    def _parties(self) -> list[Producer | Consumer]:
        return [*self.producers.values(), *self.consumers.values()]

    def _give_up(self, error: BaseException) -> None:
        self.error = error
        self._gone.set()  # wakes wait_ready
        for party in self._parties():
            party._fail(error)

    # ------------------------------------------------------------------ recovery

    async def _recover(self, cause: BaseException) -> None:
        """Re-dial with exponential backoff (50 ms doubling to 2 s) until a connection
        opens or ``recovery_timeout`` passes, then restore producers and consumers."""
        deadline = self._loop.time() + self._recovery_timeout
        delay = 0.05
        error: BaseException = cause
        while not self._closing:
            try:
                await self._open()
            except _PERMANENT as refused:
                self._give_up(refused)
                return
            except (ProtocolError, OSError) as failure:
                error = failure
                if self._loop.time() + delay > deadline:
                    self._give_up(error)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            try:
                for party in self._parties():
                    await party._recover()
            except (ProtocolError, OSError):
                pass  # dropped again while restoring
            if self._ready.is_set():
                return

    # ------------------------------------------------------------------ requests

    async def wait_ready(self) -> None:
        """Wait until a connection is open (at once unless recovering); raises when the
        client gave up or was closed."""
        while not self._ready.is_set():
            if self.error is not None:
                raise self.error
            if self._closing:
                raise ConnectionLost(f"{self.uri}: the client is closed", reason="closed")
            ready = self._loop.create_task(self._ready.wait())
            gone = self._loop.create_task(self._gone.wait())
            try:
                done, _ = await asyncio.wait(
                    (ready, gone),
                    timeout=self._recovery_timeout + self.timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                ready.cancel()
                gone.cancel()
            if not done:
                raise TransportTimeout(f"{self.uri}: not reconnected in time")

    def wakeup(self) -> None:
        """The engine queued frames: write them this loop iteration."""
        if self._driver is not None:
            self._driver.wakeup()

    def write_now(self) -> None:
        """Write what the engine queued at once (not at the end of the loop turn)."""
        if self._driver is not None:
            self._driver.write_now()

    def backed_up(self) -> bool:
        return self._driver is not None and self._driver.backed_up()

    async def flush(self) -> None:
        """Write what is queued; wait while the broker is not reading."""
        if self._driver is not None:
            await self._driver.flush()

    async def until_established(self, establish: Callable[[], Awaitable[None]]) -> None:
        """Run ``establish`` (declare a publisher, subscribe) on the open connection;
        when the connection drops meanwhile and recovery is on, wait for the next one
        (recovery re-establishes every registered producer and consumer, so
        ``establish`` must be a no-op once done on the current connection)."""
        while True:
            try:
                await establish()
                return
            except ConnectionLost:
                if not self._reconnect or self.closed:
                    raise
                await self.wait_ready()

    async def request(self, issue: Callable[[ClientConnection], int], expect: type[E]) -> E:
        """Queue a request on the open connection (``issue`` returns its correlation id)
        and wait for its answer; the broker's error code raises its ``ResponseError``."""
        await self.wait_ready()
        cid = issue(self.engine)
        future: asyncio.Future[Event] = self._loop.create_future()
        self._waiting[cid] = future
        self.wakeup()
        deadline = asyncio.timeout(self.timeout)
        try:
            async with deadline:
                event = await future
        except TimeoutError:
            self._waiting.pop(cid, None)
            if not deadline.expired():
                raise  # the connection ended with a limit's TransportTimeout
            raise TransportTimeout(f"{self.uri}: no answer within {self.timeout} s") from None
        assert isinstance(event, expect), event
        return event

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
          ``filter().postFilter``) keeps the messages the application wants."""
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

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Close producers (waiting for their confirms) and consumers, then the
        connection (CloseRequest, then the transport)."""
        if self._closing:
            await self._wait_driver()
            return
        if self._ready.is_set():
            for producer in list(self.producers.values()):
                try:
                    await producer.close()
                except ProtocolError:
                    pass  # its failure was already handed to whoever awaited it
        self._closing = True
        self._gone.set()  # wakes wait_ready
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()
            try:
                await self._recovery
            except asyncio.CancelledError:
                pass
        for party in self._parties():
            party._fail(ConnectionLost(f"{self.uri}: the client is closed", reason="closed"))
        driver = self._driver
        if driver is not None and not driver.closed and self.engine.is_open:
            self._closed_by_us = self._loop.create_future()
            # What the CloseRequest leaves unanswered ends now; ConnectionClosed
            # (_on_connection_end) follows with the broker's CloseResponse.
            self._on_events(self.engine.close())
            self.wakeup()
            try:
                async with asyncio.timeout(self.timeout):
                    await self._closed_by_us
            except (TimeoutError, ProtocolError):
                pass
        await self._wait_driver()

    async def _wait_driver(self) -> None:
        driver = self._driver
        if driver is not None:
            if not driver.closed:
                await driver.close()
            await driver.wait_closed()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
