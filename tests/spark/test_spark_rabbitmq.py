"""The ``rabbitmq_stream`` data source (runtime/spark/rabbitmq_*.py) on the shared
SparkSession against the real broker: exactly-once across restarts (source -> Parquet,
source -> sink), micro-batch bounds, the sink's idempotence under a real Spark task retry
and a replayed micro-batch, failed confirms, option errors at query start, payloads."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack
import pytest

from wirestream.runtime.rabbitmq_stream.aio import connect
from wirestream.runtime.spark.rabbitmq_sink import publishing_id
from wirestream.runtime.spark.rabbitmq_stream import probe_bounds
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_client_support import URI, unique

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

FIFTY_THOUSAND = 50_000


# ---------------------------------------------------------------------- broker helpers


def broker(work: Callable[[Any], Any], timeout: float = 120.0) -> Any:
    """``work(client)`` on a fresh connection (sync, for test set-up and checks)."""

    async def main() -> Any:
        async with await connect(URI) as client:
            return await work(client)

    return run(main(), timeout, check_leaks=False)


def create_stream(arguments: dict[str, str | int] | None = None) -> str:
    stream = unique("ws-spark")

    async def create(client: Any) -> None:
        await client.create_stream(stream, arguments)

    broker(create)
    return stream


def delete_streams(*streams: str) -> None:
    async def delete(client: Any) -> None:
        for stream in streams:
            await client.delete_stream(stream, missing_ok=True)

    broker(delete)


def publish(stream: str, bodies: Sequence[bytes], *, raw: bool = False) -> None:
    async def send(client: Any) -> None:
        producer = await client.producer(stream, raw=raw)
        await (await producer.send_many(bodies))
        await producer.close()

    broker(send)


def store_offset(stream: str) -> None:
    """An offset-tracking entry: it takes an offset of the stream and holds no message."""
    reference = unique("tracker")

    async def store(client: Any) -> None:
        client.store_offset(reference, stream, 0)  # 'StoreOffset: no response', so:
        # QueryOffset reaches the stream's writer after it, so once it answers the entry is
        # in the log, before anything published later.
        assert await client.query_offset(reference, stream) == 0

    broker(store)


def bodies_in(stream: str) -> list[bytes]:
    """Every message body of ``stream``, in offset order."""

    async def read(client: Any) -> list[bytes]:
        tail = (await probe_bounds(client, stream, head=False)).tail
        bodies: list[bytes] = []
        if tail is None:
            return bodies
        async with await client.consumer(stream, "first") as consumer:
            async for message in consumer:
                bodies.append(message.body)
                if message.offset >= tail - 1:
                    break
        return bodies

    result: list[bytes] = broker(read)
    return result


def publisher_sequence(stream: str, reference: str) -> int:
    async def query(client: Any) -> int:
        sequence: int = await client.query_publisher_sequence(reference, stream)
        return sequence

    result: int = broker(query)
    return result


# ---------------------------------------------------------------------- Spark helpers


def read_stream(spark: SparkSession, stream: str, **options: str) -> DataFrame:
    reader = spark.readStream.format("rabbitmq_stream").option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def read_batch(spark: SparkSession, stream: str, **options: str) -> DataFrame:
    reader = spark.read.format("rabbitmq_stream").option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def wait_until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Poll a Spark query's state (there is no event to await from the test's side)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the query"
        time.sleep(0.1)


def batches_with_rows(query: StreamingQuery) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def replay_last_committed_batch(checkpoint: Path) -> int:
    """Make the checkpoint look as if the driver died after the sink wrote the last
    committed micro-batch and before Spark recorded its commit: drop that commit and any
    later planned batch (and their checksum files).  Returns the batch id."""

    def batch_ids(folder: str) -> list[int]:
        return sorted(int(p.name) for p in (checkpoint / folder).iterdir() if p.name.isdigit())

    last = batch_ids("commits")[-1]
    doomed = [checkpoint / "commits" / str(last)]
    doomed += [checkpoint / "offsets" / str(b) for b in batch_ids("offsets") if b > last]
    for path in doomed:
        path.unlink()
        path.with_name(f".{path.name}.crc").unlink(missing_ok=True)
    return last


@pytest.fixture(scope="module")
def fifty_thousand() -> Iterator[tuple[str, list[bytes]]]:
    """A stream of 50,000 distinct messages, published once for the exactly-once tests."""
    stream = create_stream()
    bodies = [b"message-%05d" % i for i in range(FIFTY_THOUSAND)]
    publish(stream, bodies)
    yield stream, bodies
    delete_streams(stream)


@pytest.fixture
def streams() -> Iterator[Callable[..., str]]:
    """Makes fresh streams; deletes them after the test."""
    made: list[str] = []

    def make(arguments: dict[str, str | int] | None = None) -> str:
        made.append(create_stream(arguments))
        return made[-1]

    yield make
    delete_streams(*made)


# ---------------------------------------------------------------------- the end of a stream


def test_probe_bounds_is_never_behind_what_was_confirmed_before_it() -> None:
    """The exactness the source's offsets rest on (no StreamStats on 3.10): a probe after
    a confirm sees that message, with more publishing racing it; and tracking entries at
    the end are not messages."""

    async def main() -> None:
        async with await connect(URI) as publishing, await connect(URI) as probing:
            stream = unique("ws-spark-probe")
            await publishing.create_stream(stream)
            try:
                assert (await probe_bounds(probing, stream)).tail is None  # empty
                producer = await publishing.producer(stream)
                confirmed = 0
                for round_ in range(60):
                    await (await producer.send_many([b"c"] * (1 + round_ * 7 % 90)))
                    confirmed += 1 + round_ * 7 % 90
                    racing = await producer.send_many([b"r"] * (round_ % 5) * 20)
                    bounds = await probe_bounds(probing, stream)
                    assert bounds.head == 0 and bounds.tail is not None
                    assert bounds.tail >= confirmed
                    await racing
                    confirmed += len(racing.publishing_ids)
                publishing.store_offset("probe-tracker", stream, 0)  # takes offset `confirmed`
                assert await publishing.query_offset("probe-tracker", stream) == 0
                bounds = await probe_bounds(probing, stream)
                assert bounds.tail == confirmed and bounds.last_chunk is not None
                assert bounds.last_chunk < confirmed
            finally:
                await publishing.delete_stream(stream)

    run(main(), 60)


# ---------------------------------------------------------------------- exactly once


@pytest.mark.spark
def test_a_query_stopped_mid_way_and_restarted_reads_each_message_exactly_once(
    spark: SparkSession, fifty_thousand: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    stream, bodies = fifty_thousand
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start() -> StreamingQuery:
        return (
            read_stream(spark, stream, maxRecordsPerTrigger="10000")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    query = start()
    wait_until(lambda: len(batches_with_rows(query)) >= 2)
    query.stop()
    read_before = sum(batches_with_rows(query))
    assert read_before < FIFTY_THOUSAND, "stopped too late: nothing left for the restart"

    query = start()
    query.processAllAvailable()
    query.stop()

    rows = spark.read.parquet(str(out)).select("offset", "payload", "stream").collect()
    assert sorted(row.offset for row in rows) == list(range(FIFTY_THOUSAND))
    assert sorted(bytes(row.payload) for row in rows) == bodies
    assert {row.stream for row in rows} == {stream}


@pytest.mark.spark
def test_a_stream_to_stream_query_publishes_each_message_once_across_restart_and_replay(
    spark: SparkSession,
    fifty_thousand: tuple[str, list[bytes]],
    streams: Callable[..., str],
    tmp_path: Path,
) -> None:
    stream, bodies = fifty_thousand
    target, checkpoint = streams(), tmp_path / "checkpoint"

    def start() -> StreamingQuery:
        return (
            read_stream(spark, stream, maxRecordsPerTrigger="10000")
            .writeStream.format("rabbitmq_stream")
            .option("stream", target)
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    query = start()
    wait_until(lambda: len(batches_with_rows(query)) >= 2)
    query.stop()
    assert sum(batches_with_rows(query)) < FIFTY_THOUSAND
    replayed = replay_last_committed_batch(checkpoint)

    query = start()
    query.processAllAvailable()
    first = query.recentProgress[0]
    query.stop()

    assert first["batchId"] == replayed and first["numInputRows"] > 0  # it did publish again
    assert sorted(bodies_in(target)) == bodies  # ...and the broker dropped every repeat


# ---------------------------------------------------------------------- micro-batches


@pytest.mark.spark
def test_max_records_per_trigger_bounds_each_micro_batch(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams()
    publish(stream, [b"a-%04d" % i for i in range(600)])
    store_offset(stream)  # an offset without a message, inside a batch
    publish(stream, [b"b-%04d" % i for i in range(400)])
    name = unique("bounded").replace("-", "_")
    query = (
        read_stream(spark, stream, maxRecordsPerTrigger="300", recordsPerPartition="120")
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        query.processAllAvailable()
        sizes = batches_with_rows(query)
    finally:
        query.stop()
    assert len(sizes) > 1 and max(sizes) <= 300 and sum(sizes) == 1000
    rows = spark.sql(f"SELECT offset, payload FROM {name}").collect()
    assert sorted(bytes(r.payload) for r in rows) == sorted(
        [b"a-%04d" % i for i in range(600)] + [b"b-%04d" % i for i in range(400)]
    )
    assert len({r.offset for r in rows}) == 1000


@pytest.mark.spark
def test_trigger_available_now_reads_what_is_there_in_bounded_batches_and_stops(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams()
    publish(stream, [b"n-%d" % i for i in range(500)])
    name = unique("now").replace("-", "_")
    query = (
        read_stream(spark, stream, maxRecordsPerTrigger="200")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert batches_with_rows(query) == [200, 200, 100]
    assert spark.sql(f"SELECT count(DISTINCT offset) AS n FROM {name}").first().n == 500


@pytest.mark.spark
def test_starting_offsets_next_reads_only_what_is_published_after_the_start(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams()
    publish(stream, [b"old-%d" % i for i in range(10)])
    name = unique("fresh").replace("-", "_")
    query = (
        read_stream(spark, stream, startingOffsets="next")
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        query.processAllAvailable()
        publish(stream, [b"new-%d" % i for i in range(5)])
        query.processAllAvailable()
    finally:
        query.stop()
    rows = spark.sql(f"SELECT offset, payload FROM {name} ORDER BY offset").collect()
    assert [(r.offset, bytes(r.payload)) for r in rows] == [
        (10 + i, b"new-%d" % i) for i in range(5)
    ]


@pytest.mark.spark
def test_a_batch_read_reads_a_fixed_offset_range_across_partitions_and_holes(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams()
    publish(stream, [b"x-%d" % i for i in range(20)])
    store_offset(stream)  # offset 20: no message
    publish(stream, [b"y-%d" % i for i in range(20)])  # offsets 21..40
    df = read_batch(
        spark, stream, startingOffsets="15", endingOffsets="26", recordsPerPartition="4"
    )
    assert df.rdd.getNumPartitions() == 3  # [15, 19) [19, 23) [23, 26)
    rows = df.orderBy("offset").collect()
    assert [r.offset for r in rows] == [15, 16, 17, 18, 19, 21, 22, 23, 24, 25]
    assert [bytes(r.payload) for r in rows][:5] == [b"x-15", b"x-16", b"x-17", b"x-18", b"x-19"]
    assert {r.stream for r in rows} == {stream}
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)  # session: UTC
    assert all(abs(r.timestamp - now) < datetime.timedelta(minutes=10) for r in rows)
    assert read_batch(spark, stream).count() == 40


# ---------------------------------------------------------------------- retention


@pytest.mark.spark
def test_records_removed_by_retention_fail_the_read_unless_fail_on_data_loss_is_false(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams({"max-length-bytes": 20_000, "stream-max-segment-size-bytes": 5_000})
    for _ in range(20):
        publish(stream, [b"r" * 100] * 50)  # 100 kB through a 20 kB stream
    with pytest.raises(Exception, match=r"DataLossError.*offsets 0 to \d+ of stream"):
        read_batch(spark, stream, startingOffsets="0").count()
    rest = read_batch(spark, stream, startingOffsets="0", failOnDataLoss="false")
    offsets = [r.offset for r in rest.select("offset").collect()]
    assert offsets and offsets == list(range(offsets[0], 1000)) and offsets[0] > 0


# ---------------------------------------------------------------------- the sink


@pytest.mark.spark
def test_a_batch_write_publishes_each_row_once_with_confirms(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    target = streams()
    df = spark.range(0, 3000, 1, 3).selectExpr("concat('row-', id) AS payload", "id")
    df.write.format("rabbitmq_stream").option("stream", target).mode("append").save()
    assert sorted(bodies_in(target)) == sorted(b"row-%d" % i for i in range(3000))


@pytest.mark.spark
def test_a_retried_write_task_publishes_each_row_exactly_once(
    spark: SparkSession, streams: Callable[..., str], tmp_path: Path
) -> None:
    """Spark's own retry: partition 0's first attempt fails (a UDF raises) after the
    broker stored some of its rows; the retry publishes the rest, nothing twice."""
    from pyspark import TaskContext
    from pyspark.sql.functions import udf
    from pyspark.sql.types import BinaryType

    target, prefix = streams(), unique("retry")
    marker = tmp_path / "failed-once"
    fail_at, stored_first = 2000, 500

    @udf(BinaryType())
    def payload(row):  # no type hints: Spark would take the UDF for a pandas UDF
        context = TaskContext.get()
        if context.attemptNumber() == 0 and context.partitionId() == 0 and row == fail_at:
            stored = wait_for_sequence(target, f"{prefix}-0", publishing_id(0, stored_first))
            marker.write_text(str(stored))
            raise RuntimeError("injected failure after rows were stored")
        return b"%06d-" % row + b"p" * 200  # big rows: Spark's buffers pass them on sooner

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        (
            spark.range(0, 6000, 1, 2)
            .select(payload("id").alias("payload"))
            .write.format("rabbitmq_stream")
            .option("stream", target)
            .option("producerReference", prefix)
            .mode("append")
            .save()
        )
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert marker.exists(), "the first attempt did not fail after publishing"
    assert publishing_id(0, stored_first) <= int(marker.read_text()) < publishing_id(0, fail_at)
    stored = bodies_in(target)
    assert sorted(stored) == sorted(b"%06d-" % i + b"p" * 200 for i in range(6000))


def wait_for_sequence(stream: str, reference: str, at_least: int) -> int:
    """In a UDF: wait until the broker stored ``at_least`` for ``reference``."""
    deadline = time.monotonic() + 60
    while True:
        sequence = publisher_sequence(stream, reference)
        if sequence >= at_least or time.monotonic() > deadline:
            return sequence
        time.sleep(0.02)


@pytest.mark.spark
def test_a_failed_confirm_fails_the_task_with_the_brokers_error(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    """The stream is deleted (and created again) under each attempt's publisher."""
    from pyspark.sql.functions import udf
    from pyspark.sql.types import BinaryType

    target, prefix = streams(), unique("doomed")

    @udf(BinaryType())
    def payload(row):  # no type hints: Spark would take the UDF for a pandas UDF
        if row == 1500:
            wait_for_sequence(target, f"{prefix}-0", publishing_id(0, 300))
            recreate(target)
        return b"%06d-" % row + b"p" * 200

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        with pytest.raises(Exception) as failure:
            (
                spark.range(0, 3000, 1, 1)
                .select(payload("id").alias("payload"))
                .write.format("rabbitmq_stream")
                .option("stream", target)
                .option("producerReference", prefix)
                .mode("append")
                .save()
            )
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    text = str(failure.value)
    assert f"rabbitmq_stream sink: publishing to stream '{target}' as '{prefix}-0'" in text
    assert "STREAM_NOT_AVAILABLE" in text or "PUBLISHER_DOES_NOT_EXIST" in text


@pytest.mark.spark
def test_a_null_payload_fails_the_task_naming_its_row_after_the_rows_before_it(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    """Nothing is dropped silently: the rows before the null are published and
    confirmed, the null row fails the task (no retry publishes anything twice)."""
    target, prefix = streams(), unique("null")
    frame = spark.range(0, 1000, 1, 1).selectExpr(
        "IF(id = 700, NULL, cast(concat('row-', id) AS binary)) AS payload"
    )
    with pytest.raises(Exception, match="row 700 has a null payload"):
        (
            frame.write.format("rabbitmq_stream")
            .option("stream", target)
            .option("producerReference", prefix)
            .mode("append")
            .save()
        )
    assert bodies_in(target) == [b"row-%d" % i for i in range(700)]
    assert publisher_sequence(target, f"{prefix}-0") == publishing_id(0, 699)


def recreate(stream: str) -> None:
    async def again(client: Any) -> None:
        await client.delete_stream(stream)
        await client.create_stream(stream)

    broker(again)


# ---------------------------------------------------------------------- options


@pytest.fixture(scope="module")
def small_stream() -> Iterator[str]:
    stream = create_stream()
    publish(stream, [b"one", b"two"])
    yield stream
    delete_streams(stream)


SMALL = "<the small stream>"


def with_stream(options: dict[str, str], stream: str) -> dict[str, str]:
    return {key: stream if value == SMALL else value for key, value in options.items()}


@pytest.mark.spark
@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"stream": "no-such-stream-4d1c"}, r"option stream='no-such-stream-4d1c': no such stream"),
        ({}, r"option 'stream' is required"),
        ({"stream": SMALL, "maxRecordPerTrigger": "9"}, r"unknown option 'maxrecordpertrigger'"),
        ({"stream": SMALL, "startingOffsets": "earliest"}, r"startingOffsets='earliest' is not"),
        ({"stream": SMALL, "startingOffsets": "-3"}, r"startingOffsets='-3' is not first, last"),
        ({"stream": SMALL, "payloadFormat": "avro"}, r"payloadFormat='avro' is not one of bytes"),
        ({"stream": SMALL, "payloadFormat": "json"}, r"payloadFormat=json needs .*payloadSchema"),
        ({"stream": SMALL, "messageFormat": "json"}, r"messageFormat='json' is not one of amqp"),
        ({"stream": SMALL, "maxRecordsPerTrigger": "0"}, r"maxRecordsPerTrigger=0 is below 1"),
        ({"stream": SMALL, "uri": "amqp://127.0.0.1"}, r"option uri: .*scheme must be rabbitmq"),
        (
            {"stream": SMALL, "uri": "rabbitmq-stream://127.0.0.1:1"},
            r"cannot connect to the broker",
        ),
        (
            {"stream": SMALL, "uri": "rabbitmq-stream://guest:nope@127.0.0.1:5552/%2f"},
            r"AUTHENTICATION_FAILURE.*refused user 'guest'",
        ),
    ],
    ids=lambda value: str(value)[:48],
)
def test_bad_source_options_fail_at_load_with_a_clear_error(
    spark: SparkSession, small_stream: str, options: dict[str, str], says: str
) -> None:
    reader = spark.readStream.format("rabbitmq_stream")
    for key, value in with_stream(options, small_stream).items():
        reader = reader.option(key, value)
    with pytest.raises(Exception, match=says):
        reader.load()


@pytest.mark.spark
@pytest.mark.parametrize(
    ("columns", "options", "says"),
    [
        ("CAST(id AS STRING) AS payload", {"stream": "no-such-stream-4d1c"}, r"no such stream"),
        ("CAST(id AS STRING) AS payload", {}, r"option 'stream' is required"),
        ("id AS payload", {"stream": SMALL}, r"column payload is bigint; it must be binary or"),
        ("CAST(id AS STRING) AS body", {"stream": SMALL}, r"no payload column .* columns: body"),
        ("CAST(id AS STRING) AS payload", {"stream": SMALL, "maxInFlight": "0"}, r"below 1"),
        ("CAST(id AS STRING) AS payload", {"stream": SMALL, "topic": "x"}, r"unknown option"),
    ],
    ids=lambda value: str(value)[:48],
)
def test_bad_sink_options_fail_at_save_with_a_clear_error(
    spark: SparkSession, small_stream: str, columns: str, options: dict[str, str], says: str
) -> None:
    writer = spark.range(3).selectExpr(columns).write.format("rabbitmq_stream").mode("append")
    for key, value in with_stream(options, small_stream).items():
        writer = writer.option(key, value)
    with pytest.raises(Exception, match=says):
        writer.save()


@pytest.mark.spark
def test_overwrite_mode_is_refused_since_a_stream_is_append_only(
    spark: SparkSession, small_stream: str
) -> None:
    df = spark.range(3).selectExpr("CAST(id AS STRING) AS payload")
    writer = df.write.format("rabbitmq_stream").option("stream", small_stream)
    with pytest.raises(Exception, match=r"a stream is append-only: use mode\('append'\)"):
        writer.mode("overwrite").save()


# ---------------------------------------------------------------------- payloads


TICKS = [
    {"symbol": "ACME", "price": 101.5, "qty": 3},
    {"symbol": "GLOBEX", "price": 54, "qty": 10},  # an integer price widens into double
    {"symbol": "ÜBER", "price": 0.25, "extra": True},  # missing qty: null; extra: ignored
]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("payload_format", "encode"),
    [("json", lambda tick: json_bytes(tick)), ("msgpack", lambda tick: msgpack.packb(tick))],
)
def test_json_and_msgpack_payloads_decode_into_the_payload_schema(
    spark: SparkSession,
    streams: Callable[..., str],
    payload_format: str,
    encode: Callable[[dict[str, Any]], bytes],
) -> None:
    stream = streams()
    publish(stream, [encode(tick) for tick in TICKS])
    df = read_batch(
        spark,
        stream,
        payloadFormat=payload_format,
        payloadSchema="symbol string, price double, qty long",
    )
    assert (
        df.schema["payload"].dataType.simpleString()
        == "struct<symbol:string,price:double,qty:bigint>"
    )
    rows = df.orderBy("offset").select("payload.*").collect()
    assert [tuple(r) for r in rows] == [
        ("ACME", 101.5, 3),
        ("GLOBEX", 54.0, 10),
        ("ÜBER", 0.25, None),
    ]


def json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.spark
def test_utf8_payloads_and_a_streaming_query_of_them(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams()
    texts = ["plain", "naïve café", "日本語", ""]
    publish(stream, [text.encode() for text in texts])
    name = unique("texts").replace("-", "_")
    query = (
        read_stream(spark, stream, payloadFormat="utf8")
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    rows = spark.sql(f"SELECT payload FROM {name} ORDER BY offset").collect()
    assert [r.payload for r in rows] == texts


@pytest.mark.spark
def test_message_formats_amqp_and_raw_and_a_message_without_a_binary_body(
    spark: SparkSession, streams: Callable[..., str]
) -> None:
    stream = streams()
    publish(stream, [b"wrapped"])  # an AMQP 1.0 message with one Data section
    publish(stream, [b"\x00\x53\x77\xa1\x03str"], raw=True)  # AMQP: amqp-value holding "str"
    raw = [bytes(r.payload) for r in read_batch(spark, stream, messageFormat="raw").collect()]
    assert raw[0].endswith(b"wrapped") and raw[0] != b"wrapped" and raw[1].endswith(b"str")
    with pytest.raises(Exception, match=r"message at offset 1 of stream .* has no binary body"):
        read_batch(spark, stream).collect()
    kept = read_batch(spark, stream, onBadPayload="null").orderBy("offset").collect()
    assert [r.payload for r in kept] == [bytearray(b"wrapped"), None]
