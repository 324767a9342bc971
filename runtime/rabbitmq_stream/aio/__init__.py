"""The RabbitMQ stream client over asyncio (``wirestream.runtime.aio`` transports).

    from wirestream.runtime.rabbitmq_stream.aio import connect

    async with await connect("rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f") as client:
        await client.create_stream("events", exist_ok=True)
        producer = await client.producer("events", reference="app-1")
        await producer.send_wait(b"hello")
        async with await client.consumer("events", offset="first") as consumer:
            async for message in consumer:
                print(message.offset, message.body)
                break

``Client`` (connection, streams, offsets, recovery), ``Producer`` (publishing ids,
confirms, deduplication), ``Consumer`` (offsets, credit, ``async for``, a chunk at a
time with ``batches()``),
``SuperStreamProducer`` / ``SuperStreamConsumer`` (a super stream's partitions).
"""

from wirestream.runtime.rabbitmq_stream.aio.client import Client, Metadata, connect
from wirestream.runtime.rabbitmq_stream.aio.consumer import (
    Consumer,
    MessageBatch,
    OffsetLike,
    PostFilter,
    ReceivedMessage,
    Run,
    offset_specification,
)
from wirestream.runtime.rabbitmq_stream.aio.producer import (
    BatchConfirmation,
    Body,
    Compression,
    FilterValue,
    Producer,
)
from wirestream.runtime.rabbitmq_stream.aio.super_consumer import SuperStreamConsumer
from wirestream.runtime.rabbitmq_stream.aio.super_producer import RoutingMode, SuperStreamProducer
from wirestream.runtime.rabbitmq_stream.aio.uri import DEFAULT_URI, StreamUri, parse_stream_uri

__all__ = [
    "connect",
    "Client",
    "Metadata",
    "Producer",
    "BatchConfirmation",
    "Body",
    "Compression",
    "FilterValue",
    "Consumer",
    "MessageBatch",
    "ReceivedMessage",
    "Run",
    "OffsetLike",
    "PostFilter",
    "offset_specification",
    "SuperStreamProducer",
    "SuperStreamConsumer",
    "RoutingMode",
    "StreamUri",
    "parse_stream_uri",
    "DEFAULT_URI",
]
