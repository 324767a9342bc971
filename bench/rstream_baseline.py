"""RabbitMQ stream throughput baseline: rstream 1.1.1 against the real broker (issue 5).

Run: ``python -m bench.rstream_baseline`` (a RabbitMQ 3.10 broker with the stream plugin on
127.0.0.1:5552, guest/guest: ``make broker``). Each run works on a fresh stream (uuid name)
that it creates and deletes. The building blocks, for side-by-side runs with our client:

* ``await rstream_publish(n, size)`` -> msgs/s, publishing WITH confirms: ``n`` bodies of
  ``size`` bytes, from the first send until the callback saw the last PublishConfirm.
  rstream's fastest confirmed path is ``Producer.send_batch(stream, batch,
  on_publish_confirm=callback)``: it writes one Publish frame per call at once and
  returns without waiting for the confirms, which arrive through the callback
  (``ConfirmationStatus`` per message). We call it with batches of ``PUBLISH_BATCH``
  messages and count the callbacks until all ``n`` ids are confirmed (any
  ``is_confirmed=False`` fails the run). Measured alternatives (``method=``):
  ``"send"`` (``Producer.send`` + callback) only buffers; a background task flushes the
  buffer every 0.5 s, so it waits on that timer and is slower; ``"send_wait"`` is one
  round trip per message (~100x slower). Before the clock starts one ``send_wait``
  declares the publisher and opens its connection (rstream does both lazily on the
  first send), so the figure is the steady publish rate, not connection setup.
* ``await rstream_consume(n, size)`` -> msgs/s: the stream is pre-filled with ``n``
  messages (``send_batch`` as above, confirmed), then the clock runs from
  ``Consumer.subscribe(offset=FIRST)`` until ``n`` messages reached the callback; the
  count, the bodies' size and the offsets 0..n-1 are checked. rstream's ``subscribe``
  opens the data connection itself, so its setup (a few ms) is inside the figure.
  ``initial_credit`` is rstream's default (10 chunks); rstream grants 1 more credit per
  chunk received.

Bodies: raw bytes by default (``rstream`` writes a ``bytes`` message verbatim as the
entry's data: no AMQP 1.0 encoding), so the baseline measures the stream protocol, not
rstream's pure-Python AMQP codec. ``amqp=True`` sends ``rstream.AMQPMessage(body=...)``
(encoded per message by rstream's ``_pyamqp``) and consumes with ``amqp_decoder``:
printed as extra figures.

Timing: ``time.perf_counter``; ``main`` prints each figure's ``REPEATS`` runs and the
best. Absolute figures are noisy on a shared machine: compare ratios from one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from rstream import (
    AMQPMessage,
    ConfirmationStatus,
    Consumer,
    ConsumerOffsetSpecification,
    MessageContext,
    OffsetType,
    Producer,
    amqp_decoder,
)

__all__ = [
    "HOST",
    "PORT",
    "PUBLISH_BATCH",
    "main",
    "rstream_consume",
    "rstream_publish",
]

HOST, PORT = "127.0.0.1", 5552
USERNAME = PASSWORD = "guest"
REPEATS = 3
N_MESSAGES = 100_000
BODY_SIZE = 100
PUBLISH_BATCH = 1_000  # messages per send_batch call (one Publish frame each; ~112 KB)
CONSUMER_INITIAL_CREDIT = 10  # rstream's default
TIMEOUT = 120.0  # seconds one measured phase may take before the run fails

# rstream logs connection teardown noise at ERROR while a client closes.
logging.getLogger("rstream").setLevel(logging.CRITICAL)


def _producer(connection_name: str) -> Producer:
    return Producer(
        HOST, PORT, username=USERNAME, password=PASSWORD, connection_name=connection_name
    )


@contextlib.asynccontextmanager
async def _fresh_stream() -> AsyncIterator[str]:
    """A new stream (uuid name), deleted on exit."""
    stream = f"bench-rstream-{uuid.uuid4()}"
    admin = _producer("bench-rstream-admin")
    await admin.start()
    try:
        await admin.create_stream(stream)
        yield stream
    finally:
        await admin.delete_stream(stream, missing_ok=True)
        await admin.close()


def _bodies(n: int, size: int, amqp: bool) -> list[Any]:
    if amqp:
        return [AMQPMessage(body=b"x" * size) for _ in range(n)]
    body = b"x" * size
    return [body] * n


class _ConfirmCounter:
    """The ``on_publish_confirm`` callback: counts confirms, notes when the last arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.confirmed = 0
        self.failed: list[ConfirmationStatus] = []
        self.done = asyncio.Event()
        self.finished_at = 0.0

    def __call__(self, status: ConfirmationStatus) -> None:
        if status.is_confirmed:
            self.confirmed += 1
        else:
            self.failed.append(status)
        if self.confirmed + len(self.failed) == self.expected:
            self.finished_at = time.perf_counter()
            self.done.set()

    def check(self) -> None:
        if self.failed:
            first = self.failed[0]
            raise RuntimeError(
                f"{len(self.failed)} messages not confirmed "
                f"(first: id {first.message_id}, code {first.response_code})"
            )
        if self.confirmed != self.expected:
            raise RuntimeError(f"{self.confirmed} confirms, expected {self.expected}")


async def _publish_confirmed(
    producer: Producer,
    stream: str,
    messages: list[Any],
    method: str = "send_batch",
    batch: int = PUBLISH_BATCH,
) -> float:
    """Publish ``messages`` and wait for every confirm; return the elapsed seconds."""
    counter = _ConfirmCounter(len(messages))
    started = time.perf_counter()
    if method == "send_batch":
        for i in range(0, len(messages), batch):
            await producer.send_batch(stream, messages[i : i + batch], on_publish_confirm=counter)
    elif method == "send":
        for message in messages:
            await producer.send(stream, message, on_publish_confirm=counter)
    elif method == "send_wait":
        for message in messages:
            await producer.send_wait(stream, message)
            counter(ConfirmationStatus(0, True))
    else:
        raise ValueError(f"unknown publish method {method!r}")
    await asyncio.wait_for(counter.done.wait(), TIMEOUT)
    counter.check()
    return counter.finished_at - started


async def rstream_publish(
    n: int = N_MESSAGES,
    size: int = BODY_SIZE,
    *,
    method: str = "send_batch",
    batch: int = PUBLISH_BATCH,
    amqp: bool = False,
) -> float:
    """Messages/s publishing ``n`` bodies of ``size`` bytes with confirms (module docstring)."""
    messages = _bodies(n, size, amqp)
    async with _fresh_stream() as stream:
        producer = _producer("bench-rstream-producer")
        await producer.start()
        try:
            await producer.send_wait(stream, b"warm-up")  # declares the publisher
            elapsed = await _publish_confirmed(producer, stream, messages, method, batch)
        finally:
            await producer.close()
    return n / elapsed


async def _prefill(stream: str, n: int, size: int, amqp: bool) -> None:
    producer = _producer("bench-rstream-prefill")
    await producer.start()
    try:
        await _publish_confirmed(producer, stream, _bodies(n, size, amqp))
    finally:
        await producer.close()


async def rstream_consume(
    n: int = N_MESSAGES,
    size: int = BODY_SIZE,
    *,
    initial_credit: int = CONSUMER_INITIAL_CREDIT,
    amqp: bool = False,
) -> float:
    """Messages/s delivering ``n`` pre-filled messages from offset first (module docstring)."""
    async with _fresh_stream() as stream:
        await _prefill(stream, n, size, amqp)
        received = 0
        next_offset = 0
        bad: list[str] = []
        done = asyncio.Event()
        finished_at = 0.0

        def on_message(message: Any, context: MessageContext) -> None:
            nonlocal received, next_offset, finished_at
            body = message.body if amqp else message  # amqp_decoder: the Data section
            if context.offset != next_offset:
                bad.append(f"offset {context.offset}, expected {next_offset}")
            elif len(body) != size:
                bad.append(f"body of {len(body)} bytes at offset {context.offset}")
            next_offset = context.offset + 1
            received += 1
            if received == n:
                finished_at = time.perf_counter()
                done.set()

        consumer = Consumer(
            HOST,
            PORT,
            username=USERNAME,
            password=PASSWORD,
            connection_name="bench-rstream-consumer",
        )
        await consumer.start()
        try:
            started = time.perf_counter()
            await consumer.subscribe(
                stream,
                on_message,
                decoder=amqp_decoder if amqp else None,
                offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None),
                initial_credit=initial_credit,
            )
            await asyncio.wait_for(done.wait(), TIMEOUT)
            await asyncio.sleep(0.05)  # nothing beyond the n messages may arrive
        finally:
            await consumer.close()
        if bad:
            raise RuntimeError(f"{len(bad)} bad deliveries, first: {bad[0]}")
        if received != n:
            raise RuntimeError(f"{received} messages delivered, expected {n}")
    return n / (finished_at - started)


async def _repeat(label: str, measure: Callable[[], Awaitable[float]]) -> float:
    runs = [await measure() for _ in range(REPEATS)]
    shown = ", ".join(f"{r:,.0f}" for r in runs)
    print(f"  {label:<52} best {max(runs):>9,.0f} msg/s  (runs: {shown})", flush=True)
    return max(runs)


async def run_all(n: int = N_MESSAGES, size: int = BODY_SIZE) -> dict[str, float]:
    """Every figure ``main`` prints, by label."""
    figures: dict[str, float] = {}
    figures["publish"] = await _repeat(
        f"publish+confirm, send_batch x{PUBLISH_BATCH}, raw bytes",
        lambda: rstream_publish(n, size),
    )
    figures["consume"] = await _repeat(
        f"consume from first, credit {CONSUMER_INITIAL_CREDIT}, raw bytes",
        lambda: rstream_consume(n, size),
    )
    figures["publish_amqp"] = await _repeat(
        f"publish+confirm, send_batch x{PUBLISH_BATCH}, AMQPMessage",
        lambda: rstream_publish(n, size, amqp=True),
    )
    figures["consume_amqp"] = await _repeat(
        f"consume from first, credit {CONSUMER_INITIAL_CREDIT}, amqp_decoder",
        lambda: rstream_consume(n, size, amqp=True),
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and not args[0].isdigit()):
        print("usage: python -m bench.rstream_baseline [N_MESSAGES]")
        return 2
    n = int(args[0]) if args else N_MESSAGES
    started = time.perf_counter()
    print(
        f"rstream 1.1.1 baseline -- Python {sys.version.split()[0]}, broker {HOST}:{PORT}, "
        f"{n:,} x {BODY_SIZE} B, higher is better"
    )
    asyncio.run(run_all(n))
    print(f"  total time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
