"""The asyncio RSocket peer (runtime.rsocket.aio): our client against our server over
real transports, every interaction model, routing, errors, cancellation, demand that
follows consumption, fragmentation, lease, setup rejection and resumption.

Every test runs through ``tests.support.aio_support.run``: a hang fails, and a leaked task or
socket fails.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from wirestream.runtime.errors import ConnectionLost, LocalProtocolError
from wirestream.runtime.rsocket import (
    ApplicationError,
    NoLease,
    RSocketPayload,
    RSocketHandler,
    RSocketPeer,
    Router,
    SetupInfo,
    SetupRejected,
    connect,
    serve,
)
from wirestream.runtime.rsocket.metadata import route
from tests.support.aio_support import run
from tests.support.tcp_proxy import TcpProxy


class Recorder(RSocketHandler):
    """Echo responder that records what happened to it."""

    def __init__(self) -> None:
        self.fire_and_forgets: list[RSocketPayload] = []
        self.pushes: list[bytes] = []
        self.pulled = 0
        self.closed_streams = 0
        self.got_fnf = asyncio.Event()

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        if payload.data == b"fail":
            raise ApplicationError("boom")
        if payload.data == b"crash":
            raise RuntimeError("handler crashed")
        return payload

    async def fire_and_forget(self, payload: RSocketPayload) -> None:
        self.fire_and_forgets.append(payload)
        self.got_fnf.set()

    async def metadata_push(self, metadata: bytes) -> None:
        self.pushes.append(metadata)
        self.got_fnf.set()

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        count = int(payload.data) if payload.data else None
        i = 0
        try:
            while count is None or i < count:
                self.pulled += 1
                yield str(i).encode()
                i += 1
        finally:
            self.closed_streams += 1

    async def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[RSocketPayload]:
        yield RSocketPayload(b"first:" + payload.data, payload.metadata)
        async for item in inbound:
            yield RSocketPayload(item.data.upper(), item.metadata)


def _transport_url(scheme: str, folder: str) -> str:
    return {
        "tcp": "tcp://127.0.0.1:0",
        "ws": "ws://127.0.0.1:0/rsocket",
        "unix": f"unix://{folder}/rs.sock",
        "memory": "memory://rsocket-test",
    }[scheme]


async def _exercise_every_model(rs: RSocketPeer, handler: Recorder) -> None:
    assert await rs.request_response(b"ping", b"meta") == RSocketPayload(b"ping", b"meta")
    assert await rs.request_response(b"no metadata") == RSocketPayload(b"no metadata", None)
    items = [p.data async for p in rs.request_stream(b"500", limit_rate=32)]
    assert items == [str(i).encode() for i in range(500)]

    async def outbound() -> AsyncIterator[bytes]:
        for word in (b"a", b"b", b"c"):
            yield word

    channel = [p.data async for p in rs.request_channel(b"x", outbound=outbound())]
    assert channel == [b"first:x", b"A", b"B", b"C"]
    await rs.fire_and_forget(b"fnf", b"m")
    await asyncio.wait_for(handler.got_fnf.wait(), 5)
    assert handler.fire_and_forgets == [RSocketPayload(b"fnf", b"m")]
    handler.got_fnf.clear()
    await rs.metadata_push(b"pushed")
    await asyncio.wait_for(handler.got_fnf.wait(), 5)
    assert handler.pushes == [b"pushed"]


@pytest.mark.parametrize("scheme", ["tcp", "ws", "unix", "memory"])
def test_every_interaction_model_over_every_transport(scheme: str) -> None:
    async def main() -> None:
        handler = Recorder()
        with tempfile.TemporaryDirectory() as folder:
            async with await serve(_transport_url(scheme, folder), handler) as server:
                async with connect(server.url) as rs:
                    await _exercise_every_model(rs, handler)

    run(main())


def test_version_0_2_peers_speak_every_model_over_tcp() -> None:
    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler, version="0.2") as server:
            async with connect(server.url, version="0.2",
                               metadata_mime_type="application/octet-stream") as rs:  # fmt: skip
                await _exercise_every_model(rs, handler)

    run(main())


def test_setup_data_and_mime_types_reach_the_server_handler() -> None:
    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler) as server:
            async with connect(server.url, setup_data=b"hello", setup_metadata=b"sm",
                               data_mime_type="application/json") as rs:  # fmt: skip
                await rs.request_response(b"x")
                setup = handler.setup
                assert setup is not None
                assert (setup.data, setup.metadata) == (b"hello", b"sm")
                assert setup.data_mime_type == "application/json"
                assert setup.metadata_mime_type == "message/x.rsocket.composite-metadata.v0"

    run(main())


def test_application_error_reaches_the_requester_with_its_message() -> None:
    """ERROR[APPLICATION_ERROR] carries the handler's message; any other exception in a
    handler is sent as APPLICATION_ERROR too."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder()) as server:
            async with connect(server.url) as rs:
                with pytest.raises(ApplicationError, match="boom") as caught:
                    await rs.request_response(b"fail")
                assert caught.value.error_code == 0x201
                with pytest.raises(ApplicationError, match="handler crashed"):
                    await rs.request_response(b"crash")
                with pytest.raises(ApplicationError, match="not supported"):
                    await RSocketHandler().request_response(RSocketPayload())
                # the connection is still usable
                assert (await rs.request_response(b"ok")).data == b"ok"

    run(main())


def test_router_dispatches_on_the_composite_metadata_route() -> None:
    router = Router()

    @router.response("echo")
    async def echo(payload: RSocketPayload) -> bytes:
        return b"echo:" + payload.data

    @router.stream("ticks")
    async def ticks(payload: RSocketPayload) -> AsyncIterator[bytes]:
        for i in range(int(payload.data)):
            yield b"tick %d" % i

    @router.channel("upper")
    async def upper(
        payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[bytes]:
        async for item in inbound:
            yield item.data.upper()

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", router) as server:
            async with connect(server.url) as rs:
                assert (await rs.request_response(b"x", route("echo"))).data == b"echo:x"
                got = [p.data async for p in rs.request_stream(b"3", route("ticks"))]
                assert got == [b"tick 0", b"tick 1", b"tick 2"]

                async def words() -> AsyncIterator[bytes]:
                    yield b"hi"
                    yield b"there"

                channel = rs.request_channel(b"", route("upper"), outbound=words())
                assert [p.data async for p in channel] == [b"HI", b"THERE"]
                with pytest.raises(ApplicationError, match="no route 'nowhere'"):
                    await rs.request_response(b"x", route("nowhere"))
                with pytest.raises(ApplicationError, match="carries no route"):
                    await rs.request_response(b"x")

    run(main())


def test_break_cancels_the_stream_and_closes_the_publisher() -> None:
    """CANCEL: "Upon receiving a CANCEL, the stream is terminated on the Responder" — the
    server's async generator is closed (its finally runs)."""

    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler) as server:
            async with connect(server.url) as rs:
                seen = 0
                async for _ in rs.request_stream(b"", limit_rate=8):  # endless
                    seen += 1
                    if seen == 20:
                        break
                await _until(lambda: handler.closed_streams == 1)
                stream = rs.request_stream(b"")
                await stream.__anext__()
                await stream.aclose()
                await _until(lambda: handler.closed_streams == 2)

                async def consume() -> None:
                    async for _ in rs.request_stream(b"", limit_rate=4):
                        await asyncio.sleep(0.001)

                task = asyncio.create_task(consume())
                await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                await _until(lambda: handler.closed_streams == 3)
                assert not rs._calls and not rs.engine.open_streams

    run(main())


def test_demand_follows_consumption_and_the_publisher_is_never_pulled_ahead() -> None:
    """limitRate: at most ``limit_rate`` items are requested and unconsumed at any time,
    so a slow consumer holds the publisher back instead of buffering."""

    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler) as server:
            async with connect(server.url) as rs:
                stream = rs.request_stream(b"", limit_rate=16)
                consumed = 0
                for _ in range(10):
                    await asyncio.sleep(0.02)  # a slow consumer: everything granted arrives
                    assert stream.buffered <= 16
                    assert handler.pulled <= consumed + 16
                    await stream.__anext__()
                    consumed += 1
                assert handler.pulled <= consumed + 16
                await stream.aclose()

    run(main())


def test_fragmentation_carries_a_megabyte_both_ways_with_a_small_mtu() -> None:
    async def main() -> None:
        big = bytes(range(256)) * 4096  # 1 MiB
        async with await serve("tcp://127.0.0.1:0", Recorder(), mtu=1024) as server:
            async with connect(server.url, mtu=512) as rs:
                reply = await rs.request_response(big, b"m" * 3000)
                assert reply == RSocketPayload(big, b"m" * 3000)

    run(main())


def test_lease_is_honoured_by_our_requester_and_enforced() -> None:
    """LEASE: "The Requester MUST NOT send more than Number of Requests specified in the
    LEASE frame within the Time-To-Live value in the LEASE." """

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder(), lease=(60_000, 2)) as server:
            async with connect(server.url, lease=True) as rs:
                with pytest.raises(LocalProtocolError, match="LEASE"):
                    rs.request_stream(b"1")  # no LEASE received yet (IllegalSend)
                await asyncio.wait_for(rs.wait_for_lease(), 5)
                assert (await rs.request_response(b"1")).data == b"1"
                assert (await rs.request_response(b"2")).data == b"2"
                with pytest.raises(NoLease):
                    await rs.request_response(b"3")

    run(main())


def test_rejected_setup_fails_requests_with_setup_rejected() -> None:
    def policy(setup: SetupInfo) -> tuple[int, str] | None:
        return (0x003, "not you") if setup.data == b"intruder" else None

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder(), setup_policy=policy) as server:
            async with connect(server.url, setup_data=b"intruder") as rs:
                with pytest.raises(SetupRejected, match="not you") as caught:
                    await rs.request_response(b"x")
                assert caught.value.error_code == 0x003
            async with connect(server.url, setup_data=b"friend") as rs:
                assert (await rs.request_response(b"x")).data == b"x"

    run(main())


def test_the_server_can_request_from_the_client() -> None:
    """Either side is requester and responder: the server calls the client's handler."""

    class Client(RSocketHandler):
        async def request_response(self, payload: RSocketPayload) -> bytes:
            return b"client says " + payload.data

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder()) as server:
            async with connect(server.url, Client()) as rs:
                await rs.request_response(b"hello")  # the server has seen our SETUP
                (peer,) = server.peers
                reply = await peer.request_response(b"hi")
                assert reply.data == b"client says hi"

    run(main())


def test_closing_the_server_fails_open_streams_with_connection_lost() -> None:
    async def main() -> None:
        server = await serve("tcp://127.0.0.1:0", Recorder())
        async with connect(server.url) as rs:
            stream = rs.request_stream(b"", limit_rate=4)
            await stream.__anext__()
            server.close()
            await server.wait_closed()
            with pytest.raises(ConnectionLost):
                async for _ in stream:
                    pass
            with pytest.raises(ConnectionLost):
                await rs.request_response(b"x")

    run(main())


# --- resumption --------------------------------------------------------------------


def test_resumption_survives_twenty_transport_drops_in_a_100k_stream_exactly_once() -> None:
    """Resuming Operation: after each drop the client reconnects with RESUME, both sides
    retransmit from the other's last received position; every element arrives once, in
    order."""

    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler, resume=True) as server:
            async with connect(server.url, resume=True) as rs:
                got: list[int] = []
                async for payload in rs.request_stream(b"100000", limit_rate=128):
                    got.append(int(payload.data))
                    if len(got) % 4_000 == 0:
                        rs.driver.transport.abort()  # the network drops us
                assert got == list(range(100_000))
                assert rs.resumptions >= 20

    run(main(), 120)


def test_resume_tokens_are_random_and_new_for_each_connection() -> None:
    """Identification Token Rules (seed 003): "Tokens should be resilient to replay attacks
    and thus should only be valid for the lifetime of an individual connection"; "Tokens
    should not be predictable by an attacking 3rd party". ``connect(resume=True)`` draws a
    fresh 128-bit token from the OS's random source for each connection; the server keys
    each session by its own token."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder(), resume=True) as server:
            tokens = []
            for _ in range(3):
                async with connect(server.url, resume=True) as rs:
                    await rs.request_response(b"hello")
                    token = rs.engine.setup.resume_token
                    assert token is not None and len(token) == 16
                    tokens.append(token)
            assert len(set(tokens)) == 3

    run(main())


def test_resumption_after_server_side_drops_during_a_channel() -> None:
    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler, resume=True) as server:
            async with connect(server.url, resume=True) as rs:

                async def words() -> AsyncIterator[bytes]:
                    for i in range(3_000):
                        yield b"w%d" % i

                got: list[bytes] = []
                async for payload in rs.request_channel(b"go", outbound=words(), limit_rate=32):
                    got.append(payload.data)
                    if len(got) % 500 == 0:
                        for peer in server.peers:
                            peer.driver.transport.abort()  # the server's side drops
                assert got == [b"first:go"] + [b"W%d" % i for i in range(3_000)]
                assert rs.resumptions >= 5

    run(main(), 60)


def test_resume_with_an_unknown_session_is_rejected() -> None:
    """ "If the server does not support resuming operation or the Resume Identification
    Token is not found, the server MUST send an ERROR[REJECTED_RESUME]" — after a server
    restart the client's streams fail with SetupRejected instead of hanging."""

    async def main() -> None:
        server = await serve("tcp://127.0.0.1:0", Recorder(), resume=True)
        url = server.url
        async with connect(url, resume=True, resume_timeout=5) as rs:
            stream = rs.request_stream(b"", limit_rate=4)
            await stream.__anext__()
            server.close()
            await server.wait_closed()
            async with await serve(url, Recorder(), resume=True):  # same port, no sessions
                with pytest.raises(SetupRejected):
                    async for _ in stream:
                        pass

    run(main())


async def _until(condition: object, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.005)


def test_break_cancels_even_when_the_application_keeps_the_stream() -> None:
    """Each ``async for`` has its own iterator: leaving it early sends CANCEL although
    the stream object is still referenced; ``anext`` reads without that."""

    async def main() -> None:
        handler = Recorder()
        async with await serve("tcp://127.0.0.1:0", handler) as server:
            async with connect(server.url) as rs:
                stream = rs.request_stream(b"", limit_rate=8)
                assert (await anext(stream)).data == b"0"
                async for _ in stream:
                    break
                await _until(lambda: handler.closed_streams == 1)
                assert stream.finished
                assert [p.data async for p in stream] == []  # cancelled: nothing more

    run(main())


def test_fire_and_forget_sent_just_before_close_is_still_handled() -> None:
    """A request that fully arrived is processed even when the requester closes in the
    same breath (its handler is not cancelled by the connection's end)."""

    class Slow(Recorder):
        async def fire_and_forget(self, payload: RSocketPayload) -> None:
            await asyncio.sleep(0.01)  # suspends: runs as a task
            await super().fire_and_forget(payload)

    async def main() -> None:
        handler = Slow()
        async with await serve("tcp://127.0.0.1:0", handler) as server:
            async with connect(server.url) as rs:
                await rs.fire_and_forget(b"last words")
            await asyncio.wait_for(handler.got_fnf.wait(), 5)
        assert handler.fire_and_forgets == [RSocketPayload(b"last words")]

    run(main())


def test_a_server_keeps_one_peer_per_session_however_often_it_resumes() -> None:
    """Each RESUME arrives on a connection of its own, whose peer hands its engine and
    transport to the session: the server then forgets that peer.  (Regression: found
    against rsocket-java's client -- every resumption left one more peer in
    ``server.peers``, for the life of the server.)"""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder(), resume=True) as server:
            async with connect(server.url, resume=True) as rs:
                for i in range(5):
                    assert (await rs.request_response(b"%d" % i)).data == b"%d" % i
                    rs.driver.transport.abort()
                    await _until(lambda: rs.resumptions == i + 1)
                assert (await rs.request_response(b"last")).data == b"last"
                assert len(server.peers) == 1
                (peer,) = server.peers
                assert peer.resumptions == 5 and not peer.closed

    run(main())


REJECTED_SETUP = 0x0003


@pytest.mark.parametrize("version", ["1.0", "0.2"])
def test_a_setup_with_a_token_in_use_is_rejected_and_the_session_it_names_lives_on(
    version: str,
) -> None:
    """Seed 003, Resume Operation: "A server should not accept a SETUP with a Token that
    is currently already being used".  A second SETUP with the token of a live session,
    and one with the token of a session parked waiting for its RESUME, get
    ERROR[REJECTED_SETUP] on stream 0 (``SetupRejected``); the session keeps working and
    resumes (it used to be replaced, so its client could no longer resume)."""
    token = bytes(range(16))  # 0.2 tokens are 128 bits

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Recorder(), version=version,
                               resume=True) as server:  # fmt: skip
            port = int(server.url.rsplit(":", 1)[1])
            async with TcpProxy(port) as proxy:
                async with connect(f"tcp://127.0.0.1:{proxy.port}", version=version,
                                   resume=token, resume_timeout=10) as first:  # fmt: skip
                    assert (await first.request_response(b"one")).data == b"one"
                    for live in (True, False):
                        if not live:  # park the session: cut the transport, refuse redials
                            proxy.refusing = True
                            proxy.cut()
                            (session,) = server.peers
                            await _until(lambda: not session._connected)
                        async with connect(server.url, version=version,
                                           resume=token) as second:  # fmt: skip
                            with pytest.raises(SetupRejected) as rejected:
                                await second.request_response(b"two")
                            assert rejected.value.error_code == REJECTED_SETUP
                    proxy.refusing = False
                    assert (await first.request_response(b"three")).data == b"three"
                    assert first.resumptions == 1

    run(main(), 30)


def test_a_request_response_handler_answers_whether_or_not_it_waits() -> None:
    """The responder runs a handler at once and gives it a task only if it waits: each
    kind is answered, its exception (before or after waiting) becomes ERROR, and a
    handler that returns another awaitable than a coroutine runs too."""

    class Kinds(RSocketHandler):
        def request_response(self, payload: RSocketPayload) -> Any:
            return getattr(self, payload.data.decode())()

        async def now(self) -> bytes:
            return b"now"

        async def later(self) -> RSocketPayload:
            await asyncio.sleep(0.01)
            await asyncio.sleep(0)
            return RSocketPayload(b"later", b"meta")

        async def fails_now(self) -> bytes:
            raise ValueError("at once")

        async def fails_later(self) -> bytes:
            await asyncio.sleep(0)
            raise ValueError("after waiting")

        def future(self) -> asyncio.Future[bytes]:
            future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(future.set_result, b"future")
            return future

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Kinds()) as server:
            async with connect(server.url) as rs:
                assert (await rs.request_response(b"now")).data == b"now"
                assert await rs.request_response(b"later") == RSocketPayload(b"later", b"meta")
                assert (await rs.request_response(b"future")).data == b"future"
                for kind, message in ((b"fails_now", "at once"),
                                      (b"fails_later", "after waiting")):  # fmt: skip
                    with pytest.raises(ApplicationError, match=message):
                        await rs.request_response(kind)
                (peer,) = server.peers
                assert not peer._calls  # every handler's entry is gone once it answered

    run(main())
