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

The peer is split by scope as the engine is: ``peer_connection.PeerConnection`` keeps the
connection (driver, establishment, leases, resumption, close), ``RSocketPeer`` adds the
streams (the requester calls above, the responder's handlers and publishers).

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
from collections.abc import AsyncIterable, Awaitable, Callable, Generator
from types import CoroutineType, TracebackType
from typing import Any

from wirestream.runtime.aio.eager import Continued
from wirestream.runtime.capture import CaptureWriter, tap, tap_accepted
from wirestream.runtime.aio import (
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
from wirestream.runtime.rsocket.lease_waiters import LeaseQueue
from wirestream.runtime.rsocket.options import ClientSetup, Limits, SetupPolicy
from wirestream.runtime.rsocket.versions import get_version
from wirestream.runtime.rsocket.resume import ResumableSession
from wirestream.runtime.rsocket.errors import ApplicationError, RSocketStreamError
from wirestream.runtime.rsocket.events import (
    ConnectionEstablished,
    ErrorReceived,
    InteractionModel,
    RequestNReceived,
    RequestReceived,
    SetupInfo,
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
from wirestream.runtime.rsocket.peer_connection import (
    DEFAULT_LIMIT_RATE,
    DEFAULT_LIMITS,
    FRAME_LENGTH_SIZE,
    UNLIMITED_LEASE,
    WEBSOCKET_SCHEMES,
    WRITE_BATCH,
    HandlerFactory,
    PeerConnection,
    _bytes,
    _Call,
)

__all__ = ["RSocketPeer", "RSocketServer", "connect", "serve", "DEFAULT_LIMIT_RATE",
           "UNLIMITED_LEASE"]  # fmt: skip


class RSocketPeer(PeerConnection):
    """One RSocket connection (or resumable session) under asyncio; see the module
    docstring.  Made by ``connect`` and ``serve``, not directly."""

    async def request_response(
        self, data: bytes | str, metadata: bytes | None = None
    ) -> RSocketPayload:
        """Send a request, wait for its one response (``RSocketStreamError`` on ERROR)."""
        if self._closing or self._finished.is_set():  # (what ``_check_open`` raises for)
            self._check_open(request=True)
        if not self._connected:
            await self._ready(request=True)
        if self._lease_waiters.queue is not None:  # (``admit`` returns at once without)
            await self._lease_waiters.admit()
        body = data if type(data) is bytes else _bytes(data)
        stream_id = self.engine.request_response(body, metadata, now=self._loop.time())
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
        await self._lease_waiters.admit()
        self.engine.fire_and_forget(_bytes(data), metadata, now=self._loop.time())
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
        body = _bytes(data)

        def open_stream() -> int:
            return self.engine.request_stream(body, metadata, initial_n=rate,
                                              now=self._loop.time())  # fmt: skip

        if not self._connected or self._lease_waiters.must_wait():
            return self._open_later(open_stream, rate, low_tide, None)
        stream_id = open_stream()
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
        body = _bytes(data)

        def open_channel() -> int:
            return self.engine.request_channel(body, metadata, initial_n=rate,
                                               complete=outbound is None,
                                               now=self._loop.time())  # fmt: skip

        if not self._connected or self._lease_waiters.must_wait():
            return self._open_later(open_channel, rate, low_tide, outbound)
        stream_id = open_channel()
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

    def _open_later(self, open_stream: Callable[[], int], rate: int, low_tide: int | None,
                    outbound: AsyncIterable[PayloadLike] | None,
                    ) -> InboundStream[RSocketPayload]:  # fmt: skip
        """A stream or channel whose request cannot go yet: a resumable session waiting
        for its transport ("The client must NOT send any other frame types until
        resumption succeeds"), or a request waiting in the lease queue (``LeaseQueue``).
        The stream is returned now and its request goes once the session resumed and a
        LEASE allows it; the session's end (not resumed within ``resume_timeout``,
        rejected) or a refusal (queue full, deadline passed) fails the stream."""
        opened: list[int] = []

        def request_n(n: int) -> None:
            if opened:
                self._request_n(opened[0], n)

        def cancel() -> None:
            if opened:
                self._cancel(opened[0])
            else:
                waiting.cancel()  # leaves the queue: nothing was sent

        stream: InboundStream[RSocketPayload] = InboundStream(
            request_n, cancel, limit_rate=rate, low_tide=low_tide, granted=rate
        )

        async def wait_then_open() -> None:
            try:
                await self._ready(request=True)
                await self._lease_waiters.admit()
                stream_id = open_stream()
            except ProtocolError as error:
                stream.sink.fail(error)
                return
            except asyncio.CancelledError:
                stream.sink.fail(self._error or StreamCancelled("canceled before it was sent"))
                raise
            opened.append(stream_id)
            call = _Call(sink=stream.sink)
            self._calls[stream_id] = call
            if outbound is not None:
                call.demand = OutboundDemand(functools.partial(self._can_send, stream_id))
                call.task = self._spawn(self._publish(stream_id, call, lambda: outbound))
            self.driver.wakeup()

        waiting = self._spawn(wait_then_open())
        return stream

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
        # Asked after every item a publisher sends: the transport's buffer grows only
        # when the driver writes to it, so while no write happened since it last had
        # room, it still has (it can only have drained meanwhile).
        driver = self.driver
        writes = driver.writes
        if writes == self._room_at_write and driver is self._room_driver:
            return False
        if driver.backed_up():
            return True
        self._room_at_write = writes
        self._room_driver = driver
        return False

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
            if isinstance(error, RSocketStreamError) and stream_id not in self.engine.open_streams:
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
            self._respond_eagerly(stream_id, payload)
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

    def _respond_eagerly(self, stream_id: int, payload: RSocketPayload) -> None:
        """Answer a request-response: the handler runs at once until it first waits
        (``wirestream.runtime.aio.eager``).  One that answers without waiting (most: an
        echo, a lookup) is answered here, with no coroutine or task of ours; one that
        waits goes on in a task (``_respond``), which a CANCEL or the end cancels."""
        try:
            work = self.handler.request_response(payload)
            if type(work) is not CoroutineType:  # another awaitable: the general path
                respond = self._respond(stream_id, work)
                self._track_response(stream_id, self._spawn_eagerly(respond))
                return
            try:
                waiting_on = work.send(None)
            except StopIteration as done:
                result = done.value
                answer = result if type(result) is RSocketPayload else as_payload(result)
            else:
                rest = Continued(work, waiting_on)
                task = self._loop.create_task(self._respond(stream_id, rest))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                self._track_response(stream_id, task)
                return
        except asyncio.CancelledError:
            return  # (as ``_respond``)
        except Exception as error:
            self._end_with_error(stream_id, error)
            return
        self._answer(stream_id, answer)

    def _track_response(self, stream_id: int, task: asyncio.Task[None] | None) -> None:
        """A request-response handler that waits: its task is what a CANCEL or the end
        cancels.  (One that answered at once needs no entry: a _Call without a task,
        future, sink or demand is inert.)"""
        if task is not None:
            call = _Call()
            call.task = task
            self._calls[stream_id] = call

    async def _respond(self, stream_id: int, work: Awaitable[PayloadLike]) -> None:
        try:
            result = await work
            answer = result if type(result) is RSocketPayload else as_payload(result)
        except asyncio.CancelledError:
            return  # the requester canceled
        except Exception as error:
            self._end_with_error(stream_id, error)
            return
        finally:
            self._calls.pop(stream_id, None)
        self._answer(stream_id, answer)

    def _answer(self, stream_id: int, answer: RSocketPayload) -> None:
        if stream_id in self.engine.open_streams:
            self.engine.send_next(stream_id, answer.data, answer.metadata, complete=True)
            self.driver.wakeup()

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
            call.fail(RSocketStreamError(event.error_code, message))

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
            call.fail(RSocketStreamError(event.error_code, event.message))

    def _event_handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            **super()._event_handlers(),
            RequestReceived: self._on_request,
            StreamCompleted: self._on_completed,
            ErrorReceived: self._on_error,
            StreamCanceled: self._on_canceled,
            RequestNReceived: self._on_request_n,
            StreamAborted: self._on_aborted,
        }


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
    lease_queue: LeaseQueue | None = None,
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
    ``UNLIMITED_LEASE``.  ``lease_queue``: requests that no LEASE allows wait for one
    (bounded, each with a deadline: ``LeaseQueue``) instead of failing with ``NoLease``.
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
                           resume_timeout=resume_timeout, limits=sizes,
                           lease_queue=lease_queue)  # fmt: skip
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
        lease_queue: LeaseQueue | None = None,
    ) -> None:
        self._handler = handler
        self._lease_queue = lease_queue
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
            "server", self._version, limits=self._limits, setup_policy=self._admit_setup,
            resume_lookup=functools.partial(self._lookup, box) if self._resume else None,
            leasing=self._lease is not None, extensions=handler.extensions,
        )  # fmt: skip
        peer = RSocketPeer(engine, transport, handler, limit_rate=self._limit_rate,
                           resume_timeout=self._resume_timeout, server=self,
                           limits=self._limits, lease_queue=self._lease_queue)  # fmt: skip
        box.append(peer)
        self._peers.add(peer)
        driver = peer.driver
        await driver.wait_closed()  # this transport's life, whichever session owns it

    def _admit_setup(self, info: SetupInfo) -> tuple[int, str] | None:
        """The engine's SETUP hook: the token rule, then the application's policy.

        Seed 003, Resume Operation: "A server should not accept a SETUP with a Token that
        is currently already being used" -- accepting it would replace the live (or
        parked, resumable) session under that token, so its client could no longer
        resume: a token collision or a replayed token would take the session over."""
        token = info.resume_token
        if token is not None:
            session = self._sessions.get(token)
            if session is not None and not session.closed:
                code = get_version(self._version).rejected_setup
                return code, "the resume token is in use by another session"
        return None if self._setup_policy is None else self._setup_policy(info)

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
    lease_queue: LeaseQueue | None = None,
) -> RSocketServer:
    """Serve RSocket on ``url`` (port 0 picks one: see ``.url``).  ``handler``: one
    ``RSocketHandler`` for every connection, or a factory called per connection.
    ``lease=(ttl_ms, requests)`` grants and renews leases to clients that ask for them
    (without it a SETUP with the L flag is refused with ERROR[UNSUPPORTED_SETUP]);
    ``lease_queue``: our requests to such clients wait for their LEASE (``LeaseQueue``);
    ``resume`` keeps sessions of clients that negotiated resumption.  ``capture`` records
    every frame of every connection (``wirestream.runtime.capture``).  ``limits``: sizes,
    time limits, ``max_connections`` and ``max_streams`` (``Limits``; ``mtu`` and
    ``max_frame_size``, when given, replace its own)."""
    server = RSocketServer(handler, version=version, setup_policy=setup_policy, lease=lease,
                           resume=resume, resume_timeout=resume_timeout, mtu=mtu,
                           max_frame_size=max_frame_size, limit_rate=limit_rate,
                           limits=limits, lease_queue=lease_queue)  # fmt: skip
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
