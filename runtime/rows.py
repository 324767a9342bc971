"""Result-set values: the column kinds a row's values convert by and the Python conversion
of each, shared by ``wirestream.runtime.postgresql.rows`` (DataRow) and
``wirestream.runtime.mysql.rows`` (text result-set rows).

The Python conversions here are the authority: the native fast path
(runtime/rust/wirestream-native/src/sql_rows.rs) converts only what it converts exactly
as they do and hands every other row back to them, so a row reads the same values, or
raises the same error, on both paths (tests/native/test_native_rows.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from enum import IntEnum
from typing import Any

from wirestream.runtime._support import native_module
from wirestream.runtime.errors import InvalidString, InvalidValue

__all__ = ["Kind", "convert", "converter", "load_native"]


class Kind(IntEnum):
    """How a column's value becomes a Python value (the native code's numbers too)."""

    BYTES = 0
    """the bytes as they are"""
    STR = 1
    """UTF-8 text -> str"""
    INT = 2
    """decimal text -> int (``int()``)"""
    FLOAT = 3
    """decimal text -> float (``float()``: NaN and Infinity too)"""
    BOOL_TEXT = 4
    """PostgreSQL's text bool: ``t`` -> True, ``f`` -> False"""
    DECIMAL = 5
    """decimal text -> ``decimal.Decimal``"""
    BIN_INT2 = 6
    """big-endian signed integer of exactly 2 bytes (PostgreSQL binary format)"""
    BIN_INT4 = 7
    """... of exactly 4 bytes"""
    BIN_INT8 = 8
    """... of exactly 8 bytes"""
    BIN_FLOAT4 = 9
    """big-endian IEEE 754 single of exactly 4 bytes -> float"""
    BIN_FLOAT8 = 10
    """big-endian IEEE 754 double of exactly 8 bytes -> float"""
    BIN_BOOL = 11
    """one byte, 0 -> False, 1 -> True"""


def _text(raw: bytes) -> str:
    return raw.decode("utf-8")


def _bool_text(raw: bytes) -> bool:
    if raw == b"t":
        return True
    if raw == b"f":
        return False
    raise ValueError("neither t nor f")


def _bool_binary(raw: bytes) -> bool:
    if raw == b"\x01":
        return True
    if raw == b"\x00":
        return False
    raise ValueError("neither 0 nor 1")


def _unpacker(fmt: str) -> Callable[[bytes], Any]:
    layout = struct.Struct(fmt)

    def unpack(raw: bytes) -> Any:
        if len(raw) != layout.size:
            raise ValueError(f"{len(raw)} bytes, not {layout.size}")
        return layout.unpack(raw)[0]

    return unpack


# Kind -> the conversion of a value's bytes (ValueError, UnicodeDecodeError or
# decimal.InvalidOperation when the bytes are not one)
CONVERSIONS: dict[Kind, Callable[[bytes], Any]] = {
    Kind.BYTES: bytes,
    Kind.STR: _text,
    Kind.INT: lambda raw: int(_text(raw)),
    Kind.FLOAT: lambda raw: float(_text(raw)),
    Kind.BOOL_TEXT: _bool_text,
    Kind.DECIMAL: lambda raw: Decimal(_text(raw)),
    Kind.BIN_INT2: _unpacker(">h"),
    Kind.BIN_INT4: _unpacker(">i"),
    Kind.BIN_INT8: _unpacker(">q"),
    Kind.BIN_FLOAT4: _unpacker(">f"),
    Kind.BIN_FLOAT8: _unpacker(">d"),
    Kind.BIN_BOOL: _bool_binary,
}


def convert(kinds: Sequence[Kind], values: Sequence[bytes | None], what: str) -> list[Any]:
    """``values`` (None: SQL NULL) converted by ``kinds``, one each. ``InvalidValue`` when
    the counts differ or a value is not one of its kind (``InvalidString``: not UTF-8);
    ``what`` names the message in the error."""
    if len(values) != len(kinds):
        raise InvalidValue(f"{what}: {len(values)} values for {len(kinds)} columns")
    out: list[Any] = []
    for column, (kind, raw) in enumerate(zip(kinds, values)):
        if raw is None:
            out.append(None)
            continue
        try:
            out.append(CONVERSIONS[kind](raw))
        except UnicodeDecodeError:
            raise InvalidString(f"{what}: column {column} ({kind.name}) is not UTF-8") from None
        except (ValueError, InvalidOperation, OverflowError):
            raise InvalidValue(
                f"{what}: column {column} is not a {kind.name} value: {raw[:40]!r}"
            ) from None
    return out


_FAILURES = (UnicodeDecodeError, ValueError, InvalidOperation, OverflowError)


def converter(kinds: Sequence[Kind], what: str) -> Callable[[Sequence[bytes | None]], list[Any]]:
    """``convert`` for these kinds, the conversions looked up once: a row that converts
    is one list comprehension; one that does not goes through ``convert``, which names
    the column and raises its error."""
    kinds = tuple(kinds)
    functions = [CONVERSIONS[kind] for kind in kinds]
    count = len(functions)

    def run(values: Sequence[bytes | None]) -> list[Any]:
        if len(values) == count:
            try:
                return [None if v is None else f(v) for f, v in zip(functions, values)]
            except _FAILURES:
                pass
        return convert(kinds, values, what)

    return run


def load_native(name: str) -> Callable[[Any, bytes], Any] | None:
    """The extension's function ``name`` (``data, kinds`` -> values or None); None where
    ``wirestream.runtime._native`` is not built (or built before it had one) or
    ``WIRESTREAM_NATIVE=0``."""
    _native = native_module()
    function: Callable[[Any, bytes], Any] | None = getattr(_native, name, None)
    return function
