"""RabbitMQ streams end to end: wirestream's asyncio client against rstream 1.1.1, side
by side in one run, on the same broker, 100-byte messages (issue 5).

Run: ``python -m bench.rabbitmq_runtime [N]`` (part of ``make bench``; needs the broker of
``make broker`` on 127.0.0.1:5552 and says so plainly when it is not there).

Figures (messages/s, best of ``REPEATS``, each on a fresh stream; ours and rstream's runs
alternate so both see the same machine load):

* publish with confirms: from the first send until the last PublishConfirm, like with
  like. Batch APIs (the headline): rstream's fastest confirmed path (``send_batch`` of
  1,000 + a confirm callback: ``bench.rstream_baseline``) against ours (``send_many`` of
  1,000, confirmed per message). Per-message APIs: rstream's ``send`` + callback (it
  flushes on a 0.5 s timer) against ours (``await producer.send(body)``, a future per
  message). rstream sends raw bytes; ours wraps every body in an AMQP 1.0 Data section
  (more work), so the ratios are conservative.
* consume: from subscribing at offset first until ``N`` messages reached the application,
  every offset checked. rstream: its callback with raw bytes. Ours: ``async for message
  in consumer`` reading ``message.body`` (every message's AMQP Data section decoded: a
  chunk's in one pass when the first of its messages is read); and
  ``async for batch in consumer.batches()`` reading ``batch.bodies`` (issue 28's batch
  API: a chunk at a time, every body decoded all the same).

Targets (issue 30): publish >= 2x rstream, consume >= 1.5x (issue 5's were 1.5x and 1x).
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from bench.broker import broker_up
from bench.rstream_baseline import HOST, PORT, rstream_consume, rstream_publish
from wirestream.runtime.rabbitmq_stream.aio import Client, connect

N_MESSAGES = 100_000
BODY_SIZE = 100
REPEATS = 3
BATCH = 1_000
TIMEOUT = 120.0
URI = f"rabbitmq-stream://guest:guest@{HOST}:{PORT}/%2f"
TARGETS = {"publish": 2.0, "consume": 1.5}


@asynccontextmanager
async def _fresh_stream(client: Client) -> AsyncIterator[str]:
    stream = f"bench-wirestream-{uuid.uuid4()}"
    await client.create_stream(stream)
    try:
        yield stream
    finally:
        await client.delete_stream(stream, missing_ok=True)


async def ours_publish(n: int = N_MESSAGES, size: int = BODY_SIZE, *, batch: int = 0) -> float:
    """Messages/s publishing ``n`` bodies with confirms (``batch`` 0: ``send`` per message
    with its future; else ``send_many`` of ``batch``)."""
    body = b"x" * size
    async with await connect(URI, connection_name="bench-wirestream-producer") as client:
        async with _fresh_stream(client) as stream:
            producer = await client.producer(stream)
            await producer.send_wait(b"warm-up")  # as the rstream run does
            started = time.perf_counter()
            async with asyncio.timeout(TIMEOUT):
                if batch:
                    confirmations = [
                        await producer.send_many([body] * min(batch, n - i))
                        for i in range(0, n, batch)
                    ]
                    for confirmation in confirmations:
                        await confirmation
                    confirmed = sum(c.confirmed for c in confirmations)
                else:
                    futures = [await producer.send(body) for _ in range(n)]
                    confirmed = 0
                    for future in futures:  # in order: most are done when reached
                        await future
                        confirmed += 1
            elapsed = time.perf_counter() - started
            if confirmed != n:
                raise RuntimeError(f"{confirmed} confirms, expected {n}")
            await producer.close()
    return n / elapsed


async def ours_consume(n: int = N_MESSAGES, size: int = BODY_SIZE) -> float:
    """Messages/s reading ``n`` pre-filled messages from offset first, each body decoded."""
    body = b"x" * size
    async with await connect(URI, connection_name="bench-wirestream-consumer") as client:
        async with _fresh_stream(client) as stream:
            producer = await client.producer(stream)
            for i in range(0, n, BATCH):
                await producer.send_many([body] * min(BATCH, n - i))
            await producer.close()
            return await read_rate(client, stream, n, size)


async def read_rate(client: Client, stream: str, n: int, size: int, label: str = "") -> float:
    """Messages/s of one consumer reading ``n`` messages of ``size`` bytes from offset
    first, every offset and body checked (each body decoded)."""
    started = time.perf_counter()
    expected = 0
    async with asyncio.timeout(TIMEOUT):
        consumer = await client.consumer(stream, "first")
        async for message in consumer:
            if message.offset != expected or len(message.body) != size:
                raise RuntimeError(f"{label}offset {message.offset}, expected {expected}")
            expected += 1
            if expected == n:
                break
    elapsed = time.perf_counter() - started
    await consumer.close()
    return n / elapsed


async def ours_consume_batches(n: int = N_MESSAGES, size: int = BODY_SIZE) -> float:
    """``ours_consume`` read with ``consumer.batches()``."""
    body = b"x" * size
    async with await connect(URI, connection_name="bench-wirestream-consumer") as client:
        async with _fresh_stream(client) as stream:
            producer = await client.producer(stream)
            for i in range(0, n, BATCH):
                await producer.send_many([body] * min(BATCH, n - i))
            await producer.close()
            return await batch_read_rate(client, stream, n, size)


async def batch_read_rate(client: Client, stream: str, n: int, size: int, label: str = "") -> float:
    """``read_rate`` with ``consumer.batches()``: every offset and body checked."""
    started = time.perf_counter()
    expected = 0
    async with asyncio.timeout(TIMEOUT):
        consumer = await client.consumer(stream, "first")
        async for batch in consumer.batches():
            bodies = batch.bodies
            if batch.first_offset != expected or any(len(b) != size for b in bodies):
                raise RuntimeError(f"{label}offset {batch.first_offset}, expected {expected}")
            expected += len(bodies)
            if expected >= n:
                break
    elapsed = time.perf_counter() - started
    await consumer.close()
    return n / elapsed


async def run_all(n: int = N_MESSAGES) -> dict[str, float]:
    rows: list[tuple[str, Callable[[], Awaitable[float]]]] = [
        ("publish: rstream send_batch x1000 + callback, raw", lambda: rstream_publish(n)),
        ("publish: ours send_many x1000, AMQP", lambda: ours_publish(n, batch=BATCH)),
        ("publish: rstream send() + callback, raw", lambda: rstream_publish(n, method="send")),
        ("publish: ours send() + a future each, AMQP", lambda: ours_publish(n)),
        ("consume: rstream callback, raw", lambda: rstream_consume(n)),
        ("consume: ours async for + .body, AMQP", lambda: ours_consume(n)),
        ("consume: ours batches() + .bodies, AMQP", lambda: ours_consume_batches(n)),
    ]
    runs: dict[str, list[float]] = {label: [] for label, _ in rows}
    for _ in range(REPEATS):  # alternate, so both sides share the machine's moods
        for label, measure in rows:
            runs[label].append(await measure())
    best = {label: max(values) for label, values in runs.items()}
    for label, values in runs.items():
        shown = ", ".join(f"{v:,.0f}" for v in values)
        print(f"  {label:<52} best {best[label]:>9,.0f} msg/s  (runs: {shown})")
    labels = [label for label, _ in rows]
    ratios = {  # like with like: each library's batch API, per-message API, consumer
        "publish": best[labels[1]] / best[labels[0]],
        "publish_each": best[labels[3]] / best[labels[2]],
        "consume": best[labels[5]] / best[labels[4]],
        "consume_batches": best[labels[6]] / best[labels[4]],
    }
    for name, ratio in ratios.items():
        target = TARGETS[name.split("_")[0]]
        verdict = "met" if ratio >= target else "MISSED"
        print(f"  ours / rstream {name:<14} {ratio:5.2f}x  (target >= {target}x: {verdict})")
    return ratios


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else N_MESSAGES
    if not broker_up():
        print(f"rabbitmq bench: no broker on {HOST}:{PORT}; start one with `make broker`")
        return 1
    print(
        f"RabbitMQ streams, wirestream vs rstream 1.1.1 -- Python {sys.version.split()[0]}, "
        f"broker {HOST}:{PORT}, {n:,} x {BODY_SIZE} B, best of {REPEATS}, higher is better"
    )
    started = time.perf_counter()
    asyncio.run(run_all(n))
    print(f"  total time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
