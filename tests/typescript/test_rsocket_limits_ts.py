"""The TypeScript RSocket peer under the connection limits (twins of
tests/rsocket/test_limits_rsocket.py, same names where the rule is the same): a silent
peer, a trickler and silence, against the TypeScript server (``server.ts`` with
WIRESTREAM_SERVE_LIMITS; it prints how each connection ended), and the TypeScript client's
idle limit against the Python server.

The misbehaving peers are raw TCP sockets (``tests.support.limits_support.RawPeer``), as
in the Python module; the frames they send come from the Python engine.
"""

from __future__ import annotations

import asyncio
import json
import os
import re

from tests.support.aio_support import run
from tests.support.limits_support import SLACK, RawPeer, silent_server
from tests.support.typescript_support import ROOT
from tests.typescript.test_rsocket_interop import SERVER, STEP, TypeScriptServer, stop, ts_client
from wirestream.runtime.rsocket import RSocketConnection, serve
from wirestream.apps.demo_responder import EchoResponder

SHORT = 0.3  # seconds: every limit of this module


async def ts_server(node: str, **limits: int) -> TypeScriptServer:
    process = await asyncio.create_subprocess_exec(
        node, str(SERVER), "tcp://127.0.0.1:0", cwd=ROOT,
        env={**os.environ, "WIRESTREAM_SERVE_LIMITS": json.dumps(limits)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    first = await asyncio.wait_for(process.stdout.readline(), STEP)
    found = re.match(r"listening on (\S+)", first.decode())
    assert found is not None, first
    return TypeScriptServer(process, found.group(1))


def _setup_and_request() -> tuple[bytes, bytes]:
    """A SETUP, and a REQUEST_RESPONSE too big to complete while it is trickled."""
    engine = RSocketConnection("client")
    engine.connect(0.0)
    setup = engine.data_to_send()
    engine.request_response(b"now", b"m" * 4000)
    return setup, engine.data_to_send()


def test_a_silent_peer_is_dropped_after_handshake_timeout_with_HandshakeTimeout(
    node: str,
) -> None:
    async def main() -> list[str]:
        server = await ts_server(node, handshakeTimeout=int(SHORT * 1000))
        try:
            raw = await RawPeer.open(server.url)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert SHORT * 0.9 <= elapsed < SHORT + SLACK
            assert raw.received == b""  # no SETUP, nothing to answer: dropped, no ERROR
            return await server.lines(1)
        finally:
            await stop(server)

    assert run(main()) == ["closed: HandshakeTimeout"]


def test_a_whole_setup_in_time_keeps_the_connection(node: str) -> None:
    async def main() -> None:
        setup, request = _setup_and_request()
        server = await ts_server(node, handshakeTimeout=int(SHORT * 1000))
        try:
            raw = await RawPeer.open(server.url)
            raw.send(setup + request)
            assert await raw.still_open_after(SHORT * 2)
            assert raw.received  # the PAYLOAD echoing the request
            await raw.aclose()
        finally:
            await stop(server)

    run(main())


def test_a_frame_trickled_after_setup_is_dropped_after_frame_timeout_with_FrameTimeout(
    node: str,
) -> None:
    async def main() -> list[str]:
        setup, request = _setup_and_request()
        server = await ts_server(node, frameTimeout=int(SHORT * 1000))
        try:
            raw = await RawPeer.open(server.url)
            raw.send(setup)
            await asyncio.sleep(0.05)
            # one byte every 20 ms: bytes keep arriving, no frame ever completes in time
            trickling = asyncio.create_task(raw.trickle(request, every=0.02))
            elapsed = await raw.closed_after(SHORT + SLACK)
            trickling.cancel()
            await raw.aclose()
            assert SHORT * 0.9 <= elapsed < SHORT + SLACK
            return await server.lines(1)
        finally:
            await stop(server)

    assert run(main()) == ["closed: FrameTimeout"]


def test_whole_frames_keep_an_idle_limited_connection_silence_ends_it_with_IdleTimeout(
    node: str,
) -> None:
    async def main() -> list[str]:
        engine = RSocketConnection("client")
        engine.connect(0.0)
        setup = engine.data_to_send()
        server = await ts_server(node, idleTimeout=int(SHORT * 1000))
        try:
            raw = await RawPeer.open(server.url)
            raw.send(setup)
            for _ in range(6):  # a KEEPALIVE every SHORT/3: twice the limit goes by
                await asyncio.sleep(SHORT / 3)
                engine.send_keepalive(b"ping")
                raw.send(engine.data_to_send())
            assert await raw.still_open_after(0)
            elapsed = await raw.closed_after(SHORT + SLACK)
            await raw.aclose()
            assert elapsed < SHORT + SLACK
            return await server.lines(1)
        finally:
            await stop(server)

    assert run(main()) == ["closed: IdleTimeout"]


def test_ts_client_idle_timeout_against_a_quiet_python_server(node: str) -> None:
    """No whole frame from the (real, but unasked) Python server for 0.5 s: the TypeScript
    client ends the connection with IdleTimeout (limit in seconds, as Python's)."""

    async def main() -> object:
        server = await serve("tcp://127.0.0.1:0", EchoResponder())
        try:
            return await ts_client(node, server.url, "idle_timeout")
        finally:
            server.close()
            await server.wait_closed()

    result = run(main())
    assert isinstance(result, dict)
    assert (result["error"], result["limit"]) == ("IdleTimeout", 0.5)
    assert 450 <= result["afterMs"] < 5_000


def test_ts_client_against_a_silent_server_ends_with_HandshakeTimeout(node: str) -> None:
    """The server owes nothing before the answer to the first KEEPALIVE: the TypeScript
    client gives it one keepalive interval (100 ms) plus handshakeTimeout (200 ms), then
    ends the connection with HandshakeTimeout (limit in seconds, as Python's)."""

    async def main() -> object:
        async with silent_server() as url:
            return await ts_client(node, url, "handshake_timeout")

    result = run(main())
    assert isinstance(result, dict)
    assert (result["error"], result["limit"]) == ("HandshakeTimeout", 0.3)
    assert 270 <= result["afterMs"] < 300 + SLACK * 1000


def test_ts_client_against_python_gets_its_first_frame_in_time(node: str) -> None:
    """The Python server answers the first KEEPALIVE: the first-frame wait ends well and the
    connection lives on past the deadline (0.6 s, twice it)."""

    async def main() -> object:
        server = await serve("tcp://127.0.0.1:0", EchoResponder())
        try:
            return await ts_client(node, server.url, "first_frame_in_time")
        finally:
            server.close()
            await server.wait_closed()

    assert run(main()) == {"answer": "still here", "error": None}


def test_connections_beyond_max_connections_are_closed_at_once_and_counted(node: str) -> None:
    """ConnectionLimits.max_connections (serve's maxConnections): with one allowed, a second
    connection is closed at once, counted (``Server.refused``), and the first lives on."""

    async def main() -> str:
        engine = RSocketConnection("client")
        engine.connect(0.0)
        server = await ts_server(node, maxConnections=1)
        try:
            first = await RawPeer.open(server.url)
            first.send(engine.data_to_send())
            await asyncio.sleep(0.2)  # accepted and counted before the second dials
            second = await RawPeer.open(server.url)
            elapsed = await second.closed_after(SLACK)
            await second.aclose()
            assert elapsed < SLACK
            assert await first.still_open_after(0.1)
            await first.aclose()
            assert server.process.stdin is not None
            server.process.stdin.close()
            out, _ = await asyncio.wait_for(server.process.communicate(), STEP)
            return out.decode()
        finally:
            await stop(server)

    assert "refused: 1\n" in run(main())
