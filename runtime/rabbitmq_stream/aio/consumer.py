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
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
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
from wirestream.runtime.errors import ConnectionLost, LocalProtocolError
from wirestream.runtime.rabbitmq_stream.aio.link import Link
from wirestream.runtime.rabbitmq_stream.amqp import AmqpMessage, decode_body, decode_message
from wirestream.runtime.rabbitmq_stream.credit import CreditOnConsumption
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.rabbitmq_stream.events import (
    ChunkDelivered,
    ChunkFailed,
    MessagesReceived,
    Subscribed,
    SubscriptionClosed,
    Unsubscribed,
)

__all__ = ["Consumer", "ReceivedMessage", "Run", "OffsetLike", "offset_specification"]

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


class ReceivedMessage:
    """One message of the stream. ``data`` is the stored record; ``body`` the
    application data (the AMQP 1.0 Data section, or ``data`` for a raw consumer);
    ``amqp`` the whole decoded AMQP message (properties, annotations...); ``stream`` the
    stream it was read from (for a super stream consumer: the partition)."""

    __slots__ = ("offset", "timestamp", "data", "_raw", "stream")

    def __init__(
        self, offset: int, timestamp: int, data: bytes, raw: bool, stream: str = ""
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp  # the chunk's, ms since the epoch
        self.data = data
        self._raw = raw
        self.stream = stream

    @property
    def body(self) -> bytes:
        return self.data if self._raw else decode_body(self.data)

    @property
    def amqp(self) -> AmqpMessage:
        return decode_message(self.data)

    def __repr__(self) -> str:
        where = f"{self.stream}, " if self.stream else ""
        return f"ReceivedMessage({where}offset={self.offset}, {len(self.data)} bytes)"


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
    ) -> None:
        """``wake``: an event set whenever messages arrive or the subscription ends,
        shared by the partition consumers of a ``SuperStreamConsumer`` (which waits on it
        for all of them at once); by default the consumer's own."""
        if max_buffered < 1:
            raise ValueError("max_buffered must be at least 1")
        self.client = client
        self.subscription_id = subscription_id
        self.stream = stream
        self.reference = reference
        self._spec = offset_specification(offset)
        self._credit = credit
        self.max_buffered = max_buffered
        self.raw = raw
        self._properties = dict(properties or {})
        # Delivered chunks not yet fully read: (first offset, timestamp, records); the
        # head chunk is read from index ``_read`` on.
        self._chunks: deque[tuple[int, int, list[bytes]]] = deque()
        self._read = 0
        self._buffered = 0  # messages in _chunks not yet read
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

    # ------------------------------------------------------------------ subscribing

    async def _establish(self) -> None:
        """Subscribe on the current connection unless already subscribed there (the
        recovery and the first subscribe can race after a drop)."""
        async with self._establishing:
            if not self._active and not self._closed:
                await self._subscribe()

    async def _subscribe(self) -> None:
        spec = self._spec if self._next_offset is None else OffsetSpecOffset(self._next_offset)
        strategy = CreditOnConsumption(self._credit)
        self._withheld = 0
        self._in_flight = self._credit
        await self.client.request(
            lambda e: e.subscribe(
                self.subscription_id,
                self.stream,
                spec,
                credit=strategy,
                properties=self._properties,
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
        self._withheld = 0

    def _fail(self, error: BaseException) -> None:
        if self.error is None and not self._closed:
            self.error = error
        self._active = False
        self.client.detach_consumer(self.subscription_id)
        self._wake.set()

    # ------------------------------------------------------------------ events

    def on_event(self, event: object) -> None:
        """Events of this subscription, routed here by the client."""
        if type(event) is MessagesReceived:
            messages = event.messages
            self._chunks.append((event.first_offset, event.timestamp, messages))
            self._buffered += len(messages)
            self._next_offset = event.first_offset + len(messages)
            if self._first_seen is None:
                self._first_seen = event.first_offset
            self._wake.set()
        elif isinstance(event, ChunkDelivered):
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
        await self._until_buffered()
        first, timestamp, records = self._chunks[0]
        index = self._read
        data = records[index]
        if index + 1 == len(records):
            self._chunks.popleft()
            self._read = 0
        else:
            self._read = index + 1
        self._buffered -= 1
        offset = self.last_offset = first + index
        if self._withheld and self._buffered < self.max_buffered:
            self._release_withheld()
        return ReceivedMessage(offset, timestamp, data, self.raw, self.stream)

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
            self._buffered = self._read = 0

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
