"""Raw-socket peers for the limit tests (tests/*/test_limits_*.py): the misbehaving peers
of ``wirestream.runtime.limits`` are plain TCP sockets, because that is all they are --
a peer that connects and sends nothing, or sends a frame one byte at a time.

- ``RawPeer``: a TCP client; ``closed_after()`` waits until the server drops it (EOF or
  reset) and says how long that took; ``trickle(data, every)`` sends one byte at a time;
- ``silent_server()``: accepts connections, reads whatever comes, never writes (the
  server side of the silent peer, for our clients);
- ``eventually(condition)``: poll with a deadline.

The frames the raw peers send come from the real engines (a whole SETUP, hello or
packet, then the bytes of the next one), never hand-made bytes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from wirestream.runtime.aio import parse_url

__all__ = ["RawPeer", "silent_server", "eventually", "SLACK"]

SLACK = 1.5
"""Seconds a limit may overrun on a loaded 2-core CI box (timers, scheduling)."""


class RawPeer:
    """A raw TCP connection to ``url`` (``await RawPeer.open(url)``)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, opened_at: float
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.opened_at = opened_at
        self.received = bytearray()

    @classmethod
    async def open(cls, url: str) -> RawPeer:
        endpoint = parse_url(url)
        # the clock starts before the dial: a server in the same loop accepts (and starts
        # its timeout) before open_connection returns here, so a clock started after it
        # saw a 0.3 s handshake timeout fire after 0.2998 s
        opened_at = time.monotonic()
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        return cls(reader, writer, opened_at)

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def trickle(self, data: bytes, every: float) -> None:
        """Send ``data`` one byte at a time, ``every`` seconds apart, until it is sent or
        the connection is gone."""
        for index in range(len(data)):
            if self.writer.is_closing():
                return
            try:
                self.writer.write(data[index : index + 1])
                await self.writer.drain()
            except (ConnectionError, OSError):
                return
            await asyncio.sleep(every)

    async def closed_after(self, within: float) -> float:
        """Read until the server drops the connection; seconds since it was opened.
        Fails when it is still open after ``within`` seconds."""
        async with asyncio.timeout(within):
            while True:
                try:
                    data = await self.reader.read(65536)
                except (ConnectionError, OSError):
                    break
                if not data:
                    break
                self.received += data
        return time.monotonic() - self.opened_at

    async def still_open_after(self, seconds: float) -> bool:
        """Whether the server keeps the connection for ``seconds`` (reading meanwhile)."""
        try:
            await self.closed_after(seconds)
        except TimeoutError:
            return True
        return False

    async def aclose(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A TCP server that accepts, reads and never answers; yields its ``tcp://`` URL."""
    writers: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        try:
            while await reader.read(65536):
                pass
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"tcp://127.0.0.1:{port}"
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


async def eventually(condition: Callable[[], bool], what: str, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.01)
