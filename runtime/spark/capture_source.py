"""The ``wirestream`` batch data source: capture files -> the decoded frame log.

>>> frames = (spark.read.format("wirestream")
...           .option("protocol", "rsocket/1.0")
...           .load("caps/rsocket.*.wscap"))

``path`` is a capture file, a folder (its files, hidden and ``_`` files skipped) or a glob.
pcap and pcapng files of TCP traffic (tcpdump's, Wireshark's, ``wirestream capture
to-pcap``'s) are read too, told from ``.wscap`` files by their first bytes: their TCP
streams are reassembled and cut into frames (``wirestream.runtime.capture.pcap``), which
become rows exactly as a capture's records do:

>>> frames = (spark.read.format("wirestream")
...           .option("protocol", "rabbitmq_stream/1").option("serverPort", "5552")
...           .load("/var/captures/*.pcap"))

Each record becomes one row of the protocol version's generated ``FRAME_LOG_SCHEMA``
(``generated/<protocol>/<version>/spark.py``): ``capture_time`` (microseconds; the
capture's nanoseconds are truncated), ``connection_id``, ``direction`` (``in``/``out``,
seen from the tapped side), ``protocol``, ``version``, ``frame_type``, ``stream_id``,
``flags``, ``length`` (of the frame, without any transport prefix), then one struct
column per frame type, set only in that frame type's rows.

Options:

``protocol``
    ``rsocket/1.0``, ``rsocket/0.2``, ``rsio/0``, ``rsio/0+msgpack``, ``bpmux/rel``,
    ``rabbitmq_stream/1``, ``rabbitmq_stream/draft`` (``wirestream.runtime.capture.protocols``).
    Optional: the file headers name it; when given, every file must hold it.  A pcap
    file does not say which protocol it carries: reading one needs this option, unless
    ``wirestream capture to-pcap`` wrote it (its interface description names it).
``serverPort``
    pcap files: the protocol's server port; only TCP connections with an end on it are
    read, and without a SYN in the capture the side on it is the server.  Default: the
    port a file written by ``to-pcap`` names, else the protocol's well-known port
    (RSocket 7878, RabbitMQ streams 5552; Reactive Streams and BPMUX have none).  ``0``:
    every TCP connection.
``midstream``
    pcap files: ``true`` reads a direction whose start the capture missed, and reads on
    after a gap, from the next segment (``wirestream.runtime.capture.tcp_streams``);
    default ``false``: such a direction is left out, as its frame boundaries are unknown.
``maxPartitionBytes``
    at most how many bytes of a file one partition reads (default 64 MiB).  Partitions
    split files at record boundaries (``wirestream.runtime.capture.format``: a range owns the
    records that start in it).  Not Spark's 128 MiB file default, which suits JVM readers
    going at hundreds of MB/s: decoding here is Python, 2.5-3 us per frame on the Arrow
    path, so a capture of small frames (~150 bytes a record) reads at ~50 MB/s per core.
    64 MiB is then over a second per task, which amortises a task's fixed cost (40-60 ms
    of JVM and Python time, measured on 2 cores: ten 16 MiB tasks of a 150 MB capture
    cost 0.3 s more than two).
``minPartitions``
    at least how many partitions (default: the driver's CPU count, as Spark's own
    ``defaultParallelism`` in local mode; on a cluster give the executors' total cores).
    The captures are cut into a multiple of this many pieces of equal size, so that
    every core gets the same share: ``local[2]`` reads a 150 MB capture as two 75 MB
    partitions, not as a 64, 64 and 22 MB (one core idle for a third of the time).
    Reactive Streams captures (``rsio``) are read one partition per file: a fixed-size
    element decodes only with the ``subscribed`` that announced its size, earlier in the
    connection.  So are pcap files: a TCP stream is reassembled from its start.
``mode``
    ``FAILFAST`` (default): a frame that does not decode fails the task with an error
    naming the file, the record's offset, the connection and the first bytes.
    ``PERMISSIVE``: it becomes a row with ``frame_type`` ``MALFORMED``, its capture time,
    connection, direction and length, and null ``stream_id``, ``flags`` and frame columns
    (find its bytes with ``wirestream.runtime.capture.iter_records``).  ``DROPMALFORMED``: it is
    left out.  A corrupt capture *file* (bad CRC, ...) always fails: past it, records
    cannot be trusted.
``arrow``
    ``true`` (default): each task yields Arrow record batches of up to 10,000 rows built
    column by column (the fast path); ``false``: one Python tuple per row (the row path,
    for comparison).
``native``
    ``true`` (default): where the Rust extension ``wirestream.runtime._native`` is built (``make
    native``; docs/rust.md) and decodes the protocol, a capture file's batches are read
    and built by it (``wirestream.runtime.capture.native``: the same rows and errors, no
    Python object per frame; a pcap file's frames, once its TCP streams are reassembled in
    Python, but a contextual protocol's in FAILFAST); ``false``: the pure-Python path
    always, as ``arrow=false`` does.

``frameTypes``
    the frame types to read, comma-separated, as ``frame_type`` names them
    (``PAYLOAD,REQUEST_N``; any case): rows of other frame types are left out by the
    source, before Spark sees them (in PERMISSIVE mode ``MALFORMED`` rows stay).  Default:
    every frame type.
``schema``
    ``full``: the protocol's whole ``FRAME_LOG_SCHEMA``, the same columns whatever the
    files hold (one struct column per frame type of the protocol); ``lean``: only the
    columns a row can have a value in -- the common columns but the protocol's
    ``NULL_COLUMNS`` (``stream_id`` and ``flags`` where its frames have none), and the
    struct columns of ``frameTypes`` only.  Default: ``lean`` when ``frameTypes`` is
    given, else ``full``, which keeps every read of a protocol's captures the same
    columns (tables appended to, unions, queries naming any column) as before the option.
    Frame logs of different schemas (or protocols) union with
    ``unionByName(other, allowMissingColumns=True)``.  Spark's Python data sources cannot
    prune columns (PySpark 4.x offers filter pushdown alone, and only with
    ``spark.sql.python.filterPushdown.enabled``): a ``select`` after ``load`` still has every
    column built and sent to the JVM, so name the columns here.

A connection id at or above 2**63 (not from ``CaptureWriter``, whose ids fit) shows as
its two's complement in the ``long`` column.  The frame log has no column for the
tapped side (client or server), so ``direction`` alone does not say who sent a frame;
the records do (``wirestream.runtime.capture.iter_records``: ``side``, ``sender``).
"""

from __future__ import annotations

import datetime
import glob
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import Any, Final

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from wirestream.runtime.capture import (
    PROTOCOLS,
    CaptureProtocol,
    Direction,
    Side,
    get_protocol,
    read_header,
    split_ranges,
)
from wirestream.runtime.capture import native
from wirestream.runtime.capture.format import FLAG_OUT, FLAG_SERVER
from wirestream.runtime.capture.pcap import (
    PcapReader,
    described_capture,
    is_pcap,
    pcap_raw_records,
)
from wirestream.runtime.capture.reader import (
    RawRecord,
    RecordChunk,
    RecordHeader,
    scan_chunks,
    scan_records,
)
from wirestream.runtime.errors import DecodeError, ProtocolError
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.gc_pause import cyclic_gc_paused, freeze_survivors
from wirestream.runtime.spark.options import Options

__all__ = ["WirestreamCaptureSource", "CaptureReader", "CapturePartition", "MALFORMED"]

SOURCE: Final = "wirestream"
OPTIONS: Final = (
    "protocol", "maxPartitionBytes", "minPartitions", "mode", "arrow", "serverPort", "midstream",
    "native", "frameTypes", "schema",
)  # fmt: skip
SCHEMAS: Final = ("full", "lean")
MODES: Final = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
DEFAULT_MAX_PARTITION_BYTES: Final = 64 * 1024 * 1024
BATCH_ROWS: Final = 10_000
"""Rows per Arrow record batch (Spark's own ``maxRecordsPerBatch`` default)."""
WSCAP: Final = "wscap"
PCAP: Final = "pcap"
MALFORMED: Final = "MALFORMED"
"""``frame_type`` of a frame that did not decode, in PERMISSIVE mode."""

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_U64: Final = 1 << 64
_I64_MAX: Final = (1 << 63) - 1


def spark_module(protocol: CaptureProtocol) -> ModuleType:
    """``generated.<protocol>.<version>.spark`` of a capture protocol."""
    return import_module(f"{protocol.codec_module}.spark")


def known_protocols() -> list[str]:
    return list(PROTOCOLS)


# --- planning (driver side) ----------------------------------------------------------


def _paths(options: Options) -> list[str]:
    """The ``path`` (or ``paths``) given to ``load``, as a list."""
    raw = options.optional("paths")
    if raw:
        try:
            paths = json.loads(raw)
        except ValueError:
            paths = [raw]
        if isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths):
            return paths
    path = options.optional("path")
    if not path:
        raise SparkOptionError(
            f"{SOURCE}: no path: load(path) with a capture file, a folder or a glob"
        )
    return [path]


def _visible(name: str) -> bool:
    return not name.startswith((".", "_"))


def resolve_files(patterns: Sequence[str]) -> list[str]:
    """Every capture file ``patterns`` name, sorted, without repeats."""
    found: dict[str, None] = {}
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not any(os.path.exists(m) for m in matches):
            what = "matches nothing" if glob.has_magic(pattern) else "does not exist"
            raise SparkOptionError(f"{SOURCE}: path {pattern!r} {what}")
        for match in matches:
            if os.path.isdir(match):
                for name in sorted(os.listdir(match)):
                    full = os.path.join(match, name)
                    if _visible(name) and os.path.isfile(full):
                        found[full] = None
            elif os.path.isfile(match):
                found[match] = None
    if not found:
        raise SparkOptionError(f"{SOURCE}: path {', '.join(patterns)!r} holds no files")
    return list(found)


@dataclass(frozen=True)
class Plan:
    """What ``schema()`` checked, for ``reader()`` (plain data: it goes to executors)."""

    protocol: str
    files: tuple[tuple[str, int, str, int], ...]
    """(path, size at planning, WSCAP or PCAP, the server port of a pcap file)"""
    max_partition_bytes: int
    min_partitions: int
    mode: str
    arrow: bool
    midstream: bool = False
    native: bool = True
    frame_types: tuple[str, ...] = ()
    """the ``frameTypes`` (upper case); empty: every frame type"""
    lean: bool = False


def frame_types_of(protocol: CaptureProtocol, given: str | None) -> tuple[str, ...]:
    """The ``frameTypes`` option's frame types, checked against the protocol's."""
    if given is None:
        return ()
    known = [column.upper() for column in spark_module(protocol).FRAME_COLUMNS]
    wanted = tuple(dict.fromkeys(t.strip().upper() for t in given.split(",") if t.strip()))
    unknown = [t for t in wanted if t not in known]
    if unknown or not wanted:
        raise SparkOptionError(
            f"{SOURCE}: option frameTypes={given!r}: {', '.join(unknown) or 'none given'} "
            f"{'is' if len(unknown) == 1 else 'are'} not a frame type of {protocol.name}; "
            f"accepted: {', '.join(known)}"
        )
    return wanted


def frame_log_schema(protocol_name: str, lean: bool, frame_types: Sequence[str] = ()) -> StructType:
    """The frame log the source reads: the protocol's ``FRAME_LOG_SCHEMA``, or (``lean``)
    the columns a row can have a value in (module docstring: ``schema``)."""
    spark = spark_module(get_protocol(protocol_name))
    full: StructType = spark.FRAME_LOG_SCHEMA
    if not lean:
        return full
    common = len(spark.COMMON_COLUMNS)
    wanted = {t.lower() for t in frame_types} or set(spark.FRAME_COLUMNS)
    kept = [f for f in full.fields[:common] if f.name not in spark.NULL_COLUMNS]
    return StructType(kept + [f for f in full.fields[common:] if f.name in wanted])


def make_plan(given: Any) -> Plan:
    """Check the options and the files' headers (``SparkOptionError`` naming what is wrong)."""
    options = Options(SOURCE, dict(given), OPTIONS)
    wanted = options.optional("protocol")
    protocol: CaptureProtocol | None = None
    if wanted is not None:
        try:
            protocol = get_protocol(wanted)
        except ValueError:
            raise SparkOptionError(
                f"{SOURCE}: option protocol={wanted!r} is not a known protocol; "
                f"accepted: {', '.join(known_protocols())}"
            ) from None
    max_bytes = options.count("maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES, minimum=1)
    min_partitions = options.count("minPartitions", os.cpu_count() or 1, minimum=1)
    mode = options.choice("mode", MODES, "FAILFAST")
    arrow = options.flag("arrow", True)
    server_port = options.integer("serverPort", None, minimum=0)
    if server_port is not None and server_port > 65535:
        raise SparkOptionError(f"{SOURCE}: option serverPort={server_port} is not 0..65535")
    midstream = options.flag("midstream", False)
    use_native = options.flag("native", True)
    schema_choice = options.optional("schema")
    if schema_choice is not None and schema_choice.lower() not in SCHEMAS:
        raise SparkOptionError(
            f"{SOURCE}: option schema={schema_choice!r} is not one of {', '.join(SCHEMAS)}"
        )
    files = resolve_files(_paths(options))
    planned: list[tuple[str, int, str, int]] = []
    for path in files:
        if is_pcap(path):
            described = described_capture(path)  # PcapError if it is no pcap file after all
            if described is not None and protocol is not None:
                if get_protocol(described[0]) is not protocol:
                    origin = "option protocol=" if wanted is not None else "the first file holds "
                    raise SparkOptionError(
                        f"{SOURCE}: {path} holds {described[0]}, but {origin}{protocol.name!r}; "
                        "read captures of different protocols separately"
                    )
            try:
                pcap = PcapReader(path, protocol, server_port=server_port)  # not iterated
            except ValueError as error:
                raise SparkOptionError(
                    f"{SOURCE}: {error}; give the options protocol (and serverPort)"
                ) from None
            protocol = pcap.protocol
            planned.append((path, os.path.getsize(path), PCAP, pcap.server_port))
            continue
        header = read_header(path)  # CaptureError (file and offset 0) if it is no capture
        try:
            held = get_protocol(header.protocol)
        except ValueError:
            raise SparkOptionError(
                f"{SOURCE}: {path} holds protocol {header.protocol!r}, which this reader does "
                f"not know; known: {', '.join(known_protocols())}"
            ) from None
        if protocol is None:
            protocol = held
        elif held is not protocol:
            origin = "option protocol=" if wanted is not None else "the first file holds "
            raise SparkOptionError(
                f"{SOURCE}: {path} holds {held.name}, but {origin}{protocol.name!r}; read "
                f"captures of different protocols separately"
            )
        planned.append((path, os.path.getsize(path), WSCAP, 0))
    assert protocol is not None
    frame_types = frame_types_of(protocol, options.optional("frameTypes"))
    lean = (schema_choice or ("lean" if frame_types else "full")).lower() == "lean"
    return Plan(protocol.name, tuple(planned), max_bytes, min_partitions, mode, arrow,
                midstream, use_native, frame_types, lean)  # fmt: skip


def piece_bytes(sizes: Sequence[int], max_bytes: int, min_partitions: int) -> int:
    """How many bytes of a file one partition reads: the captures' bytes cut into a
    multiple of ``min_partitions`` equal pieces of at most ``max_bytes``."""
    total = sum(sizes)
    rounds = max(1, -(-total // (max_bytes * min_partitions)))
    return max(1, -(-total // (rounds * min_partitions)))


# --- the data source -----------------------------------------------------------------


class WirestreamCaptureSource(DataSource):
    """``spark.read.format("wirestream")`` (module docstring)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE

    def schema(self) -> StructType:
        # Spark calls this at load(): checking everything here makes a bad option, a
        # missing path or a protocol mismatch fail before the query starts.
        plan = make_plan(self.options)
        return frame_log_schema(plan.protocol, plan.lean, plan.frame_types)

    def reader(self, schema: StructType) -> CaptureReader:
        plan = make_plan(self.options)
        expected = frame_log_schema(plan.protocol, plan.lean, plan.frame_types)
        if [f.name for f in schema.fields] != [f.name for f in expected.fields]:
            raise SparkOptionError(
                f"{SOURCE}: the schema is the protocol's frame log ({plan.protocol}); "
                "do not give one with .schema(...): choose its columns with the options "
                "schema and frameTypes"
            )
        return CaptureReader(plan, schema)


@dataclass
class CapturePartition(InputPartition):
    """The records of ``path`` that start in ``[start, end)``; a pcap file (``kind``
    PCAP) is read whole, its TCP connections to ``server_port``."""

    path: str
    start: int
    end: int
    kind: str = WSCAP
    server_port: int = 0


class CaptureReader(DataSourceReader):
    """Plans byte-range partitions and decodes them (on the executors)."""

    def __init__(self, plan: Plan, schema: StructType) -> None:
        self.plan = plan
        self.schema = schema

    def partitions(self) -> list[CapturePartition]:
        protocol = get_protocol(self.plan.protocol)
        piece = piece_bytes(
            [size for _, size, kind, _ in self.plan.files if kind == WSCAP],
            self.plan.max_partition_bytes,
            self.plan.min_partitions,
        )
        pieces: list[CapturePartition] = []
        for path, size, kind, port in self.plan.files:
            if kind == PCAP:
                pieces.append(CapturePartition(path, 0, size, PCAP, port))
                continue
            # One partition per file for contextual protocols (module docstring).
            for start, end in split_ranges(size, max(size, 1) if protocol.contextual else piece):
                pieces.append(CapturePartition(path, start, end))
        return pieces

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, CapturePartition)
        freeze_survivors()  # runtime/spark/gc_pause.py
        rows = FrameLogRows(self.plan.protocol, self.plan.mode, self.plan.frame_types)
        if partition.kind == PCAP:
            reader = PcapReader(partition.path, self.plan.protocol,
                                server_port=partition.server_port,
                                midstream=self.plan.midstream)  # fmt: skip
            if (self.plan.arrow and self.plan.native and native.available(self.plan.protocol)
                    and not rows.replays_pcap()):  # fmt: skip
                return rows.native_batches(partition.path, schema=self.schema,
                                           records=pcap_raw_records(reader))  # fmt: skip
            if self.plan.arrow:
                return rows.batches(pcap_chunks(reader, BATCH_ROWS), self.schema, partition.path)
            return rows.tuples(pcap_raw_records(reader), partition.path, self.schema)
        if self.plan.arrow and self.plan.native and native.available(self.plan.protocol):
            return rows.native_batches(partition.path, partition.start, partition.end, self.schema)
        if self.plan.arrow:
            chunks = scan_chunks(partition.path, partition.start, partition.end, BATCH_ROWS)
            return rows.batches(chunks, self.schema, partition.path)
        records = scan_records(partition.path, partition.start, partition.end)
        return rows.tuples(records, partition.path, self.schema)


# --- pcap files (executor side) ------------------------------------------------------


def pcap_chunks(reader: PcapReader, records_per_chunk: int) -> Iterator[RecordChunk]:
    """A pcap file's records in ``scan_chunks``' chunks (headers with no sync marker or
    CRCs: ``FrameLogRows`` reads only the length, time, connection and flags)."""
    headers: list[RecordHeader] = []
    frames: list[bytes] = []
    starts: list[int] = []
    for offset, timestamp, connection, flags, frame in pcap_raw_records(reader):
        headers.append((b"", len(frame), timestamp, connection, flags, 0, 0))
        frames.append(frame)
        starts.append(offset)
        if len(frames) == records_per_chunk:
            yield RecordChunk(starts[0], headers, frames, starts)
            headers, frames, starts = [], [], []
    if frames:
        yield RecordChunk(starts[0], headers, frames, starts)


# --- decoding (executor side) --------------------------------------------------------


class FrameLogRows:
    """Records (``scan_records`` tuples) -> frame-log rows of one protocol, as tuples or
    Arrow batches.  Both loops are written out flat: they run once per frame, millions of
    times, and every attribute lookup and call shows in the benchmark."""

    def __init__(
        self, protocol_name: str, mode: str = "FAILFAST", frame_types: Sequence[str] = ()
    ) -> None:
        protocol = get_protocol(protocol_name)
        spark = spark_module(protocol)
        self.protocol = protocol
        self.mode = mode
        self.frame_row: Callable[[Any], Any] = spark.frame_row
        self.names: tuple[str, str] = (spark.PROTOCOL, spark.VERSION)
        self.frame_columns = len(spark.FRAME_COLUMNS)
        self.full: StructType = spark.FRAME_LOG_SCHEMA
        # frameTypes: the frame columns whose rows are kept (-1: MALFORMED rows, kept).
        self.kept: frozenset[int] | None = None
        self.kept_types: list[str] = []
        if frame_types:
            columns = [c.upper() for c in spark.FRAME_COLUMNS]
            self.kept = frozenset([-1, *(columns.index(t.upper()) for t in frame_types)])
            self.kept_types = [MALFORMED, *(t.upper() for t in frame_types)]
        self.decode = self._decoder()
        # A stateless binary codec's decode, called directly: no wrapper per frame.
        self.plain: Callable[[bytes], Any] | None = None
        if not (protocol.contextual or protocol.needs_sender or protocol.encoding != "binary"):
            self.plain = protocol.codec().decode

    def _decoder(self) -> Callable[[bytes, int, int], Any]:
        """(frame bytes, connection id, record flags) -> the decoded frame."""
        protocol = self.protocol
        if not (protocol.contextual or protocol.needs_sender or protocol.encoding != "binary"):
            plain: Callable[[bytes], Any] = protocol.codec().decode
            return lambda frame, connection, flags: plain(frame)
        records = protocol.record_decoder()

        def decode(frame: bytes, connection: int, flags: int) -> Any:
            direction: Direction = "out" if flags & FLAG_OUT else "in"
            return records.decode(frame, connection, direction, _sender(flags))

        return decode

    def malformed(self, error: ProtocolError, path: str, record: RawRecord) -> None:
        """A frame that did not decode: FAILFAST raises, the other modes go on."""
        if self.mode == "FAILFAST":
            offset, _, connection, flags, frame = record
            direction = "out" if flags & FLAG_OUT else "in"
            raise DecodeError(
                f"{SOURCE}: {path}: offset {offset}: the {direction} frame of connection "
                f"{connection:#x} ({len(frame)} bytes, first {frame[:16].hex()}) is not "
                f"{self.protocol.name}: {error}"
            ) from error

    def picks(self, schema: Any) -> list[int] | None:
        """Where ``schema``'s columns (a projection of the full frame log's: ``schema``
        lean) are in the full one; None when it is the full one."""
        names = self.full.names
        wanted = list(schema.names)
        return None if wanted == names else [names.index(name) for name in wanted]

    def tuples(
        self, records: Iterator[RawRecord], path: str, schema: StructType | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """The row path: one tuple per record, of ``schema``'s columns (default: the full
        frame log)."""
        picks = None if schema is None else self.picks(schema)
        if picks is None and self.kept is None:
            return self.full_tuples(records, path)
        kept = set(self.kept_types)
        return (
            row if picks is None else tuple(row[k] for k in picks)
            for row in self.full_tuples(records, path)
            if not kept or row[5] in kept
        )

    def full_tuples(self, records: Iterator[RawRecord], path: str) -> Iterator[tuple[Any, ...]]:
        """``tuples`` of the full frame log, every frame type."""
        protocol, version = self.names
        empty = (None,) * self.frame_columns
        decode, frame_row = self.decode, self.frame_row
        drop = self.mode == "DROPMALFORMED"
        for record in records:
            _, timestamp, connection, flags, frame = record
            try:
                decoded = decode(frame, connection, flags)
            except ProtocolError as error:
                self.malformed(error, path, record)
                if drop:
                    continue
                decoded = None
            when = _EPOCH + datetime.timedelta(microseconds=timestamp // 1000)
            direction = "out" if flags & FLAG_OUT else "in"
            common = (when, _signed(connection), direction, protocol, version)
            if decoded is None:
                yield (*common, MALFORMED, None, None, len(frame), *empty)
                continue
            frame_type, stream_id, frame_flags, column, values = frame_row(decoded)
            frames = list(empty)
            frames[column] = values
            yield (*common, frame_type, stream_id, frame_flags, len(frame), *frames)

    def decode_chunk(self, chunk: RecordChunk, path: str) -> tuple[list[Any], bool]:
        """The decoded frames of ``chunk``, None where a frame did not decode
        (``malformed`` decides whether that is an error); and whether all did."""
        frames = chunk.frames
        if self.plain is not None:
            try:
                return list(map(self.plain, frames)), True
            except ProtocolError:
                pass  # a stateless codec: decoding again, frame by frame, finds which
        decode = self.decode
        decoded: list[Any] = []
        add = decoded.append
        whole = True
        offsets: list[int] = []  # computed at the first malformed frame
        for k, ((_, _, _, connection, flags, _, _), frame) in enumerate(zip(chunk.headers, frames)):
            try:
                add(decode(frame, connection, flags))
            except ProtocolError as error:
                offsets = offsets or chunk.offsets()
                record = (offsets[k], chunk.headers[k][2], connection, flags, frame)
                self.malformed(error, path, record)
                add(None)
                whole = False
        return decoded, whole

    def native_batches(
        self,
        path: str,
        start: int = 0,
        end: int | None = None,
        schema: StructType | None = None,
        records: Iterator[RawRecord] | None = None,
    ) -> Iterator[Any]:
        """The fast path of a capture file's records ``[start, end)`` through the Rust
        extension (``wirestream.runtime.capture.native``; ``native.available`` must say
        so): the batches ``batches`` makes of them, and the errors it raises.  Given
        ``records`` (a pcap file's, ``pcap_raw_records``), those are decoded instead."""
        from pyspark.sql.pandas.types import to_arrow_schema

        # The extension builds the full frame log (its layout is checked against it); a
        # lean schema is its projection, zero-copy (``lean``).
        if records is not None and self.replays_pcap():
            raise ValueError(
                f"{self.protocol.name} in FAILFAST: a pcap file's records are read by the "
                "pure-Python path (a refused frame's error needs the frames before it)"
            )
        arrow_schema = to_arrow_schema(self.full, timezone="UTC")
        log = native.NativeFrameLog(self.protocol.name, self.mode, arrow_schema)

        def failed(
            offset: int, timestamp: int, connection: int, flags: int, frame: bytes, name: str
        ) -> None:
            # FAILFAST: the Python codec decodes the frame again, so that the error raised
            # is the pure path's own, message and all. A contextual codec first decodes the
            # records before it (from the range's start, as the pure path did), so that its
            # contexts are the ones the extension decoded the frame with.
            decode = self.decode
            if self.protocol.contextual:
                decode = self._decoder()
                for before in scan_records(path, start, offset):
                    if before[0] >= offset:
                        break
                    try:
                        decode(before[4], before[2], before[3])
                    except ProtocolError:
                        pass  # as the extension: a frame that does not decode sets nothing
            try:
                decode(frame, connection, flags)
            except ProtocolError as error:
                if type(error).__name__ == name:
                    self.malformed(error, path, (offset, timestamp, connection, flags, frame))
                raise DecodeError(
                    f"{SOURCE}: {path}: offset {offset}: the native decoder refused the frame "
                    f"as {name}, the Python one as {type(error).__name__}"
                ) from error

        if records is not None:
            batches = native.record_batches(records, log, BATCH_ROWS, failed)
        else:
            batches = native.native_batches(path, start, end, log, BATCH_ROWS, failed)
        picks = None if schema is None else self.picks(schema)
        if picks is None and self.kept is None:
            return batches
        return self.lean(batches, picks)

    def replays_pcap(self) -> bool:
        """Whether a pcap file's records must take the pure-Python path: in FAILFAST, a
        contextual protocol's refused frame is decoded again in Python after the frames
        before it (``native_batches``), which a pcap file's stream cannot give again."""
        return self.mode == "FAILFAST" and self.protocol.contextual

    def lean(self, batches: Iterator[Any], picks: list[int] | None) -> Iterator[Any]:
        """Full frame-log batches as ``frameTypes`` and a lean schema want them: the
        columns ``picks`` (a zero-copy selection), then the rows of the kept frame types
        (one filter kernel a batch, over the kept columns only)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = pa.array(self.kept_types, pa.string()) if self.kept is not None else None
        for batch in batches:
            if picks is not None:
                batch = batch.select(picks)
            if wanted is not None:
                keep = pc.is_in(batch.column("frame_type"), value_set=wanted)
                kept = keep.true_count
                if not kept:
                    continue
                if kept < batch.num_rows:  # a copy of the kept columns: only when needed
                    batch = batch.filter(keep)
            yield batch

    def batches(
        self, chunks: Iterator[RecordChunk], schema: StructType, path: str
    ) -> Iterator[Any]:
        """The fast path: one Arrow record batch per chunk of records, built column-wise.
        Per frame, Python decodes it and makes its ``frame_row``; everything else is a
        handful of Arrow conversions and kernels per batch: the common columns come from
        the record headers (transposed by ``zip``), each frame type's struct column from
        the rows' values with the other frame types' rows masked (null, not converted)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.layout = (to_arrow_schema(self.full, timezone="UTC").types, self.picks(schema))
        constants = (
            pa.array(["in", "out"], pa.string()),
            pa.scalar(1000, pa.uint64()),
            pa.scalar(FLAG_OUT, pa.uint8()),
            *(pa.scalar(name, pa.string()) for name in self.names),
        )
        while True:
            with cyclic_gc_paused():  # a chunk's frames and tuples: runtime/spark/gc_pause.py
                chunk = next(chunks, None)
                if chunk is None:
                    return
                batch = self.batch(chunk, path, arrow_schema, constants)
            if batch is not None:
                yield batch

    def batch(self, chunk: RecordChunk, path: str, arrow_schema: Any, constants: Any) -> Any:
        """The record batch of one chunk (None: every frame was malformed and dropped)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        types, picks = self.layout  # the full frame log's; which of its columns
        common, frame_types = types[:9], types[9:]
        directions, thousand, out_bit, protocol, version = constants
        decoded, whole = self.decode_chunk(chunk, path)
        headers = chunk.headers
        frame_row = self.frame_row
        if not whole:  # PERMISSIVE or DROPMALFORMED: see malformed
            if self.mode == "DROPMALFORMED":
                headers = [h for h, d in zip(headers, decoded) if d is not None]
                decoded = [d for d in decoded if d is not None]
                if not decoded:
                    return None
            rows = [_MALFORMED_ROW if d is None else frame_row(d) for d in decoded]
        else:
            rows = list(map(frame_row, decoded))
        if self.kept is not None:  # frameTypes: the other frame types' rows left out
            kept = self.kept
            pairs = [(h, r) for h, r in zip(headers, rows) if r[3] in kept]
            if not pairs:
                return None
            headers, rows = [p[0] for p in pairs], [p[1] for p in pairs]
        n = len(rows)
        _, lengths, timestamps, connections, flags, _, _ = zip(*headers)
        kinds, stream_ids, frame_flags, columns, values = zip(*rows)
        micros = pc.divide(pa.array(timestamps, pa.uint64()), thousand)
        arrays = [
            micros.cast(pa.int64()).view(common[0]),
            pa.array(connections, pa.uint64()).view(pa.int64()),
            directions.take(pc.bit_wise_and(pa.array(flags, pa.uint8()), out_bit)),
            pa.repeat(protocol, n),
            pa.repeat(version, n),
            pa.array(kinds, type=common[5]),
            pa.array(stream_ids, type=common[6]),
            pa.array(frame_flags, type=common[7]),
            pa.array(lengths, type=common[8]),
        ]
        present = set(columns)
        column_of = pa.array(columns, pa.int32()) if len(present) > 1 else None
        wanted = range(len(frame_types)) if picks is None else [k - 9 for k in picks if k >= 9]
        if picks is not None:
            arrays = [arrays[k] for k in picks if k < 9]
        for column in wanted:
            kind_type = frame_types[column]
            if column not in present:
                arrays.append(pa.nulls(n, type=kind_type))
            elif column_of is None:
                arrays.append(pa.array(values, type=kind_type))
            else:
                # The other frame types' rows are masked: null, and never converted.
                others = pc.not_equal(column_of, column)
                arrays.append(pa.array(values, type=kind_type, mask=others))
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    layout: tuple[Any, list[int] | None] = ((), None)
    """``batches``' full frame-log Arrow types and ``picks`` of its schema, for ``batch``."""


_MALFORMED_ROW: Final = (MALFORMED, None, None, -1, None)
"""``frame_row`` of a frame that did not decode (PERMISSIVE): in no frame column."""


def _sender(flags: int) -> Side:
    """Who sent a recorded frame (``wirestream.runtime.capture.format``: direction and side)."""
    server = bool(flags & FLAG_SERVER)
    if flags & FLAG_OUT:
        return "server" if server else "client"
    return "client" if server else "server"


def _signed(connection_id: int) -> int:
    """A u64 connection id in a signed 64-bit column (two's complement above 2**63 - 1)."""
    return connection_id - _U64 if connection_id > _I64_MAX else connection_id
