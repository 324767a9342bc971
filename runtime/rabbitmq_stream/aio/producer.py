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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, Literal

from wirestream.generated.rabbitmq_stream.v1 import CompressionType
from wirestream.runtime.errors import ConnectionLost, LocalProtocolError
from wirestream.runtime.rabbitmq_stream.aio.link import Link
from wirestream.runtime.rabbitmq_stream.amqp import AmqpMessage, encode_body, encode_message
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.rabbitmq_stream.events import (
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublisherDeclared,
    PublisherDeleted,
    PublishErrored,
)

__all__ = ["Producer", "BatchConfirmation", "Body", "FilterValue"]

Body = bytes | AmqpMessage
"""A message body (wrapped in an AMQP 1.0 Data section unless the producer is raw),
or a whole ``AmqpMessage`` with properties."""

FilterValue = Callable[[Body], "str | None"]
"""A filtering producer's function: the filter value of a body (None: none)."""

_COMPRESSION = {"none": CompressionType.NONE, "gzip": CompressionType.GZIP}


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


_Held = tuple[
    bytes, "asyncio.Future[int] | BatchConfirmation", "tuple[list[bytes], CompressionType] | None"
]
"""A message waiting for its outcome: the entry's bytes (b"" for a sub-entry batch),
who waits, and the batch's messages and compression (None for a simple entry). A
plain tuple: one is made per message on the hot path."""

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
        filter_value: FilterValue | None = None,
    ) -> None:
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
        return min(count, engine.publish_capacity(self.publisher_id) - len(self._queued))

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

    def _hold(
        self,
        data: bytes,
        waiter: Any,
        publishing_id: int | None,
        batch: tuple[list[bytes], CompressionType] | None = None,
    ) -> int:
        if publishing_id is None:
            publishing_id = max(self._next_id, self._last_id + 1)
        elif publishing_id <= self._last_id:
            raise LocalProtocolError(
                f"publishing id {publishing_id} does not follow {self._last_id} "
                "(ids must increase)"
            )
        self._last_id = publishing_id
        self._next_id = max(self._next_id, publishing_id + 1)
        self._held[publishing_id] = (data, waiter, batch)
        self._queued.append(publishing_id)
        self._settled.clear()
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._hand_over)
        return publishing_id

    def _hand_over(self) -> None:
        """Give the queued messages to the engine in as few Publish frames as fit."""
        self._flush_scheduled = False
        if not self._queued or not self._declared:
            return
        engine = self.client.engine
        queued, self._queued = self._queued, []
        simple: list[int] = []
        for publishing_id in queued:
            held = self._held.get(publishing_id)
            if held is None:
                continue  # resolved meanwhile (failed producer)
            batch = held[2]
            if batch is None:
                simple.append(publishing_id)
                continue
            self._publish_simple(simple)
            simple = []
            messages, compression = batch
            engine.publish_batch(
                self.publisher_id, messages, compression, publishing_id=publishing_id
            )
        self._publish_simple(simple)
        self.client.wakeup()

    def _publish_simple(self, ids: list[int]) -> None:
        if ids:
            held = self._held
            messages = [held[pid][0] for pid in ids]
            if self.filter_value is None:
                self.client.engine.publish(self.publisher_id, messages, publishing_ids=ids)
            else:
                values = [self._filters.get(pid) for pid in ids]
                self.client.engine.publish_filtered(
                    self.publisher_id, messages, values, publishing_ids=ids
                )

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
        window of unconfirmed messages is full or the connection is being restored."""
        if self._credit <= 0:
            await self._wait_room()
        self._credit -= 1
        future: asyncio.Future[int] = self._loop.create_future()
        pid = self._hold(self._encode(body), future, publishing_id)
        if self.filter_value is not None:
            self._filters[pid] = self.filter_value(body)
        queued = len(self._queued)
        # The socket is looked at once per batch: at the first message queued since the
        # last hand-over (every send, for a caller that yields between sends) and every
        # _HAND_OVER_AT messages (a caller that does not).
        if queued >= _HAND_OVER_AT or (queued == 1 and self.client.backed_up()):
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
        others following it one by one; by default ids continue as ``send``'s do."""
        if publishing_id is not None and publishing_id <= self._last_id:
            raise LocalProtocolError(
                f"publishing id {publishing_id} does not follow {self._last_id} "
                "(ids must increase)"
            )
        bodies = list(bodies)
        encoded = [self._encode(body) for body in bodies]
        values = [self.filter_value(body) for body in bodies] if self.filter_value else None
        confirmation = BatchConfirmation(len(encoded), self._loop.create_future())
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
            self._last_id = ids[-1]
            self._next_id = max(self._next_id, self._last_id + 1)
            self._settled.clear()
            confirmation.publishing_ids.extend(ids)
            self._credit = 0
            position += room
            await self._pace()
        return confirmation

    async def send_batch(
        self,
        bodies: Sequence[Body],
        compression: Literal["none", "gzip"] | CompressionType = "gzip",
        *,
        publishing_id: int | None = None,
    ) -> asyncio.Future[int]:
        """Queue ``bodies`` as one sub-entry batch ('Sub-entry batching': one
        publishing id, one confirm, optionally gzip-compressed); the future resolves
        with its publishing id when confirmed."""
        if self.filter_value is not None:
            raise LocalProtocolError(
                "a filtering producer cannot send sub-entry batches (they carry no filter "
                "values; Java refuses subEntrySize > 1 with filterValue too)"
            )
        kind = _COMPRESSION[compression] if isinstance(compression, str) else compression
        messages = [self._encode(body) for body in bodies]
        if self._credit <= 0:
            await self._wait_room()
        self._credit -= 1
        future: asyncio.Future[int] = self._loop.create_future()
        self._hold(b"", future, publishing_id, (messages, kind))
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
        """Messages sent or queued whose outcome has not arrived."""
        return len(self._held)

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
