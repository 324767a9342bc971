"""RSocket over asyncio: ``connect`` (client), ``serve`` (server), and the ``RSocketPeer``
both return.  Either side is requester and responder at once.

The sans-I/O ``RSocketConnection`` keeps every protocol rule; this module maps its events
to what applications await:

- ``await peer.request_response(data)`` -> ``RSocketPayload``; ``await peer.fire_and_forget``;
  ``await peer.metadata_push``;
- ``async for p in peer.request_stream(data, limit_rate=256)``: REQUEST_N follows
  consumption (``wirestream.runtime.aio.InboundStream``), ``break`` sends CANCEL;
- ``peer.request_channel(data, outbound=async_iterable)``: both directions under
  request-n;
- inbound requests run the ``RSocketHandler``'s methods as tasks; stream publishers are
  pulled only while the requester's REQUEST_N allows (``wirestream.runtime.aio.pump``).

Lease, closing and extensions (README, "RSocket negotiation and close"): ``serve(lease=)``
/ ``connect(lease=)`` grant and renew leases, ``wait_for_lease`` / ``wait_established``
end with the connection's typed error, ``close(grace=...)`` closes gracefully
(ERROR[CONNECTION_CLOSE]), ``send_ext`` / ``RSocketHandler.on_ext`` carry EXT frames.

Resumption (Protocol.md "Resuming Operation"; rsocket-py has none): with
``connect(..., resume=True)`` a lost transport does not end the streams.  The client
dials again and sends RESUME; the server's ``serve(..., resume=True)`` keeps the session
for ``resume_timeout`` seconds and answers RESUME_OK; both retransmit from the other's
last received position, so no frame is lost or duplicated.  Publishers pause meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import ssl as ssl_module
from collections.abc import AsyncIterable, Awaitable, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Final

from wirestream.runtime.aio.eager import start_eagerly
from wirestream.runtime.capture import CaptureWriter, tap, tap_accepted
from wirestream.runtime.aio import (
    EngineDriver,
    InboundSink,
    InboundStream,
    Listener,
    OutboundDemand,
    StreamCancelled,
    Transport,
    listen,
    open_transport,
    pump,
)
from wirestream.runtime.errors import (
    ConnectionLost,
    LocalProtocolError,
    ProtocolError,
    TransportError,
)
from wirestream.runtime.rsocket.engine import RSocketConnection
from wirestream.runtime.rsocket.options import ClientSetup, Limits, SetupPolicy
from wirestream.runtime.rsocket.resume import ResumableSession
from wirestream.runtime.rsocket.errors import (
    ApplicationError,
    NoNewRequests,
    SetupRejected,
    StreamError,
)
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
    ErrorReceived,
    InteractionModel,
    KeepaliveReceived,
    LeaseReceived,
    MetadataPushReceived,
    PayloadReceived,
    RequestNReceived,
    RequestReceived,
    StreamAborted,
    StreamCanceled,
    StreamCompleted,
)
from wirestream.runtime.rsocket.handler import (
    RSocketPayload,
    PayloadLike,
    RSocketHandler,
    as_payload,
)

__all__ = ["RSocketPeer", "RSocketServer", "connect", "serve", "DEFAULT_LIMIT_RATE",
           "UNLIMITED_LEASE"]  # fmt: skip

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
"""RSocketPayload bytes publishers queue in the engine before they are written at once rather
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


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value


class RSocketPeer:
    """One RSocket connection (or resumable session) under asyncio; see the module
    docstring.  Made by ``connect`` and ``serve``, not directly."""

    def __init__(
        self,
        engine: RSocketConnection,
        transport: Transport,
        handler: RSocketHandler,
        *,
        limit_rate: int = DEFAULT_LIMIT_RATE,
        reconnect: Callable[[], Awaitable[Transport]] | None = None,
        resume_timeout: float = 30.0,
        server: RSocketServer | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.handler = handler
        self.limit_rate = limit_rate
        self._calls: dict[int, _Call] = {}
        self._unwritten = 0  # payload bytes sent by publishers since the last forced write
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
        self._lease = asyncio.Event()
        self._lease_granted = False
        self._established = asyncio.Event()
        self._setup_accepted = False
        self._closing = False  # a graceful close is under way (either side began it)
        self._lease_grant: tuple[int, int] | None = None  # what our responder grants
        self._adopter: RSocketPeer | None = None
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
        self._dispatch: dict[type, Callable[[Any], None]] = {
            RequestReceived: self._on_request,
            StreamCompleted: self._on_completed,
            ErrorReceived: self._on_error,
            StreamCanceled: self._on_canceled,
            RequestNReceived: self._on_request_n,
            StreamAborted: self._on_aborted,
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

    async def request_response(
        self, data: bytes | str, metadata: bytes | None = None
    ) -> RSocketPayload:
        """Send a request, wait for its one response (``StreamError`` on ERROR)."""
        await self._ready(request=True)
        stream_id = self.engine.request_response(_bytes(data), metadata, now=self._loop.time())
        future: asyncio.Future[RSocketPayload] = self._loop.create_future()
        self._calls[stream_id] = _Call(future=future)
        self.driver.wakeup()
        try:
            return await future
        except asyncio.CancelledError:
            self._cancel(stream_id)
            raise

    async def fire_and_forget(self, data: bytes | str, metadata: bytes | None = None) -> None:
        await self._ready(request=True)
        self.engine.fire_and_forget(_bytes(data), metadata, now=self._loop.time())
        await self._flush()

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

    def request_stream(
        self,
        data: bytes | str,
        metadata: bytes | None = None,
        *,
        limit_rate: int | None = None,
        low_tide: int | None = None,
    ) -> InboundStream[RSocketPayload]:
        """Open a request-stream; iterate the result.  ``limit_rate`` items are requested
        up front and replenished as the application consumes them."""
        self._check_open(request=True)
        rate = limit_rate or self.limit_rate
        stream_id = self.engine.request_stream(_bytes(data), metadata, initial_n=rate,
                                               now=self._loop.time())  # fmt: skip
        stream: InboundStream[RSocketPayload] = InboundStream(
            functools.partial(self._request_n, stream_id),
            functools.partial(self._cancel, stream_id),
            limit_rate=rate, low_tide=low_tide, granted=rate,
        )  # fmt: skip
        self._calls[stream_id] = _Call(sink=stream.sink)
        self.driver.wakeup()
        return stream

    def request_channel(
        self,
        data: bytes | str,
        metadata: bytes | None = None,
        *,
        outbound: AsyncIterable[PayloadLike] | None = None,
        limit_rate: int | None = None,
        low_tide: int | None = None,
    ) -> InboundStream[RSocketPayload]:
        """Open a channel whose first message is (data, metadata); ``outbound`` supplies
        the rest of our side (pulled only as the responder requests; without it our side
        completes at once).  Iterate the result for the responder's side."""
        self._check_open(request=True)
        rate = limit_rate or self.limit_rate
        stream_id = self.engine.request_channel(_bytes(data), metadata, initial_n=rate,
                                                complete=outbound is None,
                                                now=self._loop.time())  # fmt: skip
        stream: InboundStream[RSocketPayload] = InboundStream(
            functools.partial(self._request_n, stream_id),
            functools.partial(self._cancel, stream_id),
            limit_rate=rate, low_tide=low_tide, granted=rate,
        )  # fmt: skip
        call = _Call(sink=stream.sink)
        self._calls[stream_id] = call
        if outbound is not None:
            call.demand = OutboundDemand(functools.partial(self._can_send, stream_id))
            call.task = self._spawn(self._publish(stream_id, call, lambda: outbound))
        self.driver.wakeup()
        return stream

    async def wait_for_lease(self) -> None:
        """(lease) Wait until the peer's responder has granted a LEASE.  Ends with the
        connection: ``SetupRejected`` when the server refused the SETUP (a server without
        leasing answers ERROR[UNSUPPORTED_SETUP]), else why it ended (``ConnectionLost``
        ...)."""
        await self._wait_for(self._lease, lambda: self._lease_granted)

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

    # --- stream commands from InboundStream / publishers -------------------------------

    def _request_n(self, stream_id: int, n: int) -> None:
        engine = self.engine
        if stream_id in engine.open_streams:
            engine.request(stream_id, n)
            self.driver.wakeup()

    def _cancel(self, stream_id: int) -> None:
        call = self._calls.pop(stream_id, None)
        engine = self.engine
        if stream_id in engine.open_streams:
            try:
                engine.cancel(stream_id)
            except LocalProtocolError:
                # a channel responder cannot CANCEL: end our side with an error instead
                engine.send_error(stream_id, engine.version.application_error, b"canceled")
            self.driver.wakeup()
        if call is not None and call.demand is not None:
            call.demand.cancel()

    def _can_send(self, stream_id: int) -> bool:
        if not self._connected:
            return False
        stream = self.engine.open_streams.get(stream_id)
        if stream is None:
            return True  # the stream ended: the publisher learns it from its demand
        outbound = stream.outbound
        return outbound is not None and outbound.can_consume(1)

    def _send_item(self, stream_id: int, item: PayloadLike) -> None:
        payload = item if type(item) is RSocketPayload else as_payload(item)
        self.engine.send_next(stream_id, payload.data, payload.metadata)
        self._unwritten += len(payload.data)
        if self._unwritten >= WRITE_BATCH:
            # hand it to the transport now, so that backed_up() counts it
            self._unwritten = 0
            self.driver.write_now()
        else:
            self.driver.wakeup()

    def _backed_up(self) -> bool:
        return self.driver.backed_up()

    async def _flush(self) -> None:
        try:
            await self.driver.flush()
        except ConnectionLost:
            if self._finished.is_set() or self._reconnect is None and self._server is None:
                raise
            await self._reconnected.wait()  # a resumable session: continue once resumed
            self._check_open()

    async def _publish(self, stream_id: int, call: _Call,
                       source: Callable[[], AsyncIterable[PayloadLike]]) -> None:  # fmt: skip
        """Run a stream's publisher under the peer's demand, then complete it; an
        exception becomes ERROR[APPLICATION_ERROR]."""
        assert call.demand is not None
        try:
            await pump(source(), call.demand, functools.partial(self._send_item, stream_id),
                       backed_up=self._backed_up, flush=self._flush)  # fmt: skip
        except (StreamCancelled, TransportError):
            return
        except ProtocolError as error:
            if isinstance(error, StreamError) and stream_id not in self.engine.open_streams:
                return  # the peer ended the stream with ERROR
            self._end_with_error(stream_id, error)
            return
        except Exception as error:
            self._end_with_error(stream_id, error)
            return
        finally:
            self._finish_if_over(stream_id)  # both sides ended: forget the stream
        if stream_id in self.engine.open_streams:
            self.engine.send_complete(stream_id)
            self.driver.wakeup()
            self._finish_if_over(stream_id)

    def _end_with_error(self, stream_id: int, error: BaseException) -> None:
        engine = self.engine
        if stream_id not in engine.open_streams:
            return
        code = getattr(error, "error_code", engine.version.application_error)
        if not isinstance(error, ApplicationError):
            code = engine.version.application_error
        try:
            engine.send_error(stream_id, code, str(error) or type(error).__name__)
        except LocalProtocolError:
            engine.send_error(stream_id, engine.version.application_error, str(error))
        self.driver.wakeup()

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

    def _on_request(self, event: RequestReceived) -> None:
        stream_id = event.stream_id
        payload = RSocketPayload(event.data, event.metadata)
        model = event.model
        handler = self.handler
        if self._closing and self.engine.version.graceful_close is None:
            # 0.2 draining on our side (1.0: the engine refuses requests while closing)
            if model is not InteractionModel.FIRE_AND_FORGET:
                self.engine.send_error(stream_id, self.engine.version.rejected,
                                       b"the connection is closing")  # fmt: skip
                self.driver.wakeup()
            return
        if model is InteractionModel.REQUEST_RESPONSE:
            call = _Call()
            self._calls[stream_id] = call
            call.task = self._spawn_eagerly(self._respond(stream_id, payload))
        elif model is InteractionModel.FIRE_AND_FORGET:
            self._spawn_one_way(handler.fire_and_forget(payload))
        elif model is InteractionModel.REQUEST_STREAM:
            call = _Call(demand=OutboundDemand(functools.partial(self._can_send, stream_id)))
            self._calls[stream_id] = call
            call.task = self._spawn(
                self._publish(stream_id, call, lambda: handler.request_stream(payload))
            )
        else:
            inbound: InboundStream[RSocketPayload] = InboundStream(
                functools.partial(self._request_n, stream_id),
                functools.partial(self._cancel_inbound, stream_id),
                limit_rate=self.limit_rate,
                granted=self.limit_rate if event.complete else 0,
            )
            if event.complete:
                inbound.sink.complete()
            call = _Call(sink=inbound.sink,
                         demand=OutboundDemand(functools.partial(self._can_send, stream_id)))  # fmt: skip
            self._calls[stream_id] = call
            call.task = self._spawn(
                self._publish(stream_id, call, lambda: handler.request_channel(payload, inbound))
            )
            self.driver.wakeup()

    def _cancel_inbound(self, stream_id: int) -> None:
        """A channel responder stops reading the requester's side: nothing to send (the
        responder has no CANCEL); items still arriving are dropped with the sink."""

    async def _respond(self, stream_id: int, payload: RSocketPayload) -> None:
        try:
            result = await self.handler.request_response(payload)
            answer = as_payload(result)
        except asyncio.CancelledError:
            return  # the requester canceled
        except Exception as error:
            self._end_with_error(stream_id, error)
            return
        finally:
            self._calls.pop(stream_id, None)
        if stream_id in self.engine.open_streams:
            self.engine.send_next(stream_id, answer.data, answer.metadata, complete=True)
            self.driver.wakeup()

    async def _run_quietly(self, work: Awaitable[None]) -> None:
        try:
            await work
        except Exception:
            pass  # fire-and-forget / metadata push: nobody to tell ("no response")

    def _on_completed(self, event: StreamCompleted) -> None:
        call = self._calls.get(event.stream_id)
        if call is not None:
            if call.future is not None and not call.future.done():
                call.future.set_result(RSocketPayload())  # completed without a value
            if call.sink is not None:
                call.sink.complete()
        self._finish_if_over(event.stream_id)

    def _on_error(self, event: ErrorReceived) -> None:
        call = self._calls.pop(event.stream_id, None)
        if call is None:
            return
        message = event.message.decode("utf-8", "replace")
        if event.error_code == self.engine.version.application_error:
            call.fail(ApplicationError(message))
        else:
            call.fail(StreamError(event.error_code, message))

    def _on_canceled(self, event: StreamCanceled) -> None:
        call = self._calls.get(event.stream_id)
        if call is not None:
            if call.demand is not None:
                call.demand.cancel()
            elif call.task is not None:
                call.task.cancel()
        self._finish_if_over(event.stream_id)

    def _on_request_n(self, event: RequestNReceived) -> None:
        call = self._calls.get(event.stream_id)
        if call is not None and call.demand is not None:
            call.demand.wakeup()

    def _on_aborted(self, event: StreamAborted) -> None:
        version = self.engine.version
        if event.error_code in (version.connection_error, version.connection_close):
            return  # the connection ended: on_closed fails the call with the real cause
        call = self._calls.pop(event.stream_id, None)
        if call is not None:
            call.fail(StreamError(event.error_code, event.message))

    def _on_metadata_push(self, event: MetadataPushReceived) -> None:
        self._spawn_one_way(self.handler.metadata_push(event.metadata))

    def _on_frame(self, event: FrameReceived) -> None:
        self._spawn_one_way(self.handler.on_frame(event.frame))

    def _on_lease(self, event: LeaseReceived) -> None:
        self._lease_granted = True
        self._lease.set()

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
        setup = self.engine.setup
        if setup is not None and setup.lease:
            self._lease_granted = False
            self._lease.clear()
        self._send_granted_lease()
        self._reconnected.set()
        if self._attempt is not None and not self._attempt.done():
            self._attempt.set_result(None)
        for call in list(self._calls.values()):
            if call.demand is not None:
                call.demand.wakeup()

    def _adopt(self, other: RSocketPeer) -> None:
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

    def _park(self) -> None:
        self._connected = False
        self._reconnected.clear()

    def _expire(self) -> None:
        self._expiry = None
        self._end(ConnectionLost(f"not resumed within {self._resume_timeout} s",
                                 reason="resume-timeout"))  # fmt: skip

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
        self._lease.set()
        self._established.set()
        self._finished.set()
        if self._server is not None:
            self._server._forget(self)

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

    async def __aenter__(self) -> RSocketPeer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()


# ====================================================================== client


class _Connecting:
    """``await connect(...)`` or ``async with connect(...) as peer``."""

    def __init__(self, opening: Awaitable[RSocketPeer]) -> None:
        self._opening = opening
        self._peer: RSocketPeer | None = None

    def __await__(self) -> Generator[Any, None, RSocketPeer]:
        return self._opening.__await__()

    async def __aenter__(self) -> RSocketPeer:
        self._peer = await self._opening
        return self._peer

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        if self._peer is not None:
            await self._peer.close()


def connect(
    url: str,
    handler: RSocketHandler | None = None,
    *,
    version: str = "1.0",
    data_mime_type: str = "application/octet-stream",
    metadata_mime_type: str = "message/x.rsocket.composite-metadata.v0",
    setup_data: bytes = b"",
    setup_metadata: bytes | None = None,
    keepalive_interval: int = 20_000,
    max_lifetime: int = 90_000,
    lease: bool | tuple[int, int] = False,
    resume: bool | bytes = False,
    resume_timeout: float = 30.0,
    mtu: int | None = None,
    max_frame_size: int | None = None,
    limit_rate: int = DEFAULT_LIMIT_RATE,
    ssl: ssl_module.SSLContext | None = None,
    timeout: float | None = 10.0,
    capture: CaptureWriter | None = None,
    limits: Limits | None = None,
) -> _Connecting:
    """Connect to an RSocket server at ``url`` (tcp, tls, unix, ws, wss, memory) and send
    SETUP.  ``handler`` answers the server's requests to us.  Times in milliseconds as
    on the wire; ``resume=True`` (or a token) makes the session survive transport loss.
    ``lease``: set the SETUP's L flag -- our requests wait for the server's LEASE
    (``wait_for_lease``) and our responder grants the server one ("The client-side
    Responder MUST send a LEASE frame after a SETUP frame with the L flag set"):
    ``(ttl_ms, requests)`` renewed at half its time-to-live, or with ``True``
    ``UNLIMITED_LEASE``.
    ``capture`` records every frame (``wirestream.runtime.capture``; each transport, resumed ones
    too, is a connection of its own there).  ``limits``: sizes and time limits
    (``Limits``; ``mtu`` and ``max_frame_size``, when given, replace its own).  The server's
    first frame is due ``handshake_timeout`` plus one keepalive interval after connecting
    (``HandshakeTimeout`` ends the connection otherwise).
    """
    prefix = FRAME_LENGTH_SIZE if url.split(":", 1)[0].lower() in WEBSOCKET_SCHEMES else None

    async def dial() -> Transport:
        transport = await open_transport(url, ssl=ssl, message_prefix=prefix, timeout=timeout)
        return tap(transport, capture, protocol=f"rsocket/{version}", side="client")

    async def opening() -> RSocketPeer:
        token = None
        if resume:
            token = resume if isinstance(resume, bytes) else os.urandom(16)
        sizes = _with_sizes(limits, mtu, max_frame_size)
        setup = ClientSetup(
            keepalive_interval=keepalive_interval, max_lifetime=max_lifetime,
            metadata_mime_type=metadata_mime_type, data_mime_type=data_mime_type,
            metadata=setup_metadata, data=setup_data, lease=lease is not False,
            resume_token=token,
        )  # fmt: skip
        responder = handler or RSocketHandler()
        engine = RSocketConnection("client", version, setup=setup, limits=sizes,
                                   extensions=responder.extensions)  # fmt: skip
        transport = await dial()
        engine.connect(asyncio.get_running_loop().time())
        peer = RSocketPeer(engine, transport, responder, limit_rate=limit_rate,
                           reconnect=dial if token is not None else None,
                           resume_timeout=resume_timeout, limits=sizes)  # fmt: skip
        peer.handler.setup = engine.setup
        if lease is not False:
            peer._grant_leases(*(UNLIMITED_LEASE if lease is True else lease))
        return peer

    return _Connecting(opening())


# ====================================================================== server


class RSocketServer:
    """Accepts RSocket connections on a listener; one ``RSocketPeer`` per connection
    (per session with resumption).  ``async with await serve(...)`` closes it all."""

    def __init__(
        self,
        handler: RSocketHandler | HandlerFactory,
        *,
        version: str,
        setup_policy: SetupPolicy | None,
        lease: tuple[int, int] | None,
        resume: bool,
        resume_timeout: float,
        mtu: int | None,
        max_frame_size: int | None = None,
        limit_rate: int,
        limits: Limits | None = None,
    ) -> None:
        self._handler = handler
        self._version = version
        self._setup_policy = setup_policy
        self._lease = lease
        self._resume = resume
        self._resume_timeout = resume_timeout
        self._limits = _with_sizes(limits, mtu, max_frame_size)
        self._limit_rate = limit_rate
        self._peers: set[RSocketPeer] = set()
        self._sessions: dict[bytes, RSocketPeer] = {}
        self._resuming: dict[RSocketPeer, RSocketPeer] = {}
        self._refusing = False
        self.listener: Listener | None = None

    @property
    def url(self) -> str:
        assert self.listener is not None
        return self.listener.url

    @property
    def peers(self) -> frozenset[RSocketPeer]:
        return frozenset(self._peers)

    def _new_handler(self) -> RSocketHandler:
        if isinstance(self._handler, RSocketHandler):
            return self._handler
        return self._handler()

    async def _on_transport(self, transport: Transport) -> None:
        if self._refusing:  # shutting down: no new connection
            transport.close()
            return
        box: list[RSocketPeer] = []
        handler = self._new_handler()
        engine = RSocketConnection(
            "server", self._version, limits=self._limits, setup_policy=self._setup_policy,
            resume_lookup=functools.partial(self._lookup, box) if self._resume else None,
            leasing=self._lease is not None, extensions=handler.extensions,
        )  # fmt: skip
        peer = RSocketPeer(engine, transport, handler, limit_rate=self._limit_rate,
                           resume_timeout=self._resume_timeout, server=self,
                           limits=self._limits)  # fmt: skip
        box.append(peer)
        self._peers.add(peer)
        driver = peer.driver
        await driver.wait_closed()  # this transport's life, whichever session owns it

    def _lookup(self, box: list[RSocketPeer], token: bytes) -> ResumableSession | None:
        session = self._sessions.get(token)
        if session is None or session.closed:
            return None
        self._resuming[box[0]] = session
        return session.engine.session()

    def _established(self, peer: RSocketPeer, event: ConnectionEstablished) -> None:
        token = event.setup.resume_token
        if token is not None:
            self._sessions[token] = peer
        if self._lease is not None and event.setup.lease:
            # "If the server accepts the contents of the SETUP frame, it MUST send a LEASE
            # frame if the SETUP frame set the L flag" (without ``lease`` the engine
            # refused such a SETUP with ERROR[UNSUPPORTED_SETUP]).
            peer._grant_leases(*self._lease)

    def _forget(self, peer: RSocketPeer) -> None:
        self._peers.discard(peer)
        for token, session in list(self._sessions.items()):
            if session is peer:
                del self._sessions[token]
        self._resuming.pop(peer, None)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()

    async def shutdown(self, grace: float | None = None) -> None:
        """Stop accepting, close every connection -- with ``grace``, gracefully and all at
        once (``RSocketPeer.close(grace)``: their streams finish, new requests are refused)
        -- then the listener, and wait for it all."""
        self._refusing = True
        peers = list(self._peers)
        if peers:
            await asyncio.gather(*(peer.close(grace) for peer in peers))
        self.close()
        await self.wait_closed()

    async def wait_closed(self) -> None:
        for peer in list(self._peers):
            await peer.close()
        if self.listener is not None:
            await self.listener.wait_closed()

    async def __aenter__(self) -> RSocketServer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()
        await self.wait_closed()


async def serve(
    url: str,
    handler: RSocketHandler | HandlerFactory,
    *,
    version: str = "1.0",
    setup_policy: SetupPolicy | None = None,
    lease: tuple[int, int] | None = None,
    resume: bool = False,
    resume_timeout: float = 30.0,
    mtu: int | None = None,
    max_frame_size: int | None = None,
    limit_rate: int = DEFAULT_LIMIT_RATE,
    ssl: ssl_module.SSLContext | None = None,
    capture: CaptureWriter | None = None,
    limits: Limits | None = None,
) -> RSocketServer:
    """Serve RSocket on ``url`` (port 0 picks one: see ``.url``).  ``handler``: one
    ``RSocketHandler`` for every connection, or a factory called per connection.
    ``lease=(ttl_ms, requests)`` grants and renews leases to clients that ask for them
    (without it a SETUP with the L flag is refused with ERROR[UNSUPPORTED_SETUP]);
    ``resume`` keeps sessions of clients that negotiated resumption.  ``capture`` records
    every frame of every connection (``wirestream.runtime.capture``).  ``limits``: sizes,
    time limits, ``max_connections`` and ``max_streams`` (``Limits``; ``mtu`` and
    ``max_frame_size``, when given, replace its own)."""
    server = RSocketServer(handler, version=version, setup_policy=setup_policy, lease=lease,
                           resume=resume, resume_timeout=resume_timeout, mtu=mtu,
                           max_frame_size=max_frame_size, limit_rate=limit_rate,
                           limits=limits)  # fmt: skip
    prefix = FRAME_LENGTH_SIZE if url.split(":", 1)[0].lower() in WEBSOCKET_SCHEMES else None
    on_transport = tap_accepted(server._on_transport, capture, protocol=f"rsocket/{version}")
    limits = server._limits
    server.listener = await listen(url, on_transport, ssl=ssl, message_prefix=prefix,
                                   max_connections=limits.max_connections,
                                   handshake_timeout=limits.handshake_timeout)  # fmt: skip
    return server


def _with_sizes(limits: Limits | None, mtu: int | None, max_frame_size: int | None) -> Limits:
    """``limits`` (default ``Limits()``) with the keyword arguments that were given."""
    base = limits or DEFAULT_LIMITS
    if mtu is not None:
        base = dataclasses.replace(base, mtu=mtu)
    if max_frame_size is not None:
        base = dataclasses.replace(base, max_frame_size=max_frame_size)
    return base
