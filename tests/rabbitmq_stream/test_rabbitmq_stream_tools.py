"""The test tools for the RabbitMQ stream client: the recording proxy and the broker CLI.

``tests/support/rabbitmq_stream_capture.py`` (FrameCapture) and ``tests/support/rabbitmq_broker_ctl.py``
are proved here against rstream 1.1.1 and the real broker (RabbitMQ 3.10.8 on
127.0.0.1:5552), plus two proxy tests on a local upstream that need no broker. When no
broker listens the broker tests SKIP with the reason (unless CI=true, where they FAIL:
CI must run the broker); start one with ``make broker``.

Findings these tests pin down (3.10.8):
* the broker answers a forced close of a stream connection (the ``{shutdown, Reason}``
  call behind ``rabbitmqctl close_connection``) by closing the socket: a FIN, and no
  CloseRequest frame first;
* ``rabbitmq-streams add_super_stream NAME --partitions 3`` makes partition streams
  NAME-0..NAME-2 bound to the exchange NAME with routing keys "0".."2" (rstream 1.1.1
  cannot check this itself: it misreads 3.10.8's Route/Partitions answers, which lack
  the response bit, and its reader task dies).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from rstream import (
    ConfirmationStatus,
    Consumer,
    ConsumerOffsetSpecification,
    MessageContext,
    OffsetType,
    OnClosedErrorInfo,
    Producer,
)
from rstream.recovery import BackOffRecoveryStrategy

from wirestream.generated.rabbitmq_stream.v1 import (
    CloseRequest,
    CreditRequest,
    DeclarePublisherRequest,
    Deliver,
    Heartbeat,
    OffsetSpecFirst,
    PeerPropertiesRequest,
    Property,
    Publish,
    PublishConfirm,
    SimpleEntry,
    SubscribeRequest,
    Tune,
    frame_bytes,
)
from wirestream.runtime.errors import UnknownFrameType
from wirestream.runtime.rabbitmq_stream.chunk import chunk_records
from tests.support import rabbitmq_broker_ctl as ctl
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_capture import FrameCapture

HOST, PORT = "127.0.0.1", 5552

logging.getLogger("rstream").setLevel(logging.CRITICAL)  # teardown noise at ERROR


@pytest.fixture(scope="module")
def broker(rabbitmq_broker: object) -> None:
    """The broker of the session (tests/support/rabbitmq_broker.py)."""


def _name(kind: str) -> str:
    return f"ws-tools-{kind}-{uuid.uuid4().hex[:12]}"


def _producer(port: int = PORT, **options: Any) -> Producer:
    # load_balancer_mode: rstream connects to the stream leader through the address it
    # was given (the proxy) instead of the broker's advertised one.
    return Producer(
        HOST, port, username="guest", password="guest", load_balancer_mode=True, **options
    )


def _consumer(port: int = PORT, **options: Any) -> Consumer:
    return Consumer(
        HOST, port, username="guest", password="guest", load_balancer_mode=True, **options
    )


@asynccontextmanager
async def _stream() -> AsyncIterator[str]:
    """A new stream on the broker (directly, not proxied), deleted on exit."""
    stream = _name("s")
    admin = _producer()
    await admin.start()
    try:
        await admin.create_stream(stream)
        yield stream
    finally:
        await admin.delete_stream(stream, missing_ok=True)
        await admin.close()


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


# --------------------------------------------------------------------------------------
# The proxy on a local upstream (no broker)
# --------------------------------------------------------------------------------------


@asynccontextmanager
async def _recording_upstream(reply: bytes) -> AsyncIterator[tuple[int, bytearray]]:
    """A TCP server that records what it receives and sends ``reply`` on connect."""
    received = bytearray()
    handlers: list[asyncio.Task[None]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        writer.write(reply)
        while data := await reader.read(65536):
            received.extend(data)
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(handle, HOST, 0)
    try:
        yield server.sockets[0].getsockname()[1], received
    finally:
        server.close()
        await server.wait_closed()
        await asyncio.gather(*handlers, return_exceptions=True)


def test_proxy_forwards_undecodable_bytes_unchanged_and_records_the_decode_error() -> None:
    async def main() -> None:
        peer_properties = frame_bytes(
            PeerPropertiesRequest(correlation_id=1, peer_properties=[Property("k", "v")])
        )
        unknown_key = (6).to_bytes(4, "big") + b"\x77\x77\x00\x01\x00\x00"  # key 0x7777
        sent = peer_properties + unknown_key + frame_bytes(Heartbeat())
        reply = frame_bytes(Tune(frame_max=1_048_576, heartbeat=60))
        async with _recording_upstream(reply) as (upstream_port, received):
            async with FrameCapture(upstream=(HOST, upstream_port)) as cap:
                reader, writer = await asyncio.open_connection(HOST, cap.port)
                assert await reader.readexactly(len(reply)) == reply
                writer.write(sent[:7])  # split inside a frame: reassembly works too
                await writer.drain()
                writer.write(sent[7:])
                writer.write_eof()
                await _until(lambda: bytes(received) == sent)
                assert await reader.read() == b""  # the upstream's close reaches us
                writer.close()
                await writer.wait_closed()
                await cap.wait_for(lambda: cap.connections[0].server_ended is not None)
        assert cap.client_frames == [
            PeerPropertiesRequest(correlation_id=1, peer_properties=[Property("k", "v")]),
            Heartbeat(),
        ]
        assert cap.server_frames == [Tune(frame_max=1_048_576, heartbeat=60)]
        assert [(e.connection, e.sender) for e in cap.errors] == [(0, "client")]
        assert isinstance(cap.errors[0].error, UnknownFrameType)
        assert cap.connections[0].client_ended == "eof"

    run(main())


def test_proxy_keeps_forwarding_after_an_oversized_length_stops_decoding() -> None:
    async def main() -> None:
        huge = (100 * 1024 * 1024).to_bytes(4, "big") + b"junk"
        async with _recording_upstream(b"") as (upstream_port, received):
            async with FrameCapture(upstream=(HOST, upstream_port)) as cap:
                _, writer = await asyncio.open_connection(HOST, cap.port)
                writer.write(frame_bytes(Heartbeat()) + huge)
                await _until(lambda: len(received) == 8 + len(huge))
                writer.write(b"more bytes")
                await _until(lambda: received.endswith(b"more bytes"))
                writer.close()
                await writer.wait_closed()
        assert cap.client_frames == [Heartbeat()]
        assert len(cap.errors) == 1 and "limit" in str(cap.errors[0].error)

    run(main())


# --------------------------------------------------------------------------------------
# The proxy in front of the broker, with rstream as the client
# --------------------------------------------------------------------------------------


@pytest.mark.peer
def test_proxy_carries_rstream_publish_and_consume_and_decodes_every_frame(
    broker: None,
) -> None:
    """Every frame of a publish and a consume crosses intact and decodes. Spec
    (PROTOCOL.adoc, Credit): 'Credit => uint16 // the number of chunks that can be
    sent'; rstream grants 1 per chunk (Deliver) it receives, as the proxy shows."""

    async def main() -> None:
        bodies = [f"message {i}".encode() for i in range(10)]
        received: list[bytes] = []
        confirmed: list[ConfirmationStatus] = []
        async with _stream() as stream, FrameCapture() as cap:
            producer = _producer(cap.port, connection_name=_name("producer"))
            await producer.start()
            try:
                await producer.send_batch(stream, bodies, on_publish_confirm=confirmed.append)
                await _until(lambda: len(confirmed) == len(bodies))
            finally:
                await producer.close()

            def on_message(body: bytes, context: MessageContext) -> None:
                received.append(body)

            consumer = _consumer(cap.port, connection_name=_name("consumer"))
            await consumer.start()
            try:
                await consumer.subscribe(
                    stream,
                    on_message,
                    offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST),
                )
                await _until(lambda: len(received) == len(bodies))
                delivers = cap.frames_of(Deliver, "server")
                await cap.wait_for(lambda: len(cap.frames_of(CreditRequest)) == len(delivers))
            finally:
                await consumer.close()

        assert received == bodies
        assert all(status.is_confirmed for status in confirmed)
        assert cap.errors == []
        [declare] = [f for f in cap.frames_of(DeclarePublisherRequest) if f.stream == stream]
        assert declare.publisher_reference == ""  # rstream sends "" for no reference
        publishes = [f for f in cap.frames_of(Publish) if f.publisher_id == declare.publisher_id]
        published = [m for f in publishes for m in (f.published_messages or [])]
        assert [m.publishing_id for m in published] == list(range(1, 11))
        assert [m.entry for m in published] == [SimpleEntry(b) for b in bodies]
        confirms = cap.frames_of(PublishConfirm, "server")
        assert sorted(i for f in confirms for i in f.publishing_ids) == list(range(1, 11))
        [subscribe] = cap.frames_of(SubscribeRequest)
        assert (subscribe.stream, subscribe.offset_specification, subscribe.credit) == (
            stream,
            OffsetSpecFirst(),
            10,  # rstream's default initial credit
        )
        credits = cap.frames_of(CreditRequest)
        assert credits == [
            CreditRequest(subscription_id=subscribe.subscription_id, credit=1) for _ in delivers
        ]
        delivered = [record for f in delivers for record in chunk_records(f.chunk)]
        assert delivered == bodies

    run(main(), timeout=60)


@pytest.mark.peer
def test_close_all_drops_the_proxied_connection_and_rstream_sees_it_closed(
    broker: None,
) -> None:
    async def main() -> None:
        closes: list[OnClosedErrorInfo] = []
        async with _stream() as stream, FrameCapture() as cap:
            producer = _producer(
                cap.port,
                connection_name=_name("dropped"),
                on_close_handler=closes.append,
                recovery_strategy=BackOffRecoveryStrategy(False),  # no reconnect
            )
            await producer.start()
            try:
                await producer.send_wait(stream, b"before the drop")
                live = [c for c in cap.connections if c.is_live]
                assert live  # the publisher's connection
                cap.close_all()
                await _until(lambda: len(closes) == 1)
                for connection in live:
                    await connection.wait_closed()
            finally:
                await producer.close()
        assert closes[0].reason == "Connection Closed" and closes[0].streams == [stream]

    run(main(), timeout=60)


@pytest.mark.peer
def test_close_stream_connections_makes_the_broker_close_the_socket_without_close_request(
    broker: None,
) -> None:
    """RabbitMQ 3.10.8 answers a forced close (``{shutdown, Reason}``, what
    ``rabbitmqctl close_connection`` sends) with a FIN and no CloseRequest frame."""

    async def main() -> None:
        name = _name("closed")
        closes: list[OnClosedErrorInfo] = []
        async with _stream() as stream, FrameCapture() as cap:
            producer = _producer(
                cap.port,
                connection_name=name,
                on_close_handler=closes.append,
                recovery_strategy=BackOffRecoveryStrategy(False),
            )
            await producer.start()
            try:
                await producer.send_wait(stream, b"before the close")
                live = [c for c in cap.connections if c.is_live]
                listed = await asyncio.to_thread(ctl.list_stream_connections)
                ours = [c for c in listed if ctl.client_property(c, "connection_name") == name]
                assert len(ours) == len(live) == 1
                closed = await asyncio.to_thread(ctl.close_stream_connections, name)
                assert closed == [ours[0]["conn_name"]]
                await cap.wait_for(lambda: all(c.server_ended for c in live))
                await _until(lambda: len(closes) == 1)
                listed = await asyncio.to_thread(ctl.list_stream_connections)
            finally:
                await producer.close()
        assert [c.server_ended for c in live] == ["eof"]
        assert cap.frames_of(CloseRequest, "server") == []
        assert closes[0].streams == [stream]
        assert all(ctl.client_property(c, "connection_name") != name for c in listed)

    run(main(), timeout=60)


def test_close_stream_connections_refuses_an_empty_match() -> None:
    with pytest.raises(ValueError, match="every stream connection"):
        ctl.close_stream_connections("")


# --------------------------------------------------------------------------------------
# Broker CLI: lists and super streams
# --------------------------------------------------------------------------------------


@pytest.mark.peer
def test_list_commands_show_rstream_connection_publisher_and_consumer(broker: None) -> None:
    async def main() -> None:
        name = _name("listed")
        reference = _name("ref")
        async with _stream() as stream:
            producer = _producer(connection_name=name)
            consumer = _consumer(connection_name=name)
            await producer.start()
            await consumer.start()
            try:
                for body in (b"a", b"b", b"c"):
                    await producer.send_wait(stream, body, publisher_name=reference)
                got: list[bytes] = []
                await consumer.subscribe(stream, lambda body, _: got.append(body))
                await _until(lambda: len(got) == 3)
                connections = await asyncio.to_thread(ctl.list_stream_connections)
                publishers = await asyncio.to_thread(ctl.list_stream_publishers)
                consumers = await asyncio.to_thread(ctl.list_stream_consumers)
            finally:
                await consumer.close()
                await producer.close()
        ours = [c for c in connections if ctl.client_property(c, "connection_name") == name]
        assert ours and all(c["user"] == "guest" and c["vhost"] == "/" for c in ours)
        assert [
            (p["reference"], p["messages_confirmed"]) for p in publishers if p["stream"] == stream
        ] == [(reference, 3)]
        [row] = [c for c in consumers if c["stream"] == stream]
        assert row["messages_consumed"] == 3 and row["subscription_id"] == 0

    run(main(), timeout=60)


@pytest.mark.peer
def test_add_super_stream_binds_numbered_partitions_and_delete_super_stream_removes_them(
    broker: None,
) -> None:
    """``add_super_stream NAME --partitions 3``: streams NAME-0..NAME-2 bound to the
    exchange NAME with routing keys "0".."2" in partition order (what the broker's
    Partitions and Route answers come from); ``delete_super_stream`` removes it all."""

    async def main() -> None:
        super_stream = _name("super")
        partitions = [f"{super_stream}-{i}" for i in range(3)]

        async def exist() -> list[bool]:
            admin = _producer()
            await admin.start()
            try:
                return [await admin.stream_exists(p) for p in partitions]
            finally:
                await admin.close()

        await asyncio.to_thread(ctl.add_super_stream, super_stream, 3)
        try:
            bindings = await asyncio.to_thread(ctl.super_stream_bindings, super_stream)
            existed = await exist()
        finally:
            await asyncio.to_thread(ctl.delete_super_stream, super_stream)
        assert bindings == [(str(i), partitions[i], i) for i in range(3)]
        assert existed == [True, True, True]
        assert await asyncio.to_thread(ctl.super_stream_bindings, super_stream) == []
        assert await exist() == [False, False, False]

    run(main(), timeout=60)


def test_broker_ctl_error_carries_the_cli_stderr(broker: None) -> None:
    with pytest.raises(ctl.BrokerCtlError, match="stream_not_found") as failure:
        ctl.delete_super_stream(_name("missing"))
    assert failure.value.returncode != 0


def test_a_listing_that_trips_over_a_handshake_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """3.10.8 fails a listing while any stream connection is mid-handshake (module
    ``rabbitmq_broker_ctl``, ``LISTING_PATIENCE``): the listing is asked again, backing
    off; any other failure, or one that lasts past the patience, is raised."""
    crash = "{:badrpc, {:EXIT, {{:function_clause, [{:rabbit_stream_reader, :tcp_connected"
    answers: list[str | ctl.BrokerCtlError] = [
        ctl.BrokerCtlError(["rabbitmq-streams"], 70, crash),
        ctl.BrokerCtlError(["rabbitmq-streams"], 70, crash),
        '[{"conn_name": "a"}]',
    ]
    slept: list[float] = []

    def tool(*args: Any, **options: Any) -> str:
        answer = answers.pop(0)
        if isinstance(answer, ctl.BrokerCtlError):
            raise answer
        return answer

    monkeypatch.setattr(ctl, "run_tool", tool)
    monkeypatch.setattr(ctl.time, "sleep", slept.append)
    assert ctl.list_stream_connections() == [{"conn_name": "a"}]
    assert slept == [0.1, 0.2]

    answers[:] = [ctl.BrokerCtlError(["rabbitmq-streams"], 69, "Error: nodedown")]
    with pytest.raises(ctl.BrokerCtlError, match="nodedown"):
        ctl.list_stream_connections()

    monkeypatch.setattr(ctl, "LISTING_PATIENCE", 0.0)
    answers[:] = [ctl.BrokerCtlError(["rabbitmq-streams"], 70, crash)]
    with pytest.raises(ctl.BrokerCtlError, match="function_clause"):
        ctl.list_stream_connections()
