"""A recording TCP proxy in front of a RabbitMQ stream broker, for tests.

    async with FrameCapture(upstream=("127.0.0.1", 5552)) as cap:
        ...connect a client to 127.0.0.1:cap.port...
        cap.client_frames   # every frame clients sent, decoded, in arrival order
        cap.server_frames   # every frame the broker sent
        cap.close_all()     # abort every proxied connection (a network drop)

Bytes are forwarded both ways unchanged (each direction with TCP backpressure: reading
from one side pauses while the other side's write buffer is full). Each direction is
also fed to the generated codec (``StreamDecoder(sender="client" | "server")``); a frame
it cannot decode is recorded in ``cap.errors`` and never disturbs the forwarding. Every
accepted connection is a ``ProxiedConnection`` in ``cap.connections`` with its own frame
lists, since a client such as rstream opens several (locator, publisher, consumer).

A client that learns the broker's address from the protocol (rstream asks Metadata for
the stream leader, then connects there) bypasses the proxy unless told otherwise:
rstream's ``load_balancer_mode=True`` makes it reconnect through the address it was
given until the broker's advertised host/port match the leader's, which is always the
case through this transparent proxy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from wirestream.generated.rabbitmq_stream.v1 import Frame, StreamDecoder

__all__ = ["CaptureError", "FrameCapture", "ProxiedConnection"]

F = TypeVar("F", bound=Frame)

# Large enough for any frame a broker accepts (frame_max is negotiated far below this).
MAX_FRAME_SIZE = 64 * 1024 * 1024


@dataclass
class CaptureError:
    """A direction's bytes the codec could not decode (forwarding went on regardless)."""

    connection: int  # index in FrameCapture.connections
    sender: str  # "client" or "server"
    error: Exception


class _Direction:
    """Decodes one direction's bytes into frames, recording them and any decode error."""

    def __init__(self, capture: FrameCapture, connection: ProxiedConnection, sender: str):
        self._capture = capture
        self._connection = connection
        self._sender = sender
        self._decoder: StreamDecoder | None = StreamDecoder(MAX_FRAME_SIZE, sender=sender)
        own = connection.client_frames if sender == "client" else connection.server_frames
        shared = capture.client_frames if sender == "client" else capture.server_frames
        self._sinks = (own, shared)

    def feed(self, data: bytes) -> None:
        decoder = self._decoder
        if decoder is None:
            return
        last: Exception | None = None
        while True:
            try:
                frames = decoder.feed(data)
            except Exception as error:  # recorded, never fatal to the forwarding
                if error is last:
                    # A broken decoder (e.g. after an oversized length) re-raises its
                    # error on every feed: stop decoding this direction.
                    self._decoder = None
                    return
                last = error
                self._record(getattr(error, "frames", None) or [])
                self._capture.errors.append(
                    CaptureError(self._connection.index, self._sender, error)
                )
                # A malformed frame is consumed (its length is known): decode the rest.
                data = b""
                continue
            self._record(frames)
            return

    def ended(self) -> None:
        self._capture._notify()  # wake wait_for: a condition may be on the ends

    def _record(self, frames: list[Frame]) -> None:
        for sink in self._sinks:
            sink.extend(frames)
        if frames:
            self._capture._notify()


class _Side(asyncio.Protocol):
    """One socket of a proxied connection; bytes received go to the peer side."""

    def __init__(self, connection: ProxiedConnection, direction: _Direction) -> None:
        self.connection = connection
        self.direction = direction  # decodes what this socket receives
        self.peer: _Side | None = None
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[None] = loop.create_future()
        # How this socket stopped receiving, the first of: "eof" (the far end sent FIN),
        # "reset: <error>" (e.g. RST), "closed" (closed or aborted by us first).
        self.ended: asyncio.Future[str] = loop.create_future()
        self._pending: list[bytes] = []  # received before the peer side was connected
        self.eof = False  # this socket received EOF

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self._pending.append(data)
        else:
            peer.transport.write(data)
        self.direction.feed(data)

    def _end(self, how: str) -> None:
        if not self.ended.done():
            self.ended.set_result(how)
            self.direction.ended()

    def flush_pending(self) -> None:
        assert self.peer is not None and self.peer.transport is not None
        for data in self._pending:
            self.peer.transport.write(data)
        self._pending.clear()

    def eof_received(self) -> bool:
        self.eof = True
        self._end("eof")
        peer = self.peer
        if peer is None or peer.transport is None or not peer.transport.can_write_eof():
            return False  # close this socket (connection_lost closes the peer)
        if peer.eof:  # both directions ended: nothing is left to forward
            peer.transport.close()
            return False
        peer.transport.write_eof()
        return True  # keep the other direction open (half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._end("closed" if exc is None else f"reset: {exc!r}")
        if not self.closed.done():
            self.closed.set_result(None)
        peer = self.peer
        if peer is None or peer.transport is None:
            return
        if exc is not None:
            peer.transport.abort()  # pass a reset on as a reset
        elif not peer.transport.is_closing():
            peer.transport.close()  # flushes what is buffered, then closes

    # Backpressure: when this socket's write buffer is full, stop reading the peer.
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


@dataclass
class ProxiedConnection:
    """One accepted client connection and its upstream connection to the broker."""

    index: int
    client_frames: list[Frame] = field(default_factory=list)
    server_frames: list[Frame] = field(default_factory=list)
    client_side: _Side | None = None  # the socket accepted from the client
    server_side: _Side | None = None  # the socket to the broker

    @property
    def is_live(self) -> bool:
        """The client's socket is still open."""
        return self.client_side is not None and not self.client_side.closed.done()

    @property
    def server_ended(self) -> str | None:
        """How the broker's socket stopped sending: "eof", "reset: ...", "closed", None."""
        return _how(self.server_side)

    @property
    def client_ended(self) -> str | None:
        """How the client's socket stopped sending (same values)."""
        return _how(self.client_side)

    def sides(self) -> list[_Side]:
        return [s for s in (self.client_side, self.server_side) if s is not None]

    def abort(self) -> None:
        for side in self.sides():
            if side.transport is not None:
                side.transport.abort()

    def close(self) -> None:
        for side in self.sides():
            if side.transport is not None and not side.transport.is_closing():
                side.transport.close()

    async def wait_closed(self) -> None:
        await asyncio.gather(*(side.closed for side in self.sides()))


def _how(side: _Side | None) -> str | None:
    if side is None or not side.ended.done():
        return None
    return side.ended.result()


class FrameCapture:
    """The proxy (module docstring). ``port`` is known once the context is entered."""

    def __init__(
        self, upstream: tuple[str, int] = ("127.0.0.1", 5552), host: str = "127.0.0.1"
    ) -> None:
        self.upstream = upstream
        self.host = host
        self.port = 0
        self.connections: list[ProxiedConnection] = []
        self.client_frames: list[Frame] = []
        self.server_frames: list[Frame] = []
        self.errors: list[CaptureError] = []
        self._server: asyncio.Server | None = None
        self._connects: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()

    async def __aenter__(self) -> FrameCapture:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop listening, close every proxied connection and wait until they are closed."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._connects):
            task.cancel()
        await asyncio.gather(*self._connects, return_exceptions=True)
        for connection in self.connections:
            connection.close()
        try:
            async with asyncio.timeout(5.0):
                for connection in self.connections:
                    await connection.wait_closed()
        except TimeoutError:
            self.close_all()
            for connection in self.connections:
                await connection.wait_closed()

    def close_all(self) -> None:
        """Abort both sockets of every proxied connection (RST: a network drop)."""
        for connection in self.connections:
            connection.abort()

    # -- waiting on what was captured --------------------------------------------------

    def frames_of(self, frame_type: type[F], sender: str = "client") -> list[F]:
        frames = self.client_frames if sender == "client" else self.server_frames
        return [f for f in frames if isinstance(f, frame_type)]

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until ``condition()`` holds, re-checked whenever frames arrive."""
        async with asyncio.timeout(timeout):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()

    # -- proxying ----------------------------------------------------------------------

    def _accept(self) -> _Side:
        connection = ProxiedConnection(index=len(self.connections))
        self.connections.append(connection)
        client_side = _Side(connection, _Direction(self, connection, "client"))
        connection.client_side = client_side
        task = asyncio.get_running_loop().create_task(self._connect_upstream(connection))
        self._connects.add(task)
        task.add_done_callback(self._connects.discard)
        return client_side

    async def _connect_upstream(self, connection: ProxiedConnection) -> None:
        client_side = connection.client_side
        assert client_side is not None
        server_side = _Side(connection, _Direction(self, connection, "server"))
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(lambda: server_side, *self.upstream)
        except OSError:
            if client_side.transport is not None:
                client_side.transport.abort()
            return
        connection.server_side = server_side
        client_side.peer, server_side.peer = server_side, client_side
        if client_side.transport is None or client_side.transport.is_closing():
            # the client left while we were connecting upstream
            assert server_side.transport is not None
            server_side.transport.close()
            return
        client_side.flush_pending()
