"""RSocket negotiation and close over real connections (issue 17): lease negotiated in
both roles and every wait ending with a typed error, the one-item channel, the
responder's REQUEST_N answer, the graceful close in both directions and EXT frames --
between our client and server, against exact bytes from a raw TCP peer, and against the
real rsocket-py 0.4.20 (tests/support/rsocket_py_peers.py; nothing is mocked).  The engine side
of the same rules: tests/rsocket/test_rsocket_engine_negotiation.py.

Every test runs through ``tests.support.aio_support.run``: a hang fails, a leaked task or socket
fails.  Each takes well under a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

import pytest

import wirestream.generated.rsocket.v1_0 as ws
from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.rsocket import (
    NoNewRequests,
    RSocketPayload,
    RSocketHandler,
    RSocketPeer,
    RSocketServer,
    Router,
    SetupRejected,
    connect,
    serve,
)
from tests.support.aio_support import run
from tests.support.rsocket_py_peers import (
    PyPeerError,
    py_one_item_channel,
    py_request_channel,
    py_request_response,
    rsocket_py_client,
    start_rsocket_py_server,
)

pytestmark = pytest.mark.peer

logging.getLogger("pyrsocket").setLevel(logging.CRITICAL)

UNSUPPORTED_SETUP = 0x002
REJECTED = 0x202
TCP = "tcp://127.0.0.1:0"
WAIT = 5.0  # seconds: every wait below ends long before (or the test fails)


class Echo(RSocketHandler):
    """Echoes requests; streams ``int(data)`` items ("0", "1" ...) ``period`` apart; a
    channel echoes its first payload and then every inbound item; records EXT frames."""

    extensions = frozenset({7})

    def __init__(self, period: float = 0.0) -> None:
        self.period = period
        self.exts: list[tuple[int, RSocketPayload, int]] = []
        self.got_ext = asyncio.Event()
        self.channel_started = asyncio.Event()

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        return payload

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        count = int(payload.data) if payload.data else None
        i = 0
        while count is None or i < count:
            if self.period:
                await asyncio.sleep(self.period)
            yield str(i).encode()
            i += 1

    async def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[bytes]:
        self.channel_started.set()
        yield b"echo:" + payload.data
        async for item in inbound:
            yield b"echo:" + item.data

    async def on_ext(self, extended_type: int, payload: RSocketPayload, stream_id: int) -> None:
        self.exts.append((extended_type, payload, stream_id))
        self.got_ext.set()


class Deaf(Echo):
    """A channel responder that never reads the requester's side nor answers."""

    async def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[bytes]:
        self.channel_started.set()
        await asyncio.Event().wait()  # until the connection ends (the task is cancelled)
        yield b"never"


Scenario = Callable[[RSocketServer, RSocketPeer, Echo], Coroutine[Any, Any, None]]


def ours(scenario: Scenario, handler: Echo | None = None, *, version: str = "1.0",
         serve_options: dict[str, Any] | None = None, **connect_options: Any) -> None:  # fmt: skip
    """Run ``scenario(server, client, handler)``: our client connected to our server."""

    async def main() -> None:
        responder = handler or Echo()
        async with await serve(TCP, responder, version=version, **(serve_options or {})) as server:
            async with connect(server.url, Echo(), version=version, **connect_options) as client:
                await scenario(server, client, responder)

    run(main())


class RawPeer:
    """A TCP client that writes exact RSocket 1.0 frames (the generated codec) and reads
    what comes back: what a single ``write`` puts on the wire arrives in one read."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.decoder = ws.StreamDecoder()
        self.received: list[Any] = []

    @classmethod
    async def open(cls, url: str) -> RawPeer:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer)

    def send(self, *frames: Any) -> None:
        self.writer.write(b"".join(ws.frame_bytes(frame) for frame in frames))

    async def until(self, wanted: Callable[[Any], bool]) -> Any:
        """Read until a frame satisfies ``wanted`` (every frame read is in ``received``)."""
        async with asyncio.timeout(WAIT):
            while True:
                for frame in self.received:
                    if wanted(frame):
                        return frame
                data = await self.reader.read(65536)
                assert data, f"the connection ended; frames received: {self.received}"
                self.received.extend(self.decoder.feed(data))

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


def setup(**fields: Any) -> Any:
    values: dict[str, Any] = dict(keepalive_interval=20_000, max_lifetime=90_000,
                                  metadata_mime_type="text/plain",
                                  data_mime_type="text/plain")  # fmt: skip
    values.update(fields)
    return ws.Setup(**values)


# ====================================================================== lease


def test_lease_setup_against_our_server_without_lease_is_refused_and_every_wait_ends() -> None:
    """'If the server accepts the contents of the SETUP frame, it MUST send a LEASE frame
    if the SETUP frame set the L flag': our server without ``lease=`` cannot, so it
    refuses with ERROR[UNSUPPORTED_SETUP] and our client's waits end with
    ``SetupRejected`` at once instead of waiting for ever."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        with pytest.raises(SetupRejected) as rejected:
            await asyncio.wait_for(client.wait_for_lease(), WAIT)
        assert rejected.value.error_code == UNSUPPORTED_SETUP
        with pytest.raises(SetupRejected):
            await asyncio.wait_for(client.wait_established(), WAIT)
        with pytest.raises(SetupRejected):
            await client.request_response(b"x")

    ours(scenario, lease=True)


def test_wait_for_lease_ends_with_connection_lost_when_the_server_hangs_up() -> None:
    """A server that takes the SETUP and closes the connection without a word: the lease
    wait ends with ``ConnectionLost`` (not a hang)."""

    async def main() -> None:
        async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1)
            writer.close()
            await writer.wait_closed()

        listener = await asyncio.start_server(hang_up, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            async with connect(f"tcp://127.0.0.1:{port}", lease=True) as client:
                with pytest.raises(ConnectionLost):
                    await asyncio.wait_for(client.wait_for_lease(), WAIT)
                with pytest.raises(ConnectionLost):
                    await asyncio.wait_for(client.wait_established(), WAIT)
        finally:
            listener.close()
            await listener.wait_closed()

    run(main())


def test_leasing_server_and_leasing_client_grant_each_other_leases() -> None:
    """Both roles: our server with ``lease=`` grants its LEASE right after accepting the
    SETUP ('Server accepts SETUP, sends back LEASE frame'); our client with ``lease=True``
    grants the server's requester one too ('The client-side Responder MUST send a LEASE
    frame after a SETUP frame with the L flag set'), so requests flow both ways."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        await asyncio.wait_for(client.wait_for_lease(), WAIT)
        await asyncio.wait_for(client.wait_established(), WAIT)
        assert await client.request_response(b"to the server") == RSocketPayload(b"to the server")
        (server_side,) = server.peers
        await asyncio.wait_for(server_side.wait_for_lease(), WAIT)
        assert await server_side.request_response(b"to the client") == RSocketPayload(
            b"to the client"
        )

    ours(scenario, serve_options={"lease": (60_000, 5)}, lease=True)


def test_py_server_without_lease_refuses_our_lease_setup_and_wait_for_lease_raises() -> None:
    """rsocket-py's server without a lease publisher answers our L-flag SETUP with
    ERROR[UNSUPPORTED_SETUP]: ``wait_for_lease`` ends with ``SetupRejected`` (it used to
    wait after the connection had closed)."""

    async def main() -> None:
        async with await start_rsocket_py_server() as py:
            async with connect(py.url, lease=True) as client:
                with pytest.raises(SetupRejected) as rejected:
                    await asyncio.wait_for(client.wait_for_lease(), WAIT)
                assert rejected.value.error_code == UNSUPPORTED_SETUP

    run(main())


def test_py_lease_client_against_our_server_without_lease_is_refused() -> None:
    """rsocket-py's client with ``honor_lease`` against our server without ``lease=``: our
    ERROR[UNSUPPORTED_SETUP] reaches it and its request fails instead of queueing for a
    LEASE that never comes."""

    async def main() -> None:
        async with await serve(TCP, Echo()) as server:
            async with rsocket_py_client(server.url, lease=True) as client:
                with pytest.raises(PyPeerError) as failed:
                    await asyncio.wait_for(py_request_response(client, b"x"), WAIT)
                assert failed.value.code in (UNSUPPORTED_SETUP, 0x101)

    run(main())


def test_py_lease_client_and_our_leasing_server_grant_each_other() -> None:
    """rsocket-py honouring our server's LEASE, and our server's requester waiting for
    none from it: rsocket-py's client grants no LEASE (it has no lease publisher), so our
    server's ``wait_for_lease`` keeps waiting -- and ends when rsocket-py leaves."""

    async def main() -> None:
        async with await serve(TCP, Echo(), lease=(60_000, 3)) as server:
            async with rsocket_py_client(server.url, lease=True) as client:
                answer = await asyncio.wait_for(py_request_response(client, b"x"), WAIT)
                assert answer[0] == b"x"
                (server_side,) = server.peers
                waiting = asyncio.ensure_future(server_side.wait_for_lease())
                await asyncio.sleep(0.05)
                assert not waiting.done()
            with pytest.raises(ConnectionLost):
                await asyncio.wait_for(waiting, WAIT)

    run(main())


def test_lease_restarts_after_resumption() -> None:
    """Resuming Operation: 'Leasing semantics are NOT assumed to carry over from previous
    connections when resuming. LEASE semantics MUST be restarted upon a new connection by
    sending a LEASE frame from the server.'  After the transport drops and the session
    resumes, the old lease is void, our server grants a new one at once (not at its next
    renewal, 30 s away) and the client's ``wait_for_lease`` waits for it."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        await asyncio.wait_for(client.wait_for_lease(), WAIT)
        assert await client.request_response(b"a") == RSocketPayload(b"a")
        client.driver.transport.abort()  # the network drops us
        async with asyncio.timeout(WAIT):
            while client.resumptions == 0:
                await asyncio.sleep(0.005)
            await client.wait_for_lease()
        assert await client.request_response(b"b") == RSocketPayload(b"b")

    ours(scenario, serve_options={"lease": (60_000, 100), "resume": True}, lease=True,
         resume=True)  # fmt: skip


# ====================================================================== one-item channel


def test_one_item_channel_in_one_write_is_answered_and_the_connection_survives() -> None:
    """REQUEST_CHANNEL and the requester's PAYLOAD(C) written at once (so read at once):
    our server answers the one item and completes, and the connection lives on (it used to
    try a REQUEST_N in ``half_closed_remote``, raise IllegalSend and drop the
    connection)."""

    async def main() -> None:
        async with await serve(TCP, Echo()) as server:
            raw = await RawPeer.open(server.url)
            try:
                raw.send(setup(),
                         ws.RequestChannel(stream_id=1, initial_request_n=8, data=b"only"),
                         ws.Payload(stream_id=1, complete=True))  # fmt: skip
                done = await raw.until(lambda f: f.stream_id == 1 and getattr(f, "complete", 0))
                answers = [f for f in raw.received if f.stream_id == 1]
                assert [type(f) for f in answers] == [ws.Payload] * len(answers)
                assert [f.data for f in answers if f.next] == [b"echo:only"] and done.complete
                raw.send(ws.RequestResponse(stream_id=3, data=b"still here"))
                answer = await raw.until(lambda f: f.stream_id == 3)
                assert answer.data == b"still here"
                assert not [f for f in raw.received if f.stream_id == 0]
            finally:
                await raw.close()

    run(main())


def test_py_one_item_channel_is_answered_by_our_server() -> None:
    """rsocket-py sends REQUEST_CHANNEL and, right behind it, PAYLOAD(C) (a publisher that
    completes at once); and REQUEST_CHANNEL with C itself.  Our server echoes the one item
    both times, on one connection."""

    async def main() -> None:
        async with await serve(TCP, Echo()) as server:
            async with rsocket_py_client(server.url) as client:
                one_read = await asyncio.wait_for(py_one_item_channel(client, b"only"), WAIT)
                assert one_read == [b"echo:only"]
                c_on_request = await asyncio.wait_for(py_request_channel(client, b"one"), WAIT)
                assert c_on_request == [b"echo:one"]
                assert (await py_request_response(client, b"alive"))[0] == b"alive"

    run(main())


def test_our_one_item_channel_against_the_py_server() -> None:
    """Our requester's one-item channels against rsocket-py's echoing responder: C on the
    REQUEST_CHANNEL (no ``outbound``), and PAYLOAD(C) right behind it (an empty one)."""

    async def main() -> None:
        async with await start_rsocket_py_server() as py:
            async with connect(py.url, metadata_mime_type="text/plain") as client:

                async def nothing() -> AsyncIterator[bytes]:
                    return
                    yield b""

                async with asyncio.timeout(WAIT):
                    c_on_request = [p.data async for p in client.request_channel(b"one")]
                    payload_c = [
                        p.data async for p in client.request_channel(b"two", outbound=nothing())
                    ]
                assert c_on_request == [b"one"] and payload_c == [b"two"]

    run(main())


# ====================================================================== REQUEST_N answer


def test_our_responder_answers_initial_request_channel_with_request_n() -> None:
    """Request Channel: 'a Responder MUST respond to an initial REQUEST_CHANNEL frame with
    a REQUEST_N frame.'  Our server sends it as soon as the request arrives, whether or
    not its handler ever reads the requester's side."""

    async def main() -> None:
        handler = Deaf()
        async with await serve(TCP, handler) as server:
            raw = await RawPeer.open(server.url)
            try:
                raw.send(setup(), ws.RequestChannel(stream_id=1, initial_request_n=1, data=b"a"))
                request_n = await raw.until(lambda f: isinstance(f, ws.RequestN))
                assert request_n.stream_id == 1 and request_n.request_n >= 1
                assert handler.channel_started.is_set()
            finally:
                await raw.close()

    run(main())


# ====================================================================== graceful close


def test_our_graceful_close_lets_streams_finish_and_refuses_new_requests() -> None:
    """ERROR[CONNECTION_CLOSE]: 'Sender or Receiver of this frame MUST wait for outstanding
    streams to terminate before closing the connection. New requests MAY not be
    accepted.'  Our client closes with a grace period while a stream is running: the
    stream delivers every item, a new request is refused (``NoNewRequests``), then the
    connection closes on both sides."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        stream = client.request_stream(b"6")
        first = await anext(stream)
        closing = asyncio.ensure_future(client.close(grace=WAIT))
        await asyncio.sleep(0.01)
        with pytest.raises(NoNewRequests):
            await client.request_response(b"new")
        rest = [p.data async for p in stream]
        assert [first.data, *rest] == [str(i).encode() for i in range(6)]
        await asyncio.wait_for(closing, WAIT)
        assert client.closed
        async with asyncio.timeout(WAIT):
            while server.peers:
                await asyncio.sleep(0.005)

    ours(scenario, Echo(period=0.02))


def test_peer_graceful_close_is_drained_by_our_side() -> None:
    """The other direction: the server closes gracefully; our client's stream still gets
    every item, our new requests are refused, then our client sees the connection end
    (``ConnectionLost``, reason "closed")."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        stream = client.request_stream(b"5")
        first = await anext(stream)
        (server_side,) = server.peers
        closing = asyncio.ensure_future(server_side.close(grace=WAIT))
        await asyncio.sleep(0.01)
        with pytest.raises(NoNewRequests):
            client.request_stream(b"1")
        rest = [p.data async for p in stream]
        assert [first.data, *rest] == [str(i).encode() for i in range(5)]
        await asyncio.wait_for(closing, WAIT)
        await asyncio.wait_for(client.wait_closed(), WAIT)
        with pytest.raises(ConnectionLost) as lost:
            await client.request_response(b"after")
        assert lost.value.reason == "closed"

    ours(scenario, Echo(period=0.02))


def test_server_shutdown_with_grace_drains_every_connection() -> None:
    """``server.shutdown(grace=...)``: every connection closes gracefully at once; two
    clients' running streams each deliver every item first."""

    async def main() -> None:
        server = await serve(TCP, Echo(period=0.02))
        try:
            async with connect(server.url) as one, connect(server.url) as two:
                streams = [one.request_stream(b"4"), two.request_stream(b"4")]
                firsts = [await anext(stream) for stream in streams]
                closing = asyncio.ensure_future(server.shutdown(grace=WAIT))
                for first, stream in zip(firsts, streams):
                    rest = [p.data async for p in stream]
                    assert [first.data, *rest] == [b"0", b"1", b"2", b"3"]
                await asyncio.wait_for(closing, WAIT)
                await asyncio.wait_for(one.wait_closed(), WAIT)
                await asyncio.wait_for(two.wait_closed(), WAIT)
        finally:
            server.close()
            await server.wait_closed()

    run(main())


def test_graceful_close_gives_up_after_its_grace_period() -> None:
    """A stream that never ends does not hold the connection: after ``grace`` it is ended
    as by a plain close (ERROR[CONNECTION_ERROR]), and the stream fails with
    ``ConnectionLost``."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        stream = client.request_stream(b"", limit_rate=4)  # endless
        await anext(stream)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await client.close(grace=0.2)
        assert 0.15 < loop.time() - started < 2.0
        with pytest.raises(ConnectionLost):
            async for _ in stream:
                pass

    ours(scenario, Echo(period=0.01))


def test_reactivesocket_0_2_graceful_close_drains_our_side() -> None:
    """0.2 has no CONNECTION_CLOSE: ``close(grace=...)`` still lets our open streams finish
    and refuses our new requests, then closes as before."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        stream = client.request_stream(b"4")
        first = await anext(stream)
        closing = asyncio.ensure_future(client.close(grace=WAIT))
        await asyncio.sleep(0.01)
        with pytest.raises(NoNewRequests):
            await client.request_response(b"new")
        rest = [p.data async for p in stream]
        assert [first.data, *rest] == [b"0", b"1", b"2", b"3"]
        await asyncio.wait_for(closing, WAIT)

    ours(scenario, Echo(period=0.02), version="0.2")


def test_request_crossing_a_graceful_close_is_rejected() -> None:
    """A request that crosses the peer's CONNECTION_CLOSE on the wire is refused with
    ERROR[REJECTED] (an answer, so the requester's wait ends: ``StreamError``)."""

    async def main() -> None:
        async with await serve(TCP, Echo(period=0.05)) as server:
            raw = await RawPeer.open(server.url)
            try:
                raw.send(setup(), ws.RequestStream(stream_id=1, initial_request_n=100,
                                                   data=b"3"))  # fmt: skip
                await raw.until(lambda f: isinstance(f, ws.Payload) and f.stream_id == 1)
                (server_side,) = server.peers
                closing = asyncio.ensure_future(server_side.close(grace=WAIT))
                await raw.until(lambda f: isinstance(f, ws.Error) and f.stream_id == 0)
                raw.send(ws.RequestResponse(stream_id=3, data=b"late"))
                refused = await raw.until(lambda f: f.stream_id == 3)
                assert isinstance(refused, ws.Error) and refused.error_code == REJECTED
                await raw.until(lambda f: f.stream_id == 1 and getattr(f, "complete", False))
                await asyncio.wait_for(closing, WAIT)
            finally:
                await raw.close()

    run(main())


# ====================================================================== EXT


def test_ext_frames_reach_the_handler_and_honour_the_ignore_flag() -> None:
    """EXT frames between our peers: a declared extended type reaches ``on_ext`` (stream 0
    and a stream's id); an unknown one with I set is dropped and the connection goes on;
    an unknown one with I clear ends the connection ('MAY send an ERROR[CONNECTION_ERROR]
    frame and close the underlying transport connection')."""

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        await client.send_ext(7, b"hello", b"meta")
        await client.send_ext(9, b"unknown, ignorable", ignore=True)
        await client.send_ext(7, b"on stream 5", stream_id=5, ignore=False)
        async with asyncio.timeout(WAIT):
            while len(handler.exts) < 2:
                await asyncio.sleep(0.005)
        assert handler.exts == [(7, RSocketPayload(b"hello", b"meta"), 0),
                                (7, RSocketPayload(b"on stream 5"), 5)]  # fmt: skip
        assert await client.request_response(b"alive") == RSocketPayload(b"alive")
        await client.send_ext(9, b"unknown, not ignorable", ignore=False)
        await asyncio.wait_for(client.wait_closed(), WAIT)
        with pytest.raises(ConnectionLost) as lost:
            await client.request_response(b"after")
        assert "0x101" in str(lost.value)

    ours(scenario)


def test_a_router_passes_ext_frames_and_its_defaults_extensions_on() -> None:
    """A ``Router`` in front of a handler that declares EXT types (``extensions``):
    the router declares them too, so the engine hands such an EXT to the router, which
    passes it to the default handler's ``on_ext`` (it used to declare none: the frame
    was dropped, or with its I flag clear ended the connection)."""
    echo = Echo()

    async def scenario(server: RSocketServer, client: RSocketPeer, handler: Echo) -> None:
        await client.send_ext(7, b"through the router", b"meta", ignore=False)
        await asyncio.wait_for(echo.got_ext.wait(), WAIT)
        assert echo.exts == [(7, RSocketPayload(b"through the router", b"meta"), 0)]
        assert await client.request_response(b"alive") == RSocketPayload(b"alive")

    router = Router(default=echo)
    assert router.extensions == {7}
    router.extensions = frozenset({8})  # the router's own, beside the default's
    assert router.extensions == {7, 8}
    ours(scenario, router)  # type: ignore[arg-type]
