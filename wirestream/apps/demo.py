"""`make demo`, the project's main job: a market ticker -> Spark Structured Streaming ->
per-symbol event-time windows -> Parquet, with progress while it runs.

    make demo                   # the ticker is an in-process RSocket server (no broker)
    make demo SOURCE=rabbitmq   # the ticker publishes to a RabbitMQ stream on the
                                # project's broker (`make demo` starts it)

1. The ticker (``wirestream.apps.ticker``) serves deterministic msgpack trades on an
   RSocket request-stream at tcp://127.0.0.1:<free port>, in a background thread of this
   process; with SOURCE=rabbitmq it publishes them to the stream ``wirestream-demo-ticks``.
2. A Structured Streaming query reads them through the wirestream ``rsocket`` (or
   ``rabbitmq_stream``) source: each micro-batch asks for at most ``--batch`` trades
   (request-n = the batch's budget), so Spark's pace is the ticker's pace.
3. Per symbol and one-minute event-time window (watermark 10 s, trades arrive up to 3 s
   late): trades, volume, VWAP, low and high, appended to Parquet as windows close.
4. When every trade is in and the watermark has closed the windows it can, the query
   stops and the Parquet output is summarised.  Everything lands under ``out/demo/``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wirestream.runtime.spark.background import BackgroundLoop
from wirestream.apps.ticker import MARKET_OPEN, TICK_SCHEMA, TickerResponder, ticks

ROOT = Path(__file__).resolve().parent.parent
DEMO_STREAM = "wirestream-demo-ticks"
WINDOW = "1 minute"
WATERMARK = "10 seconds"


class Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.start:5.1f}s] {text}", flush=True)


def rsocket_ticker(
    background: BackgroundLoop, count: int
) -> tuple[dict[str, str], Callable[[], None]]:
    from wirestream.runtime.rsocket import serve

    responder = TickerResponder()
    server = background.run(serve("tcp://127.0.0.1:0", responder))
    options = {
        "uri": server.url,
        "interaction": "stream",
        "data": '{"count": %d}' % count,
    }

    async def shut() -> None:
        server.close()
        await server.wait_closed()

    def close() -> None:
        background.run(shut())

    return options, close


def rabbitmq_ticker(
    background: BackgroundLoop, count: int, uri: str, say: Callable[[str], None]
) -> tuple[dict[str, str], Callable[[], None]]:
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async def prepare() -> Any:
        client = await connect(uri)
        await client.delete_stream(DEMO_STREAM, missing_ok=True)
        await client.create_stream(DEMO_STREAM)
        return client

    client = background.run(prepare())

    async def publish() -> None:
        producer = await client.producer(DEMO_STREAM)
        batch: list[bytes] = []
        for tick in ticks(count):
            batch.append(tick)
            if len(batch) == 5000:
                await producer.send_many(batch)
                batch = []
        if batch:
            await producer.send_many(batch)
        await producer.flush()
        await producer.close()

    publishing = background.submit(publish())
    say(f"ticker publishing {count:,} trades to RabbitMQ stream {DEMO_STREAM!r} at {uri}")
    options = {"uri": uri, "stream": DEMO_STREAM, "startingOffsets": "first"}

    def close() -> None:
        publishing.result(60)
        background.run(client.close())

    return options, close


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wirestream.apps.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--source", choices=("rsocket", "rabbitmq"), default="rsocket")
    parser.add_argument("--ticks", type=int, default=150_000, help="trades to stream")
    parser.add_argument("--batch", type=int, default=20_000, help="maxRecordsPerTrigger")
    parser.add_argument("--uri", default="rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "demo")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=100.0, help="seconds before giving up")
    args = parser.parse_args(argv)
    clock = Clock()
    out: Path = args.out / args.source
    shutil.rmtree(out, ignore_errors=True)
    print(f"wirestream demo: ticker -> {args.source} -> Spark Structured Streaming -> Parquet")

    background = BackgroundLoop("demo ticker")
    if args.source == "rsocket":
        options, close_ticker = rsocket_ticker(background, args.ticks)
        clock.say(f"ticker serving {args.ticks:,} msgpack trades at {options['uri']} (RSocket)")
        source_format = "rsocket"
    else:
        options, close_ticker = rabbitmq_ticker(background, args.ticks, args.uri, clock.say)
        source_format = "rabbitmq_stream"

    from wirestream.runtime.spark import session

    # Errors only, no console progress bars: the demo prints its own progress per batch.
    spark = session(args.master, app_name="wirestream-demo", log_level="ERROR",
                    conf={"spark.ui.showConsoleProgress": "false"})  # fmt: skip
    clock.say(f"Spark {spark.version} {args.master} up")
    query = start_query(spark, source_format, options, out, args.batch)
    ok = watch(query, args.ticks, args.timeout, clock)
    query.stop()
    close_ticker()
    background.close()
    if ok:
        summarise(spark, out / "windows", clock)
    spark.stop()
    return 0 if ok else 1


def start_query(
    spark: Any, source_format: str, options: dict[str, str], out: Path, batch: int
) -> Any:
    """The demo's streaming query: trades -> one-minute windows per symbol -> Parquet."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format(source_format)
    for key, value in options.items():
        reader = reader.option(key, value)
    raw = (
        reader.option("payloadFormat", "msgpack")
        .option("payloadSchema", TICK_SCHEMA)
        .option("maxRecordsPerTrigger", str(batch))
        .load()
    )
    windows = (
        raw.select("payload.*")
        .withWatermark("ts", WATERMARK)
        .groupBy(F.window("ts", WINDOW), "symbol")
        .agg(
            F.count("*").alias("trades"),
            F.sum("qty").alias("volume"),
            (F.sum(F.col("price") * F.col("qty")) / F.sum("qty")).alias("vwap"),
            F.min("price").alias("low"),
            F.max("price").alias("high"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "symbol", "trades", "volume", "vwap", "low", "high",
        )  # fmt: skip
    )
    return (
        windows.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(out / "windows"))
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def watch(query: Any, expected: int, timeout: float, clock: Clock) -> bool:
    """Print each micro-batch's progress until every trade is in and a batch has run on
    the final watermark (append mode writes a window once the watermark passes it)."""
    total, seen_batch, settled, closed = 0, -1, 0, 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query.exception() is not None:
            clock.say(f"query failed: {query.exception()}")
            return False
        for progress in query.recentProgress:
            if progress["batchId"] <= seen_batch:
                continue
            seen_batch = progress["batchId"]
            rows = progress["numInputRows"]
            total += rows
            watermark = progress.get("eventTime", {}).get("watermark", "")[11:19]
            state = (progress.get("stateOperators") or [{}])[0]
            closed += state.get("numRowsRemoved", 0)
            rate = progress.get("processedRowsPerSecond") or 0.0
            clock.say(
                f"batch {seen_batch:3d}: {rows:6,} trades ({rate:7,.0f} rows/s), "
                f"{total:8,}/{expected:,} in, watermark {watermark or '-':8}, "
                f"windows: {state.get('numRowsTotal', 0):3d} open, {closed:4d} written"
            )
            if total >= expected and rows == 0:
                settled += 1
        if settled:
            return True
        time.sleep(0.2)
    clock.say(f"gave up after {timeout:.0f}s with {total:,}/{expected:,} trades in")
    return False


def summarise(spark: Any, path: Path, clock: Clock) -> None:
    from pyspark.sql import functions as F

    windows = spark.read.parquet(str(path))
    clock.say(
        f"{windows.count()} closed windows in {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
    )
    per_symbol = (
        windows.groupBy("symbol")
        .agg(
            F.count("*").alias("windows"),
            F.sum("trades").alias("trades"),
            F.sum("volume").alias("volume"),
            (F.sum(F.col("vwap") * F.col("volume")) / F.sum("volume")).alias("vwap"),
            F.min("low").alias("low"),
            F.max("high").alias("high"),
        )
        .orderBy("symbol")
        .collect()
    )
    print()
    print(
        f"{'symbol':<10}{'windows':>8}{'trades':>9}{'volume':>12}{'VWAP':>11}{'low':>10}{'high':>10}"
    )
    for row in per_symbol:
        print(f"{row.symbol:<10}{row.windows:>8}{row.trades:>9,}{row.volume:>12,}"
              f"{row.vwap:>11.4f}{row.low:>10.4f}{row.high:>10.4f}")  # fmt: skip
    first = windows.where(F.col("window_start") == F.lit(MARKET_OPEN)).orderBy("symbol").collect()
    if first:
        print(f"\nthe first minute of trading ({MARKET_OPEN:%H:%M} UTC):")
        for row in first:
            print(f"  {row.symbol:<10} {row.trades:5} trades  VWAP {row.vwap:9.4f}  "
                  f"low {row.low:9.4f}  high {row.high:9.4f}")  # fmt: skip
    print("\n(the last minute stays open: the watermark never passes it once the ticker stops)")


if __name__ == "__main__":
    sys.exit(main())
