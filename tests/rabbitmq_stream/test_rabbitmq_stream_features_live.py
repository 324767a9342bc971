"""The newer-broker features against the REAL broker, RabbitMQ 3.10.8, which has none of
them: the client sends no ExchangeCommandVersions (its ``version`` is below 3.11, as the
Java client decides), ``supports`` says no to each, and using one fails at once with
``UnsupportedByBroker`` naming 3.10.8 -- before any frame leaves (a recording proxy
shows it) and with the connection still fine. Sent anyway, 3.10.8 closes the connection
(code 13, unknown frame): that is what the check spares. About 1 s.

Without a broker the module SKIPS (FAILS under CI=true)."""

from __future__ import annotations

import time

import pytest

from wirestream.generated.rabbitmq_stream.v1 import (
    DeclarePublisherRequest,
    ExchangeCommandVersionsRequest,
    StreamStatsRequest,
    SubscribeRequest,
)
from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.rabbitmq_stream import Event, Feature, UnsupportedByBroker
from wirestream.runtime.rabbitmq_stream.aio import connect
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_capture import FrameCapture
from tests.support.rabbitmq_stream_client_support import (
    error_of,
    fresh_stream,
    read,
    uri,
)

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")


def test_3_10_8_is_sent_no_ExchangeCommandVersions_and_supports_nothing_newer() -> None:
    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port), reconnect=False) as client:
                assert client.broker_version == "3.10.8"
                assert not any(client.supports(feature) for feature in Feature)
                assert not client.features.exchanged
                async with fresh_stream(client) as stream:  # and nothing else changed
                    producer = await client.producer(stream)
                    await producer.send_wait(b"still fine")
                    consumer = await client.consumer(stream, "first")
                    [message] = await read(consumer, 1)
                    assert message.body == b"still fine"
                    assert consumer.committed_chunk_id is None  # Deliver v1
                    assert consumer.is_active
                    await consumer.close()
        assert cap.frames_of(ExchangeCommandVersionsRequest) == []

    run(main())


def test_on_3_10_8_each_newer_feature_fails_at_once_naming_the_broker_version() -> None:
    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port), reconnect=False) as client:
                async with fresh_stream(client) as stream:
                    sent_before = len(cap.client_frames)
                    started = time.monotonic()
                    filtering = (
                        "stream filtering (Publish version 2, filter.* subscription properties)"
                        " needs RabbitMQ 3.13.0"
                    )
                    uses = [
                        ("StreamStats needs RabbitMQ 3.11.0", client.stream_stats(stream)),
                        (filtering, client.producer(stream, filter_value=lambda body: "a")),
                        ("single active consumer (ConsumerUpdate) needs RabbitMQ 3.11.0",
                         client.consumer(stream, name="app", single_active=True)),
                        (filtering, client.consumer(stream, filter=["a"],
                                                    post_filter=lambda message: True)),
                    ]  # fmt: skip
                    for expected, use in uses:
                        error = await error_of(use)
                        assert isinstance(error, UnsupportedByBroker), error
                        assert str(error).startswith(expected), error
                        assert str(error).endswith("the broker is RabbitMQ 3.10.8"), error
                        assert error.broker_version == "3.10.8"
                    assert time.monotonic() - started < 1.0  # no round trip, no timeout
                    assert len(cap.client_frames) == sent_before  # nothing left the client
                    assert client.is_open
                    assert await client.stream_exists(stream)
        for kind in (StreamStatsRequest, SubscribeRequest, DeclarePublisherRequest):
            assert cap.frames_of(kind) == [], kind

    run(main())


def test_3_10_8_closes_the_connection_on_a_StreamStats_sent_anyway() -> None:
    """Why the check comes first (the engine's own request, bypassing it)."""

    async def main() -> None:
        client = await connect(uri(), reconnect=False)
        try:
            engine = client.engine
            bypass = client.request(
                lambda e: e._outbox.request(lambda cid: StreamStatsRequest(cid, "any")), Event
            )
            error = await error_of(bypass)
            assert isinstance(error, ConnectionLost), error
            assert "code 13" in str(error), error
            assert engine.closed
        finally:
            await client.close()

    run(main())
