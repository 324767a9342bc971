"""``async for batch in consumer.batches()``: a chunk's messages at a time (issue 28),
against the real broker.

PROTOCOL.adoc, Deliver: a chunk's records in order, the chunk CRC-32 checked; sub-entry
batches of every codec decompressed. A ``MessageBatch`` holds the consecutive messages of
one chunk not read yet: the same offsets, bodies and timestamps ``async for message in
consumer`` gives, each message once however the two are mixed; credit flows as batches
are read; the subscription's error ends the iteration; a closed consumer ends it.
"""

from __future__ import annotations

import pytest

from tests.support.aio_support import run
from tests.support.rabbitmq_stream_client_support import URI, fresh_stream, read
from wirestream.runtime.rabbitmq_stream.aio import MessageBatch, ReceivedMessage, connect
from wirestream.runtime.rabbitmq_stream.compression import CODECS
from wirestream.runtime.rabbitmq_stream.errors import ChunkCrcMismatch

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")


def test_batches_are_chunks_of_consecutive_messages_mixed_with_async_for() -> None:
    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            for first in range(0, 30, 10):  # three confirmed send_many: (usually) chunks
                await (await producer.send_many([b"r%d" % i for i in range(first, first + 10)]))
            async with await client.consumer(stream, 3) as consumer:  # mid-chunk start
                batches = consumer.batches(max_messages=4)
                head = await anext(batches)
                singles = await read(consumer, 2)
                rest: list[MessageBatch] = []
                async for batch in consumer.batches():
                    rest.append(batch)
                    if batch.last_offset == 29:
                        break
            name = stream
        assert isinstance(head, MessageBatch) and head.first_offset == 3 and len(head) <= 4
        assert [m.offset for m in singles] == [head.last_offset + 1, head.last_offset + 2]
        offsets = [*head.offsets, *(m.offset for m in singles)]
        for batch in [head, *rest]:
            assert batch.timestamp > 0 and len(batch) > 0 and batch.stream == name
            assert batch.bodies == [b"r%d" % o for o in batch.offsets]
            messages = list(batch)  # the ReceivedMessage async for would have given
            assert all(isinstance(m, ReceivedMessage) for m in messages)
            assert [(m.offset, m.body, m.timestamp, m.data) for m in messages] == [
                (o, b"r%d" % o, batch.timestamp, r) for o, r in zip(batch.offsets, batch.records)
            ]
        offsets += [o for batch in rest for o in batch.offsets]
        assert offsets == list(range(3, 30))  # each message once, in order

    run(main())


@pytest.mark.parametrize("codec", list(CODECS))
def test_batches_of_compressed_sub_entries_read_back_every_message(codec: str) -> None:
    async def main() -> list[MessageBatch]:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream, sub_entry_size=7, compression=codec)
            await (await producer.send_many([b"m%d" % i for i in range(500)]))
            batches: list[MessageBatch] = []
            async with await client.consumer(stream, "first", credit=1) as consumer:
                async for batch in consumer.batches():
                    batches.append(batch)
                    if batch.last_offset == 499:
                        break
            return batches

    batches = run(main())
    assert [b for batch in batches for b in batch.bodies] == [b"m%d" % i for i in range(500)]
    assert [o for batch in batches for o in batch.offsets] == list(range(500))


def test_raw_batches_hand_over_the_records_and_a_closed_consumer_ends_them() -> None:
    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream, raw=True)
            await (await producer.send_many([b"\x00raw%d" % i for i in range(5)]))
            consumer = await client.consumer(stream, "first", raw=True)
            batch = await anext(consumer.batches())
            assert batch.bodies == batch.records == [b"\x00raw%d" % i for i in range(5)]
            assert repr(batch) == f"MessageBatch({stream}, offsets 0..4, 5 messages)"
            await consumer.close()
            assert [b async for b in consumer.batches()] == []
            with pytest.raises(ValueError):
                await anext(consumer.batches(max_messages=0))

    run(main())


def test_a_chunk_failing_its_crc_ends_the_batches_with_the_error() -> None:
    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            await (await producer.send_many([b"a", b"b"]))
            async with await client.consumer(stream, "first") as consumer:
                consumer._fail(ChunkCrcMismatch("chunk 0: bad CRC"))  # as a ChunkFailed does
                with pytest.raises(ChunkCrcMismatch):
                    async for _ in consumer.batches():
                        pass

    run(main())
