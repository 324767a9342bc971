"""Reading a RabbitMQ stream with Spark: ``spark.read`` / ``spark.readStream``.

Schema (``RabbitMQStreamDataSource.schema()``)::

    offset long, timestamp timestamp, stream string, payload <payloadFormat's type>

``offset`` is the message's stream offset, ``timestamp`` its chunk's timestamp (when the
broker stored the chunk, millisecond precision, UTC), ``stream`` the stream's name,
``payload`` the message decoded as the payload options say (``wirestream.runtime.spark.payload``:
``payloadFormat`` bytes | utf8 | json | msgpack, ``payloadSchema``, ``onBadPayload``).

Options (besides ``uri``, ``stream``, ``messageFormat``: ``rabbitmq_stream``'s docstring)
``startingOffsets``
    where a new query (or a batch read) starts: ``first`` (default: everything the stream
    still holds; a stream is a log, and a query that starts at ``first`` and keeps its
    checkpoint misses nothing), ``last`` (the stream's last chunk), ``next`` (only what is
    published from now on) or an offset (an integer >= 0).  A query restarted from its
    checkpoint ignores it and continues where it stopped.
``endingOffsets``
    batch reads only: ``latest`` (default: the end of the stream when the read is planned)
    or an offset (exclusive).  A batch read reads the fixed range [start, end).
``maxRecordsPerTrigger``
    at most this many offsets per micro-batch (Spark's ``ReadMaxRows``; default: no limit).
    When Spark asks for everything available (``Trigger.AvailableNow``, ``once``) the limit
    is not applied.
``recordsPerPartition``
    a micro-batch's offset range is split into Spark partitions (tasks, each with its own
    connection) of at most this many offsets (default 250000: each task costs Spark
    some 25 ms of its own beside the reading, which at 50,000 was a sixth of the time).
``minPartitions``
    at least this many partitions for a micro-batch with that many offsets (default 1,
    Kafka's name): the range is split in equal pieces, so a micro-batch smaller than
    ``recordsPerPartition`` can still use several cores.  The split depends only on the
    range and these two options, never on the cluster, so a replayed micro-batch has
    the same partitions (the sink's ids rely on it).
``failOnDataLoss``
    ``true`` (default, Kafka's name and default) or ``false``; see "Retention" below.

Offsets, and why a restarted query neither loses nor repeats
    A micro-batch is the offset range [start, end), checkpointed by Spark as
    ``{"offset": end}`` in its offset log before the batch runs, and the next batch starts
    at ``end``.  A restarted query re-runs a planned but uncommitted batch with the same
    range, then goes on from its end.  Each partition [a, b) subscribes at offset a (the
    broker starts at the chunk holding a; the client drops the chunk's records before a)
    and stops after the record at b - 1 or at the first record past it.  Offsets can have
    holes: an offset-tracking entry (StoreOffset) takes an offset and is never delivered,
    so a range's records can number fewer than its offsets.  The end of the stream comes
    from ``probe_bounds`` (exact: everything confirmed before the micro-batch is planned is
    in it), so a range never asks for an offset the stream does not have yet.

Retention (``max-age``, ``max-length-bytes``): data removed before the query read it
    The head of the stream is checked when a micro-batch with data is planned.  When the
    batch's start is below the stream's first message, the records in between are gone:
    with ``failOnDataLoss=true`` the query fails with ``DataLossError`` naming the offsets,
    like Kafka's source; with ``false`` it logs a warning and reads on from the first
    message still there.  As with Kafka, this can be a false alarm: RabbitMQ 3.10 shows no
    offset-tracking entries to readers, so offsets at the head that held only those look
    the same as removed ones.  A partition whose range retention removed after planning
    ends with what is left (it never waits for records that cannot come); one whose range
    lies beyond the stream's end (a deleted and re-created stream) fails instead of
    waiting for ever.

Reading happens on the executors: each partition opens its own connection from ``uri``,
consumes its range and yields Arrow record batches.  The driver keeps one connection
(on a ``BackgroundLoop``) for ``probe_bounds``; an idle query probes at most every 50 ms.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from wirestream.runtime.errors import DecodeError, RemoteProtocolError
from wirestream.runtime.rabbitmq_stream.aio import Client, Consumer, Run
from wirestream.runtime.rabbitmq_stream.amqp import decode_body
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.spark.errors import DataLossError, SparkOptionError
from wirestream.runtime.spark.options import Options
from wirestream.runtime.spark.payload import (
    PAYLOAD_OPTIONS,
    PayloadDecoder,
    PayloadError,
    payload_ddl,
)
from wirestream.runtime.spark.background import BackgroundLoop
from wirestream.runtime.spark.gc_pause import cyclic_gc_paused, freeze_survivors
from wirestream.runtime.spark.rabbitmq_broker import (
    MESSAGE_FORMATS,
    SOURCE,
    StreamBounds,
    check_uri,
    in_context,
    open_client,
    plain,
    probe_bounds,
    require_stream,
)

__all__ = [
    "SOURCE_OPTIONS",
    "DataLossError",
    "SourceSettings",
    "OffsetRange",
    "source_schema",
    "RabbitMQStreamReader",
    "RabbitMQStreamBatchReader",
    "read_range",
]

SOURCE_OPTIONS: Final = (
    "uri",
    "stream",
    "startingOffsets",
    "endingOffsets",
    "maxRecordsPerTrigger",
    "recordsPerPartition",
    "minPartitions",
    "messageFormat",
    "failOnDataLoss",
    *PAYLOAD_OPTIONS,
)
WHO: Final = f"{SOURCE} source"
NAMED_STARTS: Final = ("first", "last", "next")
DEFAULT_RECORDS_PER_PARTITION: Final = 250_000
ROWS_PER_ARROW_BATCH: Final = 8192
IDLE_PROBE_INTERVAL: Final = 0.05
"""Seconds between two probes that found nothing new: an idle query (Spark's default
trigger asks every 10 ms) costs the broker at most 20 subscriptions a second."""
STALL_CHECK: Final = 10.0
"""Seconds a partition waits for its next record before it checks the stream still has it."""

log = logging.getLogger(__name__)

Start = Literal["first", "last", "next"] | int


@dataclass(frozen=True)
class SourceSettings:
    """The source's options, checked; plain data, pickled to the executors."""

    uri: str
    stream: str
    starting: Start
    ending: int | None  # batch reads; None: the end when planned
    max_records_per_trigger: int | None
    records_per_partition: int
    min_partitions: int
    message_format: str
    fail_on_data_loss: bool
    options: dict[str, str]  # as given: the executors build the PayloadDecoder from them

    @staticmethod
    def parse(given: Mapping[str, str]) -> SourceSettings:
        options = Options(SOURCE, given, SOURCE_OPTIONS)
        ending = _offset_option(options, "endingOffsets", "latest", ("latest",))
        return SourceSettings(
            uri=check_uri(options),
            stream=options.text("stream"),
            starting=_offset_option(options, "startingOffsets", "first", NAMED_STARTS),
            ending=None if ending == "latest" else ending,
            max_records_per_trigger=options.integer("maxRecordsPerTrigger", None, minimum=1),
            records_per_partition=options.count(
                "recordsPerPartition", DEFAULT_RECORDS_PER_PARTITION, minimum=1
            ),
            min_partitions=options.count("minPartitions", 1, minimum=1),
            message_format=options.choice("messageFormat", MESSAGE_FORMATS, "amqp"),
            fail_on_data_loss=options.flag("failOnDataLoss", True),
            options=plain(given),
        )

    def payload_decoder(self, schema: StructType) -> PayloadDecoder:
        options = Options(SOURCE, self.options, SOURCE_OPTIONS)
        return PayloadDecoder(options, schema["payload"].dataType)


def _offset_option(options: Options, name: str, default: str, named: tuple[str, ...]) -> Any:
    text = options.text(name, default).strip()
    if text.lower() in named:
        return text.lower()
    try:
        offset = int(text)
    except ValueError:
        offset = -1
    if offset < 0:
        raise SparkOptionError(
            f"{SOURCE}: option {name}={text!r} is not {', '.join(named)} or an offset "
            "(an integer >= 0)"
        )
    return offset


def source_schema(given: Mapping[str, str]) -> str:
    """``DataSource.schema()``: every option checked, the stream looked up, the DDL.

    Spark calls it at ``load()``, so a bad option or a missing stream fails there.
    """
    settings = SourceSettings.parse(given)
    payload = payload_ddl(Options(SOURCE, given, SOURCE_OPTIONS))

    async def look_up() -> None:
        client = await open_client(settings.uri, WHO)
        try:
            await require_stream(client, settings.stream, WHO)
        finally:
            await client.close()

    loop = BackgroundLoop(f"{SOURCE} schema")
    try:
        loop.run(look_up())
    finally:
        loop.close()
    return f"offset long, timestamp timestamp, stream string, payload {payload}"


# ---------------------------------------------------------------------- planning (driver)


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """One Spark partition: the records with ``start <= offset < end`` (plain data)."""

    settings: SourceSettings
    start: int
    end: int


def plan_ranges(settings: SourceSettings, start: int, end: int) -> list[OffsetRange]:
    """[start, end) in slices of ``recordsPerPartition`` offsets, or in ``minPartitions``
    equal slices when that makes more (never more than there are offsets): a function of
    the range and the options only, so a re-run micro-batch gets the same partitions."""
    total = end - start
    size = settings.records_per_partition
    if total <= 0:
        return []
    count = min(settings.min_partitions, total)
    if count <= -(-total // size):
        return [OffsetRange(settings, a, min(a + size, end)) for a in range(start, end, size)]
    bounds = [start + total * i // count for i in range(count + 1)]
    return [OffsetRange(settings, a, b) for a, b in zip(bounds, bounds[1:])]


class _Probe:
    """The driver's connection to the broker, for ``probe_bounds`` (opened on first use)."""

    def __init__(self, settings: SourceSettings) -> None:
        self.settings = settings
        self._loop: BackgroundLoop | None = None
        self._client: Client | None = None

    def bounds(self, *, head: bool) -> StreamBounds:
        if self._loop is None:
            self._loop = BackgroundLoop(f"{SOURCE} probe {self.settings.stream}")
        return self._loop.run(self._bounds(head))

    async def _bounds(self, head: bool) -> StreamBounds:
        if self._client is None or self._client.closed:
            self._client = await open_client(self.settings.uri, WHO)
        try:
            return await probe_bounds(self._client, self.settings.stream, head=head)
        except ResponseError as refused:
            raise in_context(
                refused, f"{WHO}: cannot read stream {self.settings.stream!r}"
            ) from refused

    def close(self) -> None:
        if self._loop is None:
            return
        client, self._client = self._client, None
        try:
            if client is not None:
                self._loop.run(client.close(), timeout=30.0)
        finally:
            self._loop.close()
            self._loop = None


def resolve_start(settings: SourceSettings, probe: _Probe) -> int:
    """``startingOffsets`` as an offset.  An empty stream starts at 0."""
    starting = settings.starting
    if isinstance(starting, int):
        return starting
    bounds = probe.bounds(head=starting == "first")
    found = {"first": bounds.head, "last": bounds.last_chunk, "next": bounds.tail}[starting]
    return found if found is not None else 0


def check_head(settings: SourceSettings, start: int, bounds: StreamBounds) -> None:
    """Records in [start, head) are gone: fail (``failOnDataLoss``) or warn."""
    if bounds.head is None or start >= bounds.head:
        return
    message = (
        f"{WHO}: offsets {start} to {bounds.head - 1} of stream {settings.stream!r} are no "
        f"longer in the stream, which now starts at offset {bounds.head}: retention "
        "(max-age, max-length-bytes) removed them before the query read them, or (a false "
        "alarm) they held only offset-tracking entries"
    )
    if settings.fail_on_data_loss:
        raise DataLossError(f"{message}. Set failOnDataLoss=false to read on from {bounds.head}.")
    log.warning("%s; reading on from offset %d (failOnDataLoss=false)", message, bounds.head)


def _offset_of(offset: Mapping[str, Any] | None) -> int:
    value = offset.get("offset") if isinstance(offset, Mapping) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SparkOptionError(
            f"{WHO}: checkpointed offset {offset!r} is not {{'offset': n}}: the checkpoint "
            "belongs to another source"
        )
    return value


class RabbitMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("rabbitmq_stream")``: micro-batches of offset ranges.

    Spark makes two of these: one in a planning worker, pickled into the executors' read
    function (it only ever runs ``read``), and one in the driver's long-lived Python
    process (offsets, planning).  The driver's opens its ``_Probe`` on first use, so the
    pickled one carries plain data only.
    """

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.settings = SourceSettings.parse(options)
        if self.settings.ending is not None:
            raise SparkOptionError(
                f"{SOURCE}: option endingOffsets is for batch reads (spark.read); a streaming "
                "query reads on, micro-batch by micro-batch"
            )
        self.schema = schema
        self._probe: _Probe | None = None
        self._target: int | None = None  # Trigger.AvailableNow: the end fixed at its start
        self._last_tail: int | None = None
        self._idle_since: float | None = None  # when a probe last found nothing new

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.settings = state["settings"]
        self.schema = state["schema"]
        self._probe = None
        self._target = self._last_tail = self._idle_since = None

    @property
    def probe(self) -> _Probe:
        if self._probe is None:
            self._probe = _Probe(self.settings)
        return self._probe

    def initialOffset(self) -> dict[str, int]:
        return {"offset": resolve_start(self.settings, self.probe)}

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.settings.max_records_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        tail = self.probe.bounds(head=False).tail
        self._target = tail if tail is not None else 0

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, int]:
        """``min(tail, start + limit)``: ``ReadMaxRows`` bounds the batch's offsets (so its
        records), anything else (``ReadAllAvailable``) reads to the end."""
        first = _offset_of(start)
        if self._idle_since is not None:
            wait = self._idle_since + IDLE_PROBE_INTERVAL - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # pacing an idle query's probes, not a synchronisation
        bounds = self.probe.bounds(head=False)
        tail = bounds.tail if bounds.tail is not None else first
        if self._target is not None:
            tail = min(tail, self._target)
        self._last_tail = tail
        if tail <= first:
            self._idle_since = time.monotonic()
            return {"offset": first}
        self._idle_since = None
        head_bounds = self.probe.bounds(head=True)
        check_head(self.settings, first, head_bounds)
        from_here = max(first, head_bounds.head if head_bounds.head is not None else first)
        if isinstance(limit, ReadMaxRows):
            tail = min(tail, from_here + limit.max_rows)
        return {"offset": tail}

    def reportLatestOffset(self) -> dict[str, int] | None:
        return None if self._last_tail is None else {"offset": self._last_tail}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[OffsetRange]:
        return plan_ranges(self.settings, _offset_of(start), _offset_of(end))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OffsetRange), partition
        freeze_survivors()  # runtime/spark/gc_pause.py
        return read_range(partition, self.schema)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets (storing them in the stream
        too would add an offset-tracking entry per micro-batch)."""

    def stop(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None


class RabbitMQStreamBatchReader(DataSourceReader):
    """``spark.read.format("rabbitmq_stream")``: the fixed range [startingOffsets,
    endingOffsets), resolved when Spark plans the read."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.settings = SourceSettings.parse(options)
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        probe = _Probe(self.settings)
        try:
            start = resolve_start(self.settings, probe)
            bounds = probe.bounds(head=True)
        finally:
            probe.close()
        end = self.settings.ending
        if end is None:
            end = bounds.tail if bounds.tail is not None else start
        if end > start:
            check_head(self.settings, start, bounds)
        ranges: list[InputPartition] = list(plan_ranges(self.settings, start, end))
        # Spark wants at least one partition: an empty range reads nothing.
        return ranges or [OffsetRange(self.settings, start, start)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OffsetRange), partition
        freeze_survivors()  # runtime/spark/gc_pause.py
        return read_range(partition, self.schema)


# ---------------------------------------------------------------------- reading (executors)


class _RangeConsumer:
    """The records of [start, end) from a subscription at ``start``, a list at a time."""

    def __init__(self, client: Client, consumer: Consumer, part: OffsetRange) -> None:
        self.client = client
        self.consumer = consumer
        self.part = part
        self.done = False

    @staticmethod
    async def open(part: OffsetRange) -> _RangeConsumer:
        settings = part.settings
        client = await open_client(settings.uri, WHO)
        try:
            consumer = await client.consumer(
                settings.stream,
                part.start,
                raw=settings.message_format == "raw",
                until=part.end,  # no credit for chunks past the range
            )
        except ResponseError as refused:
            await client.close()
            raise in_context(
                refused, f"{WHO}: cannot read stream {settings.stream!r} from {client.uri}"
            ) from refused
        except BaseException:
            await client.close()
            raise
        return _RangeConsumer(client, consumer, part)

    async def next_runs(self, limit: int) -> list[Run]:
        """Up to ``limit`` records of the range, as runs of consecutive records ([] once
        the range is read).  Records come a chunk's run at a time (``Consumer.next_run``):
        no per-record object, no per-record await."""
        runs: list[Run] = []
        taken = 0
        start, end = self.part.start, self.part.end
        while not self.done and taken < limit:
            first, timestamp, records = await self._next_run(limit - taken)
            last = first + len(records)  # exclusive
            if first < start:  # the head of the chunk holding ``start``
                records = records[start - first :]
                first = start
            if last >= end:
                records = records[: max(0, end - first)]
                self.done = True
            if records:
                runs.append((first, timestamp, records))
                taken += len(records)
        return runs

    async def _next_run(self, limit: int) -> Run:
        while True:
            stall = asyncio.timeout(STALL_CHECK)
            try:
                async with stall:
                    return await self.consumer.next_run(limit)
            except TimeoutError:
                if not stall.expired():
                    raise  # the client's own (a TransportTimeout ...), not our stall check
                await self._check_not_past_the_end()
            except StopAsyncIteration:
                raise RemoteProtocolError(
                    f"{WHO}: the subscription to stream {self.part.settings.stream!r} ended "
                    f"before offset {self.part.end - 1}"
                ) from None
            except ResponseError as refused:
                raise in_context(
                    refused,
                    f"{WHO}: reading stream {self.part.settings.stream!r} "
                    f"(offsets {self.part.start} to {self.part.end - 1})",
                ) from refused

    async def _check_not_past_the_end(self) -> None:
        """A range is planned inside the stream, so its records exist or retention removed
        them (then later ones arrive): a stream that ends before the range was replaced."""
        bounds = await probe_bounds(self.client, self.part.settings.stream, head=False)
        if bounds.tail is None or bounds.tail < self.part.end:
            raise RemoteProtocolError(
                f"{WHO}: stream {self.part.settings.stream!r} ends at offset "
                f"{bounds.tail if bounds.tail is not None else 0}, before this partition's "
                f"range [{self.part.start}, {self.part.end}) was read: was the stream deleted "
                "and created again since the micro-batch was planned?"
            )

    async def close(self) -> None:
        try:
            await self.consumer.close()
        finally:
            await self.client.close()


def read_range(part: OffsetRange, schema: StructType) -> Iterator[pa.RecordBatch]:
    """A partition's records as Arrow record batches in ``schema`` (an executor's work)."""
    if part.end <= part.start:
        return
    settings = part.settings
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    to_batch = _BatchBuilder(settings, schema, arrow_schema)
    loop = BackgroundLoop(f"{SOURCE} read {settings.stream} [{part.start}, {part.end})")
    try:
        reader = loop.run(_RangeConsumer.open(part))
        try:
            while True:
                runs = loop.run(reader.next_runs(ROWS_PER_ARROW_BATCH))
                if not runs:
                    break
                with cyclic_gc_paused():  # runtime/spark/gc_pause.py
                    batch = to_batch(runs)
                yield batch
        finally:
            loop.run(reader.close(), timeout=30.0)
    finally:
        loop.close()


class _BatchBuilder:
    """Runs of records -> one Arrow record batch of the source's schema, column by
    column: offsets and timestamps per run, bodies sliced out of their AMQP Data
    sections, payloads decoded by ``PayloadDecoder.array``."""

    def __init__(self, settings: SourceSettings, schema: StructType, arrow: pa.Schema) -> None:
        self.stream = settings.stream
        self.arrow = arrow
        self.decoder = settings.payload_decoder(schema)
        self.raw = settings.message_format == "raw"
        self.null_on_error = self.decoder.null_on_error

    def __call__(self, runs: list[Run]) -> pa.RecordBatch:
        arrow = self.arrow
        offsets: list[int] = []
        timestamps: list[int] = []
        records: list[bytes] = []
        for first, timestamp, run in runs:
            offsets.extend(range(first, first + len(run)))
            timestamps.extend([timestamp * 1000] * len(run))  # ms -> Spark's us
            records.extend(run)
        bodies = records if self.raw else self._bodies(offsets, records)
        if bodies is None:  # a body that is not binary, as null (onBadPayload=null)
            payload = self._payloads_with_nulls(offsets, records, arrow.field(3).type)
        else:
            payload = self.decoder.array(bodies, arrow.field(3).type,
                                         lambda i: f"offset {offsets[i]}")  # fmt: skip
        columns = [
            pa.array(offsets, arrow.field(0).type),
            pa.array(timestamps, arrow.field(1).type),
            pa.array([self.stream] * len(offsets), arrow.field(2).type),
            payload,
        ]
        return pa.RecordBatch.from_arrays(columns, schema=arrow)

    def _bodies(self, offsets: list[int], records: list[bytes]) -> list[bytes] | None:
        """Each record's AMQP body; None when one has none and ``onBadPayload=null``."""
        bodies: list[bytes] = []
        append = bodies.append
        for offset, record in zip(offsets, records):
            try:
                append(decode_body(record))
            except DecodeError as error:
                if self.null_on_error:
                    return None
                raise PayloadError(
                    f"{WHO}: the message at offset {offset} of stream {self.stream!r} "
                    f"has no binary body ({error}); messageFormat=raw reads the stored bytes"
                ) from None
        return bodies

    def _payloads_with_nulls(
        self, offsets: list[int], records: list[bytes], arrow_type: pa.DataType
    ) -> pa.Array:
        values: list[Any] = []
        for offset, record in zip(offsets, records):
            try:
                body = decode_body(record)
            except DecodeError:
                values.append(None)
                continue
            values.append(self.decoder(body, f"offset {offset}"))
        return pa.array(values, arrow_type)
