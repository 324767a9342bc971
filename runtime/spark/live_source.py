"""Live push streams as Structured Streaming sources: demand per micro-batch.

The ``rsocket`` and ``rsio`` sources read streams that a publisher pushes and cannot replay
(an RSocket request-stream or channel, a Reactive Streams subscription).  This module is
what they share: the driver-side subscription, the micro-batch bookkeeping and the
executor-side decoding.

Where the subscription lives
    In the driver, in the query's long-lived Python process (the one PySpark runs the
    stream reader in): one connection, opened at the first micro-batch, served by a
    background thread running its own asyncio loop.  Spark's calls (``latestOffset``,
    ``partitions``, ``commit``) hand work to that loop and wait for its answer.

Backpressure: demand per micro-batch
    A micro-batch's budget is ``maxRecordsPerTrigger`` (Spark's ``ReadMaxRows``).  When
    Spark plans a micro-batch the driver tops the subscription's demand up to the budget:
    it requests ``budget - (granted - planned)``, i.e. what the previous batch took, so
    items granted but not yet in a batch never exceed one budget (the subscription opens
    with the budget as its initial demand).  It then waits until a budget's worth has
    arrived or ``maxWaitMs`` has passed (a slow publisher does not stall the trigger) and
    plans what arrived.  No demand is granted while Spark runs a batch, so the publisher
    can be at most one budget ahead of Spark: Spark's pace is the backpressure.

    ``prefetch=true`` tops demand up as soon as a batch is planned instead, so the next
    budget arrives while Spark runs this one: the publisher can then be two budgets ahead
    of what Spark has finished (one running, one arriving), and neither the wire nor
    Spark waits for the other.  It is the throughput choice (the wire and Spark overlap:
    with the default they take turns, so a query moves at most about half the rate of
    the slower of the two); the default keeps the tighter bound.  Granted but not yet
    planned never exceeds one budget either way.  The
    items travel to the executors inside the batch's partitions (plain bytes: this works
    on a cluster); the executors decode the payloads (``wirestream.runtime.spark.payload``).

Delivery guarantee
    - Within a running query every item the publisher sends is in exactly one micro-batch,
      in the order it was sent; ``seq`` numbers the items without gaps, and continues
      across restarts from the checkpoint.
    - Across restarts, at most once.  The stream has no replay: items held in the driver
      that were not part of a committed batch when the query stopped or crashed (the
      batch being planned or run, at most a budget -- two with ``prefetch`` -- and what
      was in flight) are lost.  A
      restarted query opens a new subscription; what the publisher sends on it (a fresh
      stream, a resumption) is the publisher's business.
    - ``failOnDataLoss`` (default true, Kafka's name): when a restarted query must re-run
      a batch that was planned but not committed before the stop, its items lived only
      in the old driver, and the query fails with ``DataLossError`` naming the lost
      ``seq`` range.  ``false`` logs it, runs that batch empty and goes on.

Options every live source takes (``LIVE_OPTIONS``): ``maxRecordsPerTrigger`` (default
1000), ``maxWaitMs`` (default 500), ``prefetch`` (default false), ``failOnDataLoss``
(default true), ``connectTimeoutMs`` (default 10000).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from wirestream.runtime.aio import InboundStream
from wirestream.runtime.errors import TransportTimeout
from wirestream.runtime.flow import RSOCKET_MAX_N
from wirestream.runtime.spark.background import BackgroundLoop
from wirestream.runtime.spark.errors import DataLossError, SparkOptionError
from wirestream.runtime.spark.gc_pause import cyclic_gc_paused, freeze_survivors
from wirestream.runtime.spark.options import Options
from wirestream.runtime.spark.payload import PayloadDecoder, payload_ddl

__all__ = [
    "LiveDataSource",
    "LIVE_OPTIONS",
    "DataLossError",
    "LiveSourceError",
    "LiveRows",
    "LiveStreamReader",
    "Opened",
    "Pacing",
    "Subscription",
    "check_columns",
]

_log = logging.getLogger(__name__)

LIVE_OPTIONS: Final = (
    "maxRecordsPerTrigger",
    "maxWaitMs",
    "prefetch",
    "failOnDataLoss",
    "connectTimeoutMs",
)
DEFAULT_MAX_RECORDS: Final = 1000
DEFAULT_MAX_WAIT_MS: Final = 500
DEFAULT_CONNECT_TIMEOUT_MS: Final = 10_000
MAX_BUDGET: Final = RSOCKET_MAX_N
"""A budget is granted as one request-n, and RSocket's is 31 bits (rsio's is 63)."""
ROWS_PER_PARTITION: Final = 100_000
"""At most this many items a partition (task).  Each task costs Spark some 25 ms of its
own beside decoding; at 20,000 a piece that was a tenth of the demo's time."""
MIN_ROWS_PER_PARTITION: Final = 10_000
"""A batch is split over the driver's cores only in pieces of at least this many items."""
CALL_SLACK: Final = 30.0
"""Seconds a driver call waits beyond its own deadlines before calling the loop stuck."""

Arrival = tuple[int, bytes | None, bytes]
"""One received item: (received_at in microseconds since the epoch, metadata, data)."""


class LiveSourceError(Exception):
    """A live source's subscription could not be opened, or ended with an error.  The
    message names the source and its URI; ``__cause__`` is the wire error."""


@dataclass(frozen=True, slots=True)
class Pacing:
    """The options shared by the live sources (module docstring), checked."""

    max_records: int
    max_wait: float  # seconds
    prefetch: bool
    fail_on_data_loss: bool
    connect_timeout: float  # seconds

    @classmethod
    def from_options(cls, options: Options) -> Pacing:
        max_records = options.count("maxRecordsPerTrigger", DEFAULT_MAX_RECORDS, minimum=1)
        if max_records > MAX_BUDGET:
            raise SparkOptionError(
                f"{options.source}: option maxRecordsPerTrigger={max_records} is above "
                f"{MAX_BUDGET} (one request-n grants a whole budget)"
            )
        max_wait_ms = options.count("maxWaitMs", DEFAULT_MAX_WAIT_MS, minimum=0)
        connect_ms = options.count("connectTimeoutMs", DEFAULT_CONNECT_TIMEOUT_MS, minimum=1)
        return cls(
            max_records=max_records,
            max_wait=max_wait_ms / 1000,
            prefetch=options.flag("prefetch", False),
            fail_on_data_loss=options.flag("failOnDataLoss", True),
            connect_timeout=connect_ms / 1000,
        )


def check_columns(source: str, schema: StructType, expected: Sequence[str]) -> None:
    """A schema given with ``.schema(...)`` must have the source's columns, in order."""
    if list(schema.names) != list(expected):
        raise SparkOptionError(
            f"{source}: the schema must have the columns {', '.join(expected)} "
            f"(got {', '.join(schema.names) or 'none'}); leave the schema out to get it"
        )


# ===================================================================== the subscription


@dataclass(frozen=True, slots=True)
class Opened:
    """An open subscription: the stream of items, and how to close its connection."""

    stream: InboundStream[Any]
    close: Callable[[], Awaitable[None]]


OpenStream = Callable[[int], Awaitable[Opened]]
"""``open(initial_demand)``: connect and subscribe, granting ``initial_demand`` at once."""
Split = Callable[[Any], tuple[bytes | None, bytes]]
"""An item of the stream -> (metadata, data)."""


class _ExplicitDemand:
    """An ``InboundStream`` read with explicit demand: a Spark source's demand follows
    micro-batches, not consumption (``InboundStream.request``/``take_buffered``)."""

    __slots__ = ("stream",)

    def __init__(self, stream: InboundStream[Any]) -> None:
        self.stream = stream  # referenced: a dropped InboundStream cancels itself

    def request(self, n: int) -> None:
        self.stream.request(n)

    def take(self) -> list[Any]:
        return self.stream.take_buffered()

    @property
    def finished(self) -> bool:
        return self.stream.finished and not self.stream.buffered

    @property
    def error(self) -> BaseException | None:
        return self.stream.error

    async def wait(self) -> None:
        await self.stream.wait_buffered()


class _Feed:
    """The loop side of a ``Subscription``: the stream, the demand granted, what arrived."""

    def __init__(
        self, describe: str, open_stream: OpenStream, split: Split, prefetch: bool = False
    ) -> None:
        self.describe = describe
        self.prefetch = prefetch
        self._open_stream = open_stream
        self._split = split
        self._opened: Opened | None = None
        self._reader: _ExplicitDemand | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self.arrived: collections.deque[Arrival] = collections.deque()
        self.granted = 0  # demand granted over the subscription's life
        self.planned = 0  # items handed to micro-batches
        self.ended = False
        self.error: BaseException | None = None
        self._arrival = asyncio.Event()
        self._said_complete = False

    async def take(self, budget: int, max_wait: float) -> list[Arrival]:
        """Top demand up to ``budget``, wait for it (``max_wait`` at most), hand over what
        arrived (``budget`` items at most)."""
        loop = asyncio.get_running_loop()
        if self._reader is None:
            await self._open(budget)
        else:
            self._top_up(budget)
        deadline = loop.time() + max_wait
        while len(self.arrived) < budget and not self.ended:
            self._arrival.clear()
            try:
                async with asyncio.timeout_at(deadline):
                    await self._arrival.wait()
            except TimeoutError:
                break
        count = min(budget, len(self.arrived))
        rows = [self.arrived.popleft() for _ in range(count)]
        self.planned += count
        if self.prefetch:
            self._top_up(budget)  # the next budget comes while Spark runs this one
        if not rows and self.ended:
            if self.error is not None:
                raise LiveSourceError(f"{self.describe}: {self.error}") from self.error
            if not self._said_complete:
                self._said_complete = True
                _log.warning("%s: the publisher completed the stream; no more rows will come",
                             self.describe)  # fmt: skip
        return rows

    def _top_up(self, budget: int) -> None:
        """Demand up to ``budget`` granted and not yet planned (in flight, or arrived
        and waiting here)."""
        if self._reader is None or self.ended:
            return
        want = budget - (self.granted - self.planned)
        if want > 0:
            self._reader.request(want)
            self.granted += want

    async def _open(self, initial_demand: int) -> None:
        try:
            self._opened = await self._open_stream(initial_demand)
        except Exception as error:
            raise LiveSourceError(f"{self.describe}: cannot subscribe: {error}") from error
        self._reader = _ExplicitDemand(self._opened.stream)
        self.granted = initial_demand
        self._drain_task = asyncio.get_running_loop().create_task(self._drain(self._reader))

    async def _drain(self, reader: _ExplicitDemand) -> None:
        """Move what arrives into ``arrived`` at once, stamped with its arrival time.  Only
        granted demand can arrive, so this never holds more than a budget."""
        split = self._split
        try:
            while True:
                items = reader.take()
                if items:
                    now = time.time_ns() // 1000
                    self.arrived.extend((now, *split(item)) for item in items)
                    self._arrival.set()
                if reader.finished:
                    self.error = reader.error
                    break
                await reader.wait()
        except Exception as error:  # a bug here must fail the query, not stall it
            self.error = error
        self.ended = True
        self._arrival.set()

    async def close(self) -> None:
        """Cancel the subscription, close the connection."""
        self.ended = True
        if self._reader is not None:
            await self._reader.stream.aclose()  # CANCEL (once)
        if self._drain_task is not None:
            self._drain_task.cancel()
            await asyncio.gather(self._drain_task, return_exceptions=True)
        if self._opened is not None:
            try:
                async with asyncio.timeout(5):
                    await self._opened.close()
            except Exception as error:  # closing a dead connection: nothing left to do
                _log.info("%s: closing: %s", self.describe, error)


class Subscription:
    """A live stream's subscription, held by the driver: a background thread runs an
    asyncio loop; ``take`` (called by Spark's thread) blocks until a batch is ready."""

    def __init__(self, describe: str, open_stream: OpenStream, split: Split,
                 connect_timeout: float, prefetch: bool = False) -> None:  # fmt: skip
        self.describe = describe
        self._connect_timeout = connect_timeout
        self._feed = _Feed(describe, open_stream, split, prefetch)
        self._background = BackgroundLoop(f"wirestream {describe}")

    def take(self, budget: int, max_wait: float) -> list[Arrival]:
        """The next batch's items (module docstring); raises ``LiveSourceError``."""
        seconds = max_wait + self._connect_timeout + CALL_SLACK
        try:
            return self._background.run(self._feed.take(budget, max_wait), seconds)
        except TransportTimeout:
            raise LiveSourceError(f"{self.describe}: no answer from the subscription's "
                                  f"loop within {seconds:.0f} s") from None  # fmt: skip

    def close(self) -> None:
        if self._background.closed:
            return
        try:
            self._background.run(self._feed.close(), 10)
        except Exception as error:
            _log.info("%s: closing: %s", self.describe, error)
        self._background.close()


# ===================================================================== the stream reader


class LiveRows(InputPartition):
    """A slice of one micro-batch: its items as plain bytes (what executors decode)."""

    def __init__(self, first_seq: int, received_at: list[int],
                 metadata: list[bytes | None], payloads: list[bytes]) -> None:  # fmt: skip
        super().__init__(first_seq)
        self.first_seq = first_seq
        self.received_at = received_at
        self.metadata = metadata
        self.payloads = payloads

    def __repr__(self) -> str:  # the payloads would flood a log line
        return f"LiveRows(seq {self.first_seq}..{self.end_seq - 1}, {len(self.payloads)} items)"

    @property
    def end_seq(self) -> int:
        return self.first_seq + len(self.payloads)

    def slice(self, start: int, end: int) -> LiveRows:
        """The items with ``start <= seq < end`` (within this slice)."""
        lo, hi = start - self.first_seq, end - self.first_seq
        return LiveRows(start, self.received_at[lo:hi], self.metadata[lo:hi],
                        self.payloads[lo:hi])  # fmt: skip


def split_count(items: int) -> int:
    """How many partitions ``items`` of one batch go in: one per core of the driver's
    machine (pieces of ``MIN_ROWS_PER_PARTITION`` at least), and more when pieces would
    pass ``ROWS_PER_PARTITION``.  A live batch is never re-planned (it cannot be
    replayed), so its split may depend on the machine."""
    cores = os.cpu_count() or 1
    return max(-(-items // ROWS_PER_PARTITION), min(cores, items // MIN_ROWS_PER_PARTITION), 1)


def _seq(offset: Mapping[str, Any], source: str) -> int:
    value = offset.get("seq") if isinstance(offset, Mapping) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise LiveSourceError(f"{source}: offset {offset!r} is not {{'seq': n}} "
                              "(a checkpoint of another source?)")  # fmt: skip
    return value


class LiveStreamReader(DataSourceStreamReader):
    """A live source's stream reader (module docstring).  Subclasses say how to open the
    stream (``open_stream``) and what an item holds (``split``).

    On the driver it holds the subscription and the planned, not yet committed batches;
    on executors ``read`` decodes a partition.  What is pickled to executors is plain data
    only: the options, the schema, the settings read from them (``__getstate__``).
    """

    def __init__(self, source: str, options: Mapping[str, str], known: Sequence[str],
                 schema: StructType, describe: str) -> None:  # fmt: skip
        self.source = source
        self.options = dict(options)
        self.known = tuple(known)
        self.schema = schema
        self.describe = describe
        self.pacing = Pacing.from_options(Options(source, self.options, self.known))
        self._reset()

    def _reset(self) -> None:
        self._subscription: Subscription | None = None
        self._held: list[LiveRows] = []  # planned, not committed, in seq order
        self._next_seq: int | None = None  # the end of the last planned batch

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in ("_subscription", "_held", "_next_seq"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    # --- what a protocol provides --------------------------------------------------------

    async def open_stream(self, initial_demand: int) -> Opened:
        raise NotImplementedError

    @staticmethod
    def split(item: Any) -> tuple[bytes | None, bytes]:
        raise NotImplementedError

    # --- driver ----------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        return {"seq": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.pacing.max_records)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Plan the next micro-batch: top demand up to the budget, wait, take what came.

        The budget is the ``ReadMaxRows`` limit; any other limit (``ReadAllAvailable`` for
        ``Trigger.Once``/``AvailableNow``) means ``maxRecordsPerTrigger`` too: a live
        stream has no "all available", and demand must be finite.
        """
        seq = _seq(start, self.source)
        if self._next_seq is None:
            self._next_seq = seq  # a new run continues the checkpoint's numbering
        elif seq < self._next_seq:
            return {"seq": self._next_seq}  # planned earlier and still held
        elif seq > self._next_seq:
            raise LiveSourceError(f"{self.describe}: Spark asks for items after seq {seq}, "
                                  f"but only {self._next_seq} were planned")  # fmt: skip
        budget = self.pacing.max_records
        if isinstance(limit, ReadMaxRows):
            budget = limit.max_rows
        budget = max(1, min(budget, MAX_BUDGET))
        if self._subscription is None:
            self._subscription = Subscription(self.describe, self.open_stream, self.split,
                                              self.pacing.connect_timeout,
                                              self.pacing.prefetch)  # fmt: skip
        arrivals = self._subscription.take(budget, self.pacing.max_wait)
        if arrivals:
            received_at, metadata, payloads = (list(column) for column in zip(*arrivals))
            self._held.append(LiveRows(self._next_seq, received_at, metadata, payloads))
            self._next_seq += len(arrivals)
        return {"seq": self._next_seq}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, last = _seq(start, self.source), _seq(end, self.source)
        if first >= last:
            return []
        parts: list[InputPartition] = []
        covered = 0
        for rows in self._held:
            lo, hi = max(first, rows.first_seq), min(last, rows.end_seq)
            if hi > lo:
                pieces = split_count(hi - lo)
                bounds = [lo + (hi - lo) * i // pieces for i in range(pieces + 1)]
                parts.extend(rows.slice(a, b) for a, b in zip(bounds, bounds[1:]))
            covered += max(0, hi - lo)
        if covered < last - first:
            self._lost(first, last)
        return parts

    def _lost(self, first: int, last: int) -> None:
        held = [(rows.first_seq, rows.end_seq) for rows in self._held]
        missing: list[tuple[int, int]] = []
        at = first
        for lo, hi in held:
            if hi <= at or lo >= last:
                continue
            if lo > at:
                missing.append((at, lo))
            at = max(at, hi)
        if at < last:
            missing.append((at, last))
        ranges = ", ".join(f"{lo}..{hi - 1}" for lo, hi in missing)
        count = sum(hi - lo for lo, hi in missing)
        message = (
            f"{self.describe}: items seq {ranges} ({count} items) are lost: they were held "
            "by the driver of the query's previous run and never committed, and a live "
            "stream cannot replay them (at-most-once across restarts)"
        )
        if self.pacing.fail_on_data_loss:
            raise DataLossError(
                f"{message}. Set the option failOnDataLoss to false to run without them."
            )
        _log.warning("%s; failOnDataLoss is false: going on without them", message)

    def commit(self, end: dict[str, Any]) -> None:
        done = _seq(end, self.source)
        kept: list[LiveRows] = []
        for rows in self._held:
            if rows.end_seq <= done:
                continue
            kept.append(rows if rows.first_seq >= done else rows.slice(done, rows.end_seq))
        self._held = kept

    def stop(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None

    # --- executors ---------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decode one partition's payloads into an Arrow batch of the schema's columns."""
        assert isinstance(partition, LiveRows), type(partition)
        freeze_survivors()  # runtime/spark/gc_pause.py
        schema = self.schema
        decoder = PayloadDecoder(Options(self.source, self.options, self.known),
                                 schema["payload"].dataType)  # fmt: skip
        arrow_schema = to_arrow_schema(schema, timezone="UTC")
        first = partition.first_seq
        # Built by name, only for the schema's columns (rsio's have no ``metadata``).
        columns: dict[str, Callable[[pa.DataType], pa.Array]] = {
            "seq": lambda type: pa.array(range(first, partition.end_seq), type),
            "received_at": lambda type: pa.array(partition.received_at, type),
            "metadata": lambda type: pa.array(partition.metadata, type),
            "payload": lambda type: decoder.array(partition.payloads, type,
                                                  lambda index: f"seq {first + index}"),  # fmt: skip
        }
        with cyclic_gc_paused():  # runtime/spark/gc_pause.py
            arrays = [columns[field.name](field.type) for field in arrow_schema]
        yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


class LiveDataSource(DataSource):
    """A live source's ``DataSource``: options checked at ``load()`` (``schema``), the
    schema's columns checked, then the stream reader.  Subclasses name the format
    (``SOURCE``), the options they know, the envelope columns before ``payload``, how the
    request options are checked (``check_request``) and its reader (``make_reader``)."""

    SOURCE: str
    OPTIONS: tuple[str, ...]
    ENVELOPE: tuple[tuple[str, str], ...]  # (column, DDL type) before ``payload``

    @classmethod
    def name(cls) -> str:
        return cls.SOURCE

    @staticmethod
    def check_request(options: Options) -> None:
        raise NotImplementedError

    def make_reader(self, options: Mapping[str, str], schema: StructType) -> LiveStreamReader:
        raise NotImplementedError

    def _options(self) -> Options:
        return Options(self.SOURCE, dict(self.options), self.OPTIONS)

    def schema(self) -> str:
        options = self._options()  # every option is checked here, at load()
        self.check_request(options)
        Pacing.from_options(options)
        envelope = ", ".join(f"{column} {ddl}" for column, ddl in self.ENVELOPE)
        return f"{envelope}, payload {payload_ddl(options)}"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = self._options()
        check_columns(self.SOURCE, schema, [column for column, _ in self.ENVELOPE] + ["payload"])
        PayloadDecoder(options, schema["payload"].dataType)  # refuses unsupported types now
        return self.make_reader(dict(self.options), schema)
