"""MySQL text result-set rows (``Protocol::ResultsetRow``) to Python values, by the
column types the ColumnDefinition41 packets give.

The generated codec (``wirestream.generated.mysql.v10``) decodes a row, in the
``TEXT_ROWS`` phase, to its values as bytes; ``TextRowDecoder`` takes the columns once
(``TextRowDecoder(column_definitions)`` or ``TextRowDecoder.from_types``) and turns each
whole row packet (its 4-byte header included) into a tuple of values:

==================================================  ==================================
column type                                         value
==================================================  ==================================
TINY, SHORT, LONG, LONGLONG, INT24, YEAR            int
FLOAT, DOUBLE                                       float
DECIMAL, NEWDECIMAL                                 decimal.Decimal
BIT, GEOMETRY; any column of the binary charset 63  bytes
any other (strings, JSON, dates and times)          str (dates and times as MySQL
                                                    writes them)
==================================================  ==================================

NULL is None. A packet that is not a row of that many columns (an EOF, OK or ERR
packet too), or a value that is not one of its type, raises a ``ProtocolError``
(``InvalidValue``, ``InvalidString``, or what ``decode`` raises for a malformed packet).

Natively where ``wirestream.runtime._native`` is built (``make native``): the split and
the conversions in Rust (runtime/rust/wirestream-native/src/sql_rows.rs), one call per
row. A fast path, not a judge: a packet it does not find exactly right comes back here,
to the generated decoder and ``wirestream.runtime.rows.convert``, which return the values
or raise the precise error; both paths give the same values and the same errors
(tests/native/test_native_rows.py). ``WIRESTREAM_NATIVE=0`` switches it off.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from wirestream.generated.mysql.v10 import (
    ColumnDefinition,
    ColumnType,
    Context,
    Phase,
    TextRow,
    decode,
)
from wirestream.runtime.errors import InvalidValue
from wirestream.runtime.rows import Kind, converter, load_native

__all__ = ["TextRowDecoder", "BINARY_CHARSET", "column_kind", "native_text_row"]

BINARY_CHARSET: Final = 63
"""The character set number of binary columns (BLOB, BINARY, VARBINARY)."""

_KINDS: Final[dict[int, Kind]] = {
    ColumnType.TINY: Kind.INT,
    ColumnType.SHORT: Kind.INT,
    ColumnType.LONG: Kind.INT,
    ColumnType.LONGLONG: Kind.INT,
    ColumnType.INT24: Kind.INT,
    ColumnType.YEAR: Kind.INT,
    ColumnType.FLOAT: Kind.FLOAT,
    ColumnType.DOUBLE: Kind.FLOAT,
    ColumnType.DECIMAL: Kind.DECIMAL,
    ColumnType.NEWDECIMAL: Kind.DECIMAL,
    ColumnType.BIT: Kind.BYTES,
    ColumnType.GEOMETRY: Kind.BYTES,
}
_NUMBERS: Final = (Kind.INT, Kind.FLOAT, Kind.DECIMAL)

native_text_row: Final = load_native("mysql_text_row")
"""The native split and conversion of a text row, when built (``TextRowDecoder`` uses it)."""


def column_kind(column_type: int, character_set: int = 0) -> Kind:
    """How ``TextRowDecoder`` converts a column of this type and character set."""
    kind = _KINDS.get(column_type, Kind.STR)
    if character_set == BINARY_CHARSET and kind not in _NUMBERS:
        return Kind.BYTES
    return kind


class TextRowDecoder:
    """Text result-set row packets of one result set -> tuples of Python values."""

    __slots__ = ("kinds", "_kinds", "_ctx", "_native", "_convert")

    def __init__(self, columns: Iterable[ColumnDefinition]) -> None:
        """``columns``: the result's column definitions (their type and charset)."""
        self.kinds: tuple[Kind, ...] = tuple(
            column_kind(c.column_type, c.character_set) for c in columns
        )
        self._kinds = bytes(self.kinds)
        self._ctx = Context(phase=Phase.TEXT_ROWS, column_count=len(self.kinds))
        self._native = native_text_row
        self._convert = converter(self.kinds, "TextRow")

    @classmethod
    def from_types(
        cls, column_types: Sequence[int], character_sets: Sequence[int] = ()
    ) -> TextRowDecoder:
        """Columns of these types (``ColumnType``) and character sets (utf8mb4, 45, for
        every column when not given)."""
        if not character_sets:
            character_sets = [45] * len(column_types)
        elif len(character_sets) != len(column_types):
            raise ValueError(f"{len(character_sets)} charsets for {len(column_types)} columns")
        return cls(ColumnDefinition(column_type=t, character_set=c)
                   for t, c in zip(column_types, character_sets))  # fmt: skip

    def decode(self, data: bytes) -> tuple[Any, ...]:
        """The values of one whole row packet (its 4-byte header included)."""
        if self._native is not None:
            row: tuple[Any, ...] | None = self._native(data, self._kinds)
            if row is not None:
                return row
        return self.python_decode(data)

    def python_decode(self, data: bytes) -> tuple[Any, ...]:
        """``decode`` without the native path: the reference that decides errors."""
        frame = decode(data, self._ctx)
        if not isinstance(frame, TextRow):
            raise InvalidValue(f"a {type(frame).__name__} where a text row was expected")
        return tuple(self._convert(frame.values))

    def values(self, frame: TextRow) -> tuple[Any, ...]:
        """The values of a text row already decoded."""
        return tuple(self._convert(frame.values))
