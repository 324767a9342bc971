"""The RabbitMQ stream client under ``wirestream.runtime.limits``: the broker's handshake
(PeerProperties, SASL, Tune, Open) must complete within ``handshake_timeout``, and a
broker whose frames trickle byte by byte is dropped (``FrameTimeout``).

The broker is the real RabbitMQ on 127.0.0.1:5552 behind ``SlowLink``, a proxy that can
pass the broker's bytes on one at a time; the silent broker is a socket that never
answers.  Without a broker the module SKIPS (FAILS under CI=true).  About 3 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from wirestream.runtime.errors import FrameTimeout, HandshakeTimeout
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rabbitmq_stream.aio import connect
from tests.support.aio_support import run
from tests.support.limits_support import SLACK, silent_server
from tests.support.rabbitmq_stream_client_support import HOST, PORT, error_of, uri

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")


class SlowLink:
    """A TCP proxy to the broker; with ``trickle`` on, the broker's bytes reach the client
    one at a time, ``every`` seconds apart."""

    def __init__(self, every: float = 0.02) -> None:
        self.every = every
        self.trickle = False
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    slow: bool) -> None:  # fmt: skip
        try:
            while data := await reader.read(65536):
                if slow and self.trickle:
                    for index in range(len(data)):
                        writer.write(data[index : index + 1])
                        await writer.drain()
                        await asyncio.sleep(self.every)
                else:
                    writer.write(data)
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(HOST, PORT)
        self._writers += [writer, up_writer]
        for source, sink, slow in ((reader, up_writer, False), (up_reader, writer, True)):
            task = asyncio.create_task(self._pipe(source, sink, slow))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[SlowLink]:
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            server.close()
            for writer in self._writers:
                writer.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()


def test_a_silent_broker_ends_connect_with_HandshakeTimeout() -> None:
    async def main() -> None:
        async with silent_server() as url:
            port = int(url.rsplit(":", 1)[1])
            started = time.monotonic()
            error = await error_of(connect(uri(port), reconnect=False,
                                           limits=ConnectionLimits(handshake_timeout=0.2)))  # fmt: skip
            assert isinstance(error, HandshakeTimeout), error
            assert error.limit == 0.2
            assert 0.2 <= time.monotonic() - started < 0.2 + SLACK

    run(main())


def test_a_broker_whose_handshake_trickles_ends_connect_with_HandshakeTimeout() -> None:
    async def main() -> None:
        link = SlowLink()
        link.trickle = True
        async with link.running():
            started = time.monotonic()
            error = await error_of(connect(uri(link.port), reconnect=False,
                                           limits=ConnectionLimits(handshake_timeout=0.3)))  # fmt: skip
            assert isinstance(error, HandshakeTimeout), error
            assert 0.3 <= time.monotonic() - started < 0.3 + SLACK

    run(main())


def test_a_frame_trickled_after_the_handshake_ends_the_connection_with_FrameTimeout() -> None:
    async def main() -> None:
        link = SlowLink()
        async with link.running():
            limits = ConnectionLimits(frame_timeout=0.3)
            client = await connect(uri(link.port), reconnect=False, limits=limits)
            assert client.is_open
            link.trickle = True
            started = time.monotonic()
            error = await error_of(client.metadata("some-stream"))  # its answer trickles
            assert isinstance(error, FrameTimeout), error
            assert 0.3 <= time.monotonic() - started < 0.3 + SLACK
            assert isinstance(client.error, FrameTimeout)
            await client.close()

    run(main())


def test_the_real_broker_opens_within_the_limits() -> None:
    async def main() -> None:
        limits = ConnectionLimits(handshake_timeout=5.0, frame_timeout=5.0, idle_timeout=30.0)
        async with await connect(uri(), limits=limits) as client:
            assert client.is_open
            assert client.limits is limits
            await client.metadata("some-stream")

    run(main())


def test_without_limits_the_handshake_is_bounded_by_timeout() -> None:
    async def main() -> None:
        async with await connect(uri(), timeout=7.0) as client:
            assert client.limits.handshake_timeout == 7.0
            assert client.limits.frame_timeout == ConnectionLimits().frame_timeout

    run(main())
