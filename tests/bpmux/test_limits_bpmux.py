"""BPMUX under ``wirestream.runtime.limits``: a silent peer, a trickler, too many
connections and inner streams (refused with InnerCancel / InnerError, the protocol's
own packets), against our ``serve`` and ``connect``; and the driver's clocks stopping
while it waits for a peer that does not read.  Raw TCP sockets and in-memory transports
are the misbehaving peers; their bytes come from the engine.  About 5 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from wirestream.generated.bpmux.rel import InnerError, MainCredit, Message
from wirestream.runtime.aio import HIGH_WATER, memory_pair
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.aio import BpmuxApplicationError, BpmuxPeer, Handler, ItemWriter
from wirestream.runtime.bpmux.aio import connect, serve
from wirestream.runtime.bpmux.engine import BpmuxConnection
from wirestream.runtime.errors import ConnectionLost, FrameTimeout, HandshakeTimeout, IdleTimeout
from wirestream.runtime.limits import ConnectionLimits
from tests.support.aio_support import run
from tests.support.limits_support import SLACK, RawPeer, eventually, silent_server

LOCAL = "tcp://127.0.0.1:0"
SHORT = 0.3


class Holding(Handler):
    """Streams that send one item once released; requests answered at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def on_request(self, data: bytes) -> bytes:
        return b"re:" + data

    async def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
        await self.release.wait()
        yield b"released"


def _opening() -> bytes:
    """What an initiator sends first: MainCredit (both sides begin with it)."""
    return BpmuxConnection(initiator=True).data_to_send()


def _big_message() -> bytes:
    return Message(b"m" * 4000).to_bytes()


async def _only_peer(server: object) -> BpmuxPeer:
    peers: set[BpmuxPeer] = server.peers  # type: ignore[attr-defined]
    await eventually(lambda: len(peers) == 1, "the server has the connection")
    (peer,) = peers
    return peer


def test_a_silent_peer_is_dropped_after_handshake_timeout_with_HandshakeTimeout() -> None:
    async def main() -> None:
        limits = ConnectionLimits(handshake_timeout=SHORT)
        async with serve(LOCAL, Holding(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert raw.received == MainCredit(1 << 16).to_bytes()  # its own opening
            assert isinstance(peer.error, HandshakeTimeout)

    run(main())


def test_a_first_packet_trickled_byte_by_byte_does_not_count() -> None:
    async def main() -> None:
        limits = ConnectionLimits(handshake_timeout=SHORT)
        async with serve(LOCAL, Holding(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            trickling = asyncio.create_task(raw.trickle(_big_message(), every=0.02))
            elapsed = await raw.closed_after(SHORT + SLACK)
            trickling.cancel()
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert isinstance(peer.error, HandshakeTimeout)

    run(main())


def test_a_packet_trickled_after_the_first_ends_with_FrameTimeout() -> None:
    async def main() -> None:
        limits = ConnectionLimits(frame_timeout=SHORT)
        async with serve(LOCAL, Holding(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            raw.send(_opening())
            peer = await _only_peer(server)
            await asyncio.sleep(0.05)
            started = time.monotonic()
            trickling = asyncio.create_task(raw.trickle(_big_message(), every=0.02))
            await raw.closed_after(SHORT + SLACK)
            elapsed = time.monotonic() - started
            trickling.cancel()
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert isinstance(peer.error, FrameTimeout)

    run(main())


def test_silence_after_the_first_packet_ends_with_IdleTimeout() -> None:
    async def main() -> None:
        limits = ConnectionLimits(idle_timeout=SHORT)
        async with serve(LOCAL, Holding(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            raw.send(_opening())
            peer = await _only_peer(server)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert isinstance(peer.error, IdleTimeout)

    run(main())


def test_our_client_against_a_silent_server_ends_with_HandshakeTimeout() -> None:
    async def main() -> None:
        async with silent_server() as url:
            started = time.monotonic()
            peer = await connect(url, limits=ConnectionLimits(handshake_timeout=0.2))
            with pytest.raises(HandshakeTimeout):
                await peer.request(b"anyone?")  # waits for credit that never comes
            assert 0.2 <= time.monotonic() - started < 0.2 + SLACK
            assert isinstance(peer.error, HandshakeTimeout)
            await peer.close()

    run(main())


def test_inner_streams_beyond_max_streams_are_refused_and_the_connection_lives_on() -> None:
    async def main() -> None:
        handler = Holding()
        async with serve(LOCAL, handler, limits=ConnectionLimits(max_streams=2)) as server:
            async with connect(server.url) as client:
                held = [await client.open_stream(b"hold") for _ in range(2)]
                refused = await client.open_stream(b"third")
                with pytest.raises(BpmuxApplicationError, match="too many inner streams .limit 2."):
                    async for _ in refused:
                        pass
                sink = await client.open_sink(b"a sink")  # the peer's items: InnerCancel
                async with asyncio.timeout(5):
                    await sink.wait_cancelled()
                duplex = await client.open_duplex(b"a duplex")  # both
                with pytest.raises(BpmuxApplicationError):
                    async for _ in duplex:
                        pass
                async with asyncio.timeout(5):
                    await duplex.writer.wait_cancelled()
                assert await client.request(b"ping") == b"re:ping"
                server_peer = await _only_peer(server)
                assert server_peer.refused_streams == 3
                handler.release.set()
                for stream in held:
                    assert [item async for item in stream] == [b"released"]
                # the refused and the ended ones no longer count
                await eventually(lambda: server_peer.engine._flows.peer_open == 0,
                                 "no stream of the client is open")  # fmt: skip
                again = [await client.open_stream(b"again") for _ in range(2)]
                for stream in again:
                    assert [item async for item in stream] == [b"released"]

    run(main())


def test_a_refused_stream_without_credit_gets_its_InnerError_once_credit_comes() -> None:
    """InnerError costs inner credit: a CreateStream with none is refused as soon as the
    creator grants some (and the grant is not reported: the stream never existed)."""
    creator = BpmuxConnection(initiator=True)
    refuser = BpmuxConnection(initiator=False, max_streams=1)

    def exchange() -> list[ev.Event]:
        events = refuser.receive_data(creator.data_to_send())
        answer = refuser.data_to_send()
        if answer:  # (b"" would be the end of the transport)
            creator.receive_data(answer)
        return events

    exchange()
    creator.open_stream(b"first", credit=100)
    assert [type(e) for e in exchange()] == [ev.InnerOpened]
    second = creator.open_stream(b"second", credit=0)
    assert [type(e) for e in exchange()] == [ev.InnerRefused]
    assert second in refuser.open_inner_ids()  # waiting for credit to say so
    creator.grant_inner(second, 100)
    assert refuser.receive_data(creator.data_to_send()) == []
    refusal = refuser.data_to_send()
    assert refusal == InnerError(second, b"too many inner streams (limit 1)").to_bytes()
    said = creator.receive_data(refusal)
    assert said == [ev.InnerErrored(second, b"too many inner streams (limit 1)")]
    assert second not in refuser.open_inner_ids()


def test_connections_beyond_max_connections_are_closed_at_once() -> None:
    async def main() -> None:
        async with serve(LOCAL, Holding(), limits=ConnectionLimits(max_connections=1)) as server:
            async with connect(server.url) as client:
                await _only_peer(server)
                extra = await RawPeer.open(server.url)
                assert await extra.closed_after(SLACK) < SLACK
                await extra.aclose()
                assert server.listener is not None and server.listener.refused == 1
                assert await client.request(b"ping") == b"re:ping"

    run(main())


def test_the_clocks_stop_while_the_driver_waits_for_a_peer_that_does_not_read() -> None:
    """A frame begun while our writes are backed up: we do not read the rest of it while
    we wait on drain, so that time is not the peer's; the frame clock runs again once
    the peer reads, and ends the connection when the frame still does not complete."""

    async def main() -> None:
        server_end, client_end = memory_pair("limits")
        peer = BpmuxPeer(server_end, initiator=False, credit=1 << 22,
                         limits=ConnectionLimits(frame_timeout=SHORT))  # fmt: skip
        peer.start()
        client_end.write(MainCredit(1 << 22).to_bytes())  # lots of credit for the peer
        await eventually(lambda: peer.engine.top_level_credit > HIGH_WATER, "credit arrives")
        await peer.send_message(b"x" * (2 * HIGH_WATER))  # the client does not read it
        await eventually(peer.transport.backed_up, "the peer's writes back up")
        client_end.write(_big_message()[:10])  # a frame begins; the reader then waits
        await asyncio.sleep(SHORT * 3)
        assert not peer.closed, "the frame clock ran while the peer waited on drain"
        resumed = time.monotonic()
        try:
            while await client_end.read():  # read everything: the peer's reader reads again
                pass
        except ConnectionLost:
            pass  # the peer dropped the connection (FrameTimeout)
        await peer.wait_closed()
        assert isinstance(peer.error, FrameTimeout)
        assert SHORT * 0.5 <= time.monotonic() - resumed < SHORT + SLACK
        client_end.close()

    run(main())
