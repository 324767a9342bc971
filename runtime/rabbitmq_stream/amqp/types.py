"""The AMQP 1.0 type system's Python side (OASIS AMQP 1.0 part 1 §1.6): the classes
for AMQP types that Python's own types leave ambiguous, and the errors.

``fail``, ``TYPE_NAMES``, ``type_name`` and ``short_repr`` serve the package's other
modules (error messages that say what is wrong and where).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal, NoReturn, TypeAlias

from wirestream.runtime.errors import DecodeError, EncodeError

__all__ = [
    "AmqpDecodeError",
    "AmqpEncodeError",
    "MAX_NESTING",
    "UByte",
    "UShort",
    "UInt",
    "ULong",
    "Byte",
    "Short",
    "Int",
    "Long",
    "Float",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Char",
    "Timestamp",
    "Symbol",
    "Described",
    "Array",
    "ArrayElementType",
]

MAX_NESTING = 64
"""Deepest nesting of lists, maps, arrays and described values either way (decision:
the spec sets no limit; 64 keeps recursion far from Python's own limit)."""


# --- errors ---------------------------------------------------------------------------


class AmqpDecodeError(DecodeError):
    """Bytes that are not a valid AMQP 1.0 value or message; ``offset`` is where."""

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(f"{message} (at byte offset {offset})")
        self.offset = offset


class AmqpEncodeError(EncodeError):
    """A value the AMQP 1.0 type system cannot carry (type, range or size)."""


# --- Python types for AMQP types that Python's own types leave ambiguous ---------------


class _TypedInt(int):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class UByte(_TypedInt):
    """ubyte: 0 .. 2**8-1 (§1.6.2)."""

    __slots__ = ()


class UShort(_TypedInt):
    """ushort: 0 .. 2**16-1 (§1.6.3)."""

    __slots__ = ()


class UInt(_TypedInt):
    """uint: 0 .. 2**32-1 (§1.6.4)."""

    __slots__ = ()


class ULong(_TypedInt):
    """ulong: 0 .. 2**64-1 (§1.6.5)."""

    __slots__ = ()


class Byte(_TypedInt):
    """byte: -2**7 .. 2**7-1 (§1.6.6)."""

    __slots__ = ()


class Short(_TypedInt):
    """short: -2**15 .. 2**15-1 (§1.6.7)."""

    __slots__ = ()


class Int(_TypedInt):
    """int: -2**31 .. 2**31-1 (§1.6.8)."""

    __slots__ = ()


class Long(_TypedInt):
    """long: -2**63 .. 2**63-1 (§1.6.9); what a plain ``int`` encodes as."""

    __slots__ = ()


class Timestamp(_TypedInt):
    """timestamp: 'an absolute point in time ... milliseconds since the unix epoch'
    (§1.6.20), a signed 64-bit integer."""

    __slots__ = ()

    @classmethod
    def from_datetime(cls, moment: datetime) -> Timestamp:
        """The timestamp of an aware datetime (a naive one is refused: which zone?)."""
        if moment.tzinfo is None:
            raise AmqpEncodeError("a naive datetime has no defined instant: give it a tzinfo")
        delta = moment - EPOCH
        return cls((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000)

    def to_datetime(self) -> datetime:
        """This instant as an aware UTC datetime."""
        return EPOCH + timedelta(milliseconds=int(self))


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Float(float):
    """float: IEEE 754-2008 binary32 (§1.6.10). A plain ``float`` is a double."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Float({float(self)!r})"


class FixedBytes(bytes):
    WIDTH = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({bytes(self)!r})"


class Decimal32(FixedBytes):
    """decimal32: IEEE 754-2008 decimal32 using the BID encoding (§1.6.12), raw bytes."""

    WIDTH = 4


class Decimal64(FixedBytes):
    """decimal64 (§1.6.13), raw 8 bytes."""

    WIDTH = 8


class Decimal128(FixedBytes):
    """decimal128 (§1.6.14), raw 16 bytes."""

    WIDTH = 16


class Char(str):
    """char: 'a single Unicode character' as UTF-32BE (§1.6.16)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Char({str(self)!r})"


class Symbol(str):
    """symbol: 'symbolic values from a constrained domain', seven-bit ASCII (§1.6.21)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str(self)!r})"


@dataclass(frozen=True, slots=True)
class Described:
    """A described type (§1.2): a descriptor (by convention a Symbol or ULong) that
    says what ``value`` means."""

    descriptor: object
    value: object


ArrayElementType: TypeAlias = Literal[
    "null", "boolean", "ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long",
    "float", "double", "decimal32", "decimal64", "decimal128", "char", "timestamp", "uuid",
    "binary", "string", "symbol", "list", "map", "array",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Array:
    """array (§1.6.24): 'a sequence of values of a single type', all behind one element
    constructor. With a ``descriptor`` (Symbol or ULong) the constructor is described
    and every item is the value the descriptor describes."""

    element_type: ArrayElementType
    items: tuple[object, ...]
    descriptor: str | int | None = None


def fail(message: str, offset: int) -> NoReturn:
    raise AmqpDecodeError(message, offset=offset)


TYPE_NAMES: dict[type, str] = {
    type(None): "null", bool: "boolean", UByte: "ubyte", UShort: "ushort", UInt: "uint",
    ULong: "ulong", Byte: "byte", Short: "short", Int: "int", Long: "long", Float: "float",
    float: "double", Decimal32: "decimal32", Decimal64: "decimal64", Decimal128: "decimal128",
    Char: "char", Timestamp: "timestamp", uuid.UUID: "uuid", bytes: "binary", str: "string",
    Symbol: "symbol", list: "list", dict: "map", Array: "array", Described: "described value",
    object: "value",
}  # fmt: skip


def type_name(value: object) -> str:
    """The AMQP type of a decoded value, for error messages."""
    return TYPE_NAMES.get(type(value), type(value).__name__)


def short_repr(value: object) -> str:
    """``repr(value)`` cut to a length fit for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
