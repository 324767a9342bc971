"""Super streams on the real broker (RabbitMQ 3.10.8 on 127.0.0.1:5552) and with the
Java client (stream-client 1.11.0) as the other producer.

RabbitMQ 3.10.8 has Partitions and Route but not CreateSuperStream (3.13): the super
streams here are made with its CLI (``rabbitmq-streams add_super_stream``, tests/
rabbitmq_broker_ctl.py), once for the module: ``invoices-<id>`` with 3 partitions
(binding keys "0".."2") and ``regions-<id>`` with partitions per routing key (amer,
emea, apac); both are deleted at the end. Each test reads only what it wrote (its
consumers start at "next" before it produces, or at offsets it recorded).

Without a broker the module SKIPS (FAILS under CI=true). About 15 s, two JVM runs.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.rabbitmq_stream import (
    NoRouteFound,
    UnsupportedByBroker,
    StreamDoesNotExist,
)
from wirestream.runtime.rabbitmq_stream.aio import ReceivedMessage, RoutingMode, connect
from wirestream.runtime.rabbitmq_stream.events import Event
from wirestream.runtime.rabbitmq_stream.routing import hash_partition
from tests.support.aio_support import run
from tests.support.rabbitmq_broker_ctl import add_super_stream, delete_super_stream
from tests.support.rabbitmq_java_peer import rabbitmq_java, run_java_async  # noqa: F401
from tests.support.rabbitmq_stream_client_support import URI, error_of, read, unique

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

REGIONS = ("amer", "emea", "apac")


@dataclass(frozen=True)
class SuperStreams:
    invoices: str  # 3 partitions, hash routing
    regions: str  # one partition per routing key in REGIONS, key routing


@pytest.fixture(scope="module")
def super_streams() -> Iterator[SuperStreams]:
    names = SuperStreams(unique("ws-invoices"), unique("ws-regions"))
    add_super_stream(names.invoices, 3)
    try:
        add_super_stream(names.regions, routing_keys=REGIONS)
        try:
            yield names
        finally:
            delete_super_stream(names.regions)
    finally:
        delete_super_stream(names.invoices)


def key_of(body: bytes | object) -> str:
    """Bodies are "<who>:<index>:<routing key>" (the Java program writes them so too)."""
    assert isinstance(body, bytes)
    return body.decode().split(":", 2)[2]


def parse(message: ReceivedMessage) -> tuple[str, int, str]:
    who, index, key = message.body.decode().split(":", 2)
    return who, int(index), key


def test_create_super_stream_on_3_10_8_fails_fast_naming_the_version_and_the_cli() -> None:
    async def main() -> None:
        async with await connect(URI) as client:
            assert client.server_properties["version"] == "3.10.8"
            error = await error_of(client.create_super_stream(unique("ws-never"), 2))
            assert isinstance(error, UnsupportedByBroker), error
            assert "needs RabbitMQ 3.13" in str(error), error
            assert "the broker is RabbitMQ 3.10.8" in str(error), error
            assert "rabbitmq-streams add_super_stream NAME --partitions N" in str(error)
            error = await error_of(client.delete_super_stream(unique("ws-never")))
            assert isinstance(error, UnsupportedByBroker), error
            await client.metadata("x")  # the connection was not touched
            assert client.connections == 1

    run(main())


def test_3_10_8_ends_the_connection_on_a_CreateSuperStream_which_is_why_the_client_refuses() -> (
    None
):
    async def main() -> None:
        client = await connect(URI, reconnect=False)
        try:  # the engine's command, bypassing the client's version check
            name = unique("ws-never")
            error = await error_of(
                client.request(lambda e: e.create_super_stream(name, [f"{name}-0"], ["0"]), Event)
            )
            assert isinstance(error, ConnectionLost), error
            assert "code 13: unknown frame" in str(error)
        finally:
            await client.close()

    run(main())


def test_a_super_stream_that_does_not_exist_is_StreamDoesNotExist_for_both_ends() -> None:
    async def main() -> None:
        async with await connect(URI) as client:
            missing = unique("ws-missing")
            for call in (client.super_stream_producer(missing, routing=key_of),
                         client.super_stream_consumer(missing)):  # fmt: skip
                error = await error_of(call)
                assert isinstance(error, StreamDoesNotExist), error
                assert repr(missing) in str(error)
            assert not client.producers and not client.consumers

    run(main())


def test_hash_routing_puts_each_key_in_the_partition_murmur3_picks_in_order(
    super_streams: SuperStreams,
) -> None:
    keys = [f"order-{n}" for n in range(190)] + ["héllo-ünïcode", "日本", "", " "] + list("abcdef")

    async def main() -> None:
        async with await connect(URI) as client:
            partitions = await client.partitions(super_streams.invoices)
            assert len(partitions) == 3
            consumer = await client.super_stream_consumer(super_streams.invoices, "next")
            producer = await client.super_stream_producer(
                super_streams.invoices, routing=key_of, max_in_flight=64  # to each partition's
            )
            futures = [await producer.send(f"py:{n}:{key}".encode()) for n, key in enumerate(keys)]
            await asyncio.gather(*futures)
            assert {p.max_in_flight for p in producer.producers.values()} == {64}
            assert await producer.route(b"py:0:order-0") == (hash_partition("order-0", partitions),)
            assert set(producer.producers) == set(partitions)  # one producer per partition
            await producer.close()
            messages = await read(consumer, len(keys))
            await consumer.close()
            assert not client.consumers  # every partition unsubscribed
        for message in messages:
            _, _, key = parse(message)
            assert message.stream == hash_partition(key, partitions), (key, message.stream)
        for partition in partitions:  # each partition in the order sent
            indexes = [parse(m)[1] for m in messages if m.stream == partition]
            assert indexes == sorted(indexes) and indexes
        assert sorted(parse(m)[1] for m in messages) == list(range(len(keys)))

    run(main())


def test_key_routing_lands_in_the_partition_bound_to_the_key_and_an_unbound_key_fails(
    super_streams: SuperStreams,
) -> None:
    keys = [REGIONS[n % 3] for n in range(30)]

    async def main() -> None:
        async with await connect(URI) as client:
            consumer = await client.super_stream_consumer(super_streams.regions, "next")
            producer = await client.super_stream_producer(
                super_streams.regions, routing=key_of, routing_mode="key"
            )
            for n, key in enumerate(keys):
                await producer.send(f"py:{n}:{key}".encode())
            await producer.flush()
            async with asyncio.timeout(5):  # an answer, not a hang
                error = await error_of(producer.send(b"py:99:moon"))
            assert isinstance(error, NoRouteFound), error
            assert "routing key 'moon'" in str(error)
            await producer.close()
            messages = await read(consumer, len(keys))
            await consumer.close()
        for message in messages:
            assert message.stream == f"{super_streams.regions}-{parse(message)[2]}"

    run(main())


def test_deduplication_is_per_partition_with_one_reference_and_resent_messages_are_dropped(
    super_streams: SuperStreams,
) -> None:
    reference = unique("ws-dedup")
    keys = [f"k{n}" for n in range(90)]

    async def main() -> None:
        async with await connect(URI) as client:
            consumer = await client.super_stream_consumer(super_streams.invoices, "next")
            first = await client.super_stream_producer(
                super_streams.invoices, routing=key_of, reference=reference
            )
            for n in range(60):  # application ids 1..60 across the partitions
                await first.send(f"py:{n + 1}:{keys[n]}".encode(), publishing_id=n + 1)
            await first.close()
            partitions = await client.partitions(super_streams.invoices)
            for partition in partitions:  # each partition holds the highest id routed there
                routed = [
                    n + 1 for n in range(60) if hash_partition(keys[n], partitions) == partition
                ]
                assert await client.query_publisher_sequence(reference, partition) == max(routed)
            # The smallest of the partitions' sequences: every id up to it is stored.
            last = await first.last_publishing_id()
            assert last == min(
                [await client.query_publisher_sequence(reference, p) for p in partitions]
            )
            assert 0 < last <= 60
            # A restarted producer re-sends everything (ids 1..90): the broker drops each
            # id its partition already holds -- all of 1..60 -- and stores 61..90.
            again = await client.super_stream_producer(
                super_streams.invoices, routing=key_of, reference=reference
            )
            assert await again.last_publishing_id() == last
            futures = [
                await again.send(f"py:{n + 1}:{keys[n]}".encode(), publishing_id=n + 1)
                for n in range(90)
            ]
            assert await asyncio.gather(*futures) == list(range(1, 91))  # all confirmed
            await again.close()
            messages = await read(consumer, 90)
            await asyncio.sleep(0.3)  # a duplicate would arrive by now
            assert consumer.buffered == 0, "a re-sent message was stored twice"
            await consumer.close()
        assert sorted(parse(m)[1] for m in messages) == list(range(1, 91))

    run(main())


def test_each_partition_resumes_after_the_offset_stored_for_it(
    super_streams: SuperStreams,
) -> None:
    reference = unique("ws-resume")

    async def main() -> None:
        async with await connect(URI) as client:
            consumer = await client.super_stream_consumer(super_streams.invoices, "next")
            producer = await client.super_stream_producer(super_streams.invoices, routing=key_of)
            for n in range(45):
                await producer.send(f"py:{n}:r{n}".encode())
            await producer.close()
            messages = await read(consumer, 45)
            await consumer.close()
            by_partition: dict[str, list[ReceivedMessage]] = {}
            for message in messages:
                by_partition.setdefault(message.stream, []).append(message)
            assert len(by_partition) == 3
            # Per partition a different point: after its 1st, 2nd, 3rd... message.
            stored_consumer = await client.super_stream_consumer(
                super_streams.invoices, "last", reference=reference
            )
            stored = {}
            for rank, (partition, got) in enumerate(sorted(by_partition.items())):
                stored[partition] = got[rank].offset
                stored_consumer.store_offset(partition, got[rank].offset)
            await stored_consumer.close()
            for partition, offset in stored.items():
                assert await client.query_offset(reference, partition) == offset
            # "first" is overridden by each partition's stored offset (Java: stored + 1).
            resumed = await client.super_stream_consumer(
                super_streams.invoices, "first", reference=reference
            )
            assert resumed.started_at == {p: o + 1 for p, o in stored.items()}
            expected = sum(len(got) - rank - 1 for rank, (_, got) in
                           enumerate(sorted(by_partition.items())))  # fmt: skip
            again = await read(resumed, expected)
            await resumed.close()
        for partition, got in by_partition.items():
            tail = [m.body for m in got if m.offset > stored[partition]]
            assert [m.body for m in again if m.stream == partition] == tail

    run(main())


def test_java_and_our_producers_route_every_key_to_the_same_partition(
    super_streams: SuperStreams, rabbitmq_java: str
) -> None:
    """200 keys by hash (invoices) and 200 by Route (regions), from the Java client's
    super stream producer and from ours; our super stream consumer reads every one,
    per partition in the order each producer sent."""
    rng = random.Random(19)
    hash_keys = [f"customer-{rng.randrange(10**6)}" for _ in range(195)] + [
        "é",
        "ü-ñ",
        "𝄞",
        "x",
        "",
    ]
    region_keys = [rng.choice(REGIONS) for _ in range(200)]

    async def main() -> None:
        async with await connect(URI) as client:
            runs: list[tuple[str, RoutingMode, list[str]]] = [
                (super_streams.invoices, "hash", hash_keys),
                (super_streams.regions, "key", region_keys),
            ]
            for super_stream, mode, keys in runs:
                consumer = await client.super_stream_consumer(super_stream, "next")
                [answer] = await run_java_async(
                    rabbitmq_java, "SuperPublish", URI, super_stream, mode,
                    stdin="".join(f"{key}\n" for key in keys).encode(),
                )  # fmt: skip
                assert answer == {"sent": 200, "confirmed": 200, "failed": 0}
                producer = await client.super_stream_producer(
                    super_stream, routing=key_of, routing_mode=mode
                )
                for n, key in enumerate(keys):
                    await producer.send(f"py:{n}:{key}".encode())
                await producer.close()
                messages = await read(consumer, 400, timeout=30)
                await consumer.close()
                check_same_partitions(messages, keys)

    run(main(), timeout=120)


def check_same_partitions(messages: list[ReceivedMessage], keys: list[str]) -> None:
    where: dict[str, dict[int, str]] = {"java": {}, "py": {}}
    order: dict[tuple[str, str], list[int]] = {}
    for message in messages:
        who, index, key = parse(message)
        assert keys[index] == key
        where[who][index] = message.stream
        order.setdefault((who, message.stream), []).append(index)
    assert sorted(where["java"]) == sorted(where["py"]) == list(range(len(keys)))
    assert where["java"] == where["py"]  # every key: the same partition
    assert len(set(where["py"].values())) == 3  # and the keys spread over all three
    for indexes in order.values():  # each partition: the order each producer sent
        assert indexes == sorted(indexes)
