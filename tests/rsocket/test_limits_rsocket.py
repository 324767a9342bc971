"""RSocket under ``wirestream.runtime.limits``: a silent peer, a trickler and too many
connections or streams, against our ``serve``, the ``wirestream rsocket serve`` console
script, our ``connect`` and rsocket-py on the other side.

The misbehaving peers are raw TCP sockets (an rsocket-py client that never sends SETUP
is exactly that); the frames they send come from our engine.  Limits are fractions of a
second; the module takes about 10 s.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from wirestream.runtime.errors import (
    FrameTimeout,
    HandshakeTimeout,
    IdleTimeout,
    TransportTimeout,
)
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rsocket import RSocketPayload, RSocketHandler, connect, serve
from wirestream.runtime.rsocket.aio import RSocketPeer, RSocketServer
from wirestream.runtime.rsocket.engine import RSocketConnection
from wirestream.runtime.rsocket.errors import RSocketStreamError
from wirestream.runtime.rsocket.options import Limits
from wirestream.runtime.rsocket.versions import get_version
from tests.support.aio_support import run
from tests.support.limits_support import SLACK, RawPeer, eventually, silent_server

LOCAL = "tcp://127.0.0.1:0"
ROOT = Path(__file__).parent.parent.parent
REJECTED = get_version("1.0").rejected
SHORT = 0.3


class Hanging(RSocketHandler):
    """Answers nothing until released: its streams stay open."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def request_response(self, payload: RSocketPayload) -> bytes:
        if payload.data == b"now":
            return b"answer"
        await self.release.wait()
        return b"released"

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        await self.release.wait()
        yield b"released"


def _client_bytes() -> tuple[RSocketConnection, bytes]:
    """A client engine that queued its SETUP, and those bytes (with the TCP length
    prefix)."""
    engine = RSocketConnection("client")
    engine.connect(0.0)
    return engine, engine.data_to_send()


def _setup_and_request() -> tuple[bytes, bytes]:
    """A SETUP, and a REQUEST_RESPONSE too big to complete while it is trickled."""
    engine, setup = _client_bytes()
    engine.request_response(b"now", b"m" * 4000)
    return setup, engine.data_to_send()


async def _only_peer(server: RSocketServer) -> RSocketPeer:
    await eventually(lambda: len(server.peers) == 1, "the server has the connection")
    (peer,) = server.peers
    return peer


# ================================================================ the silent peer


def test_a_silent_peer_is_dropped_after_handshake_timeout_with_HandshakeTimeout() -> None:
    async def main() -> None:
        limits = Limits(handshake_timeout=SHORT)
        async with await serve(LOCAL, RSocketHandler(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert raw.received == b""  # no SETUP, nothing to answer: dropped, no ERROR
            assert isinstance(peer.driver.error, HandshakeTimeout)
            assert peer.driver.error.limit == SHORT
            await eventually(lambda: not server.peers, "the server forgot the connection")

    run(main())


def test_a_setup_trickled_byte_by_byte_does_not_count_as_the_first_frame() -> None:
    async def main() -> None:
        _, setup = _client_bytes()
        limits = Limits(handshake_timeout=SHORT)
        async with await serve(LOCAL, RSocketHandler(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            trickling = asyncio.create_task(raw.trickle(setup, every=0.02))
            elapsed = await raw.closed_after(SHORT + SLACK)
            trickling.cancel()
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert isinstance(peer.driver.error, HandshakeTimeout)

    run(main())


def test_a_whole_setup_in_time_keeps_the_connection() -> None:
    async def main() -> None:
        setup, request = _setup_and_request()
        limits = Limits(handshake_timeout=SHORT)
        async with await serve(LOCAL, Hanging(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            raw.send(setup + request)
            assert await raw.still_open_after(SHORT * 2)
            assert raw.received  # the PAYLOAD answering the request
            await raw.aclose()

    run(main())


# ================================================================ idle and trickling


def test_a_frame_trickled_after_setup_is_dropped_after_frame_timeout_with_FrameTimeout() -> None:
    async def main() -> None:
        setup, request = _setup_and_request()
        limits = Limits(frame_timeout=SHORT)
        async with await serve(LOCAL, Hanging(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            raw.send(setup)
            peer = await _only_peer(server)
            await asyncio.sleep(0.05)
            started = time.monotonic()
            # one byte every 20 ms: bytes keep arriving, no frame ever completes in time
            trickling = asyncio.create_task(raw.trickle(request, every=0.02))
            await raw.closed_after(SHORT + SLACK)
            elapsed = time.monotonic() - started
            trickling.cancel()
            await raw.aclose()
            assert SHORT <= elapsed < SHORT + SLACK
            assert isinstance(peer.driver.error, FrameTimeout)

    run(main())


def test_whole_frames_keep_an_idle_limited_connection_silence_ends_it_with_IdleTimeout() -> None:
    async def main() -> None:
        engine, setup = _client_bytes()
        limits = Limits(idle_timeout=SHORT)
        async with await serve(LOCAL, RSocketHandler(), limits=limits) as server:
            raw = await RawPeer.open(server.url)
            raw.send(setup)
            peer = await _only_peer(server)
            for _ in range(8):  # 0.8 s of KEEPALIVEs every 0.1 s: alive
                await asyncio.sleep(0.1)
                engine.send_keepalive()
                raw.send(engine.data_to_send())
            assert not peer.closed
            started = time.monotonic()
            await raw.closed_after(SHORT + SLACK)
            assert SHORT * 0.9 <= time.monotonic() - started < SHORT + SLACK
            await raw.aclose()
            assert isinstance(peer.driver.error, IdleTimeout)
            assert not isinstance(peer.driver.error, FrameTimeout)

    run(main())


# ================================================================ our client


def test_our_client_against_a_silent_server_ends_with_HandshakeTimeout() -> None:
    """The server owes nothing before the answer to the first KEEPALIVE: the client
    gives it one keepalive interval plus handshake_timeout."""

    async def main() -> None:
        async with silent_server() as url:
            started = time.monotonic()
            peer = await connect(url, keepalive_interval=100, limits=Limits(handshake_timeout=0.2))
            request = asyncio.create_task(peer.request_response(b"anyone?"))
            with pytest.raises(HandshakeTimeout):
                await request
            elapsed = time.monotonic() - started
            assert 0.3 <= elapsed < 0.3 + SLACK
            await peer.close()

    run(main())


def test_our_client_against_rsocket_py_gets_its_first_frame_in_time() -> None:
    """rsocket-py as the server: it answers our first KEEPALIVE, so the first-frame
    wait ends well and the connection lives on past the deadline."""
    from tests.support import rsocket_py_peers as peers

    async def main() -> None:
        async with await peers.start_rsocket_py_server() as py_server:
            peer = await connect(py_server.url, keepalive_interval=100,
                                 limits=Limits(handshake_timeout=0.2))  # fmt: skip
            await asyncio.sleep(0.6)  # twice the first-frame deadline
            assert not peer.closed
            assert peer.driver.error is None
            answer = await peer.request_response(b"still here")
            assert answer.data == b"still here"
            await peer.close()

    run(main())


def test_rsocket_py_client_sending_keepalives_outlives_the_handshake_and_idle_limits() -> None:
    from tests.support import rsocket_py_peers as peers

    async def main() -> None:
        limits = Limits(handshake_timeout=0.2, idle_timeout=0.8)
        async with await serve(LOCAL, Hanging(), limits=limits) as server:
            keepalive = timedelta(milliseconds=200)  # rsocket-py's KEEPALIVE: whole frames
            async with peers.rsocket_py_client(server.url, keep_alive=keepalive) as client:
                await asyncio.sleep(1.2)  # past both limits
                assert (await peers.py_request_response(client, b"now"))[0] == b"answer"

    run(main())


# ================================================================ caps


def test_connections_beyond_max_connections_are_closed_at_once_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        limits = Limits(max_connections=2)
        async with await serve(LOCAL, Hanging(), limits=limits) as server:
            first, second = await connect(server.url), await connect(server.url)
            await eventually(lambda: len(server.peers) == 2, "two connections")
            extra = await RawPeer.open(server.url)
            assert await extra.closed_after(SLACK) < SLACK
            await extra.aclose()
            assert server.listener is not None and server.listener.refused == 1
            assert (await first.request_response(b"now")).data == b"answer"
            await first.close()
            await eventually(lambda: len(server.peers) == 1, "one connection left")
            third = await connect(server.url)  # a slot is free again
            assert (await third.request_response(b"now")).data == b"answer"
            for peer in (second, third):
                await peer.close()

    with caplog.at_level("WARNING", logger="wirestream.runtime.aio"):
        run(main())
    assert any("max_connections=2" in record.getMessage() for record in caplog.records)


def test_a_request_beyond_max_streams_gets_ERROR_REJECTED_and_the_connection_lives_on() -> None:
    async def main() -> None:
        handler = Hanging()
        limits = Limits(max_streams=2)
        async with await serve(LOCAL, handler, limits=limits) as server:
            async with connect(server.url) as client:
                held = [asyncio.create_task(client.request_response(b"hold")) for _ in range(2)]
                await asyncio.sleep(0.05)
                with pytest.raises(RSocketStreamError) as refused:
                    await client.request_response(b"now")
                assert refused.value.error_code == REJECTED
                assert "too many streams (limit 2)" in str(refused.value)
                with pytest.raises(RSocketStreamError) as refused_stream:
                    async for _ in client.request_stream(b"more"):
                        pass
                assert refused_stream.value.error_code == REJECTED
                await client.fire_and_forget(b"fnf is no stream")  # not refused, not counted
                handler.release.set()
                assert [p.data for p in await asyncio.gather(*held)] == [b"released"] * 2
                assert (await client.request_response(b"now")).data == b"answer"
                assert not client.closed

    run(main())


def test_rsocket_py_requests_beyond_max_streams_get_ERROR_REJECTED() -> None:
    from tests.support import rsocket_py_peers as peers

    async def main() -> None:
        handler = Hanging()
        async with await serve(LOCAL, handler, limits=Limits(max_streams=1)) as server:
            async with peers.rsocket_py_client(server.url) as client:
                held = asyncio.create_task(peers.py_request_response(client, b"hold"))
                await asyncio.sleep(0.05)
                with pytest.raises(peers.PyPeerError) as refused:
                    await peers.py_request_response(client, b"now")
                assert refused.value.code == REJECTED
                handler.release.set()
                assert (await held)[0] == b"released"
                assert (await peers.py_request_response(client, b"now"))[0] == b"answer"

    run(main())


# ================================================================ defaults


def test_serve_applies_the_default_limits() -> None:
    async def main() -> None:
        async with await serve(LOCAL, RSocketHandler()) as server:
            assert server.listener is not None
            assert server.listener.max_connections == ConnectionLimits().max_connections
            raw = await RawPeer.open(server.url)
            peer = await _only_peer(server)
            assert peer.driver._handshake_timeout == ConnectionLimits().handshake_timeout
            assert peer.engine.limits.max_streams == ConnectionLimits().max_streams
            await raw.aclose()

    run(main())


# ================================================================ the console script


def _wirestream() -> list[str]:
    """The console script's command, run from this checkout (``python -m wirestream``
    from the repository root: the code under test, not an installed copy)."""
    return [sys.executable, "-m", "wirestream"]


def _listening(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 15.0)
    assert ready, "the server printed nothing"
    line = process.stdout.readline()
    assert line.startswith("listening on tcp://"), line
    return line.split()[-1]


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    return err


def test_wirestream_rsocket_serve_drops_a_silent_peer_and_a_trickler() -> None:
    """The issue's case: a TCP connection that never sends SETUP, against the console
    script; then one that trickles a frame after SETUP, and one that falls silent."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    server = subprocess.Popen([*_wirestream(), "rsocket", "serve", "--port", "0",
                               "--handshake-timeout", "0.3", "--frame-timeout", "0.3",
                               "--idle-timeout", "0.6"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT)  # fmt: skip
    try:
        url = _listening(server)

        async def main() -> tuple[float, float, float]:
            silent = await RawPeer.open(url)
            setup, request = _setup_and_request()
            trickler = await RawPeer.open(url)
            trickler.send(setup)
            await asyncio.sleep(0.05)
            trickling = asyncio.create_task(trickler.trickle(request, every=0.02))
            quiet = await RawPeer.open(url)
            quiet.send(setup)
            times = await asyncio.gather(silent.closed_after(0.3 + SLACK),
                                         trickler.closed_after(0.35 + SLACK),
                                         quiet.closed_after(0.6 + SLACK))  # fmt: skip
            trickling.cancel()
            for raw in (silent, trickler, quiet):
                await raw.aclose()
            return times

        silent_after, trickler_after, quiet_after = run(main())
        assert 0.3 <= silent_after < 0.3 + SLACK
        assert 0.3 <= trickler_after < 0.35 + SLACK
        assert 0.6 <= quiet_after < 0.6 + SLACK
    finally:
        err = _stop(server)
    assert err.count("HandshakeTimeout") == 1, err
    assert err.count("FrameTimeout") == 1, err
    assert err.count("IdleTimeout") == 1, err


def test_wirestream_rsocket_serve_refuses_connections_beyond_max_connections() -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    server = subprocess.Popen([*_wirestream(), "rsocket", "serve", "--port", "0",
                               "--max-connections", "1"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT)  # fmt: skip
    try:
        url = _listening(server)

        async def main() -> None:
            async with connect(url) as client:
                answer = await client.request_response(b"echo")
                assert answer.data == b"echo"
                extra = await RawPeer.open(url)
                assert await extra.closed_after(SLACK) < SLACK
                await extra.aclose()
                assert (await client.request_response(b"again")).data == b"again"

        run(main())
    finally:
        err = _stop(server)
    assert "refused 1 connection(s)" in err and "max_connections=1" in err, err


def test_transport_timeouts_are_one_tree() -> None:
    for error in (HandshakeTimeout, IdleTimeout, FrameTimeout):
        assert issubclass(error, TransportTimeout)
    assert issubclass(FrameTimeout, IdleTimeout)
