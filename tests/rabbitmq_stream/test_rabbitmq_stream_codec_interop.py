"""Sub-entry compression between RabbitMQ's Java stream client and ours, through the
real broker, for every codec (issue 19, item 1).

The broker stores sub-entry batches as they come (osiris never decompresses), so each
direction is one client decoding what the other compressed:

- ours (``sub_entry_size=20`` + codec) -> broker -> the Java client's consumer
  (tests/support/java/rabbitmq CodecConsume);
- the Java client's producer (``subEntrySize(20).compression(codec)``, CodecPublish)
  -> broker -> our consumer.

One stream per codec (none, gzip, snappy, lz4, zstd) and one JVM run per direction.
The messages: 150 short texts (several batches), three 100 KB random binaries, a
400 KB run of zeros and an empty one; every body and offset must be equal. A
``FrameCapture`` proxy in front of our client shows the batches really were
sub-entries compressed with the codec in question, either way.

Needs the broker (``make broker``) and Java 17 + Maven (``make java-peers``): without
them these tests SKIP, unless CI=true, where they FAIL. About 10 s in all.
"""

from __future__ import annotations

import base64
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.support.aio_support import run
from tests.support.rabbitmq_java_peer import rabbitmq_java, run_java_async  # noqa: F401
from tests.support.rabbitmq_stream_capture import FrameCapture
from tests.support.rabbitmq_stream_client_support import URI, read, unique, uri
from wirestream.generated.rabbitmq_stream.v1 import Deliver, Publish, SubEntryBatch
from wirestream.runtime.rabbitmq_stream import decode_entries
from wirestream.runtime.rabbitmq_stream.aio import Client, connect

pytestmark = [pytest.mark.peer, pytest.mark.usefixtures("rabbitmq_broker")]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
SUB_ENTRY_SIZE = 20


def messages() -> list[bytes]:
    """Text, large random binaries and a large compressible one; no batch of 20 goes
    over the broker's 1 MiB frame even uncompressed."""
    rng = random.Random(1919)
    text = [f"message {i}: {'hello ' * (i % 7)}".encode() for i in range(150)]
    return [*text[:60], *(rng.randbytes(100_000) for _ in range(3)), *text[60:100],
            bytes(400_000), *text[100:], b""]  # fmt: skip


@asynccontextmanager
async def codec_streams(client: Client) -> AsyncIterator[dict[str, str]]:
    """codec -> a new stream for it; all deleted afterwards."""
    streams = {codec: unique(f"ws-java-{codec}") for codec in CODECS}
    try:
        for stream in streams.values():
            await client.create_stream(stream)
        yield streams
    finally:
        for stream in streams.values():
            await client.delete_stream(stream, missing_ok=True)


def test_the_java_client_reads_what_our_sub_entry_producer_wrote_with_every_codec(
    rabbitmq_java: str,  # noqa: F811
) -> None:
    sent = messages()

    async def main() -> None:
        async with FrameCapture() as cap, await connect(uri(cap.port)) as client:
            async with codec_streams(client) as streams:
                for codec, stream in streams.items():
                    producer = await client.producer(
                        stream, sub_entry_size=SUB_ENTRY_SIZE, compression=codec
                    )
                    confirmation = await producer.send_many(sent)
                    await confirmation
                    assert confirmation.confirmed == len(sent)
                    await producer.close()
                published = [entry.entry for frame in cap.client_frames
                             if isinstance(frame, Publish) for entry in frame.published_messages]  # fmt: skip
                assert all(isinstance(batch, SubEntryBatch) for batch in published)
                assert {batch.compression.name.lower() for batch in published} == set(CODECS)
                answers = await run_java_async(
                    rabbitmq_java, "CodecConsume", URI, str(len(sent)), *streams.values()
                )
        by_stream = {answer["stream"]: answer for answer in answers}
        for codec, stream in streams.items():
            answer = by_stream[stream]
            assert not answer["timed_out"], f"{codec}: the Java consumer timed out"
            assert answer["offsets"] == list(range(len(sent))), codec
            got = [base64.b64decode(body) for body in answer["bodies"]]
            assert got == sent, f"{codec}: the Java client read other bodies"

    run(main(), timeout=150)


def test_our_consumer_reads_what_the_java_sub_entry_producer_wrote_with_every_codec(
    rabbitmq_java: str,  # noqa: F811
) -> None:
    sent = messages()
    stdin = b"".join(base64.b64encode(body) + b"\n" for body in sent)

    async def main() -> None:
        async with FrameCapture() as cap, await connect(uri(cap.port)) as client:
            async with codec_streams(client) as streams:
                targets = [f"{stream}:{codec}" for codec, stream in streams.items()]
                answers = await run_java_async(
                    rabbitmq_java, "CodecPublish", URI, str(SUB_ENTRY_SIZE), *targets,
                    stdin=stdin,
                )  # fmt: skip
                for answer in answers:
                    assert answer["confirmed"] == len(sent) and not answer["timed_out"], answer
                for codec, stream in streams.items():
                    consumer = await client.consumer(stream, "first")
                    received = await read(consumer, len(sent), timeout=30)
                    assert [m.offset for m in received] == list(range(len(sent))), codec
                    assert [m.body for m in received] == sent, f"{codec}: we read other bodies"
                    await consumer.close()
        delivered = [entry for frame in cap.server_frames if isinstance(frame, Deliver)
                     for entry in decode_entries(frame.chunk.data)]  # fmt: skip
        batches = [entry for entry in delivered if isinstance(entry, SubEntryBatch)]
        assert len(batches) == len(delivered), "the Java producer wrote sub-entry batches only"
        assert {batch.compression.name.lower() for batch in batches} == set(CODECS)
        assert max(batch.num_records for batch in batches) == SUB_ENTRY_SIZE

    run(main(), timeout=150)
