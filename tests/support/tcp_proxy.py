"""A TCP proxy on loopback that the test can cut, freeze and throttle, as a network would.

``TcpProxy(port)`` forwards every connection accepted on ``proxy.port`` (127.0.0.1, port
0 picks one) to 127.0.0.1:``port``.  ``proxy.cut()`` aborts every open connection on both
sides at once (the sockets are closed with RST, whatever is in flight is lost, mid-frame
as often as not); the listener stays, so a client that dials again gets a new connection
to the same server.  ``downstream`` / ``upstream`` count the bytes forwarded towards the
client / the server, ``accepted`` the connections, ``cuts`` the connections cut.

One connection at a time (the chaos soak, tests/support/chaos): ``links`` are the open
ones; ``cut_link`` resets one, ``stall_link`` holds what it carries for some seconds (a
congested or rerouting network: nothing is lost, TCP backpressure builds up behind
it), ``throttle_link`` slows it to some bytes per second for some seconds.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

__all__ = ["TcpProxy"]

CHUNK = 64 * 1024


class _Link:
    """One proxied connection: the accepted socket and the one dialled to the target."""

    def __init__(self, client: asyncio.StreamWriter, server: asyncio.StreamWriter) -> None:
        self.client = client
        self.server = server
        self.ended = 0  # directions that ended in order
        self.aborted = False
        self.frozen = False
        self.flowing = asyncio.Event()  # clear while stalled: the pumps wait, holding the bytes
        self.flowing.set()
        self.rate: float | None = None  # bytes per second per direction, while throttled

    def abort(self) -> None:
        self.aborted = True
        self.flowing.set()  # a stalled pump wakes up to find its socket gone
        for writer in (self.client, self.server):
            writer.transport.abort()


def _chunk(link: _Link) -> int:
    """What one read may take: a throttled link reads a tenth of a second's worth, so its
    bytes trickle out evenly instead of in one burst and a long pause."""
    if link.rate is None:
        return CHUNK
    return max(1, min(CHUNK, int(link.rate / 10)))


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.accepted = 0
        self.cuts = 0
        self.downstream = 0
        self.upstream = 0
        self.refusing = False
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self._moved = asyncio.Event()

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def cut(self) -> int:
        """Abort every open connection; how many there were."""
        links, self._links = self._links, set()
        for link in links:
            link.abort()
        self.cuts += len(links)
        return len(links)

    def freeze(self) -> int:
        """Drop everything sent on the open connections from now on; how many there are."""
        for link in self._links:
            link.frozen = True
        return len(self._links)

    @property
    def links(self) -> list[_Link]:
        """The open connections (a copy: faults may end them)."""
        return [link for link in self._links if not link.aborted]

    def cut_link(self, link: _Link) -> None:
        """Reset one connection on both sides."""
        self._links.discard(link)
        link.abort()
        self.cuts += 1

    def stall_link(self, link: _Link, seconds: float) -> None:
        """Forward nothing on ``link`` for ``seconds`` (both directions), then go on with
        everything that waited: a stall loses no byte."""
        link.flowing.clear()
        asyncio.get_running_loop().call_later(seconds, link.flowing.set)

    def throttle_link(self, link: _Link, bytes_per_second: float, seconds: float) -> None:
        """Forward at most ``bytes_per_second`` each way on ``link`` for ``seconds``."""
        link.rate = bytes_per_second

        def unthrottle() -> None:
            if link.rate == bytes_per_second:  # not throttled again meanwhile
                link.rate = None

        asyncio.get_running_loop().call_later(seconds, unthrottle)

    async def downstream_reaches(self, total: int, timeout: float = 30.0) -> None:
        """Wait until ``downstream`` is at least ``total`` bytes."""
        async with asyncio.timeout(timeout):
            while self.downstream < total:
                self._moved.clear()
                await self._moved.wait()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.refusing:
            writer.transport.abort()
            return
        try:
            target_reader, target_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(writer, target_writer)
        self._links.add(link)
        up = asyncio.ensure_future(self._pump(reader, target_writer, link, downstream=False))
        down = asyncio.ensure_future(self._pump(target_reader, writer, link, downstream=True))
        for task in (up, down):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await asyncio.gather(up, down, return_exceptions=True)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    link: _Link, *, downstream: bool) -> None:  # fmt: skip
        try:
            while data := await reader.read(_chunk(link)):
                if link.frozen:
                    continue
                if not link.flowing.is_set():
                    await link.flowing.wait()  # stalled: hold, the reader's buffer fills
                    if link.aborted:
                        return
                writer.write(data)
                if downstream:
                    self.downstream += len(data)
                    self._moved.set()
                else:
                    self.upstream += len(data)
                await writer.drain()
                if link.rate is not None:
                    await asyncio.sleep(len(data) / link.rate)
            if link.aborted:
                return
            if writer.can_write_eof():
                writer.write_eof()  # an orderly end is passed on as one (half-close)
            link.ended += 1
            if link.ended == 2:
                self._links.discard(link)
                link.client.close()
                link.server.close()
        except (ConnectionError, OSError):
            # one side was reset (or cut): the link ends as a whole
            self._links.discard(link)
            link.abort()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> TcpProxy:
        return await self.start()

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()
