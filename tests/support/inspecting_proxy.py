"""A TCP proxy on loopback that checks every byte a real client and a real server exchange.

The byte-identity tests against reference clients (pg8000 with PostgreSQL, PyMySQL with
MariaDB) put ``InspectingProxy`` between them: one thread, one selector, every accepted
client gets a connection to the server and a *link* (a ``ProxiedLink`` subclass the test
module writes) that is handed each piece of data, each way, before forwarding it. A link
cuts the bytes into frames with our decoders and asserts what it must; the first failure is
kept in ``errors`` and ends that link (the client then sees its connection close), and
``check()`` / ``inspected(proxy)`` raise it as itself.

    class Link(ProxiedLink):
        def on_client_data(self, data: bytes) -> None:
            ...  # decode, assert, keep
            self.server.sendall(data)

        def on_server_data(self, data: bytes) -> None:
            ...
            self.client.sendall(data)

    proxy = InspectingProxy(postgresql_server, Link, name="pg-proxy")
    with inspected(proxy):
        con = pg8000.native.Connection(..., port=proxy.port)
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from tests.support.servers import Server

__all__ = ["InspectingProxy", "ProxiedLink", "inspected"]

TIMEOUT = 5.0  # seconds: the proxy's sockets, the wait for its thread to end


class ProxiedLink:
    """One proxied connection: the client's socket, the server's, and (in a subclass) what
    went each way. ``on_client_data`` / ``on_server_data`` check and forward each piece."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.ended = threading.Event()

    def on_client_data(self, data: bytes) -> None:
        raise NotImplementedError

    def on_server_data(self, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        for sock in (self.client, self.server):
            sock.close()
        self.ended.set()


L = TypeVar("L", bound=ProxiedLink)


class InspectingProxy(Generic[L]):
    """The proxy in front of ``server``; ``link(client_socket, server_socket)`` makes the
    link of each accepted connection (``links``, in order)."""

    def __init__(
        self,
        server: Server,
        link: Callable[[socket.socket, socket.socket], L],
        *,
        name: str = "inspecting-proxy",
        timeout: float = TIMEOUT,
    ) -> None:
        self.target = server
        self.timeout = timeout
        self._link = link
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.links: list[L] = []
        self.errors: list[BaseException] = []
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ, None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(0.05):
                if key.data is None:
                    self._accept()
                    continue
                link, side = key.data
                if link.ended.is_set():  # its other socket ended it earlier in this batch
                    continue
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        self._end(link)
                    elif side == "client":
                        link.on_client_data(data)
                    else:
                        link.on_server_data(data)
                except BaseException as error:  # noqa: BLE001 - reported by check()
                    self.errors.append(error)
                    self._end(link)

    def _accept(self) -> None:
        client, _ = self.listener.accept()
        try:
            server = self.target.connect(timeout=self.timeout)
        except OSError as error:
            self.errors.append(error)
            client.close()
            return
        client.settimeout(self.timeout)
        # forward each piece at once: Nagle plus the client's delayed ACK would cost 40 ms a time
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = self._link(client, server)
        self.links.append(link)
        self._selector.register(client, selectors.EVENT_READ, (link, "client"))
        self._selector.register(server, selectors.EVENT_READ, (link, "server"))

    def _end(self, link: L) -> None:
        if link.ended.is_set():
            return
        for sock in (link.client, link.server):
            self._selector.unregister(sock)
        link.close()

    def check(self) -> None:
        """Raise the first failure a link saw, as itself."""
        if self.errors:
            raise self.errors[0]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(self.timeout)
        for link in self.links:
            if not link.ended.is_set():
                link.close()
        self.listener.close()


@contextmanager
def inspected(proxy: InspectingProxy[L]) -> Iterator[None]:
    """Around the client's calls: a failure in the proxy (which closes the client's
    connection) is raised as itself rather than as the client's "connection lost"."""
    try:
        yield
    except Exception:
        proxy.check()
        raise
    proxy.check()
