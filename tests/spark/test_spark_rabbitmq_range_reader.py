"""The rabbitmq_stream source's range reader (``_RangeConsumer``, an executor's work)
against the broker, without Spark: what its stall check may take for its own."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.aio_support import run
from tests.support.rabbitmq_stream_client_support import URI, fresh_stream
from wirestream.runtime.errors import TransportTimeout
from wirestream.runtime.rabbitmq_stream.aio import connect
from wirestream.runtime.spark.rabbitmq_source import OffsetRange, SourceSettings, _RangeConsumer


@pytest.mark.usefixtures("rabbitmq_broker")
def test_only_the_stall_checks_own_deadline_is_taken_for_a_stall() -> None:
    """A ``TimeoutError`` of the client (``TransportTimeout``: the broker did not answer)
    reaches the task as it is; only the reader's own ``STALL_CHECK`` deadline leads to
    the look at the stream's end.  Taking any ``TimeoutError`` for its own, the reader
    probed the stream and asked again, for ever, while the client kept failing."""

    async def main() -> None:
        async with await connect(URI) as client:
            async with fresh_stream(client, prefix="ws-spark-range") as stream:
                producer = await client.producer(stream, raw=True)
                await (await producer.send_many([b"a", b"b", b"c"]))
                settings = SourceSettings.parse({"uri": URI, "stream": stream})
                reader = await _RangeConsumer.open(OffsetRange(settings, 0, 3))
                try:
                    consumer = reader.consumer
                    original = consumer.next_run
                    failures = 0

                    async def failing(limit: int) -> object:
                        nonlocal failures
                        failures += 1
                        raise TransportTimeout("the broker did not answer in time")

                    consumer.next_run = failing  # type: ignore[assignment, method-assign]
                    async with asyncio.timeout(10):
                        with pytest.raises(TransportTimeout):
                            await reader.next_runs(10)
                    assert failures == 1
                    consumer.next_run = original  # type: ignore[method-assign]
                    runs = await reader.next_runs(10)
                    assert [record for _, _, records in runs for record in records] == [
                        b"a", b"b", b"c"
                    ]  # fmt: skip
                finally:
                    await reader.close()

    run(main(), 60)
