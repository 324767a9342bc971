"""Spark schemas generated from the IDL (generated/<protocol>/<version>/spark.py).

Every frame type has a StructType and a frame-log column; ``frame_row`` turns any frame
the generated strategies draw into values that conform to that StructType (checked by
Spark's own type verifier and by Arrow, without a SparkSession); u64 values are exact;
enums are names; the codec never imports pyspark; the ``frame_log`` IDL key is
validated like every other key. One test builds a real DataFrame on the shared session.
"""

from __future__ import annotations

import datetime
import importlib
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    BooleanType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
    _make_type_verifier,
)

from wirestream.codegen import IdlError, load_protocol
from wirestream.codegen.frontend.model import Word
from wirestream.codegen.plan.codec import lower_snake, upper_snake
from wirestream.codegen.targets.python.render import render_spark
from wirestream.codegen.targets.python.spark import SparkTarget
from tests.support.protocols import (
    IDL,
    ROOT,
    VERSIONS,
    Version,
    context,
    decode_vector,
    generate_into,
)

LONG_MAX = (1 << 63) - 1
U64_MAX = (1 << 64) - 1
PER_VERSION = pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
# What users write in protocol="<protocol>/<version>" for each IDL file.
USER_NAMES = {
    "rsocket.v1_0": ("rsocket", "1.0"),
    "rsocket.v0_2": ("rsocket", "0.2"),
    "rsio.v0": ("rsio", "0"),
    "bpmux.rel": ("bpmux", "rel"),
    "rabbitmq_stream.v1": ("rabbitmq_stream", "1"),
    "rabbitmq_stream.draft": ("rabbitmq_stream", "draft"),
    "mqtt.v5": ("mqtt", "5"),
    "postgresql.v3": ("postgresql", "3"),
    "mysql.v10": ("mysql", "10"),
}
# Which field is the frame log's stream id (None: the protocol has none).
STREAM_IDS = {
    "rsocket.v1_0": "stream_id",
    "rsocket.v0_2": "stream_id",
    "rsio.v0": "subscriber",
    "bpmux.rel": "inner_id",
    "rabbitmq_stream.v1": None,
    "rabbitmq_stream.draft": None,
    # MQTT's Packet Identifier names a request, not a stream; PostgreSQL and MySQL have
    # one conversation per connection
    "mqtt.v5": None,
    "postgresql.v3": None,
    "mysql.v10": None,
}
# Protocols whose header has flag bits (the frame log's flags column is theirs).
HEADER_FLAGS = ("rsocket", "mqtt")


def spark_module(version: Version) -> ModuleType:
    return importlib.import_module(
        f"wirestream.generated.{version.protocol}.{version.version}.spark"
    )


def frame_classes(codec: ModuleType) -> list[type]:
    """Every frame class of a codec, in IDL order: one per FrameType name, and UnknownFrame."""
    classes = {upper_snake(name): getattr(codec, name) for name in codec.__all__}
    found = [classes[member] for member in codec.FrameType.__members__]  # aliases included
    return found + ([codec.UnknownFrame] if hasattr(codec, "UnknownFrame") else [])


def verifier(spark: ModuleType, column: int) -> Any:
    return _make_type_verifier(spark.FRAME_LOG_SCHEMA[spark.FRAME_COLUMNS[column]].dataType, False)


def arrow_value(schema: StructType, values: tuple[Any, ...]) -> Any:
    """``values`` through Arrow with the frame's type (what the capture reader's Arrow
    path does): raises when a value does not fit its column type."""
    return pa.array([values], type=to_arrow_type(schema, timezone="UTC")).to_pylist()[0]


def header_flags(version: Version) -> tuple[int, int, int, int]:
    """Where an encoded frame's flag bits are, from the IDL's (fixed-size) header layout:
    (byte offset of their word, its size, shift, width)."""
    offset = 0
    for item in load_protocol(version.idl).header:
        node = item.node
        size = node.type.size  # type: ignore[union-attr]
        if size is None:  # a variable-size length after the flags (MQTT's) ends the search
            break
        if isinstance(node, Word):
            shift = node.type.bits
            for bit in node.bits:
                shift -= bit.width
                if bit.kind == "flags":
                    return offset, size, shift, bit.width
        offset += size
    raise AssertionError("no flags in the header")


def small_spec(path: Path, frames: list[str]) -> dict[str, Any]:
    """An IDL file with only some of its frames and no machines (quick to generate)."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec.pop("machines", None)
    spec["frames"] = {name: spec["frames"][name] for name in frames}
    return dict(spec)


# --- schemas ------------------------------------------------------------------------------


@PER_VERSION
def test_every_frame_type_has_a_schema_and_a_frame_log_column(version: Version) -> None:
    codec, spark = version.codec(), spark_module(version)
    classes = frame_classes(codec)
    assert spark.FRAME_COLUMNS == tuple(lower_snake(cls.__name__) for cls in classes)
    for cls in classes:
        schema = getattr(spark, f"{upper_snake(cls.__name__)}_SCHEMA")
        assert isinstance(schema, StructType)
        assert spark.FRAME_LOG_SCHEMA[lower_snake(cls.__name__)].dataType == schema
        assert spark.FRAME_LOG_SCHEMA[lower_snake(cls.__name__)].nullable


@PER_VERSION
def test_a_frame_schema_has_one_field_per_attribute_of_the_decoded_frame(version: Version) -> None:
    codec, spark = version.codec(), spark_module(version)
    for cls in frame_classes(codec):
        schema = getattr(spark, f"{upper_snake(cls.__name__)}_SCHEMA")
        assert tuple(schema.names) == (cls.__match_args__ or ("present",)), cls.__name__


@PER_VERSION
def test_the_frame_log_row_starts_with_the_common_columns(version: Version) -> None:
    spark = spark_module(version)
    common = [(f.name, f.dataType, f.nullable) for f in spark.FRAME_LOG_SCHEMA.fields[:9]]
    assert common == [
        ("capture_time", TimestampType(), False),
        ("connection_id", LongType(), False),
        ("direction", StringType(), False),
        ("protocol", StringType(), False),
        ("version", StringType(), False),
        ("frame_type", StringType(), False),
        ("stream_id", LongType(), True),
        ("flags", IntegerType(), True),
        ("length", IntegerType(), False),
    ]
    assert spark.COMMON_COLUMNS == tuple(name for name, _, _ in common)
    assert spark.FRAME_LOG_SCHEMA.names == [*spark.COMMON_COLUMNS, *spark.FRAME_COLUMNS]


@PER_VERSION
def test_protocol_and_version_are_what_readers_are_given(version: Version) -> None:
    spark = spark_module(version)
    assert (spark.PROTOCOL, spark.VERSION) == USER_NAMES[version.id]


@PER_VERSION
def test_spark_module_names_its_idl_source_in_its_header(version: Version) -> None:
    text = Path(spark_module(version).__file__ or "").read_text(encoding="utf-8")
    source = f"idl/{version.protocol}/{version.version}.yaml"
    assert text.startswith(f"# Generated by wirestream codegen from {source} -- do not edit.\n")


@PER_VERSION
def test_spark_module_is_generated_deterministically_and_committed_fresh(version: Version) -> None:
    proto = load_protocol(version.idl, f"idl/{version.protocol}/{version.version}.yaml")
    text = render_spark(proto)
    assert render_spark(proto) == text
    committed = ROOT / "generated" / version.protocol / version.version / "spark.py"
    assert committed.read_text(encoding="utf-8") == text


def test_codecs_import_neither_pyspark_nor_their_spark_module() -> None:
    modules = [f"wirestream.generated.{v.protocol}.{v.version}" for v in VERSIONS]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    importlib.import_module(name + '.machines')\n"
        "loaded = [m for m in sys.modules if m.startswith('pyspark') or m.endswith('.spark')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True)


# --- frame_row on every frame the strategies draw ---------------------------------------------


@PER_VERSION
def test_frame_row_values_conform_to_the_frame_s_struct_type(version: Version) -> None:
    codec, spark = version.codec(), spark_module(version)
    strategies = version.strategies()
    verifiers = [verifier(spark, column) for column in range(len(spark.FRAME_COLUMNS))]

    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(strategies.frames())
    def check(drawn: tuple[Any, Any]) -> None:
        frame, _ = drawn
        frame_type, _, _, column, values = spark.frame_row(frame)
        assert spark.FRAME_COLUMNS[column] == lower_snake(type(frame).__name__)
        assert frame_type == upper_snake(type(frame).__name__)  # frames sharing a code differ
        verifiers[column](values)  # Spark's own check of values against a DataType
        schema = spark.FRAME_LOG_SCHEMA[spark.FRAME_COLUMNS[column]].dataType
        arrow_value(schema, values)

    check()


@PER_VERSION
def test_stream_id_is_the_idl_s_stream_id_field(version: Version) -> None:
    spark, field = spark_module(version), STREAM_IDS[version.id]

    @given(version.strategies().frames())
    def check(drawn: tuple[Any, Any]) -> None:
        frame, _ = drawn
        expected = getattr(frame, field, None) if field else None
        if expected is not None and expected > LONG_MAX:
            expected = None
        assert spark.frame_row(frame)[1] == expected

    check()


@pytest.mark.parametrize(
    "version", [v for v in VERSIONS if v.protocol in HEADER_FLAGS], ids=lambda v: v.id
)
def test_flags_are_the_flag_bits_the_codec_writes(version: Version) -> None:
    codec, spark = version.codec(), spark_module(version)
    offset, size, shift, width = header_flags(version)

    @given(version.strategies().frames())
    def check(drawn: tuple[Any, Any]) -> None:
        frame, ctx = drawn
        word = int.from_bytes(codec.encode(frame, ctx)[offset : offset + size], "big")
        assert spark.frame_row(frame)[2] == (word >> shift) & ((1 << width) - 1)

    check()


@pytest.mark.parametrize(
    "version", [v for v in VERSIONS if v.protocol not in HEADER_FLAGS], ids=lambda v: v.id
)
def test_flags_are_null_where_the_protocol_has_no_header_flags(version: Version) -> None:
    spark = spark_module(version)

    @given(version.strategies().frames())
    def check(drawn: tuple[Any, Any]) -> None:
        assert spark.frame_row(drawn[0])[2] is None

    check()


def test_unknown_frames_keep_code_flags_and_body() -> None:
    from wirestream.generated.rsocket.v1_0 import UnknownFrame, decode
    from wirestream.generated.rsocket.v1_0.spark import FRAME_COLUMNS, frame_row

    frame = decode(bytes.fromhex("00000007" "c205" "6869"))  # type 0x30, I set, flag bit 0x005
    assert isinstance(frame, UnknownFrame)
    assert frame_row(frame) == (
        "UNKNOWN_FRAME", 7, 0x205, FRAME_COLUMNS.index("unknown_frame"), (0x30, 7, 0x205, b"hi")
    )  # fmt: skip


def test_frame_row_refuses_what_is_not_a_frame_of_the_version() -> None:
    from wirestream.generated.rsio.v0 import Cancel
    from wirestream.generated.rsocket.v1_0.spark import frame_row

    with pytest.raises(TypeError, match="Cancel is not a frame of RSocket 1.0"):
        frame_row(Cancel(subscriber=1))  # type: ignore[arg-type]


# --- integers, enums, unions, empty frames --------------------------------------------------


@pytest.mark.parametrize("credit", [0, LONG_MAX, LONG_MAX + 1, U64_MAX])
def test_u64_values_are_exact_decimals_at_the_edges(credit: int) -> None:
    from wirestream.generated.bpmux.rel import MainCredit
    from wirestream.generated.bpmux.rel.spark import MAIN_CREDIT_SCHEMA, frame_row

    assert MAIN_CREDIT_SCHEMA["credit"].dataType == DecimalType(20, 0)
    values = frame_row(MainCredit(credit=credit))[4]
    assert values == (Decimal(credit),) and type(values[0]) is Decimal
    _make_type_verifier(MAIN_CREDIT_SCHEMA, False)(values)
    assert arrow_value(MAIN_CREDIT_SCHEMA, values) == {"credit": Decimal(credit)}


@pytest.mark.parametrize("inner_id", [0, LONG_MAX, LONG_MAX + 1, U64_MAX])
def test_a_stream_id_above_long_is_null_in_the_column_and_exact_in_the_frame(
    inner_id: int,
) -> None:
    from wirestream.generated.bpmux.rel import InnerCancel
    from wirestream.generated.bpmux.rel.spark import frame_row

    _, stream_id, _, _, values = frame_row(InnerCancel(inner_id=inner_id))
    assert stream_id == (inner_id if inner_id <= LONG_MAX else None)
    assert values == (Decimal(inner_id),)


def test_integers_take_the_narrowest_exact_spark_type() -> None:
    from wirestream.generated.rsocket.v1_0.spark import (
        KEEPALIVE_SCHEMA,
        REQUEST_N_SCHEMA,
        SETUP_SCHEMA,
    )
    from wirestream.generated.rsio.v0.spark import REQUEST_SCHEMA

    assert SETUP_SCHEMA["major_version"].dataType == IntegerType()  # u16
    assert REQUEST_N_SCHEMA["request_n"].dataType == IntegerType()  # 31 bits of a u32 word
    assert KEEPALIVE_SCHEMA["last_received_position"].dataType == LongType()  # 63 bits
    assert REQUEST_SCHEMA["demand"].dataType == LongType()  # varint, max 2^63-1
    assert REQUEST_SCHEMA["subscriber"].dataType == DecimalType(20, 0)  # varint


def test_enum_fields_hold_member_names() -> None:
    from wirestream.generated.rsocket.v1_0 import Error, ErrorCode
    from wirestream.generated.rsocket.v1_0.spark import ERROR_SCHEMA, frame_row

    assert ERROR_SCHEMA["error_code"].dataType == StringType()
    values = frame_row(Error(stream_id=1, error_code=ErrorCode.APPLICATION_ERROR, data=b"x"))[4]
    assert values == (1, False, "APPLICATION_ERROR", b"x")


def test_open_enum_values_it_does_not_list_are_their_decimal_number() -> None:
    from wirestream.generated.rsocket.v1_0 import Error
    from wirestream.generated.rsocket.v1_0.spark import frame_row

    assert frame_row(Error(stream_id=1, error_code=0x305))[4][2] == "773"


def test_closed_enum_fields_hold_member_names(tmp_path: Path) -> None:
    spec = small_spec(IDL / "rsocket" / "v1_0.yaml", ["Setup", "Error"])
    spec["enums"]["ErrorCode"]["open"] = False
    codec, spark = generate_into(tmp_path, spec, "wsspark_closed", "spark")
    frame = codec.Error(stream_id=2, error_code=codec.ErrorCode.REJECTED)
    assert type(frame.error_code) is codec.ErrorCode
    assert spark.frame_row(frame)[4] == (2, False, "REJECTED", b"")
    assert spark.ERROR_SCHEMA["error_code"].dataType == StringType()


def test_a_union_is_a_struct_with_exactly_the_variant_s_field_set() -> None:
    from wirestream.generated.rabbitmq_stream.v1 import (
        OffsetSpecNext,
        OffsetSpecOffset,
        SubscribeRequest,
    )
    from wirestream.generated.rabbitmq_stream.v1.spark import OFFSET_SPECIFICATION_SCHEMA, frame_row

    assert OFFSET_SPECIFICATION_SCHEMA.names == [
        "offset_spec_first", "offset_spec_last", "offset_spec_next", "offset_spec_offset",
        "offset_spec_timestamp",
    ]  # fmt: skip
    at_offset = SubscribeRequest(stream="s", offset_specification=OffsetSpecOffset(offset=U64_MAX))
    assert frame_row(at_offset)[4][3] == (None, None, None, (Decimal(U64_MAX),), None)
    at_next = SubscribeRequest(stream="s", offset_specification=OffsetSpecNext())
    assert frame_row(at_next)[4][3] == (None, None, (True,), None, None)


def test_a_frame_without_fields_has_one_present_field() -> None:
    from wirestream.generated.bpmux.rel import Close
    from wirestream.generated.bpmux.rel.spark import CLOSE_SCHEMA, frame_row

    assert [(f.name, f.dataType, f.nullable) for f in CLOSE_SCHEMA.fields] == [
        ("present", BooleanType(), False)
    ]
    assert frame_row(Close()) == ("CLOSE", None, None, 1, (True,))


def test_an_unknown_frame_of_a_two_part_code_keeps_both_parts(tmp_path: Path) -> None:
    spec = small_spec(IDL / "rabbitmq_stream" / "v1.yaml", ["Heartbeat"])
    spec["unknown"] = {"policy": "skip_length", "length": "u32"}
    codec, spark = generate_into(tmp_path, spec, "wsspark_unknown", "spark")
    frame = codec.decode(bytes.fromhex("0099" "0001" "00000002" "6869"))
    assert type(frame) is codec.UnknownFrame
    row = spark.frame_row(frame)
    assert row == ("UNKNOWN_FRAME", None, None, len(spark.FRAME_COLUMNS) - 1, ((0x99, 1), b"hi"))
    _make_type_verifier(spark.UNKNOWN_FRAME_SCHEMA, False)(row[4])
    assert spark.UNKNOWN_FRAME_SCHEMA["code"].dataType.names == ["key", "version"]


# --- the frame_log IDL key ---------------------------------------------------------------------


def idl_with(tmp_path: Path, extra: str) -> tuple[Path, int]:
    """RSocket 1.0's IDL with ``extra`` appended: the file and the line ``extra`` starts."""
    text = (IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8")
    path = tmp_path / "v1_0.yaml"
    path.write_text(text + extra, encoding="utf-8")
    return path, text.count("\n") + 1


@pytest.mark.parametrize(
    ("extra", "offset", "key", "message"),
    [
        ("frame_log:\n  stream_id: nope\n", 1, "frame_log.stream_id",
         "'nope' is not a field of the header or of any frame"),
        ("frame_log:\n  stream_id: data\n", 1, "frame_log.stream_id",
         "'data' of Setup is not an integer; a stream id is an integer attribute"),
        ("frame_log:\n  stream_id: error_code\n", 1, "frame_log.stream_id",
         "'error_code' of Error is an enum (ErrorCode)"),
        ("frame_log:\n  stream_id: frame_type\n", 1, "frame_log.stream_id",
         "'frame_type' is not a field of the header or of any frame"),
        ("frame_log:\n  stream_id: Stream\n", 1, "frame_log.stream_id",
         "'Stream' is not a lower_snake name"),
        ("frame_log:\n  streams: stream_id\n", 1, "frame_log.streams", "unknown key 'streams'"),
        ("frame_log: [stream_id]\n", 0, "frame_log", "expected a mapping"),
    ],
    ids=["unknown_field", "bytes_field", "enum_field", "discriminator", "bad_name",
         "unknown_key", "not_a_mapping"],
)  # fmt: skip
def test_a_bad_frame_log_key_is_reported_with_file_line_and_key(
    tmp_path: Path, extra: str, offset: int, key: str, message: str
) -> None:
    path, line = idl_with(tmp_path, extra)
    with pytest.raises(IdlError) as caught:
        load_protocol(path, "v1_0.yaml")
    error = caught.value
    assert (error.file, error.line, error.key) == ("v1_0.yaml", line + offset, key), str(error)
    assert error.message.startswith(message), str(error)


def test_frame_log_stream_id_names_the_field_and_null_means_none(tmp_path: Path) -> None:
    path, _ = idl_with(tmp_path, "frame_log:\n  stream_id: request_n\n")
    assert load_protocol(path).stream_id_field == "request_n"
    path, _ = idl_with(tmp_path, "frame_log:\n  stream_id: null\n")
    assert load_protocol(path).stream_id_field is None
    assert load_protocol(IDL / "rsocket" / "v1_0.yaml").stream_id_field == "stream_id"


@pytest.mark.parametrize("name", ["Length", "FrameType", "Flags"])
def test_a_frame_whose_column_would_be_a_common_column_is_an_idl_error(
    tmp_path: Path, name: str
) -> None:
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    spec["frames"][name] = {"code": 0x30, "fields": []}
    path = tmp_path / "v1_0.yaml"
    text = yaml.safe_dump(spec, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index(f"  {name}:") + 1
    with pytest.raises(IdlError) as caught:
        SparkTarget(load_protocol(path, "v1_0.yaml")).plan()
    error = caught.value
    assert (error.file, error.line, error.key) == ("v1_0.yaml", line, f"frames.{name}")
    assert f"its Spark frame-log column '{lower_snake(name)}' would be the common" in error.message


# --- a DataFrame of frame-log rows on the shared session ---------------------------------------


def frame_log_rows(version: Version) -> list[tuple[Any, ...]]:
    """One frame-log row per golden vector of ``version``, as a capture reader makes it."""
    codec, spark = version.codec(), spark_module(version)
    start = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
    rows = []
    for index, vector in enumerate(version.vectors()):
        data = bytes.fromhex(vector["hex"])
        frame = decode_vector(codec, vector, context(codec, vector.get("ctx")))
        frame_type, stream_id, flags, column, values = spark.frame_row(frame)
        frames: list[Any] = [None] * len(spark.FRAME_COLUMNS)
        frames[column] = values
        capture_time = start + datetime.timedelta(milliseconds=index)
        direction = "in" if index % 2 else "out"
        rows.append((capture_time, 7, direction, spark.PROTOCOL, spark.VERSION, frame_type,
                     stream_id, flags, len(data), *frames))  # fmt: skip
    return rows


@pytest.mark.spark
@PER_VERSION
def test_frame_log_rows_make_a_dataframe_that_parquet_keeps(
    spark: Any, tmp_path: Path, version: Version
) -> None:
    module = spark_module(version)
    rows = frame_log_rows(version)
    frame_log = spark.createDataFrame(rows, module.FRAME_LOG_SCHEMA)  # verifies every value
    assert frame_log.schema == module.FRAME_LOG_SCHEMA
    collected = frame_log.orderBy("capture_time").collect()
    # Spark hands timestamps back in the session's time zone, without tzinfo.
    assert [tuple(row)[1:] for row in collected] == [row[1:] for row in rows]
    frame_log.write.parquet(str(tmp_path / "frame_log"))
    again = spark.read.parquet(str(tmp_path / "frame_log")).orderBy("capture_time").collect()
    assert again == collected
