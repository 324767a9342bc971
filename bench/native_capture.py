"""In-process capture -> Arrow: the Rust extension against the pure-Python paths.

    .venv/bin/python -m bench.native_capture [FRAMES]

A capture of 1,000,000 RSocket PAYLOAD frames (by default; 16 B metadata, 100 B data)
over 4 connections, read from the page cache on one core, best of 3, in the same run;
rates are of this process's CPU time (``time.process_time``), so that other work on a
shared machine does not count (the wall-clock rate of the native path is shown too):

- ``native``: ``FrameLogRows.native_batches`` (``wirestream.runtime._native``: record checks,
  decode and the frame log's Arrow buffers in Rust; ``make native``), record batches of
  the Spark frame log, as the capture source's tasks make them;
- ``arrow (Python)``: ``FrameLogRows.batches``, the pure-Python Arrow path (the source's
  path where the extension is not built), the same batches;
- ``plain loop``: ``scan_records`` + the generated ``decode`` + ``frame_row`` in a loop,
  no Arrow at all (the floor of any Python reader; bench.spark_pipeline's loop).

Targets (issue 28): native >= 10M frames/s and >= 20x the plain loop.

Then the same three paths on MQTT 5 PUBLISH frames (QoS 1, a topic, two properties, 100 B
payload; 1/4 as many frames): a frame log with a list of a union of structs per row, read
through the generated mapping (generated/rust/frame_log/mqtt_v5.rs).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from wirestream.generated.mqtt import v5 as mqtt
from wirestream.generated.mqtt.v5.spark import frame_row as mqtt_frame_row
from wirestream.generated.rsocket import v1_0 as rsocket
from wirestream.generated.rsocket.v1_0.spark import frame_row
from wirestream.runtime.capture import CaptureWriter, native
from wirestream.runtime.capture.reader import scan_chunks, scan_records
from wirestream.runtime.spark.capture_source import BATCH_ROWS, FrameLogRows, spark_module

FRAMES = 1_000_000
CONNECTIONS = 4
RUNS = 3
TARGET_RATE = 10_000_000
TARGET_VS_LOOP = 20.0
NAME = "rsocket/1.0"
MQTT = "mqtt/5"


def write_capture(path: Path, n: int, name: str = NAME, frame: bytes | None = None) -> Path:
    if frame is None:
        frame = rsocket.encode(
            rsocket.Payload(stream_id=1, metadata=b"m" * 16, data=b"x" * 100, next=True)
        )
    start = 1_700_000_000_000_000_000
    with CaptureWriter(path, name, max_file_bytes=None) as capture:
        for i in range(n):
            capture.record(1 + i % CONNECTIONS, "out" if i % 2 else "in", frame,
                           timestamp_ns=start + i * 1_000)  # fmt: skip
        return Path(capture.path)


def best(work: Callable[[], int], runs: int = RUNS) -> tuple[float, int, float]:
    """(best frames/s of CPU time, frames, best frames/s of wall time) of ``runs`` runs
    of ``work`` (which returns its count)."""
    rates, walls, count = [], [], 0
    for _ in range(runs):
        cpu, wall = time.process_time(), time.perf_counter()
        count = work()
        rates.append(count / (time.process_time() - cpu))
        walls.append(count / (time.perf_counter() - wall))
    return max(rates), count, max(walls)


def three_paths(
    name: str, path: Path, n: int, decode: Callable[[bytes], object],
    row: Callable[[object], object], slow_runs: int,
) -> tuple[tuple[float, int, float], float, float]:  # fmt: skip
    """The native path's ``best``, then the pure Arrow path's and the plain loop's rates
    (``slow_runs`` runs each), over the capture ``path`` of ``n`` frames of ``name``;
    every path must count ``n``."""
    schema = spark_module(FrameLogRows(name).protocol).FRAME_LOG_SCHEMA

    def by_native() -> int:
        return sum(b.num_rows for b in FrameLogRows(name).native_batches(str(path)))

    def by_python_arrow() -> int:
        chunks = scan_chunks(path, records_per_chunk=BATCH_ROWS)
        return sum(b.num_rows for b in FrameLogRows(name).batches(chunks, schema, str(path)))

    def by_plain_loop() -> int:
        count = 0
        for _, _, _, _, frame in scan_records(path):
            row(decode(frame))
            count += 1
        return count

    fast = best(by_native)
    arrow, got_arrow, _ = best(by_python_arrow, slow_runs)
    loop, got_loop, _ = best(by_plain_loop, slow_runs)
    if not fast[1] == got_arrow == got_loop == n:
        raise RuntimeError(f"frames: native {fast[1]}, arrow {got_arrow}, loop {got_loop}, not {n}")
    return fast, arrow, loop


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else FRAMES
    if not native.available(NAME):
        print(
            "native capture -> Arrow: wirestream.runtime._native is not built (make native); skipped"
        )
        return 1
    with tempfile.TemporaryDirectory(prefix="wirestream-bench-native-") as folder:
        path = write_capture(Path(folder) / "cap.wscap", n)
        size = path.stat().st_size
        print(f"capture -> Arrow, {n:,} RSocket PAYLOAD frames (16 B metadata, 100 B data), "
              f"{size / 1e6:.0f} MB, one core, best of {RUNS}")  # fmt: skip
        slow_runs = 1 if n >= 1_000_000 else RUNS  # the Python paths take seconds a run
        (fast, _, fast_wall), arrow, loop = three_paths(
            NAME, path, n, rsocket.decode, frame_row, slow_runs
        )
    print(f"  native (wirestream.runtime._native)   {fast:>12,.0f} frames/s  "
          f"{1e9 / fast:6.1f} ns/frame  {fast * size / n / 1e9:.2f} GB/s "
          f"(wall clock {fast_wall:,.0f} frames/s)")  # fmt: skip
    print(f"  arrow (pure Python)           {arrow:>12,.0f} frames/s  {1e9 / arrow:6.0f} ns/frame")
    print(f"  plain loop (decode+frame_row) {loop:>12,.0f} frames/s  {1e9 / loop:6.0f} ns/frame")
    rate_ok = "met" if fast >= TARGET_RATE else "NOT met"
    ratio_ok = "met" if fast / loop >= TARGET_VS_LOOP else "NOT met"
    print(f"  native: {fast / 1e6:.1f}M frames/s (target >= {TARGET_RATE / 1e6:.0f}M: {rate_ok}); "
          f"{fast / loop:.1f}x the plain loop (target >= {TARGET_VS_LOOP:.0f}x: {ratio_ok}), "
          f"{fast / arrow:.1f}x the pure Arrow path")  # fmt: skip
    if native.available(MQTT):
        compare_mqtt(max(1, n // 4))
    return 0


def compare_mqtt(n: int) -> None:
    """The three paths on MQTT 5 PUBLISH frames, in the same run."""
    frame = mqtt.encode(
        mqtt.Publish(qos=mqtt.QoS.AT_LEAST_ONCE, topic_name="sensors/room1/temp", packet_id=7,
                     properties=[mqtt.MessageExpiryInterval(60),
                                 mqtt.ContentType("application/json")],
                     payload=b"x" * 100)
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="wirestream-bench-native-") as folder:
        path = write_capture(Path(folder) / "mqtt.wscap", n, MQTT, frame)
        print(f"capture -> Arrow, {n:,} MQTT 5 PUBLISH frames ({len(frame)} B: two properties, "
              f"100 B payload), one core, best of {RUNS}")  # fmt: skip
        (fast, _, _), arrow, loop = three_paths(MQTT, path, n, mqtt.decode, mqtt_frame_row, 1)
    print(f"  native                        {fast:>12,.0f} frames/s  {1e9 / fast:6.1f} ns/frame")
    print(f"  arrow (pure Python)           {arrow:>12,.0f} frames/s  {1e9 / arrow:6.0f} ns/frame")
    print(f"  plain loop (decode+frame_row) {loop:>12,.0f} frames/s  {1e9 / loop:6.0f} ns/frame")
    print(f"  native: {fast / loop:.1f}x the plain loop, {fast / arrow:.1f}x the pure Arrow path")


if __name__ == "__main__":
    raise SystemExit(main())
