"""The asyncio peer of the Reactive Streams network protocol (seeds 000/001).

One ``RsioPeer`` per connection: an ``RsioConnection`` engine run by
``wirestream.runtime.aio.EngineDriver``, plus the mapping from engine events to streams.  Both roles
live on every connection ("The protocol is fully bidirectional; either party can act in
the --> direction"): a peer subscribes to the other side's publishers *and* serves its
own.

    async with await rsio.connect("tcp://127.0.0.1:7878", publishers={...}) as peer:
        async for element in peer.subscribe("ticks", limit_rate=256):
            ...
    server = await rsio.serve("tcp://127.0.0.1:0", publishers={"ticks": ticks})

``connect`` is a coroutine returning a connected peer (the hellos exchanged), which is
an async context manager: leaving it says goodbye.

Subscribing: ``peer.subscribe(name)`` is an ``InboundStream`` of ``bytes`` whose demand
follows consumption (``limit_rate`` in the subscribe message, then replenished like
rsocket-java's ``limitRate``); ``break``/``aclose()``/task cancel sends cancel.  How a
stream can end, as seen by ``async for``:

- onComplete: the loop ends;
- onError (also a rejected subscribe: unknown publisher): ``StreamError``;
- the connection ends: ``ConnectionLost`` (EOF, reset, the peer's goodbye, our close);
- the publisher broke a rule: the engine's ``RemoteProtocolError`` (``PeerExceededDemand``,
  ``ReassemblyLimitExceeded``, ...); bytes that are not the protocol: ``DecodeError``
  (the connection is closed with goodbye, every open stream gets the error);
- a hello with another version: ``UnsupportedVersion`` (raised by ``connect``).

Publishing: ``publishers`` maps a name to ``factory(args) -> AsyncIterable[bytes]`` (or a
``Publisher`` that also declares a fixed element size).  The seed leaves the publisher
string to the recipient; here it is ``name`` or ``name?args``, and ``args`` (``""`` when
absent) goes to the factory.  Each subscription runs the factory's iterable under
``wirestream.runtime.aio.pump``: the next element is pulled only when the subscriber's demand (the
engine's window) allows one more; the iterable is closed when the subscriber cancels or
the connection ends; what it raises becomes onError.

Publishing policy (per peer):

- what the pumps produce in one loop turn is handed to the engine together (one
  ``offer`` per stream and turn, at most ``max_pack`` elements);
- ``packed``: on a fixed-size stream (``Publisher(element_size=N)``) such a batch goes
  out as onNextPacked messages ("Packing does not help if new data becomes available
  very frequently and must not be delayed": nothing waits for a pack to fill; only what
  is ready in the same turn, within the subscriber's demand, is packed).  Off, or on a
  variable-size stream: one onNext per element;
- ``split_above``: elements longer than this go out as onNextPart* + onNextLastPart ("A
  very large onNext message might significantly delay messages from other streams");
  None: never split.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl as ssl_module
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Literal

from wirestream.runtime.aio import (
    InboundSink,
    InboundStream,
    Listener,
    OutboundDemand,
    StreamCancelled,
    Transport,
    EngineDriver,
    listen,
    open_transport,
    pump,
)
from wirestream.runtime.capture import CaptureWriter, tap, tap_accepted
from wirestream.runtime.flow import LONG_MAX
from wirestream.runtime.errors import (
    ConnectionLost,
    LocalProtocolError,
    ProtocolError,
    HandshakeTimeout,
)
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rsio.engine import RsioConfig, RsioConnection
from wirestream.runtime.rsio.errors import ElementSizeError, StreamError, TransportClosed
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
    "connect",
    "serve",
    "RsioPeer",
    "RsioServer",
    "Publisher",
    "PublisherFactory",
    "StreamError",
    "DEFAULT_LIMIT_RATE",
    "DEFAULT_SPLIT_ABOVE",
]

_log = logging.getLogger(__name__)

PublisherFactory = Callable[[str], AsyncIterable[bytes]]
"""``factory(args)``: the elements of one subscription (a new iterable per subscribe)."""

DEFAULT_LIMIT_RATE: Final = 256
DEFAULT_LIMITS: Final = ConnectionLimits()
DEFAULT_SPLIT_ABOVE: Final = 64 * 1024
"""Elements above this are split by default (a 16 MiB onNext would hold up every other
stream of the connection for as long as it takes to send)."""


@dataclass(frozen=True, slots=True)
class Publisher:
    """A named publisher: ``factory(args)`` per subscription; ``element_size`` > 0
    declares that every element has exactly that many bytes (subscribed.elementSize,
    which allows onNextPacked)."""

    factory: PublisherFactory
    element_size: int = 0

    def __post_init__(self) -> None:
        if self.element_size < 0:
            raise ValueError("element_size must not be negative")


def _publisher(value: Publisher | PublisherFactory) -> Publisher:
    return value if isinstance(value, Publisher) else Publisher(value)


class _Publication:
    """One subscription the peer opened to one of our publishers."""

    __slots__ = ("subscriber", "element_size", "demand", "pending", "task", "cancelled")

    def __init__(self, subscriber: int, element_size: int,
                 can_send: Callable[[], bool]) -> None:  # fmt: skip
        self.subscriber = subscriber
        self.element_size = element_size
        self.demand = OutboundDemand(can_send)
        self.pending: list[bytes] = []  # produced this loop turn, not yet in the engine
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False  # the peer cancelled or the connection ended


class RsioPeer:
    """One connection, both roles (module docstring).  Made by ``connect`` and ``serve``."""

    def __init__(
        self,
        transport: Transport,
        role: Literal["client", "server"],
        *,
        encoding: Encoding = "binary",
        publishers: Mapping[str, Publisher | PublisherFactory] | None = None,
        config: RsioConfig | None = None,
        goodbye_timeout: float = 5.0,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.engine = RsioConnection(role, encoding=encoding, config=config)
        self.publishers: dict[str, Publisher] = {
            name: _publisher(value) for name, value in (publishers or {}).items()
        }
        self.goodbye_timeout = goodbye_timeout
        # The driver delivers what the engine returns, and on a peer violation the events
        # before it (the error's ``events``: "Nothing is lost"), then ``_on_closed``.
        limits = limits or DEFAULT_LIMITS
        self._driver = EngineDriver(self.engine, transport, self._on_events, self._on_closed,
                                    handshake_timeout=limits.handshake_timeout,
                                    idle_timeout=limits.idle_timeout,
                                    frame_timeout=limits.frame_timeout)  # fmt: skip
        self._loop = asyncio.get_running_loop()
        self._sinks: dict[int, InboundSink[bytes]] = {}
        self._publications: dict[int, _Publication] = {}
        self._with_pending: set[_Publication] = set()  # have pending elements
        self._offer_scheduled = False
        self._hello = asyncio.Event()
        self._closed = asyncio.Event()
        self._ending: BaseException | None = None  # why streams end (set before on_closed)
        self._error: BaseException | None = None  # the connection's end, for new calls
        self._closer: asyncio.Task[None] | None = None
        self._publishing: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"<RsioPeer {self.engine.role} {self._driver.transport.peer}>"

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Send our hello and start reading (the server may send its hello first:
        "the server doesn't have to wait for the clientHello")."""
        self.engine.initiate_connection()
        self._driver.start()

    async def wait_ready(self) -> None:
        """Wait for the peer's hello; raises ``UnsupportedVersion`` or the error that
        ended the connection first."""
        await self._hello.wait()
        if self._error is not None and self.engine.peer_extensions is None:
            raise self._error

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def close(self, reason: str = "") -> None:
        """The orderly close: goodbye ("Sending goodbye implicitly closes all open
        streams"), wait up to ``goodbye_timeout`` for the peer's goodbye, close the
        transport, and wait for our publishers to stop."""
        if not self._driver.closed:
            if self._ending is None:
                self._ending = ConnectionLost("the connection was closed by this side",
                                              reason="closed")  # fmt: skip
                try:
                    events = self.engine.close(reason)
                except LocalProtocolError:
                    events = []  # goodbye not allowed now (already sent or received)
                else:
                    self._driver.wakeup()
                self._end_streams(self._ending)
                self._dispatch(events)
            try:
                async with asyncio.timeout(self.goodbye_timeout):
                    await self._closed.wait()
            except TimeoutError:
                pass
        await self._driver.close()
        await self.wait_closed()

    def abort(self) -> None:
        """Drop the connection without goodbye (the peer sees EOF or a reset)."""
        self._driver.abort(
            ConnectionLost("the connection was aborted by this side", reason="reset")
        )

    async def wait_closed(self) -> None:
        """Wait until the connection is over and every publisher has stopped."""
        await self._closed.wait()
        await self._driver.wait_closed()
        if self._closer is not None and self._closer is not asyncio.current_task():
            await self._closer
        while self._publishing:
            await asyncio.gather(*list(self._publishing), return_exceptions=True)

    async def __aenter__(self) -> RsioPeer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()

    # ------------------------------------------------------------------ subscribing

    def subscribe(self, publisher: str, *, args: str | None = None,
                  limit_rate: int = DEFAULT_LIMIT_RATE,
                  low_tide: int | None = None) -> InboundStream[bytes]:  # fmt: skip
        """Subscribe to the peer's ``publisher`` (``publisher?args`` on the wire).  The
        subscribe message carries ``limit_rate`` as initialDemand; the rest follows
        consumption (``wirestream.runtime.aio.InboundStream``)."""
        if limit_rate < 1:
            raise ValueError("limit_rate must be at least 1")
        if self._error is not None or self._ending is not None:
            raise self._error or self._ending or ConnectionLost("closed", reason="closed")
        name = publisher if args is None else f"{publisher}?{args}"
        subscriber = self.engine.subscribe(name, initial_demand=limit_rate)
        engine, driver, sinks = self.engine, self._driver, self._sinks

        def request(n: int) -> None:
            engine.request(subscriber, n)  # a NOP once the subscription is over (RS §3.6)
            driver.wakeup()

        def cancel() -> None:
            if sinks.get(subscriber) is box[0]:
                del sinks[subscriber]
            engine.cancel(subscriber)  # idempotent (RS §3.7)
            driver.wakeup()

        stream: InboundStream[bytes] = InboundStream(
            request, cancel, limit_rate=limit_rate, low_tide=low_tide, granted=limit_rate
        )
        # The sink, never the stream, is referenced from here: `break` must drop the
        # last reference to the stream so that it is finalised and cancels at once.
        box = [stream.sink]
        sinks[subscriber] = stream.sink
        driver.wakeup()
        return stream

    # ------------------------------------------------------------------ engine events

    def _on_events(self, events: list[Event]) -> None:
        self._dispatch(events)

    def _dispatch(self, events: list[Event]) -> None:
        for event in events:
            kind = type(event)
            if kind is ElementReceived:
                assert isinstance(event, ElementReceived)
                sink = self._sinks.get(event.subscriber)
                if sink is not None:
                    sink.push(event.element)
            elif kind is DemandReceived:
                assert isinstance(event, DemandReceived)
                publication = self._publications.get(event.subscriber)
                if publication is not None:
                    publication.demand.wakeup()
            elif kind is SubscriptionStarted:
                pass  # onSubscribe: the InboundStream already exists
            elif kind is SubscriptionCompleted:
                assert isinstance(event, SubscriptionCompleted)
                sink = self._sinks.pop(event.subscriber, None)
                if sink is not None:
                    sink.complete()
            elif kind is SubscriptionFailed:
                assert isinstance(event, SubscriptionFailed)
                self._on_subscription_failed(event)
            elif kind is SubscribeReceived:
                assert isinstance(event, SubscribeReceived)
                self._on_subscribe(event)
            elif kind is SubscriptionCancelled:
                assert isinstance(event, SubscriptionCancelled)
                if not isinstance(event.cause, TransportClosed):  # else: _on_closed
                    self._stop_publication(event.subscriber)
            elif kind is HelloReceived:
                self._hello.set()
            elif kind is GoodbyeReceived:
                assert isinstance(event, GoodbyeReceived)
                # "Sending goodbye implicitly closes all open streams"
                self._ending = ConnectionLost(f"the peer said goodbye: {event.reason!r}",
                                              reason="goodbye")  # fmt: skip
                self._end_streams(self._ending)
            elif kind is RsioConnectionClosed:
                assert isinstance(event, RsioConnectionClosed)
                self._on_connection_closed(event)

    def _on_subscription_failed(self, event: SubscriptionFailed) -> None:
        cause = event.cause
        if isinstance(cause, TransportClosed):
            return  # the driver reports the transport's end (EOF or reset) in _on_closed
        sink = self._sinks.pop(event.subscriber, None)
        if sink is None:
            return
        if cause is None:
            sink.fail(self._ending or StreamError(event.error))
        else:
            sink.fail(cause)

    def _on_connection_closed(self, event: RsioConnectionClosed) -> None:
        """The engine is done (goodbyes exchanged, an unsupported version): write what it
        queued and close the transport."""
        if isinstance(event.cause, TransportClosed):
            return
        if self._ending is None:
            self._ending = event.cause or ConnectionLost(event.reason, reason="goodbye")
        if self._closer is None:
            self._closer = self._loop.create_task(self._driver.close())

    def _on_closed(self, error: BaseException | None) -> None:
        """The driver's end: fail what is still open with why."""
        ending = self._ending
        if isinstance(error, ProtocolError) and not isinstance(error, ConnectionLost):
            ending = error  # the peer's bytes broke the protocol (we sent goodbye)
        elif ending is None:
            ending = error or ConnectionLost("the connection was closed", reason="closed")
        self._ending = self._error = ending
        self._end_streams(ending)
        self._hello.set()  # wake wait_ready: it raises the error
        self._closed.set()

    def _end_streams(self, error: BaseException) -> None:
        sinks, self._sinks = self._sinks, {}
        for sink in sinks.values():
            sink.fail(error)
        for subscriber in list(self._publications):
            self._stop_publication(subscriber, error)

    # ------------------------------------------------------------------ publishing

    def _on_subscribe(self, event: SubscribeReceived) -> None:
        subscriber = event.subscriber
        name, _, args = event.publisher.partition("?")
        publisher = self.publishers.get(name)
        try:
            if publisher is None:
                self.engine.reject(subscriber, f"no publisher named {name!r}")
                return
            try:
                source = publisher.factory(args)
            except Exception as error:
                self.engine.reject(subscriber, f"{type(error).__name__}: {error}")
                return
            self.engine.accept(subscriber, element_size=publisher.element_size)
        except ProtocolError:
            return  # the connection is ending; nothing to answer
        finally:
            self._driver.wakeup()
        engine = self.engine

        def can_send() -> bool:
            return engine.available_demand(subscriber) > len(publication.pending)

        publication = _Publication(subscriber, publisher.element_size, can_send)
        self._publications[subscriber] = publication
        publication.task = self._loop.create_task(self._publish(publication, source),
                                                  name=f"rsio publish {name} #{subscriber}")  # fmt: skip
        self._publishing.add(publication.task)
        publication.task.add_done_callback(self._publishing.discard)

    async def _publish(self, publication: _Publication, source: AsyncIterable[bytes]) -> None:
        """Run one publisher under the subscriber's demand; end with onComplete or
        onError (RS §1.4: a failing publisher signals onError)."""
        subscriber = publication.subscriber
        max_pack = self.engine.config.max_pack

        def send(element: bytes) -> None:
            if not isinstance(element, bytes):
                if not isinstance(element, (bytearray, memoryview)):
                    raise TypeError(f"a publisher yields bytes, not {type(element).__name__}")
                element = bytes(element)
            size = publication.element_size
            if size and len(element) != size:
                raise ElementSizeError(f"element of {len(element)} bytes on a stream of"
                                       f" elementSize {size}")  # fmt: skip
            # Coalesced either way (one engine call per loop turn); the engine packs
            # them into onNextPacked only when ``packed`` (config.pack) is on.
            publication.pending.append(element)
            if len(publication.pending) >= max_pack:
                self._offer(publication)
            else:
                self._schedule_offer(publication)

        async def flush() -> None:
            self._offer(publication)
            await self._driver.flush()

        try:
            await pump(source, publication.demand, send, backed_up=self._driver.backed_up,
                       flush=flush)  # fmt: skip
        except StreamCancelled:
            return
        except asyncio.CancelledError:
            if publication.cancelled:
                return  # we cancelled it: the subscriber cancelled or the connection ended
            raise
        except Exception as error:
            if publication.cancelled:
                return  # the connection ended under the pump
            self._finish_publication(publication, f"{type(error).__name__}: {error}")
        else:
            self._finish_publication(publication, None)
        finally:
            if self._publications.get(subscriber) is publication:
                del self._publications[subscriber]
            self._with_pending.discard(publication)

    def _finish_publication(self, publication: _Publication, error: str | None) -> None:
        if publication.cancelled:
            return
        try:
            if error is None:
                self._offer(publication)
                self.engine.complete(publication.subscriber)
            else:
                self._offer(publication)  # what was produced before the failure goes first
                self.engine.error(publication.subscriber, error)
        except ProtocolError:
            return  # cancelled or the connection ended meanwhile
        self._driver.wakeup()

    def _schedule_offer(self, publication: _Publication) -> None:
        self._with_pending.add(publication)
        if not self._offer_scheduled:
            self._offer_scheduled = True
            self._loop.call_soon(self._offer_all)

    def _offer_all(self) -> None:
        """What the pumps produced this loop turn goes to the engine together (packed)."""
        self._offer_scheduled = False
        publications, self._with_pending = self._with_pending, set()
        for publication in publications:
            self._offer(publication)

    def _offer(self, publication: _Publication) -> None:
        elements = publication.pending
        if not elements:
            return
        publication.pending = []
        if publication.cancelled or self._driver.closed:
            return
        try:
            taken = self.engine.offer(publication.subscriber, elements)
        except ProtocolError as error:  # not expected: send() checked type and size
            self._stop_publication(publication.subscriber, error)
            try:
                self.engine.error(publication.subscriber, f"{type(error).__name__}: {error}")
            except ProtocolError:
                pass
            self._driver.wakeup()
            return
        # can_send counted the pending elements, so demand covers them all
        assert taken == len(elements), (taken, len(elements))
        self._driver.wakeup()

    def _stop_publication(self, subscriber: int, error: BaseException | None = None) -> None:
        """The subscriber cancelled (``error`` None) or the connection ended: stop the
        pump and close the source, even while it waits for its next element."""
        publication = self._publications.pop(subscriber, None)
        if publication is None:
            return
        publication.cancelled = True
        publication.pending.clear()
        if error is None:
            publication.demand.cancel()
        else:
            publication.demand.fail(error)
        task = publication.task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()


# --- connecting ----------------------------------------------------------------------


def _capture_protocol(encoding: Encoding) -> str:
    return "rsio/0+msgpack" if encoding == "msgpack" else "rsio/0"


def _config(config: RsioConfig | None, packed: bool, max_pack: int | None,
            split_above: int | None, limits: ConnectionLimits | None) -> RsioConfig:  # fmt: skip
    base = config if config is not None else RsioConfig()
    if limits is not None:  # the one shape's max_streams is the engine's own cap
        cap = limits.max_streams
        base = dataclasses.replace(base, max_peer_subscriptions=cap or LONG_MAX)
    return dataclasses.replace(base, pack=packed, max_pack=max_pack or base.max_pack,
                               max_part_size=split_above)  # fmt: skip


async def connect(
    url: str,
    *,
    encoding: Encoding = "binary",
    publishers: Mapping[str, Publisher | PublisherFactory] | None = None,
    packed: bool = False,
    max_pack: int | None = None,
    split_above: int | None = DEFAULT_SPLIT_ABOVE,
    config: RsioConfig | None = None,
    ssl: ssl_module.SSLContext | None = None,
    timeout: float | None = 10.0,
    goodbye_timeout: float = 5.0,
    capture: CaptureWriter | None = None,
    limits: ConnectionLimits | None = None,
) -> RsioPeer:
    """Open ``url`` and exchange hellos; returns the peer (an async context manager).

    ``timeout`` bounds the connection and the hello exchange (``TransportTimeout``; a
    late hello: ``HandshakeTimeout``, also after ``limits.handshake_timeout``).  A server
    with another protocol version raises ``UnsupportedVersion``.  ``config`` holds the
    engine's sizes; ``packed``/``max_pack``/``split_above`` override its publishing
    fields; ``limits`` (``ConnectionLimits``) the time limits and ``max_streams`` (the
    engine's ``max_peer_subscriptions``).
    ``capture`` records every frame (``wirestream.runtime.capture``; protocol ``rsio/0``, or
    ``rsio/0+msgpack`` for that encoding).
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    transport = await open_transport(url, ssl=ssl, timeout=timeout)
    transport = tap(transport, capture, protocol=_capture_protocol(encoding), side="client")
    peer = RsioPeer(transport, "client", encoding=encoding, publishers=publishers,
                    config=_config(config, packed, max_pack, split_above, limits),
                    goodbye_timeout=goodbye_timeout, limits=limits)  # fmt: skip
    peer.start()
    hello = asyncio.timeout_at(deadline)
    try:
        async with hello:
            await peer.wait_ready()
    except BaseException as error:
        peer.abort()
        await peer.wait_closed()
        # (a limit's TransportTimeout is a TimeoutError too: only our deadline is ours)
        if isinstance(error, TimeoutError) and hello.expired():
            raise HandshakeTimeout(
                f"{url}: no hello from the server within {timeout} s", limit=timeout
            ) from None
        raise
    return peer


class RsioServer:
    """Accepts connections; each is an ``RsioPeer`` serving ``publishers`` (and able to
    subscribe to the client's, in ``on_peer``).  ``await close()`` says goodbye to every
    peer, then stops; usable as ``async with await serve(...)``."""

    def __init__(self, on_peer: Callable[[RsioPeer], Awaitable[None]] | None,
                 make_peer: Callable[[Transport], RsioPeer]) -> None:  # fmt: skip
        self._on_peer = on_peer
        self._make_peer = make_peer
        self.peers: set[RsioPeer] = set()
        self._listener: Listener | None = None

    @property
    def url(self) -> str:
        assert self._listener is not None
        return self._listener.url

    async def _serve(self, transport: Transport) -> None:
        peer = self._make_peer(transport)
        self.peers.add(peer)
        peer.start()
        try:
            if self._on_peer is not None:
                try:
                    await peer.wait_ready()  # a server may subscribe only after the hellos
                except ProtocolError:
                    return
                try:
                    await self._on_peer(peer)
                except Exception:
                    _log.exception("on_peer(%r) failed; closing the connection", peer)
                    return
            await peer.wait_closed()
        finally:
            self.peers.discard(peer)
            await peer.close()

    async def close(self, reason: str = "server closing") -> None:
        listener = self._listener
        assert listener is not None
        await asyncio.gather(*(peer.close(reason) for peer in list(self.peers)))
        listener.close()
        await listener.wait_closed()

    async def wait_closed(self) -> None:
        assert self._listener is not None
        await self._listener.wait_closed()

    async def __aenter__(self) -> RsioServer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()


async def serve(
    url: str,
    *,
    publishers: Mapping[str, Publisher | PublisherFactory] | None = None,
    on_peer: Callable[[RsioPeer], Awaitable[None]] | None = None,
    encoding: Encoding = "binary",
    packed: bool = False,
    max_pack: int | None = None,
    split_above: int | None = DEFAULT_SPLIT_ABOVE,
    config: RsioConfig | None = None,
    ssl: ssl_module.SSLContext | None = None,
    goodbye_timeout: float = 5.0,
    capture: CaptureWriter | None = None,
    limits: ConnectionLimits | None = None,
) -> RsioServer:
    """Listen on ``url`` (port 0: any; ``server.url`` has the real one).  Every
    connection serves ``publishers``; ``on_peer(peer)``, if given, runs once the hellos
    are exchanged (to subscribe to the client's publishers); the connection stays open
    after it returns, until the client leaves or the server closes.  ``capture`` records
    every frame of every connection (``wirestream.runtime.capture``).  ``limits``
    (``ConnectionLimits``): time limits, ``max_connections``, and ``max_streams`` (the
    engine's ``max_peer_subscriptions``)."""
    settings = _config(config, packed, max_pack, split_above, limits)

    def make_peer(transport: Transport) -> RsioPeer:
        return RsioPeer(transport, "server", encoding=encoding, publishers=publishers,
                        config=settings, goodbye_timeout=goodbye_timeout,
                        limits=limits)  # fmt: skip

    server = RsioServer(on_peer, make_peer)
    on_transport = tap_accepted(server._serve, capture, protocol=_capture_protocol(encoding))
    bounds = limits or DEFAULT_LIMITS
    server._listener = await listen(url, on_transport, ssl=ssl,
                                    max_connections=bounds.max_connections,
                                    handshake_timeout=bounds.handshake_timeout)  # fmt: skip
    return server
