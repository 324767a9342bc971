"""The rsocket-py peers of tests/support/rsocket_py_peers.py, proven against each other.

rsocket-py's client (``rsocket_py_client`` + ``py_*`` helpers) talks to rsocket-py's server
(``start_rsocket_py_server``) over TCP and WebSocket, for every route and interaction
model, with fragmentation, errors, cancellation and lease. This proves the fixture before
our own RSocket client/server use it, and it is the baseline the interop tests and the
benchmark (bench/rsocket_py_baseline.py) compare with. Nothing is mocked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from tests.support.aio_support import run
from tests.support.rsocket_py_peers import (
    APPLICATION_ERROR,
    COMPOSITE_METADATA,
    OCTET_STREAM,
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

# rsocket-py logs (to "pyrsocket") every error it sends, with a traceback; the tests
# below provoke several on purpose.
logging.getLogger("pyrsocket").setLevel(logging.CRITICAL)

TRANSPORTS = pytest.mark.parametrize("transport", ["tcp", "ws"])

BIG = bytes(range(256)) * 400  # 102,400 bytes
META = b"M" * 3000  # metadata that spans fragments too

Scenario = Callable[[RsocketPyServer, Any], Coroutine[Any, Any, None]]


def against_server(transport: str, scenario: Scenario, **options: Any) -> None:
    """Run ``scenario(server, client)`` with a fresh server and a connected client."""
    client_options = {k[7:]: v for k, v in options.items() if k.startswith("client_")}
    server_options = {k: v for k, v in options.items() if not k.startswith("client_")}

    async def main() -> None:
        server = await start_rsocket_py_server(transport=transport, **server_options)
        try:
            async with rsocket_py_client(server.url, **client_options) as client:
                await scenario(server, client)
        finally:
            await server.close()

    run(main())


# --------------------------------------------------------------------------------------
# request-response
# --------------------------------------------------------------------------------------


@TRANSPORTS
def test_unrouted_request_response_echoes_data_and_metadata(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_response(client, b"hello", metadata=b"meta") == (
            b"hello",
            b"meta",
        )
        # rsocket-py cannot tell absent metadata from empty: both arrive as b"".
        assert await py_request_response(client, b"no metadata") == (b"no metadata", b"")

    against_server(transport, scenario)


@TRANSPORTS
def test_route_echo_returns_data_and_the_composite_route_metadata(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        data, metadata = await py_request_response(client, b"ping", "echo")
        assert data == b"ping"
        assert metadata == route_metadata("echo") == b"\xfe\x00\x00\x05\x04echo"

    against_server(transport, scenario)


@TRANSPORTS
def test_route_fail_arrives_as_application_error_boom(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        with pytest.raises(PyPeerError) as failure:
            await py_request_response(client, b"x", "fail")
        assert (failure.value.code, failure.value.message) == (APPLICATION_ERROR, "boom")
        # the connection survives an application error
        assert await py_request_response(client, b"after", "echo") == (
            b"after",
            route_metadata("echo"),
        )

    against_server(transport, scenario)


def test_unknown_route_gets_application_error_naming_the_route() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        for interaction in (
            py_request_response(client, b"x", "nowhere"),
            py_request_stream(client, b"3", "nowhere"),
            py_request_channel(client, b"x", [b"y"], "nowhere"),
        ):
            with pytest.raises(PyPeerError) as failure:
                await interaction
            assert (failure.value.code, failure.value.message) == (APPLICATION_ERROR, "nowhere")

    against_server("tcp", scenario)


def test_unknown_route_fire_and_forget_is_dropped() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        await py_fire_and_forget(client, b"lost", "nowhere")
        await py_fire_and_forget(client, b"kept", "fnf")
        await server.received.wait_for(lambda r: len(r.fire_and_forget) == 1)
        assert server.received.fire_and_forget == [
            RequestRecord("fnf", b"kept", route_metadata("fnf"))
        ]

    against_server("tcp", scenario)


def test_without_composite_metadata_mime_every_request_is_unrouted() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        # route metadata under a non-composite mime type is just bytes: echoed, not routed
        assert await py_request_response(client, b"x", "fail") == (b"x", route_metadata("fail"))
        assert server.received.setups[0].metadata_mime == b"text/plain"

    against_server("tcp", scenario, client_metadata_encoding=b"text/plain")


# --------------------------------------------------------------------------------------
# request-stream
# --------------------------------------------------------------------------------------


@TRANSPORTS
def test_request_stream_sends_n_payloads_routed_and_unrouted(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        expected = [str(i).encode() for i in range(25)]
        assert await py_request_stream(client, b"25", "ticks") == expected
        assert await py_request_stream(client, b"25") == expected

    against_server(transport, scenario)


def test_request_stream_follows_request_n_with_a_small_limit_rate() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        # initial REQUEST_N 2, then REQUEST_N(2) after every 2 payloads
        items = await py_request_stream(client, b"9", "ticks", limit_rate=2)
        assert items == [str(i).encode() for i in range(9)]

    against_server("tcp", scenario)


def test_request_stream_of_zero_completes_without_payloads() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_stream(client, b"0", "ticks") == []
        assert await py_request_stream(client, b"0") == []

    against_server("tcp", scenario)


@TRANSPORTS
def test_cancelling_slow_after_k_items_is_recorded_by_the_server(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_stream(client, b"", "slow", take=3) == [b"0", b"1", b"2"]
        await server.received.wait_for(lambda r: r.cancelled == [("stream", "slow")])
        # the connection is still usable after the CANCEL
        assert await py_request_stream(client, b"2", "ticks") == [b"0", b"1"]

    against_server(transport, scenario)


def test_cancelling_ticks_midway_is_recorded_by_the_server() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_stream(client, b"1000", take=2, limit_rate=2) == [b"0", b"1"]
        await server.received.wait_for(lambda r: r.cancelled == [("stream", None)])

    against_server("tcp", scenario)


# --------------------------------------------------------------------------------------
# request-channel
# --------------------------------------------------------------------------------------


@TRANSPORTS
def test_channel_echoes_the_first_and_every_inbound_payload(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        inbound = [f"item-{i}".encode() for i in range(100)]  # > the 32-payload window
        assert await py_request_channel(client, b"first", inbound, "channel") == [
            b"first",
            *inbound,
        ]
        assert await py_request_channel(client, b"first", inbound) == [b"first", *inbound]

    against_server(transport, scenario)


def test_channel_with_only_the_first_payload_echoes_it_and_completes() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_channel(client, b"only", [], "channel") == [b"only"]

    against_server("tcp", scenario)


def test_channel_echo_follows_request_n_with_a_small_limit_rate() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        inbound = [str(i).encode() for i in range(10)]
        assert await py_request_channel(client, b"f", inbound, "channel", limit_rate=3) == [
            b"f",
            *inbound,
        ]

    against_server("tcp", scenario)


def test_cancelling_a_channel_after_k_echoes_is_recorded_by_the_server() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        inbound = [str(i).encode() for i in range(50)]
        echoed = await py_request_channel(client, b"f", inbound, "channel", take=2, limit_rate=2)
        assert echoed == [b"f", b"0"]
        await server.received.wait_for(lambda r: r.cancelled == [("channel", "channel")])
        assert await py_request_response(client, b"still up") == (b"still up", b"")

    against_server("tcp", scenario)


# --------------------------------------------------------------------------------------
# fire-and-forget, metadata-push, setup
# --------------------------------------------------------------------------------------


@TRANSPORTS
def test_fire_and_forget_is_recorded_routed_and_unrouted(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        await py_fire_and_forget(client, b"one", metadata=b"m")
        await py_fire_and_forget(client, b"two", "fnf")
        await server.received.wait_for(lambda r: len(r.fire_and_forget) == 2)
        assert server.received.fire_and_forget == [
            RequestRecord(None, b"one", b"m"),
            RequestRecord("fnf", b"two", route_metadata("fnf")),
        ]

    against_server(transport, scenario)


@TRANSPORTS
def test_metadata_push_is_recorded(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        await py_metadata_push(client, b"pushed")
        await server.received.wait_for(lambda r: r.metadata_pushes == [b"pushed"])

    against_server(transport, scenario)


def test_setup_fields_are_recorded() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        await py_request_response(client, b"x")  # the SETUP has been handled by now
        (setup,) = server.received.setups
        assert (setup.major_version, setup.minor_version) == (1, 0)
        assert (setup.data_mime, setup.metadata_mime) == (OCTET_STREAM, COMPOSITE_METADATA)
        assert (setup.data, setup.metadata) == (b"setup-data", b"setup-metadata")
        assert (setup.lease, setup.resume) == (False, False)
        # rsocket-py's to_milliseconds counts the sub-second part twice: 500 ms -> 1000
        assert (setup.keepalive_ms, setup.max_lifetime_ms) == (1000, 600_000)
        assert server.received.connections == 1

    against_server(
        "tcp",
        scenario,
        client_setup_data=b"setup-data",
        client_setup_metadata=b"setup-metadata",
    )


# --------------------------------------------------------------------------------------
# fragmentation
# --------------------------------------------------------------------------------------


@TRANSPORTS
def test_100_kb_payloads_are_fragmented_at_1024_both_ways(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_response(client, BIG, metadata=META) == (BIG, META)
        # 102,400 + 3,000 bytes in fragments of <= 1024 bytes: over 100 each way
        assert server.received.fragments > 100
        assert client.fragments_received > 100
        # one fragmented payload per direction and stream, its COMPLETE in its last frame
        assert await py_request_channel(client, BIG, [b"small", BIG]) == [BIG, b"small", BIG]

    against_server(transport, scenario, fragment_size=1024, client_fragment_size=1024)


def test_stock_rsocket_py_interleaves_a_fragmented_payload_with_the_next_frame() -> None:
    """Pins an rsocket-py bug (see _ContiguousFragments): BIG then b"small" queued together
    go out as BIG's first fragment, b"small", BIG's next fragments...; the receiver merges
    b"small" into BIG's first fragment and drops the rest. If this starts failing,
    rsocket-py fixed its sender: drop the contiguous_fragments workaround."""

    async def scenario(server: RsocketPyServer, client: Any) -> None:
        echoed = await py_request_channel(client, b"first", [BIG, b"small"])
        assert echoed[0] == b"first"
        assert BIG not in echoed and len(echoed) == 2 and len(echoed[1]) < 1024

    against_server("tcp", scenario, fragment_size=1024, client_fragment_size=1024)


@TRANSPORTS
def test_contiguous_fragments_keeps_consecutive_fragmented_payloads_intact(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        echoed = await py_request_channel(client, b"first", [BIG, b"small", BIG, BIG])
        assert echoed == [b"first", BIG, b"small", BIG, BIG]

    against_server(
        transport,
        scenario,
        fragment_size=1024,
        contiguous_fragments=True,
        client_fragment_size=1024,
        client_contiguous_fragments=True,
    )


def test_without_fragment_size_nothing_is_fragmented() -> None:
    big = b"x" * 100_000

    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_response(client, big) == (big, b"")
        assert (server.received.fragments, client.fragments_received) == (0, 0)

    against_server("tcp", scenario)


# --------------------------------------------------------------------------------------
# lease
# --------------------------------------------------------------------------------------


def test_lease_server_grants_requests_and_the_client_waits_when_they_run_out() -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        assert await py_request_response(client, b"1") == (b"1", b"")
        assert await py_request_response(client, b"2") == (b"2", b"")
        # the single LEASE allowed 2 requests: rsocket-py queues the third, unsent
        third = asyncio.ensure_future(py_request_response(client, b"3"))
        done, _ = await asyncio.wait([third], timeout=0.3)
        assert not done
        third.cancel()
        assert server.received.setups[0].lease is True

    against_server("tcp", scenario, lease=True, lease_requests=2, client_lease=True)


def test_lease_setup_to_a_server_without_lease_is_rejected_unsupported_setup() -> None:
    async def main() -> None:
        async with await start_rsocket_py_server() as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            # SETUP(L flag) v1.0, keepalive 60 s, lifetime 120 s, mime "a" / "b"
            body = (
                b"\x00\x00\x00\x00" + bytes([0x04, 0x40]) + b"\x00\x01\x00\x00"
                b"\x00\x00\xea\x60\x00\x01\xd4\xc0\x01a\x01b"
            )
            writer.write(len(body).to_bytes(3, "big") + body)
            header = await reader.readexactly(3)
            frame = await reader.readexactly(int.from_bytes(header, "big"))
            stream_id, type_flags = frame[:4], frame[4:6]
            error_code = int.from_bytes(frame[6:10], "big")
            assert stream_id == b"\x00\x00\x00\x00" and type_flags[0] >> 2 == 0x0B  # ERROR
            assert error_code == 0x00000002  # UNSUPPORTED_SETUP
            assert frame[10:] == b"Lease not available"
            writer.close()
            await writer.wait_closed()

    run(main())


# --------------------------------------------------------------------------------------
# connection loss
# --------------------------------------------------------------------------------------


@TRANSPORTS
def test_server_close_fails_an_open_stream_with_connection_error(transport: str) -> None:
    async def scenario(server: RsocketPyServer, client: Any) -> None:
        stream = asyncio.ensure_future(py_request_stream(client, b"", "slow"))
        await server.received.wait_for(lambda r: r.connections == 1)
        await asyncio.sleep(0.05)  # a few "slow" payloads are under way
        await server.close()
        with pytest.raises(PyPeerError) as failure:
            await stream
        assert failure.value.code == 0x101  # CONNECTION_ERROR

    against_server(transport, scenario)
