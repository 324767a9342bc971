"""wirestream.runtime.spark.gc_pause: every data source's executor read freezes the objects
alive at a task's start in a PySpark worker (so that the daemon's full collection after
each task walks only what tasks make), and nowhere else.

Each case runs in a fresh interpreter: a freeze cannot be undone for the objects it moved,
and the test process must stay an ordinary one.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

READS = textwrap.dedent("""
    import gc, sys, tempfile
    from pathlib import Path
    if sys.argv[1] == "worker":
        import pyspark.worker  # what a PySpark worker process has imported
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType
    from wirestream.generated.rsocket.v1_0 import Payload, encode
    from wirestream.runtime.capture import CaptureWriter
    from wirestream.runtime.spark.capture_source import CapturePartition, WirestreamCaptureSource
    from wirestream.runtime.spark.live_source import LiveRows
    from wirestream.runtime.spark.rabbitmq_source import (
        OffsetRange, RabbitMQStreamBatchReader, SourceSettings)
    from wirestream.runtime.spark.rsocket_source import RSocketStreamReader

    def frozen_by(read):
        gc.unfreeze()  # what the imports left is the previous case's
        read()
        return gc.get_freeze_count()

    def capture():
        folder = Path(tempfile.mkdtemp())
        with CaptureWriter(folder / "c.wscap", "rsocket/1.0", max_file_bytes=None) as w:
            w.record(1, "in", encode(Payload(stream_id=1, data=b"x", next=True)))
            path = Path(w.path)
        source = WirestreamCaptureSource({"path": str(folder)})
        reader = source.reader(source.schema())
        part = CapturePartition(str(path), 0, path.stat().st_size)
        assert sum(b.num_rows for b in reader.read(part)) == 1

    def live():
        schema = StructType([StructField("seq", LongType()),
                             StructField("received_at", LongType()),
                             StructField("metadata", BinaryType()),
                             StructField("payload", BinaryType())])
        reader = RSocketStreamReader({"uri": "tcp://127.0.0.1:9", "route": "r"}, schema)
        try:
            assert [b.num_rows for b in reader.read(LiveRows(0, [0], [None], [b"x"]))] == [1]
        finally:
            reader.stop()

    def rabbitmq():
        options = {"uri": "rabbitmq-stream://guest:guest@127.0.0.1:9/%2f", "stream": "s"}
        schema = StructType([StructField("offset", LongType())])
        reader = RabbitMQStreamBatchReader(options, schema)
        empty = OffsetRange(SourceSettings.parse(options), 3, 3)  # no broker needed
        assert list(reader.read(empty)) == []

    print(frozen_by(capture), frozen_by(live), frozen_by(rabbitmq))
    """)


def frozen_counts(process: str) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", READS, process], cwd=ROOT, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [int(n) for n in done.stdout.split()]


def test_each_sources_task_freezes_the_objects_alive_at_its_start_in_a_pyspark_worker() -> None:
    capture, live, rabbitmq = frozen_counts("worker")
    # the imports alone are tens of thousands of objects (pyspark, pyarrow, wirestream)
    assert min(capture, live, rabbitmq) > 10_000, (capture, live, rabbitmq)


def test_no_source_freezes_anything_outside_a_pyspark_worker() -> None:
    assert frozen_counts("driver") == [0, 0, 0]
