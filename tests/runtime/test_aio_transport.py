"""wirestream.runtime.aio transports: every scheme moves bytes both ways, ends with EOF or a typed
error, applies backpressure, and leaks no task or socket (``tests.support.aio_support.run``)."""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
from pathlib import Path

import pytest

from wirestream.runtime.aio import (
    HIGH_WATER,
    Transport,
    listen,
    memory_pair,
    open_transport,
    parse_url,
)
from wirestream.runtime.errors import ConnectionLost, ProtocolError, TransportTimeout
from tests.support.aio_support import run
from tests.support.tls_support import tls_contexts


async def _echo(transport: Transport) -> None:
    while data := await transport.read():
        transport.write(data)
        await transport.drain()
    transport.write_eof()


async def _round_trip(url: str, server_ssl: ssl.SSLContext | None = None,
                      client_ssl: ssl.SSLContext | None = None) -> None:  # fmt: skip
    async with await listen(url, _echo, ssl=server_ssl) as listener:
        client = await open_transport(listener.url, ssl=client_ssl)
        payload = os.urandom(200_000)
        client.write(payload)
        await client.drain()
        got = bytearray()
        while len(got) < len(payload):
            chunk = await client.read()
            assert chunk, "EOF before the echo came back"
            got += chunk
        assert bytes(got) == payload
        client.close()
        await client.wait_closed()


@pytest.mark.parametrize("scheme", ["tcp", "ws", "memory"])
def test_every_scheme_echoes_bytes_both_ways(scheme: str) -> None:
    url = {"tcp": "tcp://127.0.0.1:0", "ws": "ws://127.0.0.1:0/", "memory": "memory://echo"}
    run(_round_trip(url[scheme]))


def test_unix_socket_echoes_bytes() -> None:
    with tempfile.TemporaryDirectory() as folder:
        run(_round_trip(f"unix://{folder}/echo.sock"))


def test_tls_echoes_bytes_with_a_verified_certificate(tmp_path: Path) -> None:
    server, client = tls_contexts(tmp_path)
    run(_round_trip("tls://127.0.0.1:0", server_ssl=server, client_ssl=client))


def test_wss_echoes_bytes(tmp_path: Path) -> None:
    server, client = tls_contexts(tmp_path)
    run(_round_trip("wss://127.0.0.1:0/", server_ssl=server, client_ssl=client))


def test_websocket_message_prefix_turns_each_frame_into_one_message() -> None:
    """RSocket over WebSocket: "the Frame Length field MUST NOT be included"; our side
    still speaks the 3-byte length prefix."""
    received: list[bytes] = []

    async def raw_server(websocket: object) -> None:
        async for message in websocket:  # type: ignore[attr-defined]
            received.append(message)
            await websocket.send(b"pong")  # type: ignore[attr-defined]

    async def main() -> None:
        from websockets.asyncio.server import serve

        async with serve(raw_server, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            client = await open_transport(f"ws://127.0.0.1:{port}/", message_prefix=3)
            two_frames = b"\x00\x00\x02ab" + b"\x00\x00\x03cde"
            client.write(two_frames[:4])  # a partial frame is held back ...
            client.write(two_frames[4:])  # ... until it is whole
            await client.drain()
            assert await client.read() == b"\x00\x00\x04pong"
            assert await client.read() == b"\x00\x00\x04pong"
            client.close()
            await client.wait_closed()
        assert received == [b"ab", b"cde"]

    run(main())


def test_eof_reads_empty_and_reset_raises_connection_lost() -> None:
    async def main() -> None:
        a, b = memory_pair()
        a.write_eof()
        assert await b.read() == b""
        c, d = memory_pair()
        c.abort()
        with pytest.raises(ConnectionLost) as caught:
            await d.read()
        assert caught.value.reason == "reset"
        assert isinstance(caught.value, ProtocolError)
        with pytest.raises(ConnectionLost):
            d.write(b"x")

    run(main())


def test_tcp_reset_by_peer_is_connection_lost() -> None:
    async def abort_at_once(transport: Transport) -> None:
        await transport.read()
        transport.abort()

    async def main() -> None:
        async with await listen("tcp://127.0.0.1:0", abort_at_once) as listener:
            client = await open_transport(listener.url)
            client.write(b"hello")
            with pytest.raises(ConnectionLost):
                while await client.read():
                    pass
                raise ConnectionLost("eof counts too: the peer is gone")
            client.abort()
            await client.wait_closed()

    run(main())


def test_nobody_listening_is_connection_lost_refused() -> None:
    async def main() -> None:
        async with await listen("tcp://127.0.0.1:0", _echo) as listener:
            url = listener.url
        with pytest.raises(ConnectionLost) as caught:
            await open_transport(url)
        assert caught.value.reason == "refused"

    run(main())


def test_connect_timeout_is_transport_timeout() -> None:
    """A server that accepts TCP but never answers the WebSocket handshake."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(TransportTimeout):
            await open_transport(f"ws://127.0.0.1:{port}/", timeout=0.2)
        server.close()
        await server.wait_closed()

    run(main())


def test_drain_blocks_while_the_peer_does_not_read() -> None:
    """Backpressure: a writer whose peer stops reading waits in drain() once more than
    the high-water mark is queued."""

    async def main() -> None:
        a, b = memory_pair()
        a.write(b"x" * (HIGH_WATER + 1))
        drain = asyncio.ensure_future(a.drain())
        await asyncio.sleep(0.01)
        assert not drain.done()
        while a.write_buffer_size():
            await b.read()
        await asyncio.wait_for(drain, 1)
        a.close()
        b.close()

    run(main())


def test_bad_urls_name_the_problem() -> None:
    for url, words in [
        ("udp://h:1", "unknown transport scheme"),
        ("tcp://hostonly", "needs host:port"),
        ("unix://", "needs a path"),
        ("memory://", "needs a name"),
    ]:
        with pytest.raises(ValueError, match=words):
            parse_url(url)
    assert parse_url("ws://127.0.0.1:80/rs").url == "ws://127.0.0.1:80/rs"


def test_listener_close_aborts_open_connections() -> None:
    async def main() -> None:
        listener = await listen("tcp://127.0.0.1:0", _echo)
        client = await open_transport(listener.url)
        client.write(b"a")
        assert await client.read() == b"a"
        assert listener.connections == 1
        listener.close()
        await listener.wait_closed()
        try:
            assert await client.read() == b""
        except ConnectionLost:
            pass
        client.close()
        await client.wait_closed()

    run(main())
