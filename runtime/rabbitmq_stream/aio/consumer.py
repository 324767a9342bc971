"""A subscription to one stream, read with ``async for message in consumer``.

PROTOCOL.adoc, Subscribe: 'OffsetSpecification => OffsetType Offset' (first, last,
next, offset, timestamp) and 'Credit => uint16 // the number of chunks that can be
sent'. Credit follows the Java client's default strategy with a bound on memory: the
subscription starts with ``credit`` chunks and gives one back as each chunk arrives
(the broker keeps ``credit`` chunks in flight, so the pipe stays full) *unless* the
application is behind: while ``max_buffered`` messages or more wait to be read, the
credit of arriving chunks is withheld and given back as the application catches up.
So at most ``max_buffered`` messages plus ``credit`` chunks are ever held.

The engine drops the records of the first chunk that come before an asked offset
('Deliver' is by whole chunk) and checks each chunk's CRC. After a reconnect the
consumer subscribes again at the offset after the last message it received, so
nothing is skipped and nothing repeats.

Newer brokers (``features``): a single active consumer (3.11+) subscribes with the
``single-active-consumer`` and ``name`` properties (``super-stream`` too on a super
stream partition, StreamConsumerBuilder.java) and waits for the broker's ConsumerUpdate;
activated, it answers with Java's default offset (StreamConsumer.java getStoredOffset:
the offset stored for its name + 1, else its own offset specification); deactivated, it
answers "none" and drops what it buffered (the consumer taking over resumes from the
stored offset). Filtering (3.13+) sends ``filter.0..n`` and ``match-unfiltered``; the
broker filters whole chunks, so ``post_filter`` (required, as Java's) drops the other
messages as chunks arrive.
"""

from __future__ import annotations

import asyncio
from collections import deque
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from wirestream.generated.rabbitmq_stream.v1 import (
    OffsetSpecFirst,
    OffsetSpecification,
    OffsetSpecLast,
    OffsetSpecNext,
    OffsetSpecOffset,
    OffsetSpecTimestamp,
)
from wirestream.generated.rabbitmq_stream.v1.machines import SubscriptionState
from wirestream.runtime.errors import ConnectionLost, LocalProtocolError, ProtocolError
from wirestream.runtime.rabbitmq_stream.aio.link import Link
from wirestream.runtime.rabbitmq_stream.aio.messages import MessageBatch, ReceivedMessage
from wirestream.runtime.rabbitmq_stream.amqp import data_bodies
from wirestream.runtime.rabbitmq_stream.credit import CreditOnConsumption
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.rabbitmq_stream.events import (
    ChunkDelivered,
    ChunkFailed,
    ConsumerUpdateRequested,
    MessagesReceived,
    Subscribed,
    SubscriptionClosed,
    Unsubscribed,
)

__all__ = [
    "Consumer",
    "MessageBatch",
    "ReceivedMessage",
    "Run",
    "OffsetLike",
    "PostFilter",
    "offset_specification",
    "subscription_properties",
]

OffsetLike = Literal["first", "last", "next"] | int | datetime | OffsetSpecification
_SPECS = (OffsetSpecFirst, OffsetSpecLast, OffsetSpecNext, OffsetSpecOffset, OffsetSpecTimestamp)
_NAMED: dict[str, Callable[[], OffsetSpecification]] = {
    "first": OffsetSpecFirst,
    "last": OffsetSpecLast,
    "next": OffsetSpecNext,
}


def offset_specification(offset: OffsetLike) -> OffsetSpecification:
    """The Subscribe frame's offset specification for a friendly value."""
    if isinstance(offset, str):
        if offset not in _NAMED:
            raise ValueError(f"offset {offset!r}: use first, last, next, an int or a datetime")
        return _NAMED[offset]()
    if isinstance(offset, bool):
        raise TypeError("offset: a bool is not an offset")
    if isinstance(offset, int):
        if offset < 0:
            raise ValueError(f"offset {offset}: offsets start at 0")
        return OffsetSpecOffset(offset)
    if isinstance(offset, datetime):
        # 'Timestamp: Erlang system time in milliseconds'
        return OffsetSpecTimestamp(int(offset.timestamp() * 1000))
    if isinstance(offset, _SPECS):
        return offset
    raise TypeError(f"offset {offset!r}: use first, last, next, an int or a datetime")


Run = tuple[int, int, list[bytes]]
"""``Consumer.next_run``: (offset of the first record, chunk timestamp in ms, records)."""


def subscription_properties(
    reference: str | None,
    *,
    single_active: bool = False,
    super_stream: str | None = None,
    filter_values: Sequence[str] | None = None,
    match_unfiltered: bool = False,
) -> dict[str, str]:
    """The Subscribe properties the Java client sends for the same consumer
    (StreamConsumerBuilder.build, ConsumersCoordinator.SubscriptionTracker, Utils.java
    SUBSCRIPTION_PROPERTY_*): ``single-active-consumer`` with ``name`` (the group's
    name), ``super-stream`` (single active on a partition only), ``filter.0..n`` and
    ``match-unfiltered``. (Java keeps them in a ConcurrentHashMap: the order on the wire
    is its hash order; the broker reads them as a map.) Decision: Java also sends
    ``name`` for any named consumer ("used for monitoring"); we send it where the broker
    needs it, single active consumers, so a plain named consumer's Subscribe stays what
    it was (and what rstream sends: test_rabbitmq_stream_frames_vs_rstream.py)."""
    if single_active and not reference:
        raise ValueError("a single active consumer needs a name (reference)")
    properties: dict[str, str] = {}
    if single_active:
        assert reference is not None
        properties["name"] = reference
        properties["single-active-consumer"] = "true"
        if super_stream is not None:
            properties["super-stream"] = super_stream
    if filter_values is not None:
        if not filter_values:
            raise ValueError("filter: at least one filter value")
        for index, value in enumerate(filter_values):
            properties[f"filter.{index}"] = value
        properties["match-unfiltered"] = "true" if match_unfiltered else "false"
    return properties


_new_message = object.__new__

PostFilter = Callable[[ReceivedMessage], bool]
"""A filtering consumer's predicate: True keeps the message (Java's ``postFilter``)."""


class Consumer:
    """Create with ``Client.consumer``; iterate with ``async for``; ``close()``."""

    def __init__(
        self,
        client: Link,
        subscription_id: int,
        stream: str,
        offset: OffsetLike,
        reference: str | None,
        credit: int,
        max_buffered: int,
        raw: bool,
        properties: Mapping[str, str] | None = None,
        until: int | None = None,
        wake: asyncio.Event | None = None,
        *,
        single_active: bool = False,
        super_stream: str | None = None,
        filter_values: Sequence[str] | None = None,
        match_unfiltered: bool = False,
        post_filter: PostFilter | None = None,
        max_batch_size: int | None = None,
    ) -> None:
        """``wake``: an event set whenever messages arrive or the subscription ends,
        shared by the partition consumers of a ``SuperStreamConsumer`` (which waits on it
        for all of them at once); by default the consumer's own."""
        if max_buffered < 1:
            raise ValueError("max_buffered must be at least 1")
        if filter_values is not None and post_filter is None:
            # StreamConsumerBuilder: 'Both filter values and the filter logic must be set'
            raise ValueError(
                "filter needs post_filter: the broker filters whole chunks (bloom filter), "
                "so messages with other filter values come too"
            )
        self.client = client
        self.subscription_id = subscription_id
        self.stream = stream
        self.reference = reference
        self._spec = offset_specification(offset)
        self._credit = credit
        self.max_buffered = max_buffered
        self.raw = raw
        self.single_active = single_active
        self.post_filter = post_filter
        self.max_batch_size = max_batch_size  # None: the connection's
        self._properties = subscription_properties(
            reference,
            single_active=single_active,
            super_stream=super_stream,
            filter_values=filter_values,
            match_unfiltered=match_unfiltered,
        )
        self._properties.update(properties or {})
        # Delivered chunks not yet fully read: (first offset, timestamp, records); the
        # head chunk is read from index ``_read`` on.
        self._chunks: deque[tuple[int, int, list[bytes]]] = deque()
        self._read = 0
        self._buffered = 0  # messages in _chunks not yet read
        # The records of the chunk ``async for`` reads and their bodies, decoded at once
        # where they are one Data section (else None: decoded when read).
        self._decoded: list[bytes] | None = None
        self._bodies: list[bytes] | list[bytes | None] = []
        self._withheld = 0  # chunks whose credit waits for the application
        self._next_offset: int | None = None  # after the last message received
        self.last_offset: int | None = None  # the last message handed to the application
        self._wake = asyncio.Event() if wake is None else wake
        self._active = False  # subscribed on the current connection
        self._establishing = asyncio.Lock()
        self._closed = False
        self.error: BaseException | None = None
        self.chunks = 0
        self.resubscribed = 0
        self.until = until
        self._in_flight = 0  # chunks granted (credit) and not yet arrived
        self._first_seen: int | None = None  # first offset of the first chunk received
        self._sac_active = False  # single active consumer: the broker's last word
        self._tasks: set[asyncio.Task[None]] = set()
        self.committed_chunk_id: int | None = None
        """Deliver version 2 (3.11+): the id of the last chunk committed in the cluster,
        as of the latest chunk received (None before one, or on an older broker)."""
        self.filtered_out = 0  # messages post_filter dropped

    # ------------------------------------------------------------------ subscribing

    async def _establish(self) -> None:
        """Subscribe on the current connection unless already subscribed there (the
        recovery and the first subscribe can race after a drop)."""
        async with self._establishing:
            if not self._active and not self._closed:
                await self._subscribe()

    def _current_spec(self) -> OffsetSpecification:
        """Where the subscription starts: the asked offset, or after the last message
        received (after a reconnect)."""
        return self._spec if self._next_offset is None else OffsetSpecOffset(self._next_offset)

    async def _subscribe(self) -> None:
        spec = self._current_spec()
        strategy = CreditOnConsumption(self._credit)
        self._sac_active = False
        self._withheld = 0
        self._in_flight = self._credit
        await self.client.request(
            lambda e: e.subscribe(
                self.subscription_id,
                self.stream,
                spec,
                credit=strategy,
                properties=self._properties,
                max_batch_size=self.max_batch_size,
            ),
            Subscribed,
        )
        self._active = True

    async def _recover(self) -> None:
        if self._closed:
            return
        try:
            await self._establish()
        except ResponseError as refused:
            self._fail(refused)
            return
        self.resubscribed += 1

    def _connection_lost(self, error: BaseException) -> None:
        self._active = False
        self._sac_active = False
        self._withheld = 0

    @property
    def is_active(self) -> bool:
        """Subscribed on the current connection and, for a single active consumer, the
        active one of its group (the broker's last ConsumerUpdate said so)."""
        return self._active and not self._closed and (self._sac_active or not self.single_active)

    # ------------------------------------------------------------------ single active consumer

    def on_consumer_update(self, event: ConsumerUpdateRequested) -> None:
        """The broker (de)activates this consumer and waits for the offset to resume from."""
        engine = self.client.engine
        self._sac_active = event.active
        if not event.active:
            # Another consumer of the group takes over from the stored offset: what is
            # buffered here would be read twice.
            self._drop_buffered()
            engine.answer_consumer_update(event.correlation_id, None)
            self.client.wakeup()
            return
        task = asyncio.get_running_loop().create_task(
            self._answer_activation(engine, event.correlation_id),
            name=f"consumer {self.subscription_id} activation",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer_activation(self, engine: object, correlation_id: int) -> None:
        """Java's default answer (StreamConsumer.getStoredOffset): the offset stored for
        the consumer's name + 1 (QueryOffset on this connection while the broker
        waits), else the subscription's own offset specification."""
        spec = self._current_spec()
        if self.reference is not None:
            try:
                stored = await self.client.query_offset(self.reference, self.stream)
            except ProtocolError:  # the connection went: nothing to answer any more
                stored = None
            if stored is not None:
                spec = OffsetSpecOffset(stored + 1)
        current = self.client.engine
        if current is engine and correlation_id in current.consumer_updates_pending:
            if self.client.is_open:
                current.answer_consumer_update(correlation_id, spec)
                self.client.wakeup()

    def _cancel_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def _drop_buffered(self) -> None:
        self._chunks.clear()
        self._decoded, self._bodies = None, []
        self._buffered = self._read = 0
        if self._withheld:
            self._release_withheld()

    def _fail(self, error: BaseException) -> None:
        if self.error is None and not self._closed:
            self.error = error
        self._active = False
        self._cancel_tasks()
        self.client.detach_consumer(self.subscription_id)
        self._wake.set()

    # ------------------------------------------------------------------ events

    def on_event(self, event: object) -> None:
        """Events of this subscription, routed here by the client."""
        if type(event) is MessagesReceived:
            messages = event.messages
            if self.post_filter is None:
                self._chunks.append((event.first_offset, event.timestamp, messages))
                self._buffered += len(messages)
            else:
                self._keep_filtered(event.first_offset, event.timestamp, messages)
            self._next_offset = event.first_offset + len(messages)
            if self._first_seen is None:
                self._first_seen = event.first_offset
            self._wake.set()
        elif isinstance(event, ChunkDelivered):
            if event.committed_chunk_id is not None:
                self.committed_chunk_id = event.committed_chunk_id
            self.chunks += 1
            self._in_flight -= 1
            if self._enough_in_flight():
                pass  # a read that ends at ``until``: the chunks on their way reach it
            elif self._buffered < self.max_buffered:
                self._grant(1)  # credit on chunk arrival
            else:
                self._withheld += 1
        elif isinstance(event, ChunkFailed):
            # A chunk that fails its CRC or cannot be read: its messages cannot be
            # handed over, and skipping them silently would lose them.
            self._fail(event.error)
        elif isinstance(event, SubscriptionClosed):
            self._fail(ResponseError.from_code(event.code))

    def _keep_filtered(self, first: int, timestamp: int, messages: list[bytes]) -> None:
        """Buffer the runs of consecutive messages ``post_filter`` keeps."""
        keep = self.post_filter
        assert keep is not None
        run: list[bytes] = []
        start = first
        for index, data in enumerate(messages):
            if keep(ReceivedMessage(first + index, timestamp, data, self.raw)):
                if not run:
                    start = first + index
                run.append(data)
                continue
            self.filtered_out += 1
            if run:
                self._chunks.append((start, timestamp, run))
                self._buffered += len(run)
                run = []
        if run:
            self._chunks.append((start, timestamp, run))
            self._buffered += len(run)

    def _enough_in_flight(self) -> bool:
        """With ``until``: will the chunks already granted (at the average size of those
        received so far) bring every offset before it?  Then more credit would only pull
        records past the end of the read, which the broker sends a whole chunk at a time:
        with 10 chunks of credit a range read of 50,000 offsets pulled some 20,000 more."""
        if self.until is None or self._next_offset is None or self._first_seen is None:
            return False
        average = (self._next_offset - self._first_seen) / max(1, self.chunks)
        return self._next_offset + max(0, self._in_flight) * average >= self.until

    def _grant(self, chunks: int) -> None:
        # The engine's state, not ``_active``: a chunk can arrive in the same read as
        # the SubscribeResponse, before the subscribing coroutine has resumed.
        engine = self.client.engine
        if self.client.is_open and (
            engine.subscription_state(self.subscription_id) is SubscriptionState.ACTIVE
        ):
            self.client.engine.chunk_consumed(self.subscription_id, chunks)
            self._in_flight += chunks
            self.client.wakeup()

    # ------------------------------------------------------------------ reading

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> ReceivedMessage:
        # Per message: the interpreter's work is the cost (issue 30), so no call that
        # can be spared: a chunk's bodies are decoded at once when its first message is
        # read, and the message is built here rather than by ``__init__``.
        if not self._buffered:  # tested here: an await per message costs ~10% of it
            await self._until_buffered()
        first, timestamp, records = self._chunks[0]
        if records is not self._decoded:  # the first message read from this chunk
            self._decoded = records
            self._bodies = records if self.raw else data_bodies(records)
        index = self._read
        if index + 1 == len(records):
            self._chunks.popleft()
            self._read = 0
        else:
            self._read = index + 1
        self._buffered -= 1
        message = _new_message(ReceivedMessage)
        message.offset = self.last_offset = first + index
        message.timestamp = timestamp
        message.data = records[index]
        message.stream = self.stream
        body = self._bodies[index]
        if body is not None:  # else decoded (or refused) when read, as ever
            message.body = body
        if self._withheld and self._buffered < self.max_buffered:
            self._release_withheld()
        return message

    async def next_run(self, limit: int) -> Run:
        """The next messages as one run of consecutive records of one chunk, ``limit`` at
        most: ``(first offset, chunk timestamp, records)``.  What ``async for`` yields one
        by one, for readers that take messages by the thousand (a Spark partition builds
        columns from runs without a ``ReceivedMessage`` per record); the two can be mixed.
        Raises ``StopAsyncIteration`` once closed, or the subscription's error."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        await self._until_buffered()
        first, timestamp, records = self._chunks[0]
        start = self._read
        stop = min(len(records), start + limit)
        if stop == len(records):
            self._chunks.popleft()
            self._read = 0
        else:
            self._read = stop
        run = records if start == 0 and stop == len(records) else records[start:stop]
        self._buffered -= len(run)
        self.last_offset = first + stop - 1
        if self._withheld and self._buffered < self.max_buffered:
            self._release_withheld()
        return first + start, timestamp, run

    async def batches(self, max_messages: int | None = None) -> AsyncIterator[MessageBatch]:
        """The messages a chunk at a time: ``async for batch in consumer.batches()``.

        Each ``MessageBatch`` holds the consecutive messages of one delivered chunk that
        are not read yet (``max_messages`` at most: a chunk may come in several), CRC-32
        checked, numbered and decompressed whatever the codec, like the messages of
        ``async for message in consumer`` (the two, and ``next_run``, can be mixed: each
        message is read once). Credit is given back as batches are read, as for single
        messages. For readers that take messages by the thousand: no object per message
        unless asked for (``batch.bodies``, iterating the batch). Ends when the consumer
        is closed; raises the subscription's error."""
        limit = sys.maxsize if max_messages is None else max_messages
        if limit < 1:
            raise ValueError("max_messages must be at least 1")
        while True:
            try:
                first, timestamp, records = await self.next_run(limit)
            except StopAsyncIteration:
                return
            yield MessageBatch(first, timestamp, records, self.raw, self.stream)

    def _release_withheld(self) -> None:
        """The application caught up: give back the credit withheld while it was behind."""
        withheld, self._withheld = self._withheld, 0
        self._grant(withheld)

    async def _until_buffered(self) -> None:
        while not self._buffered:
            if self._closed:
                raise StopAsyncIteration
            if self.error is not None:
                raise self.error
            self._wake.clear()
            await self._wake.wait()

    @property
    def buffered(self) -> int:
        """Messages received and not yet read."""
        return self._buffered

    def store_offset(self, offset: int | None = None) -> None:
        """StoreOffset for this consumer's reference: ``offset``, by default the last
        message read. (Stored offsets are read back with ``Client.query_offset``.)"""
        if self.reference is None:
            raise LocalProtocolError("store_offset needs a consumer reference")
        offset = self.last_offset if offset is None else offset
        if offset is None:
            raise LocalProtocolError("no message read yet: nothing to store")
        self.client.store_offset(self.reference, self.stream, offset)

    async def close(self) -> None:
        """Unsubscribe; iteration ends (messages still buffered are dropped)."""
        if self._closed:
            return
        active = self._active and self.client.is_open
        self._closed = True
        self._active = False
        self._cancel_tasks()
        self._wake.set()
        try:
            if active:
                await self.client.request(
                    lambda e: e.unsubscribe(self.subscription_id), Unsubscribed
                )
        except (ResponseError, ConnectionLost):
            pass  # gone already: nothing left to undo
        finally:
            self.client.detach_consumer(self.subscription_id)
            self._chunks.clear()
            self._decoded, self._bodies = None, []
            self._buffered = self._read = 0

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
