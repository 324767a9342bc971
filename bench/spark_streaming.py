"""The streaming sources against the raw clients they are built on (issue 18).

Run: ``python -m bench.spark_streaming [TICKS]`` (part of ``make bench`` through
``bench.spark_pipeline``; the RabbitMQ figures need the broker of ``make broker`` and say
so plainly when it is not there).

The same ``TICKS`` (default 2,000,000) msgpack trades of the demo's ticker (about 60 B
each), made once before anything is timed, travel every path; Spark is ``local[2]``
writing to the ``noop`` sink (every column materialised, nothing stored), payloads
decoded into ``symbol string, price double, qty long, ts timestamp``.

* ``rabbitmq_stream`` source: a stream holding the trades.  Raw: our consumer from offset
  first until the last message, ``async for`` reading each ``message.body``.  Spark: one
  ``Trigger.AvailableNow`` query over the whole stream (partitions of 50,000 offsets).
  Also (issue 28) our consumer's ``consumer.batches()`` reading each batch's ``bodies``
  against the same query with ``payloadFormat`` bytes (the bodies as they are: the same
  work on both sides; target >= 0.6).
* ``rsocket`` / ``rsio`` sources: the trades served by the ticker in this process
  (RSocket request-stream / rsio publisher).  Raw: our client in another process (as
  Spark's driver is), draining one request-stream / subscription.  Spark: budgets of
  ``LIVE_BUDGET`` with ``prefetch`` (the throughput choice), the query timed from its
  start until every trade is in.

Each figure is the best of ``REPEATS`` runs, raw and Spark alternating, after one small
warm-up query per source (Python workers started, the JIT warm), so both sides see the
same machine.  The ratio Spark / raw is what issue 18 sets targets on (>= 0.5).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from wirestream.apps.ticker import TICK_SCHEMA, TickerResponder, ticks

TICKS = 2_000_000
REPEATS = 2
WARM_UP = 100_000
LIVE_BUDGET = 200_000
URI = "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f"
PROGRESS_EVERY = 5.0  # seconds between progress lines of a long run


class Progress:
    """One line every ``PROGRESS_EVERY`` seconds while a long run goes on."""

    def __init__(self, what: str, total: int) -> None:
        self.what = what
        self.total = total
        self.start = self.last = time.perf_counter()

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY:
            self.last = now
            rate = done / (now - self.start)
            print(f"      ... {self.what}: {done:,}/{self.total:,} ({rate:,.0f}/s)", flush=True)


def record_tape(n: int) -> list[bytes]:
    start = time.perf_counter()
    tape: list[bytes] = []
    progress = Progress("making trades", n)
    for tick in ticks(n):
        tape.append(tick)
        if len(tape) % 100_000 == 0:
            progress.update(len(tape))
    print(f"  {n:,} trades made in {time.perf_counter() - start:.1f} s", flush=True)
    return tape


# ------------------------------------------------------------------ RabbitMQ stream


async def fill_stream(stream: str, tape: Sequence[bytes]) -> None:
    from wirestream.runtime.rabbitmq_stream.aio import connect

    progress = Progress(f"publishing to {stream}", len(tape))
    async with await connect(URI) as client:
        await client.create_stream(stream)
        producer = await client.producer(stream)
        for first in range(0, len(tape), 5_000):
            await producer.send_many(tape[first : first + 5_000])
            progress.update(first)
        await producer.flush()
        await producer.close()


async def delete_stream(stream: str) -> None:
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async with await connect(URI) as client:
        await client.delete_stream(stream, missing_ok=True)


async def raw_consume(stream: str, n: int) -> float:
    """Messages/s: our consumer from offset first until ``n`` bodies were read."""
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async with await connect(URI) as client:
        start = time.perf_counter()
        read = 0
        async with asyncio.timeout(600):
            consumer = await client.consumer(stream, "first")
            async for message in consumer:
                message.body
                read += 1
                if read == n:
                    break
        elapsed = time.perf_counter() - start
        await consumer.close()
    return n / elapsed


async def raw_consume_batches(stream: str, n: int) -> float:
    """Messages/s: our consumer's ``batches()`` from offset first until ``n`` bodies."""
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async with await connect(URI) as client:
        start = time.perf_counter()
        read = 0
        async with asyncio.timeout(600):
            consumer = await client.consumer(stream, "first")
            async for batch in consumer.batches():
                read += len(batch.bodies)
                if read >= n:
                    break
        elapsed = time.perf_counter() - start
        await consumer.close()
    return n / elapsed


def spark_rabbitmq(spark: Any, stream: str, n: int, msgpack: bool = True) -> float:
    """Rows/s: one AvailableNow query over the stream, from start until it ends
    (payloads decoded as trades, or ``msgpack=False``: the bodies as bytes)."""
    frame = spark.readStream.format("rabbitmq_stream").option("uri", URI)
    frame = frame.option("stream", stream)
    if msgpack:
        frame = frame.option("payloadFormat", "msgpack").option("payloadSchema", TICK_SCHEMA)
    frame = frame.load()
    start = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .trigger(availableNow=True)
        .option("checkpointLocation", tempfile.mkdtemp(prefix="wirestream-bench-"))
        .start()
    )
    if not query.awaitTermination(600):
        query.stop()
        raise RuntimeError("the rabbitmq_stream query did not end within 600 s")
    elapsed = time.perf_counter() - start
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    if query.exception() is not None or rows != n:
        raise RuntimeError(f"rabbitmq_stream query: {rows:,} rows of {n:,}: {query.exception()}")
    return n / elapsed


def rabbitmq_figures(spark: Any, tape: Sequence[bytes]) -> dict[str, float]:
    stream = f"wirestream-bench-{uuid.uuid4().hex[:8]}"
    warm = f"{stream}-warm"
    try:
        asyncio.run(fill_stream(warm, tape[:WARM_UP]))
        spark_rabbitmq(spark, warm, WARM_UP)
        asyncio.run(fill_stream(stream, tape))
        raw, source, batches, as_bytes = [], [], [], []
        for _ in range(REPEATS):
            raw.append(asyncio.run(raw_consume(stream, len(tape))))
            print(f"    raw consumer            {raw[-1]:>10,.0f} msg/s", flush=True)
            source.append(spark_rabbitmq(spark, stream, len(tape)))
            print(f"    rabbitmq_stream source  {source[-1]:>10,.0f} rows/s", flush=True)
            batches.append(asyncio.run(raw_consume_batches(stream, len(tape))))
            print(f"    consumer.batches()      {batches[-1]:>10,.0f} msg/s", flush=True)
            as_bytes.append(spark_rabbitmq(spark, stream, len(tape), msgpack=False))
            print(f"    source, bytes payload   {as_bytes[-1]:>10,.0f} rows/s", flush=True)
        return {"raw": max(raw), "spark": max(source), "batches": max(batches),
                "spark_bytes": max(as_bytes)}  # fmt: skip
    finally:
        for name in (stream, warm):
            asyncio.run(delete_stream(name))


# ------------------------------------------------------------------ live sources


def raw_in_subprocess(protocol: str, uri: str, n: int) -> float:
    """Items/s of our client draining ``n`` items in another process (as Spark's driver
    reads them in its own Python process)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.spark_streaming", "--raw", protocol, uri, str(n)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"raw {protocol} client failed: {done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


async def _raw_client(protocol: str, uri: str, n: int) -> float:
    received = 0
    if protocol == "rsocket":
        from wirestream.runtime.rsocket import connect

        peer = await connect(uri)
        start = time.perf_counter()
        async for _ in peer.request_stream(b'{"count": %d}' % n, None):
            received += 1
    else:
        from wirestream.runtime import rsio

        peer = await rsio.connect(uri)
        start = time.perf_counter()
        async for _ in peer.subscribe("ticks", args=str(n)):
            received += 1
    elapsed = time.perf_counter() - start
    await peer.close()
    if received != n:
        raise RuntimeError(f"received {received:,} of {n:,}")
    return n / elapsed


def serve_ticker(
    background: Any, protocol: str, tape: Sequence[bytes]
) -> tuple[str, Callable[[], None]]:
    """The trades served from ``tape``: RSocket request-stream ``{"count": n}``, or the
    rsio publisher ``ticks`` with args ``n``."""
    if protocol == "rsocket":
        from wirestream.runtime.rsocket import serve

        server = background.run(serve("tcp://127.0.0.1:0", TickerResponder(tape=tape)))
    else:
        from wirestream.runtime import rsio

        async def publish(args: str) -> AsyncIterator[bytes]:
            for tick in tape[: int(args)]:
                yield tick

        server = background.run(rsio.serve("tcp://127.0.0.1:0", publishers={"ticks": publish}))

    async def shut() -> None:
        closing = server.close()  # rsio's is a coroutine, RSocket's a plain call
        if closing is not None:
            await closing
        await server.wait_closed()

    return server.url, lambda: background.run(shut())


def spark_live(spark: Any, protocol: str, uri: str, n: int) -> float:
    """Rows/s of a query reading ``n`` items, from its start until every item is in."""
    reader = spark.readStream.format(protocol).option("uri", uri)
    if protocol == "rsocket":
        reader = reader.option("data", '{"count": %d}' % n)
    else:
        reader = reader.option("publisher", "ticks").option("args", str(n))
    frame = (
        reader.option("payloadFormat", "msgpack")
        .option("payloadSchema", TICK_SCHEMA)
        .option("maxRecordsPerTrigger", str(LIVE_BUDGET))
        .option("prefetch", "true")
        .option("maxWaitMs", "1000")
        .load()
    )
    start = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .trigger(processingTime="0 seconds")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="wirestream-bench-"))
        .start()
    )
    progress = Progress(f"{protocol} source", n)
    try:
        total, seen = 0, -1
        deadline = start + 600
        while total < n:
            if query.exception() is not None:
                raise RuntimeError(f"{protocol} query failed: {query.exception()}")
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{protocol} query: {total:,} of {n:,} rows in 600 s")
            for report in query.recentProgress:
                if report["batchId"] > seen:
                    seen = report["batchId"]
                    total += report["numInputRows"]
            progress.update(total)
            time.sleep(0.01)
        return total / (time.perf_counter() - start)
    finally:
        query.stop()


def live_figures(spark: Any, protocol: str, tape: Sequence[bytes]) -> dict[str, float]:
    from wirestream.runtime.spark.background import BackgroundLoop

    background = BackgroundLoop(f"bench {protocol} ticker")
    try:
        uri, close = serve_ticker(background, protocol, tape)
        try:
            spark_live(spark, protocol, uri, WARM_UP)
            raw, source = [], []
            for _ in range(REPEATS):
                raw.append(raw_in_subprocess(protocol, uri, len(tape)))
                print(f"    raw {protocol:<8} client     {raw[-1]:>10,.0f} items/s", flush=True)
                source.append(spark_live(spark, protocol, uri, len(tape)))
                print(f"    {protocol:<8} source         {source[-1]:>10,.0f} rows/s", flush=True)
            return {"raw": max(raw), "spark": max(source)}
        finally:
            close()
    finally:
        background.close()


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--raw":
        print(asyncio.run(_raw_client(argv[2], argv[3], int(argv[4]))))
        return 0
    if len(argv) > 1 and argv[1] == "--rabbitmq":
        return rabbitmq_main(int(argv[2]) if len(argv) > 2 else TICKS)
    from bench.spark_support import broker_up, quiet_session

    n = int(argv[1]) if len(argv) > 1 else TICKS
    tape = record_tape(n)
    spark = quiet_session("bench-streaming")
    try:
        for protocol in ("rsocket", "rsio"):
            print(live_figures(spark, protocol, tape))
        if broker_up():
            print(rabbitmq_figures(spark, tape))
    finally:
        spark.stop()
    return 0


def rabbitmq_main(n: int) -> int:
    """``python -m bench.spark_streaming --rabbitmq [TICKS]``: the RabbitMQ rows only."""
    from bench.spark_support import quiet_session

    tape = record_tape(n)
    spark = quiet_session("bench-streaming")
    try:
        figures = rabbitmq_figures(spark, tape)
        print(figures)
        print(f"source / consumer: {figures['spark'] / figures['raw']:.2f}x; "
              f"source (bytes) / consumer.batches(): "
              f"{figures['spark_bytes'] / figures['batches']:.2f}x (target >= 0.6)")  # fmt: skip
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
