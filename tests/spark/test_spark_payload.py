"""The shared payload options of the streaming sources (runtime/spark/payload.py) and
the option reader (runtime/spark/options.py): no SparkSession needed."""

from __future__ import annotations

import datetime
import json

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.options import Options
from wirestream.runtime.spark.payload import (
    PAYLOAD_OPTIONS,
    PayloadDecoder,
    PayloadError,
    payload_ddl,
)

UTC = datetime.timezone.utc
TICK = StructType(
    [
        StructField("symbol", StringType()),
        StructField("price", DoubleType()),
        StructField("qty", LongType()),
        StructField("ts", TimestampType()),
    ]
)


def options(**given: str) -> Options:
    return Options("test_source", given, PAYLOAD_OPTIONS)


def decoder(data_type: object = TICK, **given: str) -> PayloadDecoder:
    return PayloadDecoder(options(**given), data_type)  # type: ignore[arg-type]


def test_payload_ddl_is_binary_by_default_and_string_for_utf8() -> None:
    assert payload_ddl(options()) == "binary"
    assert payload_ddl(options(payloadFormat="utf8")) == "string"


def test_payload_ddl_wraps_the_schema_for_json_and_msgpack() -> None:
    ddl = "symbol string, price double"
    assert payload_ddl(options(payloadFormat="msgpack", payloadSchema=ddl)) == f"struct<{ddl}>"
    assert payload_ddl(options(payloadFormat="JSON", payloadSchema=ddl)) == f"struct<{ddl}>"


@pytest.mark.parametrize(
    "given, message",
    [
        (
            {"payloadFormat": "avro"},
            "payloadFormat='avro' is not one of bytes, utf8, json, msgpack",
        ),
        ({"payloadFormat": "json"}, "payloadFormat=json needs option payloadSchema"),
        ({"payloadSchema": "a int"}, "payloadSchema is only for payloadFormat json or msgpack"),
        ({"onBadPayload": "skip"}, "onBadPayload='skip' is not one of fail, null"),
    ],
)
def test_bad_payload_options_name_the_option_and_what_is_accepted(
    given: dict[str, str], message: str
) -> None:
    with pytest.raises(SparkOptionError, match="test_source: .*" + message.replace("(", r"\(")):
        payload_ddl(options(**given))


def test_unknown_options_are_refused_with_the_accepted_list() -> None:
    with pytest.raises(SparkOptionError, match="unknown option 'payloadformta'; accepted: "):
        options(payloadFormta="json")


def test_options_are_case_insensitive_as_spark_passes_them() -> None:
    assert (
        options(PAYLOADFORMAT="utf8").choice("payloadFormat", ("bytes", "utf8"), "bytes") == "utf8"
    )


def test_integer_and_flag_options_are_checked() -> None:
    opts = Options("s", {"n": "12", "bad": "x", "neg": "-1", "f": "TRUE"}, ["n", "bad", "neg", "f"])
    assert opts.integer("n") == 12
    assert opts.flag("f", False) is True
    with pytest.raises(SparkOptionError, match="option bad='x' is not an integer"):
        opts.integer("bad")
    with pytest.raises(SparkOptionError, match="option neg=-1 is below 1"):
        opts.integer("neg", minimum=1)
    with pytest.raises(SparkOptionError, match="option bad='x' is not true or false"):
        opts.flag("bad", False)
    with pytest.raises(SparkOptionError, match="option 'missing' is required"):
        Options("s", {}, ["missing"]).text("missing")


def test_bytes_payload_is_untouched_and_utf8_is_text() -> None:
    assert decoder(BinaryType())(b"\x00\xff") == b"\x00\xff"
    assert decoder(StringType(), payloadFormat="utf8")("é".encode()) == "é"


def test_msgpack_fills_the_schema_by_name_missing_keys_null_extra_keys_ignored() -> None:
    decode = decoder(payloadFormat="msgpack")
    raw = msgpack.packb({"price": 1, "symbol": "A", "extra": [1, 2]})
    assert decode(raw) == ("A", 1.0, None, None)


def test_msgpack_timestamp_extension_is_its_instant() -> None:
    stamp = msgpack.Timestamp.from_unix_nano(1_700_000_000_123_456_000)
    raw = msgpack.packb({"ts": stamp})
    assert decoder(payloadFormat="msgpack")(raw)[3] == datetime.datetime(
        2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC
    )


def test_numbers_into_timestamp_are_epoch_seconds_and_strings_iso8601() -> None:
    decode = decoder(payloadFormat="json")
    assert decode(b'{"ts": 1.5}')[3] == datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=UTC)
    assert decode(b'{"ts": "2026-11-20T09:30:00"}')[3] == datetime.datetime(
        2026, 11, 20, 9, 30, tzinfo=UTC
    )


def test_nested_arrays_and_maps_convert() -> None:
    schema = StructType(
        [
            StructField("tags", ArrayType(StringType())),
            StructField("attrs", MapType(StringType(), LongType())),
            StructField("inner", StructType([StructField("x", LongType())])),
        ]
    )
    raw = json.dumps({"tags": ["a"], "attrs": {"k": 1}, "inner": {"x": 2}}).encode()
    assert decoder(schema, payloadFormat="json")(raw) == (["a"], [("k", 1)], (2,))


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"\xc1", "FormatError"),  # 0xc1 is never used in msgpack
        (msgpack.packb([1, 2]), "expected a map, got list"),
        (msgpack.packb({"symbol": 3}), "expected a string, got 3"),
        (msgpack.packb({"qty": (1 << 64) - 1}), "does not fit 64 bits"),
        (msgpack.packb({"qty": 1.5}), "expected an integer, got 1.5"),
        (msgpack.packb({"price": True}), "expected a number, got True"),
        (msgpack.packb({"ts": "yesterday"}), "'yesterday' is not an ISO 8601 timestamp"),
        (msgpack.packb({"a": 1}) + b"\x00", "extra data"),
    ],
)
def test_a_bad_payload_fails_with_the_format_where_and_why(raw: bytes, why: str) -> None:
    with pytest.raises(PayloadError) as caught:
        decoder(payloadFormat="msgpack")(raw, "offset 42")
    message = str(caught.value)
    assert message.startswith("test_source: payload at offset 42 is not msgpack fitting")
    assert why in message


def test_bad_json_and_bad_utf8_fail_clearly() -> None:
    with pytest.raises(PayloadError, match="payload at offset 1 is not json"):
        decoder(payloadFormat="json")(b"{", "offset 1")
    with pytest.raises(PayloadError, match="is not utf8"):
        decoder(StringType(), payloadFormat="utf8")(b"\xff")


def test_on_bad_payload_null_keeps_the_row_with_a_null_payload() -> None:
    assert decoder(payloadFormat="msgpack", onBadPayload="null")(b"\xc1") is None


ticks = st.fixed_dictionaries(
    {
        "symbol": st.text(max_size=8),
        "price": st.floats(allow_nan=False, allow_infinity=False),
        "qty": st.integers(-(1 << 63), (1 << 63) - 1),
        "ts": st.integers(0, 4_000_000_000).map(lambda s: msgpack.Timestamp(s, 0)),
    }
)


@given(ticks)
def test_round_trip_msgpack_map_into_schema_keeps_every_value(tick: dict[str, object]) -> None:
    row = decoder(payloadFormat="msgpack")(msgpack.packb(tick))
    ts = tick["ts"]
    assert isinstance(ts, msgpack.Timestamp)
    assert row == (tick["symbol"], tick["price"], tick["qty"], ts.to_datetime())


# --- the column-wise path (PayloadDecoder.array) gives exactly what the row path gives ---

NESTED = StructType(
    [
        StructField("symbol", StringType()),
        StructField("price", DoubleType()),
        StructField("qty", LongType()),
        StructField("ts", TimestampType()),
        StructField("tags", ArrayType(StringType())),
        StructField("extra", MapType(StringType(), LongType())),
        StructField("raw", BinaryType()),
    ]
)
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.datetimes(timezones=st.just(UTC)),
    st.lists(st.text(max_size=2), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(-5, 5), max_size=2),
)
_good = st.fixed_dictionaries(
    {},
    optional={
        "symbol": st.text(max_size=4),
        "price": st.one_of(st.floats(allow_nan=False), st.integers(-(2**53), 2**53)),
        "qty": st.integers(-(2**63), 2**63 - 1),
        "ts": st.datetimes(timezones=st.just(UTC)),
        "tags": st.lists(st.text(max_size=2), max_size=3),
        "extra": st.dictionaries(st.text(max_size=2), st.integers(-5, 5), max_size=2),
        "raw": st.binary(max_size=4),
    },
)
_any_map = st.dictionaries(st.sampled_from([f.name for f in NESTED.fields]), _values)
_payloads = st.lists(
    st.one_of(
        _good.map(lambda m: msgpack.packb(m, datetime=True)),
        _good.map(lambda m: msgpack.packb(m, datetime=True)),
        _any_map.map(lambda m: msgpack.packb(m, datetime=True)),
        st.sampled_from([msgpack.packb(None), msgpack.packb([1]), b"\xc1", b""]),
    ),
    max_size=8,
)


def _row_path(decode: PayloadDecoder, raws: list[bytes]) -> object:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    arrow_type = to_arrow_type(decode.data_type, timezone="UTC")
    try:
        return pa.array([decode(raw, f"#{i}") for i, raw in enumerate(raws)], arrow_type)
    except PayloadError as error:
        return str(error)


def _column_path(decode: PayloadDecoder, raws: list[bytes]) -> object:
    from pyspark.sql.pandas.types import to_arrow_type

    arrow_type = to_arrow_type(decode.data_type, timezone="UTC")
    try:
        return decode.array(raws, arrow_type, lambda i: f"#{i}")
    except PayloadError as error:
        return str(error)


@given(_payloads, st.sampled_from(["fail", "null"]))
def test_payload_column_path_equals_the_row_path_for_any_msgpack_payloads(
    raws: list[bytes], on_bad: str
) -> None:
    decode = decoder(NESTED, payloadFormat="msgpack", onBadPayload=on_bad)
    assert _column_path(decode, raws) == _row_path(decode, raws)


@given(st.lists(st.one_of(st.binary(max_size=6), st.text(max_size=4).map(str.encode)), max_size=8))
def test_payload_column_path_equals_the_row_path_for_utf8_json_and_bytes(raws: list[bytes]) -> None:
    as_json = [
        json.dumps({"symbol": raw.decode("latin-1"), "qty": len(raw)}).encode() for raw in raws
    ]
    for decode, given_raws in [
        (decoder(None, payloadFormat="utf8", onBadPayload="null"), raws),
        (decoder(StringType(), payloadFormat="utf8"), raws),
        (decoder(BinaryType()), raws),
        (decoder(TICK, payloadFormat="json"), as_json + raws),
    ]:
        if decode.data_type is None:
            decode.data_type = StringType()
        assert _column_path(decode, given_raws) == _row_path(decode, given_raws)


def test_payload_column_path_takes_the_fast_path_for_ticks_and_keeps_nulls() -> None:
    raws = [msgpack.packb({"symbol": "ACME", "price": 1.5, "qty": 3,
                           "ts": msgpack.Timestamp(1, 0)}), msgpack.packb(None)]  # fmt: skip
    column = _column_path(decoder(payloadFormat="msgpack"), raws)
    assert column == _row_path(decoder(payloadFormat="msgpack"), raws)
    assert column.to_pylist() == [  # type: ignore[attr-defined]
        {"symbol": "ACME", "price": 1.5, "qty": 3,
         "ts": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)},
        None,
    ]  # fmt: skip


def test_a_number_beyond_any_timestamp_is_a_bad_payload_not_an_overflow() -> None:
    raw = msgpack.packb({"ts": 1e300})
    with pytest.raises(PayloadError, match="seconds is not a timestamp Spark can hold"):
        decoder(payloadFormat="msgpack")(raw, "offset 7")
    assert decoder(payloadFormat="msgpack", onBadPayload="null")(raw) is None
