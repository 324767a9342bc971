"""Creating and deleting super streams over the stream protocol (CreateSuperStream 0x001d,
DeleteSuperStream 0x001e: RabbitMQ 3.13+), and what the client does before 3.13.

The broker is the scripted ``TestBroker`` over TCP (no 3.13 broker runs here), claiming
version 3.13.0 (answers the commands as rabbit_stream_reader.erl does) or 3.10.8 (closes
the connection on them, as the real 3.10.8 does: test_rabbitmq_super_streams.py shows
it live). The frames are checked byte for byte against PROTOCOL.adoc's layout, written
out here with ``struct``. Also here, because a fake can bind one key to two partitions
(the CLI cannot): key routing sends a copy to each. About 1 s.
"""

from __future__ import annotations

import struct

from wirestream.runtime.rabbitmq_stream import (
    NoRouteFound,
    UnsupportedByBroker,
    StreamAlreadyExists,
    StreamDoesNotExist,
)
from wirestream.runtime.rabbitmq_stream.aio import connect
from wirestream.generated.rabbitmq_stream.v1 import (
    CreateSuperStreamRequest,
    DeleteSuperStreamRequest,
    frame_bytes,
)
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_client_support import error_of, read
from tests.support.rabbitmq_stream_test_broker import TestBroker
from tests.support.rabbitmq_stream_test_broker_server import TestBrokerServer


def string(text: str) -> bytes:
    """'string => int16 length, UTF-8 bytes'."""
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def strings(items: list[str]) -> bytes:
    """'[string]': an int32 count, then the items."""
    return struct.pack(">i", len(items)) + b"".join(string(item) for item in items)


def test_create_super_stream_frame_is_name_partitions_keys_arguments_as_the_spec_says() -> None:

    async def main() -> None:
        async with TestBrokerServer(version="3.13.0") as server:
            async with await connect(server.uri, reconnect=False) as client:
                partitions = await client.create_super_stream(
                    "invoices", 3, arguments={"max-length-bytes": 10**9}
                )
                assert partitions == ("invoices-0", "invoices-1", "invoices-2")
                assert await client.partitions("invoices") == partitions
                assert await client.route("1", "invoices") == ("invoices-1",)
            [request] = [
                f
                for f in server.connections[0].broker.frames
                if isinstance(f, CreateSuperStreamRequest)
            ]
            # 'CreateSuperStream => Key Version CorrelationId Name [Partition] [BindingKey]
            # Arguments', behind the uint32 frame size.
            body = (
                struct.pack(">HHI", 0x001D, 1, request.correlation_id)
                + string("invoices")
                + strings(["invoices-0", "invoices-1", "invoices-2"])
                + strings(["0", "1", "2"])
                + struct.pack(">i", 1) + string("max-length-bytes") + string("1000000000")
            )  # fmt: skip
            assert frame_bytes(request) == struct.pack(">I", len(body)) + body

    run(main())


def test_binding_keys_name_the_partitions_after_the_keys_as_the_java_client_does() -> None:
    async def main() -> None:
        async with TestBrokerServer(version="3.13.0") as server:
            async with await connect(server.uri, reconnect=False) as client:
                partitions = await client.create_super_stream(
                    "regions", binding_keys=["amer", "emea", "apac"]
                )
                assert partitions == ("regions-amer", "regions-emea", "regions-apac")
                assert await client.route("emea", "regions") == ("regions-emea",)
                # Neither: 3 partitions (StreamStreamCreator.java DefaultSuperStreamConfiguration)
                assert len(await client.create_super_stream("three")) == 3
            [request, _] = [
                f
                for f in server.connections[0].broker.frames
                if isinstance(f, CreateSuperStreamRequest)
            ]
            assert request.binding_keys == ["amer", "emea", "apac"]

    run(main())


def test_delete_super_stream_sends_its_name_and_the_partitions_go_with_it() -> None:
    async def main() -> None:
        async with TestBrokerServer(version="3.13.0") as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_super_stream("gone", 2)
                await client.delete_super_stream("gone")
                assert not await client.stream_exists("gone-0")
                assert isinstance(await error_of(client.partitions("gone")), StreamDoesNotExist)
            [request] = [
                f
                for f in server.connections[0].broker.frames
                if isinstance(f, DeleteSuperStreamRequest)
            ]
            body = struct.pack(">HHI", 0x001E, 1, request.correlation_id) + string("gone")
            assert frame_bytes(request) == struct.pack(">I", len(body)) + body

    run(main())


def test_the_brokers_refusals_are_precise_errors_and_exist_ok_missing_ok_absorb_them() -> None:
    async def main() -> None:
        async with TestBrokerServer(version="3.13.0") as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_super_stream("twice", 2)
                error = await error_of(client.create_super_stream("twice", 2))
                assert isinstance(error, StreamAlreadyExists), error
                assert "'twice'" in str(error)
                await client.create_super_stream("twice", 2, exist_ok=True)
                error = await error_of(client.delete_super_stream("never"))
                assert isinstance(error, StreamDoesNotExist), error
                await client.delete_super_stream("never", missing_ok=True)
                for bad in ({"partitions": 0}, {"binding_keys": []}, {"binding_keys": ["a", "a"]},
                            {"partitions": 2, "binding_keys": ["a", "b"]}):  # fmt: skip
                    error = await error_of(client.create_super_stream("bad", **bad))  # type: ignore[arg-type]
                    assert isinstance(error, ValueError), (bad, error)
                assert client.is_open

    run(main())


def test_before_313_the_client_refuses_naming_the_broker_version_and_sends_nothing() -> None:

    async def main() -> None:
        async with TestBrokerServer(version="3.10.8") as server:
            async with await connect(server.uri, reconnect=False) as client:
                for call in (client.create_super_stream("s", 2), client.delete_super_stream("s")):
                    error = await error_of(call)
                    assert isinstance(error, UnsupportedByBroker), error
                    assert error.broker_version == "3.10.8" and error.since.startswith("3.13")
                    assert error.feature == "super_stream_management"
                    assert "needs RabbitMQ 3.13" in str(error) and "RabbitMQ 3.10.8" in str(error)
                    assert "rabbitmq-streams add_super_stream NAME --partitions N" in str(error)
                assert client.is_open  # nothing was sent: the connection lives on
                await client.metadata("anything")
            assert not [
                f for f in server.connections[0].broker.frames
                if isinstance(f, (CreateSuperStreamRequest, DeleteSuperStreamRequest))
            ]  # fmt: skip

    run(main())


def test_a_key_bound_to_two_partitions_sends_a_copy_to_each_and_confirms_once_both_are() -> None:
    async def main() -> None:
        async with TestBrokerServer(version="3.13.0") as server:
            fan = [("fan-a", "k"), ("fan-b", "k"), ("fan-c", "other")]
            TestBroker(state=server.state).add_super_stream("fan", fan)
            async with await connect(server.uri, reconnect=False) as client:
                producer = await client.super_stream_producer(
                    "fan", routing=lambda body: bytes(body).decode(), routing_mode="key"
                )
                assert await producer.route(b"k") == ("fan-a", "fan-b")
                assert await producer.send_wait(b"k") == 1
                error = await error_of(producer.send(b"nowhere"))
                assert isinstance(error, NoRouteFound), error
                assert error.routing_key == "nowhere" and error.super_stream == "fan"
                await producer.close()
                consumer = await client.super_stream_consumer("fan", "first")
                got = await read(consumer, 2)
                assert sorted((m.stream, m.body) for m in got) == [
                    ("fan-a", b"k"), ("fan-b", b"k")
                ]  # fmt: skip
                await consumer.close()

    run(main())
