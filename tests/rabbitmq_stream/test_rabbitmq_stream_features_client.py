"""The asyncio client's newer-broker features against the scripted broker claiming
RabbitMQ 3.13.0, served over TCP (tests.support.rabbitmq_stream_test_broker_server): what
``supports`` says, ``stream_stats``, filtering producers and consumers, single active
consumers taking over from each other, the committed chunk id of Deliver v2. (The real
3.10.8 broker: test_rabbitmq_stream_features_live.py.) About 2 s."""

from __future__ import annotations

import asyncio

from wirestream.generated.rabbitmq_stream.v1 import (
    ConsumerUpdateResponse,
    OffsetSpecFirst,
    OffsetSpecOffset,
    PublishV2,
    QueryOffsetRequest,
    SubscribeRequest,
)
from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rabbitmq_stream import Feature, UnsupportedByBroker
from wirestream.runtime.rabbitmq_stream.aio import Body, ReceivedMessage, connect
from wirestream.runtime.rabbitmq_stream.aio.consumer import subscription_properties
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_client_support import error_of, read, until
from tests.support.rabbitmq_stream_test_broker_server import TestBrokerServer


def region(body: Body) -> str | None:
    assert isinstance(body, bytes)
    return None if body.startswith(b"none") else body[:1].decode()


def only_a(message: ReceivedMessage) -> bool:
    return message.body.startswith(b"a")


def test_a_3_13_broker_offers_every_newer_feature() -> None:
    async def main() -> None:
        async with TestBrokerServer(version="3.13.0") as server:
            async with await connect(server.uri, reconnect=False) as client:
                assert client.broker_version == "3.13.0"
                assert all(client.supports(feature) for feature in Feature)
            async with TestBrokerServer(version="3.11.0") as older:
                async with await connect(older.uri, reconnect=False) as client:
                    assert client.supports("stream_stats") and client.supports("deliver_v2")
                    assert client.supports(Feature.SINGLE_ACTIVE_CONSUMER)
                    assert not client.supports("filtering")
                    error = await error_of(client.producer("s", filter_value=region))
                    assert isinstance(error, UnsupportedByBroker)
                    assert "3.13.0 or later; the broker is RabbitMQ 3.11.0" in str(error)

    run(main())


def test_stream_stats_answers_the_brokers_statistics() -> None:
    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("s")
                assert await client.stream_stats("s") == {
                    "first_chunk_id": -1,
                    "committed_chunk_id": -1,
                }
                producer = await client.producer("s")
                await producer.send_wait(b"1")
                await producer.send_wait(b"2")
                assert await client.stream_stats("s") == {
                    "first_chunk_id": 0,
                    "committed_chunk_id": 1,
                }

    run(main())


def test_a_filtering_consumer_reads_only_the_values_it_asked_for() -> None:
    """Publish v2 carries each message's filter value; the broker sends the chunks that
    hold the asked values (whole: here one chunk holds a, b and an unfiltered one) and
    post_filter keeps the wanted messages."""

    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("s")
                producer = await client.producer("s", filter_value=region, raw=True)
                await (await producer.send_many([b"a1", b"b1", b"none1"]))
                await producer.send_wait(b"b2")  # a chunk with no "a": never sent
                await producer.send_wait(b"a2")
                [(first, _), *_] = server.client_frames(PublishV2)
                assert [m.filter_value for m in first.published_messages] == ["a", "b", None]
                consumer = await client.consumer(
                    "s", "first", raw=True, filter=["a"], post_filter=only_a
                )
                assert [m.body for m in await read(consumer, 2)] == [b"a1", b"a2"]
                assert consumer.filtered_out == 2  # b1 and none1 came in a1's chunk
                assert consumer.buffered == 0
                unfiltered = await client.consumer(
                    "s", "first", raw=True, filter=["zz"], match_unfiltered=True,
                    post_filter=lambda m: m.body.startswith(b"none"),
                )  # fmt: skip
                assert [m.body for m in await read(unfiltered, 1)] == [b"none1"]

    run(main())


def test_filtering_needs_a_post_filter_and_excludes_sub_entry_batches() -> None:
    """Java: 'Both filter values and the filter logic must be set'; subEntrySize > 1
    with a filter value extractor is refused too."""

    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("s")
                error = await error_of(client.consumer("s", filter=["a"]))
                assert isinstance(error, ValueError) and "post_filter" in str(error)
                producer = await client.producer("s", filter_value=region)
                error = await error_of(producer.send_batch([b"a1", b"a2"]))
                assert isinstance(error, LocalProtocolError)

    run(main())


def test_the_committed_chunk_id_reaches_the_consumer() -> None:
    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("s")
                producer = await client.producer("s")
                for body in (b"1", b"2", b"3"):
                    await producer.send_wait(body)
                consumer = await client.consumer("s", "first")
                await read(consumer, 3)
                assert consumer.committed_chunk_id == 2

    run(main())


def test_one_single_active_consumer_reads_and_the_next_takes_over_after_the_stored_offset() -> None:
    """The first consumer of the group (stream, name) is activated and, nothing being
    stored, starts at its own offset; the second is passive and gets nothing; when the
    first leaves, the second is activated and resumes after the offset stored for the
    name (Java's default ConsumerUpdate answer: QueryOffset + 1)."""

    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("s")
                producer = await client.producer("s")
                await (await producer.send_many([b"m0", b"m1", b"m2"]))
                first = await client.consumer("s", "first", name="app", single_active=True)
                second = await client.consumer("s", "first", name="app", single_active=True)
                assert [m.body for m in await read(first, 2)] == [b"m0", b"m1"]
                assert first.is_active and not second.is_active
                [(update, _)] = server.client_frames(ConsumerUpdateResponse)
                assert update.offset_specification == OffsetSpecFirst()
                first.store_offset()  # m1
                await producer.send_wait(b"m3")
                await asyncio.sleep(0.05)
                assert second.buffered == 0
                await first.close()
                assert [m.body for m in await read(second, 2)] == [b"m2", b"m3"]
                assert second.is_active
                [_, (takeover, _)] = server.client_frames(ConsumerUpdateResponse)
                assert takeover.offset_specification == OffsetSpecOffset(2)
                queried = [f.reference for f, _ in server.client_frames(QueryOffsetRequest)]
                assert queried == ["app", "app"]

    run(main())


def test_a_consumer_stepped_down_drops_what_it_buffered_and_gets_nothing_more() -> None:
    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("s")
                producer = await client.producer("s")
                consumer = await client.consumer("s", "first", reference="app",
                                                 single_active=True)  # fmt: skip
                await producer.send_wait(b"m0")
                await until(lambda: consumer.buffered == 1)
                [served] = server.connections
                served.broker.consumer_update(consumer.subscription_id, False)
                served.writer.write(served.broker.data_to_send())
                await until(lambda: not consumer.is_active)
                assert consumer.buffered == 0
                await producer.send_wait(b"m1")
                await asyncio.sleep(0.05)
                assert consumer.buffered == 0

    run(main())


def test_a_single_active_consumer_on_a_partition_names_its_super_stream() -> None:
    """StreamConsumerBuilder.java: with single active consumer on a super stream, each
    partition's Subscribe carries 'super-stream' (the broker groups by partition)."""

    async def main() -> None:
        async with TestBrokerServer() as server:
            async with await connect(server.uri, reconnect=False) as client:
                await client.create_stream("orders-0")
                await client.consumer(
                    "orders-0", name="app", single_active=True, super_stream="orders"
                )
                [(subscribe, _)] = server.client_frames(SubscribeRequest)
                assert {p.key: p.value for p in subscribe.properties} == {
                    "name": "app",
                    "single-active-consumer": "true",
                    "super-stream": "orders",
                }

    run(main())


def test_subscription_properties_are_javas_names() -> None:
    assert subscription_properties("app") == {}  # a named consumer alone sends none
    assert subscription_properties(None, filter_values=["x", "y"], match_unfiltered=True) == {
        "filter.0": "x",
        "filter.1": "y",
        "match-unfiltered": "true",
    }
    for bad in ({"single_active": True}, {"filter_values": []}):
        try:
            subscription_properties(None, **bad)  # type: ignore[arg-type]
        except ValueError:
            continue
        raise AssertionError(bad)
