"""Interop of our asyncio RSocket peer (runtime.rsocket.aio) with the real rsocket-py 0.4.20.

Issue 4: "our client against an rsocket-py server and an rsocket-py client against our
server, for every interaction model, with metadata, routing, fragmentation (payload >
MTU), errors and cancellation."  Nothing is mocked: rsocket-py builds and parses every
frame on its side (tests/support/rsocket_py_peers.py, proven against itself in
tests/rsocket/test_rsocket_py_peers.py).

A. our ``connect(url)`` against ``start_rsocket_py_server`` (routes echo / ticks /
   channel / fail / slow / fnf; ``server.received`` records what rsocket-py saw);
B. ``rsocket_py_client`` against our ``serve(url, ROUTER)`` where ``Router`` serves the
   same routes (``Responder`` below records what our side saw);
C. the request-response and request-stream models of A and B over WebSocket.

Every test runs through ``tests.support.aio_support.run``: a hang fails, a leaked task or socket
fails.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.rsocket import (
    ApplicationError,
    NoLease,
    RSocketPayload,
    RSocketHandler,
    RSocketPeer,
    Router,
    SetupInfo,
    connect,
    serve,
)
from wirestream.runtime.rsocket.metadata import encode_composite, route
from tests.support.aio_support import run
from tests.support.rsocket_py_peers import (
    APPLICATION_ERROR,
    COMPOSITE_METADATA,
    PyPeerError,
    RequestRecord,
    RsocketPyServer,
    py_fire_and_forget,
    py_metadata_push,
    py_request_channel,
    py_request_response,
    py_request_stream,
    route_metadata,
    rsocket_py_client,
    start_rsocket_py_server,
)

pytestmark = pytest.mark.peer

# rsocket-py logs (to "pyrsocket") every error it sends or receives, with a traceback;
# several tests provoke errors on purpose.
logging.getLogger("pyrsocket").setLevel(logging.CRITICAL)

BIG = bytes(range(256)) * 400  # 102,400 bytes: far over every MTU below
META = b"M" * 3000  # metadata that spans several fragments too
OUR_MTU = 256  # our fragments (frame size without the 3-byte length prefix)
PY_FRAGMENT_SIZE = 1024  # rsocket-py's fragments
OCTET_STREAM = "application/octet-stream"


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


# ======================================================================================
# A. our client against an rsocket-py server
# ======================================================================================

ClientScenario = Callable[[RsocketPyServer, RSocketPeer], Coroutine[Any, Any, None]]


def against_py_server(
    scenario: ClientScenario,
    *,
    transport: str = "tcp",
    server: dict[str, Any] | None = None,
    **connect_options: Any,
) -> None:
    """Run ``scenario(py_server, our_client)`` with a fresh rsocket-py server."""

    async def main() -> None:
        py_server = await start_rsocket_py_server(transport=transport, **(server or {}))
        try:
            async with connect(py_server.url, **connect_options) as rs:
                await scenario(py_server, rs)
        finally:
            await py_server.close()

    run(main())


def test_our_request_response_is_echoed_routed_and_unrouted_with_metadata() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        # our route() is byte for byte rsocket-py's composite(route(...))
        assert route("echo") == route_metadata("echo")
        assert await rs.request_response(b"ping", route("echo")) == RSocketPayload(
            b"ping", route("echo")
        )
        # unrouted: composite metadata without a routing entry is echoed as is
        other = encode_composite([("text/plain", b"meta")])
        assert await rs.request_response(b"hello", other) == RSocketPayload(b"hello", other)
        # no metadata: the M flag stays clear both ways
        assert await rs.request_response(b"bare") == RSocketPayload(b"bare", None)
        # rsocket-py quirk: it cannot tell empty metadata from absent, so our b"" (M flag
        # set, length 0) comes back without metadata
        assert await rs.request_response(b"empty", b"") == RSocketPayload(b"empty", None)

    against_py_server(scenario)


def test_our_request_response_under_a_non_composite_mime_type_is_unrouted() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        # route bytes under text/plain are just bytes: "fail" is not routed, it is echoed
        assert await rs.request_response(b"x", route("fail")) == RSocketPayload(b"x", route("fail"))
        assert py.received.setups[0].metadata_mime == b"text/plain"

    against_py_server(scenario, metadata_mime_type="text/plain")


def test_our_fire_and_forget_reaches_the_py_server_routed_and_unrouted() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        other = encode_composite([("text/plain", b"m")])
        await rs.fire_and_forget(b"one", other)
        await rs.fire_and_forget(b"two", route("fnf"))
        await py.received.wait_for(lambda r: len(r.fire_and_forget) == 2)
        assert py.received.fire_and_forget == [
            RequestRecord(None, b"one", other),
            RequestRecord("fnf", b"two", route_metadata("fnf")),
        ]

    against_py_server(scenario)


def test_our_request_stream_gets_every_tick_in_order_with_a_limit_rate_below_n() -> None:
    """REQUEST_N: initial 7, then replenished as we consume; rsocket-py sends exactly what
    was requested, so 100 ticks arrive in ~15 batches, all in order."""

    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        expected = [str(i).encode() for i in range(100)]
        routed = [p.data async for p in rs.request_stream(b"100", route("ticks"), limit_rate=7)]
        assert routed == expected
        unrouted = [p.data async for p in rs.request_stream(b"100", limit_rate=7)]
        assert unrouted == expected
        assert [p async for p in rs.request_stream(b"0", route("ticks"))] == []

    against_py_server(scenario)


def test_our_channel_items_are_echoed_in_order() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        items = [f"item-{i}".encode() for i in range(100)]  # > rsocket-py's 32 window

        async def outbound() -> AsyncIterator[bytes]:
            for item in items:
                yield item

        channel = rs.request_channel(b"first", route("channel"), outbound=outbound(),
                                     limit_rate=10)  # fmt: skip
        assert [p.data async for p in channel] == [b"first", *items]
        # without an outbound side the REQUEST_CHANNEL carries COMPLETE
        only = rs.request_channel(b"only", route("channel"))
        assert [p.data async for p in only] == [b"only"]

    against_py_server(scenario)


def test_our_metadata_push_is_recorded_by_the_py_server() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        await rs.metadata_push(b"pushed")
        await py.received.wait_for(lambda r: r.metadata_pushes == [b"pushed"])

    against_py_server(scenario)


def test_py_fail_route_raises_application_error_boom_and_the_connection_survives() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        with pytest.raises(ApplicationError) as caught:
            await rs.request_response(b"x", route("fail"))
        assert (caught.value.error_code, caught.value.message) == (APPLICATION_ERROR, "boom")
        assert (await rs.request_response(b"after", route("echo"))).data == b"after"

    against_py_server(scenario)


def test_unknown_route_on_the_py_server_raises_application_error_for_every_model() -> None:
    """rsocket-py answers an unknown route with ERROR[APPLICATION_ERROR] whose message is
    the route name."""

    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        with pytest.raises(ApplicationError, match="^nowhere$"):
            await rs.request_response(b"x", route("nowhere"))
        with pytest.raises(ApplicationError, match="^nowhere$"):
            [p async for p in rs.request_stream(b"3", route("nowhere"))]

        async def outbound() -> AsyncIterator[bytes]:
            yield b"y"

        with pytest.raises(ApplicationError, match="^nowhere$"):
            [p async for p in rs.request_channel(b"x", route("nowhere"), outbound=outbound())]
        assert (await rs.request_response(b"still", route("echo"))).data == b"still"

    against_py_server(scenario)


def test_py_stream_error_ends_our_stream_with_application_error() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        with pytest.raises(ApplicationError, match="must be a decimal count"):
            [p async for p in rs.request_stream(b"abc", route("ticks"))]

    against_py_server(scenario)


def test_breaking_out_of_slow_cancels_it_on_the_py_server() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        got = []
        async for payload in rs.request_stream(b"", route("slow"), limit_rate=2):
            got.append(payload.data)
            if len(got) == 3:
                break
        assert got == [b"0", b"1", b"2"]
        await py.received.wait_for(lambda r: r.cancelled == [("stream", "slow")])
        # the connection is still usable after the CANCEL
        ticks = [p.data async for p in rs.request_stream(b"2", route("ticks"))]
        assert ticks == [b"0", b"1"]

    against_py_server(scenario)


def test_breaking_out_of_a_channel_cancels_it_on_the_py_server() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        async def outbound() -> AsyncIterator[bytes]:
            for i in range(1000):
                yield str(i).encode()

        got = []
        # the iterator is not kept: `break` drops it, and dropping it sends CANCEL (a kept
        # one needs `await channel.aclose()`, like any async generator)
        async for payload in rs.request_channel(
            b"f", route("channel"), outbound=outbound(), limit_rate=2
        ):
            got.append(payload.data)
            if len(got) == 2:
                break
        assert got == [b"f", b"0"]
        await py.received.wait_for(lambda r: r.cancelled == [("channel", "channel")])
        assert (await rs.request_response(b"up", route("echo"))).data == b"up"

    against_py_server(scenario)


def test_100_kb_request_response_is_fragmented_both_ways_and_echoed_intact() -> None:
    """Our MTU 256 against rsocket-py's fragment_size 1024: one fragmented payload per
    direction, so rsocket-py's interleaving bug (see the channel test below) cannot bite."""

    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        assert await rs.request_response(BIG, META) == RSocketPayload(BIG, META)
        # (102,400 + 3,000) / 256: our fragments, each one seen by rsocket-py; its reply
        # is cut at 1024 bytes (fragment_size, proven in tests/rsocket/test_rsocket_py_peers.py)
        assert py.received.fragments > 400

    against_py_server(scenario, server={"fragment_size": PY_FRAGMENT_SIZE}, mtu=OUR_MTU)


def test_100_kb_channel_items_are_fragmented_both_ways_and_echoed_intact() -> None:
    """Several fragmented payloads in a row on one stream.  Stock rsocket-py sends the
    next frame between the fragments of a payload (pinned by tests/rsocket/test_rsocket_py_peers
    ``test_stock_rsocket_py_interleaves...``), which corrupts its echo of BIG followed by
    b"small"; the server runs with ``contiguous_fragments=True`` (the repaired sender).
    Our sender needs no repair: rsocket-py's receiver reassembles our fragments."""

    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        async def outbound() -> AsyncIterator[RSocketPayload]:
            yield RSocketPayload(b"small")
            yield RSocketPayload(BIG, META)
            yield RSocketPayload(BIG)

        channel = rs.request_channel(BIG, META, outbound=outbound())
        echoed = [p async for p in channel]
        assert [p.data for p in echoed] == [BIG, b"small", BIG, BIG]
        assert [p.metadata for p in echoed] == [META, None, META, None]
        assert py.received.fragments > 1200  # three 100 kB payloads in 256-byte frames

    against_py_server(
        scenario,
        server={"fragment_size": PY_FRAGMENT_SIZE, "contiguous_fragments": True},
        metadata_mime_type="application/octet-stream",  # META is raw bytes: unrouted
        mtu=OUR_MTU,
    )


def test_py_server_answers_our_keepalives_within_max_lifetime() -> None:
    """KEEPALIVE every 100 ms, max lifetime 500 ms: our client would declare rsocket-py
    dead (and close) if it did not answer KEEPALIVE[respond]."""

    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        await asyncio.sleep(0.8)
        assert not rs.closed
        assert (await rs.request_response(b"alive")).data == b"alive"

    against_py_server(scenario, keepalive_interval=100, max_lifetime=500)


def test_py_server_closing_fails_our_open_stream_with_connection_lost() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        stream = rs.request_stream(b"", route("slow"), limit_rate=4)
        assert (await stream.__anext__()).data == b"0"
        await py.close()
        with pytest.raises(ConnectionLost):
            async for _ in stream:
                pass
        with pytest.raises(ConnectionLost):
            await rs.request_response(b"x")

    against_py_server(scenario)


def test_our_close_sends_connection_close_that_the_py_server_records() -> None:
    async def main() -> None:
        async with await start_rsocket_py_server() as py:
            async with connect(py.url) as rs:
                assert (await rs.request_response(b"x")).data == b"x"
            await py.received.wait_for(lambda r: r.closed_connections == 1)
            assert py.received.errors == [(0x102, b"bye")]  # ERROR[CONNECTION_CLOSE]

    run(main())


def test_our_setup_data_metadata_and_mime_types_reach_the_py_server() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        await rs.request_response(b"x")  # the SETUP was handled before this answer
        (setup,) = py.received.setups
        assert (setup.major_version, setup.minor_version) == (1, 0)
        assert (setup.data, setup.metadata) == (b"setup-data", b"setup-metadata")
        assert (setup.data_mime, setup.metadata_mime) == (b"application/json", COMPOSITE_METADATA)
        assert (setup.keepalive_ms, setup.max_lifetime_ms) == (5_000, 60_000)
        assert (setup.lease, setup.resume) == (False, False)

    against_py_server(
        scenario,
        setup_data=b"setup-data",
        setup_metadata=b"setup-metadata",
        data_mime_type="application/json",
        keepalive_interval=5_000,
        max_lifetime=60_000,
    )


def test_lease_granted_by_the_py_server_is_honoured_by_our_requester() -> None:
    """LEASE: "The Requester MUST NOT send more than Number of Requests specified in the
    LEASE frame within the Time-To-Live value" -- rsocket-py grants one LEASE of 2."""

    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        await asyncio.wait_for(rs.wait_for_lease(), 5)
        assert (await rs.request_response(b"1")).data == b"1"
        assert (await rs.request_response(b"2")).data == b"2"
        with pytest.raises(NoLease):
            await rs.request_response(b"3")
        assert py.received.setups[0].lease is True

    against_py_server(scenario, server={"lease": True, "lease_requests": 2}, lease=True)


# ======================================================================================
# B. the rsocket-py client against our server
# ======================================================================================


class Responder(RSocketHandler):
    """What our server saw and did: the unrouted (default) handler of ``make_router``,
    and the records its routes write."""

    def __init__(self) -> None:
        self.fire_and_forget_records: list[tuple[str | None, RSocketPayload]] = []
        self.pushes: list[bytes] = []
        self.slow_closed = 0
        self.slow_sent = 0
        self.channels_closed = 0

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        return payload  # unrouted echo

    async def fire_and_forget(self, payload: RSocketPayload) -> None:
        self.fire_and_forget_records.append((None, payload))

    async def metadata_push(self, metadata: bytes) -> None:
        self.pushes.append(metadata)


def make_router(responder: Responder) -> Router:
    """Our equivalent of the rsocket-py fixture's routes."""
    router = Router(default=responder)

    @router.response("echo")
    async def echo(payload: RSocketPayload) -> RSocketPayload:
        return payload

    @router.response("fail")
    async def fail(payload: RSocketPayload) -> RSocketPayload:
        raise ApplicationError("boom")

    @router.stream("ticks")
    async def ticks(payload: RSocketPayload) -> AsyncIterator[bytes]:
        for i in range(int(payload.data)):
            yield str(i).encode()

    @router.stream("slow")
    async def slow(payload: RSocketPayload) -> AsyncIterator[bytes]:
        try:
            while True:
                yield str(responder.slow_sent).encode()
                responder.slow_sent += 1
                await asyncio.sleep(0.01)
        finally:
            responder.slow_closed += 1

    @router.channel("channel")
    async def channel(
        payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[RSocketPayload]:
        try:
            yield payload
            async for item in inbound:
                yield item
        finally:
            responder.channels_closed += 1

    @router.fire_and_forget_route("fnf")
    async def fnf(payload: RSocketPayload) -> None:
        responder.fire_and_forget_records.append(("fnf", payload))

    return router


ServerScenario = Callable[[Responder, Any], Coroutine[Any, Any, None]]


def against_our_server(
    scenario: ServerScenario,
    *,
    url: str = "tcp://127.0.0.1:0",
    serve_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> None:
    """Run ``scenario(responder, py_client)`` with our fresh server and rsocket-py's
    client connected to it."""

    async def main() -> None:
        responder = Responder()
        async with await serve(url, make_router(responder), **(serve_options or {})) as server:
            async with rsocket_py_client(server.url, **client_options) as client:
                await scenario(responder, client)

    run(main())


def test_py_request_response_is_echoed_routed_and_unrouted_with_metadata() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        assert await py_request_response(client, b"ping", "echo") == (
            b"ping",
            route_metadata("echo"),
        )
        other = encode_composite([("text/plain", b"meta")])
        assert await py_request_response(client, b"hello", metadata=other) == (b"hello", other)
        assert await py_request_response(client, b"bare") == (b"bare", b"")

    against_our_server(scenario)


def test_py_fire_and_forget_reaches_our_handler_routed_and_unrouted() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        other = encode_composite([("text/plain", b"m")])
        await py_fire_and_forget(client, b"one", metadata=other)
        await py_fire_and_forget(client, b"two", "fnf")
        await _until(lambda: len(responder.fire_and_forget_records) == 2)
        assert responder.fire_and_forget_records == [
            (None, RSocketPayload(b"one", other)),
            ("fnf", RSocketPayload(b"two", route_metadata("fnf"))),
        ]

    against_our_server(scenario)


def test_py_request_stream_gets_every_tick_with_a_limit_rate_below_n() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        expected = [str(i).encode() for i in range(100)]
        assert await py_request_stream(client, b"100", "ticks", limit_rate=7) == expected
        assert await py_request_stream(client, b"100", "ticks") == expected  # 2^31-1
        assert await py_request_stream(client, b"0", "ticks") == []

    against_our_server(scenario)


def test_py_channel_items_are_echoed_in_order() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        items = [f"item-{i}".encode() for i in range(300)]  # > our 256 limit_rate
        echoed = await py_request_channel(client, b"first", items, "channel", limit_rate=10)
        assert echoed == [b"first", *items]
        assert await py_request_channel(client, b"only", [], "channel") == [b"only"]

    against_our_server(scenario)


def test_py_metadata_push_reaches_our_handler() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        await py_metadata_push(client, b"pushed")
        await _until(lambda: responder.pushes == [b"pushed"])

    against_our_server(scenario)


def test_our_fail_route_reaches_py_as_application_error_boom() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        with pytest.raises(PyPeerError) as caught:
            await py_request_response(client, b"x", "fail")
        assert (caught.value.code, caught.value.message) == (APPLICATION_ERROR, "boom")
        assert await py_request_response(client, b"after", "echo") == (
            b"after",
            route_metadata("echo"),
        )

    against_our_server(scenario)


def test_unknown_route_on_our_server_reaches_py_as_application_error() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        for interaction in (
            py_request_response(client, b"x", "nowhere"),
            py_request_stream(client, b"3", "nowhere"),
            py_request_channel(client, b"x", [b"y"], "nowhere"),
        ):
            with pytest.raises(PyPeerError) as caught:
                await interaction
            assert (caught.value.code, caught.value.message) == (
                APPLICATION_ERROR,
                "no route 'nowhere'",
            )
        assert await py_request_response(client, b"up") == (b"up", b"")

    against_our_server(scenario)


def test_our_stream_publisher_failure_reaches_py_as_application_error() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        with pytest.raises(PyPeerError) as caught:
            await py_request_stream(client, b"abc", "ticks")  # int(b"abc") raises
        assert caught.value.code == APPLICATION_ERROR
        assert "invalid literal" in caught.value.message

    against_our_server(scenario)


def test_py_cancel_after_k_items_closes_our_slow_publisher() -> None:
    """CANCEL: "Upon receiving a CANCEL, the stream is terminated on the Responder" --
    our publisher's async generator is closed (its finally runs) and stops producing."""

    async def scenario(responder: Responder, client: Any) -> None:
        got = await py_request_stream(client, b"", "slow", take=3, limit_rate=2)
        assert got == [b"0", b"1", b"2"]
        await _until(lambda: responder.slow_closed == 1)
        sent = responder.slow_sent
        await asyncio.sleep(0.05)  # five "slow" periods
        assert responder.slow_sent == sent
        assert await py_request_stream(client, b"2", "ticks") == [b"0", b"1"]

    against_our_server(scenario)


def test_py_cancel_of_a_channel_closes_our_channel_publisher() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        items = [str(i).encode() for i in range(50)]
        echoed = await py_request_channel(client, b"f", items, "channel", take=2, limit_rate=2)
        assert echoed == [b"f", b"0"]
        await _until(lambda: responder.channels_closed == 1)
        assert await py_request_response(client, b"up") == (b"up", b"")

    against_our_server(scenario)


def test_raw_metadata_under_the_composite_mime_type_is_refused_by_our_router() -> None:
    """Our decision, unlike the rsocket-py fixture (which serves such a request
    unrouted): metadata declared ``message/x.rsocket.composite-metadata.v0`` that is not
    composite metadata is malformed, and the request gets ERROR[APPLICATION_ERROR] saying
    why; bytes that parse as composite metadata without a route are served unrouted."""

    async def scenario(responder: Responder, client: Any) -> None:
        with pytest.raises(PyPeerError) as caught:
            await py_request_response(client, b"x", metadata=b"meta")
        assert caught.value.code == APPLICATION_ERROR
        assert "composite metadata" in caught.value.message
        other = encode_composite([("text/plain", b"meta")])
        assert await py_request_response(client, b"x", metadata=other) == (b"x", other)

    against_our_server(scenario)


def test_100_kb_payloads_between_py_client_and_our_server_are_fragmented_both_ways() -> None:
    """rsocket-py fragments at 1024, we at 256.  request-response carries one payload per
    direction; the channel carries several in a row, so rsocket-py's client runs with
    ``contiguous_fragments=True`` (stock rsocket-py interleaves the next frame between a
    payload's fragments).  Our fragments of consecutive payloads reach rsocket-py's stock
    receiver intact."""

    async def scenario(responder: Responder, client: Any) -> None:
        other = encode_composite([("text/plain", META)])
        assert await py_request_response(client, BIG, metadata=other) == (BIG, other)
        assert client.fragments_received > 400  # (102,400 + 3,000) / 256
        echoed = await py_request_channel(client, BIG, [b"small", BIG, BIG], "channel")
        assert echoed == [BIG, b"small", BIG, BIG]

    against_our_server(
        scenario,
        serve_options={"mtu": OUR_MTU},
        fragment_size=PY_FRAGMENT_SIZE,
        contiguous_fragments=True,
    )


def test_our_server_answers_py_keepalives_within_max_lifetime() -> None:
    """rsocket-py's client sends KEEPALIVE every 100 ms and marks the server dead
    (``is_server_alive()`` False) when none came back for its max lifetime, 500 ms."""

    async def scenario(responder: Responder, client: Any) -> None:
        await asyncio.sleep(0.8)
        assert client.is_server_alive()
        assert await py_request_response(client, b"alive") == (b"alive", b"")

    against_our_server(
        scenario, keep_alive=timedelta(milliseconds=100), max_lifetime=timedelta(milliseconds=500)
    )


def test_our_server_closing_fails_a_py_stream_with_connection_error() -> None:
    """rsocket-py fails a request open when the connection ends with CONNECTION_ERROR
    (0x101), whatever the ERROR frame on stream 0 said (ours: CONNECTION_ERROR, as a stream
    is open)."""

    async def main() -> None:
        server = await serve("tcp://127.0.0.1:0", make_router(Responder()))
        try:
            async with rsocket_py_client(server.url) as client:
                stream = asyncio.ensure_future(py_request_stream(client, b"", "slow"))
                await asyncio.sleep(0.05)  # a few "slow" items are under way
                server.close()
                await server.wait_closed()
                with pytest.raises(PyPeerError) as caught:
                    await asyncio.wait_for(stream, 5)
                assert caught.value.code == 0x101
        finally:
            server.close()
            await server.wait_closed()

    run(main())


def test_py_setup_data_metadata_and_mime_types_reach_our_handler() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        await py_request_response(client, b"x")  # our server has handled the SETUP
        setup = responder.setup
        assert isinstance(setup, SetupInfo)
        assert (setup.data, setup.metadata) == (b"setup-data", b"setup-metadata")
        assert setup.data_mime_type == "application/json"
        assert setup.metadata_mime_type == COMPOSITE_METADATA.decode()

    against_our_server(
        scenario,
        setup_data=b"setup-data",
        setup_metadata=b"setup-metadata",
        data_encoding=b"application/json",
    )


def test_lease_granted_by_our_server_is_honoured_by_the_py_client() -> None:
    """Our server grants LEASE(60 s, 2); rsocket-py (``honor_lease``) sends two requests
    and holds the third back."""

    async def scenario(responder: Responder, client: Any) -> None:
        # a LEASE that never came would hold the first request back
        assert await asyncio.wait_for(py_request_response(client, b"1"), 5) == (b"1", b"")
        assert await py_request_response(client, b"2") == (b"2", b"")
        third = asyncio.ensure_future(py_request_response(client, b"3"))
        done, _ = await asyncio.wait([third], timeout=0.3)
        assert not done
        third.cancel()
        with pytest.raises(asyncio.CancelledError):
            await third

    against_our_server(scenario, serve_options={"lease": (60_000, 2)}, lease=True)


# ======================================================================================
# C. WebSocket: request-response and request-stream, both directions
# ======================================================================================


def test_ws_our_client_request_response_and_stream_against_the_py_server() -> None:
    async def scenario(py: RsocketPyServer, rs: RSocketPeer) -> None:
        assert await rs.request_response(b"ping", route("echo")) == RSocketPayload(
            b"ping", route("echo")
        )
        with pytest.raises(ApplicationError, match="^boom$"):
            await rs.request_response(b"x", route("fail"))
        ticks = [p.data async for p in rs.request_stream(b"50", route("ticks"), limit_rate=7)]
        assert ticks == [str(i).encode() for i in range(50)]
        assert py.transport == "ws"

    against_py_server(scenario, transport="ws")


def test_ws_py_client_request_response_and_stream_against_our_server() -> None:
    async def scenario(responder: Responder, client: Any) -> None:
        assert await py_request_response(client, b"ping", "echo") == (
            b"ping",
            route_metadata("echo"),
        )
        with pytest.raises(PyPeerError, match="boom"):
            await py_request_response(client, b"x", "fail")
        expected = [str(i).encode() for i in range(50)]
        assert await py_request_stream(client, b"50", "ticks", limit_rate=7) == expected

    against_our_server(scenario, url="ws://127.0.0.1:0/")
