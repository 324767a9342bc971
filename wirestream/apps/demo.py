"""`make demo`, the project's main job: a market ticker -> Spark Structured Streaming ->
per-symbol event-time windows -> Parquet, with progress while it runs.

    make demo                   # the ticker is an in-process RSocket server (no broker)
    make demo SOURCE=rabbitmq   # the ticker publishes to a RabbitMQ stream on the
                                # project's broker (`make demo` starts it)
    make demo LIVE=1            # also a page drawing the windows as Spark closes them

1. The ticker (``wirestream.apps.ticker``) serves deterministic msgpack trades on an
   RSocket request-stream at tcp://127.0.0.1:<free port>, in a background thread of this
   process (the trades are made while Spark starts and replayed, like a recorded market,
   so the figures are the pipeline's); with SOURCE=rabbitmq it publishes them to the
   stream ``wirestream-demo-ticks``.
2. A Structured Streaming query reads them through the wirestream ``rsocket`` (or
   ``rabbitmq_stream``) source: each micro-batch asks for at most ``--batch`` trades
   (request-n = the batch's budget), so Spark's pace is the ticker's pace; with
   ``prefetch`` the next budget travels while Spark works on this one.
3. Per symbol and one-minute event-time window (watermark 10 s, trades arrive up to 3 s
   late): trades, volume, VWAP, low and high, appended to Parquet as windows close.
4. When every trade is in and the watermark has closed the windows it can, the query
   stops and the Parquet output is summarised, with the rate trades went through the
   windows, and drawn (per symbol: VWAP in its low..high band, volume bars) into a
   self-contained page beside the Parquet, ``out/demo/<source>/windows.html``, whose
   path is the demo's last line (``demo_chart``).  Everything lands under
   ``out/demo/``; Spark's own console output (its startup notes, WARN lines) goes to
   ``out/demo/spark.log`` instead of between the demo's lines.
5. With ``--live`` (``make demo LIVE=1``), before Spark starts, a page on 127.0.0.1 whose
   URL is printed: the same chart, drawn as each micro-batch closes windows, fed over
   RSocket-over-WebSocket (``demo_live``); it is served until Ctrl-C.

Ctrl-C stops the demo in order (the query, the ticker, the servers, Spark and its JVM:
nothing is left running) and exits 130 unless the run had finished; a second Ctrl-C, or
``STOP_DEADLINE`` seconds of stopping, exits at once.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from wirestream.runtime.spark.background import BackgroundLoop
from wirestream.apps.demo_chart import windows_from_rows, write_chart
from wirestream.apps.ticker import MARKET_OPEN, TICK_SCHEMA, TickerResponder, ticks

ROOT = Path.cwd()
"""Where ``make demo`` runs: the repository (its output goes to ``out/demo/`` there)."""
DEMO_STREAM = "wirestream-demo-ticks"
SHORT_JOB_CONF = {
    "spark.ui.showConsoleProgress": "false",
    # A job of seconds to minutes on 2 cores: the JVM's C2 compiler spent more CPU than
    # any other JVM thread (recompiling Spark's generated classes), more than its faster
    # code gave back; C1 alone cut the JVM's CPU per trade by a third (8.7 -> 5.6 us).
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}
"""The demo's (and the benchmarks') session settings: no console progress bars (the demo
prints its own progress), and a JVM tuned for a short job."""
LIVE_PACING = {"prefetch": "true", "maxWaitMs": "1000"}
"""The live source's throughput settings: wire and Spark overlap, and a batch waits up to
a second for its budget."""
WINDOW = "1 minute"
WATERMARK = "10 seconds"


class Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.start:5.1f}s] {text}", flush=True)


@contextlib.contextmanager
def jvm_output_to(path: Path) -> Iterator[None]:
    """Spark's JVM (and the Python workers it starts) write to ``path`` instead of this
    terminal: they inherit file descriptors 1 and 2 when the session starts, so those are
    pointed at the file while it starts, and back at the terminal afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def rsocket_ticker(
    background: BackgroundLoop, count: int, tape: Sequence[bytes] | None = None
) -> tuple[dict[str, str], Callable[[], None]]:
    from wirestream.runtime.rsocket import serve

    responder = TickerResponder(tape=tape)
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
    background: BackgroundLoop,
    count: int,
    uri: str,
    say: Callable[[str], None],
    tape: Sequence[bytes] | None = None,
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
        for tick in tape[:count] if tape is not None and len(tape) >= count else ticks(count):
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
    parser.add_argument("--ticks", type=int, default=1_000_000, help="trades to stream")
    parser.add_argument("--batch", type=int, default=200_000, help="maxRecordsPerTrigger")
    parser.add_argument("--uri", default="rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "demo")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up")
    parser.add_argument("--live", action="store_true",
                        help="also serve a page drawing the windows as Spark closes them "
                        "(on 127.0.0.1; its URL is printed) until Ctrl-C")  # fmt: skip
    parser.add_argument("--live-port", type=int, default=0, help="the live page's port (0: any)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:  # before Spark is up (then Ctrl-C is ours: Interrupts)
        print("\nCtrl-C: stopped", flush=True)
        return 130


def _run(args: argparse.Namespace) -> int:
    clock = Clock()
    out: Path = args.out / args.source
    shutil.rmtree(out, ignore_errors=True)
    title = f"wirestream demo: {args.ticks:,} trades via {args.source}, windows per symbol"
    print(f"wirestream demo: ticker -> {args.source} -> Spark Structured Streaming -> Parquet")

    tape: list[bytes] = []
    recording = threading.Thread(target=lambda: tape.extend(ticks(args.ticks)), daemon=True)
    recording.start()  # the market is made while Spark starts
    background = BackgroundLoop("demo ticker")
    live = None
    if args.live:  # up before Spark, so the page can be opened while Spark starts
        from wirestream.apps.demo_live import LiveChart

        live = LiveChart(background, f"{title} (live)", port=args.live_port)
        clock.say(f"live chart: {live.url} (fed over RSocket at {live.feed_url}; Ctrl-C stops)")
    from wirestream.runtime.spark import session

    if args.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local demo stays on loopback
    log = out / "spark.log"
    with jvm_output_to(log):
        # Errors only, no console progress bars: the demo prints its own progress.
        spark = session(args.master, app_name="wirestream-demo", log_level="ERROR",
                        conf=SHORT_JOB_CONF)  # fmt: skip
    interrupts = Interrupts()  # after the session: SparkContext installs a SIGINT handler
    clock.say(f"Spark {spark.version} {args.master} up (its own output: {_shown(log)})")
    recording.join()
    query: Any = None
    close_ticker: Callable[[], None] | None = None
    spark_up = True

    def stop_spark() -> None:  # once: a second spark.stop() would call the ended JVM
        nonlocal spark_up
        if spark_up:
            spark_up = False
            try:
                spark.stop()
            finally:
                end_jvm()

    seen = Watched(False)
    try:
        if args.source == "rsocket":
            options, close_ticker = rsocket_ticker(background, args.ticks, tape)
            clock.say(f"ticker serving {args.ticks:,} msgpack trades at {options['uri']} (RSocket)")
            source_format = "rsocket"
        else:
            options, close_ticker = rabbitmq_ticker(
                background, args.ticks, args.uri, clock.say, tape
            )
            source_format = "rabbitmq_stream"
        query = start_query(spark, source_format, options, out, args.batch)
        on_written: Callable[[int], None] | None = None
        if live is not None:
            chart = live

            def publish_written(written: int) -> None:
                # Every window written so far (the page gets the new ones): Spark reads
                # the sink's committed files, as the chart at the end does.
                chart.publish(windows_from_rows(spark.read.parquet(str(out / "windows")).collect()))

            on_written = publish_written

        seen = watch(query, args.ticks, args.timeout, clock, interrupts.stop, on_written)
        stopping, query = query, None  # stopped here, or by ``finally`` if this fails
        stopping.stop()
        closing, close_ticker = close_ticker, None
        closing()
        if seen.ok:
            trades, seconds = seen.steady
            clock.say(
                f"{seen.rate:,.0f} trades/s through the windows: {trades:,} trades in "
                f"{seconds:.1f} s after the first micro-batch, which took {seen.warm_up:.1f} s "
                "(Spark compiles the query and starts its Python workers in it)"
            )
            summarise(spark, out / "windows", clock)
            windows = windows_from_rows(spark.read.parquet(str(out / "windows")).collect())
            chart_path = write_chart(windows, out / "windows.html", title)
            print(f"\nchart of the windows: {chart_path.resolve()}", flush=True)
            if live is not None:
                live.publish(windows)
                live.finish()
        stop_spark()  # not needed by the page: the JVM is not kept while it is served
        if live is not None and seen.ok:
            clock.say(f"the live chart stays at {live.url} (the query has ended): Ctrl-C stops")
            while not interrupts.stop.wait(0.5):
                pass
            clock.say("Ctrl-C: stopped")
    finally:
        # Whatever ended the run (the end, Ctrl-C, an error): nothing is left running.
        # Every step runs even if one before it fails (ExitStack: last registered first).
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(interrupts.restore)
            cleanup.callback(stop_spark)
            cleanup.callback(background.close)
            if live is not None:
                cleanup.callback(live.close)
            if close_ticker is not None:
                cleanup.callback(close_ticker)
            if query is not None:
                cleanup.callback(query.stop)
    if not seen.ok and interrupts.stop.is_set():
        return 130
    return 0 if seen.ok else 1


JVM_EXIT_TIMEOUT = 15.0


def end_jvm() -> None:
    """Spark's JVM, ended before the demo returns: ``spark.stop()`` keeps it (a later
    session in this process would reuse it), and on its own it goes only after this
    process has exited (pyspark's gateway exits when its stdin, a pipe from here, closes),
    so it would outlive the demo for a while.  Closing that pipe ends it now (its Python
    workers end with it); one that does not exit in time is killed."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if not isinstance(process, subprocess.Popen):
        return  # no JVM of ours (a gateway given by PYSPARK_GATEWAY_PORT)
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(JVM_EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None


STOP_DEADLINE = 30.0
"""Seconds the demo may take to stop after Ctrl-C (the query, the servers, Spark) before
it exits anyway."""


class Interrupts:
    """Ctrl-C, handled: the first sets ``stop`` (the demo winds down in order: query
    stopped, servers closed, Spark stopped) and starts ``deadline``; a second Ctrl-C, or
    the deadline, ends the process at once.  Spark's JVM ends with it: it exits when its
    stdin, a pipe from this process, closes (pyspark's gateway)."""

    def __init__(self, deadline: float = STOP_DEADLINE) -> None:
        self.stop = threading.Event()
        self._deadline = deadline
        self._previous = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():
            _exit_now("a second Ctrl-C")
        self.stop.set()
        print("\nCtrl-C: stopping (the query, the servers, Spark); Ctrl-C again exits at once",
              flush=True)  # fmt: skip
        timer = threading.Timer(self._deadline, _exit_now,
                                args=(f"still stopping after {self._deadline:.0f} s",))  # fmt: skip
        timer.daemon = True
        timer.start()

    def restore(self) -> None:
        signal.signal(signal.SIGINT, self._previous)


def _exit_now(why: str) -> None:
    print(f"{why}: exiting now", file=sys.stderr, flush=True)
    os._exit(130)


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


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
        .options(**LIVE_PACING if source_format != "rabbitmq_stream" else {})
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
        .trigger(processingTime="0 seconds")
        .start()
    )


@dataclass
class Watched:
    """What ``watch`` saw: whether every trade went through, and each micro-batch that
    brought trades as (trades, start, end) on Spark's clock (epoch seconds)."""

    ok: bool
    batches: list[tuple[int, float, float]] = field(default_factory=list)

    @property
    def trades(self) -> int:
        return sum(rows for rows, _, _ in self.batches)

    @property
    def warm_up(self) -> float:
        """Seconds the first batch took: Spark compiles and starts its workers in it."""
        return self.batches[0][2] - self.batches[0][1] if self.batches else 0.0

    @property
    def steady(self) -> tuple[int, float]:
        """(trades, seconds) after the first batch: from its end to the last one's end."""
        if len(self.batches) < 2:
            return (self.trades, self.warm_up)
        return (self.trades - self.batches[0][0], self.batches[-1][2] - self.batches[0][2])

    @property
    def rate(self) -> float:
        trades, seconds = self.steady
        return trades / seconds if seconds > 0 else 0.0

    def __bool__(self) -> bool:
        return self.ok


def watch(
    query: Any,
    expected: int,
    timeout: float,
    clock: Clock,
    stop: threading.Event | None = None,
    on_written: Callable[[int], None] | None = None,
) -> Watched:
    """Print each micro-batch's progress until every trade is in and a batch has run on
    the final watermark (append mode writes a window once the watermark passes it), or
    ``stop`` is set (Ctrl-C).  ``on_written(windows)``: after each batch that wrote
    windows, with how many are written so far.

    Each batch's start and end come from Spark's own progress reports."""
    total, seen_batch, settled, closed = 0, -1, 0, 0
    batches: list[tuple[int, float, float]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stop is not None and stop.is_set():
            clock.say(f"stopped (Ctrl-C) with {total:,}/{expected:,} trades in")
            return Watched(False, batches)
        if query.exception() is not None:
            clock.say(f"query failed: {query.exception()}")
            return Watched(False)
        written = closed
        for progress in query.recentProgress:
            if progress["batchId"] <= seen_batch:
                continue
            seen_batch = progress["batchId"]
            rows = progress["numInputRows"]
            total += rows
            if rows:
                started = _epoch(progress["timestamp"])
                took = progress["durationMs"].get("triggerExecution", 0) / 1000
                batches.append((rows, started, started + took))
            watermark = progress.get("eventTime", {}).get("watermark", "")[11:19]
            state = (progress.get("stateOperators") or [{}])[0]
            closed += state.get("numRowsRemoved", 0)
            rate = progress.get("processedRowsPerSecond") or 0.0
            clock.say(
                f"batch {seen_batch:3d}: {rows:7,} trades ({rate:7,.0f} rows/s), "
                f"{total:9,}/{expected:,} in, watermark {watermark or '-':8}, "
                f"windows: {state.get('numRowsTotal', 0):3d} open, {closed:4d} written"
            )
            if total >= expected and rows == 0:
                settled += 1
        if on_written is not None and closed > written:
            on_written(closed)
        if settled:
            return Watched(True, batches)
        time.sleep(0.2)
    clock.say(f"gave up after {timeout:.0f}s with {total:,}/{expected:,} trades in")
    return Watched(False, batches)


def _epoch(timestamp: str) -> float:
    """A progress report's ISO 8601 UTC timestamp (``2026-11-25T10:04:33.123Z``)."""
    return datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


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
