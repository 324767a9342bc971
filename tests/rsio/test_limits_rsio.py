"""The Reactive Streams protocol (rsio) under ``wirestream.runtime.limits``: a silent
peer, a trickler, too many connections and subscriptions, against our ``serve`` and our
``connect``.  Raw TCP sockets are the misbehaving peers; their bytes come from the
engine.  About 4 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from wirestream.runtime import rsio
from wirestream.runtime.errors import FrameTimeout, HandshakeTimeout, IdleTimeout
from wirestream.runtime.limits import DEFAULT_MAX_STREAMS, ConnectionLimits
from wirestream.runtime.rsio.engine import RsioConfig, RsioConnection
from tests.support.aio_support import run
from tests.support.limits_support import SLACK, RawPeer, eventually, silent_server

LOCAL = "tcp://127.0.0.1:0"
SHORT = 0.3


class Gate:
    """Publishers that yield one element once released (their subscriptions stay open)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def held(self, args: str) -> AsyncIterator[bytes]:
        await self.release.wait()
        yield b"released"

    async def now(self, args: str) -> AsyncIterator[bytes]:
        yield b"now"


def _hello_and_subscribe() -> tuple[bytes, bytes]:
    """A client's hello, and a subscribe too long to complete while it is trickled."""
    engine = RsioConnection("client")
    engine.initiate_connection()
    hello = engine.data_to_send()
    engine.subscribe("now?" + "x" * 4000, initial_demand=1)
    return hello, engine.data_to_send()


async def _serving(gate: Gate, limits: ConnectionLimits) -> rsio.RsioServer:
    return await rsio.serve(LOCAL, publishers={"held": gate.held, "now": gate.now},
                            limits=limits)  # fmt: skip


async def _only_peer(server: rsio.RsioServer) -> rsio.RsioPeer:
    await eventually(lambda: len(server.peers) == 1, "the server has the connection")
    (peer,) = server.peers
    return peer


def test_a_silent_peer_is_dropped_after_handshake_timeout_with_HandshakeTimeout() -> None:
    async def main() -> None:
        async with await _serving(Gate(), ConnectionLimits(handshake_timeout=SHORT)) as server:
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            with pytest.raises(HandshakeTimeout):
                await peer.wait_ready()

    run(main())


def test_a_hello_trickled_byte_by_byte_does_not_count() -> None:
    async def main() -> None:
        hello, _ = _hello_and_subscribe()
        async with await _serving(Gate(), ConnectionLimits(handshake_timeout=SHORT)) as server:
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            trickling = asyncio.create_task(raw.trickle(hello, every=SHORT / len(hello) * 2))
            elapsed = await raw.closed_after(SHORT + SLACK)
            trickling.cancel()
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            with pytest.raises(HandshakeTimeout):
                await peer.wait_ready()

    run(main())


def test_a_subscribe_trickled_after_the_hello_ends_with_FrameTimeout() -> None:
    async def main() -> None:
        hello, subscribe = _hello_and_subscribe()
        async with await _serving(Gate(), ConnectionLimits(frame_timeout=SHORT)) as server:
            raw = await RawPeer.open(server.url)
            raw.send(hello)
            peer = await _only_peer(server)
            await peer.wait_ready()
            started = time.monotonic()
            trickling = asyncio.create_task(raw.trickle(subscribe, every=0.02))
            await raw.closed_after(SHORT + SLACK)
            elapsed = time.monotonic() - started
            trickling.cancel()
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            with pytest.raises(FrameTimeout):
                peer.subscribe("anything")

    run(main())


def test_silence_after_the_hello_ends_with_IdleTimeout() -> None:
    async def main() -> None:
        hello, _ = _hello_and_subscribe()
        async with await _serving(Gate(), ConnectionLimits(idle_timeout=SHORT)) as server:
            raw = await RawPeer.open(server.url)
            raw.send(hello)
            peer = await _only_peer(server)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert raw.received  # our hello went out first
            with pytest.raises(IdleTimeout):
                peer.subscribe("anything")

    run(main())


def test_our_client_against_a_silent_server_raises_HandshakeTimeout() -> None:
    async def main() -> None:
        async with silent_server() as url:
            for limits, timeout in ((ConnectionLimits(handshake_timeout=0.2), None),
                                    (None, 0.2)):  # fmt: skip
                started = time.monotonic()
                with pytest.raises(HandshakeTimeout):
                    await rsio.connect(url, limits=limits, timeout=timeout)
                assert 0.2 <= time.monotonic() - started < 0.2 + SLACK

    run(main())


def test_subscriptions_beyond_max_streams_are_refused_and_the_connection_lives_on() -> None:
    async def main() -> None:
        gate = Gate()
        async with await _serving(gate, ConnectionLimits(max_streams=2)) as server:
            async with await rsio.connect(server.url) as client:
                held = [client.subscribe("held") for _ in range(2)]
                with pytest.raises(rsio.StreamError, match="too many subscriptions .limit 2."):
                    async for _ in client.subscribe("now"):
                        pass
                gate.release.set()
                for stream in held:
                    assert [element async for element in stream] == [b"released"]
                assert [element async for element in client.subscribe("now")] == [b"now"]

    run(main())


def test_connections_beyond_max_connections_are_closed_at_once() -> None:
    async def main() -> None:
        async with await _serving(Gate(), ConnectionLimits(max_connections=1)) as server:
            async with await rsio.connect(server.url) as client:
                extra = await RawPeer.open(server.url)
                assert await extra.closed_after(SLACK) < SLACK
                await extra.aclose()
                assert server._listener is not None and server._listener.refused == 1
                assert [element async for element in client.subscribe("now")] == [b"now"]

    run(main())


def test_max_streams_is_the_engines_max_peer_subscriptions_with_the_same_default() -> None:
    assert RsioConfig().max_peer_subscriptions == DEFAULT_MAX_STREAMS
    assert ConnectionLimits().max_streams == DEFAULT_MAX_STREAMS
