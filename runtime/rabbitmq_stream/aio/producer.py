"""A publisher on one stream: publishing ids, confirms per message, deduplication.

PROTOCOL.adoc, Publish: 'PublishingId => uint64'; PublishConfirm / PublishError carry
them back. Every message gets the next publishing id and is held, with what awaits
it, until the broker confirms or refuses that id. Holding them is what makes a
reconnect lossless: on a new connection the producer declares itself again and, with
a reference, asks 'QueryPublisherSequence' for the last id the broker stored; ids up
to it are confirmed (the broker has them), the rest are re-sent with the same ids, so
deduplication ('the broker keeps track of the publishing ids per publisher
reference') stores each message once.

Filtering (RabbitMQ 3.13+): a producer made with ``filter_value`` (Java's
``ProducerBuilder.filterValue``) asks it for each body's filter value when the body is
sent and publishes every message with Publish version 2 ('FilterValue => string', null
for None); sub-entry batches cannot carry filter values (Java refuses subEntrySize > 1
with a filter value extractor too).

Throughput: ``send`` only queues; everything sent during one loop iteration leaves
as one Publish frame (split at frame_max by the engine) when the loop gets to it, and
one PublishConfirm resolves many messages. The window of unconfirmed messages is the
engine's (``max_in_flight``): a send beyond it waits for confirms.

Sub-entry batching (``sub_entry_size`` > 1, the Java client's ``subEntrySize`` +
``compression``): ``send`` / ``send_many`` put up to ``sub_entry_size`` messages in one
sub-entry batch, compressed once when it closes (full, or at the end of the loop
iteration, as Java's accumulator closes at ``subEntrySize`` or its publishing delay).
As in Java (SubEntryMessageAccumulator.java: ``batch.publishingId =
lastMessageInBatch.publishingId()``) every message still gets its own publishing id and
the batch goes out under its last message's id; its confirm resolves each message's
future with the message's own id. The window counts batches (one publishing id each,
which is what the broker confirms and counts credit by).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, Literal

from wirestream.generated.rabbitmq_stream.v1 import CompressionType, SubEntryBatch
from wirestream.runtime.errors import ConnectionLost, LocalProtocolError
from wirestream.runtime.rabbitmq_stream.aio.link import Link
from wirestream.runtime.rabbitmq_stream.amqp import AmqpMessage, encode_body, encode_message
from wirestream.runtime.rabbitmq_stream.chunk import sub_entry_batch
from wirestream.runtime.rabbitmq_stream.compression import compression_type
from wirestream.runtime.rabbitmq_stream.errors import MessageTooLarge, ResponseError
from wirestream.runtime.rabbitmq_stream.publish_limits import (
    OpenBatch,
    batch_refusal,
    frame_refusal,
    record_refusal,
    unchecked_size,
)
from wirestream.runtime.rabbitmq_stream.events import (
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublisherDeclared,
    PublisherDeleted,
    PublishErrored,
)

__all__ = ["Producer", "BatchConfirmation", "Body", "Compression", "FilterValue"]

Body = bytes | AmqpMessage
"""A message body (wrapped in an AMQP 1.0 Data section unless the producer is raw),
or a whole ``AmqpMessage`` with properties."""

Compression = Literal["none", "gzip", "snappy", "lz4", "zstd"] | CompressionType
"""A sub-entry codec by the Java client's name for it, or the ``CompressionType``."""

FilterValue = Callable[[Body], "str | None"]
"""A filtering producer's function: the filter value of a body (None: none)."""


class BatchConfirmation:
    """Awaitable: every message of a ``send_many`` confirmed. Outcomes are per
    message: ``confirmed`` counts them, ``errors`` maps publishing id -> the broker's
    error; awaiting raises the first error after all are resolved."""

    __slots__ = ("publishing_ids", "confirmed", "errors", "_left", "_done")

    def __init__(self, count: int, done: asyncio.Future[None]) -> None:
        self.publishing_ids: list[int] = []
        self.confirmed = 0
        self.errors: dict[int, BaseException] = {}
        self._left = count
        self._done = done
        if not count:
            done.set_result(None)

    def _resolve(self, publishing_id: int, error: BaseException | None) -> None:
        if error is None:
            self.confirmed += 1
        else:
            self.errors[publishing_id] = error
        self._left -= 1
        if self._left == 0:
            self._finish()

    def _finish(self) -> None:
        if not self._done.done():
            if self.errors:
                self._done.set_exception(next(iter(self.errors.values())))
            else:
                self._done.set_result(None)

    def __await__(self) -> Generator[Any, None, None]:
        return self._done.__await__()


class _BatchWaiters:
    """Who waits for the messages of one sub-entry batch, behind its one publishing id:
    an outcome of that id resolves each message with its own id (Java calls every
    message's confirmation handler). Duck-types the future's ``done`` /
    ``set_result`` / ``set_exception`` so the confirm path needs no other branch."""

    __slots__ = ("ids", "waiters")

    def __init__(
        self, ids: list[int], waiters: list[asyncio.Future[int] | BatchConfirmation]
    ) -> None:
        self.ids = ids
        self.waiters = waiters

    def done(self) -> bool:
        return False

    def set_result(self, _batch_id: int) -> None:
        self._settle(None)

    def set_exception(self, error: BaseException) -> None:
        self._settle(error)

    def _settle(self, error: BaseException | None) -> None:
        for publishing_id, waiter in zip(self.ids, self.waiters):
            if isinstance(waiter, BatchConfirmation):
                waiter._resolve(publishing_id, error)
            elif not waiter.done():
                if error is None:
                    waiter.set_result(publishing_id)
                else:
                    waiter.set_exception(error)


_Held = tuple[
    bytes, "asyncio.Future[int] | BatchConfirmation | _BatchWaiters", SubEntryBatch | None
]
"""A message waiting for its outcome: the entry's bytes (b"" for a sub-entry batch),
who waits, and the sub-entry batch, compressed (None for a simple entry). A plain
tuple: one is made per message on the hot path."""

_HAND_OVER_AT = 512
"""Messages queued before they go to the engine and the socket without waiting for
the end of the loop turn: the broker starts on them while we encode the next ones."""


class Producer:
    """Create with ``Client.producer``. ``send`` / ``send_wait`` / ``send_many`` /
    ``send_batch``; ``flush`` waits for every outcome; ``close`` flushes and deletes
    the publisher."""

    def __init__(
        self,
        client: Link,
        publisher_id: int,
        stream: str,
        reference: str | None,
        max_in_flight: int,
        raw: bool,
        sub_entry_size: int = 1,
        compression: Compression = "none",
        filter_value: FilterValue | None = None,
    ) -> None:
        kind = compression_type(compression)  # ValueError: none of the five
        if not 1 <= sub_entry_size <= 0xFFFF:  # 'NumRecs:16'
            raise ValueError(f"sub_entry_size {sub_entry_size} is not 1..65535")
        if sub_entry_size == 1 and kind != CompressionType.NONE:
            # StreamProducerBuilder.java: "Sub-entry batching must be enabled to enable
            # compression" (sending single messages compressed is what send_batch does).
            raise ValueError(f"compression {kind.name} needs sub_entry_size > 1")
        if sub_entry_size > 1 and filter_value is not None:
            # StreamProducerBuilder.java: filtering and sub-entry batching do not go
            # together (a sub-entry batch has no filter value per message).
            raise ValueError("filter_value needs sub_entry_size 1 (batches carry no filter values)")
        self.sub_entry_size = sub_entry_size
        self.compression = kind
        self.client = client
        self.filter_value = filter_value
        self._filters: dict[int, str | None] = {}  # publishing id -> filter value (held ones)
        self.publisher_id = publisher_id
        self.stream = stream
        self.reference = reference
        self.max_in_flight = max_in_flight
        self.raw = raw
        self._loop = asyncio.get_running_loop()
        self._held: dict[int, _Held] = {}  # publishing id -> message, in id order
        self._queued: list[int] = []  # ids held but not yet handed to the engine
        self._next_id = 1  # the next automatic id (after the broker's stored sequence)
        self._last_id = 0  # the highest publishing id this producer used
        self._flush_scheduled = False
        self._declared = False  # on the current connection
        self._establishing = asyncio.Lock()
        self._credit = 0  # sends allowed before the window is looked at again
        self._room = asyncio.Event()  # set when the window has room
        self._settled = asyncio.Event()  # set when nothing is held
        self._settled.set()
        self.error: BaseException | None = None  # why the producer ended
        self._closed = False
        self.resent = 0  # messages re-sent after reconnects
        self.last_confirmed = 0
        # The open sub-entry batch (sub_entry_size > 1): its messages, ids, waiters.
        self._batch: OpenBatch[asyncio.Future[int] | BatchConfirmation] = OpenBatch()
        self._pace_at = max(1, _HAND_OVER_AT // sub_entry_size)  # queued entries
        self._largest = 0  # longer messages are looked at alone (``_oversized``), per declare

    # ------------------------------------------------------------------ declaring

    async def _establish(self) -> None:
        """Declare on the current connection unless already declared there (the
        recovery and the first declare can race after a drop)."""
        async with self._establishing:
            if not self._declared and not self._closed:
                await self._declare()

    async def _declare(self) -> None:
        """DeclarePublisher on the current connection; with a reference, ids continue
        after the broker's stored sequence (first time) or the held ones are
        reconciled with it (after a reconnect)."""
        client = self.client
        sequence = 0
        if self.reference is not None:
            sequence = await client.query_publisher_sequence(self.reference, self.stream)
        self._close_batch()  # its id is below anything sent from now on
        first = next(iter(self._held)) if self._held else self._last_id + 1
        await client.request(
            lambda e: e.declare_publisher(
                self.publisher_id,
                self.stream,
                self.reference,
                max_in_flight=self.max_in_flight,
                first_publishing_id=first,
            ),
            PublisherDeclared,
        )
        self._next_id = max(self._next_id, sequence + 1)
        self._largest = unchecked_size(client.engine.frame_max, self.filter_value is not None)
        if self.reference is not None:
            # Held ids the broker already stored were confirmed before the drop took
            # the confirm with it.
            for publishing_id in [pid for pid in self._held if pid <= sequence]:
                self._resolve(publishing_id, None)
        # Re-send what is still held before anything new, in id order: the broker
        # drops an id lower than one it has seen from the reference as a duplicate.
        self._queued = list(self._held)
        self.resent += len(self._queued)
        self._declared = True
        self._hand_over()
        self._room.set()

    async def _recover(self) -> None:
        """On a new connection: declare again (which re-sends what is held)."""
        if self._closed:
            return
        try:
            await self._establish()
        except ResponseError as refused:  # e.g. the stream was deleted meanwhile
            self._fail(refused)
            return
        await self._drain()

    def _connection_lost(self, error: BaseException) -> None:
        self._declared = False
        self._credit = 0
        self._room.clear()

    def _fail(self, error: BaseException) -> None:
        """The producer is over: everything held fails with ``error``."""
        if self.error is None:
            self.error = error
        self._closed = True
        self._declared = False
        self._credit = 0
        self.client.detach_producer(self.publisher_id)
        self._close_batch()
        for publishing_id in list(self._held):
            self._resolve(publishing_id, error)
        self._queued.clear()
        self._room.set()

    # ------------------------------------------------------------------ sending

    def _encode(self, body: Body) -> bytes:
        if isinstance(body, AmqpMessage):
            return encode_message(body)
        return body if self.raw else encode_body(body)

    def _room_for(self, count: int) -> int:
        """How many of ``count`` messages fit the window now."""
        if not self._declared:
            return 0
        engine = self.client.engine
        queued = len(self._queued) + (1 if self._batch else 0)  # the open batch is one
        return min(count, engine.publish_capacity(self.publisher_id) - queued)

    async def _wait_room(self) -> int:
        """Wait until the window has room; how many messages fit (also the new
        ``_credit``: sends count it down instead of asking the engine each time)."""
        while True:
            if self._closed:
                raise self.error or LocalProtocolError("the producer is closed")
            room = self._room_for(self.max_in_flight)
            if room > 0:
                self._credit = room
                return room
            self._room.clear()
            if not self._declared:
                await self.client.wait_ready()
            await self._room.wait()

    def _oversized(self, size: int, filter_value: str | None) -> MessageTooLarge | None:
        """Refused alone, before it joins a Publish frame (``publish_limits``)."""
        filtered = self.filter_value is not None
        return frame_refusal(self.client.engine.frame_max, size, filter_value, filtered)

    def _failed(self, error: BaseException) -> asyncio.Future[int]:
        future: asyncio.Future[int] = self._loop.create_future()
        future.set_exception(error)
        return future

    def _take_id(self, publishing_id: int | None) -> int:
        """The next publishing id (``publishing_id`` when given: above every id used)."""
        if publishing_id is None:
            publishing_id = max(self._next_id, self._last_id + 1)
        elif publishing_id <= self._last_id:
            raise LocalProtocolError(
                f"publishing id {publishing_id} does not follow {self._last_id} "
                "(ids must increase)"
            )
        self._last_id = publishing_id
        self._next_id = max(self._next_id, publishing_id + 1)
        return publishing_id

    def _hold(
        self,
        data: bytes,
        waiter: Any,
        publishing_id: int | None,
        batch: SubEntryBatch | None = None,
    ) -> int:
        publishing_id = self._take_id(publishing_id)
        self._held[publishing_id] = (data, waiter, batch)
        self._queued.append(publishing_id)
        self._settled.clear()
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._hand_over)
        return publishing_id

    def _add_to_batch(
        self,
        data: bytes,
        waiter: asyncio.Future[int] | BatchConfirmation,
        publishing_id: int | None,
    ) -> int:
        """Put one message in the open sub-entry batch (the caller took a credit when
        it opened one); closes it when full. Its publishing id."""
        publishing_id = self._take_id(publishing_id)
        if not self._batch:
            self._settled.clear()
            if not self._flush_scheduled:  # the end of this loop iteration closes it
                self._flush_scheduled = True
                self._loop.call_soon(self._hand_over)
        self._batch.add(data, publishing_id, waiter)
        if len(self._batch) >= self.sub_entry_size:
            self._close_batch()
        return publishing_id

    def _close_batch(self) -> None:
        """The open sub-entry batch, compressed, is held (and queued) under its last
        message's publishing id, as the Java client publishes it."""
        if not self._batch:
            return
        messages, ids, waiters = self._batch.take()
        batch = sub_entry_batch(messages, self.compression)
        group = _BatchWaiters(ids, waiters)
        frame_max = self.client.engine.frame_max
        if frame_max and 13 + 8 + 11 + len(batch.data) > frame_max:
            # A Publish frame of this one batch would exceed frame_max: its messages
            # fail now (Java: "Message batch is too big", a smaller sub_entry_size fits).
            group.set_exception(MessageTooLarge(
                f"a sub-entry batch of {len(ids)} messages is {len(batch.data)} bytes "
                f"{self.compression.name}-compressed: a Publish frame of it exceeds "
                f"frame_max {frame_max}"))  # fmt: skip
            if not self._held:
                self._settled.set()
            return
        last = ids[-1]
        self._held[last] = (b"", group, batch)
        self._queued.append(last)
        self._settled.clear()

    def _make_room_in_batch(self, size: int) -> MessageTooLarge | None:
        """Why a message of ``size`` bytes fits no sub-entry batch (it fails alone), else
        None -- having closed the open batch first if the message would take it past
        ``max_batch_size``: the producer never writes a batch that a consumer with the
        same limits refuses (``publish_limits``)."""
        limit = self.client.engine.max_batch_size
        if self._batch.would_pass(size, limit):
            self._close_batch()
        return record_refusal(limit, size)

    def _hand_over(self) -> None:
        """Give the queued messages to the engine in as few Publish frames as fit."""
        self._flush_scheduled = False
        if self._batch:
            self._close_batch()
        if not self._queued or not self._declared:
            return
        queued, self._queued = self._queued, []
        held = self._held
        simple: list[int] = []  # a run of simple entries (the hot path: one test each)
        batches: list[int] = []  # a run of sub-entry batches
        for publishing_id in queued:
            entry = held.get(publishing_id)
            if entry is None:
                continue  # resolved meanwhile (failed producer)
            if entry[2] is None:
                if batches:
                    self._publish_batches(batches)
                    batches = []
                simple.append(publishing_id)
                continue
            if simple:
                self._publish_simple(simple)
                simple = []
            batches.append(publishing_id)
        self._publish_simple(simple)
        self._publish_batches(batches)
        self.client.wakeup()

    def _publish_simple(self, ids: list[int]) -> None:
        if ids:
            held = self._held
            messages = [held[pid][0] for pid in ids]
            try:
                if self.filter_value is None:
                    self.client.engine.publish(self.publisher_id, messages, publishing_ids=ids)
                else:
                    values = [self._filters.get(pid) for pid in ids]
                    self.client.engine.publish_filtered(
                        self.publisher_id, messages, values, publishing_ids=ids
                    )
            except MessageTooLarge:
                # Held before a reconnect negotiated a smaller frame_max: those fail
                # alone (nothing was sent: the engine refuses before queueing), the rest go.
                self._drop_oversized(ids)
                self._publish_simple([pid for pid in ids if pid in held])

    def _publish_batches(self, ids: list[int]) -> None:
        if ids:
            held = self._held
            ready = [batch for pid in ids if (batch := held[pid][2]) is not None]
            self.client.engine.publish_sub_entries(self.publisher_id, ready, publishing_ids=ids)

    async def _pace(self) -> None:
        """Hand what is queued to the engine and the socket now; a producer far ahead
        of the socket waits for it (transport backpressure)."""
        self._hand_over()
        self.client.write_now()
        if self.client.backed_up():
            await self._drain()

    async def _drain(self) -> None:
        """Write and wait for the socket. A drop meanwhile is not this call's failure
        while the client recovers: what was sent is held and goes again."""
        try:
            await self.client.flush()
        except ConnectionLost:
            if not self.client.will_recover:
                raise

    async def send(self, body: Body, *, publishing_id: int | None = None) -> asyncio.Future[int]:
        """Queue one message; returns a future resolved with its publishing id when the
        broker confirms it (or failing with the broker's error). Waits only while the
        window of unconfirmed messages is full or the connection is being restored.
        With ``sub_entry_size`` > 1 the message joins the open sub-entry batch."""
        if self.sub_entry_size > 1:
            return await self._send_in_batch(body, publishing_id)
        data = self._encode(body)
        value = None if self.filter_value is None else self.filter_value(body)
        if len(data) > self._largest:
            refused = self._oversized(len(data), value)
            if refused is not None:  # refused alone: no publishing id, no window taken
                return self._failed(refused)
        future: asyncio.Future[int] = self._loop.create_future()
        if self._credit <= 0:
            await self._wait_room()
        self._credit -= 1
        pid = self._hold(data, future, publishing_id)
        if self.filter_value is not None:
            self._filters[pid] = value
        queued = len(self._queued)
        # The socket is looked at once per batch: at the first message queued since the
        # last hand-over (every send, for a caller that yields between sends) and every
        # _HAND_OVER_AT messages (a caller that does not).
        if queued >= _HAND_OVER_AT or (queued == 1 and self.client.backed_up()):
            await self._pace()
        return future

    async def _send_in_batch(self, body: Body, publishing_id: int | None) -> asyncio.Future[int]:
        data = self._encode(body)
        refused = self._make_room_in_batch(len(data))
        if refused is not None:  # refused alone: no publishing id, no window taken
            return self._failed(refused)
        if not self._batch:  # a new batch: one entry of the window
            if self._credit <= 0:
                await self._wait_room()
            self._credit -= 1
        future: asyncio.Future[int] = self._loop.create_future()
        self._add_to_batch(data, future, publishing_id)
        queued = len(self._queued)
        if queued >= self._pace_at or (queued == 1 and self.client.backed_up()):
            await self._pace()
        return future

    async def send_wait(self, body: Body, *, publishing_id: int | None = None) -> int:
        """Send one message and wait for its confirm; its publishing id."""
        return await (await self.send(body, publishing_id=publishing_id))

    async def send_many(
        self, bodies: Iterable[Body], *, publishing_id: int | None = None
    ) -> BatchConfirmation:
        """Queue messages (each its own publishing id, confirmed one by one); the
        returned object is awaitable for all of them. Waits as the window requires.
        ``publishing_id``: the first message's id (above every id used so far), the
        others following it one by one; by default ids continue as ``send``'s do.  A
        message over frame_max keeps its place in the ids but is not sent: it fails
        alone (``MessageTooLarge`` in ``errors``), the others go on."""
        if publishing_id is not None and publishing_id <= self._last_id:
            raise LocalProtocolError(
                f"publishing id {publishing_id} does not follow {self._last_id} "
                "(ids must increase)"
            )
        bodies = list(bodies)
        encoded = [self._encode(body) for body in bodies]
        values = [self.filter_value(body) for body in bodies] if self.filter_value else None
        confirmation = BatchConfirmation(len(encoded), self._loop.create_future())
        if self.sub_entry_size > 1:
            await self._send_many_in_batches(encoded, confirmation, publishing_id)
            return confirmation
        position = 0
        while position < len(encoded):
            room = await self._wait_room()
            chunk = encoded[position : position + room]
            if publishing_id is None:
                first = max(self._next_id, self._last_id + 1)
            else:  # the given ids, consecutive across the chunks
                first = publishing_id + position
            ids = range(first, first + len(chunk))
            if values is not None:
                self._filters.update(zip(ids, values[position : position + room]))
            self._held.update(zip(ids, [(data, confirmation, None) for data in chunk]))
            self._queued.extend(ids)
            if max(map(len, chunk)) > self._largest:  # (rare: looked at only then)
                self._drop_oversized(ids)
            self._last_id = ids[-1]
            self._next_id = max(self._next_id, self._last_id + 1)
            if self._held:  # (a chunk of only refused messages holds nothing)
                self._settled.clear()
            confirmation.publishing_ids.extend(ids)
            self._credit = 0
            position += room
            await self._pace()
        return confirmation

    def _drop_oversized(self, ids: Iterable[int]) -> None:
        """Held messages that fit no Publish frame fail alone under their ids (never
        sent: ``_hand_over`` skips what is no longer held; a gap in the ids is allowed,
        "ids must increase"); the others go on."""
        held = self._held
        for pid in ids:
            error = self._oversized(len(held[pid][0]), self._filters.get(pid))
            if error is not None:
                self._resolve(pid, error)

    async def _send_many_in_batches(
        self, encoded: list[bytes], confirmation: BatchConfirmation, publishing_id: int | None
    ) -> None:
        ids = confirmation.publishing_ids
        for index, data in enumerate(encoded):
            given = None if publishing_id is None else publishing_id + index
            refused = self._make_room_in_batch(len(data))
            if refused is not None:  # fails alone, under its place in the ids
                failed_id = self._take_id(given)
                ids.append(failed_id)
                confirmation._resolve(failed_id, refused)
                continue
            if not self._batch:  # a new batch: one entry of the window
                if self._credit <= 0:
                    await self._wait_room()
                self._credit -= 1
            ids.append(self._add_to_batch(data, confirmation, given))
            if len(self._queued) >= self._pace_at:
                await self._pace()
        await self._pace()

    async def send_batch(
        self,
        bodies: Sequence[Body],
        compression: Compression = "gzip",
        *,
        publishing_id: int | None = None,
    ) -> asyncio.Future[int]:
        """Queue ``bodies`` as one sub-entry batch ('Sub-entry batching': one
        publishing id, one confirm) compressed with ``compression`` ("none", "gzip",
        "snappy", "lz4", "zstd": the Java client's codecs, byte for byte); the future
        resolves with its publishing id when confirmed."""
        if self.filter_value is not None:
            raise LocalProtocolError(
                "a filtering producer cannot send sub-entry batches (they carry no filter "
                "values; Java refuses subEntrySize > 1 with filterValue too)"
            )
        kind = compression_type(compression)
        batch = sub_entry_batch([self._encode(body) for body in bodies], kind)
        refused = batch_refusal(self.client.engine.max_batch_size, batch.uncompressed_length)
        if refused is not None:
            return self._failed(refused)
        self._close_batch()  # the open batch's ids come first
        if self._credit <= 0:
            await self._wait_room()
        self._credit -= 1
        future: asyncio.Future[int] = self._loop.create_future()
        self._hold(b"", future, publishing_id, batch)
        await self._pace()
        return future

    # ------------------------------------------------------------------ outcomes

    def _resolve(self, publishing_id: int, error: BaseException | None) -> None:
        if self.filter_value is not None:
            self._filters.pop(publishing_id, None)
        held = self._held.pop(publishing_id, None)
        if held is None:
            return
        waiter = held[1]
        if isinstance(waiter, BatchConfirmation):
            waiter._resolve(publishing_id, error)
        elif waiter is not None and not waiter.done():
            if error is None:
                waiter.set_result(publishing_id)
            else:
                waiter.set_exception(error)
        if error is None and publishing_id > self.last_confirmed:
            self.last_confirmed = publishing_id
        if not self._held:
            self._settled.set()

    def _on_confirmed(self, event: PublishConfirmed) -> None:
        # _resolve(publishing_id, None) for each id, inlined: one PublishConfirm
        # carries hundreds of ids and this runs for every message.
        held = self._held
        if self.filter_value is not None:
            for publishing_id in event.publishing_ids:
                self._filters.pop(publishing_id, None)
        last = 0
        for publishing_id in event.publishing_ids:
            entry = held.pop(publishing_id, None)
            if entry is None:
                continue
            waiter = entry[1]
            if isinstance(waiter, BatchConfirmation):
                waiter.confirmed += 1
                waiter._left -= 1
                if waiter._left == 0:
                    waiter._finish()
            elif not waiter.done():
                waiter.set_result(publishing_id)
            last = publishing_id
        if last > self.last_confirmed:
            self.last_confirmed = last
        if not held:
            self._settled.set()
        self._room.set()

    def _on_errored(self, event: PublishErrored) -> None:
        self._resolve(event.publishing_id, event.error)
        self._room.set()

    def _on_abandoned(self, event: PublishAbandoned) -> None:
        # The connection ended with these unconfirmed: they stay held and are re-sent
        # on the next connection (or fail with the producer if there is none).
        if event.reason not in ("connection closed", "stream metadata changed"):
            # (the stream changed: PublisherClosed follows and fails them with its code)
            error = ConnectionLost(f"publisher {self.publisher_id}: {event.reason}")
            for publishing_id in event.publishing_ids:
                self._resolve(publishing_id, error)

    def _on_closed(self, event: PublisherClosed) -> None:
        """The stream went away ('MetadataUpdate'): the publisher is gone."""
        self._fail(ResponseError.from_code(event.code))

    def on_event(self, event: object) -> None:
        """Events of this publisher, routed here by the client."""
        if isinstance(event, PublishConfirmed):
            self._on_confirmed(event)
        elif isinstance(event, PublishErrored):
            self._on_errored(event)
        elif isinstance(event, PublishAbandoned):
            self._on_abandoned(event)
        elif isinstance(event, PublisherClosed):
            self._on_closed(event)

    @property
    def unconfirmed(self) -> int:
        """Messages sent or queued whose outcome has not arrived (a ``send_batch`` batch
        counts once; the messages of ``sub_entry_size`` batches one by one)."""
        if self.sub_entry_size == 1:
            return len(self._held)
        return len(self._batch) + sum(
            len(waiter.ids) if isinstance(waiter, _BatchWaiters) else 1
            for _, waiter, _ in self._held.values()
        )

    async def flush(self) -> None:
        """Wait until every message sent so far is confirmed or refused."""
        self._hand_over()
        await self._drain()
        await self._settled.wait()

    async def close(self) -> None:
        """Flush, then DeletePublisher (the broker forgets it; the reference's stored
        sequence stays for deduplication)."""
        if self._closed:
            return
        try:
            if self._declared:
                await self.flush()
                if self.client.is_open:
                    await self.client.request(
                        lambda e: e.delete_publisher(self.publisher_id), PublisherDeleted
                    )
        finally:
            self._closed = True
            self._credit = 0  # the next send looks at the window, and finds us closed
            self.error = self.error or LocalProtocolError("the producer is closed")
            self.client.detach_producer(self.publisher_id)
