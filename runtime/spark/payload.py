"""Payload decoding for the streaming sources: raw bytes, UTF-8, JSON or msgpack.

Every streaming source (``rabbitmq_stream``, ``rsocket``, ``rsio``) delivers a ``payload``
column whose type the user picks with two options, the same for all of them:

``payloadFormat``
    ``bytes`` (default: ``binary``, untouched), ``utf8`` (``string``), ``json`` or
    ``msgpack`` (a ``struct`` of ``payloadSchema``).
``payloadSchema``
    a Spark DDL string such as ``"symbol string, price double, qty long, ts timestamp"``,
    required for ``json`` and ``msgpack``.  Each payload must decode to a map; its keys are
    matched to the schema's field names (missing keys are null, extra keys ignored).
``onBadPayload``
    ``fail`` (default: the task fails with a ``PayloadError`` naming the format and where
    the payload came from) or ``null`` (the ``payload`` column is null and the row is kept,
    so nothing is lost: the raw bytes can be re-read from the source by offset).

Conversions into the schema follow Spark's casts: numbers into ``timestamp`` are seconds
since the epoch, strings into ``timestamp`` are ISO 8601, a msgpack Timestamp extension is
its instant; integers widen into ``double``.  Anything else that does not fit is a bad
payload, never a silently wrong value.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgpack
import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from wirestream.runtime.errors import DecodeError
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.options import Options

__all__ = ["PAYLOAD_OPTIONS", "PayloadError", "PayloadDecoder", "payload_ddl"]

PAYLOAD_OPTIONS = ("payloadFormat", "payloadSchema", "onBadPayload")
FORMATS = ("bytes", "utf8", "json", "msgpack")

_UTC = datetime.timezone.utc
Convert = Callable[[Any], Any]


class PayloadError(DecodeError):
    """A payload did not decode in the format, or did not fit the schema, it was given."""


class _Misfit(Exception):
    """A decoded value does not fit the schema (internal: becomes a PayloadError)."""


def payload_ddl(options: Options) -> str:
    """The ``payload`` column's type as DDL, for ``DataSource.schema()`` (checks options).

    Spark parses the DDL in the JVM at ``load()`` (the Python side has no parser without a
    session), so a malformed ``payloadSchema`` fails there, before the query starts; the
    parsed type reaches ``reader(schema)`` and builds the ``PayloadDecoder``.
    """
    fmt = options.choice("payloadFormat", FORMATS, "bytes")
    options.choice("onBadPayload", ("fail", "null"), "fail")
    ddl = options.optional("payloadSchema")
    if fmt in ("json", "msgpack"):
        if ddl is None or not ddl.strip():
            raise SparkOptionError(
                f"{options.source}: payloadFormat={fmt} needs option payloadSchema "
                '(a Spark DDL string, e.g. "symbol string, price double")'
            )
        return f"struct<{ddl}>"
    if ddl is not None:
        raise SparkOptionError(
            f"{options.source}: option payloadSchema is only for payloadFormat json or "
            f"msgpack, not {fmt}"
        )
    return "binary" if fmt == "bytes" else "string"


class PayloadDecoder:
    """Turns one payload's bytes into the value of the ``payload`` column.

    Built on each executor from the options (plain strings) and the parsed column type,
    which Spark hands to ``reader(schema)``.
    """

    def __init__(self, options: Options, data_type: DataType) -> None:
        self.source = options.source
        self.format = options.choice("payloadFormat", FORMATS, "bytes")
        self.null_on_error = options.choice("onBadPayload", ("fail", "null"), "fail") == "null"
        self.data_type = data_type
        if self.format in ("json", "msgpack"):
            if not isinstance(data_type, StructType):
                raise SparkOptionError(
                    f"{self.source}: payloadFormat={self.format} needs a struct payload column, "
                    f"not {data_type.simpleString()}"
                )
            self._to_row = _converter(data_type)
            self._fields = [
                (field.name, field.dataType, _converter(field.dataType))
                for field in data_type.fields
            ]

        decoders: dict[str, Callable[[bytes], Any]] = {
            "bytes": bytes,
            "utf8": self._utf8,
            "json": self._json,
            "msgpack": self._msgpack,
        }
        self.decode = decoders[self.format]

    def __call__(self, raw: bytes, where: str = "") -> Any:
        """``raw`` decoded; ``where`` (e.g. "offset 1234") goes into the error message."""
        try:
            return self.decode(raw)
        except (_Misfit, ValueError, TypeError) as error:  # msgpack and json errors are ValueErrors
            if self.null_on_error:
                return None
            at = f" at {where}" if where else ""
            fits = " fitting payloadSchema" if self.format in ("json", "msgpack") else ""
            raise PayloadError(
                f"{self.source}: payload{at} is not {self.format}{fits}: {str(error) or type(error).__name__} "
                f"(first bytes {bytes(raw[:16])!r})"
            ) from None

    def array(
        self, raws: Sequence[bytes], arrow_type: pa.DataType, where: Callable[[int], str]
    ) -> pa.Array:
        """The ``payload`` column of many payloads as one Arrow array of ``arrow_type``
        (the column's type): exactly ``pa.array([self(raw, where(i)) for i, raw in
        enumerate(raws)], arrow_type)``, but built column by column.

        Why: the row path costs a Python call per field per row (the converter checks
        each value, then pyarrow walks a tuple per row).  Here each decoded map's fields
        are pulled into one list per field, and a list whose values all have the types
        that convert as they are (the set of their types, taken in C) goes to
        ``pa.array`` whole, which checks ranges itself.  Anything else -- a payload that
        does not decode, a value of another type, a range pyarrow refuses, a nested
        type -- sends the whole batch down the row path, which gives the precise
        ``PayloadError`` (or the null of ``onBadPayload=null``): the fast path only ever
        produces what the row path would have.
        """
        if self.format == "bytes":
            return pa.array(raws, arrow_type)
        try:
            if self.format == "utf8":
                return pa.array([bytes(raw).decode("utf-8") for raw in raws], arrow_type)
            if self.format == "json":
                return self._struct_array(list(map(json.loads, raws)), arrow_type)
            return self._struct_array(_unpack_each(raws), arrow_type)
        except (_Misfit, ValueError, TypeError, OverflowError):  # Arrow's errors are these
            pass
        return pa.array([self(raw, where(i)) for i, raw in enumerate(raws)], arrow_type)

    def _struct_array(self, values: list[Any], arrow_type: pa.DataType) -> pa.Array:
        kinds = set(map(type, values))
        if not kinds <= _MAP_OR_NULL:
            raise _Misfit("not every payload is a map")
        maps = values if _NULL not in kinds else [_NO_KEYS if v is None else v for v in values]
        arrays = []
        for (name, data_type, convert), field in zip(self._fields, arrow_type):
            column = [m.get(name) for m in maps]
            fast = _FAST_TYPES.get(type(data_type))
            if fast is None or not set(map(type, column)) <= fast:
                column = [convert(value) for value in column]
            arrays.append(pa.array(column, field.type))
        mask = pa.array([v is None for v in values]) if _NULL in kinds else None
        return pa.StructArray.from_arrays(arrays, fields=list(arrow_type), mask=mask)

    def _utf8(self, raw: bytes) -> str:
        return bytes(raw).decode("utf-8")

    def _json(self, raw: bytes) -> Any:
        return self._to_row(json.loads(raw))

    def _msgpack(self, raw: bytes) -> Any:
        return self._to_row(_unpack(raw))


def _unpack_each(raws: Sequence[bytes]) -> list[Any]:
    """Each payload's one msgpack object, as ``_unpack`` gives it, with one streaming
    unpacker over all of them (a third less CPU than an ``unpackb`` call each: no
    unpacker set up per payload).  Where every object ends is checked against where
    each payload ends, so a payload holding more or less than one object (or one that
    runs into the next) raises ``ValueError``, and the caller takes the row path, whose
    ``unpackb`` names the payload and why."""
    joined = b"".join(raws)
    unpacker = msgpack.Unpacker(raw=False, timestamp=3, max_buffer_size=max(1, len(joined)))
    unpacker.feed(joined)
    values: list[Any] = []
    ends: list[int] = []
    keep, end, tell = values.append, ends.append, unpacker.tell
    for value in unpacker:
        keep(value)
        end(tell())
    if ends != list(itertools.accumulate(map(len, raws))):
        raise ValueError("payloads are not one msgpack object each")
    return values


_unpack: Callable[[bytes], Any] = functools.partial(msgpack.unpackb, raw=False, timestamp=3)
"""One msgpack payload; its Timestamp extension as an aware UTC datetime (``timestamp=3``)."""


def _converter(data_type: DataType) -> Convert:
    """A function fitting one decoded JSON/msgpack value into ``data_type`` (or raising)."""
    if isinstance(data_type, StructType):
        names = [field.name for field in data_type.fields]
        converts = [_converter(field.dataType) for field in data_type.fields]
        pairs = list(zip(names, converts))

        def struct(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, Mapping):
                raise _Misfit(f"expected a map, got {type(value).__name__}")
            return tuple(convert(value.get(name)) for name, convert in pairs)

        return struct
    if isinstance(data_type, ArrayType):
        element = _converter(data_type.elementType)

        def array(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, list):
                raise _Misfit(f"expected an array, got {type(value).__name__}")
            return [element(item) for item in value]

        return array
    if isinstance(data_type, MapType):
        key, item = _converter(data_type.keyType), _converter(data_type.valueType)

        def mapping(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, Mapping):
                raise _Misfit(f"expected a map, got {type(value).__name__}")
            return [(key(k), item(v)) for k, v in value.items()]

        return mapping
    simple = _SIMPLE.get(type(data_type))
    if simple is None:
        raise SparkOptionError(f"payloadSchema: type {data_type.simpleString()} is not supported")
    return simple


def _nullable(check: Convert) -> Convert:
    def convert(value: Any) -> Any:
        return None if value is None else check(value)

    return convert


def _integer(bits: int) -> Convert:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Misfit(f"expected an integer, got {value!r}")
        if not low <= value <= high:
            raise _Misfit(f"{value} does not fit {bits} bits")
        return value

    return convert


def _double(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Misfit(f"expected a number, got {value!r}")
    return float(value)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Misfit(f"expected a string, got {value!r}")
    return value


def _binary(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray)):
        raise _Misfit(f"expected bytes, got {value!r}")
    return bytes(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Misfit(f"expected true or false, got {value!r}")
    return value


def _timestamp(value: Any) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.datetime.fromtimestamp(value, _UTC)  # seconds, as Spark's cast
        except (OverflowError, OSError, ValueError):  # past year 9999, or time_t's range
            raise _Misfit(f"{value!r} seconds is not a timestamp Spark can hold") from None
    if isinstance(value, str):
        try:
            parsed = datetime.datetime.fromisoformat(value)
        except ValueError:
            raise _Misfit(f"{value!r} is not an ISO 8601 timestamp") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=_UTC)
    raise _Misfit(f"expected a timestamp, got {value!r}")


def _date(value: Any) -> datetime.date:
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            raise _Misfit(f"{value!r} is not an ISO 8601 date") from None
    raise _Misfit(f"expected a date, got {value!r}")


_SIMPLE: dict[type, Convert] = {
    ByteType: _nullable(_integer(8)),
    ShortType: _nullable(_integer(16)),
    IntegerType: _nullable(_integer(32)),
    LongType: _nullable(_integer(64)),
    DoubleType: _nullable(_double),
    FloatType: _nullable(_double),
    StringType: _nullable(_string),
    BinaryType: _nullable(_binary),
    BooleanType: _nullable(_boolean),
    TimestampType: _nullable(_timestamp),
    DateType: _nullable(_date),
}


_NULL = type(None)
_MAP_OR_NULL = frozenset((dict, _NULL))
_NO_KEYS: dict[str, Any] = {}
_FAST_TYPES: dict[type, frozenset[type]] = {
    # Python types whose values pyarrow converts exactly as the converters above do
    # (or refuses, sending the batch down the row path).  Timestamps: json and msgpack
    # (timestamp=3) only ever make aware datetimes, which Arrow takes as the converter
    # leaves them.  Dates, and strings or numbers into timestamps, take the converters.
    ByteType: frozenset((int, _NULL)),
    ShortType: frozenset((int, _NULL)),
    IntegerType: frozenset((int, _NULL)),
    LongType: frozenset((int, _NULL)),
    DoubleType: frozenset((float, int, _NULL)),
    FloatType: frozenset((float, int, _NULL)),
    StringType: frozenset((str, _NULL)),
    BinaryType: frozenset((bytes, _NULL)),
    BooleanType: frozenset((bool, _NULL)),
    TimestampType: frozenset((datetime.datetime, _NULL)),
}
