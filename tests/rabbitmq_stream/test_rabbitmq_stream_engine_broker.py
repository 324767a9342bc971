"""The sans-I/O client engine against a real RabbitMQ broker (3.10.8 here) on 127.0.0.1:5552.

The engine is driven over a plain blocking socket. When no broker listens these tests
SKIP with the reason (unless CI=true, where they FAIL: CI must run the broker).
Start one with the commands in /work/shared/notes/peers.md (a private node under
.broker/, loopback only).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from wirestream.generated.rabbitmq_stream.v1 import ResponseCode
from wirestream.generated.rabbitmq_stream.v1.machines import ConnectionState
from wirestream.runtime.rabbitmq_stream import (
    AuthenticationError,
    ChunkDelivered,
    ClientConnection,
    BrokerConnectionClosed,
    ConnectionFailed,
    ConnectionOpened,
    CreditOnConsumption,
    MessageReceived,
    NoOffset,
    OffsetQueried,
    OffsetSpecFirst,
    PublishConfirmed,
    PublisherDeclared,
    PublisherSequence,
    RequestFailed,
    StreamCreated,
    StreamDoesNotExist,
    Subscribed,
    VirtualHostAccessFailure,
)

from tests.support.rabbitmq_stream_client_support import HOST, PORT

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")


class Driver:
    """A ClientConnection on a blocking socket: pump until a condition on the events."""

    def __init__(self, **options: Any) -> None:
        self.sock = socket.create_connection((HOST, PORT), timeout=10.0)
        self.client = ClientConnection(**options)
        self.events: list[Any] = []

    def pump(self, done: Callable[[list[Any]], bool], timeout: float = 15.0) -> list[Any]:
        deadline = time.monotonic() + timeout
        start = len(self.events)
        while True:
            out = self.client.data_to_send()
            if out:
                self.sock.sendall(out)
            new = self.events[start:]
            if done(new):
                return new
            # ``done`` may have made the engine write (the test's credit, given back per
            # chunk): send it before waiting, or a broker out of credit and this recv wait
            # for each other.
            out = self.client.data_to_send()
            if out:
                self.sock.sendall(out)
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"timed out; events so far: {new[-5:]}"
            self.sock.settimeout(remaining)
            data = self.sock.recv(1 << 20)
            self.events += self.client.receive_data(data)
            if not data:
                return self.events[start:]

    def until(self, kind: type, count: int = 1) -> list[Any]:
        return self.pump(lambda events: sum(isinstance(e, kind) for e in events) >= count)

    def next_events(self, count: int = 1) -> list[Any]:
        return self.pump(lambda events: len(events) >= count)

    def open(self) -> Any:
        self.client.initiate_connection()
        (event,) = self.next_events()
        return event

    def close(self) -> None:
        if self.client.is_open:
            self.client.close()
            self.until(BrokerConnectionClosed)
        self.sock.close()


@pytest.fixture
def driver() -> Iterator[Driver]:
    d = Driver()
    assert isinstance(d.open(), ConnectionOpened)
    yield d
    d.close()


@pytest.fixture
def stream(driver: Driver) -> Iterator[str]:
    name = f"wirestream-test-{uuid.uuid4().hex[:8]}"
    driver.client.create_stream(name, {"max-length-bytes": "100000000"})
    assert isinstance(driver.next_events()[0], StreamCreated)
    yield name
    if driver.client.is_open:
        driver.client.delete_stream(name)
        driver.next_events()


def test_real_broker_connect_auth_tune_open() -> None:
    """PeerProperties, SASL PLAIN, Tune (min of both), Open '/' against RabbitMQ."""
    d = Driver(frame_max=500_000, heartbeat=30)
    opened = d.open()
    assert isinstance(opened, ConnectionOpened)
    assert opened.server_properties["product"] == "RabbitMQ"
    assert (opened.frame_max, opened.heartbeat) == (500_000, 30)
    assert "advertised_host" in opened.connection_properties
    d.close()
    assert d.client.state is ConnectionState.CLOSED


def test_real_broker_publish_1000_confirmed_and_consumed_from_first(driver: Driver,
                                                                      stream: str) -> None:  # fmt: skip
    """Declare a publisher, publish 1000 messages with confirms, subscribe from first and
    get them all back with their offsets 0..999, with credit given back per chunk."""
    client = driver.client
    client.declare_publisher(0, stream, "wirestream-test")
    assert isinstance(driver.next_events()[0], PublisherDeclared)
    messages = [b"message-%04d" % i for i in range(1000)]
    ids = client.publish(0, messages[:500]) + client.publish(0, messages[500:])
    events = driver.pump(
        lambda evs: sum(len(e.publishing_ids) for e in evs if isinstance(e, PublishConfirmed))
        >= 1000
    )
    confirmed = sorted(
        i for e in events if isinstance(e, PublishConfirmed) for i in e.publishing_ids
    )
    assert confirmed == ids == list(range(1, 1001))
    assert client.unconfirmed(0) == 0
    client.query_publisher_sequence("wirestream-test", stream)
    (sequence,) = driver.next_events()
    assert isinstance(sequence, PublisherSequence) and sequence.sequence == 1000

    client.subscribe(1, stream, OffsetSpecFirst(), credit=CreditOnConsumption(2))
    received: list[tuple[int, bytes]] = []

    def consumed_all(events: list[Any]) -> bool:
        for event in events[consumed_all.seen :]:  # type: ignore[attr-defined]
            if isinstance(event, ChunkDelivered):
                client.chunk_consumed(1)
            elif isinstance(event, MessageReceived):
                received.append((event.offset, event.message))
        consumed_all.seen = len(events)  # type: ignore[attr-defined]
        return len(received) >= 1000

    consumed_all.seen = 0  # type: ignore[attr-defined]
    events = driver.pump(consumed_all)
    assert isinstance(events[0], Subscribed)
    assert received == list(enumerate(messages))


def test_real_broker_gzip_batch_round_trip(driver: Driver, stream: str) -> None:
    """A gzip sub-entry batch published by the engine is stored by RabbitMQ and read
    back (CRC checked, inflated) with one offset per record."""
    client = driver.client
    client.declare_publisher(0, stream)
    driver.next_events()
    client.publish_batch(0, [b"alpha", b"beta", b"gamma"])
    client.publish(0, [b"delta"])
    driver.pump(
        lambda evs: sum(len(e.publishing_ids) for e in evs if isinstance(e, PublishConfirmed)) >= 2
    )
    client.subscribe(0, stream, OffsetSpecFirst(), credit=10)
    events = driver.until(MessageReceived, 4)
    got = [(e.offset, e.message) for e in events if isinstance(e, MessageReceived)]
    assert got == [(0, b"alpha"), (1, b"beta"), (2, b"gamma"), (3, b"delta")]


def test_real_broker_store_and_query_offset(driver: Driver, stream: str) -> None:
    """StoreOffset then QueryOffset; 0x13 (no offset) for an unknown reference."""
    client = driver.client
    client.store_offset("reader", stream, 42)
    client.query_offset("reader", stream)
    client.query_offset("nobody", stream)
    found, missing = driver.next_events(2)
    assert isinstance(found, OffsetQueried) and found.offset == 42
    assert isinstance(missing, RequestFailed) and isinstance(missing.error, NoOffset)


def test_real_broker_wrong_password_is_authentication_error() -> None:
    """A wrong password: SaslAuthenticateResponse 8, then the broker closes."""
    d = Driver(password="definitely-wrong")
    failed = d.open()
    assert isinstance(failed, ConnectionFailed) and isinstance(failed.error, AuthenticationError)
    assert failed.error.code == ResponseCode.AUTHENTICATION_FAILURE
    assert d.sock.recv(10) == b""  # the broker closed the socket
    d.sock.close()


def test_real_broker_unknown_vhost_refused() -> None:
    """3.10.8's refused Open (10 bytes, no properties) reads as a typed refusal."""
    d = Driver(virtual_host="/no-such-vhost")
    failed = d.open()
    assert isinstance(failed, ConnectionFailed) and isinstance(
        failed.error, VirtualHostAccessFailure
    )
    d.sock.close()


def test_real_broker_subscribe_to_missing_stream_is_typed_error(driver: Driver) -> None:
    """Subscribe to a stream that does not exist: 0x02 -> ``StreamDoesNotExist``."""
    cid = driver.client.subscribe(0, f"missing-{uuid.uuid4().hex[:8]}")
    (event,) = driver.next_events()
    assert isinstance(event, RequestFailed) and event.correlation_id == cid
    assert isinstance(event.error, StreamDoesNotExist)


def test_real_broker_heartbeat_keeps_connection(driver: Driver) -> None:
    """A Heartbeat from the engine is accepted by the broker (the connection stays open
    and answers a request afterwards)."""
    client = driver.client
    client.handle_timer(0.0)
    client.handle_timer(client.heartbeat / 2)  # nothing sent: a Heartbeat goes out
    heartbeat = client.data_to_send()
    assert heartbeat == b"\x00\x00\x00\x04\x00\x17\x00\x01"
    driver.sock.sendall(heartbeat)
    client.metadata(["x"])
    assert driver.next_events()
