"""Deduplication across clients: RabbitMQ's Java stream client and ours publishing with
the same producer reference to one stream are deduplicated by the broker as one
publisher (issue 19, item 4).

The Java client's docs (api.adoc:591-592 at v1.11.0, "Message Deduplication"): 'RabbitMQ
Stream can detect and filter out duplicated messages, based on 2 client-side elements:
the producer name and the message publishing ID' -- our reference is that name
('DeclarePublisherRequest => ... [PublisherReference] Stream'), and QueryPublisherSequence
gives the last id stored. One publisher with the name at a time (the docs' requirement),
turn by turn on one stream, reference R:

1. the Java client (tests/support/java/rabbitmq DedupPublish, producer ``name(R)``) stores ids
   1..100 ("java-<id>");
2. ours (``reference=R``) finds the sequence at 100, re-sends ids 50..100 (dropped by
   the broker, yet confirmed), then stores 101..150 with ids that continue after the
   sequence by themselves;
3. the Java client finds 150, re-sends 120..150 (dropped) and stores 151..180;
4. ours again: the sequence is 180, and a re-send of 1..180 is dropped.

The stream then holds exactly java 1..100, ours 101..150, java 151..180, each once.
Two JVM runs; about 5 s. Needs the broker and Java + Maven (SKIP without, FAIL under
CI=true).
"""

from __future__ import annotations

import pytest

from tests.support.aio_support import run
from tests.support.rabbitmq_java_peer import rabbitmq_java, run_java_async  # noqa: F401
from tests.support.rabbitmq_stream_client_support import (
    URI,
    error_of,
    fresh_stream,
    read,
    unique,
)
from wirestream.runtime.rabbitmq_stream.aio import Client, connect

pytestmark = [pytest.mark.peer, pytest.mark.usefixtures("rabbitmq_broker")]


async def _ours(client: Client, stream: str, reference: str, resend: range, new: int) -> list[int]:
    """Our producer with ``reference``: re-send ``resend`` with their old ids, then
    ``new`` messages with the ids it picks; the ids of those new ones."""
    producer = await client.producer(stream, reference=reference)
    old = [await producer.send(b"ours-%d" % pid, publishing_id=pid) for pid in resend]
    fresh = [await producer.send(b"ours-new-%d" % index) for index in range(new)]
    assert [await future for future in old] == list(resend), "duplicates are confirmed"
    ids = [await future for future in fresh]
    await producer.close()
    return ids


def test_java_and_our_producer_with_one_reference_are_deduplicated_as_one(
    rabbitmq_java: str,  # noqa: F811
) -> None:
    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client, prefix="ws-dedup") as stream:
            reference = unique("ws-dedup-ref")
            [java] = await run_java_async(rabbitmq_java, "DedupPublish", URI, stream, reference,
                                          "1-100")  # fmt: skip
            assert java == {"before": 0, "confirmed": 100, "failed": 0, "after": 100}
            assert await client.query_publisher_sequence(reference, stream) == 100

            ids = await _ours(client, stream, reference, range(50, 101), 50)
            assert ids == list(range(101, 151)), "our ids continue after the Java client's"
            assert await client.query_publisher_sequence(reference, stream) == 150

            [java] = await run_java_async(rabbitmq_java, "DedupPublish", URI, stream, reference,
                                          "120-150", "151-180")  # fmt: skip
            assert java == {"before": 150, "confirmed": 61, "failed": 0, "after": 180}

            assert await _ours(client, stream, reference, range(1, 181), 0) == []
            assert await client.query_publisher_sequence(reference, stream) == 180

            consumer = await client.consumer(stream, "first")
            bodies = [m.body for m in await read(consumer, 180)]
            expected = [b"java-%d" % i for i in range(1, 101)] + [
                b"ours-new-%d" % i for i in range(50)
            ]
            assert bodies == expected + [b"java-%d" % i for i in range(151, 181)]
            nothing_more = await error_of(read(consumer, 1, timeout=1.0))
            assert isinstance(nothing_more, TimeoutError), "a duplicate was stored"
            await consumer.close()

    run(main(), timeout=120)
