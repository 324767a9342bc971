"""The ``rabbitmq_stream`` Spark sink against our raw producer (issue 18).

Run: ``python -m bench.spark_sink [N]`` (``bench.spark_pipeline`` calls ``sink_figures``
in ``make bench``; needs the broker of ``make broker`` on 127.0.0.1:5552).

Figures, messages/s, each on a fresh stream, ``N`` (default 2,000,000) x 100-byte bodies;
the raw producer and the batch sink alternate ``REPEATS`` times, best of each:

* raw producer: ``bench.rabbitmq_runtime.ours_publish(n, batch=1000)`` -- one asyncio
  client in this process, ``send_many`` of 1,000, every message confirmed;
* sink, batch: ``spark.range(n)`` (``local[2]``: 2 partitions) with a 100-byte binary
  ``payload`` column built in Spark (``lpad`` of the id), ``df.write.format(
  "rabbitmq_stream").save()``, timed from the call until it returns (a task returns only
  once every message of its partition is confirmed); the stream's tail must then be
  exactly ``n``;
* sink, streaming: the same rows written to Parquet first (not timed), read back with
  ``readStream`` and written by ``writeStream.format("rabbitmq_stream")`` under
  ``trigger(availableNow=True)``, timed from ``start()`` until the query ends (query
  start-up included).

The ratio sink / raw is issue 18's target (>= 0.5).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.rabbitmq_runtime import BODY_SIZE, HOST, PORT, URI, ours_publish

N_MESSAGES = 2_000_000
WARM_UP = 200_000
REPEATS = 2
TARGET = 0.5
TIMEOUT = 600.0


def payload_frame(spark: Any, n: int, partitions: int | None = None) -> Any:
    """``n`` rows, one ``payload`` column of ``BODY_SIZE`` bytes: the row's id padded."""
    frame = spark.range(0, n, 1, partitions) if partitions else spark.range(0, n)
    return frame.selectExpr(
        f"cast(lpad(cast(id AS string), {BODY_SIZE}, 'x') AS binary) AS payload"
    )


async def _with_client(work: Any) -> Any:
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async with await connect(URI, connection_name="bench-spark-sink") as client:
        return await asyncio.wait_for(work(client), 60)


def _create_stream() -> str:
    stream = f"bench-spark-sink-{uuid.uuid4()}"

    async def create(client: Any) -> None:
        await client.create_stream(stream)

    asyncio.run(_with_client(create))
    return stream


def _delete_stream(stream: str) -> None:
    async def delete(client: Any) -> None:
        await client.delete_stream(stream, missing_ok=True)

    asyncio.run(_with_client(delete))


def _tail(stream: str) -> int:
    from wirestream.runtime.spark.rabbitmq_broker import probe_bounds

    async def tail(client: Any) -> int:
        return (await probe_bounds(client, stream, head=False)).tail or 0

    result: int = asyncio.run(_with_client(tail))
    return result


def sink_batch(
    spark: Any, n: int, partitions: int | None = None, options: dict[str, str] | None = None
) -> float:
    """messages/s: a batch ``save()`` of ``n`` rows to a fresh stream, all confirmed."""
    stream = _create_stream()
    try:
        frame = payload_frame(spark, n, partitions)
        writer = frame.write.format("rabbitmq_stream").options(**(options or {}))
        started = time.perf_counter()
        writer.option("stream", stream).mode("append").save()
        elapsed = time.perf_counter() - started
        stored = _tail(stream)
        if stored != n:
            raise RuntimeError(f"sink bench: the stream holds {stored} messages, expected {n}")
        return n / elapsed
    finally:
        _delete_stream(stream)


def sink_streaming(spark: Any, n: int, partitions: int | None = None) -> float:
    """messages/s: ``writeStream`` of ``n`` rows (a Parquet folder read as a stream,
    ``availableNow``) to a fresh stream, from ``start()`` until the query ends."""
    folder = Path(tempfile.mkdtemp(prefix="wirestream-sink-bench-"))
    stream = _create_stream()
    try:
        payload_frame(spark, n, partitions).write.parquet(str(folder / "rows"))
        rows = spark.readStream.schema("payload binary").parquet(str(folder / "rows"))
        started = time.perf_counter()
        query = (
            rows.writeStream.format("rabbitmq_stream")
            .option("stream", stream)
            .option("checkpointLocation", str(folder / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            if not query.awaitTermination(TIMEOUT):
                raise RuntimeError(f"sink bench: the streaming write took over {TIMEOUT} s")
        finally:
            query.stop()
        elapsed = time.perf_counter() - started
        if query.exception() is not None:
            raise RuntimeError(f"sink bench: the streaming write failed: {query.exception()}")
        stored = _tail(stream)
        if stored != n:
            raise RuntimeError(f"sink bench: the stream holds {stored} messages, expected {n}")
        return n / elapsed
    finally:
        _delete_stream(stream)
        shutil.rmtree(folder, ignore_errors=True)


def sink_figures(
    spark: Any,
    n: int = N_MESSAGES,
    *,
    streaming: bool = True,
    repeats: int = REPEATS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """The raw producer's confirmed rate and the sink's, same volume, each run on a fresh
    stream, raw and sink alternating ``repeats`` times (best of each: both see the same
    machine load): {"raw", "sink", "ratio", and with ``streaming`` "streaming",
    "streaming_ratio"}; ``progress`` gets a line before each run."""
    say = progress or (lambda line: None)
    say(f"sink bench: warm-up ({min(n, WARM_UP):,} rows)")
    sink_batch(spark, min(n, WARM_UP))  # Python workers started, classes loaded
    raw: list[float] = []
    sink: list[float] = []
    for attempt in range(1, repeats + 1):
        say(f"sink bench: raw producer, {n:,} messages ({attempt}/{repeats})")
        raw.append(asyncio.run(ours_publish(n, batch=1000)))
        say(f"sink bench: df.write.save(), {n:,} rows ({attempt}/{repeats})")
        sink.append(sink_batch(spark, n))
    figures = {"raw": max(raw), "sink": max(sink)}
    figures["ratio"] = figures["sink"] / figures["raw"]
    if streaming:
        say(f"sink bench: writeStream availableNow, {n:,} rows")
        figures["streaming"] = sink_streaming(spark, n)
        figures["streaming_ratio"] = figures["streaming"] / figures["raw"]
    return figures


def report(figures: dict[str, float], n: int) -> None:
    verdict = "PASS" if figures["ratio"] >= TARGET else "FAIL"
    print(
        f"rabbitmq_stream sink, {n:,} x {BODY_SIZE} B, each on a fresh stream, best of {REPEATS}:"
    )
    print(f"  raw producer (send_many x1000, confirmed): {figures['raw']:10,.0f} msg/s")
    print(f"  sink, df.write.save():                     {figures['sink']:10,.0f} msg/s")
    if "streaming" in figures:
        print(f"  sink, writeStream availableNow:            {figures['streaming']:10,.0f} msg/s")
    print(f"  sink / raw: {figures['ratio']:.2f} (target >= {TARGET}) {verdict}")
    if "streaming" in figures:
        print(f"  streaming sink / raw: {figures['streaming_ratio']:.2f}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else N_MESSAGES
    from bench.spark_support import broker_up

    if not broker_up():
        print(f"sink bench: no broker on {HOST}:{PORT}; start one with `make broker`")
        return 1
    from wirestream.runtime.spark import session

    spark = session(
        "local[2]", app_name="bench-sink", conf={"spark.ui.showConsoleProgress": "false"}
    )
    try:
        report(sink_figures(spark, n, progress=lambda line: print(line, flush=True)), n)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
