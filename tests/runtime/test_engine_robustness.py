"""Bad bytes into every sans-I/O engine: a valid opening from a real peer engine,
then random or mutated bytes, fed in random chunks.  The engine answers with events
or a ``ProtocolError`` -- never IndexError, struct.error, KeyError, a hang, or an
allocation sized by the peer (frame limits come from the engine's configuration).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from wirestream.runtime.bpmux import BpmuxConnection
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rabbitmq_stream import ClientConnection
from wirestream.runtime.rsio import RsioConnection
from wirestream.runtime.rsocket import RSocketConnection
from tests.support.rabbitmq_stream_test_broker import TestBroker


def _rsio(encoding: str) -> Callable[[], tuple[Any, bytes]]:
    def make() -> tuple[Any, bytes]:
        server = RsioConnection("server", encoding=encoding)  # type: ignore[arg-type]
        client = RsioConnection("client", encoding=encoding)  # type: ignore[arg-type]
        client.initiate_connection()
        client.subscribe("ticks", initial_demand=5)
        return server, client.data_to_send()

    return make


def _bpmux() -> tuple[Any, bytes]:
    opener, acceptor = BpmuxConnection(initiator=True), BpmuxConnection(initiator=False)
    return acceptor, opener.data_to_send()


def _rsocket(version: str) -> Callable[[], tuple[Any, bytes]]:
    def make() -> tuple[Any, bytes]:
        server = RSocketConnection("server", version)
        client = RSocketConnection("client", version)
        client.connect()
        client.request_stream(b"ticks", initial_n=4)
        return server, client.data_to_send()

    return make


def _rabbitmq() -> tuple[Any, bytes]:
    client, broker = ClientConnection(), TestBroker()
    client.initiate_connection()
    broker.receive_data(client.data_to_send())
    return client, broker.data_to_send()


ENGINES: dict[str, Callable[[], tuple[Any, bytes]]] = {
    "rsocket-1.0": _rsocket("1.0"),
    "rsocket-0.2": _rsocket("0.2"),
    "rabbitmq_stream": _rabbitmq,
    "rsio-binary": _rsio("binary"),
    "rsio-msgpack": _rsio("msgpack"),
    "bpmux": _bpmux,
}


def _feed(engine: Any, data: bytes, cuts: list[int]) -> None:
    """Feed ``data`` split at ``cuts``; stop at the first ProtocolError (the connection
    is over then) -- anything else propagates and fails the test."""
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    for start, end in zip(points, points[1:]):
        try:
            engine.receive_data(data[start:end])
        except ProtocolError:
            return
    try:
        engine.receive_data(b"")  # EOF closes whatever is open
    except ProtocolError:
        pass


@given(
    name=st.sampled_from(sorted(ENGINES)),
    tail=st.binary(max_size=200),
    cuts=st.lists(st.integers(0, 1000), max_size=6),
)
def test_random_bytes_after_a_valid_opening(name: str, tail: bytes, cuts: list[int]) -> None:
    engine, opening = ENGINES[name]()
    _feed(engine, opening + tail, cuts)
    engine.data_to_send()


@given(
    name=st.sampled_from(sorted(ENGINES)),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 1000), max_size=6),
)
def test_mutated_valid_opening(name: str, flips: list[tuple[int, int]], cuts: list[int]) -> None:
    engine, opening = ENGINES[name]()
    data = bytearray(opening)
    for index, value in flips:
        data[index % len(data)] = value
    _feed(engine, bytes(data), cuts)
    engine.data_to_send()
