"""Transports by URL: ``open_transport(url)`` dials, ``listen(url, on_transport)`` accepts.

Schemes: ``tcp://host:port``, ``tls://host:port`` (an ``ssl.SSLContext``; the default
client context verifies), ``unix:///path/to/socket``, ``ws://host:port/path`` and
``wss://...`` (the ``websockets`` library), and ``memory://name`` (in-process, for tests
and demos).  Port 0 in ``listen`` picks a free port; ``Listener.url`` has the real one.

``listen(..., max_connections=N)``: a connection beyond N open ones is closed at once
(aborted: the peer sees a reset or EOF, nothing is read from it), counted in
``Listener.refused`` and logged (``wirestream.runtime.aio``, at most once a second).
``handshake_timeout`` bounds what happens before a connection reaches the protocol: the
TLS handshake (``tls``, asyncio's ``ssl_handshake_timeout``) and the WebSocket opening
handshake (``ws``/``wss``, websockets' ``open_timeout``); a silent TLS peer would
otherwise hold its socket for asyncio's default minute without being counted.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl as ssl_module
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final
from urllib.parse import urlsplit

from wirestream.runtime.aio.transport import (
    MAX_MESSAGE_SIZE,
    StreamTransport,
    Transport,
    WebSocketTransport,
    memory_pair,
)
from wirestream.runtime.errors import ConnectionLost, TransportTimeout

__all__ = ["Endpoint", "parse_url", "open_transport", "listen", "Listener", "OnTransport"]

SCHEMES = ("tcp", "tls", "unix", "ws", "wss", "memory")

LISTEN_BACKLOG: Final = socket.SOMAXCONN
"""Connections the kernel may queue for ``accept`` (it caps this at net.core.somaxconn).
asyncio's default, 100, overflows when a thousand clients dial at once: Linux drops
handshakes (nstat ListenOverflows), falls back on SYN cookies, and resets the clients
whose cookies then fail (SyncookiesFailed; 343 of 1,000 clients here, after their
``connect`` had succeeded).  tests/rsocket/test_soak_rsocket.py dials such a burst."""

OnTransport = Callable[[Transport], Awaitable[None]]
"""What a listener runs (as its own task) for each accepted connection."""

log = logging.getLogger("wirestream.runtime.aio")

REFUSAL_LOG_INTERVAL = 1.0
"""Seconds between two log lines about refused connections (a flood logs a count)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    path: str

    @property
    def url(self) -> str:
        if self.scheme == "unix":
            return f"unix://{self.path}"
        if self.scheme == "memory":
            return f"memory://{self.host}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        path = self.path if self.scheme in ("ws", "wss") else ""
        return f"{self.scheme}://{host}:{self.port}{path}"


def parse_url(url: str) -> Endpoint:
    """Split a transport URL; a ``ValueError`` names what is wrong with it."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"{url!r}: unknown transport scheme {parts.scheme!r} "
                         f"(one of {', '.join(SCHEMES)})")  # fmt: skip
    if scheme == "unix":
        path = parts.netloc + parts.path
        if not path:
            raise ValueError(f"{url!r}: a unix URL needs a path (unix:///tmp/x.sock)")
        return Endpoint(scheme, "", 0, path)
    if scheme == "memory":
        if not parts.netloc:
            raise ValueError(f"{url!r}: a memory URL needs a name (memory://name)")
        return Endpoint(scheme, parts.netloc, 0, "")
    try:
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{url!r}: {error}") from None
    if not parts.hostname or port is None:
        raise ValueError(f"{url!r}: needs host:port")
    return Endpoint(scheme, parts.hostname, port, parts.path or "/")


_memory_listeners: dict[str, Listener] = {}


async def open_transport(url: str, *, ssl: ssl_module.SSLContext | None = None,
                         message_prefix: int | None = None,
                         timeout: float | None = 10.0) -> Transport:  # fmt: skip
    """Connect to ``url``.  ``TransportTimeout`` after ``timeout`` seconds,
    ``ConnectionLost`` (reason "refused") when nobody listens."""
    endpoint = parse_url(url)
    try:
        async with asyncio.timeout(timeout):
            return await _dial(endpoint, ssl, message_prefix)
    except TimeoutError:
        raise TransportTimeout(f"{url}: no connection within {timeout} s") from None
    except OSError as error:
        raise ConnectionLost(f"{url}: {error}", reason="refused") from error


async def _dial(endpoint: Endpoint, ssl: ssl_module.SSLContext | None,
                message_prefix: int | None) -> Transport:  # fmt: skip
    scheme = endpoint.scheme
    if scheme in ("tcp", "tls"):
        context = ssl if ssl is not None else (
            ssl_module.create_default_context() if scheme == "tls" else None)  # fmt: skip
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port,
                                                       ssl=context)  # fmt: skip
        return StreamTransport(reader, writer, f"{endpoint.host}:{endpoint.port}")
    if scheme == "unix":
        reader, writer = await asyncio.open_unix_connection(endpoint.path)
        return StreamTransport(reader, writer, endpoint.path)
    if scheme in ("ws", "wss"):
        from websockets.asyncio.client import connect
        from websockets.exceptions import WebSocketException

        try:
            websocket = await connect(endpoint.url, ssl=ssl if scheme == "wss" else None,
                                      max_size=MAX_MESSAGE_SIZE, compression=None)  # fmt: skip
        except WebSocketException as error:
            raise ConnectionLost(f"{endpoint.url}: {error}", reason="refused") from error
        return WebSocketTransport(websocket, message_prefix=message_prefix, peer=endpoint.url)
    listener = _memory_listeners.get(endpoint.host)
    if listener is None:
        raise ConnectionRefusedError(f"nothing listens on memory://{endpoint.host}")
    client, server = memory_pair(endpoint.host)
    listener._accept(server)
    return client


class Listener:
    """Accepts connections on one endpoint; each runs ``on_transport`` in its own task.

    ``close()`` stops accepting and aborts the connections still open; ``wait_closed()``
    waits for their tasks.  Usable as ``async with await listen(...)``.
    ``max_connections``: connections open at once; more are refused (module docstring).
    """

    def __init__(self, endpoint: Endpoint, on_transport: OnTransport, *,
                 max_connections: int | None = None) -> None:  # fmt: skip
        if max_connections is not None and max_connections < 1:
            raise ValueError("max_connections must be at least 1 (or None: no limit)")
        self.endpoint = endpoint
        self.max_connections = max_connections
        self.refused = 0
        """Connections closed at once because ``max_connections`` were open."""
        self._refusals_logged = 0
        self._refusal_logged_at: float | None = None
        self._on_transport = on_transport
        self._server: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._transports: set[Transport] = set()
        self._closed = False

    @property
    def url(self) -> str:
        return self.endpoint.url

    def _accept(self, transport: Transport) -> None:
        if self._closed:
            transport.abort()
            return
        task = asyncio.get_running_loop().create_task(self._serve(transport))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, transport: Transport) -> None:
        limit = self.max_connections
        if limit is not None and len(self._transports) >= limit:
            self._refuse(transport)
            await transport.wait_closed()
            return
        self._transports.add(transport)
        try:
            await self._on_transport(transport)
        finally:
            self._transports.discard(transport)
            if not transport.is_closing:
                transport.close()
            await transport.wait_closed()

    async def _serve_websocket(self, websocket: Any, message_prefix: int | None) -> None:
        # websockets closes the connection when this handler returns
        transport = WebSocketTransport(websocket, message_prefix=message_prefix,
                                       peer=str(websocket.remote_address))  # fmt: skip
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(transport)
        finally:
            self._tasks.discard(task)

    @property
    def connections(self) -> int:
        return len(self._transports)

    def _refuse(self, transport: Transport) -> None:
        transport.abort()
        self.refused += 1
        now = asyncio.get_running_loop().time()
        last = self._refusal_logged_at
        if last is None or now - last >= REFUSAL_LOG_INTERVAL:
            log.warning("%s: refused %d connection(s) (the last from %s): %d open, "
                        "max_connections=%d", self.url, self.refused - self._refusals_logged,
                        transport.peer, len(self._transports), self.max_connections)  # fmt: skip
            self._refusal_logged_at = now
            self._refusals_logged = self.refused

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.endpoint.scheme == "memory":
            _memory_listeners.pop(self.endpoint.host, None)
        if self._server is not None:
            self._server.close()
        for transport in list(self._transports):
            transport.abort()

    async def wait_closed(self) -> None:
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Listener:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()
        await self.wait_closed()


async def listen(url: str, on_transport: OnTransport, *,
                 ssl: ssl_module.SSLContext | None = None,
                 message_prefix: int | None = None,
                 max_connections: int | None = None,
                 handshake_timeout: float | None = None) -> Listener:  # fmt: skip
    """Accept connections on ``url`` (``tls``/``wss`` need ``ssl``, a server context);
    at most ``max_connections`` at once (None: no limit); TLS and WebSocket opening
    handshakes within ``handshake_timeout`` seconds (None: the libraries' defaults)."""
    endpoint = parse_url(url)
    scheme = endpoint.scheme
    if scheme in ("tls", "wss") and ssl is None:
        raise ValueError(f"{url}: a {scheme} listener needs an ssl.SSLContext")
    listener = Listener(endpoint, on_transport, max_connections=max_connections)
    server: Any

    async def on_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        transport = StreamTransport(reader, writer, str(peer))
        await listener._serve(transport)

    if scheme in ("tcp", "tls"):
        tls = scheme == "tls"
        server = await asyncio.start_server(
            on_stream, endpoint.host, endpoint.port, ssl=ssl if tls else None,
            ssl_handshake_timeout=handshake_timeout if tls else None, backlog=LISTEN_BACKLOG,
        )  # fmt: skip
        host, port = server.sockets[0].getsockname()[:2]
        listener.endpoint = Endpoint(scheme, endpoint.host, port, endpoint.path)
    elif scheme == "unix":
        server = await asyncio.start_unix_server(on_stream, endpoint.path, backlog=LISTEN_BACKLOG)
    elif scheme in ("ws", "wss"):
        from websockets.asyncio.server import serve

        async def on_websocket(websocket: Any) -> None:
            await listener._serve_websocket(websocket, message_prefix)

        opening: dict[str, Any] = {}
        if handshake_timeout is not None:
            opening["open_timeout"] = handshake_timeout
        server = await serve(on_websocket, endpoint.host, endpoint.port,
                             ssl=ssl if scheme == "wss" else None,
                             max_size=MAX_MESSAGE_SIZE, compression=None,
                             backlog=LISTEN_BACKLOG, **opening)  # fmt: skip
        port = next(iter(server.sockets)).getsockname()[1]
        listener.endpoint = Endpoint(scheme, endpoint.host, port, endpoint.path)
    else:
        if endpoint.host in _memory_listeners:
            raise ValueError(f"{url}: already listening")
        _memory_listeners[endpoint.host] = listener
        server = None
    listener._server = server
    return listener
