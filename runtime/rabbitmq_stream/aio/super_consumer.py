"""A consumer over every partition of a super stream, read as one ``async for``.

As RabbitMQ's Java client does (SuperStreamConsumer.java): the partitions are asked once
(Partitions) and each gets an ordinary subscription; offsets are per partition. With a
``reference`` each partition's subscription starts after the offset stored for that
reference on that partition, when there is one (ConsumersCoordinator.java: 'Using offset
{} to start consuming ... (instead of {})', stored + 1), and ``store_offset`` stores per
partition. Messages of one partition come in their order; partitions are interleaved
one message at a time, round robin among those with messages waiting, and each
``ReceivedMessage`` names its partition (``stream``).

All partition consumers share one wake-up event, so waiting for the next message from
any of them costs no task per partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from types import MappingProxyType

from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rabbitmq_stream.aio.super_link import SuperLink
from wirestream.runtime.rabbitmq_stream.aio.consumer import Consumer, OffsetLike, ReceivedMessage

__all__ = ["SuperStreamConsumer"]


class SuperStreamConsumer:
    """Create with ``Client.super_stream_consumer``; iterate with ``async for``;
    ``store_offset(partition)``; ``close()`` unsubscribes every partition."""

    def __init__(
        self,
        client: SuperLink,
        super_stream: str,
        offset: OffsetLike,
        reference: str | None,
        credit: int,
        max_buffered: int,
        raw: bool,
    ) -> None:
        self.client = client
        self.super_stream = super_stream
        self.reference = reference
        self._offset = offset
        self._credit = credit
        self._max_buffered = max_buffered
        self._raw = raw
        self.partitions: tuple[str, ...] = ()
        self.started_at: dict[str, OffsetLike] = {}  # partition -> where it was subscribed
        self._consumers: dict[str, Consumer] = {}
        self._ring: list[Consumer] = []  # round robin order (the partitions' order)
        self._turn = 0
        self._wake = asyncio.Event()
        self._closed = False

    async def _start(self) -> None:
        """Subscribe to every partition (undone when one fails)."""
        self.partitions = await self.client.partitions(self.super_stream)
        if not self.partitions:
            raise LocalProtocolError(f"super stream {self.super_stream!r} has no partition")
        try:
            for partition in self.partitions:
                offset = self._offset
                if self.reference is not None:
                    stored = await self.client.query_offset(self.reference, partition)
                    if stored is not None:
                        offset = stored + 1
                self.started_at[partition] = offset
                consumer = await self.client.attach_consumer(self._builder(partition, offset))
                self._consumers[partition] = consumer
                self._ring.append(consumer)
        except BaseException:
            await self.close()
            raise

    def _builder(self, partition: str, offset: OffsetLike) -> Callable[[int], Consumer]:
        def build(subscription_id: int) -> Consumer:
            return Consumer(self.client, subscription_id, partition, offset, self.reference,
                            self._credit, self._max_buffered, self._raw,
                            wake=self._wake)  # fmt: skip

        return build

    # ------------------------------------------------------------------ reading

    def __aiter__(self) -> SuperStreamConsumer:
        return self

    async def __anext__(self) -> ReceivedMessage:
        ring = self._ring
        while True:
            count = len(ring)
            for step in range(count):
                consumer = ring[(self._turn + step) % count]
                if consumer.buffered:
                    self._turn = (self._turn + step + 1) % count
                    return await consumer.__anext__()  # a message is waiting: no wait
            if self._closed:
                raise StopAsyncIteration
            for consumer in ring:
                if consumer.error is not None:
                    raise consumer.error
            # No await between looking at the buffers and clearing: a delivery cannot
            # slip in between (events arrive on this loop, between awaits).
            self._wake.clear()
            await self._wake.wait()

    @property
    def buffered(self) -> int:
        """Messages received from all partitions and not yet read."""
        return sum(consumer.buffered for consumer in self._ring)

    @property
    def consumers(self) -> Mapping[str, Consumer]:
        """The subscription of each partition, by partition stream."""
        return MappingProxyType(self._consumers)

    @property
    def last_offsets(self) -> dict[str, int]:
        """Per partition, the offset of the last message read from it (partitions not
        read from yet are absent)."""
        return {
            stream: consumer.last_offset
            for stream, consumer in self._consumers.items()
            if consumer.last_offset is not None
        }

    # ------------------------------------------------------------------ offsets

    def store_offset(self, partition: str, offset: int | None = None) -> None:
        """StoreOffset for the reference on ``partition``: ``offset``, by default the
        last message read from it."""
        consumer = self._consumers.get(partition)
        if consumer is None:
            raise LocalProtocolError(
                f"{partition!r} is not a partition of super stream {self.super_stream!r} "
                f"({', '.join(self.partitions)})"
            )
        consumer.store_offset(offset)

    def store_offsets(self) -> dict[str, int]:
        """Store the last offset read from each partition (what Java's
        ``Context.storeOffset`` does for a super stream); what was stored."""
        stored = self.last_offsets
        for partition, offset in stored.items():
            self.store_offset(partition, offset)
        return stored

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Unsubscribe from every partition; iteration ends."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        await asyncio.gather(*(consumer.close() for consumer in self._ring))

    async def __aenter__(self) -> SuperStreamConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
