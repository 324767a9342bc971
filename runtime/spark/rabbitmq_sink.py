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
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, and each batch is handed to
    the publisher at once.
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

import asyncio
import contextlib
import functools
import itertools
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, StringType, StructType

from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rabbitmq_stream.aio import Client, Producer
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

    The connection opens with the first row: a partition without rows costs nothing."""
    context = TaskContext.get()
    partition = context.partitionId() if context else 0
    reference = f"{prefix}-{partition}"
    rows = iter(batch for batch in batches if batch.num_rows)
    first = next(rows, None)
    if first is None:
        return PublishReport(partition, reference, 0, 0, 0)
    loop = BackgroundLoop(f"{SOURCE} publish {settings.stream} {reference}")
    try:
        publisher = loop.run(_Publisher.open(settings, reference, batch_id))
        try:
            row = 0
            for batch in itertools.chain([first], rows):
                values = batch.column(settings.payload_index).to_pylist()
                loop.run(publisher.send_rows(row, values))
                row += len(values)
            loop.run(publisher.finish())
        except BaseException:
            with contextlib.suppress(Exception):  # the task's failure is the first error
                loop.run(publisher.close(), CLOSE_TIMEOUT)
            raise
        loop.run(publisher.close(), CLOSE_TIMEOUT)
        return PublishReport(partition, reference, row, publisher.published, publisher.skipped)
    finally:
        loop.close()


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

    @staticmethod
    async def open(settings: SinkSettings, reference: str, batch_id: int) -> _Publisher:
        client = await open_client(settings.uri, WHO)
        try:
            producer = await client.producer(
                settings.stream,
                reference=reference,
                max_in_flight=settings.max_in_flight,
                raw=settings.message_format == "raw",
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

    def _context(self, row: int) -> str:
        return (
            f"{WHO}: publishing to stream {self.settings.stream!r} as {self.reference!r} "
            f"failed at row {row} (publishing id {publishing_id(self.batch_id, row)})"
        )

    def _on_outcome(self, row: int, confirmed: asyncio.Future[int]) -> None:
        if self.failure is None and not confirmed.cancelled():
            error = confirmed.exception()
            if error is not None:
                self.failure = in_context(error, self._context(row))

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    async def send_rows(self, first_row: int, values: list[Any]) -> None:
        """Queue rows ``first_row...`` (ids above ``stored`` only); waits as the window of
        unconfirmed messages requires."""
        self._raise_failure()
        if first_row + len(values) > ROW_LIMIT:
            raise ValueError(f"{WHO}: a partition holds at most {ROW_LIMIT - 1} rows")
        base = self.batch_id << 32
        skip = max(0, min(len(values), self.stored - base - first_row))
        self.skipped += skip
        producer = self.producer
        on_outcome = self._on_outcome
        for index in range(skip, len(values)):
            value = values[index]
            row = first_row + index
            if value is None:
                raise ValueError(f"{WHO}: row {row} has a null payload; nothing to publish")
            body = value.encode() if isinstance(value, str) else value
            try:
                confirmed = await producer.send(body, publishing_id=base | (row + 1))
            except ProtocolError as error:
                self._raise_failure()  # the first failure explains the later ones
                raise in_context(error, self._context(row)) from error
            confirmed.add_done_callback(functools.partial(on_outcome, row))
            self.published += 1
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
