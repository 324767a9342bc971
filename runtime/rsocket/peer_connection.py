"""The connection half of the asyncio RSocket peer: ``PeerConnection`` attaches an
``RSocketConnection`` to a transport (``EngineDriver``) and keeps the connection-scope
behaviour -- establishment, leases, metadata push, EXT and raw frames, resumption on a
new transport, graceful and abrupt close.  ``aio.RSocketPeer`` adds the streams
(requests, responders, publishers) on top; users get that class from ``connect`` and
``serve`` (see ``wirestream.runtime.rsocket.aio``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any, Final, Protocol, Self

from wirestream.runtime.aio.eager import start_eagerly
from wirestream.runtime.aio import EngineDriver, InboundSink, OutboundDemand, Transport
from wirestream.runtime.errors import (
    ConnectionLost,
    LocalProtocolError,
    ProtocolError,
    TransportError,
)
from wirestream.runtime.rsocket.engine import RSocketConnection
from wirestream.runtime.rsocket.lease import LeaseStatus
from wirestream.runtime.rsocket.lease_waiters import LeaseQueue, LeaseWaiters
from wirestream.runtime.rsocket.options import Limits
from wirestream.runtime.rsocket.resume import ResumableSession
from wirestream.runtime.rsocket.errors import NoNewRequests, SetupRejected
from wirestream.runtime.rsocket.events import (
    Event,
    ExtReceived,
    FrameReceived,
    ConnectionClosed,
    ConnectionClosing,
    ConnectionDead,
    ConnectionEstablished,
    ConnectionRejected,
    ConnectionResumed,
    KeepaliveReceived,
    LeaseReceived,
    MetadataPushReceived,
    PayloadReceived,
    StreamCompleted,
)
from wirestream.runtime.rsocket.handler import RSocketPayload, RSocketHandler

__all__ = ["DEFAULT_LIMIT_RATE", "PeerConnection", "UNLIMITED_LEASE"]


class PeerBook(Protocol):
    """What a server keeps of its peers (``aio.RSocketServer``), as a connection sees it:
    told when the connection is established or ends, and asked which session a RESUME on
    it takes over.  (A protocol, not the server's class: the server builds the peers, so
    naming it here would tie the two modules in a circle.)"""

    _resuming: dict[Any, Any]

    def _established(self, peer: Any, event: ConnectionEstablished) -> None: ...

    def _forget(self, peer: Any) -> None: ...


DEFAULT_LIMIT_RATE: Final = 256
"""Items requested up front, and the replenish batch (rsocket-java's limitRate default)."""

UNLIMITED_LEASE: Final = ((1 << 31) - 1, (1 << 31) - 1)
"""(ttl ms, requests), both the 1.0 maximum: what ``connect(lease=True)`` grants the
server's requester ("The client-side Responder MUST send a LEASE frame after a SETUP frame
with the L flag set") when the application names no lease of its own."""

DRAIN_POLL: Final = 0.01
"""Seconds between two looks at the open streams while a 0.2 connection drains (0.2 has
no CONNECTION_CLOSE, so no event says when the last stream ended)."""

WRITE_BATCH: Final = 64 * 1024
"""Payload bytes publishers queue in the engine before they are written at once rather
than at the end of the loop iteration: the transport's backpressure then sees them, so a
peer that stops reading stops a publisher of big items after ~HIGH_WATER bytes, not after
``YIELD_EVERY`` items."""

WEBSOCKET_SCHEMES = frozenset({"ws", "wss"})
FRAME_LENGTH_SIZE: Final = 3

HandlerFactory = Callable[[], RSocketHandler]

DEFAULT_LIMITS: Final = Limits()


class _Call:
    """What the peer tracks per stream id: a response future, an inbound sink, a
    publisher's demand and task (whichever the interaction model has)."""

    __slots__ = ("future", "sink", "demand", "task")

    def __init__(
        self,
        future: asyncio.Future[RSocketPayload] | None = None,
        sink: InboundSink[RSocketPayload] | None = None,
        demand: OutboundDemand | None = None,
    ) -> None:
        self.future = future
        self.sink = sink
        self.demand = demand
        self.task: asyncio.Task[None] | None = None

    def fail(self, error: BaseException) -> None:
        future = self.future
        if future is not None and not future.done():
            future.set_exception(error)
        if self.sink is not None:
            self.sink.fail(error)
        if self.demand is not None:
            self.demand.fail(error)
        if self.task is not None and self.demand is None:
            self.task.cancel()  # a request-response handler nobody waits for any more


def _no_events(events: list[Any]) -> None:
    """A released peer's driver has nobody to tell (``PeerConnection._release``)."""


def _no_close(error: BaseException | None) -> None:
    """A released peer's driver has nobody to tell (``PeerConnection._release``)."""


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value


class PeerConnection:
    """The connection scope of ``RSocketPeer`` (the class ``connect`` and ``serve``
    return): its state, the engine's driver, and the connection's events."""

    def __init__(
        self,
        engine: RSocketConnection,
        transport: Transport,
        handler: RSocketHandler,
        *,
        limit_rate: int = DEFAULT_LIMIT_RATE,
        reconnect: Callable[[], Awaitable[Transport]] | None = None,
        resume_timeout: float = 30.0,
        server: PeerBook | None = None,
        limits: Limits | None = None,
        lease_queue: LeaseQueue | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.handler = handler
        self.limit_rate = limit_rate
        self._calls: dict[int, _Call] = {}
        self._unwritten = 0  # payload bytes sent by publishers since the last forced write
        # The driver and its write count when its transport last had room (``_backed_up``)
        self._room_driver: EngineDriver[Event] | None = None
        self._room_at_write = -1
        self._tasks: set[asyncio.Task[Any]] = set()
        self._one_way: set[asyncio.Task[None]] = set()  # not cancelled by the end
        self._reconnect = reconnect
        self._limits = limits  # the drivers' time limits; for the engine a resumption builds
        self._resume_timeout = resume_timeout
        self._server = server
        self._connected = True  # False while a resumable session waits for a transport
        self._reconnected = asyncio.Event()
        self._reconnected.set()
        self._reconnecting: asyncio.Task[None] | None = None
        self._attempt: asyncio.Future[None] | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._closed_event: ConnectionClosed | None = None
        self._error: BaseException | None = None
        self._finished = asyncio.Event()
        # Waits that end with the connection too (``_end`` sets them; the flags say why).
        self._lease = asyncio.Event()  # set by each LEASE received (and by the end)
        self._lease_waiters = LeaseWaiters(lease_queue, self._lease_allows, self._loop)
        self._established = asyncio.Event()
        self._setup_accepted = False
        self._closing = False  # a graceful close is under way (either side began it)
        self._lease_grant: tuple[int, int] | None = None  # what our responder grants
        self._adopter: PeerConnection | None = None
        self.resumptions = 0
        """How many times the session was resumed on a new transport."""
        self.engine = engine
        # A client's first frame from the server is at the latest the answer to its first
        # KEEPALIVE: the server owes nothing before it (no SETUP_OK in RSocket).
        grace: float | None = 0.0
        if engine.role == "client" and engine.setup is not None:
            interval = engine.setup.keepalive_interval
            grace = interval / 1000 if interval else None
        self.driver = self._attach(engine, transport, handshake_grace=grace)
        # Engine event -> its handler: the connection's events here, the streams' added by
        # ``RSocketPeer`` (one dict either way: one lookup per event on the hot path).
        self._dispatch = self._event_handlers()

    def _attach(self, engine: RSocketConnection, transport: Transport, *,
                handshake_grace: float | None = 0.0) -> EngineDriver[Event]:  # fmt: skip
        """Run ``engine`` on ``transport``: the first frame is due ``handshake_timeout``
        (plus ``handshake_grace``; None: not due) after the start (``Limits``)."""
        limits = self._limits or DEFAULT_LIMITS
        handshake = limits.handshake_timeout
        if handshake is not None:
            handshake = None if handshake_grace is None else handshake + handshake_grace
        driver = EngineDriver(engine, transport, self._on_events, self._on_closed,
                              handshake_timeout=handshake, idle_timeout=limits.idle_timeout,
                              frame_timeout=limits.frame_timeout)  # fmt: skip
        driver.rebind(functools.partial(self._driver_events, driver),
                      functools.partial(self._driver_closed, driver))  # fmt: skip
        self.engine = engine
        self.driver = driver
        driver.start()
        return driver

    # ================================================================== requester API

    @property
    def closed(self) -> bool:
        return self._finished.is_set()

    def _check_open(self, request: bool = False) -> None:
        if self._finished.is_set():
            raise self._error or ConnectionLost("the connection is closed", reason="closed")
        if request and self._closing and self.engine.version.graceful_close is None:
            # 0.2 drains without a frame (``close(grace=...)``), so the engine does not
            # know; 1.0's engine refuses new requests itself
            raise NoNewRequests("the connection is closing: no new requests")

    async def _ready(self, request: bool = False) -> None:
        self._check_open(request)
        if not self._connected:
            await self._reconnected.wait()
            self._check_open(request)

    async def metadata_push(self, metadata: bytes) -> None:
        await self._ready()
        self.engine.metadata_push(metadata)
        await self._flush()

    async def send_ext(self, extended_type: int, data: bytes | str = b"",
                       metadata: bytes | None = None, *, stream_id: int = 0,
                       ignore: bool = True) -> None:  # fmt: skip
        """Send an EXT frame (``RSocketConnection.send_ext``); ``ignore`` sets its I flag
        ("Can the frame be ignored if not understood?")."""
        await self._ready()
        self.engine.send_ext(extended_type, _bytes(data), metadata, stream_id=stream_id,
                             ignore=ignore)  # fmt: skip
        await self._flush()

    async def send_frame(self, frame: object) -> None:
        """Send any frame of the negotiated version's codec through its machine
        (``RSocketConnection.send_frame``): frames an IDL extension adds."""
        await self._ready()
        self.engine.send_frame(frame)
        await self._flush()

    @property
    def lease(self) -> LeaseStatus | None:
        """(lease) The peer's current LEASE for our requests: ``requests_left`` and
        ``expires_at`` (the event loop's clock, ``loop.time()``); None before the first
        LEASE (and after a resumption, until the next), or without leasing."""
        return self.engine.lease

    @property
    def lease_waiting(self) -> int:
        """(lease queue) Our requests waiting for a LEASE now (``LeaseQueue``)."""
        return self._lease_waiters.pending

    def _lease_allows(self) -> bool:
        return self.engine.lease_allows(self._loop.time())

    async def wait_for_lease(self) -> None:
        """(lease) Wait until a LEASE allows a request now: one with requests left that
        has not expired -- not merely one granted once ("When a LEASE expires due to time,
        the value of the Number of Requests that a Requester may make is implicitly 0").
        At once without leasing.  Ends with the connection: ``SetupRejected`` when the
        server refused the SETUP (a server without leasing answers
        ERROR[UNSUPPORTED_SETUP]), else why it ended (``ConnectionLost`` ...)."""
        while True:
            self._check_ended()
            if self._connected and self._lease_allows():
                return
            self._lease.clear()
            await self._lease.wait()  # the next LEASE, or the end

    async def wait_established(self) -> None:
        """Wait until the SETUP is accepted: on a server at once; on a client when "it
        receives a response to a request, a LEASE frame, or if it sees a REQUEST type"
        (a server that accepts and says nothing leaves this waiting until the connection
        ends).  Ends with ``SetupRejected`` when the server refused the SETUP, else with
        why the connection ended."""
        await self._wait_for(self._established, lambda: self._setup_accepted)

    async def _wait_for(self, event: asyncio.Event, happened: Callable[[], bool]) -> None:
        if not happened():
            self._check_ended()
            await event.wait()  # set when it happens, and by ``_end``
            if not happened():
                self._check_ended()

    def _check_ended(self) -> None:
        if self._finished.is_set():
            raise self._error or ConnectionLost("the connection is closed", reason="closed")

    def send_lease(self, ttl_ms: int, number_of_requests: int,
                   metadata: bytes | None = None) -> None:  # fmt: skip
        """(server with lease) Let the peer's requester send ``number_of_requests``
        requests during ``ttl_ms``."""
        self.engine.send_lease(ttl_ms, number_of_requests, metadata, now=self._loop.time())
        self.driver.wakeup()

    def _grant_leases(self, ttl_ms: int, number_of_requests: int) -> None:
        """Grant this lease now and renew it at half its time-to-live while the connection
        lives (and at once after a resumption: "LEASE semantics MUST be restarted upon a
        new connection by sending a LEASE frame from the server")."""
        self._lease_grant = (ttl_ms, number_of_requests)
        self._spawn(self._renew_leases(ttl_ms, number_of_requests))

    async def _renew_leases(self, ttl_ms: int, number_of_requests: int) -> None:
        while not self._finished.is_set():
            self._send_granted_lease()
            await asyncio.sleep(ttl_ms / 2000)

    def _send_granted_lease(self) -> None:
        grant = self._lease_grant
        engine = self.engine
        if grant is not None and self._connected and not engine.closed:
            self.send_lease(*grant)

    # ================================================================== events

    def _driver_events(self, driver: EngineDriver[Event], events: list[Any]) -> None:
        if driver is self.driver:
            self._on_events(events)

    def _driver_closed(self, driver: EngineDriver[Event], error: BaseException | None) -> None:
        if driver is self.driver:
            self._on_closed(error)

    def _on_events(self, events: list[Any]) -> None:
        calls = self._calls
        dispatch = self._dispatch
        for index, event in enumerate(events):
            if type(event) is PayloadReceived:  # the hot path, inline
                call = calls.get(event.stream_id)
                if call is None:
                    continue
                sink = call.sink
                if sink is not None:
                    sink.push(RSocketPayload(event.data, event.metadata))
                elif call.future is not None:
                    if not call.future.done():
                        call.future.set_result(RSocketPayload(event.data, event.metadata))
                    del calls[event.stream_id]
                continue
            if type(event) is StreamCompleted and event.stream_id not in calls:
                # A request-response answered just above: nothing left to tell or forget
                # (``RSocketPeer._on_completed`` with no call does nothing else).
                continue
            dispatch[type(event)](event)
            adopter = self._adopter
            if adopter is not None:  # a RESUME handed this connection to its session
                adopter._on_events(events[index + 1 :])
                return

    def _finish_if_over(self, stream_id: int) -> None:
        if stream_id not in self.engine.open_streams:
            call = self._calls.pop(stream_id, None)
            if call is not None and call.demand is not None:
                call.demand.cancel()  # the stream is over: a publisher still running stops

    def _on_metadata_push(self, event: MetadataPushReceived) -> None:
        self._spawn_one_way(self.handler.metadata_push(event.metadata))

    def _on_frame(self, event: FrameReceived) -> None:
        self._spawn_one_way(self.handler.on_frame(event.frame))

    def _on_lease(self, event: LeaseReceived) -> None:
        # "The last received LEASE frame overrides all previous LEASE frame values": the
        # requests waiting for one go, as many as it allows.
        self._lease.set()
        status = self.engine.lease
        if status is not None and self._lease_allows():
            self._lease_waiters.wake(status.requests_left)

    def _on_ext(self, event: ExtReceived) -> None:
        payload = RSocketPayload(event.data, event.metadata)
        self._spawn_one_way(self.handler.on_ext(event.extended_type, payload, event.stream_id))

    def _on_closing(self, event: ConnectionClosing) -> None:
        self._closing = True  # the engine refuses new requests both ways from now on

    def _ignore(self, event: Any) -> None:
        pass

    def _on_established(self, event: ConnectionEstablished) -> None:
        self.handler.setup = event.setup
        self._setup_accepted = True
        self._established.set()
        if self._server is not None:
            self._server._established(self, event)

    def _on_rejected(self, event: ConnectionRejected) -> None:
        message = event.message.decode("utf-8", "replace")
        error = SetupRejected(event.error_code, message)
        self._connected = False
        if self._attempt is not None and not self._attempt.done():
            self._attempt.set_exception(error)
        self._error = error
        self._reconnect = None  # a rejected session does not come back
        self.driver.shutdown(error)

    def _on_resumed(self, event: ConnectionResumed) -> None:
        if self._server is not None:
            session = self._server._resuming.pop(self, None)
            if session is not None and session is not self:
                session._adopt(self)
                self._adopter = session
                # The session owns this connection's engine and transport now: this peer
                # is over, and the server forgets it (it was kept for every resumption).
                self._end(ConnectionLost("the connection resumed a session", reason="closed"))
                return
        self._resumed()

    def _resumed(self) -> None:
        self._connected = True
        self.resumptions += 1
        # "Leasing semantics are NOT assumed to carry over from previous connections when
        # resuming. LEASE semantics MUST be restarted upon a new connection by sending a
        # LEASE frame": the engine forgot both leases; wait for the peer's anew, send ours.
        self._lease.clear()
        self._send_granted_lease()
        self._reconnected.set()
        if self._attempt is not None and not self._attempt.done():
            self._attempt.set_result(None)
        for call in list(self._calls.values()):
            if call.demand is not None:
                call.demand.wakeup()

    def _adopt(self, other: PeerConnection) -> None:
        """(server) A RESUME arrived on ``other``'s new connection for this session: take
        its engine and transport, drop the old ones."""
        old = self.driver
        self.engine = other.engine
        self.driver = other.driver
        self.driver.rebind(functools.partial(self._driver_events, self.driver),
                           functools.partial(self._driver_closed, self.driver))  # fmt: skip
        if not old.closed:
            old.abort()  # the old transport may not have noticed it is dead yet
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._closed_event = None
        self._resumed()

    def _on_connection_closed(self, event: ConnectionClosed) -> None:
        self._closed_event = event
        if event.graceful:
            # The graceful close is over: "Sender or Receiver of this frame MUST wait for
            # outstanding streams to terminate before closing the connection" -- they have.
            who = "the peer" if event.by_peer else "us"
            self._error = self._error or ConnectionLost(
                f"closed gracefully by {who} (ERROR[CONNECTION_CLOSE])", reason="closed"
            )  # fmt: skip
            self.driver.shutdown(self._error)
            return
        if not event.resumable and event.by_peer and event.error_code is not None:
            message = event.message.decode("utf-8", "replace")
            self._error = ConnectionLost(
                f"the peer closed the connection: ERROR[0x{event.error_code:x}] {message}",
                reason="closed",
            )  # fmt: skip
            self.driver.shutdown(self._error)

    def _on_dead(self, event: ConnectionDead) -> None:
        # SETUP, Max Lifetime: "Time ... that a client will allow a server to not respond
        # to a KEEPALIVE before it is assumed to be dead."
        self.driver.abort(
            ConnectionLost(f"no KEEPALIVE for {event.silent_for:.1f} s: peer assumed dead",
                           reason="keepalive")  # fmt: skip
        )

    # ================================================================== the end

    def _on_closed(self, error: BaseException | None) -> None:
        closed = self._closed_event
        if closed is not None and closed.resumable and not self._finished.is_set():
            if self._reconnect is not None:
                self._park()
                if self._attempt is not None and not self._attempt.done():
                    self._attempt.set_exception(error or ConnectionLost("closed"))
                elif self._reconnecting is None:
                    self._reconnecting = self._spawn(self._resume_session())
                return
            if self._server is not None:
                self._park()
                self._expiry = self._loop.call_later(self._resume_timeout, self._expire)
                return
        self._end(self._error or error
                  or ConnectionLost("the connection is closed", reason="closed"))  # fmt: skip
        self._release()

    def _park(self) -> None:
        self._connected = False
        self._reconnected.clear()

    def _expire(self) -> None:
        self._expiry = None
        self._end(ConnectionLost(f"not resumed within {self._resume_timeout} s",
                                 reason="resume-timeout"))  # fmt: skip
        self._release()

    def _end(self, error: BaseException) -> None:
        if self._finished.is_set():
            return
        self._error = error
        calls, self._calls = self._calls, {}
        for call in calls.values():
            call.fail(error)
        for task in list(self._tasks):
            if task is not asyncio.current_task() and not task.done():
                task.cancel()
        self._reconnected.set()  # wake waiters; they see the error
        self._lease_waiters.fail(error)
        self._lease.set()
        self._established.set()
        self._finished.set()
        if self._server is not None:
            self._server._forget(self)

    def _release(self) -> None:
        """Break this peer's reference cycles once it is over for good and its driver has
        made its last call: the driver's callbacks, the event table and the engine's
        generated dispatch are bound methods of their owners, so a closed peer was freed
        only by the cycle collector -- 27% of a connect/close cycle (issue 30).  The
        state stays readable (``closed``, ``engine``, ``driver.error``)."""
        self.driver.rebind(_no_events, _no_close)
        self._dispatch = {}
        self._lease_waiters.release()
        if self.engine.closed:  # (it is, but a release must never raise from the end)
            self.engine.release()

    async def _resume_session(self) -> None:
        """(client) Dial again and RESUME until resumed, rejected, or out of time."""
        assert self._reconnect is not None
        deadline = self._loop.time() + self._resume_timeout
        delay = 0.005
        last: BaseException = ConnectionLost("not resumed")
        try:
            session: ResumableSession = self.engine.session()
            while self._reconnect is not None and self._loop.time() < deadline:
                try:
                    transport = await self._reconnect()
                except TransportError as error:
                    last = error
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                engine = RSocketConnection.resume(session, now=self._loop.time(),
                                                  limits=self._limits)  # fmt: skip
                self._closed_event = None
                self._attempt = self._loop.create_future()
                self._attach(engine, transport)
                try:
                    await self._attempt
                    return
                except SetupRejected as error:
                    last = error
                    break
                except ProtocolError as error:
                    last = error
                finally:
                    self._attempt = None
            self._end(last)
        except ProtocolError as error:
            self._end(error)
        finally:
            self._reconnecting = None

    # ================================================================== closing

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _spawn_one_way(self, work: Coroutine[Any, Any, None]) -> None:
        """Fire-and-forget / metadata push: the request has fully arrived, so its handler
        runs to the end even if the connection closes meanwhile (a client that closes
        right after sending must not lose it); ``wait_closed`` waits for it."""
        task = start_eagerly(self._run_quietly(work), self._loop)
        if task is not None:
            self._one_way.add(task)
            task.add_done_callback(self._one_way.discard)

    def _spawn_eagerly(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run a handler now; a task only if it waits (``wirestream.runtime.aio.eager``)."""
        task = start_eagerly(work, self._loop)
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return task

    async def close(self, grace: float | None = None) -> None:
        """End the connection and wait until every task of this peer is done.

        ``grace`` (seconds): close gracefully first -- 1.0 sends ERROR[CONNECTION_CLOSE]
        ("Sender or Receiver of this frame MUST wait for outstanding streams to terminate
        before closing the connection. New requests MAY not be accepted"): open streams
        run on, new requests are refused both ways (``NoNewRequests`` here, ERROR[REJECTED]
        to the peer), and the connection closes when the last stream ends.  0.2 has no
        such frame: the same drain happens on our side only.  Whatever is still open
        after ``grace`` is ended as without it.

        Without ``grace`` the connection ends at once: ERROR[CONNECTION_CLOSE] when no
        stream is open (nothing to wait for), else ERROR[CONNECTION_ERROR] ("MAY close the
        connection immediately without waiting for outstanding streams"); what is still
        open fails with ``ConnectionLost``."""
        if grace is not None and not self._finished.is_set():
            await self._drain(grace)
        if not self._finished.is_set():
            self._reconnect = None
            engine = self.engine
            if not engine.closed and self._connected:
                version = engine.version
                code = version.connection_error if engine.open_streams else version.connection_close
                try:
                    events = engine.close(code, b"bye")
                except LocalProtocolError:
                    events = []  # e.g. a server that never saw SETUP may send nothing
                self._on_events(events)
            self._end(ConnectionLost("closed by us", reason="closed"))
            self.driver.shutdown()
        await self.wait_closed()

    async def _drain(self, grace: float) -> None:
        """The graceful part of ``close(grace)``: begin it, wait up to ``grace``."""
        engine = self.engine
        graceful = engine.version.graceful_close is not None
        if self._connected and not engine.closed and not self._closing:
            if graceful:
                try:
                    events = engine.close_gracefully(b"bye")
                except LocalProtocolError:
                    return  # no SETUP yet (server), or already closed: nothing to drain
                self._on_events(events)
                self.driver.wakeup()
            else:
                self._closing = True
        try:
            async with asyncio.timeout(grace):
                if graceful:
                    await self._finished.wait()  # the engine ends it with its last stream
                else:
                    while self.engine.open_streams and not self._finished.is_set():
                        await asyncio.sleep(DRAIN_POLL)
        except TimeoutError:
            pass

    async def wait_closed(self) -> None:
        await self._finished.wait()
        await self.driver.wait_closed()
        tasks = [t for t in (*self._tasks, *self._one_way) if t is not asyncio.current_task()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()

    async def _flush(self) -> None:
        try:
            await self.driver.flush()
        except ConnectionLost:
            if self._finished.is_set() or self._reconnect is None and self._server is None:
                raise
            await self._reconnected.wait()  # a resumable session: continue once resumed
            self._check_open()

    async def _run_quietly(self, work: Awaitable[None]) -> None:
        try:
            await work
        except Exception:
            pass  # fire-and-forget / metadata push: nobody to tell ("no response")

    def _event_handlers(self) -> dict[type, Callable[[Any], None]]:
        """The connection-scope events and their handlers (``RSocketPeer`` adds the
        streams')."""
        return {
            MetadataPushReceived: self._on_metadata_push,
            LeaseReceived: self._on_lease,
            KeepaliveReceived: self._ignore,
            ConnectionEstablished: self._on_established,
            ConnectionRejected: self._on_rejected,
            ConnectionResumed: self._on_resumed,
            ConnectionClosing: self._on_closing,
            ConnectionClosed: self._on_connection_closed,
            ConnectionDead: self._on_dead,
            FrameReceived: self._on_frame,
            ExtReceived: self._on_ext,
        }
