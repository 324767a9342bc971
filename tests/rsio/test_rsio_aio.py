"""wirestream.runtime.rsio.aio: the asyncio peer of the Reactive Streams network protocol, peer to
peer over real TCP (and WebSocket, memory), both encodings, with leak checks
(``tests.support.aio_support.run``: no task or socket left behind).

Seeds 000/001: "The protocol is fully bidirectional; either party can act in the -->
direction"; packed and split messaging; hello/goodbye.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wirestream.generated.rsio.v0 as wire
import wirestream.runtime.rsio.engine_core
from wirestream.runtime import rsio
from wirestream.runtime.aio import Transport, listen
from wirestream.runtime.errors import (
    ConnectionLost,
    DecodeError,
    ProtocolError,
    RemoteProtocolError,
    TransportTimeout,
)
from wirestream.runtime.rsio import Encoding, Publisher, RsioConfig, StreamError, UnsupportedVersion
from wirestream.runtime.rsio.framing import encode_frame
from tests.support.aio_support import run

ENCODINGS = ["binary", "msgpack"]
TCP = "tcp://127.0.0.1:0"


async def numbers(args: str) -> AsyncIterator[bytes]:
    """``numbers?N``: the decimal strings 0 .. N-1."""
    for i in range(int(args)):
        yield str(i).encode()


class Spy:
    """An endless publisher that counts what was pulled from it and whether it was
    closed (its ``finally`` ran)."""

    def __init__(self, size: int = 0) -> None:
        self.pulled = 0
        self.closed = asyncio.Event()
        self.size = size

    async def source(self, args: str) -> AsyncIterator[bytes]:
        try:
            while True:
                self.pulled += 1
                yield self.pulled.to_bytes(self.size or 8, "big")
        finally:
            self.closed.set()

    async def ticker(self, args: str) -> AsyncIterator[bytes]:
        """Slow: one element per 5 ms (a cancel arrives while it sleeps)."""
        try:
            while True:
                await asyncio.sleep(0.005)
                self.pulled += 1
                yield b"tick"
        finally:
            self.closed.set()


@pytest.fixture
def sent_frames(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The type names of every frame any engine encodes in the test."""
    names: list[str] = []
    encode = encode_frame

    def spy(encoding: Any, frame: wire.Frame, ctx: wire.Context) -> bytes:
        names.append(type(frame).__name__)
        return encode(encoding, frame, ctx)

    monkeypatch.setattr(
        wirestream.runtime.rsio.engine_core, "encode_frame", spy
    )  # RsioEngineCore._send
    yield names


# --- streams end to end ----------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("url", [TCP, "ws://127.0.0.1:0/", "memory://rsio"])
def test_finite_publisher_delivers_every_element_in_order_then_completes(
    url: str, encoding: Encoding
) -> None:
    async def main() -> None:
        async with await rsio.serve(url, publishers={"numbers": numbers},
                                    encoding=encoding) as server:  # fmt: skip
            async with await rsio.connect(server.url, encoding=encoding) as peer:
                got = [e async for e in peer.subscribe("numbers", args="1000", limit_rate=64)]
                assert got == [str(i).encode() for i in range(1000)]
                # the connection is still usable after a stream completed
                assert [e async for e in peer.subscribe("numbers?3")] == [b"0", b"1", b"2"]

    run(main())


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_both_sides_subscribe_to_each_other_on_one_connection_at_the_same_time(
    encoding: Encoding,
) -> None:
    """The client serves ``numbers`` too; the server's on_peer subscribes to it while the
    client subscribes to the server's."""

    async def main() -> None:
        server_got: list[bytes] = []

        async def on_peer(peer: rsio.RsioPeer) -> None:
            async for element in peer.subscribe("numbers", args="500", limit_rate=16):
                server_got.append(element)

        async def letters(args: str) -> AsyncIterator[bytes]:
            for i in range(500):
                yield bytes([97 + i % 26])
                if i % 50 == 0:
                    await asyncio.sleep(0)  # interleave with the other direction

        async with await rsio.serve(TCP, publishers={"letters": letters}, on_peer=on_peer,
                                    encoding=encoding) as server:  # fmt: skip
            async with await rsio.connect(server.url, encoding=encoding,
                                          publishers={"numbers": numbers}) as peer:  # fmt: skip
                client_got = [e async for e in peer.subscribe("letters", limit_rate=16)]
                while len(server_got) < 500:
                    await asyncio.sleep(0.01)
        assert client_got == [bytes([97 + i % 26]) for i in range(500)]
        assert server_got == [str(i).encode() for i in range(500)]

    run(main())


@pytest.mark.parametrize("how", ["break", "aclose", "task_cancel"])
def test_leaving_a_stream_early_sends_cancel_and_closes_the_publishers_generator(
    how: str,
) -> None:
    async def main() -> None:
        spy = Spy()
        async with await rsio.serve(TCP, publishers={"ticks": spy.ticker}) as server:
            async with await rsio.connect(server.url) as peer:
                if how == "break":
                    async for _ in peer.subscribe("ticks", limit_rate=4):
                        break
                elif how == "aclose":
                    stream = peer.subscribe("ticks", limit_rate=4)
                    await anext(stream)
                    await stream.aclose()
                else:

                    async def consume() -> None:
                        async for _ in peer.subscribe("ticks", limit_rate=4):
                            pass

                    task = asyncio.create_task(consume())
                    while spy.pulled < 2:
                        await asyncio.sleep(0.005)
                    task.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await task
                await asyncio.wait_for(spy.closed.wait(), 2)
                (server_peer,) = server.peers
                assert not server_peer._publications
                # the connection goes on: the cancelled Id is reused for the next stream
                again = Spy()
                server_peer.publishers["again"] = Publisher(again.source)
                async for element in peer.subscribe("again", limit_rate=1):
                    assert element == (1).to_bytes(8, "big")
                    break

    run(main())


def test_an_error_raised_by_the_publisher_reaches_the_subscriber_as_stream_error() -> None:
    async def failing(args: str) -> AsyncIterator[bytes]:
        yield b"one"
        yield b"two"
        raise ValueError("disk on fire")

    async def main() -> None:
        async with await rsio.serve(TCP, publishers={"failing": failing}) as server:
            async with await rsio.connect(server.url) as peer:
                got: list[bytes] = []
                with pytest.raises(StreamError, match="ValueError: disk on fire") as caught:
                    async for element in peer.subscribe("failing"):
                        got.append(element)
                assert got == [b"one", b"two"]
                assert isinstance(caught.value, RemoteProtocolError)

    run(main())


def test_subscribing_to_an_unknown_publisher_is_a_stream_error() -> None:
    async def main() -> None:
        async with await rsio.serve(TCP) as server:
            async with await rsio.connect(server.url) as peer:
                with pytest.raises(StreamError, match="no publisher named 'nope'"):
                    async for _ in peer.subscribe("nope"):
                        pass

    run(main())


def test_a_publisher_yielding_elements_of_the_wrong_size_ends_with_onerror() -> None:
    async def wrong(args: str) -> AsyncIterator[bytes]:
        yield b"abcd"
        yield b"too long"

    async def main() -> None:
        publishers = {"fixed": Publisher(wrong, element_size=4)}
        async with await rsio.serve(TCP, publishers=publishers, packed=True) as server:
            async with await rsio.connect(server.url) as peer:
                got: list[bytes] = []
                with pytest.raises(StreamError, match="ElementSizeError"):
                    async for element in peer.subscribe("fixed"):
                        got.append(element)
                assert got == [b"abcd"]

    run(main())


# --- demand follows consumption --------------------------------------------------------


def test_slow_consumer_buffers_at_most_limit_rate_and_the_publisher_is_not_pulled_ahead() -> None:
    """limit_rate 8 (replenish 6 once 6 are consumed): at any time the publisher has been
    pulled at most as often as demand was granted, and the subscriber holds at most 8."""

    async def main() -> None:
        spy = Spy()
        async with await rsio.serve(TCP, publishers={"fast": spy.source}) as server:
            async with await rsio.connect(server.url) as peer:
                stream = peer.subscribe("fast", limit_rate=8)
                consumed, full = 0, 0
                for _ in range(40):
                    await asyncio.sleep(0.005)  # the publisher may run ahead now, if it can
                    granted = 8 + (consumed // 6) * 6
                    assert spy.pulled <= granted
                    assert stream.buffered <= 8
                    full += stream.buffered == 8
                    element = await anext(stream)
                    consumed += 1
                    assert int.from_bytes(element, "big") == consumed
                assert full > 0, "the publisher never filled the granted demand"
                await stream.aclose()
                await asyncio.wait_for(spy.closed.wait(), 2)

    run(main())


@settings(max_examples=12, deadline=None)
@given(
    limit_rate=st.integers(1, 12),
    steps=st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=6),
)
def test_property_publisher_pulls_never_exceed_consumption_plus_limit_rate(
    limit_rate: int, steps: list[tuple[int, bool]]
) -> None:
    """Whatever the consumer does (take k, maybe pause), pulled <= consumed + limit_rate
    and buffered <= limit_rate."""

    async def main() -> None:
        spy = Spy()
        async with await rsio.serve("memory://property", publishers={"p": spy.source}) as server:
            async with await rsio.connect(server.url) as peer:
                stream = peer.subscribe("p", limit_rate=limit_rate)
                consumed = 0
                for take, pause in steps:
                    for _ in range(take):
                        await anext(stream)
                        consumed += 1
                    for _ in range(20 if pause else 1):
                        await asyncio.sleep(0)
                    assert spy.pulled <= consumed + limit_rate
                    assert stream.buffered <= limit_rate
                await stream.aclose()

    run(main())


# --- packed and split messaging --------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_packed_and_unpacked_publishing_deliver_the_same_elements(
    encoding: Encoding, sent_frames: list[str]
) -> None:
    """onNextPacked for what one loop turn produced, on a fixed-size stream; the
    subscriber sees the same elements either way."""
    elements = [i.to_bytes(4, "big") for i in range(3000)]

    async def ints(args: str) -> AsyncIterator[bytes]:
        for element in elements:
            yield element

    async def receive(packed: bool) -> list[bytes]:
        publishers = {"ints": Publisher(ints, element_size=4)}
        async with await rsio.serve(TCP, publishers=publishers, packed=packed,
                                    encoding=encoding) as server:  # fmt: skip
            async with await rsio.connect(server.url, encoding=encoding) as peer:
                return [e async for e in peer.subscribe("ints", limit_rate=500)]

    assert run(receive(packed=False)) == elements
    assert "OnNextPacked" not in sent_frames
    assert sent_frames.count("OnNext") == len(elements)
    sent_frames.clear()
    assert run(receive(packed=True)) == elements
    packs = sent_frames.count("OnNextPacked")
    assert 0 < packs < len(elements) // 10


def test_a_1mb_element_is_split_into_parts_and_joined() -> None:
    """The subscriber's decoder refuses messages over 128 KiB: the element only arrives
    because it was split (64 KiB parts)."""
    big = os.urandom(1 << 20)

    async def one(args: str) -> AsyncIterator[bytes]:
        yield big
        yield b"small"

    async def main() -> None:
        async with await rsio.serve(TCP, publishers={"big": one},
                                    split_above=64 * 1024) as server:  # fmt: skip
            small_frames = RsioConfig(max_frame_size=128 * 1024)
            async with await rsio.connect(server.url, config=small_frames) as peer:
                got = [e async for e in peer.subscribe("big", limit_rate=2)]
        assert got == [big, b"small"]

    run(main())


def test_an_unsplit_1mb_element_over_the_frame_limit_fails_the_connection() -> None:
    """The converse of the split test: without splitting, the same element is a
    FrameTooLarge for the subscriber (so the split test proves the split)."""
    big = os.urandom(1 << 20)

    async def one(args: str) -> AsyncIterator[bytes]:
        yield big

    async def main() -> None:
        async with await rsio.serve(TCP, publishers={"big": one}, split_above=None) as server:
            small_frames = RsioConfig(max_frame_size=128 * 1024)
            async with await rsio.connect(server.url, config=small_frames) as peer:
                with pytest.raises(DecodeError):
                    async for _ in peer.subscribe("big"):
                        pass

    run(main())


# --- the connection ends ---------------------------------------------------------------


def test_the_peer_dropping_the_connection_mid_stream_is_connection_lost() -> None:
    async def main() -> None:
        spy = Spy()
        async with await rsio.serve(TCP, publishers={"ticks": spy.ticker}) as server:
            async with await rsio.connect(server.url) as peer:
                got = 0
                with pytest.raises(ConnectionLost):
                    async for _ in peer.subscribe("ticks", limit_rate=4):
                        got += 1
                        if got == 3:
                            (server_peer,) = server.peers
                            server_peer.abort()
                assert got >= 3
                await asyncio.wait_for(spy.closed.wait(), 2)  # its publisher stopped too
                with pytest.raises(ConnectionLost):
                    peer.subscribe("ticks")  # the connection is gone

    run(main())


async def _raw_server(script: bytes, received: list[wire.Frame],
                      url: str = TCP) -> Any:  # fmt: skip
    """A hand-written peer: reads the client's messages until its subscribe, answers
    with ``script``, then closes (EOF).  What it decoded goes to ``received``."""

    async def on_transport(transport: Transport) -> None:
        decoder = wire.StreamDecoder()
        transport.write(wire.encode(wire.ServerHello(0, [])))
        while not any(isinstance(f, wire.Subscribe) for f in received):
            data = await transport.read()
            if not data:
                return
            received.extend(decoder.feed(data))
        transport.write(script)
        await transport.drain()
        try:
            while data := await transport.read():
                received.extend(decoder.feed(data))
        except (ConnectionLost, DecodeError):
            pass

    return await listen(url, on_transport)


def test_eof_without_goodbye_mid_stream_is_connection_lost() -> None:
    async def main() -> None:
        received: list[wire.Frame] = []
        script = wire.encode(wire.Subscribed(0, 0)) + wire.encode(wire.OnNext(0, b"a"))

        async def on_transport(transport: Transport) -> None:
            transport.write(wire.encode(wire.ServerHello(0, [])))
            decoder = wire.StreamDecoder()
            while not any(isinstance(f, wire.Subscribe) for f in received):
                received.extend(decoder.feed(await transport.read()))
            transport.write(script)
            await transport.drain()
            transport.close()  # FIN, no goodbye

        async with await listen(TCP, on_transport) as listener:
            async with await rsio.connect(listener.url) as peer:
                got: list[bytes] = []
                with pytest.raises(ConnectionLost) as caught:
                    async for element in peer.subscribe("x"):
                        got.append(element)
                assert got == [b"a"]
                assert caught.value.reason == "eof"

    run(main())


def test_garbage_bytes_fail_open_streams_with_a_protocol_error_and_we_say_goodbye() -> None:
    async def main() -> None:
        received: list[wire.Frame] = []
        script = (wire.encode(wire.Subscribed(0, 0)) + wire.encode(wire.OnNext(0, b"a"))
                  + b"\x7f\xff\xff\xff\xff")  # fmt: skip
        async with await _raw_server(script, received) as listener:
            async with await rsio.connect(listener.url) as peer:
                got: list[bytes] = []
                with pytest.raises(ProtocolError) as caught:
                    async for element in peer.subscribe("x"):
                        got.append(element)
                assert got == [b"a"]
                assert isinstance(caught.value, RemoteProtocolError)
                assert not isinstance(caught.value, ConnectionLost)
                await peer.wait_closed()
        goodbyes = [f for f in received if isinstance(f, wire.Goodbye)]
        assert goodbyes and "protocol error" in goodbyes[0].reason

    run(main())


def test_the_events_before_a_violation_reach_the_peer_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine puts them on the error (``events``); the driver delivers them, and the
    peer does not dispatch them a second time."""
    delivered: list[rsio.Event] = []
    dispatch = rsio.RsioPeer._dispatch

    def spy(self: rsio.RsioPeer, events: list[rsio.Event]) -> None:
        delivered.extend(events)
        dispatch(self, events)

    monkeypatch.setattr(rsio.RsioPeer, "_dispatch", spy)

    async def main() -> None:
        received: list[wire.Frame] = []
        script = (wire.encode(wire.Subscribed(0, 0)) + wire.encode(wire.OnNext(0, b"a"))
                  + b"\x7f\xff\xff\xff\xff")  # fmt: skip
        async with await _raw_server(script, received) as listener:
            async with await rsio.connect(listener.url) as peer:
                with pytest.raises(ProtocolError):
                    async for _ in peer.subscribe("x"):
                        pass
                await peer.wait_closed()

    run(main())
    assert delivered.count(rsio.ElementReceived(0, b"a")) == 1
    closed = [e for e in delivered if isinstance(e, rsio.RsioConnectionClosed)]
    assert len(closed) == 1 and isinstance(closed[0].cause, DecodeError)


def test_a_server_hello_with_another_version_fails_connect_with_unsupported_version() -> None:
    """ "If either side receives a hello message with a version it doesn't support, it MUST
    send a goodbye message and close the connection." """

    async def main() -> None:
        received: list[wire.Frame] = []

        async def on_transport(transport: Transport) -> None:
            transport.write(wire.encode(wire.ServerHello(7, [])))
            decoder = wire.StreamDecoder()
            while data := await transport.read():
                received.extend(decoder.feed(data))

        async with await listen(TCP, on_transport) as listener:
            with pytest.raises(UnsupportedVersion, match="version 7"):
                await rsio.connect(listener.url)
            while not any(isinstance(f, wire.Goodbye) for f in received):
                await asyncio.sleep(0.005)
        assert isinstance(received[0], wire.ClientHello) and received[0].version == 0

    run(main())


def test_connect_times_out_when_the_server_never_says_hello() -> None:
    async def main() -> None:
        async def silent(transport: Transport) -> None:
            while await transport.read():
                pass

        async with await listen(TCP, silent) as listener:
            with pytest.raises(TransportTimeout):
                await rsio.connect(listener.url, timeout=0.2)

    run(main())


def test_goodbye_from_the_server_ends_the_clients_open_streams_with_connection_lost() -> None:
    """Goodbye "implicitly closes all open streams"; the client answers and closes."""

    async def main() -> None:
        spy = Spy()
        server = await rsio.serve(TCP, publishers={"ticks": spy.ticker})
        async with await rsio.connect(server.url) as peer:
            stream = peer.subscribe("ticks", limit_rate=2)
            await anext(stream)
            await server.close("maintenance")
            with pytest.raises(ConnectionLost, match="maintenance") as caught:
                while True:
                    await anext(stream)
            assert caught.value.reason == "goodbye"
            await asyncio.wait_for(peer.wait_closed(), 2)
            assert peer.closed
        assert spy.closed.is_set()

    run(main())


def test_closing_the_client_stops_the_servers_publishers() -> None:
    async def main() -> None:
        spy = Spy()
        async with await rsio.serve(TCP, publishers={"fast": spy.source}) as server:
            peer = await rsio.connect(server.url)
            stream = peer.subscribe("fast", limit_rate=16)
            await anext(stream)
            await peer.close()
            await asyncio.wait_for(spy.closed.wait(), 2)
            left = 0
            with pytest.raises(ConnectionLost) as caught:
                while True:  # what had arrived is still delivered, then the error
                    await anext(stream)
                    left += 1
            assert caught.value.reason == "closed"
            assert left <= 15
            while server.peers:
                await asyncio.sleep(0.005)

    run(main())


@pytest.mark.parametrize("packed", [False, True])
def test_the_benchmark_streams_every_element(packed: bool) -> None:
    """bench.rsio_stream (``make bench``) raises unless all ``n`` elements arrive."""
    from bench.rsio_stream import bench_rsio_stream

    assert run(bench_rsio_stream(packed, n=3000)) > 0
