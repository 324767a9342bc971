"""wirestream's data sources and sink through Spark Connect.

A real Spark Connect server (tests/support/spark_connect.py: PySpark's own SparkConnectServer on
``local[2]``, loopback) runs the sources; this process is only its client
(``session("sc://...")``), beside the classic session the other Spark tests share.  The
capture source reads the same frame log as the classic session; the ``rabbitmq_stream``
source reads a range and runs streaming queries with exactly-once across a restart and a
replayed micro-batch, its sink publishes each row once, against the real broker; the
``rsocket`` source pulls from a publisher in this process with demand per micro-batch.

A Connect client cannot run a ``foreachBatch`` function here (the server runs it), so
streaming queries write to the memory or Parquet sink and the tests read that back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack
import pytest

from tests.support.rabbitmq_stream_client_support import unique
from tests.support.spark_connect import REPO_ROOT, ConnectServer
from tests.spark.test_spark_capture_source import rsocket_capture  # noqa: F401  (a fixture)
from tests.spark.test_spark_rabbitmq import (  # noqa: F401  (streams: a fixture)
    bodies_in,
    publish,
    replay_last_committed_batch,
    store_offset,
    streams,
)
from tests.spark.test_spark_rsocket_source import (  # noqa: F401  (background, make_server: fixtures)
    Server,
    background,
    make_server,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

pytestmark = pytest.mark.spark

QUERY_TIMEOUT = 120.0


def wait_for(condition: Callable[[], bool], what: str, timeout: float = QUERY_TIMEOUT) -> None:
    """Poll until ``condition()`` (a Connect client gets no callback from the server)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def finish(query: StreamingQuery) -> None:
    """Wait for an AvailableNow query to end by itself; its error, if it failed."""
    try:
        assert query.awaitTermination(QUERY_TIMEOUT), "the query did not end in time"
    finally:
        query.stop()  # a no-op once it ended; ends it when the wait timed out
    error = query.exception()
    if error is not None:
        raise error


def rows_per_batch(query: StreamingQuery) -> list[int]:
    # attributes: through Connect, progress["numInputRows"] is None (PySpark 4.3)
    return [p.numInputRows for p in query.recentProgress if p.numInputRows > 0]


def rabbitmq(spark: SparkSession, stream: str, **options: str) -> Any:
    reader = spark.readStream.format("rabbitmq_stream").option("stream", stream)
    return reader.options(**options).load()


# ------------------------------------------------------------------ the session


def test_a_connect_client_works_beside_the_classic_session_in_one_process(
    spark: SparkSession, spark_connect: SparkSession
) -> None:
    """The classic session (a SparkContext here) and the Connect client (none) both work,
    and the process stays in classic mode: ``pyspark.sql.functions`` still build classic
    columns for the classic session."""
    from pyspark.sql import functions, is_remote
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(spark_connect, ConnectSession) and not is_remote()
    assert spark.range(3).select(functions.col("id") + 1).collect()[-1][0] == 3
    assert spark_connect.range(3).selectExpr("id + 1").collect()[-1][0] == 3
    assert spark_connect.conf.get("spark.sql.session.timeZone") == "UTC"


def test_a_client_process_gets_connect_mode_and_reads_a_capture(
    connect_server: ConnectServer, rsocket_capture: tuple[Path, bytes, bytes]  # noqa: F811
) -> None:
    """What a user runs: a process without a SparkContext, ``session("sc://...")``, and
    PySpark's own ``functions`` on the result (Connect mode, as ``builder.remote`` sets)."""
    path, _, _ = rsocket_capture
    script = textwrap.dedent(f"""
        import json
        from pyspark.sql import functions as F, is_remote
        from wirestream.runtime.spark import session
        spark = session({connect_server.url!r})
        frames = spark.read.format("wirestream").load({str(path)!r})
        counts = frames.groupBy("frame_type").agg(F.count(F.lit(1)).alias("n")).collect()
        print(json.dumps({{"remote": is_remote(), "counts": {{r.frame_type: r.n for r in counts}}}}))
        spark.stop()
    """)  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=QUERY_TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["remote"] is True
    counts = result["counts"]  # each frame twice: captured as sent and as received
    assert (counts["SETUP"], counts["REQUEST_RESPONSE"]) == (2, 40), counts
    assert (counts["REQUEST_STREAM"], counts["REQUEST_FNF"]) == (2, 2), counts


def test_a_setting_a_connect_client_may_not_change_fails_naming_it(
    connect_server: ConnectServer,
) -> None:
    """Application settings belong to whoever started the server; asking for one through
    ``session(conf=...)`` fails at once, by name, rather than being silently ignored."""
    from wirestream.runtime.spark import connect_session, session

    with pytest.raises(Exception, match="spark.executor.memory"):
        session(connect_server.url, conf={"spark.executor.memory": "2g"})
    with pytest.raises(ValueError, match="a Spark Connect URL starts with 'sc://'"):
        connect_session("local[2]")


def test_bad_options_fail_through_connect_with_the_sources_sentence(
    spark_connect: SparkSession,
) -> None:
    """A Connect DataFrame is analysed on the server; the source's error comes back whole."""
    missing = unique("no-such-stream")
    batch = spark_connect.read.format("rabbitmq_stream").option("stream", missing).load()
    with pytest.raises(Exception, match=f"option stream='{missing}': no such stream"):
        batch.schema
    live = spark_connect.readStream.format("rsocket").load()
    with pytest.raises(Exception, match="rsocket: option 'uri' is required"):
        live.schema


# ------------------------------------------------------------------ the capture source


@pytest.mark.parametrize("arrow", ["true", "false"])
def test_the_capture_source_gives_the_classic_sessions_frame_log(
    spark: SparkSession,
    spark_connect: SparkSession,
    rsocket_capture: tuple[Path, bytes, bytes],  # noqa: F811
    arrow: str,
) -> None:
    path, _, _ = rsocket_capture

    def frame_log(session: SparkSession) -> list[Any]:
        frames = session.read.format("wirestream").option("arrow", arrow).load(str(path))
        return frames.collect()  # one file: its order

    through_connect = frame_log(spark_connect)
    assert len(through_connect) > 40
    assert through_connect == frame_log(spark)


# ------------------------------------------------------------------ rabbitmq_stream


def test_a_batch_read_of_a_stream_range_through_connect(
    spark_connect: SparkSession, streams: Callable[..., str]  # noqa: F811
) -> None:
    stream = streams()
    publish(stream, [msgpack.packb({"n": i}) for i in range(20)])
    store_offset(stream)  # offset 20: no message
    publish(stream, [msgpack.packb({"n": i}) for i in range(20, 40)])  # offsets 21..40
    df = (
        spark_connect.read.format("rabbitmq_stream")
        .option("stream", stream)
        .options(startingOffsets="15", endingOffsets="26", recordsPerPartition="4")
        .options(payloadFormat="msgpack", payloadSchema="n long")
        .load()
    )
    rows = df.orderBy("offset").selectExpr("offset", "payload.n AS n", "stream").collect()
    assert [r.offset for r in rows] == [15, 16, 17, 18, 19, 21, 22, 23, 24, 25]
    assert [r.n for r in rows] == [15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    assert {r.stream for r in rows} == {stream}


def test_a_streaming_read_to_parquet_reads_each_message_once_across_a_restart(
    spark_connect: SparkSession, streams: Callable[..., str], tmp_path: Path  # noqa: F811
) -> None:
    """Two AvailableNow runs on one checkpoint, with more published between them: the
    second continues where the first stopped; every message is in the output once."""
    stream = streams()
    first = [b"first-%04d" % i for i in range(2000)]
    second = [b"second-%04d" % i for i in range(500)]
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list[int]:
        query = (
            rabbitmq(spark_connect, stream, maxRecordsPerTrigger="1000")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        finish(query)
        return rows_per_batch(query)

    publish(stream, first)
    assert run() == [1000, 1000]
    publish(stream, second)
    assert run() == [500]
    rows = spark_connect.read.parquet(str(out)).select("offset", "payload").collect()
    assert sorted(r.offset for r in rows) == list(range(2500))
    assert sorted(bytes(r.payload) for r in rows) == sorted(first + second)


def test_a_memory_sink_query_sees_messages_published_while_it_runs(
    spark_connect: SparkSession, streams: Callable[..., str]  # noqa: F811
) -> None:
    stream = streams()
    name = unique("connect_live").replace("-", "_")
    query = (
        rabbitmq(spark_connect, stream, startingOffsets="next", payloadFormat="utf8")
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        query.processAllAvailable()  # the first micro-batch fixes where "next" is
        publish(stream, [b"tick-%d" % i for i in range(300)])
        count = lambda: spark_connect.sql(f"SELECT count(*) AS n FROM {name}").first().n  # noqa
        wait_for(lambda: count() >= 300, "300 rows in the memory sink")
        query.processAllAvailable()
    finally:
        query.stop()
    rows = spark_connect.sql(f"SELECT offset, payload FROM {name} ORDER BY offset").collect()
    assert [(r.offset, r.payload) for r in rows] == [(i, f"tick-{i}") for i in range(300)]


def test_a_batch_write_publishes_each_row_once(
    spark_connect: SparkSession, streams: Callable[..., str]  # noqa: F811
) -> None:
    target = streams()
    df = spark_connect.range(0, 3000, 1, 3).selectExpr("concat('row-', id) AS payload")
    df.write.format("rabbitmq_stream").option("stream", target).mode("append").save()
    assert sorted(bodies_in(target)) == sorted(b"row-%d" % i for i in range(3000))


def test_a_stream_to_stream_query_publishes_each_message_once_across_a_replay(
    spark_connect: SparkSession, streams: Callable[..., str], tmp_path: Path  # noqa: F811
) -> None:
    """Source to sink through Connect; then the checkpoint loses its last commit (the
    driver died after the sink published that micro-batch) and the query runs it again:
    the broker drops every repeat."""
    source, target, checkpoint = streams(), streams(), tmp_path / "checkpoint"
    bodies = [b"message-%05d" % i for i in range(2000)]
    publish(source, bodies)

    def run() -> StreamingQuery:
        query = (
            rabbitmq(spark_connect, source, maxRecordsPerTrigger="1000")
            .writeStream.format("rabbitmq_stream")
            .option("stream", target)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        finish(query)
        return query

    assert rows_per_batch(run()) == [1000, 1000]
    replayed = replay_last_committed_batch(checkpoint)
    again = run().recentProgress[0]
    assert again.batchId == replayed and again.numInputRows == 1000  # it published again
    assert sorted(bodies_in(target)) == bodies  # ...and each message is there once


# ------------------------------------------------------------------ rsocket


def test_the_rsocket_source_reads_each_item_once_with_demand_per_micro_batch(
    spark_connect: SparkSession, make_server: Callable[..., Server]  # noqa: F811
) -> None:
    """The publisher runs in this process; the server's driver subscribes to it."""
    budget, wanted = 40, 120
    server = make_server(burst=60, pause=0.3)
    name = unique("connect_rsocket").replace("-", "_")
    frames: DataFrame = (
        spark_connect.readStream.format("rsocket")
        .options(uri=server.url, maxRecordsPerTrigger=str(budget), maxWaitMs="300")
        .options(payloadFormat="msgpack", payloadSchema="n long")
        .load()
    )
    query = frames.selectExpr("seq", "payload.n AS n").writeStream.format("memory")
    running = query.queryName(name).start()
    try:
        count = lambda: spark_connect.sql(f"SELECT count(*) AS n FROM {name}").first().n  # noqa
        wait_for(lambda: count() >= wanted, f"{wanted} items in the memory sink")
        sizes = rows_per_batch(running)
    finally:
        running.stop()
    rows = spark_connect.sql(f"SELECT seq, n FROM {name} ORDER BY seq").collect()
    assert [r.seq for r in rows] == list(range(len(rows)))  # each once, numbered in order
    assert [r.n for r in rows] == list(range(len(rows)))  # in the publisher's order
    assert max(sizes) <= budget
    server.log.assert_bounded_by(budget)  # demand never ran ahead of a micro-batch's budget
    assert server.numbers.subscriptions == 1
