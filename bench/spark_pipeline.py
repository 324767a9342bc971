"""The data pipeline on Spark (issues 6, 18): decoding captures at scale.

Run: ``python -m bench.spark_pipeline [FRAMES]`` (``make bench`` runs ``capture_figures``
through ``bench.spark_ratios``; the streaming sources are ``bench.spark_streaming``).

Figures, all in one run on this machine:

* capture decode: a capture of ``FRAMES`` (default 1,000,000) RSocket 1.0 frames -- a
  request-stream's traffic: PAYLOAD frames with 16 B metadata and 100 B data, a
  REQUEST_N every 64 -- read by the ``wirestream`` source into the full frame log and
  forced through Spark's ``noop`` sink (every column materialised, nothing written).
  Spark ``local[1]`` against ``local[2]`` (scaling; target >= 1.6x), the Arrow path
  against the row path (``arrow=false``), the native path (``wirestream.runtime._native``, the
  default where it is built) against the pure-Python Arrow path (``native=false``;
  issue 28's target >= 2x), the lean frame log (``frameTypes=PAYLOAD,REQUEST_N``: the
  same rows, 2 struct columns instead of 16) natively against that pure path (issue 28's
  target >= 4x) and against its own pure path, and a plain Python loop over the generated
  codec (``scan_records`` -> ``decode`` -> ``frame_row``, one core, no Spark) as the
  floor; ``local[2]`` against that loop is issue 18's target (>= 1.5x).  Also an
  analysis query, ``groupBy("frame_type").count()``, whose scaling is the same decode
  with less JVM work per row (the ``noop`` sink converts every column), and the costs
  behind the rates: a task's read per frame (CPU time, in-process) and a query's fixed
  cost (a 2-frame capture).  Best of ``REPEATS`` after one warm-up run (Python workers
  started), on the JVM ``wirestream.runtime.spark.session`` gives (not the demo's C1-only
  one for short micro-batches: ``bench.spark_support.quiet_session``).  ``capture_figures`` returns them all.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wirestream.generated.rsocket.v1_0 import Payload, RequestN, decode, encode
from wirestream.generated.rsocket.v1_0.spark import frame_row
from wirestream.runtime.capture import CaptureWriter
from wirestream.runtime.capture.reader import scan_records

FRAMES = 1_000_000
REPEATS = 3
TARGET_SCALING = 1.6
TARGET_VS_LOOP = 1.5  # issue 18: Spark local[2] against the plain one-core loop
TARGET_VS_PURE = 2.0  # issue 28: the native path against the pure-Python one, full frame log
TARGET_LEAN_VS_PURE = 4.0  # issue 28: native, lean frame log, against today's pure path (full)
LEAN = {"frameTypes": "PAYLOAD,REQUEST_N"}  # the capture's frame types: the same rows


def write_capture(path: Path, frames: int) -> int:
    """A request-stream's traffic: what a tapped RSocket client records."""
    metadata, data = bytes(range(16)), bytes(100)
    requests = encode(RequestN(stream_id=1, request_n=64))
    written = 0
    with CaptureWriter(path, "rsocket/1.0", max_file_bytes=None) as capture:
        connection = capture.new_connection_id()
        while written < frames:
            if written % 65 == 0:
                capture.record(connection, "out", requests)
            else:
                payload = Payload(stream_id=1, next=True, metadata=metadata, data=data)
                capture.record(connection, "in", encode(payload))
            written += 1
    return written


def python_loop(path: Path) -> float:
    """frames/s: the generated codec over the capture in a plain loop, one core."""
    start = time.perf_counter()
    n = 0
    for _, _, _, _, frame in scan_records(path):
        frame_row(decode(frame))
        n += 1
    return n / (time.perf_counter() - start)


def executor_read(path: Path) -> float:
    """us per frame of CPU time for what a task does with a capture, in this process: the
    source's Arrow path (record chunks -> decode -> column-wise batches), no Spark."""
    from wirestream.runtime.capture.reader import scan_chunks
    from wirestream.runtime.spark.capture_source import BATCH_ROWS, FrameLogRows, spark_module
    from wirestream.runtime.capture import get_protocol

    schema = spark_module(get_protocol("rsocket/1.0")).FRAME_LOG_SCHEMA
    start = time.process_time()
    rows = FrameLogRows("rsocket/1.0")
    n = 0
    for batch in rows.batches(scan_chunks(path, records_per_chunk=BATCH_ROWS), schema, str(path)):
        n += batch.num_rows
    return (time.process_time() - start) / n * 1e6


def best_of(run: Callable[[], None], repeats: int = REPEATS) -> float:
    run()  # warm-up: Python workers started, classes loaded
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def spark_decode(master: str, path: Path, frames: int) -> dict[str, float]:
    from bench.spark_support import quiet_session

    # the library's default JVM: a scan of a million rows is no short job (quiet_session)
    spark = quiet_session(f"bench-{master}", master, short_jobs=False)
    try:

        def read(arrow: bool, native: bool = True, **options: str) -> Callable[[], None]:
            def run() -> None:
                df = spark.read.format("wirestream").option("arrow", str(arrow).lower())
                df = df.option("native", str(native).lower()).options(**options)
                df.load(str(path)).write.format("noop").mode("overwrite").save()

            return run

        def count_types() -> None:
            frame_log = spark.read.format("wirestream").load(str(path))
            frame_log.groupBy("frame_type").count().collect()

        result = {"arrow": frames / best_of(read(True)), "analysis": frames / best_of(count_types)}
        if master == "local[2]":
            result["rows"] = frames / best_of(read(False), repeats=1)
            # issue 28: the Rust extension's batches against the pure-Python Arrow path
            result["pure"] = frames / best_of(read(True, native=False))
            # the lean frame log (frameTypes: 2 struct columns, not 16), both paths
            result["lean"] = frames / best_of(read(True, **LEAN))
            result["pure_lean"] = frames / best_of(read(True, native=False, **LEAN))
            tiny = path / "_tiny"  # "_": not one of the capture's files
            tiny.mkdir()
            write_capture(tiny / "rsocket.wscap", 2)

            def query() -> None:
                df = spark.read.format("wirestream").load(str(tiny))
                df.write.format("noop").mode("overwrite").save()

            result["fixed"] = best_of(query)
        return result
    finally:
        spark.stop()


def capture_figures(frames: int = FRAMES) -> dict[str, float]:
    """Capture decoding: frames/s of the plain loop (``loop``), of Spark ``local[1]`` and
    ``local[2]`` on the Arrow path (``local1``, ``local2``), of the row path (``rows``), of
    the pure-Python Arrow path (``pure``; ``vs_pure`` = local2 / pure) and
    of the analysis query (``analysis1``, ``analysis2``); ``vs_loop`` (local[2] / loop, the
    issue-18 target ``TARGET_VS_LOOP``), ``scaling`` (local[2] / local[1]); per-frame and
    fixed costs: ``read_us`` (CPU us per frame of a task's read, in-process),
    ``query_fixed_s`` (a local[2] query over a 2-frame capture); the capture's
    ``megabytes`` and ``write_s``."""
    folder = Path(tempfile.mkdtemp(prefix="wirestream-bench-"))
    try:
        start = time.perf_counter()
        write_capture(folder / "rsocket.wscap", frames)
        write_s = time.perf_counter() - start
        files = sorted(folder.glob("rsocket*.wscap"))
        size = sum(f.stat().st_size for f in files)
        loop = python_loop(files[0])
        read_us = executor_read(files[0])
        one = spark_decode("local[1]", folder, frames)
        two = spark_decode("local[2]", folder, frames)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "frames": frames,
        "megabytes": size / 1e6,
        "write_s": write_s,
        "loop": loop,
        "local1": one["arrow"],
        "local2": two["arrow"],
        "rows": two["rows"],
        "pure": two["pure"],
        "vs_pure": two["arrow"] / two["pure"],
        "lean": two["lean"],
        "pure_lean": two["pure_lean"],
        "lean_vs_pure": two["lean"] / two["pure"],
        "lean_vs_pure_lean": two["lean"] / two["pure_lean"],
        "analysis1": one["analysis"],
        "analysis2": two["analysis"],
        "scaling": two["arrow"] / one["arrow"],
        "vs_loop": two["arrow"] / loop,
        "read_us": read_us,
        "query_fixed_s": two["fixed"],
    }


def verdict(ratio: float, target: float) -> str:
    return f"{ratio:.2f}x (target >= {target}x) {'PASS' if ratio >= target else 'FAIL'}"


def main(argv: list[str]) -> int:
    frames = int(argv[1]) if len(argv) > 1 else FRAMES
    c = capture_figures(frames)
    print(f"capture: {frames:,} RSocket frames, {c['megabytes']:.0f} MB, written in "
          f"{c['write_s']:.1f}s")  # fmt: skip
    print(f"  plain Python loop (decode + frame_row), one core: {c['loop']:10,.0f} frames/s")
    print(f"  Spark local[1], Arrow path:                       {c['local1']:10,.0f} frames/s")
    print(f"  Spark local[2], Arrow path:                       {c['local2']:10,.0f} frames/s")
    print(f"  Spark local[2], row path (arrow=false):           {c['rows']:10,.0f} frames/s")
    print(f"  Spark local[2], pure-Python Arrow (native=false): {c['pure']:10,.0f} frames/s")
    print(f"  Spark local[2], lean frame log ({LEAN}), native: {c['lean']:10,.0f} frames/s")
    print(f"  Spark local[2], lean frame log, native=false:     {c['pure_lean']:10,.0f} frames/s")
    print(f"  local[2] / plain loop: {verdict(c['vs_loop'], TARGET_VS_LOOP)}")
    print(f"  local[2] native / pure-Python Arrow path: {verdict(c['vs_pure'], TARGET_VS_PURE)}")
    print(f"  local[2] native lean / pure-Python Arrow path (full): "
          f"{verdict(c['lean_vs_pure'], TARGET_LEAN_VS_PURE)}; "
          f"native lean / pure lean: {c['lean_vs_pure_lean']:.2f}x")  # fmt: skip
    print(f"  scaling local[2] / local[1]: {verdict(c['scaling'], TARGET_SCALING)}")
    print(f"  Spark local[1] / local[2], groupBy(frame_type).count(): {c['analysis1']:,.0f} / "
          f"{c['analysis2']:,.0f} frames/s")  # fmt: skip
    print(f"  a task's read (chunks -> decode -> Arrow), one core: {c['read_us']:.2f} us/frame "
          f"CPU; a query's fixed cost (2 frames, local[2]): {c['query_fixed_s'] * 1e3:.0f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
