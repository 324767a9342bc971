"""The real rsocket-py 0.4.20 as the other end of our RSocket client and server.

Nothing here is a mock: every frame is produced and consumed by rsocket-py (package
``rsocket``). Two halves:

**Server** -- ``await start_rsocket_py_server(transport="tcp" | "ws", fragment_size=...,
lease=...)`` starts an rsocket-py server on 127.0.0.1 (port 0; ``.url`` has the real port)
and returns an ``RsocketPyServer``; ``await server.close()`` closes every connection's
``RSocketServer`` and the listener. ``server.received`` (``Received``) records what the
server saw: SETUP fields, fire-and-forget payloads, metadata pushes, cancellations,
connection-level ERRORs.

The handler is rsocket-py's ``RoutingRequestHandler`` over a ``RequestRouter`` (routes in
composite metadata, ``message/x.rsocket.routing.v0``), plus unrouted service when the
SETUP metadata mime type is not composite metadata or a request carries no route:

=========  ==================  ==========================================================
route      interaction         behaviour
=========  ==================  ==========================================================
(none)     request-response    echo: data and metadata as received
(none)     fire-and-forget     recorded in ``received.fire_and_forget`` (route ``None``)
(none)     request-stream      data is a decimal N: N payloads b"0" .. b"N-1", complete
(none)     request-channel     echoes every inbound payload (the first one too), completes
                               after the requester completes
(any)      metadata-push       recorded (raw metadata) in ``received.metadata_pushes``
"echo"     request-response    echo: data and metadata (the composite route metadata)
"ticks"    request-stream      like the unrouted stream: N from data
"channel"  request-channel     like the unrouted channel
"fail"     request-response    raises RuntimeError("boom"): ERROR APPLICATION_ERROR "boom"
"slow"     request-stream      endless, one payload every ~10 ms (b"0", b"1", ...); its
                               cancellation is recorded in ``received.cancelled``
"fnf"      fire-and-forget     recorded in ``received.fire_and_forget`` (route "fnf")
=========  ==================  ==========================================================

An unknown route is answered by rsocket-py's own behaviour: request-response,
request-stream and request-channel get ERROR(APPLICATION_ERROR) whose data is the route
name (``str(RSocketUnknownRoute(route))``); fire-and-forget is logged and dropped.

**Client** -- ``async with rsocket_py_client(url, ...) as client`` connects rsocket-py's
``RSocketClient`` over TCP (``tcp://host:port``) or WebSocket (``ws://host:port/path``)
to any server (ours included). Helpers: ``py_request_response``, ``py_request_stream``
(``take=k`` cancels after k items), ``py_request_channel``, ``py_fire_and_forget``,
``py_metadata_push``. Errors arrive as ``PyPeerError(code, message)``.

rsocket-py facts these helpers rely on (read in its sources, checked by
tests/rsocket/test_rsocket_py_peers.py):

* payload fields arrive as ``bytearray``; the helpers and records convert to ``bytes``;
* an ERROR frame becomes ``RuntimeError(message)`` for APPLICATION_ERROR (the code is
  lost) and ``RSocketProtocolError(code, data)`` otherwise; a connection that closes
  fails every open request with CONNECTION_ERROR;
* WebSocket: rsocket-py's client transports need aiohttp or asyncwebsockets (neither is
  installed); its library-neutral ``WebsocketsTransport`` (one frame per binary message,
  no length prefix) is driven here by ``websockets`` on both sides;
* no resumption (a SETUP with the resume flag gets ERROR UNSUPPORTED_SETUP); lease only
  when the server has a lease publisher (else UNSUPPORTED_SETUP), and rsocket-py never
  enforces the lease it grants on incoming requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import websockets
from rsocket.awaitable.collector_subscriber import CollectorSubscriber
from rsocket.error_codes import ErrorCode
from rsocket.exceptions import RSocketProtocolError, RSocketTransportError
from rsocket.extensions.composite_metadata import CompositeMetadata
from rsocket.extensions.helpers import composite
from rsocket.extensions.helpers import route as routing_item
from rsocket.extensions.mimetypes import WellKnownMimeTypes
from rsocket.extensions.routing import RoutingMetadata
from rsocket.frame import MAX_REQUEST_N, FrameFragmentMixin
from rsocket.helpers import DefaultPublisherSubscription, create_future, single_transport_provider
from rsocket.lease import SingleLeasePublisher
from rsocket.payload import Payload
from rsocket.routing.request_router import RequestRouter
from rsocket.routing.routing_request_handler import RoutingRequestHandler
from rsocket.rsocket_client import RSocketClient
from rsocket.rsocket_server import RSocketServer
from rsocket.streams.empty_stream import EmptyStream
from rsocket.streams.error_stream import ErrorStream
from rsocket.streams.stream_from_async_generator import StreamFromAsyncGenerator
from rsocket.streams.stream_from_generator import StreamFromGenerator
from rsocket.transports.tcp import TransportTCP
from rsocket.transports.websockets_transport import WebsocketsTransport

__all__ = [
    "APPLICATION_ERROR",
    "COMPOSITE_METADATA",
    "OCTET_STREAM",
    "PyPeerError",
    "Received",
    "RequestRecord",
    "RsocketPyServer",
    "SetupRecord",
    "py_fire_and_forget",
    "py_metadata_push",
    "py_one_item_channel",
    "py_request_channel",
    "py_request_response",
    "py_request_stream",
    "route_metadata",
    "rsocket_py_client",
    "start_rsocket_py_server",
]

COMPOSITE_METADATA: bytes = WellKnownMimeTypes.MESSAGE_RSOCKET_COMPOSITE_METADATA.value.name
OCTET_STREAM: bytes = WellKnownMimeTypes.APPLICATION_OCTET_STREAM.value.name
APPLICATION_ERROR = int(ErrorCode.APPLICATION_ERROR)

SLOW_STREAM_PERIOD = 0.01  # seconds between two payloads of the "slow" route
CHANNEL_WINDOW = 32  # inbound REQUEST_N window of the echo channel


def _b(value: bytes | bytearray | None) -> bytes | None:
    return None if value is None else bytes(value)


# --------------------------------------------------------------------------------------
# What the server saw
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SetupRecord:
    """The SETUP frame an rsocket-py server received (RSocket 1.0 "SETUP Frame")."""

    major_version: int
    minor_version: int
    keepalive_ms: int
    max_lifetime_ms: int
    lease: bool
    resume: bool
    data_mime: bytes
    metadata_mime: bytes
    data: bytes | None
    metadata: bytes | None


@dataclass(frozen=True)
class RequestRecord:
    """One fire-and-forget request: its route (None when unrouted) and payload."""

    route: str | None
    data: bytes | None
    metadata: bytes | None


@dataclass
class Received:
    """Everything an ``RsocketPyServer`` recorded, across its connections, in order."""

    connections: int = 0
    setups: list[SetupRecord] = field(default_factory=list)
    fire_and_forget: list[RequestRecord] = field(default_factory=list)
    metadata_pushes: list[bytes] = field(default_factory=list)
    # (interaction, route): ("stream", "slow"), ("stream", None), ("channel", "channel"), ...
    cancelled: list[tuple[str, str | None]] = field(default_factory=list)
    # connection-level ERROR frames (stream 0): (error code, data)
    errors: list[tuple[int, bytes]] = field(default_factory=list)
    # frames received with the FOLLOWS flag (fragments other than the last of a payload)
    fragments: int = 0
    closed_connections: int = 0

    async def wait_for(self, predicate: Callable[[Received], bool], timeout: float = 5.0) -> None:
        """Wait until ``predicate(self)`` holds; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"rsocket-py server never saw it; it recorded {self!r}")
            await asyncio.sleep(0.005)


# --------------------------------------------------------------------------------------
# Publishers the server's handler returns (rsocket-py reactive-streams API)
# --------------------------------------------------------------------------------------


def _ticks(count: int) -> Iterator[tuple[Payload, bool]]:
    # StreamFromGenerator wants (payload, is_complete) pairs. Flagging the last one
    # complete sends NEXT|COMPLETE; if the generator just ended, rsocket-py would send an
    # extra *empty* NEXT|COMPLETE payload instead of a bare COMPLETE (quirk).
    for i in range(count):
        yield Payload(str(i).encode()), i == count - 1


def _counting_stream(data: bytes | bytearray | None, on_cancel: Callable[[], None]) -> Any:
    try:
        count = int(bytes(data or b"").decode("ascii"))
    except ValueError:
        return ErrorStream(ValueError(f"request-stream data must be a decimal count, got {data!r}"))
    if count <= 0:
        return EmptyStream()  # a bare COMPLETE
    return StreamFromGenerator(lambda: _ticks(count), on_cancel=on_cancel)


class _EchoChannel(DefaultPublisherSubscription):  # type: ignore[misc]
    """Echo for request-channel: the first payload, then each inbound payload, in order.

    It is both the responder's outbound Publisher/Subscription (``subscribe``,
    ``request``, ``cancel``) and, through ``inbound``, the Subscriber of the requester's
    payloads. Outbound follows the requester's REQUEST_N; inbound is requested in a
    window of CHANNEL_WINDOW, replenished by half-windows as echoes go out, so at most
    CHANNEL_WINDOW + 1 payloads are ever buffered.
    """

    def __init__(self, first: Payload, on_cancel: Callable[[], None]) -> None:
        self._buffer: deque[Payload] = deque([Payload(_b(first.data), _b(first.metadata))])
        self._demand = 0
        self._inbound_done = False
        self._finished = False
        self._consumed = 0
        self._on_cancel = on_cancel
        self._inbound: Any = None
        self._subscriber: Any = None
        self.inbound = _ChannelInbound(self)

    # outbound Subscription, driven by the requester
    def request(self, n: int) -> None:
        self._demand += n
        self._drain()

    def cancel(self) -> None:
        if not self._finished:
            self._finished = True
            self._on_cancel()

    # inbound, called by _ChannelInbound
    def inbound_subscribed(self, subscription: Any) -> None:
        self._inbound = subscription
        # rsocket-py subscribes us before it looks at the REQUEST_CHANNEL's COMPLETE flag;
        # asking one loop turn later sends no REQUEST_N to a requester that has completed.
        asyncio.get_running_loop().call_soon(self._request_first_window)

    def _request_first_window(self) -> None:
        if not self._inbound_done and not self._finished:
            self._inbound.request(CHANNEL_WINDOW)

    def inbound_next(self, payload: Payload, is_complete: bool) -> None:
        self._buffer.append(Payload(_b(payload.data), _b(payload.metadata)))
        if is_complete:
            self._inbound_done = True
        self._drain()

    def inbound_complete(self) -> None:
        self._inbound_done = True
        self._drain()

    def inbound_error(self, exception: Exception) -> None:
        # rsocket-py ends the whole channel on an inbound ERROR: nothing left to send.
        self._inbound_done = True
        self._finished = True

    def _drain(self) -> None:
        if self._subscriber is None:
            return
        while self._buffer and (self._demand > 0 or self._finished):
            payload = self._buffer.popleft()
            if not self._finished:
                self._demand -= 1
                # the last echo carries COMPLETE itself when the requester is done (one
                # frame: nothing can slip between its fragments, see _ContiguousFragments)
                last = self._inbound_done and not self._buffer
                self._subscriber.on_next(payload, last)
                if last:
                    self._finished = True
            self._consumed += 1
            if self._consumed >= CHANNEL_WINDOW // 2 and not self._inbound_done:
                self._inbound.request(self._consumed)
                self._consumed = 0
        if self._inbound_done and not self._buffer and not self._finished:
            self._finished = True
            self._subscriber.on_complete()


class _ChannelInbound:
    """The reactive-streams Subscriber face of ``_EchoChannel``."""

    def __init__(self, channel: _EchoChannel) -> None:
        self._channel = channel

    def on_subscribe(self, subscription: Any) -> None:
        self._channel.inbound_subscribed(subscription)

    def on_next(self, value: Payload, is_complete: bool = False) -> None:
        self._channel.inbound_next(value, is_complete)

    def on_complete(self) -> None:
        self._channel.inbound_complete()

    def on_error(self, exception: Exception) -> None:
        self._channel.inbound_error(exception)


# --------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------


def _build_router(received: Received) -> Any:
    router = RequestRouter()

    async def echo(payload: Payload) -> Any:
        return create_future(Payload(_b(payload.data), _b(payload.metadata)))

    async def fail(payload: Payload) -> Any:
        raise RuntimeError("boom")  # -> ERROR(APPLICATION_ERROR, "boom")

    async def ticks(payload: Payload) -> Any:
        return _counting_stream(
            payload.data, lambda: received.cancelled.append(("stream", "ticks"))
        )

    async def slow(payload: Payload) -> Any:
        async def forever() -> Any:
            i = 0
            while True:
                yield Payload(str(i).encode()), False
                i += 1
                await asyncio.sleep(SLOW_STREAM_PERIOD)

        return StreamFromAsyncGenerator(
            forever, on_cancel=lambda: received.cancelled.append(("stream", "slow"))
        )

    async def channel(payload: Payload) -> Any:
        echo = _EchoChannel(payload, lambda: received.cancelled.append(("channel", "channel")))
        return echo, echo.inbound

    async def fnf(payload: Payload) -> None:
        received.fire_and_forget.append(
            RequestRecord("fnf", _b(payload.data), _b(payload.metadata))
        )

    # RequestRouter's decorators, applied as calls
    router.response("echo")(echo)
    router.response("fail")(fail)
    router.stream("ticks")(ticks)
    router.stream("slow")(slow)
    router.channel("channel")(channel)
    router.fire_and_forget("fnf")(fnf)
    return router


def _route_of(metadata_mime: bytes | None, metadata: bytes | bytearray | None) -> str | None:
    """The request's route, or None when it is unrouted (see the module docstring)."""
    if metadata_mime != COMPOSITE_METADATA or not metadata:
        return None
    try:
        parsed = CompositeMetadata().parse(bytes(metadata))
    except Exception:  # not composite metadata after all: treat as unrouted
        return None
    for item in parsed.items:
        if isinstance(item, RoutingMetadata) and item.tags:
            return bytes(item.tags[0]).decode("utf-8", "replace")
    return None


class _PeerHandler(RoutingRequestHandler):  # type: ignore[misc]
    """rsocket-py's routing handler, plus the unrouted behaviours and the records."""

    def __init__(self, router: Any, received: Received) -> None:
        super().__init__(router)
        self._received = received

    async def on_setup(self, data_encoding: bytes, metadata_encoding: bytes, payload: Any) -> None:
        # RoutingRequestHandler rejects a SETUP without composite metadata; we serve it
        # unrouted instead.
        self.data_encoding = data_encoding
        self.metadata_encoding = metadata_encoding

    def _route(self, payload: Payload) -> str | None:
        return _route_of(_b(self.metadata_encoding), payload.metadata)

    async def request_response(self, payload: Payload) -> Any:
        if self._route(payload) is None:
            return create_future(Payload(_b(payload.data), _b(payload.metadata)))
        return await super().request_response(payload)

    async def request_fire_and_forget(self, payload: Payload) -> None:
        if self._route(payload) is None:
            self._received.fire_and_forget.append(
                RequestRecord(None, _b(payload.data), _b(payload.metadata))
            )
            return
        await super().request_fire_and_forget(payload)

    async def request_stream(self, payload: Payload) -> Any:
        if self._route(payload) is None:
            return _counting_stream(
                payload.data, lambda: self._received.cancelled.append(("stream", None))
            )
        return await super().request_stream(payload)

    async def request_channel(self, payload: Payload) -> Any:
        if self._route(payload) is None:
            echo = _EchoChannel(payload, lambda: self._received.cancelled.append(("channel", None)))
            return echo, echo.inbound
        return await super().request_channel(payload)

    async def on_metadata_push(self, payload: Payload) -> None:
        self._received.metadata_pushes.append(bytes(payload.metadata or b""))

    async def on_error(self, error_code: Any, payload: Payload) -> None:
        self._received.errors.append((int(error_code), bytes(payload.data or b"")))

    async def on_close(self, rsocket: Any, exception: Exception | None = None) -> None:
        self._received.closed_connections += 1


class _ContiguousFragments:
    """Mixin: send every fragment of a frame before any other frame (``contiguous_fragments``).

    rsocket-py's sender (``RSocketBase._get_next_frame_to_send``) moves a frame that still
    has fragments to the back of its send queue after each fragment, so the frames queued
    behind it -- on the same stream too -- go out between its fragments. Protocol.md
    ("Fragmentation And Reassembly") wants the fragments of one payload contiguous on its
    stream; the receiver then merges the intruder into the half-built payload (a COMPLETE
    behind a fragmented PAYLOAD turns it into a bare COMPLETE: the data is lost). This
    override keeps the frame at the head of the queue until its last fragment is out.
    """

    _send_queue: Any

    @contextlib.asynccontextmanager
    async def _get_next_frame_to_send(self, transport: Any) -> AsyncIterator[Any]:
        source = await self._send_queue.peek()
        if isinstance(source, FrameFragmentMixin):
            fragment = source.get_next_fragment(transport.requires_length_header())
            if not fragment.flags_follows:
                source.get_next_fragment(transport.requires_length_header())  # ends generator
                self._send_queue.get_nowait()
            yield fragment
        else:
            self._send_queue.get_nowait()
            yield source


class _RecordingRSocketServer(RSocketServer):  # type: ignore[misc]
    """``RSocketServer`` that records every SETUP frame's fields before handling it."""

    def __init__(self, *args: Any, received: Received, **kwargs: Any) -> None:
        self._received = received
        super().__init__(*args, **kwargs)

    async def handle_setup(self, frame: Any) -> None:
        self._received.setups.append(
            SetupRecord(
                major_version=frame.major_version,
                minor_version=frame.minor_version,
                keepalive_ms=frame.keep_alive_milliseconds,
                max_lifetime_ms=frame.max_lifetime_milliseconds,
                lease=bool(frame.flags_lease),
                resume=bool(frame.flags_resume),
                data_mime=bytes(frame.data_encoding),
                metadata_mime=bytes(frame.metadata_encoding),
                data=_b(frame.data),
                metadata=_b(frame.metadata),
            )
        )
        await super().handle_setup(frame)

    async def _handle_next_frame(self, frame: Any, handlers: Any) -> None:
        if getattr(frame, "flags_follows", False):
            self._received.fragments += 1
        await super()._handle_next_frame(frame, handlers)


class _ContiguousRecordingRSocketServer(_ContiguousFragments, _RecordingRSocketServer):
    pass


class RsocketPyServer:
    """A running rsocket-py server: ``url`` (and ``port``), ``received``, ``close()``."""

    def __init__(
        self,
        transport: str,
        fragment_size: int | None,
        lease: bool,
        lease_requests: int,
        lease_ttl: timedelta,
        contiguous_fragments: bool,
    ) -> None:
        if transport not in ("tcp", "ws"):
            raise ValueError(f"transport must be 'tcp' or 'ws', not {transport!r}")
        self.transport = transport
        self.url = ""
        self.port = 0
        self.received = Received()
        self._fragment_size = fragment_size
        self._lease = lease
        self._lease_requests = lease_requests
        self._lease_ttl = lease_ttl
        self._rsocket_class = (
            _ContiguousRecordingRSocketServer if contiguous_fragments else _RecordingRSocketServer
        )
        self._router = _build_router(self.received)
        self._rsockets: list[Any] = []
        self._ws_handlers: set[asyncio.Task[None]] = set()
        self._listener: Any = None

    def _new_rsocket(self, rsocket_transport: Any) -> Any:
        self.received.connections += 1
        rsocket = self._rsocket_class(
            rsocket_transport,
            received=self.received,
            handler_factory=lambda: _PeerHandler(self._router, self.received),
            fragment_size_bytes=self._fragment_size,
            lease_publisher=(
                SingleLeasePublisher(
                    maximum_request_count=self._lease_requests,
                    maximum_lease_time=self._lease_ttl,
                )
                if self._lease
                else None
            ),
        )
        self._rsockets.append(rsocket)
        return rsocket

    async def _start(self) -> None:
        if self.transport == "tcp":

            def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                self._new_rsocket(TransportTCP(reader, writer))

            self._listener = await asyncio.start_server(on_connection, "127.0.0.1", 0)
            self.port = self._listener.sockets[0].getsockname()[1]
            self.url = f"tcp://127.0.0.1:{self.port}"
        else:
            self._listener = await websockets.serve(self._on_websocket, "127.0.0.1", 0)
            self.port = next(iter(self._listener.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{self.port}/"

    async def _on_websocket(self, websocket: Any) -> None:
        ws_transport = WebsocketsTransport()
        rsocket = self._new_rsocket(ws_transport)
        task = asyncio.current_task()
        assert task is not None
        self._ws_handlers.add(task)
        try:
            await _pump_websocket(ws_transport, websocket)
        finally:
            self._ws_handlers.discard(task)
            # WebsocketsTransport never tells rsocket-py the connection ended: without
            # this the RSocketServer's receiver would wait for a frame forever.
            await rsocket.close()

    async def close(self) -> None:
        """Close every connection's RSocketServer, then the listener."""
        for rsocket in self._rsockets:
            await rsocket.close()
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
            self._listener = None
        await _settle()

    async def __aenter__(self) -> RsocketPyServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def start_rsocket_py_server(
    *,
    transport: str = "tcp",
    fragment_size: int | None = None,
    lease: bool = False,
    lease_requests: int = 1_000_000,
    lease_ttl: timedelta = timedelta(minutes=10),
    contiguous_fragments: bool = False,
) -> RsocketPyServer:
    """Start an rsocket-py server on 127.0.0.1 (port 0) over "tcp" or "ws".

    ``fragment_size`` (>= 64, rsocket-py's minimum) makes rsocket-py fragment every frame
    it sends that is larger (the size includes the 3-byte length prefix on TCP).
    ``lease=True``: the server accepts SETUPs with the lease flag and then sends one LEASE
    of ``lease_requests`` requests for ``lease_ttl`` (``SingleLeasePublisher``);
    without it a lease SETUP is rejected with ERROR UNSUPPORTED_SETUP.
    ``contiguous_fragments=True`` repairs rsocket-py's sender so the fragments of one
    frame go out back to back (see ``_ContiguousFragments``); the default is stock
    rsocket-py, which interleaves them with the frames queued behind.
    """
    server = RsocketPyServer(
        transport, fragment_size, lease, lease_requests, lease_ttl, contiguous_fragments
    )
    await server._start()
    return server


async def _pump_websocket(ws_transport: Any, websocket: Any) -> None:
    """Run rsocket-py's ``WebsocketsTransport`` over a ``websockets`` connection.

    Its own ``handler()`` leaves a reader that failed (peer aborted: ConnectionClosedError)
    as an unretrieved task exception, and never tells the RSocket that the connection
    ended. This runs the same reader and writer, and when the first one ends it stops
    the other and queues ``RSocketTransportError`` for rsocket-py's receiver, as
    rsocket-py's aiohttp transport does: open requests then fail with CONNECTION_ERROR.
    """
    reader = asyncio.create_task(ws_transport.consumer_handler(websocket))
    writer = asyncio.create_task(ws_transport.producer_handler(websocket))
    try:
        await asyncio.wait([reader, writer], return_when=asyncio.FIRST_COMPLETED)
    finally:
        reader.cancel()
        writer.cancel()
        outcomes = await asyncio.gather(reader, writer, return_exceptions=True)
        ws_transport._incoming_frame_queue.put_nowait(RSocketTransportError())
    for outcome in outcomes:
        if isinstance(outcome, Exception) and not isinstance(outcome, websockets.ConnectionClosed):
            raise outcome


async def _settle() -> None:
    """Let tasks rsocket-py spawned without awaiting them (generator aclose, ...) finish."""
    for _ in range(3):
        await asyncio.sleep(0)


# --------------------------------------------------------------------------------------
# Client
# --------------------------------------------------------------------------------------


class PyPeerError(Exception):
    """An ERROR frame as rsocket-py's client reported it: ``code`` and ``message``.

    rsocket-py turns APPLICATION_ERROR into a bare RuntimeError, so that code is inferred.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"ERROR 0x{code:X}: {message}")
        self.code = code
        self.message = message


def _peer_error(exc: BaseException) -> PyPeerError | None:
    if isinstance(exc, RSocketProtocolError):
        return PyPeerError(int(exc.error_code), exc.data or "")
    if type(exc) is RuntimeError:
        return PyPeerError(APPLICATION_ERROR, str(exc))
    return None


@contextlib.contextmanager
def _peer_errors() -> Iterator[None]:
    try:
        yield
    except (RSocketProtocolError, RuntimeError) as exc:
        translated = _peer_error(exc)
        if translated is None:
            raise
        raise translated from exc


class _CountingRSocketClient(RSocketClient):  # type: ignore[misc]
    """``RSocketClient`` that counts the fragments (FOLLOWS flag) it receives."""

    fragments_received = 0

    async def _handle_next_frame(self, frame: Any, handlers: Any) -> None:
        if getattr(frame, "flags_follows", False):
            self.fragments_received += 1
        await super()._handle_next_frame(frame, handlers)


class _ContiguousCountingRSocketClient(_ContiguousFragments, _CountingRSocketClient):
    pass


@contextlib.asynccontextmanager
async def rsocket_py_client(
    url: str,
    *,
    fragment_size: int | None = None,
    metadata_encoding: bytes = COMPOSITE_METADATA,
    data_encoding: bytes = OCTET_STREAM,
    setup_data: bytes | None = None,
    setup_metadata: bytes | None = None,
    lease: bool = False,
    keep_alive: timedelta = timedelta(milliseconds=500),
    max_lifetime: timedelta = timedelta(minutes=10),
    contiguous_fragments: bool = False,
) -> AsyncIterator[Any]:
    """rsocket-py's ``RSocketClient``, connected (SETUP sent) to ``url``.

    The client also has ``fragments_received``: frames it got with the FOLLOWS flag.
    ``contiguous_fragments``: as in ``start_rsocket_py_server``.

    ``url``: ``tcp://host:port`` or ``ws://host:port/path``. ``lease=True`` sets the SETUP
    lease flag and makes the client wait for LEASE before sending requests
    (``honor_lease``). Note rsocket-py's SETUP advertises keepalive/lifetime through a buggy
    ``to_milliseconds`` (500 ms -> 1000): the real sending period is ``keep_alive``.
    """
    parts = urlsplit(url)
    client_class = (
        _ContiguousCountingRSocketClient if contiguous_fragments else _CountingRSocketClient
    )
    setup = (
        Payload(setup_data, setup_metadata)
        if setup_data is not None or setup_metadata is not None
        else None
    )
    options: dict[str, Any] = dict(
        fragment_size_bytes=fragment_size,
        metadata_encoding=metadata_encoding,
        data_encoding=data_encoding,
        setup_payload=setup,
        honor_lease=lease,
        keep_alive_period=keep_alive,
        max_lifetime_period=max_lifetime,
    )
    if parts.scheme == "tcp":
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        client = client_class(single_transport_provider(TransportTCP(reader, writer)), **options)
        try:
            async with client:
                yield client
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            await _settle()
    elif parts.scheme == "ws":
        async with websockets.connect(url) as websocket:
            ws_transport = WebsocketsTransport()
            pump = asyncio.create_task(_pump_websocket(ws_transport, websocket))
            client = client_class(single_transport_provider(ws_transport), **options)
            try:
                async with client:
                    yield client
            finally:
                await websocket.close()
                await pump
                await _settle()
    else:
        raise ValueError(f"rsocket_py_client speaks tcp:// and ws://, not {url!r}")


def route_metadata(route: str) -> bytes:
    """Composite metadata with one routing item: rsocket-py's ``composite(route(...))``.

    On the wire: 0xFE (well-known id 0x7E, message/x.rsocket.routing.v0), a 24-bit length,
    then one tag: a length byte and the UTF-8 route.
    """
    return bytes(composite(routing_item(route)))


def _payload(data: bytes | None, route: str | None, metadata: bytes | None) -> Payload:
    if route is not None and metadata is not None:
        raise TypeError("give a route or raw metadata, not both")
    return Payload(data, route_metadata(route) if route is not None else metadata)


async def py_request_response(
    client: Any, data: bytes | None, route: str | None = None, *, metadata: bytes | None = None
) -> tuple[bytes | None, bytes | None]:
    """request-response: the response's (data, metadata)."""
    with _peer_errors():
        response = await client.request_response(_payload(data, route, metadata))
    return _b(response.data), _b(response.metadata)


async def _collect(
    client: Any,
    publisher: Any,
    limit_rate: int,
    take: int | None,
) -> list[bytes]:
    subscriber = CollectorSubscriber(limit_rate=limit_rate, limit_count=take)
    publisher.initial_request_n(limit_rate).subscribe(subscriber)
    with _peer_errors():
        values = await subscriber.run()
    return [bytes(value.data or b"") for value in values]


async def py_request_stream(
    client: Any,
    data: bytes | None,
    route: str | None = None,
    *,
    metadata: bytes | None = None,
    limit_rate: int = MAX_REQUEST_N,
    take: int | None = None,
) -> list[bytes]:
    """request-stream: the data of every payload until COMPLETE.

    ``limit_rate``: initial REQUEST_N, then REQUEST_N(limit_rate) each time limit_rate
    payloads arrived (rsocket-py's CollectorSubscriber). ``take=k``: CANCEL after k.
    """
    publisher = client.request_stream(_payload(data, route, metadata))
    return await _collect(client, publisher, limit_rate, take)


class _ListPublisher(DefaultPublisherSubscription):  # type: ignore[misc]
    """Sends a list of payloads under the responder's demand, then COMPLETE."""

    def __init__(self, items: Iterable[bytes]) -> None:
        self._items = deque(items)
        self._subscriber: Any = None
        self._done = False

    def request(self, n: int) -> None:
        while n > 0 and self._items and not self._done:
            item = self._items.popleft()
            n -= 1
            # the last payload carries COMPLETE (NEXT|COMPLETE, one frame)
            self._done = not self._items
            self._subscriber.on_next(Payload(item), self._done)

    def cancel(self) -> None:
        self._done = True


async def py_request_channel(
    client: Any,
    first: bytes | None,
    items: Iterable[bytes] = (),
    route: str | None = None,
    *,
    metadata: bytes | None = None,
    limit_rate: int = MAX_REQUEST_N,
    take: int | None = None,
) -> list[bytes]:
    """request-channel: send ``first`` (in REQUEST_CHANNEL) then ``items`` under the
    responder's REQUEST_N, then COMPLETE; return the data of every payload received.

    With no ``items`` the REQUEST_CHANNEL frame carries COMPLETE (rsocket-py does that
    when no publisher is given). ``limit_rate``/``take`` as in ``py_request_stream``.
    """
    items = list(items)
    publisher = client.request_channel(
        _payload(first, route, metadata), _ListPublisher(items) if items else None
    )
    return await _collect(client, publisher, limit_rate, take)


class _CompletesAtOnce(DefaultPublisherSubscription):  # type: ignore[misc]
    """Completes right after it is subscribed -- on the next loop turn, so that rsocket-py
    (which subscribes before it queues REQUEST_CHANNEL) queues the PAYLOAD(C) behind the
    request and its sender writes both in one go: the one-item channel of issue 17."""

    def subscribe(self, subscriber: Any) -> None:
        super().subscribe(subscriber)
        asyncio.get_running_loop().call_soon(subscriber.on_complete)

    def request(self, n: int) -> None:
        pass


async def py_one_item_channel(client: Any, data: bytes, *, limit_rate: int = 8) -> list[bytes]:
    """request-channel whose only item is in REQUEST_CHANNEL, completed by a PAYLOAD(C)
    sent right behind it (not by the C flag of the request): the data of every payload
    received."""
    publisher = client.request_channel(Payload(data), _CompletesAtOnce())
    return await _collect(client, publisher, limit_rate, None)


async def py_fire_and_forget(
    client: Any, data: bytes | None, route: str | None = None, *, metadata: bytes | None = None
) -> None:
    """fire-and-forget; returns once rsocket-py has written the frame."""
    await client.fire_and_forget(_payload(data, route, metadata))


async def py_metadata_push(client: Any, metadata: bytes) -> None:
    """metadata-push on stream 0; returns once rsocket-py has written the frame."""
    await client.metadata_push(metadata)
