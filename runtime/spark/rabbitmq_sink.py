"""Publishing to a RabbitMQ stream from Spark: ``df.write`` / ``df.writeStream``.

>>> (df.selectExpr("to_json(struct(*)) AS payload").write.format("rabbitmq_stream")
...    .option("stream", "events").mode("append").save())

What is published: the ``payload`` column, one message per row, in the partition's row
order.  It must be ``binary`` (sent as is) or ``string`` (its UTF-8 bytes); any other type
is refused at ``save()``/``start()`` (turn it into one first: ``to_json(struct(...))``,
``cast(... AS string)``).  Other columns are ignored, so a ``rabbitmq_stream`` source's
rows can be written back as they come.  A null payload fails the task (nothing is dropped
silently).

Options (besides ``uri``, ``stream``, ``messageFormat``: ``rabbitmq_stream``'s docstring;
with ``amqp`` each payload goes out as the Data section of an AMQP 1.0 message)
``createStream``
    ``false`` (default: a missing stream fails at ``save()``/``start()``) or ``true``
    (create it, without arguments, when missing).
``producerReference``
    the prefix of the publisher references (see below; at most 200 characters).  Default:
    the streaming query's id (``writeStream``), or a prefix made once per ``save()``.
``maxInFlight``
    messages a task may have published and not yet seen confirmed (default 10000); a task
    waits for confirms beyond it.  Rows reach a task in Arrow batches of
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows; each batch is encoded
    column-wise (``encode_column``) and queued on the client's loop, ``SEND_SLICE`` rows
    per ``send_many``.
(``checkpointLocation`` is Spark's own.)

Confirms
    Every message is confirmed by the broker before the task reports success; a refused
    message (PublishError), a publisher the broker closed (its stream deleted) or a lost
    connection that cannot be restored fails the task with the broker's error, naming the
    stream, the publisher reference and the row.  (A dropped connection that comes back
    is not a failure: the client re-sends what was not confirmed, with the same ids.)

Idempotent retries: publishing ids from (query, micro-batch, partition, row)
    Each task publishes under the reference ``f"{prefix}-{partition}"`` with publishing id
    ``(batchId << 32) | (row + 1)`` for the partition's row ``row`` (``batchId`` is the
    micro-batch's, 0 for a ``save()``).  The broker keeps, per reference, the highest id
    it stored and drops any message whose id is not above it.  So:

    - a retried task (same partition, same rows in the same order) starts where the
      failed attempt stopped: its rows up to the stored id are skipped (the broker would
      drop them anyway) and the rest are published once;
    - a replayed micro-batch (a restart after the sink wrote a batch and before Spark
      committed it) publishes nothing twice: same query id (kept in the checkpoint), same
      batch id, same partitions.

    This holds when each partition's rows come in the same order on every attempt, as
    Spark's own sinks assume: true for a ``rabbitmq_stream`` source (offset order, and its
    partitions depend only on the offset range) and any other source with a deterministic
    order, without a shuffle that reorders rows in between.  Other conditions: ids grow
    with ``batchId``, so a reference must not be reused by another query or write (the
    defaults never are; a ``producerReference`` you give is yours to keep unique); a
    partition holds fewer than 2**32 - 1 rows; speculative execution is off (Spark's
    default), since two attempts publishing at once under one reference race.
    A ``save()`` without ``producerReference`` is idempotent across its own task retries;
    give it a ``producerReference`` to make re-running the same job idempotent as well.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, StringType, StructType

from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rabbitmq_stream.aio import BatchConfirmation, Client, Producer
from wirestream.runtime.rabbitmq_stream.engine import DEFAULT_MAX_IN_FLIGHT
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.options import Options
from wirestream.runtime.spark.background import CLOSE_TIMEOUT, BackgroundLoop
from wirestream.runtime.spark.rabbitmq_broker import (
    MESSAGE_FORMATS,
    SOURCE,
    check_uri,
    in_context,
    open_client,
    require_stream,
)

__all__ = [
    "SINK_OPTIONS",
    "SinkSettings",
    "PublishReport",
    "RabbitMQStreamWriter",
    "RabbitMQStreamStreamWriter",
    "publish_partition",
    "publishing_id",
    "encode_column",
    "first_null",
]

SINK_OPTIONS: Final = (
    "uri",
    "stream",
    "messageFormat",
    "createStream",
    "producerReference",
    "maxInFlight",
    "checkpointLocation",
)
WHO: Final = f"{SOURCE} sink"
MAX_PREFIX: Final = 200  # a reference is a protocol string of at most 256 bytes
ROW_LIMIT: Final = (1 << 32) - 1
SEND_SLICE: Final = 1000
"""Messages per ``send_many``: an Arrow batch (10,000 rows by default) handed over at once
fills the window in one write of ~1 MB frames, which cost the broker ~0.4 us more per
message than the same rows handed over 1,000 at a time (measured, 3.10 on loopback)."""


def publishing_id(batch_id: int, row: int) -> int:
    """The publishing id of a partition's ``row`` in micro-batch ``batch_id``."""
    return (batch_id << 32) | (row + 1)


@dataclass(frozen=True)
class SinkSettings:
    """The sink's options and the payload column, checked on the driver; plain data."""

    uri: str
    stream: str
    message_format: str
    reference_prefix: str | None  # None: the streaming query's id, read in each task
    max_in_flight: int
    payload_index: int

    @staticmethod
    def parse(given: Mapping[str, str], schema: StructType) -> SinkSettings:
        options = Options(SOURCE, given, SINK_OPTIONS)
        prefix = options.optional("producerReference")
        if prefix is not None and not 0 < len(prefix.encode()) <= MAX_PREFIX:
            raise SparkOptionError(
                f"{SOURCE}: option producerReference={prefix!r} must be 1 to {MAX_PREFIX} "
                "bytes (the partition number is appended)"
            )
        return SinkSettings(
            uri=check_uri(options),
            stream=options.text("stream"),
            message_format=options.choice("messageFormat", MESSAGE_FORMATS, "amqp"),
            reference_prefix=prefix,
            max_in_flight=options.count("maxInFlight", DEFAULT_MAX_IN_FLIGHT, minimum=1),
            payload_index=_payload_column(schema),
        )


def _payload_column(schema: StructType) -> int:
    for index, field in enumerate(schema.fields):
        if field.name.lower() != "payload":
            continue
        if not isinstance(field.dataType, (BinaryType, StringType)):
            raise SparkOptionError(
                f"{WHO}: column payload is {field.dataType.simpleString()}; it must be binary "
                "or string (e.g. to_json(struct(...)) AS payload, or cast it)"
            )
        return index
    raise SparkOptionError(
        f"{WHO}: the DataFrame has no payload column (binary or string) to publish; "
        f"its columns: {', '.join(schema.fieldNames()) or 'none'}"
    )


def _prepare(given: Mapping[str, str], schema: StructType, overwrite: bool) -> SinkSettings:
    """Check the options, the payload column and the stream (creating it if asked)."""
    if overwrite:
        raise SparkOptionError(
            f"{WHO}: a stream is append-only: use mode('append') (or outputMode('append'))"
        )
    settings = SinkSettings.parse(given, schema)
    create = Options(SOURCE, given, SINK_OPTIONS).flag("createStream", False)

    async def check() -> None:
        client = await open_client(settings.uri, WHO)
        try:
            if create:
                await client.create_stream(settings.stream, exist_ok=True)
            else:
                await require_stream(client, settings.stream, WHO)
        finally:
            await client.close()

    loop = BackgroundLoop(f"{SOURCE} sink check")
    try:
        loop.run(check())
    finally:
        loop.close()
    return settings


@dataclass
class PublishReport(WriterCommitMessage):
    """What one task did: rows seen, published now, and skipped (already stored)."""

    partition: int
    reference: str
    rows: int
    published: int
    skipped: int


class RabbitMQStreamWriter(DataSourceArrowWriter):
    """``df.write.format("rabbitmq_stream")``: each task publishes its partition."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        self.settings = _prepare(options, schema, overwrite)
        # Made once, here on the driver: every task and every retry of this save() share it.
        self.prefix = self.settings.reference_prefix or f"spark-write-{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishReport:
        return publish_partition(self.settings, iterator, self.prefix, batch_id=0)


class RabbitMQStreamStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rabbitmq_stream")``: each micro-batch's tasks publish."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        self.settings = _prepare(options, schema, overwrite)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishReport:
        context = TaskContext.get()
        batch_id = context.getLocalProperty("streaming.sql.batchId") if context else None
        query_id = context.getLocalProperty("sql.streaming.queryId") if context else None
        if batch_id is None or query_id is None:
            raise RuntimeError(f"{WHO}: a streaming write task without a batch or query id")
        prefix = self.settings.reference_prefix or query_id
        return publish_partition(self.settings, iterator, prefix, batch_id=int(batch_id))


def publish_partition(
    settings: SinkSettings, batches: Iterator[pa.RecordBatch], prefix: str, batch_id: int
) -> PublishReport:
    """Publish a task's rows under ``f"{prefix}-{partition}"``, wait for every confirm.

    The connection opens with the first row: a partition without rows costs nothing.
    Each Arrow batch is encoded column-wise on Spark's thread (``encode_column``) while
    the client's loop takes confirms, then queued (``send_rows``).  Queuing it on the
    loop while this thread reads the next batch measured no faster in the sink bench,
    so this thread waits: one failure path."""
    context = TaskContext.get()
    partition = context.partitionId() if context else 0
    reference = f"{prefix}-{partition}"
    rows = iter(batch for batch in batches if batch.num_rows)
    first = next(rows, None)
    if first is None:
        return PublishReport(partition, reference, 0, 0, 0)
    amqp = settings.message_format == "amqp"
    loop = BackgroundLoop(f"{SOURCE} publish {settings.stream} {reference}")
    try:
        publisher = loop.run(_Publisher.open(settings, reference, batch_id))
        try:
            row = 0
            for batch in itertools.chain([first], rows):
                column = batch.column(settings.payload_index)
                count = len(column)
                if row + count > ROW_LIMIT:
                    raise ValueError(f"{WHO}: a partition holds at most {ROW_LIMIT - 1} rows")
                skip = publisher.already_stored(row, count)
                if skip < count:
                    column = column.slice(skip)
                    null = first_null(column)
                    messages = encode_column(column if null is None else column[:null], amqp)
                    loop.run(publisher.send_rows(row + skip, messages))
                    if null is not None:  # the rows before it are published
                        raise ValueError(
                            f"{WHO}: row {row + skip + null} has a null payload; "
                            "nothing to publish"
                        )
                row += count
            loop.run(publisher.finish())
        except BaseException:
            with contextlib.suppress(Exception):  # the task's failure is the first error
                loop.run(publisher.close(), CLOSE_TIMEOUT)
            raise
        loop.run(publisher.close(), CLOSE_TIMEOUT)
        return PublishReport(partition, reference, row, publisher.published, publisher.skipped)
    finally:
        loop.close()


def first_null(column: pa.Array) -> int | None:
    """The index of ``column``'s first null, or None."""
    if not column.null_count:
        return None
    index: int = pc.index(column.is_null(), True).as_py()
    return index


_DATA8: Final = b"\x00\x53\x75\xa0"  # AMQP 1.0 §3.2.6 Data section, vbin8
_DATA32: Final = b"\x00\x53\x75\xb0"  # vbin32
_AS_BINARY: Final = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}


def encode_column(column: pa.Array, amqp: bool) -> list[bytes]:
    """The messages of a binary or string column without nulls: each value's bytes (a
    string's UTF-8, which is how Arrow holds it), wrapped in one AMQP 1.0 Data section
    when ``amqp`` -- byte for byte what ``amqp.encode_body`` gives, built column-wise:
    per row Python makes one ``bytes`` (``to_pylist``) instead of calling the encoder."""
    values = column.cast(_AS_BINARY.get(column.type, column.type))
    if amqp and len(values):
        values = pc.binary_join_element_wise(
            _data_heads(values), values, pa.scalar(b"", values.type)
        )
    messages: list[bytes] = values.to_pylist()
    return messages


def _data_heads(values: pa.Array) -> pa.Array:
    """Each value's Data section head: vbin8 (5 bytes) below 256 bytes, else vbin32 (8)."""
    count = len(values)
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
    small = lengths < 256
    if small.all():  # the usual case: one fixed-size array, no per-row choice
        heads = np.empty((count, 5), np.uint8)
        heads[:, :4] = np.frombuffer(_DATA8, np.uint8)
        heads[:, 4] = lengths
        return _fixed(heads).cast(values.type)
    wide = np.empty((count, 8), np.uint8)
    wide[:, :4] = np.frombuffer(_DATA32, np.uint8)
    wide[:, 4:] = lengths.astype(">u4").view(np.uint8).reshape(-1, 4)
    narrow = np.zeros((count, 5), np.uint8)
    narrow[:, :4] = np.frombuffer(_DATA8, np.uint8)
    narrow[:, 4] = lengths & 0xFF
    return pc.if_else(
        pa.array(small), _fixed(narrow).cast(values.type), _fixed(wide).cast(values.type)
    )


def _fixed(rows: np.ndarray) -> pa.Array:
    """A fixed-size binary array, one value per row of a 2-D uint8 array."""
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(rows.shape[1]), rows.shape[0], [None, pa.py_buffer(np.ascontiguousarray(rows))]
    )


class _Publisher:
    """One task's producer: explicit publishing ids, the first failure kept."""

    def __init__(
        self,
        settings: SinkSettings,
        client: Client,
        producer: Producer,
        reference: str,
        batch_id: int,
        stored: int,
    ) -> None:
        self.settings = settings
        self.client = client
        self.producer = producer
        self.reference = reference
        self.batch_id = batch_id
        self.stored = stored  # the broker's last id for the reference when we started
        self.published = 0
        self.skipped = 0
        self.failure: BaseException | None = None
        self.pending: list[BatchConfirmation] = []  # send_many outcomes not all in yet

    @staticmethod
    async def open(settings: SinkSettings, reference: str, batch_id: int) -> _Publisher:
        client = await open_client(settings.uri, WHO)
        try:
            # raw: encode_column made the AMQP messages already
            producer = await client.producer(
                settings.stream,
                reference=reference,
                max_in_flight=settings.max_in_flight,
                raw=True,
            )
            stored = await client.query_publisher_sequence(reference, settings.stream)
        except ResponseError as refused:
            await client.close()
            raise in_context(
                refused,
                f"{WHO}: cannot publish to stream {settings.stream!r} as {reference!r}",
            ) from refused
        except BaseException:
            await client.close()
            raise
        return _Publisher(settings, client, producer, reference, batch_id, stored)

    def already_stored(self, first_row: int, count: int) -> int:
        """How many of the ``count`` rows from ``first_row`` on the broker holds already
        (ids up to ``stored``): they are skipped, counted in ``skipped``."""
        skip = max(0, min(count, self.stored - (self.batch_id << 32) - first_row))
        self.skipped += skip
        return skip

    def _context(self, row: int) -> str:
        return (
            f"{WHO}: publishing to stream {self.settings.stream!r} as {self.reference!r} "
            f"failed at row {row} (publishing id {publishing_id(self.batch_id, row)})"
        )

    def _raise_failure(self) -> None:
        """Raise the first refused message's error (lowest publishing id), if any; drop
        the confirmations whose every message is confirmed."""
        if self.failure is None:
            refused = [pid for batch in self.pending for pid in batch.errors]
            if refused:
                pid = min(refused)
                error = next(b.errors[pid] for b in self.pending if pid in b.errors)
                self.failure = in_context(error, self._context((pid & ROW_LIMIT) - 1))
            self.pending = [
                batch for batch in self.pending if batch.confirmed < len(batch.publishing_ids)
            ]
        if self.failure is not None:
            raise self.failure

    async def send_rows(self, first_row: int, messages: list[bytes]) -> None:
        """Queue the encoded messages of rows ``first_row...``, ``SEND_SLICE`` at a time;
        waits as the window of unconfirmed messages requires."""
        self._raise_failure()
        for start in range(0, len(messages), SEND_SLICE):
            row = first_row + start
            part = messages[start : start + SEND_SLICE]
            try:
                confirmation = await self.producer.send_many(
                    part, publishing_id=publishing_id(self.batch_id, row)
                )
            except ProtocolError as error:
                self._raise_failure()  # the first failure explains the later ones
                raise in_context(error, self._context(row)) from error
            self.pending.append(confirmation)
            self.published += len(part)
        self._raise_failure()

    async def finish(self) -> None:
        """Wait until every message is confirmed or refused; the first refusal raises."""
        try:
            await self.producer.flush()
        except ProtocolError as error:
            self._raise_failure()
            raise in_context(error, f"{WHO}: waiting for confirms from {self.client.uri}")
        self._raise_failure()

    async def close(self) -> None:
        try:
            await self.producer.close()
        except ProtocolError:
            pass  # its failure was reported by send_rows / finish
        finally:
            await self.client.close()
