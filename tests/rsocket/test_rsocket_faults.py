"""RSocket over real TCP against peers that misbehave, from both sides: our client
against a hand-written bad server, a hand-written bad client against our server.

The bad peers are plain asyncio sockets speaking the generated codec
(``generated/rsocket/v1_0``); nothing in them enforces the protocol.  For each fault:
the right error reaches the application promptly, the peer tracks no stream and runs
no task afterwards, a server keeps serving everybody else, and (``tests.support.aio_support.run``)
no task or socket is left behind.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import tracemalloc
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from wirestream.generated.rsocket import v1_0 as codec
from wirestream.runtime.aio import HIGH_WATER
from wirestream.runtime.errors import (
    ConnectionLost,
    DecodeError,
    FrameTooLarge,
    RemoteProtocolError,
    Truncated,
    UnknownFrameType,
)
from wirestream.runtime.flow import RSOCKET_MAX_N
from wirestream.runtime.rsocket import (
    ApplicationError,
    RSocketPayload,
    PayloadLike,
    RSocketHandler,
    RSocketPeer,
    RSocketServer,
    connect,
    serve,
)
from tests.support.aio_support import run

LOCAL = "tcp://127.0.0.1:0"
CONNECTION_ERROR = 0x101
INVALID_SETUP = 0x001
MB = 1024 * 1024
PROMPTLY = 1.0  # seconds within which a fault must reach the application


# ====================================================================== raw peers


class RawPeer:
    """One end of a TCP connection spoken by hand: frames out through the generated
    codec (or any bytes at all), frames in through its ``StreamDecoder``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._decoder = codec.StreamDecoder()
        self._frames: deque[Any] = deque()

    @classmethod
    async def dial(cls, url: str, *, limit: int = 64 * 1024, keepalive_interval: int = 20_000,
                   max_lifetime: int = 90_000) -> RawPeer:  # fmt: skip
        """Connect to our server and send a valid SETUP."""
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port), limit=limit)
        peer = cls(reader, writer)
        peer.send(
            codec.Setup(keepalive_interval=keepalive_interval, max_lifetime=max_lifetime,
                        metadata_mime_type="application/octet-stream",
                        data_mime_type="application/octet-stream")
        )  # fmt: skip
        return peer

    def send(self, *frames: Any) -> None:
        self.writer.write(b"".join(codec.frame_bytes(frame) for frame in frames))

    def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)

    async def frame(self, timeout: float = 2.0) -> Any | None:
        """The next frame received; None at EOF (or a reset)."""
        while not self._frames:
            try:
                async with asyncio.timeout(timeout):
                    data = await self.reader.read(64 * 1024)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self._frames.extend(self._decoder.feed(data))
        return self._frames.popleft()

    async def expect(self, kind: type, timeout: float = 2.0) -> Any:
        """The next frame of ``kind`` (KEEPALIVEs in between are skipped)."""
        while True:
            frame = await self.frame(timeout)
            assert frame is not None, f"EOF while waiting for {kind.__name__}"
            if isinstance(frame, kind):
                return frame
            assert isinstance(frame, codec.Keepalive), f"{frame!r}, not {kind.__name__}"

    async def rest(self, timeout: float = 2.0) -> list[Any]:
        """Every frame until the other side closes (fails if it does not)."""
        frames = []
        while (frame := await self.frame(timeout)) is not None:
            frames.append(frame)
        return frames

    def abort(self) -> None:
        """Reset the connection: RST, not FIN (linger on, timeout 0)."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


class RawServer:
    """A listener whose connections the test drives by hand (``accept()``)."""

    url = ""

    def __init__(self) -> None:
        self._accepted: asyncio.Queue[RawPeer] = asyncio.Queue()
        self._peers: list[RawPeer] = []
        self._server: asyncio.Server | None = None

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = RawPeer(reader, writer)
        self._peers.append(peer)
        self._accepted.put_nowait(peer)

    async def accept(self) -> RawPeer:
        """The next connection, after its SETUP."""
        async with asyncio.timeout(2.0):
            peer = await self._accepted.get()
        setup = await peer.expect(codec.Setup)
        assert setup.major_version == 1
        return peer

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"tcp://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for peer in self._peers:
            await peer.close()
        await self._server.wait_closed()


def half(frame: Any) -> bytes:
    """The first half of a frame as the transport carries it."""
    wire = codec.frame_bytes(frame)
    return wire[: len(wire) // 2]


GARBAGE = {
    # a 2-byte frame: shorter than the 6-byte frame header
    "truncated-header": (b"\x00\x00\x02\xde\xad", Truncated),
    # frame type 0x30 does not exist and its (I)gnore flag is clear
    "unknown-type": (b"\x00\x00\x06\x00\x00\x00\x00\xc0\x00", UnknownFrameType),
}


# ====================================================================== helpers


async def eventually(condition: Callable[[], bool], what: str, timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.01)


async def collect(stream: AsyncIterator[RSocketPayload]) -> list[bytes]:
    return [item.data async for item in stream]


async def outcome(awaitable: Any) -> tuple[Any, float]:
    """What the awaitable ended with (result or exception) and when (monotonic)."""
    try:
        result: Any = await awaitable
    except Exception as error:
        result = error
    return result, time.monotonic()


def assert_quiet(peer: RSocketPeer) -> None:
    """The peer tracks no stream and runs no task any more."""
    assert peer.closed
    assert not peer.engine.open_streams
    assert not peer._calls
    assert not [task for task in peer._tasks if not task.done()]


class Hanging(RSocketHandler):
    """Answers ``echo`` requests; ``hang`` requests never finish.  Records what was
    started and what was cancelled or closed."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended: list[str] = []
        self.hanging = 0

    async def request_response(self, payload: RSocketPayload) -> PayloadLike:
        if payload.data != b"hang":
            return payload.data
        self.started.append("response")
        self.hanging += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.ended.append("response")
            raise
        return b"never"

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[PayloadLike]:
        return self._stream(payload)

    async def _stream(self, payload: RSocketPayload) -> AsyncIterator[PayloadLike]:
        self.started.append("stream")
        self.hanging += 1
        try:
            yield b"first"
            if payload.data == b"hang":
                await asyncio.Event().wait()
        finally:
            self.ended.append("stream")


async def open_hanging_requests(raw: RawPeer) -> None:
    """(raw client) A request-stream (stream 1) that sends one item then hangs, and a
    request-response (stream 3) that hangs; wait for the stream's first item."""
    raw.send(
        codec.RequestStream(stream_id=1, initial_request_n=10, data=b"hang"),
        codec.RequestResponse(stream_id=3, data=b"hang"),
    )
    first = await raw.expect(codec.Payload)
    assert (first.stream_id, first.data) == (1, b"first")


async def assert_handlers_ended(server: RSocketServer, handler: Hanging) -> None:
    """The server dropped the connection: its handlers were cancelled or closed, it
    tracks no peer, and it still serves a well-behaved client."""
    await eventually(lambda: sorted(handler.ended) == ["response", "stream"],
                     f"handlers cancelled (ended: {handler.ended})", PROMPTLY)  # fmt: skip
    await eventually(lambda: not server.peers, "server.peers empty", PROMPTLY)
    async with connect(server.url) as client:
        assert (await client.request_response(b"still here")).data == b"still here"
        assert await collect(client.request_stream(b"x")) == [b"first"]
    await eventually(lambda: not server.peers, "server.peers empty after a clean close")


# ====================================================================== 1. closed mid-frame


@pytest.mark.parametrize("ending", ["close", "abort"])
def test_server_gone_mid_frame_fails_every_open_request_with_connection_lost(
    ending: str,
) -> None:
    """Half a PAYLOAD, then FIN (or RST): the item before it is delivered, then the open
    request-stream and request-response both raise ConnectionLost at once."""

    async def main() -> None:
        async with RawServer() as bad:
            client = await connect(bad.url)
            raw = await bad.accept()
            stream = client.request_stream(b"s", limit_rate=8)
            streaming = asyncio.create_task(outcome(collect_one_then_rest(stream)))
            responding = asyncio.create_task(outcome(client.request_response(b"r")))
            request = await raw.expect(codec.RequestStream)
            await raw.expect(codec.RequestResponse)
            raw.send(codec.Payload(stream_id=request.stream_id, next=True, data=b"one"))
            await asyncio.sleep(0.05)
            raw.send_bytes(half(codec.Payload(stream_id=request.stream_id, next=True,
                                              data=b"two" * 100)))  # fmt: skip
            await raw.writer.drain()
            await asyncio.sleep(0.05)
            gone = time.monotonic()
            if ending == "close":
                await raw.close()
            else:
                raw.abort()
            (stream_result, stream_at), (response, response_at) = await asyncio.gather(
                streaming, responding
            )
            first, error = stream_result
            assert first == b"one"
            for failure, at in ((error, stream_at), (response, response_at)):
                assert isinstance(failure, ConnectionLost), failure
                assert failure.reason == ("eof" if ending == "close" else "reset")
                assert at - gone < PROMPTLY
            await client.wait_closed()
            assert_quiet(client)
            await client.close()  # idempotent once closed

    run(main())


async def collect_one_then_rest(
    stream: AsyncIterator[RSocketPayload],
) -> tuple[bytes, BaseException]:
    first = (await anext(stream)).data
    try:
        async for item in stream:
            raise AssertionError(f"unexpected item {item}")
    except ConnectionLost as error:
        return first, error
    raise AssertionError("the stream completed instead of failing")


@pytest.mark.parametrize("ending", ["close", "abort"])
def test_client_gone_mid_frame_cancels_its_handlers_and_server_keeps_serving(
    ending: str,
) -> None:
    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler) as server:
            raw = await RawPeer.dial(server.url)
            await open_hanging_requests(raw)
            raw.send_bytes(half(codec.RequestResponse(stream_id=5, data=b"x" * 200)))
            await raw.writer.drain()
            await asyncio.sleep(0.05)
            assert handler.hanging == 2 and not handler.ended
            if ending == "close":
                await raw.close()
            else:
                raw.abort()
            await assert_handlers_ended(server, handler)

    run(main())


# ====================================================================== 2. garbage


@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_server_sending_garbage_gets_connection_error_and_streams_fail(garbage: str) -> None:
    """A malformed frame is a connection error (Protocol.md, Error Codes: CONNECTION_ERROR):
    the engine sends ERROR[CONNECTION_ERROR] on stream 0 and closes; every open request
    raises the decode error (a RemoteProtocolError: the peer broke the protocol)."""
    data, kind = GARBAGE[garbage]

    async def main() -> None:
        async with RawServer() as bad:
            client = await connect(bad.url)
            raw = await bad.accept()
            stream = client.request_stream(b"s")
            streaming = asyncio.create_task(outcome(collect(stream)))
            responding = asyncio.create_task(outcome(client.request_response(b"r")))
            await raw.expect(codec.RequestStream)
            await raw.expect(codec.RequestResponse)
            sent = time.monotonic()
            raw.send_bytes(data)
            for failure, at in await asyncio.gather(streaming, responding):
                assert isinstance(failure, kind), failure
                assert isinstance(failure, DecodeError) and isinstance(failure, RemoteProtocolError)
                assert at - sent < PROMPTLY
            error = await raw.expect(codec.Error)
            assert (error.stream_id, error.error_code) == (0, CONNECTION_ERROR)
            assert await raw.rest() == []  # then the client closed the connection
            await client.wait_closed()
            assert_quiet(client)

    run(main())


@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_client_sending_garbage_gets_connection_error_and_handlers_end(garbage: str) -> None:
    data, _ = GARBAGE[garbage]

    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler) as server:
            raw = await RawPeer.dial(server.url)
            await open_hanging_requests(raw)
            raw.send_bytes(data)
            error = await raw.expect(codec.Error)
            assert (error.stream_id, error.error_code) == (0, CONNECTION_ERROR)
            assert await raw.rest() == []
            await raw.close()
            await assert_handlers_ended(server, handler)

    run(main())


def test_garbage_instead_of_setup_gets_invalid_setup() -> None:
    """Protocol.md, Error Codes: INVALID_SETUP "The Setup frame is invalid for the server
    (it could be that the client is too recent for the old server)"."""

    async def main() -> None:
        async with await serve(LOCAL, Hanging()) as server:
            host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
            reader, writer = await asyncio.open_connection(host, int(port))
            raw = RawPeer(reader, writer)
            raw.send_bytes(GARBAGE["unknown-type"][0])
            error = await raw.expect(codec.Error)
            assert (error.stream_id, error.error_code) == (0, INVALID_SETUP)
            assert await raw.rest() == []
            await raw.close()
            await eventually(lambda: not server.peers, "server.peers empty")

    run(main())


# ====================================================================== 3. 16 MB frames

DECLARED_16MB = b"\xff\xff\xff"  # the largest 24-bit frame length: 16 MiB - 1
PARTIAL = 1 * MB  # how much of the declared frame the bad peer actually sends


async def send_slowly(raw: RawPeer, size: int, chunk: int = 64 * 1024) -> None:
    raw.send_bytes(DECLARED_16MB)
    block = b"\x00" * chunk
    for _ in range(size // chunk):
        raw.send_bytes(block)
        await raw.writer.drain()
        await asyncio.sleep(0.002)
    await asyncio.sleep(0.1)  # the receiver takes in the last bytes


def test_client_buffers_a_declared_16mb_frame_only_as_its_bytes_arrive() -> None:
    """A 16 MB length prefix is legal (the default limit is the 24-bit maximum), but the
    receiver allocates as bytes arrive, not what the header declares; the connection
    stays usable for the open request until the peer gives up."""

    async def main() -> None:
        async with RawServer() as bad:
            client = await connect(bad.url)
            raw = await bad.accept()
            responding = asyncio.create_task(outcome(client.request_response(b"r")))
            await raw.expect(codec.RequestResponse)
            tracemalloc.start()
            try:
                await send_slowly(raw, PARTIAL)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak < 6 * MB, f"{peak / MB:.1f} MB for {PARTIAL / MB:.0f} MB received"
            assert not responding.done() and not client.closed
            await raw.close()
            failure, _ = await responding
            assert isinstance(failure, ConnectionLost)
            await client.wait_closed()
            assert_quiet(client)

    run(main())


def test_server_buffers_a_declared_16mb_frame_only_as_its_bytes_arrive() -> None:
    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler) as server:
            raw = await RawPeer.dial(server.url)
            await open_hanging_requests(raw)
            tracemalloc.start()
            try:
                await send_slowly(raw, PARTIAL)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak < 6 * MB, f"{peak / MB:.1f} MB for {PARTIAL / MB:.0f} MB received"
            assert not handler.ended and len(server.peers) == 1
            await raw.close()
            await assert_handlers_ended(server, handler)

    run(main())


def test_client_with_max_frame_size_fails_a_larger_frame_with_frame_too_large() -> None:
    """``max_frame_size``: a declared length above it fails before any of the frame is
    buffered: ERROR[CONNECTION_ERROR] to the peer, FrameTooLarge to the application."""

    async def main() -> None:
        async with RawServer() as bad:
            client = await connect(bad.url, max_frame_size=64 * 1024)
            raw = await bad.accept()
            responding = asyncio.create_task(outcome(client.request_response(b"r")))
            await raw.expect(codec.RequestResponse)
            raw.send_bytes(DECLARED_16MB + b"\x00" * 16)
            failure, _ = await responding
            assert isinstance(failure, FrameTooLarge), failure
            error = await raw.expect(codec.Error)
            assert (error.stream_id, error.error_code) == (0, CONNECTION_ERROR)
            assert await raw.rest() == []
            await client.wait_closed()
            assert_quiet(client)

    run(main())


def test_server_with_max_frame_size_drops_a_client_declaring_a_larger_frame() -> None:
    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler, max_frame_size=64 * 1024) as server:
            raw = await RawPeer.dial(server.url)
            await open_hanging_requests(raw)
            raw.send_bytes(DECLARED_16MB)
            error = await raw.expect(codec.Error)
            assert (error.stream_id, error.error_code) == (0, CONNECTION_ERROR)
            assert b"64" in error.data or b"limit" in error.data
            assert await raw.rest() == []
            await raw.close()
            await assert_handlers_ended(server, handler)

    run(main())


# ====================================================================== 4. stops reading


class Counting(RSocketHandler):
    """A request-stream publisher that counts how often it is pulled."""

    def __init__(self, size: int) -> None:
        self.item = b"x" * size
        self.pulls = 0
        self.closed = asyncio.Event()

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[PayloadLike]:
        return self._items()

    async def _items(self) -> AsyncIterator[PayloadLike]:
        try:
            while True:
                self.pulls += 1
                yield self.item
        finally:
            self.closed.set()


async def settled(read: Callable[[], int], quiet: float = 0.3, timeout: float = 5.0) -> int:
    """``read()`` once it has stopped changing for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    last, since = read(), time.monotonic()
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, f"still changing after {timeout} s ({read()})"
        await asyncio.sleep(0.02)
        if (now := read()) != last:
            last, since = now, time.monotonic()
    return last


async def dial_non_reader(url: str) -> RawPeer:
    """A raw client whose socket buffers are small and which never reads (its asyncio
    reader stops taking bytes from the socket beyond 2 x 4 KiB)."""
    peer = await RawPeer.dial(url, limit=4096)
    sock = peer.writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    return peer


def server_peer(server: RSocketServer) -> RSocketPeer:
    (peer,) = server.peers
    return peer


def test_publisher_to_a_non_reading_client_is_pulled_only_its_granted_demand() -> None:
    """REQUEST_STREAM n=1000 and then never read: the publisher is pulled exactly 1000
    times (Protocol.md, Reactive Streams semantics: request-n bounds what is sent) and
    then waits for demand; closing it is the client's disconnect."""

    async def main() -> None:
        handler = Counting(100)
        async with await serve(LOCAL, handler) as server:
            raw = await dial_non_reader(server.url)
            raw.send(codec.RequestStream(stream_id=1, initial_request_n=1000))
            assert await settled(lambda: handler.pulls) == 1000
            peer = server_peer(server)
            assert list(peer.engine.open_streams) == [1]
            assert not handler.closed.is_set()
            raw.abort()
            async with asyncio.timeout(PROMPTLY):
                await handler.closed.wait()
            await eventually(lambda: not server.peers, "server.peers empty")
            assert_quiet(peer)

    run(main())


def test_unbounded_publisher_to_a_non_reading_client_waits_on_the_socket() -> None:
    """n = 2^31-1 (unbounded) and 256 KiB items: once the socket buffers are full the
    publisher blocks on transport backpressure (drain); pulls stop growing and what the
    process holds stays near the high-water mark, whatever the item size (not a fixed
    number of items: 64 x 256 KiB would be 16 MB)."""
    size = 256 * 1024

    async def main() -> None:
        handler = Counting(size)
        async with await serve(LOCAL, handler) as server:
            raw = await dial_non_reader(server.url)
            tracemalloc.start()
            try:
                raw.send(codec.RequestStream(stream_id=1, initial_request_n=RSOCKET_MAX_N))
                pulls = await settled(lambda: handler.pulls)
                peak = tracemalloc.get_traced_memory()[1]
                peer = server_peer(server)
                queued = peer.driver.transport.write_buffer_size()
                await asyncio.sleep(0.3)
                assert handler.pulls == pulls  # blocked, not merely slow
            finally:
                tracemalloc.stop()
            # What left the process is in the kernel's socket buffers (a few MB at most
            # on loopback); what is queued here stays near the high-water mark.
            assert pulls * size < 64 * MB, f"{pulls} items pulled"
            assert queued <= HIGH_WATER + 2 * size, f"{queued} bytes queued in the transport"
            assert peak < HIGH_WATER + 8 * size, f"peak {peak / MB:.1f} MB"
            raw.abort()
            async with asyncio.timeout(PROMPTLY):
                await handler.closed.wait()
            await eventually(lambda: not server.peers, "server.peers empty")
            assert_quiet(peer)

    run(main())


def test_channel_publisher_to_a_non_reading_server_is_pulled_only_its_granted_demand() -> None:
    """The client side of the same rule: our request-channel's outbound publisher, to a
    server that granted REQUEST_N 100 and stopped reading, is pulled the initial message
    plus 100 items."""

    async def main() -> None:
        pulls = 0
        closed = asyncio.Event()

        async def outbound() -> AsyncIterator[PayloadLike]:
            nonlocal pulls
            try:
                while True:
                    pulls += 1
                    yield b"y" * 100
            finally:
                closed.set()

        async with RawServer() as bad:
            client = await connect(bad.url)
            raw = await bad.accept()
            inbound = client.request_channel(b"first", outbound=outbound())
            request = await raw.expect(codec.RequestChannel)
            raw.send(codec.RequestN(stream_id=request.stream_id, request_n=100))
            assert await settled(lambda: pulls) == 100
            assert not closed.is_set()
            raw.abort()
            failure, _ = await outcome(collect(inbound))
            assert isinstance(failure, ConnectionLost)
            async with asyncio.timeout(PROMPTLY):
                await closed.wait()
            await client.wait_closed()
            assert_quiet(client)

    run(main())


# ====================================================================== 5. keepalive


def test_client_declares_a_silent_server_dead_after_max_lifetime() -> None:
    """SETUP, Max Lifetime: "Time (in milliseconds) that a client will allow a server to
    not respond to a KEEPALIVE before it is assumed to be dead."  A server that never
    answers: KEEPALIVE[R] every 100 ms, then after 500 ms every open request fails with
    ConnectionLost(reason="keepalive") and the connection is dropped."""

    async def main() -> None:
        async with RawServer() as bad:
            started = time.monotonic()
            client = await connect(bad.url, keepalive_interval=100, max_lifetime=500)
            raw = await bad.accept()
            stream = client.request_stream(b"s")
            streaming = asyncio.create_task(outcome(collect(stream)))
            responding = asyncio.create_task(outcome(client.request_response(b"r")))
            for failure, at in await asyncio.gather(streaming, responding):
                assert isinstance(failure, ConnectionLost), failure
                assert failure.reason == "keepalive"
                assert 0.45 <= at - started < 1.0, at - started
            frames = await raw.rest()
            keepalives = [frame for frame in frames if isinstance(frame, codec.Keepalive)]
            assert len(keepalives) >= 3 and all(frame.respond for frame in keepalives)
            await client.wait_closed()
            assert_quiet(client)

    run(main())


def test_server_declares_a_silent_client_dead_after_max_lifetime() -> None:
    """KEEPALIVE: "Reception of a KEEPALIVE by a server indicates to the server that the
    client is alive" — a client silent past its own max lifetime is dropped and its
    handlers end."""

    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler) as server:
            raw = await RawPeer.dial(server.url, keepalive_interval=100, max_lifetime=500)
            started = time.monotonic()
            await open_hanging_requests(raw)
            await eventually(lambda: len(handler.ended) == 2, "handlers ended", 1.0)
            assert time.monotonic() - started >= 0.45
            await raw.rest()  # the server dropped the connection
            await raw.close()
            await assert_handlers_ended(server, handler)

    run(main())


# ====================================================================== 6. many streams


class Numbers(RSocketHandler):
    async def request_response(self, payload: RSocketPayload) -> PayloadLike:
        await asyncio.sleep(0)
        return b"re:" + payload.data

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[PayloadLike]:
        return self._items(payload.data)

    async def _items(self, prefix: bytes) -> AsyncIterator[PayloadLike]:
        for i in range(10):
            yield prefix + b":%d" % i


STREAMS = 1000


def test_a_thousand_concurrent_streams_and_requests_on_one_connection() -> None:
    async def main() -> None:
        async with await serve(LOCAL, Numbers()) as server:
            async with connect(server.url) as client:
                streams = asyncio.gather(*(collect(client.request_stream(b"%d" % i, limit_rate=4))
                                           for i in range(STREAMS)))  # fmt: skip
                responses = asyncio.gather(*(client.request_response(b"%d" % i)
                                             for i in range(STREAMS)))  # fmt: skip
                every_items, answers = await asyncio.gather(streams, responses)
                for i, items in enumerate(every_items):
                    assert items == [b"%d:%d" % (i, n) for n in range(10)]
                for i, answer in enumerate(answers):
                    assert answer.data == b"re:%d" % i
                (peer,) = server.peers
                await eventually(lambda: not peer._tasks, "the server's handler tasks end")
                assert not peer._calls, f"the server still tracks {len(peer._calls)} streams"
                for side in (client, peer):
                    assert not side.engine.open_streams
                    assert not side._calls
            await eventually(lambda: not server.peers, "server.peers empty")

    run(main())


def test_a_thousand_open_streams_all_fail_when_the_server_goes_away() -> None:
    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler) as server:
            client = await connect(server.url)
            streams = [asyncio.create_task(outcome(collect_one_then_rest(
                client.request_stream(b"hang", limit_rate=2)))) for _ in range(STREAMS)]  # fmt: skip
            await eventually(lambda: handler.hanging == STREAMS, "all streams open", 5.0)
            server_peer(server).driver.abort()
            for (first, error), _ in await asyncio.gather(*streams):
                assert first == b"first" and isinstance(error, ConnectionLost)
            await client.wait_closed()
            assert_quiet(client)
            await eventually(lambda: len(handler.ended) == STREAMS, "publishers closed")
            await eventually(lambda: not server.peers, "server.peers empty")

    run(main())


class Failing(RSocketHandler):
    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[PayloadLike]:
        return self._items()

    async def _items(self) -> AsyncIterator[PayloadLike]:
        yield b"one"
        raise RuntimeError("publisher broke")


def test_a_failing_publisher_ends_only_its_stream_and_is_forgotten() -> None:
    """A handler's exception is ERROR[APPLICATION_ERROR] on its stream (the message
    reaches the requester); the connection stays up and neither side tracks the stream."""

    async def main() -> None:
        async with await serve(LOCAL, Failing()) as server:
            async with connect(server.url) as client:
                for _ in range(3):
                    failure, _ = await outcome(collect(client.request_stream(b"s")))
                    assert isinstance(failure, ApplicationError), failure
                    assert "publisher broke" in str(failure)
                peer = server_peer(server)
                await eventually(lambda: not peer._tasks, "the server's handler tasks end")
                assert not peer._calls, f"the server still tracks {len(peer._calls)} streams"
                assert not client._calls and not client.engine.open_streams
            await eventually(lambda: not server.peers, "server.peers empty")

    run(main())
