"""tests/support/inspecting_proxy.py, the proxy of the pg8000 and PyMySQL byte-identity
tests, against a loopback echo server (no database): it forwards both ways through the
link, and a link's failure ends that connection and is raised as itself."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tests.support.inspecting_proxy import InspectingProxy, ProxiedLink, inspected
from tests.support.servers import Server

TIMEOUT = 5.0


class Recording(ProxiedLink):
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        super().__init__(client, server)
        self.up: list[bytes] = []
        self.down: list[bytes] = []

    def on_client_data(self, data: bytes) -> None:
        assert b"!" not in data, "the client sent a '!'"
        self.up.append(data)
        self.server.sendall(data)

    def on_server_data(self, data: bytes) -> None:
        self.down.append(data)
        self.client.sendall(data)


@pytest.fixture
def echo() -> Iterator[Server]:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield Server("echo", "127.0.0.1", listener.getsockname()[1])
    listener.close()


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        return sock.recv(65536)


def test_each_piece_goes_through_the_link_both_ways(echo: Server) -> None:
    proxy = InspectingProxy(echo, Recording, timeout=TIMEOUT)
    try:
        with inspected(proxy):
            assert _exchange(proxy.port, b"hello") == b"hello"
        [link] = proxy.links
        assert link.ended.wait(TIMEOUT)  # the client's close ends the link
        assert b"".join(link.up) == b"".join(link.down) == b"hello"
    finally:
        proxy.close()


def test_a_failing_link_ends_its_connection_and_is_raised_as_itself(echo: Server) -> None:
    proxy = InspectingProxy(echo, Recording, timeout=TIMEOUT)
    try:
        with pytest.raises(AssertionError, match="the client sent a '!'"):
            with inspected(proxy):
                assert _exchange(proxy.port, b"bang!") == b""  # closed, nothing forwarded
        [link] = proxy.links
        assert link.ended.wait(TIMEOUT) and link.up == [] and link.down == []
    finally:
        proxy.close()
