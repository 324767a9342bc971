"""PostgreSQL DataRow messages to Python values, by the types a RowDescription gives.

The generated codec (``wirestream.generated.postgresql.v3``) decodes a DataRow to its
values as bytes; a client wants them as Python values. ``RowDecoder`` takes the row's
column types once (``RowDecoder(row_description.fields)`` or ``RowDecoder.from_types``)
and then turns each whole DataRow message into a list of values:

============================================  ==================  ====================
type (OID)                                    text format (0)     binary format (1)
============================================  ==================  ====================
int2 (21), int4 (23), int8 (20)               int                 int
oid (26)                                      int                 bytes
float4 (700), float8 (701)                    float               float
bool (16)                                     bool (``t``/``f``)  bool (0/1)
numeric (1700)                                decimal.Decimal     bytes
text (25), varchar (1043), name (19),         str                 str
bpchar (1042), char (18)
bytea (17)                                    str (``\\x..``)     bytes
any other                                     str                 bytes
============================================  ==================  ====================

NULL is None. A message that is not a DataRow of that many columns, or a value that is
not one of its type, raises a ``ProtocolError`` (``InvalidValue``, ``InvalidString``, or
what ``decode`` raises for a malformed message).

Natively where ``wirestream.runtime._native`` is built (``make native``): the split and
the conversions in Rust (runtime/rust/wirestream-native/src/sql_rows.rs), one call per
row. It is a fast path, not a judge: a row it does not find exactly right comes back
here, to the generated decoder and ``wirestream.runtime.rows.convert``, which return the
values or raise the precise error, so both paths give the same values and the same
errors (tests/native/test_native_rows.py). ``WIRESTREAM_NATIVE=0`` switches it off.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from wirestream.generated.postgresql.v3 import DataRow, FieldDescription, FormatCode, decode
from wirestream.runtime.errors import InvalidValue
from wirestream.runtime.rows import Kind, converter, load_native

__all__ = ["RowDecoder", "column_kind", "native_data_row"]

_TEXT: Final = {
    16: Kind.BOOL_TEXT,
    20: Kind.INT,
    21: Kind.INT,
    23: Kind.INT,
    26: Kind.INT,
    700: Kind.FLOAT,
    701: Kind.FLOAT,
    1700: Kind.DECIMAL,
}
_BINARY: Final = {
    16: Kind.BIN_BOOL,
    17: Kind.BYTES,
    18: Kind.STR,
    19: Kind.STR,
    20: Kind.BIN_INT8,
    21: Kind.BIN_INT2,
    23: Kind.BIN_INT4,
    25: Kind.STR,
    700: Kind.BIN_FLOAT4,
    701: Kind.BIN_FLOAT8,
    1042: Kind.STR,
    1043: Kind.STR,
}

native_data_row: Final = load_native("postgresql_data_row")
"""The native split and conversion of a DataRow, when built (``RowDecoder`` uses it)."""


def column_kind(type_oid: int, format_code: int = 0) -> Kind:
    """How ``RowDecoder`` converts a column of this type and format (the table above)."""
    if format_code == FormatCode.TEXT:
        return _TEXT.get(type_oid, Kind.STR)
    return _BINARY.get(type_oid, Kind.BYTES)


class RowDecoder:
    """DataRow messages of one result set -> lists of Python values."""

    __slots__ = ("kinds", "_kinds", "_native", "_convert")

    def __init__(self, fields: Iterable[FieldDescription]) -> None:
        """``fields``: the result's RowDescription fields (their type OID and format)."""
        self.kinds: tuple[Kind, ...] = tuple(column_kind(f.type_oid, f.format) for f in fields)
        self._kinds = bytes(self.kinds)
        self._native = native_data_row
        self._convert = converter(self.kinds, "DataRow")

    @classmethod
    def from_types(cls, type_oids: Sequence[int], formats: Sequence[int] = ()) -> RowDecoder:
        """Columns of these type OIDs, in text format unless ``formats`` says (one
        format for all when it has one element, as Bind's result formats)."""
        if len(formats) == 1:
            formats = list(formats) * len(type_oids)
        elif not formats:
            formats = [FormatCode.TEXT] * len(type_oids)
        elif len(formats) != len(type_oids):
            raise ValueError(f"{len(formats)} formats for {len(type_oids)} columns")
        return cls(FieldDescription(type_oid=t, format=FormatCode(f))
                   for t, f in zip(type_oids, formats))  # fmt: skip

    def decode(self, data: bytes) -> list[Any]:
        """The values of one whole DataRow message (type byte and length included)."""
        if self._native is not None:
            row: list[Any] | None = self._native(data, self._kinds)
            if row is not None:
                return row
        return self.python_decode(data)

    def python_decode(self, data: bytes) -> list[Any]:
        """``decode`` without the native path: the reference that decides errors."""
        frame = decode(data, None, "server")
        if not isinstance(frame, DataRow):
            raise InvalidValue(f"a {type(frame).__name__} where a DataRow was expected")
        return self._convert(frame.values)

    def values(self, frame: DataRow) -> list[Any]:
        """The values of a DataRow already decoded."""
        return self._convert(frame.values)
