"""The connection half of the asyncio RabbitMQ stream ``Client``: one connection to a
broker, held open.

``RecoveringConnection`` runs the sans-I/O ``ClientConnection`` on a
``wirestream.runtime.aio`` transport with the shared ``EngineDriver`` (reads, coalesced
writes, the heartbeat timer), turns the engine's correlated events into awaitable
results (``request``), routes publisher and subscription events to their ``Producer`` /
``Consumer``, and, when the connection ends without our asking (EOF, reset,
``rabbitmqctl close_connection``, a broker gone silent past two heartbeat intervals),
re-dials with backoff and lets every producer and consumer restore itself on the new
connection. ``Client`` (``client``) adds the commands on top: streams, super streams,
offsets, producers and consumers.
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from wirestream.runtime.aio import EngineDriver, open_transport
from wirestream.runtime.capture import CaptureWriter, tap
from wirestream.runtime.errors import (
    ConnectionLost,
    HandshakeTimeout,
    ProtocolError,
    TransportTimeout,
)
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rabbitmq_stream.chunk import DEFAULT_MAX_BATCH_SIZE
from wirestream.runtime.rabbitmq_stream.engine import ClientConnection
from wirestream.runtime.rabbitmq_stream.errors import (
    AuthenticationError,
    MechanismNotOffered,
    UnsupportedByBroker,
    VirtualHostAccessFailure,
)
from wirestream.runtime.rabbitmq_stream.features import BrokerFeatures, Feature
from wirestream.runtime.rabbitmq_stream.events import (
    ChunkDelivered,
    ChunkFailed,
    ChunkSkipped,
    BrokerConnectionClosed,
    ConnectionFailed,
    ConnectionOpened,
    ConnectionTimedOut,
    ConsumerUpdateRequested,
    Event,
    MessagesReceived,
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublishErrored,
    RequestFailed,
    SaslChallenge,
    SubscriptionClosed,
)
from wirestream.runtime.rabbitmq_stream.aio.consumer import Consumer
from wirestream.runtime.rabbitmq_stream.aio.producer import Producer
from wirestream.runtime.rabbitmq_stream.aio.uri import StreamUri

__all__ = ["RecoveringConnection"]

E = TypeVar("E", bound=Event)

_PERMANENT: Final = (AuthenticationError, VirtualHostAccessFailure, MechanismNotOffered)
"""Failures a new attempt cannot fix: recovery stops on them."""


class RecoveringConnection:
    """One connection (restored by recovery when it drops), shared by its producers and
    consumers (the ``Link`` they see). Made by ``Client``; never on its own."""

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
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1 byte")
        self.max_batch_size = max_batch_size
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
            BrokerConnectionClosed: self._on_connection_end,
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
            max_batch_size=self.max_batch_size,
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
                    # The connection ended (the engine's _terminate; BrokerConnectionClosed /
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

    def _on_connection_end(self, event: BrokerConnectionClosed | ConnectionTimedOut) -> None:
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
            # What the CloseRequest leaves unanswered ends now; BrokerConnectionClosed
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
