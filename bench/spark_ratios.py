"""The Spark pipeline against the clients it is built on: every issue-18 ratio with its
target and PASS/FAIL, in one run (``make bench`` runs this last).

Run: ``python -u -m bench.spark_ratios [TICKS]``.  The parts and how each is measured:

* capture decoding: ``bench.spark_pipeline.capture_figures`` (1,000,000 frames);
* the streaming sources: ``bench.spark_streaming`` (``TICKS`` trades, default 2,000,000);
* the ``rabbitmq_stream`` sink: ``bench.spark_sink.sink_figures`` (2,000,000 messages);
* ``make demo``: the demo itself, in a subprocess, with its default 1,000,000 trades; its
  own rate line (steady state through the windows, after the warm-up batch) is the figure.

RabbitMQ rows need the broker of ``make broker``; without it they say so and FAIL.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from bench.spark_support import broker_up, quiet_session

DEMO_TARGET = 100_000  # trades/s


@dataclass
class Row:
    path: str
    rate: float | None  # None: not measured (``why``)
    unit: str
    baseline: str
    ratio: float | None
    target: float
    why: str = ""

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return "FAIL"
        return "PASS" if self.ratio >= self.target else "FAIL"


def say(text: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:6.1f}s] {text}", flush=True)


def demo_rate() -> float:
    """The steady rate ``make demo`` prints (trades/s through its windows)."""
    with tempfile.TemporaryDirectory(prefix="wirestream-bench-demo-") as out:
        done = subprocess.run(
            [sys.executable, "-m", "wirestream.apps.demo", "--out", out],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    found = re.search(r"([\d,]+) trades/s through the windows", done.stdout)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"make demo failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return float(found.group(1).replace(",", ""))


def main(argv: list[str]) -> int:
    from bench import spark_sink, spark_streaming
    from bench.spark_pipeline import TARGET_LEAN_VS_PURE, TARGET_VS_PURE, capture_figures

    ticks = int(argv[1]) if len(argv) > 1 else spark_streaming.TICKS
    started = time.perf_counter()
    rows: list[Row] = []

    say(
        "capture decoding: 1,000,000 RSocket frames, plain loop vs Spark local[1]/local[2]", started
    )
    capture = capture_figures()
    rows.append(Row("captures -> frame log, Spark local[2]", capture["local2"], "frames/s",
                    f"plain one-core loop {capture['loop']:,.0f} frames/s",
                    capture["vs_loop"], 1.5))  # fmt: skip
    rows.append(Row("captures -> frame log, local[2], native", capture["local2"], "frames/s",
                    f"pure-Python Arrow path {capture['pure']:,.0f} frames/s",
                    capture["vs_pure"], TARGET_VS_PURE))  # fmt: skip
    rows.append(Row("captures -> lean frame log, local[2], native", capture["lean"], "frames/s",
                    f"pure-Python Arrow path {capture['pure']:,.0f} frames/s",
                    capture["lean_vs_pure"], TARGET_LEAN_VS_PURE))  # fmt: skip

    say(f"streaming sources: {ticks:,} msgpack trades", started)
    tape = spark_streaming.record_tape(ticks)
    spark = quiet_session("bench-spark-ratios")
    try:
        for protocol, raw_name in (("rsocket", "request-stream"), ("rsio", "subscription")):
            say(f"{protocol} source vs our raw {raw_name}", started)
            live = spark_streaming.live_figures(spark, protocol, tape)
            rows.append(Row(f"{protocol} -> Spark streaming (prefetch)", live["spark"], "rows/s",
                            f"our {raw_name} {live['raw']:,.0f} msg/s",
                            live["spark"] / live["raw"], 0.5))  # fmt: skip
        if broker_up():
            say("rabbitmq_stream source vs our raw consumer", started)
            stream = spark_streaming.rabbitmq_figures(spark, tape)
            rows.append(Row("rabbitmq_stream -> Spark streaming (AvailableNow)", stream["spark"],
                            "rows/s", f"our consumer {stream['raw']:,.0f} msg/s",
                            stream["spark"] / stream["raw"], 0.5))  # fmt: skip
            rows.append(Row("rabbitmq_stream -> Spark, bytes payload", stream["spark_bytes"],
                            "rows/s", f"consumer.batches() {stream['batches']:,.0f} msg/s",
                            stream["spark_bytes"] / stream["batches"], 0.6))  # fmt: skip
            say("rabbitmq_stream sink vs our raw producer (confirmed)", started)
            sink = spark_sink.sink_figures(spark, progress=lambda text: say(text, started))
            rows.append(Row("Spark -> rabbitmq_stream sink (df.write)", sink["sink"], "rows/s",
                            f"our producer, confirmed {sink['raw']:,.0f} msg/s",
                            sink["ratio"], 0.5))  # fmt: skip
        else:
            why = "no broker on 127.0.0.1:5552 (make broker)"
            for path in ("rabbitmq_stream -> Spark streaming", "Spark -> rabbitmq_stream sink"):
                rows.append(Row(path, None, "", "", None, 0.5, why))
    finally:
        spark.stop()

    say("make demo (1,000,000 trades, its own rate line)", started)
    demo = demo_rate()
    rows.append(Row("make demo: ticker -> rsocket -> windows -> Parquet", demo, "trades/s",
                    f"target {DEMO_TARGET:,} trades/s", demo / DEMO_TARGET, 1.0))  # fmt: skip

    print()
    print(f"Spark pipeline (issue 18), local[2], {ticks:,} trades a streaming run "
          f"(best of {spark_streaming.REPEATS}):")  # fmt: skip
    print(f"  {'path':<52} {'rate':>16}  {'against':<40} {'ratio':>6}  target  verdict")
    for row in rows:
        rate = f"{row.rate:,.0f} {row.unit}" if row.rate is not None else row.why
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
        print(
            f"  {row.path:<52} {rate:>16}  {row.baseline:<40} {ratio:>6}  "
            f">= {row.target}x  {row.verdict}"
        )
    print(f"  capture costs: a task's read {capture['read_us']:.2f} us/frame (CPU, in-process), "
          f"a query's fixed cost {capture['query_fixed_s']:.2f} s")  # fmt: skip
    say("done", started)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
