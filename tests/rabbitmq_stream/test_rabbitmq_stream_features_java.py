"""Our frames for the newer-broker features, byte for byte against RabbitMQ's Java
client (stream-client 1.11.0) making the same calls through its public API.

The broker here is 3.10.8, which has none of these commands, so both clients talk to the
scripted broker claiming 3.13.0 (tests.support.rabbitmq_stream_test_broker_server), which keeps
the exact bytes of every frame a client sends. tests/support/java/rabbitmq FeatureFrames.java: a
producer with ``filterValue`` sends three messages (application property "region" a, b,
none), ``queryStreamStats``, a named single active consumer from "first" filtering on
"a" with a post filter. Then our client does the same: ``producer(filter_value=...)``,
``stream_stats``, ``consumer(name=..., single_active=True, filter=["a"],
post_filter=...)``. Compared frame by frame, exact bytes, except what each client
numbers its own way:

- correlation ids (bytes 8..11 of a request; each client counts its own);
- publishing ids (Java's producer without a name starts at 0, ours at 1);
- the Subscribe's subscription id (byte 12) and the order of its properties (Java keeps
  them in a ConcurrentHashMap, so they go in its hash order; the broker reads a map):
  the same (key, value) pairs, each encoded identically.

Everything else -- keys, versions, the ExchangeCommandVersions list, filter values
(null string for none), the AMQP message bytes, Subscribe offset/credit/properties, the
ConsumerUpdateResponse (with the broker's correlation id) -- is the same bytes. One JVM
run; about 4 s.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wirestream.generated.rabbitmq_stream.v1 import (
    ConsumerUpdateResponse,
    ExchangeCommandVersionsRequest,
    OffsetSpecFirst,
    PublishV2,
    QueryOffsetRequest,
    StreamStatsRequest,
    SubscribeRequest,
)
from wirestream.runtime.rabbitmq_stream.aio import Body, ReceivedMessage, connect
from wirestream.runtime.rabbitmq_stream.amqp import AmqpMessage, decode_message
from tests.support.aio_support import run
from tests.support.rabbitmq_java_peer import rabbitmq_java, run_java_async  # noqa: F401
from tests.support.rabbitmq_stream_client_support import read
from tests.support.rabbitmq_stream_test_broker_server import TestBrokerServer

STREAM = "features"


def _region(body: Body) -> str | None:
    """Our ``filter_value``: FeatureFrames.region (the "region" application property)."""
    if isinstance(body, AmqpMessage) and body.application_properties:
        value = body.application_properties.get("region")
        return value if isinstance(value, str) else None
    return None


def _without_correlation_id(raw: bytes) -> bytes:
    return raw[:8] + b"\0\0\0\0" + raw[12:]


def _without_publishing_ids(raw: bytes) -> bytes:
    """PublishV2: size, key, version, publisher id, count, then per message
    PublishingId(8) FilterValue(int16 + bytes) Message(int32 + bytes)."""
    out = bytearray(raw)
    count = int.from_bytes(raw[9:13], "big")
    position = 13
    for _ in range(count):
        out[position : position + 8] = bytes(8)
        position += 8
        length = int.from_bytes(raw[position : position + 2], "big", signed=True)
        position += 2 + max(0, length)
        position += 4 + int.from_bytes(raw[position : position + 4], "big")
    assert position == len(raw)
    return bytes(out)


def _subscribe_parts(raw: bytes) -> tuple[bytes, set[bytes]]:
    """A Subscribe without correlation and subscription ids, and its properties as a set
    of their exact encodings (int16 length + key, int16 length + value)."""
    head = _without_correlation_id(raw)
    head = head[:12] + b"\0" + head[13:]
    position = 13 + 2 + int.from_bytes(raw[13:15], "big")  # stream
    offset_type = int.from_bytes(raw[position : position + 2], "big")
    position += 2 + (8 if offset_type in (4, 5) else 0) + 2  # offset spec, credit
    count = int.from_bytes(raw[position : position + 4], "big")
    fixed, position = head[: position + 4], position + 4
    properties: set[bytes] = set()
    for _ in range(count):
        start = position
        for _ in range(2):
            position += 2 + int.from_bytes(raw[position : position + 2], "big")
        properties.add(raw[start:position])
    assert position == len(raw)
    return fixed, properties


async def _our_side(java_groups: list[list[tuple[Body, str | None]]]) -> list[Any]:
    """The calls FeatureFrames makes, with our client; returns what the consumer read."""
    async with TestBrokerServer() as server:
        async with await connect(server.uri, reconnect=False) as client:
            await client.create_stream(STREAM)
            producer = await client.producer(STREAM, filter_value=_region)
            for group in java_groups:  # the same messages per Publish frame as Java
                await (await producer.send_many([body for body, _ in group]))
            stats = await client.stream_stats(STREAM)

            def only_a(message: ReceivedMessage) -> bool:
                return _region(message.amqp) == "a"

            consumer = await client.consumer(
                STREAM, "first", name="feature-app", single_active=True,
                filter=["a"], post_filter=only_a,
            )  # fmt: skip
            received = [message.body.decode() for message in await read(consumer, 1)]
            await asyncio.sleep(0.3)  # as FeatureFrames: anything else would be here now
            assert consumer.buffered == 0
            # what came along with "a" in its chunk (Java sends 1 or 2 Publish frames)
            assert consumer.filtered_out == len(java_groups[0]) - 1
            await consumer.close()
            await producer.close()
        assert not server.errors, server.errors
        return [server, stats, received]


def test_newer_feature_frames_are_byte_for_byte_the_java_clients(rabbitmq_java: str) -> None:
    async def main() -> None:
        async with TestBrokerServer() as java:
            [answer] = await run_java_async(rabbitmq_java, "FeatureFrames", java.uri, STREAM)
        assert not java.errors, java.errors
        java_publish = java.client_frames(PublishV2)
        # one chunk per Publish frame at the scripted broker; a chunk id is its first offset
        last_chunk_id = 3 - len(java_publish[-1][0].published_messages)
        assert answer == {
            "confirmed": 3,
            "stats": {"first_chunk_id": 0, "committed_chunk_id": last_chunk_id},
            "received": ["body-a"],
        }
        groups = [
            [(decode_message(m.message or b""), m.filter_value) for m in frame.published_messages]
            for frame, _ in java_publish
        ]
        assert [value for group in groups for _, value in group] == ["a", "b", None]
        ours, stats, received = await _our_side(groups)

        # what the calls returned
        assert stats == answer["stats"]
        assert received == answer["received"]

        # ExchangeCommandVersions (every connection sends the same: Deliver 1..2)
        [java_versions, *_], [our_versions] = (
            [raw for _, raw in side.client_frames(ExchangeCommandVersionsRequest)]
            for side in (java, ours)
        )
        assert _without_correlation_id(our_versions) == _without_correlation_id(java_versions)
        assert our_versions[12:] == bytes.fromhex("00000001" "0008" "0001" "0002")

        # StreamStats
        [(_, java_stats)] = java.client_frames(StreamStatsRequest)
        [(_, our_stats)] = ours.client_frames(StreamStatsRequest)
        assert _without_correlation_id(our_stats) == _without_correlation_id(java_stats)

        # Publish v2: filter values, null string for none, the AMQP bytes, the framing
        our_publish = ours.client_frames(PublishV2)
        assert len(our_publish) == len(java_publish)
        for (_, mine), (_, theirs) in zip(our_publish, java_publish):
            assert _without_publishing_ids(mine) == _without_publishing_ids(theirs)

        # Subscribe: single-active-consumer, name, filter.0, match-unfiltered, credit 10
        [(java_subscribe, java_raw)] = java.client_frames(SubscribeRequest)
        [(our_subscribe, our_raw)] = ours.client_frames(SubscribeRequest)
        assert _subscribe_parts(our_raw) == _subscribe_parts(java_raw)
        assert our_subscribe.offset_specification == OffsetSpecFirst()
        assert {p.key: p.value for p in our_subscribe.properties} == {
            "name": "feature-app",
            "single-active-consumer": "true",
            "filter.0": "a",
            "match-unfiltered": "false",
        }

        # ConsumerUpdateResponse: the broker's correlation id, OK, 'first' (no stored offset)
        [(_, java_update)] = java.client_frames(ConsumerUpdateResponse)
        [(_, our_update)] = ours.client_frames(ConsumerUpdateResponse)
        assert our_update == java_update

        # The stored-offset lookup behind that answer (QueryOffset for the name)
        java_queries = {
            _without_correlation_id(raw) for _, raw in java.client_frames(QueryOffsetRequest)
        }
        [(_, our_query)] = ours.client_frames(QueryOffsetRequest)
        assert java_queries == {_without_correlation_id(our_query)}  # fmt: skip

    run(main(), timeout=200.0)
