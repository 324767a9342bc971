"""``connect(url)`` and ``serve(url, handler)``: BPMUX peers over any
``wirestream.runtime.aio`` transport (``BpmuxServer`` holds the accepted ones)."""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Generic, TypeVar

from wirestream.runtime.aio import Listener, Transport, listen, open_transport
from wirestream.runtime.bpmux.aio.handler import Handler
from wirestream.runtime.bpmux.aio.peer import DEFAULT_LIMITS, BpmuxPeer
from wirestream.runtime.capture import CaptureWriter, tap, tap_accepted
from wirestream.runtime.limits import ConnectionLimits

__all__ = ["BpmuxServer", "HandlerFactory", "connect", "serve"]

T = TypeVar("T")


class _Opening(Generic[T]):
    """``await connect(...)`` or ``async with connect(...) as peer`` (also ``serve``)."""

    def __init__(self, opener: Callable[[], Awaitable[T]]) -> None:
        self._opener = opener
        self._opened: T | None = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._open().__await__()

    async def _open(self) -> T:
        self._opened = await self._opener()
        return self._opened

    async def __aenter__(self) -> T:
        opened = await self._open()
        return await opened.__aenter__()  # type: ignore[attr-defined,no-any-return]

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        if self._opened is not None:
            await self._opened.__aexit__(kind, value, traceback)  # type: ignore[attr-defined]


def connect(url: str, handler: Handler | None = None, *, ssl: ssl_module.SSLContext | None = None,
            timeout: float | None = 10.0, capture: CaptureWriter | None = None,
            **options: Any) -> _Opening[BpmuxPeer]:  # fmt: skip
    """Open a BPMUX connection to ``url`` (any ``wirestream.runtime.aio`` scheme) as the initiator.
    ``options``: ``BpmuxPeer``'s (credit, stream_credit, greedy, ...).  ``capture``
    records every frame (``wirestream.runtime.capture``)."""

    async def opener() -> BpmuxPeer:
        transport = await open_transport(url, ssl=ssl, timeout=timeout)
        transport = tap(transport, capture, protocol="bpmux/rel", side="client")
        peer = BpmuxPeer(transport, initiator=True, handler=handler, **options)
        peer.start()
        return peer

    return _Opening(opener)


HandlerFactory = Callable[[BpmuxPeer], Handler]


class BpmuxServer:
    """Accepts BPMUX connections; ``peers`` are the open ones.  ``close()`` stops
    accepting and drops them (their streams fail with ``ConnectionLost``)."""

    def __init__(self, handler: Handler | HandlerFactory, options: dict[str, Any]) -> None:
        self._handler = handler
        self._options = options
        self.peers: set[BpmuxPeer] = set()
        self._new_peer = asyncio.Condition()
        self.listener: Listener | None = None

    @property
    def url(self) -> str:
        assert self.listener is not None
        return self.listener.url

    async def _on_transport(self, transport: Transport) -> None:
        peer = BpmuxPeer(transport, initiator=False, **self._options)
        handler = self._handler
        peer.handler = handler if isinstance(handler, Handler) else handler(peer)
        self.peers.add(peer)
        peer.start()
        async with self._new_peer:
            self._new_peer.notify_all()
        try:
            await peer.wait_closed()
        finally:
            self.peers.discard(peer)

    async def accepted(self) -> BpmuxPeer:
        """Wait for a connection (the first open one)."""
        async with self._new_peer:
            await self._new_peer.wait_for(lambda: bool(self.peers))
        return next(iter(self.peers))

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()

    async def wait_closed(self) -> None:
        if self.listener is not None:
            await self.listener.wait_closed()

    async def __aenter__(self) -> BpmuxServer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()
        await self.wait_closed()


def serve(url: str, handler: Handler | HandlerFactory, *,
          ssl: ssl_module.SSLContext | None = None, capture: CaptureWriter | None = None,
          **options: Any) -> _Opening[BpmuxServer]:  # fmt: skip
    """Accept BPMUX connections on ``url``; each gets ``handler`` (or ``handler(peer)``
    when it is a factory).  ``options``: ``BpmuxPeer``'s (``limits``, a
    ``ConnectionLimits``, also gives the server its ``max_connections``).  ``capture``
    records every frame of every connection (``wirestream.runtime.capture``)."""

    async def opener() -> BpmuxServer:
        server = BpmuxServer(handler, options)
        on_transport = tap_accepted(server._on_transport, capture, protocol="bpmux/rel")
        limits: ConnectionLimits = options.get("limits") or DEFAULT_LIMITS
        server.listener = await listen(url, on_transport, ssl=ssl,
                                       max_connections=limits.max_connections,
                                       handshake_timeout=limits.handshake_timeout)  # fmt: skip
        return server

    return _Opening(opener)
