"""Sub-entry batching: the engine's ``publish_sub_entries`` bytes, and the producer's
``sub_entry_size`` + ``compression`` (the Java client's ``subEntrySize`` +
``compression``) against the real broker, every codec.

The broker tests need RabbitMQ on 127.0.0.1:5552 (``make broker``): without it they
SKIP, unless CI=true, where they FAIL. The wire is read through ``FrameCapture`` (a
recording proxy), not inferred.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.aio_support import run
from tests.support.rabbitmq_stream_capture import FrameCapture
from tests.support.rabbitmq_stream_client_support import (
    URI,
    error_of,
    fresh_stream,
    read,
    unique,
    until,
    uri,
)
from tests.support.rabbitmq_stream_test_broker import with_stream
from tests.support.engine_pair import shuttle
from wirestream.generated.rabbitmq_stream.v1 import (
    CompressionType,
    Publish,
    PublishedMessage,
    SubEntryBatch,
    frame_bytes,
)
from wirestream.runtime.rabbitmq_stream import (
    BatchTooLarge,
    MessageTooLarge,
    PublishConfirmed,
    PublisherDeclared,
    chunk_records,
    decode_entries,
    sub_entry_batch,
)
from wirestream.runtime.rabbitmq_stream.aio import connect

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


# --- the engine (no broker) --------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.binary(max_size=80), min_size=1, max_size=5),
            st.sampled_from(list(CompressionType)),
        ),
        max_size=12,
    ),
    st.sampled_from([0, 200, 600]),
    st.integers(min_value=1, max_value=2**40),
)
def test_sub_entry_publish_bytes_equal_the_generated_encoding(
    spec: list[tuple[list[bytes], CompressionType]], frame_max: int, first_id: int
) -> None:
    """The engine writes Publish frames of sub-entry batches directly; the bytes are
    exactly the generated codec's for the same frames, split at frame_max, one
    publishing id per batch ('<<PublishingId:64, 1:1, CompressionType:3, 0:4,
    MessageCount:16, UncompressedSize:32, BatchSize:32, Batch>>')."""
    client, broker = with_stream()
    client.declare_publisher(0, "s", max_in_flight=100, first_publishing_id=first_id)
    shuttle(client, broker)
    client.data_to_send()
    client.frame_max = frame_max
    batches = [sub_entry_batch(messages, kind) for messages, kind in spec]
    if any(13 + 8 + 11 + len(b.data) > (frame_max or 2**32) for b in batches):
        with pytest.raises(MessageTooLarge):
            client.publish_sub_entries(0, batches)
        assert client.data_to_send() == b"" and client.unconfirmed(0) == 0
        return
    ids = client.publish_sub_entries(0, batches)
    assert ids == list(range(first_id, first_id + len(batches)))
    assert client.unconfirmed(0) == len(batches) and client.publish_capacity(0) == 100 - len(ids)
    expected: list[bytes] = []
    frame: list[PublishedMessage] = []
    for pid, batch in zip(ids, batches):
        entry = PublishedMessage(pid, batch)
        if frame_max and frame and len(frame_bytes(Publish(0, [*frame, entry]))) > frame_max:
            expected.append(frame_bytes(Publish(0, frame)))
            frame = []
        frame.append(entry)
    if frame:
        expected.append(frame_bytes(Publish(0, frame)))
    assert client.data_to_send() == b"".join(expected)


def test_sub_entry_batches_confirmed_and_read_back_through_the_test_broker() -> None:
    """Batches of every codec under ids 10, 20, 30...: each confirmed by its id, the
    chunk holds one entry per batch and every record in order."""
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    events, _ = shuttle(client, broker)
    assert isinstance(events[0], PublisherDeclared)
    batches = [sub_entry_batch([b"%d-%d" % (k, i) for i in range(10)], k) for k in CompressionType]
    ids = client.publish_sub_entries(0, batches, publishing_ids=[10, 20, 30, 40, 50])
    events, _ = shuttle(client, broker)
    assert events == [PublishConfirmed(0, tuple(ids))]
    chunk = broker.streams["s"].chunks[0]
    assert [e.compression for e in decode_entries(chunk.data)] == list(CompressionType)
    assert chunk_records(chunk) == [b"%d-%d" % (k, i) for k in CompressionType for i in range(10)]


# --- the producer against the broker ---------------------------------------------------


def _batches(cap: FrameCapture) -> list[SubEntryBatch]:
    """Every sub-entry batch the client published, in order, as the proxy saw them."""
    return [
        entry.entry
        for frame in cap.client_frames
        if isinstance(frame, Publish)
        for entry in frame.published_messages
        if isinstance(entry.entry, SubEntryBatch)
    ]


@pytest.mark.usefixtures("rabbitmq_broker")
@pytest.mark.parametrize("codec", CODECS)
def test_send_groups_messages_into_sub_entry_batches_of_sub_entry_size(codec: str) -> None:
    """``sub_entry_size=10``: 25 messages sent back to back leave as batches of 10, 10
    and 5 (the last closed at the end of the loop turn), compressed with ``codec``,
    each under its last message's publishing id (SubEntryMessageAccumulator.java); every
    message's future resolves with its own id; the stream holds them in order."""

    async def main() -> None:
        async with FrameCapture() as cap, await connect(uri(cap.port)) as client:
            async with fresh_stream(client, prefix="ws-sub-entry") as stream:
                producer = await client.producer(stream, sub_entry_size=10, compression=codec)
                futures = [await producer.send(b"message %d" % i) for i in range(25)]
                assert [await f for f in futures] == list(range(1, 26))
                assert producer.last_confirmed == 25 and producer.unconfirmed == 0
                batches = _batches(cap)
                assert [b.num_records for b in batches] == [10, 10, 5]
                assert {b.compression.name.lower() for b in batches} == {codec}
                ids = [
                    entry.publishing_id
                    for frame in cap.client_frames
                    if isinstance(frame, Publish)
                    for entry in frame.published_messages
                ]
                assert ids == [10, 20, 25]
                consumer = await client.consumer(stream, "first")
                messages = await read(consumer, 25)
                assert [m.body for m in messages] == [b"message %d" % i for i in range(25)]
                assert [m.offset for m in messages] == list(range(25))

    run(main(), timeout=60)


@pytest.mark.usefixtures("rabbitmq_broker")
def test_send_many_in_sub_entries_confirms_every_message_with_its_own_id() -> None:
    """``send_many`` of 2,500 messages with ``sub_entry_size=100`` + zstd: 25 batches,
    ``BatchConfirmation`` counts 2,500 confirmed messages with ids 1..2500; a
    reference's sequence is then the last message's id (as the Java client's)."""

    async def main() -> None:
        async with FrameCapture() as cap, await connect(uri(cap.port)) as client:
            async with fresh_stream(client, prefix="ws-sub-entry") as stream:
                reference = unique("ws-sub-entry-ref")
                producer = await client.producer(
                    stream, reference=reference, sub_entry_size=100, compression="zstd"
                )
                bodies = [os.urandom(50) for _ in range(2_500)]
                confirmation = await producer.send_many(bodies)
                await confirmation
                assert confirmation.confirmed == 2_500 and not confirmation.errors
                assert confirmation.publishing_ids == list(range(1, 2_501))
                assert [b.num_records for b in _batches(cap)] == [100] * 25
                await producer.close()
                assert await client.query_publisher_sequence(reference, stream) == 2_500
                consumer = await client.consumer(stream, "first")
                assert [m.body for m in await read(consumer, 2_500)] == bodies

    run(main(), timeout=60)


@pytest.mark.usefixtures("rabbitmq_broker")
def test_sub_entry_producer_continues_a_references_sequence_and_send_batch_fits_between() -> None:
    """A second producer with the same reference continues after the stored sequence;
    ``send_batch`` (its own codec, one id) closes the open batch first, so ids keep
    increasing: 1..5 (a batch), 6 (send_batch), 7..8 (a batch)."""

    async def main() -> None:
        async with await connect(URI) as client:
            async with fresh_stream(client, prefix="ws-sub-entry") as stream:
                reference = unique("ws-sub-entry-ref")
                producer = await client.producer(
                    stream, reference=reference, sub_entry_size=10, compression="lz4"
                )
                first = [await producer.send(b"a%d" % i) for i in range(5)]
                batch = await producer.send_batch([b"b0", b"b1"], compression="snappy")
                last = [await producer.send(b"c%d" % i) for i in range(2)]
                assert [await f for f in first] == [1, 2, 3, 4, 5]
                assert await batch == 6 and [await f for f in last] == [7, 8]
                await producer.close()
                again = await client.producer(
                    stream, reference=reference, sub_entry_size=3, compression="gzip"
                )
                assert await (await again.send(b"d0")) == 9
                await again.close()
                consumer = await client.consumer(stream, "first")
                bodies = [m.body for m in await read(consumer, 10)]
                assert bodies == [
                    b"a0",
                    b"a1",
                    b"a2",
                    b"a3",
                    b"a4",
                    b"b0",
                    b"b1",
                    b"c0",
                    b"c1",
                    b"d0",
                ]

    run(main(), timeout=60)


@pytest.mark.usefixtures("rabbitmq_broker")
def test_sub_entry_batch_over_frame_max_fails_its_messages_with_message_too_large() -> None:
    """A batch whose Publish frame would exceed the negotiated frame_max (4 KiB here):
    each of its messages fails with ``MessageTooLarge`` (the Java client refuses such a
    batch too); the producer goes on with smaller ones."""

    async def main() -> None:
        async with await connect(URI, frame_max=4096) as client:
            async with fresh_stream(client, prefix="ws-sub-entry") as stream:
                producer = await client.producer(stream, sub_entry_size=10)
                futures = [await producer.send(os.urandom(1_000)) for _ in range(10)]
                for future in futures:
                    assert isinstance(await error_of(future), MessageTooLarge)
                assert await (await producer.send(b"small")) == 11
                await producer.close()

    run(main(), timeout=60)


@pytest.mark.parametrize(
    "options, message",
    [({"compression": "zstd"}, "needs sub_entry_size > 1"),
     ({"sub_entry_size": 5, "compression": "brotli"}, "none of none, gzip"),
     ({"sub_entry_size": 0}, "not 1..65535"),
     ({"sub_entry_size": 65_536}, "not 1..65535")],
)  # fmt: skip
@pytest.mark.usefixtures("rabbitmq_broker")
def test_producer_options_out_of_range_are_value_errors(
    options: dict[str, Any], message: str
) -> None:
    """As StreamProducerBuilder.java: compression only with sub-entry batching
    ('Sub-entry batching must be enabled to enable compression'); 'NumRecs:16' bounds
    the batch; a codec must be one of the five."""

    async def main() -> None:
        async with await connect(URI) as client:
            async with fresh_stream(client, prefix="ws-sub-entry") as stream:
                error = await error_of(client.producer(stream, **options))
                assert isinstance(error, ValueError) and message in str(error), error
                assert not client.producers

    run(main(), timeout=30)


@pytest.mark.usefixtures("rabbitmq_broker")
def test_sub_entry_batches_survive_network_resets_with_each_message_stored_once() -> None:
    """Recovery with batches: held batches (compressed once) are re-sent under the same
    ids after two network resets; with a reference the broker stores each message once
    and every future resolves with its own id."""

    async def main() -> None:
        count = 6_000
        async with await connect(URI, reconnect=False) as admin:
            async with fresh_stream(admin, prefix="ws-sub-entry") as stream:
                async with FrameCapture() as cap, await connect(uri(cap.port)) as client:
                    producer = await client.producer(
                        stream, reference=unique("ws-sub-entry-ref"), sub_entry_size=50,
                        compression="gzip",
                    )  # fmt: skip
                    futures = []
                    for index in range(count):
                        futures.append(await producer.send(b"%08d" % index))
                        if index in (1_500, 4_000):
                            cap.close_all()  # batches just sent are unconfirmed here
                            reconnected = client.connections + 1
                            await until(lambda: client.connections == reconnected)
                    await producer.flush()
                    assert [f.result() for f in futures] == list(range(1, count + 1))
                    assert client.connections == 3 and producer.resent > 0
                    await producer.close()
                consumer = await admin.consumer(stream, "first")
                seen = [int(m.body) for m in await read(consumer, count)]
                assert seen == list(range(count))
                nothing_more = await error_of(read(consumer, 1, timeout=1.0))
                assert isinstance(nothing_more, TimeoutError), "a message stored twice"
                await consumer.close()

    run(main(), timeout=90)


@pytest.mark.usefixtures("rabbitmq_broker")
def test_a_message_over_frame_max_fails_its_own_future_only() -> None:
    """``send(small); send(big); send(small)`` in one loop turn, and ``send_many([a,
    big, c])``: the big ones fail with ``MessageTooLarge``, the others are stored and
    confirmed (the Go client refuses only the big one), and ``close()`` ends (it hung
    when the refusal of one message stranded the whole Publish frame's futures)."""

    async def main() -> None:
        async with await connect(URI, frame_max=4096) as client:
            async with fresh_stream(client, prefix="ws-too-large") as stream:
                producer = await client.producer(stream)
                big = os.urandom(8_000)
                futures = [await producer.send(body) for body in (b"a", big, b"b")]
                many = await producer.send_many([b"c", big, b"d"])
                assert await futures[0] == 1 and await futures[2] == 2
                assert isinstance(await error_of(futures[1]), MessageTooLarge)
                assert isinstance(await error_of(many), MessageTooLarge)
                assert many.confirmed == 2
                assert [type(e) for e in many.errors.values()] == [MessageTooLarge]
                async with asyncio.timeout(10):
                    await producer.close()
                consumer = await client.consumer(stream, "first")
                assert [m.body for m in await read(consumer, 4)] == [b"a", b"b", b"c", b"d"]
                await consumer.close()

    run(main(), timeout=60)


@pytest.mark.usefixtures("rabbitmq_broker")
def test_the_producer_never_writes_a_batch_the_consumers_limits_refuse() -> None:
    """A compressed sub-entry batch declares its uncompressed size, which a consumer
    refuses beyond its ``max_batch_size`` (``BatchTooLarge``: it is what decompressing
    would allocate).  ``connect(max_batch_size=)`` bounds both sides: the producer closes
    a batch before it would pass it (200 compressible KiB messages with sub_entry_size
    1000 used to go as one 205 KB batch, ending the subscription), a message that alone
    passes it fails alone, and ``consumer(max_batch_size=)`` sets a consumer's own."""
    limit = 64 * 1024

    async def main() -> None:
        async with await connect(URI, max_batch_size=limit) as client:
            async with fresh_stream(client, prefix="ws-batch-limit") as stream:
                producer = await client.producer(stream, sub_entry_size=1000,
                                                 compression="gzip")  # fmt: skip
                bodies = [bytes([n]) * 1024 for n in range(200)]
                await (await producer.send_many(bodies))
                alone = await producer.send(bytes(limit))
                assert isinstance(await error_of(alone), MessageTooLarge)
                batch = await producer.send_batch([bytes(1024)] * 100, "gzip")
                assert isinstance(await error_of(batch), MessageTooLarge)
                await producer.close()
                consumer = await client.consumer(stream, "first")
                assert [m.body for m in await read(consumer, 200)] == bodies
                await consumer.close()
                strict = await client.consumer(stream, "first", max_batch_size=16 * 1024)
                assert isinstance(await error_of(read(strict, 200)), BatchTooLarge)
                await strict.close()

    run(main(), timeout=60)
