"""A producer on a super stream: each message goes to the partition its routing key picks.

What RabbitMQ's Java client does (SuperStreamProducer.java), so that both clients put
a given key in the same partition:

- The partitions are asked once, when the producer starts (Partitions, in the broker's
  order: DefaultSuperStreamMetadata); a super stream without any is refused.
- ``routing(body)`` gives the message's routing key. ``"hash"`` routing picks
  ``partitions[murmur3(key) % len(partitions)]`` (``wirestream.runtime.rabbitmq_stream.routing``);
  ``"key"`` routing asks the broker's Route for the key once and caches the answer for
  the producer's life (RoutingKeyRoutingStrategy.java computeIfAbsent). Route can answer
  several partitions (a direct exchange: one copy to each, as Java sends) or none:
  ``NoRouteFound``.
- One ordinary ``Producer`` per partition, made when the first message goes there
  (``producers.computeIfAbsent``), all with the same ``reference``: deduplication is per
  partition (the broker keeps one publishing-id sequence per reference and stream), and
  ``last_publishing_id`` is the smallest of the partitions' sequences
  (SuperStreamProducer.getLastPublishingId). Confirms, the in-flight window and recovery
  are each partition producer's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rabbitmq_stream.aio.super_link import SuperLink
from wirestream.runtime.rabbitmq_stream.aio.producer import Body, Producer
from wirestream.runtime.rabbitmq_stream.errors import NoRouteFound
from wirestream.runtime.rabbitmq_stream.routing import partition_index

__all__ = ["SuperStreamProducer", "RoutingMode"]

RoutingMode = Literal["hash", "key"]


class SuperStreamProducer:
    """Create with ``Client.super_stream_producer``. ``send`` / ``send_wait``; ``flush``
    waits for every outcome; ``close`` closes every partition producer."""

    def __init__(
        self,
        client: SuperLink,
        super_stream: str,
        routing: Callable[[Body], str],
        routing_mode: RoutingMode,
        reference: str | None,
        producer_options: Mapping[str, Any],
    ) -> None:
        if routing_mode not in ("hash", "key"):
            raise ValueError(f"routing_mode {routing_mode!r}: use 'hash' or 'key'")
        self.client = client
        self.super_stream = super_stream
        self.routing = routing
        self.routing_mode: RoutingMode = routing_mode
        self.reference = reference
        self._options = dict(producer_options)
        self._by_hash = routing_mode == "hash"
        self.partitions: tuple[str, ...] = ()
        self._producers: dict[str, Producer] = {}
        self._opening: dict[str, asyncio.Future[Producer]] = {}
        self._routes: dict[str, tuple[str, ...]] = {}  # key routing: Route's answers
        self._looking_up: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        self._closed = False

    async def _start(self) -> None:
        partitions = await self.client.partitions(self.super_stream)
        if not partitions:  # DefaultSuperStreamMetadata: "Super stream ... has no partition"
            raise LocalProtocolError(f"super stream {self.super_stream!r} has no partition")
        self.partitions = partitions

    # ------------------------------------------------------------------ routing

    def _key(self, body: Body) -> str:
        key = self.routing(body)
        if not isinstance(key, str):
            raise TypeError(f"routing must return the routing key as a str, not {key!r}")
        return key

    async def route(self, body: Body) -> tuple[str, ...]:
        """The partition streams ``body`` goes to (empty: none, for key routing)."""
        key = self._key(body)
        if self._by_hash:
            return (self.partitions[partition_index(key, len(self.partitions))],)
        return await self._route_key(key)

    async def _route_key(self, key: str) -> tuple[str, ...]:
        streams = self._routes.get(key)
        if streams is not None:
            return streams
        # One Route per key, however many sends wait for it.
        pending = self._looking_up.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self.client.route(key, self.super_stream))
            self._looking_up[key] = pending
        try:
            streams = await asyncio.shield(pending)
        finally:
            if pending.done():
                self._looking_up.pop(key, None)
        self._routes[key] = streams
        return streams

    async def _producer(self, stream: str) -> Producer:
        """The partition's producer, declared at its first message."""
        producer = self._producers.get(stream)
        if producer is not None:
            return producer
        pending = self._opening.get(stream)
        if pending is None:
            pending = asyncio.ensure_future(
                self.client.producer(stream, reference=self.reference, **self._options)
            )
            self._opening[stream] = pending
        try:
            producer = await asyncio.shield(pending)
        finally:
            if pending.done():
                self._opening.pop(stream, None)
        if self._closed:  # closed while this partition's producer was being declared
            await producer.close()
            raise LocalProtocolError("the super stream producer is closed")
        self._producers[stream] = producer
        return producer

    # ------------------------------------------------------------------ sending

    async def send(self, body: Body, *, publishing_id: int | None = None) -> asyncio.Future[int]:
        """Route and queue one message; returns a future resolved with its publishing id
        (in its partition) when that partition's broker confirms it. A key bound to
        several partitions (key routing) sends a copy to each: the future resolves when
        all are confirmed, with the id in the first. ``NoRouteFound`` when it goes
        nowhere. ``publishing_id``: for deduplication with a reference, ids increasing
        per partition (e.g. one application-wide sequence)."""
        if self._closed:
            raise LocalProtocolError("the super stream producer is closed")
        key = self._key(body)
        if self._by_hash:
            partitions = self.partitions
            stream = partitions[partition_index(key, len(partitions))]
            producer = self._producers.get(stream) or await self._producer(stream)
            return await producer.send(body, publishing_id=publishing_id)
        streams = self._routes.get(key)
        if streams is None:
            streams = await self._route_key(key)
        if not streams:
            raise NoRouteFound(self.super_stream, key)
        futures = [
            await (await self._producer(stream)).send(body, publishing_id=publishing_id)
            for stream in streams
        ]
        return futures[0] if len(futures) == 1 else _all_confirmed(futures)

    async def send_wait(self, body: Body, *, publishing_id: int | None = None) -> int:
        """Send one message and wait for its confirm; its publishing id."""
        return await (await self.send(body, publishing_id=publishing_id))

    # ------------------------------------------------------------------ state

    @property
    def producers(self) -> Mapping[str, Producer]:
        """The partition producers made so far, by partition stream."""
        return MappingProxyType(self._producers)

    @property
    def unconfirmed(self) -> int:
        return sum(producer.unconfirmed for producer in self._producers.values())

    async def last_publishing_id(self) -> int:
        """The smallest of the publishing ids the broker stored for ``reference`` on each
        partition (0 when one has none): every id up to it is stored everywhere it was
        routed (SuperStreamProducer.getLastPublishingId asks Partitions again, then
        QueryPublisherSequence per partition)."""
        if self.reference is None:
            raise LocalProtocolError("last_publishing_id needs a producer reference")
        partitions = await self.client.partitions(self.super_stream)
        sequences = [
            await self.client.query_publisher_sequence(self.reference, partition)
            for partition in partitions
        ]
        return min(sequences, default=0)

    async def flush(self) -> None:
        """Wait until every message sent so far is confirmed or refused."""
        await asyncio.gather(*(producer.flush() for producer in self._producers.values()))

    async def close(self) -> None:
        """Flush and close every partition producer (each is closed even when another
        fails; the first failure is raised after)."""
        if self._closed:
            return
        self._closed = True
        outcomes = await asyncio.gather(
            *(producer.close() for producer in self._producers.values()),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def __aenter__(self) -> SuperStreamProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _all_confirmed(futures: list[asyncio.Future[int]]) -> asyncio.Future[int]:
    """One future for the copies of a message sent to several partitions: the first
    copy's id once all are confirmed, or the first failure."""
    combined: asyncio.Future[int] = futures[0].get_loop().create_future()
    left = len(futures)

    def settled(future: asyncio.Future[int]) -> None:
        nonlocal left
        left -= 1
        if combined.done():
            return
        if future.cancelled():
            combined.cancel()
        elif future.exception() is not None:
            combined.set_exception(future.exception())  # type: ignore[arg-type]
        elif left == 0:
            combined.set_result(futures[0].result())

    for future in futures:
        future.add_done_callback(settled)
    return combined
