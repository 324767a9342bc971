"""wirestream.runtime.spark.capture_source: capture files read as a frame-log DataFrame.

A real RSocket exchange over TCP, captured on both sides through a recording proxy, read
back by Spark and compared with what the generated codec decodes from the bytes that
crossed the wire; random frames of every protocol version through the Arrow and the row
paths; splitting into partitions; the errors a user sees at load and in a task.
"""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wirestream.generated.rsocket.v1_0 as rsocket_codec
from wirestream.generated.rsocket.v1_0.spark import FRAME_COLUMNS, FRAME_LOG_SCHEMA, frame_row
from wirestream.runtime.capture import (
    CaptureWriter,
    capture_files,
    get_protocol,
    iter_records,
    native,
)
from wirestream.runtime.rsocket import connect, serve
from wirestream.apps.demo_responder import EchoResponder
from wirestream.runtime.spark.capture_source import MALFORMED, spark_module
from tests.support.aio_support import run
from tests.capture.test_capture import RecordingProxy, port_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

FRAME_LOG_NAMES = [field.name for field in FRAME_LOG_SCHEMA.fields]


def read(spark: SparkSession, path: Path | str, **options: str) -> DataFrame:
    reader = spark.read.format("wirestream")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


def plain(value: Any) -> Any:
    """Spark's Rows and bytearrays as the tuples and bytes ``frame_row`` gives."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, (list, tuple)):  # a Row is a tuple
        kind = list if isinstance(value, list) else tuple
        return kind(plain(item) for item in value)
    return value


def frame_part(row: Any, columns: Iterable[str] = FRAME_COLUMNS) -> tuple[Any, ...]:
    """(frame_type, stream_id, flags, length, column name, struct value) of a row."""
    names = list(columns)
    set_columns = [name for name in names if row[name] is not None]
    assert len(set_columns) <= 1, set_columns
    column = set_columns[0] if set_columns else None
    value = plain(row[column]) if column else None
    return (row.frame_type, row.stream_id, row.flags, row.length, column, value)


def expected_part(frame: Any, length: int, columns: Iterable[str] = FRAME_COLUMNS,
                  row_of: Any = frame_row) -> tuple[Any, ...]:  # fmt: skip
    frame_type, stream_id, flags, column, values = row_of(frame)
    return (frame_type, stream_id, flags, length, list(columns)[column], plain(values))


# --- a real exchange -------------------------------------------------------------------


@pytest.fixture(scope="module")
def rsocket_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    """Both sides of an RSocket exchange over TCP captured in one file, and the bytes the
    proxy saw going up (client -> server) and down."""
    folder = tmp_path_factory.mktemp("rsocket-capture")

    async def exchange() -> tuple[bytes, bytes]:
        with CaptureWriter(folder / "cap.wscap", "rsocket/1.0") as capture:
            async with await serve("tcp://127.0.0.1:0", EchoResponder(),
                                   capture=capture) as server:  # fmt: skip
                async with RecordingProxy(port_of(server.url)) as proxy:
                    async with connect(proxy.url, capture=capture) as rs:
                        for n in range(20):
                            await rs.request_response(b"ping %d" % n, b"meta")
                        async for _ in rs.request_stream(b"100", limit_rate=7):
                            pass
                        await rs.fire_and_forget(b"bye")
                    await proxy.finished()
        return bytes(proxy.up), bytes(proxy.down)

    up, down = run(exchange())
    [path] = capture_files(folder / "cap.wscap")
    return path, up, down


def test_capture_dataframe_equals_the_frames_sent(
    spark: SparkSession, rsocket_capture: tuple[Path, bytes, bytes]
) -> None:
    """Per connection and direction, the DataFrame's rows are the frames the generated
    codec decodes from the bytes that crossed the wire, in order, with the capture's
    time and connection id."""
    path, up, down = rsocket_capture
    rows = read(spark, path, protocol="rsocket/1.0").collect()
    records = list(iter_records(path))
    assert len(rows) == len(records)
    assert [r.connection_id for r in rows] == [r.connection_id for r in records]
    assert [r.direction for r in rows] == [r.direction for r in records]
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    # PySpark gives naive local datetimes; astimezone reads them as local time
    micros = [(r.capture_time.astimezone(datetime.timezone.utc) - epoch)
              // datetime.timedelta(microseconds=1) for r in rows]  # fmt: skip
    assert micros == [r.timestamp_ns // 1000 for r in records]
    assert {(r.protocol, r.version) for r in rows} == {("rsocket", "1.0")}
    sides = {r.connection_id: r.side for r in records}
    assert sorted(sides.values()) == ["client", "server"]
    wire = {"client": rsocket_codec.StreamDecoder().feed(up),
            "server": rsocket_codec.StreamDecoder().feed(down)}  # fmt: skip
    sizes = {"client": _sizes(up), "server": _sizes(down)}
    for connection, side in sides.items():
        for direction in ("out", "in"):
            sender = side if direction == "out" else ("server" if side == "client" else "client")
            got = [frame_part(r) for r in rows
                   if r.connection_id == connection and r.direction == direction]  # fmt: skip
            want = [expected_part(f, n) for f, n in zip(wire[sender], sizes[sender])]
            assert got == want and got, (side, direction)
    types = {row.frame_type for row in rows}
    assert {"SETUP", "REQUEST_RESPONSE", "REQUEST_STREAM", "REQUEST_N", "PAYLOAD"} <= types


def _sizes(stream: bytes) -> list[int]:
    """The frame lengths in a 24-bit length-prefixed stream."""
    sizes, pos = [], 0
    while pos < len(stream):
        size = int.from_bytes(stream[pos : pos + 3], "big")
        sizes.append(size)
        pos += 3 + size
    return sizes


def test_a_capture_split_into_partitions_gives_the_same_rows(
    spark: SparkSession, rsocket_capture: tuple[Path, bytes, bytes]
) -> None:
    path = rsocket_capture[0]
    whole = read(spark, path, maxPartitionBytes=str(1 << 30), minPartitions="1")
    split = read(spark, path, maxPartitionBytes="2500")
    per_core = read(spark, path, minPartitions="3")  # small: one equal piece per core
    assert whole.rdd.getNumPartitions() == 1
    assert split.rdd.getNumPartitions() > 5
    assert per_core.rdd.getNumPartitions() == 3
    assert split.collect() == whole.collect() == per_core.collect()


def test_arrow_and_row_paths_agree_on_a_real_capture(
    spark: SparkSession, rsocket_capture: tuple[Path, bytes, bytes]
) -> None:
    path = rsocket_capture[0]
    arrow = read(spark, path, maxPartitionBytes="2000").collect()
    rows = read(spark, path, maxPartitionBytes="2000", arrow="false").collect()
    assert arrow == rows and arrow


@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
def test_the_native_and_pure_paths_agree_through_spark(
    spark: SparkSession, rsocket_capture: tuple[Path, bytes, bytes], tmp_path: Path, mode: str
) -> None:
    """RSocket 1.0 captures are read by wirestream.runtime._native (built by `make native` before the
    tests); native=false is the pure-Python path: the same rows, split or not, and the same
    malformed rows (tests/native: every corpus input, and the errors)."""
    assert native.available("rsocket/1.0"), "wirestream.runtime._native is not built: make native"
    path = rsocket_capture[0]
    fast = read(spark, path, maxPartitionBytes="2000", mode=mode).collect()
    pure = read(spark, path, maxPartitionBytes="2000", mode=mode, native="false").collect()
    assert fast == pure and fast
    small_capture(tmp_path, [request_n(1), b"\x00\x00\x00\x01\xff", request_n(2)])
    if mode == "PERMISSIVE":
        fast = read(spark, tmp_path, mode=mode).collect()
        assert [r.frame_type for r in fast] == ["REQUEST_N", MALFORMED, "REQUEST_N"]
        assert fast == read(spark, tmp_path, mode=mode, native="false").collect()


# --- every protocol version, random frames, both paths --------------------------------


def sent_by(codec: Any, frame: Any, ctx: Any) -> str | None:
    """Which side's frame this is for codecs that need to know (RabbitMQ), else None."""
    for sender in ("client", "server"):
        try:
            if codec.decode(codec.encode(frame, ctx), ctx, sender) == frame:
                return sender
        except Exception:
            continue
    return None


@pytest.mark.parametrize("name", [
    "rsocket/1.0", "rsocket/0.2", "rsio/0", "rsio/0+msgpack", "bpmux/rel",
    "rabbitmq_stream/1", "rabbitmq_stream/draft",
])  # fmt: skip
@given(data=st.data())
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.data_too_large])  # fmt: skip
def test_arrow_and_row_paths_both_give_frame_row_of_every_frame(
    spark: SparkSession, name: str, data: st.DataObject
) -> None:
    """Random frames of each protocol version: both paths give, per record, exactly
    ``frame_row`` of what the codec decodes from the recorded bytes (nested structs,
    arrays, decimals, enums, nulls)."""
    protocol = get_protocol(name)
    codec = protocol.codec()
    strategies = __import__(f"{protocol.codec_module}.strategies", fromlist=["frames"])
    drawn = data.draw(st.lists(strategies.frames(), min_size=1, max_size=40))
    if protocol.contextual:  # no fixed element sizes: those need their Subscribed first
        drawn = [(f, c) for f, c in drawn if c == codec.Context() and not (
            isinstance(f, (codec.Subscribed, codec.OnNextPacked)))]  # fmt: skip
    spark_of = spark_module(protocol)
    columns = list(spark_of.FRAME_COLUMNS)
    with tempfile.TemporaryDirectory() as folder:
        expected = []
        with CaptureWriter(Path(folder) / "c.wscap", name) as capture:
            for n, (frame, ctx) in enumerate(drawn):
                sender = sent_by(codec, frame, ctx) if protocol.needs_sender else "client"
                if sender is None:
                    continue
                encoded = (codec.encode_msgpack(frame) if protocol.encoding == "msgpack"
                           else codec.encode(frame, ctx))  # fmt: skip
                capture.record(n, "out", encoded, side=sender)  # type: ignore[arg-type]
                decoded = protocol.record_decoder().decode(encoded, n, "out", sender)
                expected.append(expected_part(decoded, len(encoded), columns,
                                              spark_of.frame_row))  # fmt: skip
        for arrow in ("true", "false"):
            rows = read(spark, folder, arrow=arrow, maxPartitionBytes="500").collect()
            assert [frame_part(r, columns) for r in rows] == expected, arrow
            assert [r.connection_id for r in rows] == sorted(r.connection_id for r in rows)


# --- options, paths and errors -----------------------------------------------------------


def small_capture(folder: Path, frames: list[bytes], **options: Any) -> list[Path]:
    with CaptureWriter(folder / "cap.wscap", "rsocket/1.0", **options) as capture:
        for n, frame in enumerate(frames):
            capture.record(1, "out" if n % 2 else "in", frame)
        return capture.files


def request_n(n: int) -> bytes:
    return rsocket_codec.encode(rsocket_codec.RequestN(stream_id=1, request_n=n))


def test_a_folder_or_a_glob_reads_every_rotated_file(spark: SparkSession, tmp_path: Path) -> None:
    files = small_capture(tmp_path, [request_n(n + 1) for n in range(40)], max_file_bytes=200)
    assert len(files) > 3
    by_folder = read(spark, tmp_path).collect()
    by_glob = read(spark, tmp_path / "cap.*.wscap").collect()
    assert [r.request_n.request_n for r in by_folder] == list(range(1, 41))
    assert by_glob == by_folder


def test_unknown_protocol_is_an_error_at_load_listing_the_known_ones(
    spark: SparkSession, tmp_path: Path
) -> None:
    small_capture(tmp_path, [request_n(1)])
    with pytest.raises(Exception, match=r"option protocol='smtp/1' is not a known protocol; "
                       r"accepted: ") as caught:  # fmt: skip
        read(spark, tmp_path, protocol="smtp/1")
    accepted = str(caught.value).partition("accepted: ")[2].split("\n")[0].split(", ")
    assert sorted(accepted) == sorted([
        "rsocket/1.0", "rsocket/0.2", "rsio/0", "rsio/0+msgpack", "bpmux/rel",
        "rabbitmq_stream/1", "rabbitmq_stream/draft", "mqtt/5", "postgresql/3", "mysql/10",
    ])  # fmt: skip


def test_a_missing_path_is_an_error_at_load(spark: SparkSession, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(Exception, match=rf"path '{missing}' does not exist"):
        read(spark, missing)
    with pytest.raises(Exception, match=r"matches nothing"):
        read(spark, tmp_path / "*.wscap")


def test_a_protocol_other_than_the_files_is_an_error_at_load(
    spark: SparkSession, tmp_path: Path
) -> None:
    [path] = small_capture(tmp_path, [request_n(1)])
    with pytest.raises(Exception, match=rf"{path} holds rsocket/1.0, but option protocol="):
        read(spark, tmp_path, protocol="bpmux/rel")


def test_an_unknown_option_and_a_bad_mode_are_errors_at_load(
    spark: SparkSession, tmp_path: Path
) -> None:
    small_capture(tmp_path, [request_n(1)])
    with pytest.raises(Exception, match="unknown option 'maxpartitionbyte'"):
        read(spark, tmp_path, maxPartitionByte="10")
    with pytest.raises(Exception, match="mode='LENIENT' is not one of FAILFAST"):
        read(spark, tmp_path, mode="LENIENT")


def test_a_corrupt_file_fails_the_query_naming_the_file_and_offset(
    spark: SparkSession, tmp_path: Path
) -> None:
    [path] = small_capture(tmp_path, [request_n(n + 1) for n in range(30)])
    third = [r.offset for r in iter_records(path)][2]
    data = bytearray(path.read_bytes())
    data[third + 40] ^= 0x01  # inside the third record's frame
    path.write_bytes(bytes(data))
    for mode in ("FAILFAST", "PERMISSIVE"):
        with pytest.raises(Exception, match=rf"{path}: offset {third}: corrupt record: frame CRC"):
            read(spark, path, mode=mode).collect()


def test_an_undecodable_frame_in_failfast_names_file_offset_and_frame(
    spark: SparkSession, tmp_path: Path
) -> None:
    bad = b"\x00\x00\x00\x01\xff"  # stream 1, a truncated header
    [path] = small_capture(tmp_path, [request_n(1), bad, request_n(2)])
    offset = [r.offset for r in iter_records(path)][1]
    with pytest.raises(Exception, match=rf"{path}: offset {offset}: the out frame of connection "
                       rf"0x1 \(5 bytes, first 00000001ff\) is not rsocket/1.0"):  # fmt: skip
        read(spark, path).collect()


@pytest.mark.parametrize("arrow", ["true", "false"])
def test_permissive_keeps_a_malformed_row_and_dropmalformed_drops_it(
    spark: SparkSession, tmp_path: Path, arrow: str
) -> None:
    bad = b"\x00\x00\x00\x01\xff"
    small_capture(tmp_path, [request_n(1), bad, request_n(2)])
    kept = read(spark, tmp_path, mode="PERMISSIVE", arrow=arrow).collect()
    assert [r.frame_type for r in kept] == ["REQUEST_N", MALFORMED, "REQUEST_N"]
    malformed = kept[1]
    assert (malformed.stream_id, malformed.flags, malformed.length) == (None, None, 5)
    assert all(malformed[name] is None for name in FRAME_COLUMNS)
    assert malformed.connection_id == 1 and malformed.direction == "out"
    dropped = read(spark, tmp_path, mode="DROPMALFORMED", arrow=arrow).collect()
    assert [r.request_n.request_n for r in dropped] == [1, 2]


def test_rsio_captures_are_read_one_partition_per_file(spark: SparkSession, tmp_path: Path) -> None:
    """A fixed-size element decodes only with the Subscribed that announced its size, so
    a file is never split: the elements after it decode even with tiny partitions."""
    import wirestream.generated.rsio.v0 as rsio_codec

    frames: list[Any] = [
        rsio_codec.Subscribed(subscriber=3, element_size=2),
        *[rsio_codec.OnNext(subscriber=3, element=bytes([n, n])) for n in range(50)],
    ]
    ctx = rsio_codec.Context(element_size={3: 2})
    with CaptureWriter(tmp_path / "r.wscap", "rsio/0") as capture:
        for frame in frames:
            capture.record(9, "in", rsio_codec.encode(frame, ctx), side="client")
    df = read(spark, tmp_path, maxPartitionBytes="64")
    assert df.rdd.getNumPartitions() == 1
    rows = df.collect()
    assert [r.frame_type for r in rows] == ["SUBSCRIBED"] + ["ON_NEXT"] * 50
    assert [bytes(r.on_next.element) for r in rows[1:]] == [bytes([n, n]) for n in range(50)]


def test_the_schema_is_the_generated_frame_log(spark: SparkSession, tmp_path: Path) -> None:
    small_capture(tmp_path, [request_n(1)])
    assert read(spark, tmp_path).schema.fieldNames() == FRAME_LOG_NAMES


def test_several_paths_are_read_together(spark: SparkSession, tmp_path: Path) -> None:
    first = small_capture(tmp_path / "a", [request_n(1), request_n(2)])
    second = small_capture(tmp_path / "b", [request_n(3)])
    rows = spark.read.format("wirestream").load([str(p) for p in first + second]).collect()
    assert [r.request_n.request_n for r in rows] == [1, 2, 3]


def test_a_file_that_is_no_capture_is_an_error_at_load_and_hidden_files_are_skipped(
    spark: SparkSession, tmp_path: Path
) -> None:
    small_capture(tmp_path, [request_n(1)])
    (tmp_path / ".cap.000000.wscap.crc").write_bytes(b"checksum")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    assert read(spark, tmp_path).count() == 1
    (tmp_path / "notes.txt").write_text("not a capture")
    with pytest.raises(Exception, match=r"notes.txt: offset 0: not a capture file"):
        read(spark, tmp_path)


def test_frame_types_read_their_rows_in_the_lean_frame_log(
    spark: SparkSession, rsocket_capture: tuple[Path, bytes, bytes]
) -> None:
    """frameTypes keeps those frame types' rows and (schema lean, its default then) their
    columns only; natively and not, split or not, as the full frame log's rows say."""
    path = rsocket_capture[0]
    full = read(spark, path).collect()
    kinds = sorted({r.frame_type for r in full})
    assert "PAYLOAD" in kinds and len(kinds) > 2
    wanted = ["PAYLOAD", kinds[0] if kinds[0] != "PAYLOAD" else kinds[1]]
    common = [c for c in FRAME_LOG_NAMES[:9]]
    columns = [*common, *(t.lower() for t in wanted)]
    expected = [tuple(r[c] for c in columns) for r in full if r.frame_type in wanted]
    for native_path in ("true", "false"):
        for arrow in ("true", "false"):
            df = read(spark, path, frameTypes=",".join(wanted).lower(), native=native_path,
                      arrow=arrow, maxPartitionBytes="2000")  # fmt: skip
            assert df.schema.fieldNames() == columns
            assert [tuple(r) for r in df.collect()] == expected, (native_path, arrow)
    df = read(spark, path, frameTypes="PAYLOAD", schema="full")
    assert df.schema.fieldNames() == FRAME_LOG_NAMES
    assert {r.frame_type for r in df.collect()} == {"PAYLOAD"}
    lean_all = read(spark, path, schema="lean")  # RSocket sets every common column
    assert lean_all.schema.fieldNames() == FRAME_LOG_NAMES
    assert [tuple(r) for r in lean_all.collect()] == [tuple(r) for r in full]


def test_a_lean_frame_log_leaves_out_the_common_columns_its_protocol_never_sets(
    spark: SparkSession, tmp_path: Path
) -> None:
    from wirestream.generated.rabbitmq_stream import v1 as rabbit

    frame = rabbit.encode(rabbit.Heartbeat())
    with CaptureWriter(tmp_path / "r.wscap", "rabbitmq_stream/1", max_file_bytes=None) as cap:
        cap.record(1, "out", frame, side="client")
    lean = read(spark, tmp_path, schema="lean")
    names = lean.schema.fieldNames()
    assert "stream_id" not in names and "flags" not in names and "heartbeat" in names
    assert read(spark, tmp_path).schema.fieldNames()[6:8] == ["stream_id", "flags"]
    assert [r.frame_type for r in lean.collect()] == ["HEARTBEAT"]


def test_bad_frame_types_and_schema_options_are_errors_at_load(
    spark: SparkSession, tmp_path: Path
) -> None:
    small_capture(tmp_path, [request_n(1)])
    with pytest.raises(Exception, match=r"frameTypes='PAYLOAD,NOPE': NOPE is not a frame type"):
        read(spark, tmp_path, frameTypes="PAYLOAD,NOPE")
    with pytest.raises(Exception, match=r"schema='slim' is not one of full, lean"):
        read(spark, tmp_path, schema="slim")
