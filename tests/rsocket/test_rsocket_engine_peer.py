"""Our sans-I/O client engine against a real rsocket-py 0.4.20 server over TCP.

The server is rsocket-py's own ``RSocketServer`` on ``asyncio.start_server``; our side is
``RSocketConnection`` driven over a plain asyncio socket (frames with the u24 length
prefix, as the TCP transport carries them): SETUP, request-response, request-stream with
REQUEST_N, fire-and-forget, and a fragmented request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from wirestream.runtime.rsocket import (
    ClientSetup,
    Limits,
    ConnectionEstablished,
    Event,
    PayloadReceived,
    RSocketConnection,
    StreamCompleted,
)

pytestmark = pytest.mark.peer


def _server_handler() -> Any:
    from rsocket.helpers import create_future
    from rsocket.payload import Payload
    from rsocket.request_handler import BaseRequestHandler
    from rsocket.streams.stream_from_generator import StreamFromGenerator

    class Handler(BaseRequestHandler):
        fnf: list[bytes] = []

        async def request_response(self, payload: Payload) -> Any:
            return create_future(Payload(b"echo:" + bytes(payload.data), payload.metadata))

        async def request_stream(self, payload: Payload) -> Any:
            count = int(bytes(payload.data))

            def items() -> Any:
                for i in range(count):
                    yield Payload(b"item-%d" % i), i == count - 1

            return StreamFromGenerator(items)

        async def request_fire_and_forget(self, payload: Payload) -> None:
            Handler.fnf.append(bytes(payload.data))

    return Handler


async def _exchange(engine: RSocketConnection, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter, until: Any) -> list[Event]:  # fmt: skip
    """Flush our output, then read until ``until(events)`` holds."""
    events: list[Event] = []
    while True:
        out = engine.data_to_send()
        if out:
            writer.write(out)
            await writer.drain()
        if until(events):
            return events
        chunk = await asyncio.wait_for(reader.read(65536), 5)
        assert chunk, "the peer closed the connection"
        events += engine.receive_data(chunk)


async def _scenario() -> None:
    from rsocket.rsocket_server import RSocketServer
    from rsocket.transports.tcp import TransportTCP

    handler = _server_handler()
    servers: list[Any] = []
    tcp = await asyncio.start_server(
        lambda r, w: servers.append(RSocketServer(TransportTCP(r, w), handler_factory=handler)),
        "127.0.0.1",
        0,
    )
    port = tcp.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    setup = ClientSetup(keepalive_interval=30_000, max_lifetime=60_000,
                        metadata_mime_type="text/plain", data_mime_type="text/plain")  # fmt: skip
    client = RSocketConnection("client", "1.0", setup=setup, limits=Limits(mtu=200))
    try:
        client.connect()
        sid = client.request_response(b"hello", b"meta")
        events = await _exchange(client, reader, writer,
                                 lambda ev: any(isinstance(e, StreamCompleted) for e in ev))  # fmt: skip
        assert isinstance(events[0], ConnectionEstablished)
        (answer,) = [e for e in events if isinstance(e, PayloadReceived)]
        assert (answer.stream_id, answer.data, answer.metadata) == (sid, b"echo:hello", b"meta")

        # request-stream with a small window and REQUEST_N top-ups
        sid = client.request_stream(b"5", initial_n=2)
        items: list[bytes] = []
        done = False
        while not done:
            events = await _exchange(client, reader, writer, lambda ev: bool(ev))
            for event in events:
                if isinstance(event, PayloadReceived):
                    items.append(event.data)
                    if not event.complete:
                        client.request(sid, 1)
                done = done or isinstance(event, StreamCompleted)
        assert items == [b"item-%d" % i for i in range(5)]

        # a fragmented request (our MTU 200): rsocket-py reassembles it and echoes it whole
        big = bytes(range(256)) * 4
        sid = client.request_response(big, b"m" * 300)
        events = await _exchange(client, reader, writer,
                                 lambda ev: any(isinstance(e, StreamCompleted) for e in ev))  # fmt: skip
        (answer,) = [e for e in events if isinstance(e, PayloadReceived)]
        assert answer.data == b"echo:" + big and answer.metadata == b"m" * 300

        client.fire_and_forget(b"fnf!")
        await _exchange(client, reader, writer, lambda ev: True)
        for _ in range(50):
            if handler.fnf:
                break
            await asyncio.sleep(0.01)
        assert handler.fnf == [b"fnf!"]
    finally:
        writer.close()
        for server in servers:
            await server.close()
        tcp.close()
        await tcp.wait_closed()


def test_our_client_engine_against_rsocket_py_server() -> None:
    """Interop with a real peer: the engine's frames, flow control and fragmentation are
    what rsocket-py (RSocket 1.0) expects, and its answers are understood."""
    logging.disable(logging.CRITICAL)
    try:
        asyncio.run(_scenario())
    finally:
        logging.disable(logging.NOTSET)
