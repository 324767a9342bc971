"""The driver of the cluster tests (tests/spark/test_spark_cluster.py), run as its own process:
``python -m tests.support.spark_cluster_driver`` with the master's URL in
``WIRESTREAM_SPARK_MASTER`` (tests/support/spark_cluster.py ``ClusterDriver`` starts it).  It
starts a SparkSession on the cluster, then runs the scenarios it reads on stdin, one a
line: ``{"id": 1, "argv": ["capture", "--folder", "..."]}``.

It prints JSON lines on stdout, the test's view: ``{"event": "session", "driver_pid",
"app_id"}`` once, then per scenario (``command``: its id) ``{"event": "started", ...}``,
``{"event": "progress", ...}`` per micro-batch, ``{"event": "done", ...}`` with what was
read, or ``{"event": "error", "message": ...}``.  The checks are the test's;
this only runs Spark.  Each row read is tagged with the PID of the executor JVM its task
ran in (``executor_pid``), so the test can tell that work ran in the cluster's
executors, not in this process.

Scenarios:
  capture  --folder F                       spark.read.format("wirestream") over F
  rabbitmq --source S --target T --checkpoint C --expect N
                                            rabbitmq_stream S -> rabbitmq_stream T until
                                            N rows went through
  rsocket  --uri U --expect N --checkpoint C
                                            rsocket U -> foreachBatch collect, N rows
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

STARTED = time.monotonic()
DEADLINE = 150.0  # seconds a scenario may run before it gives up


_command: int | None = None  # the id of the scenario running


def emit(event: str, **fields: Any) -> None:
    elapsed = round(time.monotonic() - STARTED, 2)
    print(json.dumps({"event": event, "command": _command, "t": elapsed, **fields}), flush=True)


def executor_pid() -> int:
    """In a task: the PID of the executor JVM above this Python worker (-1: none, e.g. a
    local master, where Python workers run under the driver's JVM)."""
    pid = os.getpid()
    while pid > 1:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return -1
        if b"CoarseGrainedExecutorBackend" in command:
            return pid
        pid = int(stat.rpartition(")")[2].split()[1])
    return -1


def executor_column() -> Column:
    from pyspark.sql.functions import udf

    # Nondeterministic: the same call answers differently per process, so Spark must not
    # fold or reuse it.
    pid = udf(lambda: executor_pid(), "int").asNondeterministic()
    return pid().alias("executor_pid")


def spark_session() -> SparkSession:
    from wirestream.runtime.spark import session

    return session(
        os.environ["WIRESTREAM_SPARK_MASTER"],
        app_name="wirestream-cluster-tests",
        conf={
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.cores": "1",
            "spark.executor.memory": "512m",
            "spark.cores.max": "2",  # one executor on each worker
            "spark.task.maxFailures": "4",
            "spark.ui.showConsoleProgress": "false",
        },
    )


def capture(spark: SparkSession, args: argparse.Namespace) -> None:
    frames = (
        spark.read.format("wirestream")
        .option("protocol", "rsocket/1.0")
        .option("maxPartitionBytes", str(args.partition_bytes))
        .load(args.folder)
    )
    rows = frames.select("frame_type", "payload.data", executor_column()).collect()
    emit(
        "done",
        partitions=frames.rdd.getNumPartitions(),
        frames=[[r.frame_type, r.data.decode() if r.data else None] for r in rows],
        executors=sorted({r.executor_pid for r in rows}),
    )


def rabbitmq(spark: SparkSession, args: argparse.Namespace) -> None:
    query = (
        spark.readStream.format("rabbitmq_stream")
        .option("stream", args.source)
        .option("maxRecordsPerTrigger", str(args.max_records))
        .option("recordsPerPartition", str(args.records_per_partition))
        .load()
        .writeStream.format("rabbitmq_stream")
        .option("stream", args.target)
        .option("checkpointLocation", args.checkpoint)
        .start()
    )
    emit("started", app_id=spark.sparkContext.applicationId, query_id=str(query.id))
    follow(query, args.expect)


def follow(query: Any, expect: int) -> None:
    """Emit each micro-batch's progress until ``expect`` rows went through, then stop."""
    deadline = time.monotonic() + DEADLINE
    seen: set[int] = set()
    total = 0
    try:
        while total < expect:
            if not query.isActive:
                raise RuntimeError(f"the query ended after {total} rows: {query.exception()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{total} of {expect} rows after {DEADLINE} s")
            for progress in query.recentProgress:
                if progress["batchId"] not in seen and progress["numInputRows"] > 0:
                    seen.add(progress["batchId"])
                    total += progress["numInputRows"]
                    emit("progress", batch=progress["batchId"], rows=progress["numInputRows"],
                         total=total)  # fmt: skip
            time.sleep(0.1)
    finally:
        query.stop()
    emit("done", total=total, batches=len(seen))


def rsocket(spark: SparkSession, args: argparse.Namespace) -> None:
    collected: list[list[int]] = []
    batches: list[int] = []

    def collect(frame: Any, batch_id: int) -> None:
        rows = frame.select("seq", "payload.n", executor_column()).collect()
        collected.extend([r.seq, r.n, r.executor_pid] for r in rows)
        if rows:
            batches.append(batch_id)

    query = (
        spark.readStream.format("rsocket")
        .option("uri", args.uri)
        .option("payloadFormat", "msgpack")
        .option("payloadSchema", "n long")
        .option("maxRecordsPerTrigger", str(args.max_records))
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", args.checkpoint)
        .start()
    )
    emit("started", app_id=spark.sparkContext.applicationId, query_id=str(query.id))
    deadline = time.monotonic() + DEADLINE
    try:
        while len(collected) < args.expect:
            if not query.isActive:
                raise RuntimeError(f"the query ended: {query.exception()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(collected)} of {args.expect} rows after {DEADLINE} s")
            time.sleep(0.1)
    finally:
        query.stop()
    emit("done", rows=collected, batches=len(batches))


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tests.support.spark_cluster_driver", exit_on_error=False)
    scenarios = parser.add_subparsers(dest="scenario", required=True)
    one = scenarios.add_parser("capture")
    one.add_argument("--folder", required=True)
    one.add_argument("--partition-bytes", type=int, default=256 * 1024)
    one = scenarios.add_parser("rabbitmq")
    for name in ("--source", "--target", "--checkpoint"):
        one.add_argument(name, required=True)
    one.add_argument("--expect", type=int, required=True)
    one.add_argument("--max-records", type=int, default=5000)
    one.add_argument("--records-per-partition", type=int, default=1000)
    one = scenarios.add_parser("rsocket")
    for name in ("--uri", "--checkpoint"):
        one.add_argument(name, required=True)
    one.add_argument("--expect", type=int, required=True)
    one.add_argument("--max-records", type=int, default=2000)
    return parser


def main() -> int:
    """One SparkSession, then one scenario per line of stdin (``{"id": n, "argv": [...]}``)
    until stdin ends: a session and its executors start once for all the tests."""
    global _command
    scenarios = {"capture": capture, "rabbitmq": rabbitmq, "rsocket": rsocket}
    spark = spark_session()
    try:
        emit("session", driver_pid=os.getpid(), app_id=spark.sparkContext.applicationId)
        for line in sys.stdin:
            command = json.loads(line)
            _command = command["id"]
            try:
                args = parser().parse_args(command["argv"])
                scenarios[args.scenario](spark, args)
            except Exception as error:  # the test shows it; the traceback goes to the log
                traceback.print_exc()
                emit("error", message=f"{type(error).__name__}: {error}"[:4000])
            _command = None
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
