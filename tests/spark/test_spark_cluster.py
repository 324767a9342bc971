"""The Spark data sources on a real standalone cluster: a master and two workers, each its
own JVM, and executors the workers fork (tests/support/spark_cluster.py).  The driver runs in a
subprocess (tests/support/spark_cluster_driver.py); the test process writes the inputs, runs the
publishers, watches the processes through /proc, kills an executor, and checks.

- the capture source over several files: every frame read once, by the executors;
- ``rabbitmq_stream`` -> ``rabbitmq_stream`` with an executor JVM killed (SIGKILL) while
  its tasks hold broker connections: the query recovers (the task is retried, the
  worker launches a new executor) and every message is in the target stream once;
- the ``rsocket`` live source: the publisher here, the subscription in the driver, the
  decoding in the executors: every item once, in order.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wirestream.generated.rsocket.v1_0 import Payload, RequestN, encode
from wirestream.runtime.capture import CaptureWriter
from wirestream.runtime.rsocket import serve
from wirestream.runtime.spark.background import BackgroundLoop
from tests.support.rabbitmq_stream_client_support import PORT
from tests.support.spark_cluster import (
    ClusterDriver,
    SparkCluster,
    broker_clients,
    broker_connected,
    descendants,
)
from tests.spark.test_spark_rsocket_source import Numbers, NumbersHandler

# alone: the executor killed mid-task must be caught holding a task's broker connection, a
# window of milliseconds that a second test process loading the machine closed in two of
# two runs (make test runs this module after the two-process part, by itself).
pytestmark = [pytest.mark.spark_cluster, pytest.mark.alone]


def executors_of(cluster: SparkCluster, driver: ClusterDriver) -> set[int]:
    """The PIDs of the driver's two executor JVMs, one under each worker, neither of them
    the driver (waits for a relaunched one)."""
    executors = cluster.wait_for_executors(2, driver.app_id)
    assert sorted(e.worker for e in executors) == [0, 1], executors
    assert driver.pid not in {e.pid for e in executors}
    return {e.pid for e in executors}


def assert_ran_on_executors(pids: set[int], executors: set[int]) -> None:
    """Tasks ran in both executor JVMs and nowhere else: not in the driver, where
    ``executor_pid`` would be -1 (no executor JVM above the Python worker)."""
    assert pids == executors, (pids, executors)


# ---------------------------------------------------------------------- captures


def write_capture(path: Path, name: str, frames: int) -> list[str]:
    """A request-stream's traffic; each PAYLOAD's data is ``<name>-<i>``, unique."""
    datas = []
    with CaptureWriter(path, "rsocket/1.0", max_file_bytes=None) as capture:
        connection = capture.new_connection_id()
        capture.record(connection, "out", encode(RequestN(stream_id=1, request_n=frames)))
        for i in range(frames):
            datas.append(f"{name}-{i:06d}")
            frame = Payload(stream_id=1, next=True, metadata=None, data=datas[-1].encode())
            capture.record(connection, "in", encode(frame))
    return datas


def test_the_capture_source_reads_every_frame_of_several_files_once(
    spark_cluster: SparkCluster, cluster_driver: ClusterDriver, tmp_path: Path
) -> None:
    folder = tmp_path / "captures"
    folder.mkdir()
    expected = []
    for index, frames in enumerate([12_000, 7_000, 1]):  # big ones split, a tiny one
        expected += write_capture(folder / f"part-{index}.wscap", f"f{index}", frames)
    executors = executors_of(spark_cluster, cluster_driver)
    command = cluster_driver.run("capture", "--folder", str(folder))
    done = cluster_driver.next_event("done", command, timeout=120)
    frames = done["frames"]
    assert sorted(data for kind, data in frames if kind == "PAYLOAD") == expected  # each once
    assert [kind for kind, _ in frames].count("REQUEST_N") == 3
    assert len(frames) == len(expected) + 3
    assert done["partitions"] > 3  # files split at record boundaries, read in parallel
    assert_ran_on_executors(set(done["executors"]), executors)


# ---------------------------------------------------------------------- RabbitMQ streams


def kill_an_executor_mid_task(cluster: SparkCluster, app_id: str, timeout: float = 60.0) -> int:
    """SIGKILL the first executor JVM of ``app_id`` seen with a broker connection open in
    its Python workers (a task reading or publishing: mid-task, not between batches).
    Returns its PID."""
    deadline = time.monotonic() + timeout
    # A task holds its connection for milliseconds: each round must be quick, also while
    # another test process loads the machine (make test runs two). The executors are found
    # once (a scan of every process's command line), and the process tree is walked only
    # while some connection to the broker is open at all.
    executors = cluster.wait_for_executors(2, app_id)
    while time.monotonic() < deadline:
        if broker_connected(PORT):
            for executor in executors:
                if broker_clients(PORT, descendants(executor.pid)):
                    os.kill(executor.pid, signal.SIGKILL)
                    return executor.pid
        time.sleep(0.002)
    raise AssertionError("no executor held a broker connection: nothing to kill mid-task")


@pytest.fixture
def rabbitmq_streams(rabbitmq_broker: object) -> Iterator[tuple[str, str]]:
    from tests.spark.test_spark_rabbitmq import create_stream, delete_streams

    source, target = create_stream(), create_stream()
    yield source, target
    delete_streams(source, target)


def test_stream_to_stream_is_exactly_once_across_a_killed_executor(
    spark_cluster: SparkCluster,
    cluster_driver: ClusterDriver,
    rabbitmq_streams: tuple[str, str],
    tmp_path: Path,
) -> None:
    from tests.spark.test_spark_rabbitmq import bodies_in, publish  # (it needs the broker)

    source, target = rabbitmq_streams
    half = 15_000  # five micro-batches of 3,000 (three tasks each) before the kill
    bodies = [b"cluster-%06d" % i for i in range(2 * half)]
    publish(source, bodies[:half])
    before = executors_of(spark_cluster, cluster_driver)
    command = cluster_driver.run(
        "rabbitmq", "--source", source, "--target", target,
        "--checkpoint", str(tmp_path / "checkpoint"), "--expect", str(2 * half),
        "--max-records", "3000", "--records-per-partition", "1000",
    )  # fmt: skip
    try:
        cluster_driver.next_event("progress", command, timeout=120)  # the query runs
        killed = kill_an_executor_mid_task(spark_cluster, cluster_driver.app_id)
    finally:
        # The second half goes in only now: the query must go on after the kill.  (Also
        # when the test failed: the shared driver's query then ends instead of waiting.)
        publish(source, bodies[half:])
    after = executors_of(spark_cluster, cluster_driver)  # its worker launched a new one
    done = cluster_driver.next_event("done", command, timeout=150)
    assert killed in before and len(before & after) == 1 and killed not in after
    # Spark saw a running task die with it (its WARN line; the log level is WARN).
    assert "ExecutorLostFailure" in cluster_driver.log.read_text(errors="replace")
    assert done["total"] == 2 * half
    stored = bodies_in(target)
    assert len(stored) == 2 * half and sorted(stored) == bodies  # each message once


# ---------------------------------------------------------------------- RSocket


ITEMS = 10_000


@pytest.fixture
def numbers_server() -> Iterator[tuple[str, Numbers]]:
    """An RSocket server in this process publishing ``{"n": i}`` (msgpack) for i < ITEMS."""
    background = BackgroundLoop("cluster test server")
    try:
        numbers = Numbers(count=ITEMS)
        server = background.run(serve("tcp://127.0.0.1:0", NumbersHandler(numbers)))
        try:
            yield server.url, numbers
        finally:
            server.close()
            background.run(server.wait_closed())
    finally:
        background.close()


def test_the_rsocket_source_delivers_every_item_once_in_order(
    spark_cluster: SparkCluster,
    cluster_driver: ClusterDriver,
    numbers_server: tuple[str, Numbers],
    tmp_path: Path,
) -> None:
    url, numbers = numbers_server
    executors = executors_of(spark_cluster, cluster_driver)
    command = cluster_driver.run(
        "rsocket", "--uri", url, "--expect", str(ITEMS), "--max-records", "2000",
        "--checkpoint", str(tmp_path / "checkpoint"),
    )  # fmt: skip
    done = cluster_driver.next_event("done", command, timeout=150)
    rows = done["rows"]
    assert [seq for seq, _, _ in rows] == list(range(ITEMS))
    assert [n for _, n, _ in rows] == list(range(ITEMS))  # decoded by the executors
    assert done["batches"] >= ITEMS // 2000  # demand per micro-batch (maxRecordsPerTrigger)
    assert numbers.subscriptions == 1
    # A micro-batch of 2,000 items is one task (a live batch is split in pieces of at
    # least 10,000 items), and Spark may give every such task to the same executor: the
    # rule here is that executors, never the driver, decoded the items.
    ran_on = {pid for _, _, pid in rows}
    assert ran_on and ran_on <= executors, (ran_on, executors)
