"""RabbitMQ streams in the soak, against the real broker: per stream, a producer client
(with a reference: the broker deduplicates what a recovery re-sends) and a consumer
client reading from the first offset, both through the proxy, both recovering from
what it does to them; an unproxied check of the stream at the end.

Bodies are ``b"%08d"`` of the message's index, padded to sizes from 16 B to 16 KB.
Invariants: the consumer sees indices strictly increasing (no duplicate, no reorder,
checked as each arrives); every message confirmed to the producer reaches it; the
stream itself, read directly at the end, holds each index at most once, in order, and
every confirmed one.  A message not confirmed may be missing only when its own future
failed with a typed error.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from wirestream.runtime.errors import ConnectionLost, ProtocolError
from wirestream.runtime.rabbitmq_stream.aio import Client, Consumer, Producer, connect
from tests.support.chaos.context import LIMITS, STREAM_LIMIT, Soak
from tests.support.rabbitmq_stream_client_support import unique

__all__ = ["stream_pair"]

T = TypeVar("T")

SIZES = (16, 16, 200, 1_500, 16_000)
DRAIN_LIMIT = 90.0  # seconds for the last confirms and deliveries after the stop


@dataclass
class _Tally:
    sent: int = 0
    confirmed: int = 0
    failed: set[int] = field(default_factory=set)  # indices whose futures failed (typed)
    received: int = 0
    last: int = -1  # the consumer's last index
    gaps: set[int] = field(default_factory=set)  # indices the consumer skipped
    consumer_failed: bool = False  # its recovery gave up (typed): the stored check remains


def _body(index: int, size: int) -> bytes:
    head = b"%08d" % index
    return head + b"." * (size - len(head))


async def stream_pair(soak: Soak, admin: Client, proxied_uri: str, number: int) -> None:
    name = "rabbitmq"
    rng = soak.rng(f"{name}-{number}")
    stream = unique("soak")
    tally = _Tally()
    # no retention limit: the check reads the stream back from its first message, which
    # a size limit would have truncated away (~3.5 KB a message at a few thousand a
    # second passes 500 MB within a minute); the stream is deleted after the check
    await admin.create_stream(stream)
    try:
        async with await _connect(soak, proxied_uri, "producer") as producing, \
                await _connect(soak, proxied_uri, "consumer") as consuming:  # fmt: skip
            soak.ledger.connections[name] += 2
            reference, buffered = unique("soak-ref"), rng.choice((50, 2_000))
            producer = await _declare(soak, lambda: producing.producer(stream, reference=reference))
            consumer = await _declare(
                soak, lambda: consuming.consumer(stream, "first", max_buffered=buffered)
            )
            reading = asyncio.create_task(_read(soak, consumer, tally, slow=rng.random() < 0.3))
            try:
                await _publish(soak, producer, tally, rng)
                await _drain(soak, producer, tally, reading)
            finally:
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
                await _quietly(soak, consumer.close())
                await _quietly(soak, producer.close())
        await _check_stored(soak, admin, stream, tally)
        soak.ledger.elements[name] += tally.received
        soak.ledger.completed[name] += 1
    finally:
        await admin.delete_stream(stream, missing_ok=True)


async def _connect(soak: Soak, proxied_uri: str, role: str) -> Client:
    """A client through the proxy.  The first connection of a client is not recovered
    (a failure raises: ``connect``'s contract), so a cut during its handshake is
    counted and the next attempt made; once open, the client recovers by itself."""
    while True:
        try:
            async with asyncio.timeout(60.0):
                return await connect(proxied_uri, connection_name=unique(f"soak-{role}"),
                                     recovery_timeout=60.0, limits=LIMITS)  # fmt: skip
        except ProtocolError as error:
            soak.ledger.failure("rabbitmq connect", error)
        except TimeoutError:
            soak.ledger.violation("rabbitmq connect: no end within 60 s")
            raise


async def _declare(soak: Soak, declaring: Callable[[], Awaitable[T]]) -> T:
    """A producer or consumer declared through the proxy: a declaration racing a cut
    fails with ConnectionLost and works once the client has recovered (tried again
    until the recovery's own 60 s are over)."""
    async with asyncio.timeout(90.0):
        while True:
            try:
                return await declaring()
            except ConnectionLost as error:
                soak.ledger.failure("rabbitmq declare", error)
                await asyncio.sleep(0.1)


async def _publish(soak: Soak, producer: Producer, tally: _Tally, rng: random.Random) -> None:
    def settled(index: int, future: asyncio.Future[int]) -> None:
        error = future.exception()
        if error is None:
            tally.confirmed += 1
        elif isinstance(error, ProtocolError):
            tally.failed.add(index)
            soak.ledger.failure("rabbitmq publish", error)
        else:
            soak.ledger.violation(f"rabbitmq message {index} failed untyped: {error!r}")

    while soak.running():
        burst = rng.randint(1, 300)
        size = rng.choice(SIZES)
        try:
            async with asyncio.timeout(STREAM_LIMIT):
                for _ in range(burst):
                    index = tally.sent
                    future = await producer.send(_body(index, size))
                    tally.sent += 1
                    future.add_done_callback(functools.partial(settled, index))
        except ProtocolError as error:
            soak.ledger.failure("rabbitmq send", error)
            return
        except TimeoutError:
            soak.ledger.violation(f"rabbitmq send: no room within {STREAM_LIMIT} s")
            return
        await asyncio.sleep(burst / soak.rabbitmq_rate * rng.uniform(0.5, 1.5))


async def _read(soak: Soak, consumer: Consumer, tally: _Tally, *, slow: bool) -> None:
    try:
        async for message in consumer:
            index = int(message.body[:8])
            if index <= tally.last:
                soak.ledger.violation(f"rabbitmq consumer: index {index} after {tally.last} "
                                      f"(offset {message.offset})")  # fmt: skip
                return
            tally.gaps.update(range(tally.last + 1, index))
            tally.last = index
            tally.received += 1
            if slow and tally.received % 64 == 0:
                await asyncio.sleep(0.01)  # ~6,000 messages/s at most
    except ProtocolError as error:
        tally.consumer_failed = True
        soak.ledger.failure("rabbitmq consume", error)


async def _drain(
    soak: Soak, producer: Producer, tally: _Tally, reading: asyncio.Task[None]
) -> None:
    """After the stop: every message settles (confirmed or failed), then the consumer
    reaches the last one."""
    try:
        async with asyncio.timeout(DRAIN_LIMIT):
            await producer.flush()
            while tally.last < tally.sent - 1 and not reading.done():
                await asyncio.sleep(0.01)
    except ProtocolError as error:
        soak.ledger.failure("rabbitmq flush", error)
    except TimeoutError:
        soak.ledger.violation(f"rabbitmq: not drained within {DRAIN_LIMIT} s (sent {tally.sent}, "
                              f"confirmed {tally.confirmed}, consumer at {tally.last})")  # fmt: skip
        return
    if tally.consumer_failed:
        return
    lost = {i for i in tally.gaps if i not in tally.failed}
    if tally.last < tally.sent - 1:
        lost |= {i for i in range(tally.last + 1, tally.sent) if i not in tally.failed}
    if lost:
        soak.ledger.violation(f"rabbitmq consumer: {len(lost)} confirmed messages never came, "
                              f"first {sorted(lost)[:5]}")  # fmt: skip


async def _check_stored(soak: Soak, admin: Client, stream: str, tally: _Tally) -> None:
    """Read the whole stream directly (no proxy): strictly increasing indices, every
    index present that did not fail.  A read the machine's load breaks (the admin
    connection's own timeout: a ``TransportTimeout`` is a ``TimeoutError`` too) is taken
    up again after the last index read, twice at most, and reported by its error: it
    says nothing about what the broker stored."""
    last = -1
    missing: list[int] = []
    want = next((i for i in range(tally.sent - 1, -1, -1) if i not in tally.failed), -1)
    broken: BaseException | None = None
    offset = 0  # of the next message to read (offsets count stored messages only)
    for _attempt in range(3):
        deadline = asyncio.timeout(DRAIN_LIMIT)
        consumer = await admin.consumer(stream, offset, until=tally.sent)
        broken = None
        try:
            # the stream holds at most what was sent: read until the last sent index or,
            # when some are missing, until the deadline proves it (a busy broker or
            # machine may pause for seconds: an idle timeout would prove nothing)
            async with deadline:
                while last < want:
                    message = await anext(consumer)
                    index = int(message.body[:8])
                    if index <= last:
                        soak.ledger.violation(
                            f"rabbitmq stream {stream}: index {index} stored after {last}"
                        )
                        return
                    missing.extend(i for i in range(last + 1, index) if i not in tally.failed)
                    last, offset = index, message.offset + 1
        except StopAsyncIteration:
            pass
        except TimeoutError as error:
            if not deadline.expired():
                broken = error  # not our deadline: the read broke, not the stream
        finally:
            await _quietly(soak, consumer.close())
        if broken is None:
            break
    if broken is not None:
        soak.ledger.violation(f"rabbitmq stream {stream}: the check's read failed three "
                              f"times, last with {broken!r}")  # fmt: skip
        return
    missing.extend(i for i in range(last + 1, tally.sent) if i not in tally.failed)
    if missing:
        soak.ledger.violation(f"rabbitmq stream {stream}: {len(missing)} messages not stored, "
                              f"first {missing[:5]}")  # fmt: skip


async def _quietly(soak: Soak, closing: Awaitable[None]) -> None:
    try:
        async with asyncio.timeout(30.0):
            await closing
    except ProtocolError as error:
        soak.ledger.failure("rabbitmq close", error)
    except TimeoutError:
        soak.ledger.violation("rabbitmq: a close did not end within 30 s")
