"""AMQP 1.0 messages: the format RabbitMQ streams store each message in.

A stream message is an AMQP 1.0 message (OASIS AMQP 1.0 part 3 §3.2): a sequence of
described sections, each encoded with the type system of part 1 §1.6. This module has

- the type system (§1.6): ``encode_value`` / ``decode_value`` between one encoded
  value and Python (mapping below);
- the message (§3.2): ``AmqpMessage`` and ``encode_message`` / ``decode_message``;
- the hot path: ``encode_body`` (a message that is one Data section) and
  ``decode_body`` (the Data payload of a message, sliced without a full decode when
  the message is one Data section).

Python mapping (decoding gives the left column; encoding also accepts the right one):

    null                 None
    boolean              bool
    ubyte/ushort/uint/ulong, byte/short/int/long
                         UByte/UShort/UInt/ULong, Byte/Short/Int/Long (int subclasses);
                         a plain ``int`` encodes as long
    float / double       Float (a float subclass) / float
    decimal32/64/128     Decimal32/Decimal64/Decimal128 (bytes subclasses, raw IEEE 754)
    char                 Char (a one-character str subclass)
    timestamp            Timestamp (an int subclass: ms since the epoch); aware datetime
    uuid                 uuid.UUID
    binary               bytes; bytearray, memoryview
    string               str
    symbol               Symbol (a str subclass, ASCII)
    list                 list; tuple
    map                  dict
    array                Array(element_type, items[, descriptor])
    described            Described(descriptor, value)

Errors: malformed bytes raise ``AmqpDecodeError`` (a ``wirestream.runtime.errors.DecodeError``)
naming what is wrong and at which byte offset; values that cannot be encoded raise
``AmqpEncodeError`` (a ``wirestream.runtime.errors.EncodeError``). Nothing is allocated from a
length or count before the input has been checked to hold that many bytes.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
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
    "Header",
    "Properties",
    "MessageId",
    "Annotations",
    "Data",
    "AmqpSequence",
    "AmqpValue",
    "Body",
    "AmqpMessage",
    "encode_value",
    "decode_value",
    "encode_message",
    "decode_message",
    "encode_body",
    "decode_body",
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
        delta = moment - _EPOCH
        return cls((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000)

    def to_datetime(self) -> datetime:
        """This instant as an aware UTC datetime."""
        return _EPOCH + timedelta(milliseconds=int(self))


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Float(float):
    """float: IEEE 754-2008 binary32 (§1.6.10). A plain ``float`` is a double."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Float({float(self)!r})"


class _FixedBytes(bytes):
    WIDTH = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({bytes(self)!r})"


class Decimal32(_FixedBytes):
    """decimal32: IEEE 754-2008 decimal32 using the BID encoding (§1.6.12), raw bytes."""

    WIDTH = 4


class Decimal64(_FixedBytes):
    """decimal64 (§1.6.13), raw 8 bytes."""

    WIDTH = 8


class Decimal128(_FixedBytes):
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


# --- format codes (part 1 §1.6) ----------------------------------------------------------

_NULL, _TRUE, _FALSE, _UINT0, _ULONG0, _LIST0 = 0x40, 0x41, 0x42, 0x43, 0x44, 0x45
_UBYTE, _BYTE, _SMALLUINT, _SMALLULONG, _SMALLINT, _SMALLLONG, _BOOLEAN = range(0x50, 0x57)
_USHORT, _SHORT = 0x60, 0x61
_UINT, _INT, _FLOAT, _CHAR, _DECIMAL32 = 0x70, 0x71, 0x72, 0x73, 0x74
_ULONG, _LONG, _DOUBLE, _TIMESTAMP, _DECIMAL64 = 0x80, 0x81, 0x82, 0x83, 0x84
_DECIMAL128, _UUID = 0x94, 0x98
_VBIN8, _STR8, _SYM8, _VBIN32, _STR32, _SYM32 = 0xA0, 0xA1, 0xA3, 0xB0, 0xB1, 0xB3
_LIST8, _MAP8, _LIST32, _MAP32 = 0xC0, 0xC1, 0xD0, 0xD1
_ARRAY8, _ARRAY32 = 0xE0, 0xF0
_DESCRIBED = 0x00

_U8 = struct.Struct(">B")
_I8 = struct.Struct(">b")
_U16 = struct.Struct(">H")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")


# --- decoding -------------------------------------------------------------------------


def _fail(message: str, offset: int) -> NoReturn:
    raise AmqpDecodeError(message, offset=offset)


def _decode_char(raw: bytes, at: int) -> Char:
    point = int.from_bytes(raw, "big")
    if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
        _fail(f"char U+{point:X} is not a Unicode scalar value", at)
    return Char(chr(point))


def _decode_boolean(raw: bytes, at: int) -> bool:
    # §1.6.1: 'boolean with the octet 0x00 being false and octet 0x01 being true'
    if raw == b"\x01":
        return True
    if raw == b"\x00":
        return False
    _fail(f"boolean octet 0x{raw[0]:02x} is neither 0x00 nor 0x01", at)


_FixedDecoder = Callable[[bytes, int], object]

# Fixed-width encodings: format code -> (width, name, bytes -> value).
_FIXED: dict[int, tuple[int, ArrayElementType, _FixedDecoder]] = {
    _NULL: (0, "null", lambda raw, at: None),
    _TRUE: (0, "boolean", lambda raw, at: True),
    _FALSE: (0, "boolean", lambda raw, at: False),
    _UINT0: (0, "uint", lambda raw, at: UInt(0)),
    _ULONG0: (0, "ulong", lambda raw, at: ULong(0)),
    _LIST0: (0, "list", lambda raw, at: []),
    _UBYTE: (1, "ubyte", lambda raw, at: UByte(raw[0])),
    _BYTE: (1, "byte", lambda raw, at: Byte(int.from_bytes(raw, "big", signed=True))),
    _SMALLUINT: (1, "uint", lambda raw, at: UInt(raw[0])),
    _SMALLULONG: (1, "ulong", lambda raw, at: ULong(raw[0])),
    _SMALLINT: (1, "int", lambda raw, at: Int(int.from_bytes(raw, "big", signed=True))),
    _SMALLLONG: (1, "long", lambda raw, at: Long(int.from_bytes(raw, "big", signed=True))),
    _BOOLEAN: (1, "boolean", _decode_boolean),
    _USHORT: (2, "ushort", lambda raw, at: UShort(_U16.unpack(raw)[0])),
    _SHORT: (2, "short", lambda raw, at: Short(_I16.unpack(raw)[0])),
    _UINT: (4, "uint", lambda raw, at: UInt(_U32.unpack(raw)[0])),
    _INT: (4, "int", lambda raw, at: Int(_I32.unpack(raw)[0])),
    _FLOAT: (4, "float", lambda raw, at: Float(_F32.unpack(raw)[0])),
    _CHAR: (4, "char", _decode_char),
    _DECIMAL32: (4, "decimal32", lambda raw, at: Decimal32(raw)),
    _ULONG: (8, "ulong", lambda raw, at: ULong(_U64.unpack(raw)[0])),
    _LONG: (8, "long", lambda raw, at: Long(_I64.unpack(raw)[0])),
    _DOUBLE: (8, "double", lambda raw, at: _F64.unpack(raw)[0]),
    _TIMESTAMP: (8, "timestamp", lambda raw, at: Timestamp(_I64.unpack(raw)[0])),
    _DECIMAL64: (8, "decimal64", lambda raw, at: Decimal64(raw)),
    _DECIMAL128: (16, "decimal128", lambda raw, at: Decimal128(raw)),
    _UUID: (16, "uuid", lambda raw, at: uuid.UUID(bytes=raw)),
}

# Variable-width encodings: format code -> (width of the size, name).
_VARIABLE: dict[int, tuple[int, ArrayElementType]] = {
    _VBIN8: (1, "binary"),
    _STR8: (1, "string"),
    _SYM8: (1, "symbol"),
    _VBIN32: (4, "binary"),
    _STR32: (4, "string"),
    _SYM32: (4, "symbol"),
}

# Compound and array encodings: format code -> (width of size and count, name).
_COMPOUND: dict[int, tuple[int, ArrayElementType]] = {
    _LIST8: (1, "list"),
    _LIST32: (4, "list"),
    _MAP8: (1, "map"),
    _MAP32: (4, "map"),
    _ARRAY8: (1, "array"),
    _ARRAY32: (4, "array"),
}


@dataclass(frozen=True, slots=True)
class _DescribedConstructor:
    """'constructor = format-code / %x00 descriptor constructor' (§1.2)."""

    descriptor: object
    inner: int | _DescribedConstructor


_Constructor: TypeAlias = "int | _DescribedConstructor"


class _Reader:
    """One pass over ``data``: every method takes the position to read at and the end
    that the enclosing value (or the input) allows, and returns the next position."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def size(self, pos: int, width: int, end: int, what: str) -> int:
        if pos + width > end:
            _fail(f"{what} needs {width} bytes, {max(end - pos, 0)} remain", pos)
        if width == 1:
            return self.data[pos]
        return int.from_bytes(self.data[pos : pos + 4], "big")

    def constructor(self, pos: int, end: int, depth: int) -> tuple[_Constructor, int]:
        if pos >= end:
            _fail("a value's constructor is missing: no bytes remain", pos)
        code = self.data[pos]
        if code != _DESCRIBED:
            return code, pos + 1
        if depth >= MAX_NESTING:
            _fail(f"described values nest deeper than {MAX_NESTING}", pos)
        descriptor, pos = self.value(pos + 1, end, depth + 1)
        inner, pos = self.constructor(pos, end, depth + 1)
        return _DescribedConstructor(descriptor, inner), pos

    def value(self, pos: int, end: int, depth: int) -> tuple[object, int]:
        constructor, body = self.constructor(pos, end, depth)
        return self.body(constructor, pos, body, end, depth)

    def body(
        self, constructor: _Constructor, at: int, pos: int, end: int, depth: int
    ) -> tuple[object, int]:
        """The value after ``constructor`` (found at ``at``) whose bytes start at pos."""
        if not isinstance(constructor, int):
            value, pos = self.body(constructor.inner, at, pos, end, depth)
            return Described(constructor.descriptor, value), pos
        fixed = _FIXED.get(constructor)
        if fixed is not None:
            width, name, convert = fixed
            if pos + width > end:
                _fail(f"{name} (0x{constructor:02x}) needs {width} bytes, {end - pos} remain", at)
            return convert(self.data[pos : pos + width], at), pos + width
        variable = _VARIABLE.get(constructor)
        if variable is not None:
            return self._variable(constructor, variable[0], variable[1], at, pos, end)
        compound = _COMPOUND.get(constructor)
        if compound is not None:
            if depth >= MAX_NESTING:
                _fail(f"lists, maps and arrays nest deeper than {MAX_NESTING}", at)
            width, name = compound
            size = self.size(pos, width, end, f"the size of a {name}")
            pos += width
            if size < width:
                _fail(f"{name} size {size} is below the {width} bytes of its count", at)
            if pos + size > end:
                _fail(f"{name} size {size} exceeds the {end - pos} bytes that remain", at)
            stop = pos + size
            count = self.size(pos, width, stop, f"the count of a {name}")
            pos += width
            if name == "array":
                return self._array(count, at, pos, stop, depth + 1), stop
            if count > stop - pos:
                _fail(f"{name} count {count} exceeds the {stop - pos} bytes of its items", at)
            if name == "list":
                return self._list(count, at, pos, stop, depth + 1), stop
            return self._map(count, at, pos, stop, depth + 1), stop
        _fail(f"unknown format code 0x{constructor:02x}", at)

    def _variable(
        self, code: int, width: int, name: str, at: int, pos: int, end: int
    ) -> tuple[object, int]:
        length = self.size(pos, width, end, f"the length of a {name}")
        pos += width
        if length > end - pos:
            _fail(
                f"{name} (0x{code:02x}) length {length} exceeds the {end - pos} bytes "
                "that remain",
                at,
            )
        raw = self.data[pos : pos + length]
        if name == "binary":
            return raw, pos + length
        try:
            if name == "string":
                return raw.decode("utf-8"), pos + length
            return Symbol(raw.decode("ascii")), pos + length
        except UnicodeDecodeError as exc:
            encoding = "UTF-8" if name == "string" else "ASCII"
            _fail(f"{name} is not valid {encoding}: {exc.reason} at its byte {exc.start}", at)

    def _list(self, count: int, at: int, pos: int, stop: int, depth: int) -> list[object]:
        items: list[object] = []
        for _ in range(count):
            item, pos = self.value(pos, stop, depth)
            items.append(item)
        if pos != stop:
            _fail(f"list of {count} items ends {stop - pos} bytes before its size says", at)
        return items

    def _map(self, count: int, at: int, pos: int, stop: int, depth: int) -> dict[object, object]:
        # §1.6.23: 'the count ... is the number of keys plus the number of values'
        if count % 2:
            _fail(f"map count {count} is odd: keys and values come in pairs", at)
        entries: dict[object, object] = {}
        for _ in range(count // 2):
            key_at = pos
            key, pos = self.value(pos, stop, depth)
            value, pos = self.value(pos, stop, depth)
            try:
                if key in entries:
                    _fail(f"map key {_short(key)} appears twice (or equals an earlier key)", key_at)
                entries[key] = value
            except TypeError:
                _fail(f"map key of type {type(key).__name__} is not hashable in Python", key_at)
        if pos != stop:
            _fail(f"map of {count} items ends {stop - pos} bytes before its size says", at)
        return entries

    def _array(self, count: int, at: int, pos: int, stop: int, depth: int) -> Array:
        # §1.6.24 / §1.2: array = size count element-constructor *(element data)
        constructor_at = pos
        constructor, pos = self.constructor(pos, stop, depth)
        descriptor: str | int | None = None
        code = constructor
        if not isinstance(code, int):
            if not isinstance(code.descriptor, (Symbol, ULong)):
                _fail("array element descriptor is not a symbol or ulong", constructor_at)
            descriptor = code.descriptor
            if not isinstance(code.inner, int):
                _fail("array element constructor with two descriptors", constructor_at)
            code = code.inner
        name = _element_type_name(code)
        if name is None:
            _fail(f"unknown array element format code 0x{code:02x}", constructor_at)
        width = _FIXED[code][0] if code in _FIXED else 1
        # Every element takes at least `width` bytes; zero-width elements (null, true,
        # false, uint0, ulong0, list0) take none, so their count is bounded by the input
        # size instead (decision: no allocation beyond the input's own length).
        limit = (stop - pos) // width if width else len(self.data)
        if count > limit:
            _fail(f"array count {count} exceeds what its {stop - pos} bytes can hold", at)
        items: list[object] = []
        for _ in range(count):
            item, pos = self.body(code, constructor_at, pos, stop, depth)
            items.append(item)
        if pos != stop:
            _fail(f"array of {count} items ends {stop - pos} bytes before its size says", at)
        return Array(name, tuple(items), descriptor)


def _element_type_name(code: int) -> ArrayElementType | None:
    for table in (_FIXED, _VARIABLE, _COMPOUND):
        entry = table.get(code)
        if entry is not None:
            return entry[1]
    return None


def decode_value(data: bytes) -> object:
    """The one AMQP value ``data`` holds (trailing bytes are an error)."""
    value, pos = _Reader(data).value(0, len(data), 0)
    if pos != len(data):
        _fail(f"{len(data) - pos} bytes follow the value", pos)
    return value


# --- encoding -------------------------------------------------------------------------


def _range_error(value: int, name: str) -> AmqpEncodeError:
    return AmqpEncodeError(f"{value} is out of range for {name}")


def _sized(out: bytearray, small: int, large: int, raw: bytes, name: str) -> None:
    length = len(raw)
    if length < 256:
        out += bytes((small, length))
    elif length < 1 << 32:
        out.append(large)
        out += _U32.pack(length)
    else:
        raise AmqpEncodeError(f"{name} of {length} bytes exceeds 2**32-1")
    out += raw


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AmqpEncodeError(f"string is not encodable as UTF-8: {exc.reason}") from None


def _ascii(text: str) -> bytes:
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:
        raise AmqpEncodeError(f"symbol {text!r} is not seven-bit ASCII") from None


def _compound(out: bytearray, small: int, large: int, count: int, payload: bytes) -> None:
    # list8/map8/array8: 'up to 2^8 - 1 ... elements with total size less than 2^8
    # octets'; the size counts the count field and the items.
    if count < 256 and len(payload) + 1 < 256:
        out += bytes((small, len(payload) + 1, count))
    elif len(payload) + 4 < 1 << 32:
        out.append(large)
        out += _U32.pack(len(payload) + 4)
        out += _U32.pack(count)
    else:
        raise AmqpEncodeError(f"compound of {len(payload)} bytes exceeds 2**32-1")
    out += payload


def _encode_int(out: bytearray, value: int) -> None:
    kind = type(value)
    if kind is UInt:
        if value == 0:
            out.append(_UINT0)
        elif 0 < value < 256:
            out += bytes((_SMALLUINT, value))
        elif 0 < value < 1 << 32:
            out.append(_UINT)
            out += _U32.pack(value)
        else:
            raise _range_error(value, "uint")
    elif kind is ULong:
        if value == 0:
            out.append(_ULONG0)
        elif 0 < value < 256:
            out += bytes((_SMALLULONG, value))
        elif 0 < value < 1 << 64:
            out.append(_ULONG)
            out += _U64.pack(value)
        else:
            raise _range_error(value, "ulong")
    elif kind is Int:
        if -128 <= value < 128:
            out += bytes((_SMALLINT, value & 0xFF))
        elif -(1 << 31) <= value < 1 << 31:
            out.append(_INT)
            out += _I32.pack(value)
        else:
            raise _range_error(value, "int")
    elif kind is Timestamp:
        _fixed_int(out, _TIMESTAMP, _I64, value, "timestamp")
    elif kind is UByte:
        _fixed_int(out, _UBYTE, _U8, value, "ubyte")
    elif kind is UShort:
        _fixed_int(out, _USHORT, _U16, value, "ushort")
    elif kind is Byte:
        _fixed_int(out, _BYTE, _I8, value, "byte")
    elif kind is Short:
        _fixed_int(out, _SHORT, _I16, value, "short")
    elif -128 <= value < 128:  # Long or a plain int
        out += bytes((_SMALLLONG, value & 0xFF))
    elif -(1 << 63) <= value < 1 << 63:
        out.append(_LONG)
        out += _I64.pack(value)
    else:
        raise _range_error(value, "long")


def _fixed_int(out: bytearray, code: int, packer: struct.Struct, value: int, name: str) -> None:
    try:
        packed = packer.pack(value)
    except struct.error:
        raise _range_error(value, name) from None
    out.append(code)
    out += packed


def _encode(out: bytearray, value: object, depth: int) -> None:
    if value is None:
        out.append(_NULL)
    elif value is True:
        out.append(_TRUE)
    elif value is False:
        out.append(_FALSE)
    elif isinstance(value, int):
        _encode_int(out, value)
    elif isinstance(value, str):
        if isinstance(value, Symbol):
            _sized(out, _SYM8, _SYM32, _ascii(value), "symbol")
        elif isinstance(value, Char):
            out.append(_CHAR)
            out += _char_bytes(value)
        else:
            _sized(out, _STR8, _STR32, _utf8(value), "string")
    elif isinstance(value, float):
        if isinstance(value, Float):
            out.append(_FLOAT)
            out += _float32(value)
        else:
            out.append(_DOUBLE)
            out += _F64.pack(value)
    elif isinstance(value, _FixedBytes):
        out.append({4: _DECIMAL32, 8: _DECIMAL64, 16: _DECIMAL128}[value.WIDTH])
        out += _decimal_bytes(value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        _sized(out, _VBIN8, _VBIN32, bytes(value), "binary")
    elif isinstance(value, uuid.UUID):
        out.append(_UUID)
        out += value.bytes
    elif isinstance(value, datetime):
        _encode_int(out, Timestamp.from_datetime(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append(_LIST0)  # list0: fixed width, nests nothing
            return
        _check_depth(depth)
        payload = bytearray()
        for item in value:
            _encode(payload, item, depth + 1)
        _compound(out, _LIST8, _LIST32, len(value), bytes(payload))
    elif isinstance(value, dict):
        _check_depth(depth)
        payload = bytearray()
        for key, item in value.items():
            _encode(payload, key, depth + 1)
            _encode(payload, item, depth + 1)
        _compound(out, _MAP8, _MAP32, 2 * len(value), bytes(payload))
    elif isinstance(value, Array):
        _check_depth(depth)
        _compound(out, _ARRAY8, _ARRAY32, len(value.items), _array_payload(value, depth + 1))
    elif isinstance(value, Described):
        _check_depth(depth)
        out.append(_DESCRIBED)
        _encode(out, value.descriptor, depth + 1)
        _encode(out, value.value, depth + 1)
    else:
        raise AmqpEncodeError(f"no AMQP type for a value of type {type(value).__name__}")


def _check_depth(depth: int) -> None:
    if depth >= MAX_NESTING:
        raise AmqpEncodeError(
            f"lists, maps, arrays and described values nest deeper than {MAX_NESTING}"
        )


def _char_bytes(value: str) -> bytes:
    if len(value) != 1 or 0xD800 <= ord(value) <= 0xDFFF:
        raise AmqpEncodeError(f"char {value!r} is not one Unicode scalar value")
    return ord(value).to_bytes(4, "big")


def _float32(value: float) -> bytes:
    try:
        return _F32.pack(value)
    except OverflowError:
        raise AmqpEncodeError(f"{value!r} is out of range for float (binary32)") from None


def _decimal_bytes(value: object) -> bytes:
    if not isinstance(value, _FixedBytes) or len(value) != value.WIDTH:
        raise AmqpEncodeError(f"{value!r} is not {getattr(value, 'WIDTH', '?')} raw bytes")
    return bytes(value)


# Array element encodings: element type -> (format code, bytes of one element). The
# widest fixed encoding, so that every element fits the one constructor.
def _element_encoder(
    code: int, packer: struct.Struct, name: str, kind: type
) -> tuple[int, Callable[[object], bytes]]:
    def encode(item: object) -> bytes:
        if not isinstance(item, kind) or isinstance(item, bool) != (kind is bool):
            raise AmqpEncodeError(f"array of {name} holds a {type(item).__name__}")
        try:
            return packer.pack(item)
        except (struct.error, OverflowError):
            raise AmqpEncodeError(f"{item!r} is out of range for {name}") from None

    return code, encode


def _typed(kind: type, name: str, convert: Callable[[object], bytes]) -> Callable[[object], bytes]:
    def encode(item: object) -> bytes:
        if not isinstance(item, kind):
            raise AmqpEncodeError(f"array of {name} holds a {type(item).__name__}")
        return convert(item)

    return encode


def _null_element(item: object) -> bytes:
    if item is not None:
        raise AmqpEncodeError(f"array of null holds a {type(item).__name__}")
    return b""


def _float32_element(item: object) -> bytes:
    assert isinstance(item, float)  # checked by _typed
    return _float32(item)


def _char_element(item: object) -> bytes:
    assert isinstance(item, str)  # checked by _typed
    return _char_bytes(item)


def _uuid_element(item: object) -> bytes:
    assert isinstance(item, uuid.UUID)  # checked by _typed
    return item.bytes


def _timestamp_element(item: object) -> bytes:
    if isinstance(item, datetime):
        item = Timestamp.from_datetime(item)
    if not isinstance(item, int) or isinstance(item, bool):
        raise AmqpEncodeError(f"array of timestamp holds a {type(item).__name__}")
    try:
        return _I64.pack(item)
    except struct.error:
        raise _range_error(item, "timestamp") from None


_FIXED_ELEMENTS: dict[str, tuple[int, Callable[[object], bytes]]] = {
    "null": (_NULL, _null_element),
    "boolean": _element_encoder(_BOOLEAN, struct.Struct(">?"), "boolean", bool),
    "ubyte": _element_encoder(_UBYTE, _U8, "ubyte", int),
    "ushort": _element_encoder(_USHORT, _U16, "ushort", int),
    "uint": _element_encoder(_UINT, _U32, "uint", int),
    "ulong": _element_encoder(_ULONG, _U64, "ulong", int),
    "byte": _element_encoder(_BYTE, _I8, "byte", int),
    "short": _element_encoder(_SHORT, _I16, "short", int),
    "int": _element_encoder(_INT, _I32, "int", int),
    "long": _element_encoder(_LONG, _I64, "long", int),
    "float": (_FLOAT, _typed(float, "float", _float32_element)),
    "double": _element_encoder(_DOUBLE, _F64, "double", float),
    "decimal32": (_DECIMAL32, _typed(Decimal32, "decimal32", _decimal_bytes)),
    "decimal64": (_DECIMAL64, _typed(Decimal64, "decimal64", _decimal_bytes)),
    "decimal128": (_DECIMAL128, _typed(Decimal128, "decimal128", _decimal_bytes)),
    "char": (_CHAR, _typed(str, "char", _char_element)),
    "timestamp": (_TIMESTAMP, _timestamp_element),
    "uuid": (_UUID, _typed(uuid.UUID, "uuid", _uuid_element)),
}


def _array_payload(array: Array, depth: int) -> bytes:
    """Element constructor and elements (without the size and count)."""
    out = bytearray()
    if array.descriptor is not None:
        if not isinstance(array.descriptor, (str, int)) or isinstance(array.descriptor, bool):
            raise AmqpEncodeError("an array descriptor is a symbol or a ulong")
        out.append(_DESCRIBED)
        descriptor = array.descriptor
        if isinstance(descriptor, str):
            _encode(out, Symbol(descriptor), depth)
        else:
            _encode(out, ULong(descriptor), depth)
    name = array.element_type
    fixed = _FIXED_ELEMENTS.get(name)
    if fixed is not None:
        code, encode_element = fixed
        out.append(code)
        for item in array.items:
            out += encode_element(item)
        return bytes(out)
    # Variable, compound and nested arrays: each element encoded whole with its own
    # constructor, then re-headed with the small or large constructor shared by all.
    bodies = [_element_body(name, item, depth) for item in array.items]
    small, large = _ELEMENT_CODES.get(name, (None, None))
    if small is None or large is None:
        raise AmqpEncodeError(f"no AMQP array element type {name!r}")
    fits_small = all(_fits_small(name, count, raw) for count, raw in bodies)
    out.append(small if fits_small else large)
    for count, raw in bodies:
        if name in ("binary", "string", "symbol"):
            out += bytes((len(raw),)) if fits_small else _U32.pack(len(raw))
        elif fits_small:
            out += bytes((len(raw) + 1, count))
        else:
            out += _U32.pack(len(raw) + 4) + _U32.pack(count)
        out += raw
    return bytes(out)


_ELEMENT_CODES: dict[str, tuple[int, int]] = {
    "binary": (_VBIN8, _VBIN32),
    "string": (_STR8, _STR32),
    "symbol": (_SYM8, _SYM32),
    "list": (_LIST8, _LIST32),
    "map": (_MAP8, _MAP32),
    "array": (_ARRAY8, _ARRAY32),
}


def _fits_small(name: str, count: int, raw: bytes) -> bool:
    if name in ("binary", "string", "symbol"):
        return len(raw) < 256
    return count < 256 and len(raw) + 1 < 256


def _element_body(name: str, item: object, depth: int) -> tuple[int, bytes]:
    """(count, payload) of one variable or compound array element."""
    if name == "binary" and isinstance(item, (bytes, bytearray, memoryview)):
        raw = bytes(item)
    elif name == "string" and isinstance(item, str):
        raw = _utf8(item)
    elif name == "symbol" and isinstance(item, str):
        raw = _ascii(item)
    elif name == "list" and isinstance(item, (list, tuple)):
        _check_depth(depth)
        payload = bytearray()
        for element in item:
            _encode(payload, element, depth + 1)
        return len(item), bytes(payload)
    elif name == "map" and isinstance(item, dict):
        _check_depth(depth)
        payload = bytearray()
        for key, value in item.items():
            _encode(payload, key, depth + 1)
            _encode(payload, value, depth + 1)
        return 2 * len(item), bytes(payload)
    elif name == "array" and isinstance(item, Array):
        _check_depth(depth)
        return len(item.items), _array_payload(item, depth + 1)
    else:
        raise AmqpEncodeError(f"array of {name} holds a {type(item).__name__}")
    if len(raw) >= 1 << 32:
        raise AmqpEncodeError(f"{name} of {len(raw)} bytes exceeds 2**32-1")
    return 0, raw


def encode_value(value: object) -> bytes:
    """The AMQP encoding of ``value`` (the smallest encoding of its type)."""
    out = bytearray()
    _encode(out, value, 0)
    return bytes(out)


# --- the message (part 3 §3.2) ------------------------------------------------------------

MessageId: TypeAlias = int | uuid.UUID | bytes | str
"""§3.2.11 message-id-ulong / -uuid / -binary / -string (an int encodes as a ulong)."""

Annotations: TypeAlias = dict[str | int, object]
"""§3.2.10 annotations: 'keys are restricted to be of type symbol or of type ulong' (a
str key encodes as a symbol, an int key as a ulong)."""


@dataclass(slots=True)
class Header:
    """§3.2.1 header: 'transport headers for a message'. None: absent, the spec's
    default applies (durable false, priority 4, ttl none, first-acquirer false,
    delivery-count 0)."""

    durable: bool | None = None
    priority: int | None = None
    ttl: int | None = None
    first_acquirer: bool | None = None
    delivery_count: int | None = None


@dataclass(slots=True)
class Properties:
    """§3.2.4 properties: 'immutable properties of the message'. Timestamps are ms
    since the epoch (decoded as ``Timestamp``); content type and encoding are symbols
    on the wire (decoded as ``Symbol``)."""

    message_id: MessageId | None = None
    user_id: bytes | None = None
    to: str | None = None
    subject: str | None = None
    reply_to: str | None = None
    correlation_id: MessageId | None = None
    content_type: str | None = None
    content_encoding: str | None = None
    absolute_expiry_time: int | None = None
    creation_time: int | None = None
    group_id: str | None = None
    group_sequence: int | None = None
    reply_to_group_id: str | None = None


@dataclass(frozen=True, slots=True)
class Data:
    """A body of several Data sections (§3.2.6), in order. One Data section is plain
    ``bytes`` in ``AmqpMessage.body``."""

    sections: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class AmqpSequence:
    """A body of one or more amqp-sequence sections (§3.2.7), each a list."""

    sections: tuple[list[object], ...]


@dataclass(frozen=True, slots=True)
class AmqpValue:
    """A body of one amqp-value section (§3.2.8): 'a single AMQP value'."""

    value: object


Body: TypeAlias = bytes | Data | AmqpSequence | AmqpValue | None


@dataclass(slots=True)
class AmqpMessage:
    """An AMQP 1.0 message (§3.2): 'header? delivery-annotations?
    message-annotations? properties? application-properties? body footer?'.

    ``body`` is ``bytes`` for one Data section (what this client publishes), ``Data``
    for several, ``AmqpSequence``, ``AmqpValue``, or None for no body section (the
    spec requires one; decision: accepted on decode, as Qpid Proton writes none for a
    null body). ``application_properties`` keys are strings and values 'simple types
    only, that is, excluding map, list, and array types' (§3.2.5).
    """

    body: Body = None
    header: Header | None = None
    delivery_annotations: Annotations | None = None
    message_annotations: Annotations | None = None
    properties: Properties | None = None
    application_properties: dict[str, object] | None = None
    footer: Annotations | None = None


# Section descriptors: 'amqp:...' symbol and 0x00000000:0x000000NN ulong (§3.2).
_HEADER, _DELIVERY_ANN, _MESSAGE_ANN, _PROPERTIES, _APP_PROPS = 0x70, 0x71, 0x72, 0x73, 0x74
_DATA, _SEQUENCE, _VALUE, _FOOTER = 0x75, 0x76, 0x77, 0x78

_SECTION_NAMES = {
    _HEADER: "header",
    _DELIVERY_ANN: "delivery-annotations",
    _MESSAGE_ANN: "message-annotations",
    _PROPERTIES: "properties",
    _APP_PROPS: "application-properties",
    _DATA: "data",
    _SEQUENCE: "amqp-sequence",
    _VALUE: "amqp-value",
    _FOOTER: "footer",
}
_SECTION_SYMBOLS = {
    "amqp:header:list": _HEADER,
    "amqp:delivery-annotations:map": _DELIVERY_ANN,
    "amqp:message-annotations:map": _MESSAGE_ANN,
    "amqp:properties:list": _PROPERTIES,
    "amqp:application-properties:map": _APP_PROPS,
    "amqp:data:binary": _DATA,
    "amqp:amqp-sequence:list": _SEQUENCE,
    "amqp:amqp-value:*": _VALUE,
    "amqp:footer:map": _FOOTER,
}
# Position in the message layout; the three body sections share one.
_SECTION_RANK = {
    _HEADER: 0,
    _DELIVERY_ANN: 1,
    _MESSAGE_ANN: 2,
    _PROPERTIES: 3,
    _APP_PROPS: 4,
    _DATA: 5,
    _SEQUENCE: 5,
    _VALUE: 5,
    _FOOTER: 6,
}
_SECTION_VALUE_TYPE: dict[int, type] = {
    _HEADER: list,
    _DELIVERY_ANN: dict,
    _MESSAGE_ANN: dict,
    _PROPERTIES: list,
    _APP_PROPS: dict,
    _DATA: bytes,
    _SEQUENCE: list,
    _VALUE: object,
    _FOOTER: dict,
}
_LAYOUT = (
    "header, delivery-annotations, message-annotations, properties, "
    "application-properties, body, footer"
)


def _sections(data: bytes) -> Iterator[tuple[int, object, int]]:
    """(section code, section value, offset) of each section, in order, after checking
    the layout of §3.2 (order; data and amqp-sequence may repeat, nothing else may)."""
    reader = _Reader(data)
    end = len(data)
    pos = 0
    previous = -1
    while pos < end:
        at = pos
        if data[pos] != _DESCRIBED:
            _fail(f"a section starts with 0x{data[pos]:02x}, not a descriptor (0x00)", at)
        descriptor, pos = reader.value(pos + 1, end, 1)
        if isinstance(descriptor, ULong) and descriptor in _SECTION_NAMES:
            code = int(descriptor)
        elif isinstance(descriptor, Symbol) and descriptor in _SECTION_SYMBOLS:
            code = _SECTION_SYMBOLS[descriptor]
        else:
            _fail(f"{_short(descriptor)} is not a message section descriptor", at)
        value, pos = reader.value(pos, end, 1)
        if previous >= 0:
            rank, previous_rank = _SECTION_RANK[code], _SECTION_RANK[previous]
            repeatable = code == previous and code in (_DATA, _SEQUENCE)
            if rank < previous_rank or (rank == previous_rank and not repeatable):
                _fail(
                    f"{_SECTION_NAMES[code]} section after {_SECTION_NAMES[previous]}: "
                    f"sections go in the order {_LAYOUT}, only data or amqp-sequence "
                    "may repeat, and a body is of one kind",
                    at,
                )
        expected = _SECTION_VALUE_TYPE[code]
        if not isinstance(value, expected):
            _fail(
                f"{_SECTION_NAMES[code]} section holds a {_type_name(value)}, not a "
                f"{_TYPE_NAMES[expected]}",
                at,
            )
        previous = code
        yield code, value, at


_TYPE_NAMES: dict[type, str] = {
    type(None): "null", bool: "boolean", UByte: "ubyte", UShort: "ushort", UInt: "uint",
    ULong: "ulong", Byte: "byte", Short: "short", Int: "int", Long: "long", Float: "float",
    float: "double", Decimal32: "decimal32", Decimal64: "decimal64", Decimal128: "decimal128",
    Char: "char", Timestamp: "timestamp", uuid.UUID: "uuid", bytes: "binary", str: "string",
    Symbol: "symbol", list: "list", dict: "map", Array: "array", Described: "described value",
    object: "value",
}  # fmt: skip


def _type_name(value: object) -> str:
    """The AMQP type of a decoded value, for error messages."""
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _short(value: object) -> str:
    """``repr(value)`` cut to a length fit for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(
    section: str, fields: list[object], index: int, name: str, kinds: tuple[type, ...], at: int
) -> object:
    """Field ``index`` of a composite section, None when absent, checked against kinds."""
    if index >= len(fields):
        return None
    value = fields[index]
    if value is None or type(value) in kinds:
        return value
    wanted = " or ".join(_TYPE_NAMES[kind] for kind in kinds)
    _fail(f"{section} field {name!r} (field {index}) is a {_type_name(value)}, not {wanted}", at)


_ID_KINDS: tuple[type, ...] = (ULong, uuid.UUID, bytes, str)


_HEADER_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("durable", (bool,)),
    ("priority", (UByte,)),
    ("ttl", (UInt,)),
    ("first-acquirer", (bool,)),
    ("delivery-count", (UInt,)),
)


def _header(fields: list[object], at: int) -> Header:
    if len(fields) > 5:
        _fail(f"header list has {len(fields)} fields, the spec defines 5", at)
    values = [
        _field("header", fields, index, name, kinds, at)
        for index, (name, kinds) in enumerate(_HEADER_FIELDS)
    ]
    return Header(*values)  # type: ignore[arg-type]  # checked by _field


_PROPERTY_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("message-id", _ID_KINDS),
    ("user-id", (bytes,)),
    ("to", (str,)),
    ("subject", (str,)),
    ("reply-to", (str,)),
    ("correlation-id", _ID_KINDS),
    ("content-type", (Symbol,)),
    ("content-encoding", (Symbol,)),
    ("absolute-expiry-time", (Timestamp,)),
    ("creation-time", (Timestamp,)),
    ("group-id", (str,)),
    ("group-sequence", (UInt,)),
    ("reply-to-group-id", (str,)),
)


def _properties(fields: list[object], at: int) -> Properties:
    if len(fields) > 13:
        _fail(f"properties list has {len(fields)} fields, the spec defines 13", at)
    values = [
        _field("properties", fields, index, name, kinds, at)
        for index, (name, kinds) in enumerate(_PROPERTY_FIELDS)
    ]
    return Properties(*values)  # type: ignore[arg-type]  # checked by _field


def _annotations(section: str, entries: dict[object, object], at: int) -> Annotations:
    for key in entries:
        if type(key) not in (Symbol, ULong):
            _fail(
                f"{section} key {_short(key)} is a {_type_name(key)}: annotation keys are "
                "symbols or ulongs",
                at,
            )
    return entries  # type: ignore[return-value]


def _application_properties(entries: dict[object, object], at: int) -> dict[str, object]:
    for key, value in entries.items():
        if type(key) is not str:
            _fail(
                f"application-properties key {_short(key)} is a {_type_name(key)}, not a " "string",
                at,
            )
        if isinstance(value, (list, dict, Array)):
            _fail(
                f"application-properties value of {_short(key)} is a {_type_name(value)}: "
                "values are simple types only",
                at,
            )
    return entries  # type: ignore[return-value]


def decode_message(data: bytes) -> AmqpMessage:
    """The message ``data`` holds: every section decoded and checked (§3.2)."""
    message = AmqpMessage()
    data_sections: list[bytes] = []
    sequences: list[list[object]] = []
    for code, value, at in _sections(data):
        if code == _DATA:
            data_sections.append(value)  # type: ignore[arg-type]
        elif code == _SEQUENCE:
            sequences.append(value)  # type: ignore[arg-type]
        elif code == _VALUE:
            message.body = AmqpValue(value)
        elif code == _HEADER:
            message.header = _header(value, at)  # type: ignore[arg-type]
        elif code == _PROPERTIES:
            message.properties = _properties(value, at)  # type: ignore[arg-type]
        elif code == _APP_PROPS:
            message.application_properties = _application_properties(
                value, at  # type: ignore[arg-type]
            )
        else:
            annotations = _annotations(_SECTION_NAMES[code], value, at)  # type: ignore[arg-type]
            if code == _DELIVERY_ANN:
                message.delivery_annotations = annotations
            elif code == _MESSAGE_ANN:
                message.message_annotations = annotations
            else:
                message.footer = annotations
    if len(data_sections) == 1:
        message.body = data_sections[0]
    elif data_sections:
        message.body = Data(tuple(data_sections))
    elif sequences:
        message.body = AmqpSequence(tuple(sequences))
    return message


# --- encoding a message ---------------------------------------------------------------

_SECTION_PREFIX = {code: bytes((_DESCRIBED, _SMALLULONG, code)) for code in _SECTION_NAMES}


def _composite_fields(out: bytearray, code: int, fields: list[bytes]) -> None:
    # §1.4 composite types: 'trailing ... null values MAY be omitted'.
    while fields and fields[-1] == b"\x40":
        fields.pop()
    out += _SECTION_PREFIX[code]
    if fields:
        _compound(out, _LIST8, _LIST32, len(fields), b"".join(fields))
    else:
        out.append(_LIST0)


def _typed_field(value: object, kind: type, name: str) -> bytes:
    """A field encoded as the AMQP type its definition names, whatever Python type."""
    if value is None:
        return b"\x40"
    if kind is bool:
        if not isinstance(value, bool):
            raise AmqpEncodeError(f"{name} is a boolean, got {type(value).__name__}")
        return encode_value(value)
    if kind in (str, Symbol):
        if not isinstance(value, str):
            raise AmqpEncodeError(f"{name} is a {_TYPE_NAMES[kind]}, got {type(value).__name__}")
        return encode_value(kind(value))
    if kind is bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise AmqpEncodeError(f"{name} is a binary, got {type(value).__name__}")
        return encode_value(bytes(value))
    if kind is Timestamp and isinstance(value, datetime):
        return encode_value(Timestamp.from_datetime(value))
    if not isinstance(value, int) or isinstance(value, bool):
        raise AmqpEncodeError(f"{name} is an integer, got {type(value).__name__}")
    return encode_value(kind(value))


def _message_id(value: object, name: str) -> bytes:
    if isinstance(value, int) and not isinstance(value, bool):
        return _typed_field(value, ULong, name)
    if isinstance(value, str):
        return _typed_field(value, str, name)
    if value is None or isinstance(value, (uuid.UUID, bytes)):
        return encode_value(value)
    raise AmqpEncodeError(f"{name} is a ulong, uuid, binary or string, got {type(value).__name__}")


def _annotations_map(value: Annotations, section: str) -> bytes:
    entries: dict[object, object] = {}
    for key, item in value.items():
        if isinstance(key, str):
            entries[Symbol(key)] = item
        elif isinstance(key, int) and not isinstance(key, bool):
            entries[ULong(key)] = item
        else:
            raise AmqpEncodeError(f"{section} key {key!r}: keys are symbols or ulongs")
    return encode_value(entries)


def encode_message(message: AmqpMessage) -> bytes:
    """The sections of ``message`` in the order of §3.2 (absent ones omitted)."""
    out = bytearray()
    header = message.header
    if header is not None:
        _composite_fields(
            out,
            _HEADER,
            [
                _typed_field(header.durable, bool, "durable"),
                _typed_field(header.priority, UByte, "priority"),
                _typed_field(header.ttl, UInt, "ttl"),
                _typed_field(header.first_acquirer, bool, "first-acquirer"),
                _typed_field(header.delivery_count, UInt, "delivery-count"),
            ],
        )
    for code, annotations in (
        (_DELIVERY_ANN, message.delivery_annotations),
        (_MESSAGE_ANN, message.message_annotations),
    ):
        if annotations is not None:
            out += _SECTION_PREFIX[code]
            out += _annotations_map(annotations, _SECTION_NAMES[code])
    props = message.properties
    if props is not None:
        _composite_fields(
            out,
            _PROPERTIES,
            [
                _message_id(props.message_id, "message-id"),
                _typed_field(props.user_id, bytes, "user-id"),
                _typed_field(props.to, str, "to"),
                _typed_field(props.subject, str, "subject"),
                _typed_field(props.reply_to, str, "reply-to"),
                _message_id(props.correlation_id, "correlation-id"),
                _typed_field(props.content_type, Symbol, "content-type"),
                _typed_field(props.content_encoding, Symbol, "content-encoding"),
                _typed_field(props.absolute_expiry_time, Timestamp, "absolute-expiry-time"),
                _typed_field(props.creation_time, Timestamp, "creation-time"),
                _typed_field(props.group_id, str, "group-id"),
                _typed_field(props.group_sequence, UInt, "group-sequence"),
                _typed_field(props.reply_to_group_id, str, "reply-to-group-id"),
            ],
        )
    if message.application_properties is not None:
        for key, item in message.application_properties.items():
            if type(key) is not str:
                raise AmqpEncodeError(f"application-properties key {key!r} is not a string")
            if isinstance(item, (list, tuple, dict, Array)):
                raise AmqpEncodeError(
                    f"application-properties value of {key!r} is a "
                    f"{type(item).__name__}: simple types only"
                )
        out += _SECTION_PREFIX[_APP_PROPS]
        out += encode_value(message.application_properties)
    out += _encode_body_sections(message.body)
    if message.footer is not None:
        out += _SECTION_PREFIX[_FOOTER]
        out += _annotations_map(message.footer, "footer")
    return bytes(out)


def _encode_body_sections(body: Body) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return encode_body(body)
    if isinstance(body, Data):
        if not body.sections:
            raise AmqpEncodeError("a Data body has one or more sections, got none")
        return b"".join(encode_body(section) for section in body.sections)
    if isinstance(body, AmqpSequence):
        if not body.sections:
            raise AmqpEncodeError("an AmqpSequence body has one or more sections, got none")
        parts = bytearray()
        for section in body.sections:
            if not isinstance(section, (list, tuple)):
                raise AmqpEncodeError("an amqp-sequence section is a list")
            parts += _SECTION_PREFIX[_SEQUENCE]
            parts += encode_value(section)
        return bytes(parts)
    if isinstance(body, AmqpValue):
        return _SECTION_PREFIX[_VALUE] + encode_value(body.value)
    raise AmqpEncodeError(f"no AMQP message body for a {type(body).__name__}")


# --- the hot path: one Data section ---------------------------------------------------

# 0x00 (described) 0x53 (smallulong) 0x75 (amqp:data:binary), then vbin8 or vbin32.
_DATA8 = b"\x00\x53\x75\xa0"
_DATA32 = b"\x00\x53\x75\xb0"
_DATA8_PREFIXES = tuple(_DATA8 + bytes((length,)) for length in range(256))
_DATA32_HEAD = struct.Struct(">II")  # the 4 bytes above as one int, then the length
_DATA32_AS_INT = int.from_bytes(_DATA32, "big")


def encode_body(body: bytes | bytearray | memoryview) -> bytes:
    """A message that is one Data section holding ``body`` (§3.2.6)."""
    length = len(body)
    if length < 256:
        return _DATA8_PREFIXES[length] + body
    if length >= 1 << 32:
        raise AmqpEncodeError(f"a Data section of {length} bytes exceeds 2**32-1")
    return b"".join((_DATA32, length.to_bytes(4, "big"), body))


def decode_body(data: bytes) -> bytes:
    """The application data of a message: its Data sections' bytes concatenated.

    A message that is exactly one Data section is sliced without decoding anything
    else; any other message is walked section by section (every section's encoding
    and the layout are checked; header and properties fields are not interpreted).
    No body section gives b""; an amqp-value body holding binary gives that binary.
    An amqp-sequence body, or an amqp-value of another type, is not bytes: that raises
    ``AmqpDecodeError`` (use ``decode_message``).
    """
    size = len(data)
    if size > 4 and data[4] == size - 5 and data.startswith(_DATA8):
        return data[5:]
    if size > 7:
        head, length = _DATA32_HEAD.unpack_from(data)
        if head == _DATA32_AS_INT and length == size - 8:
            return data[8:]
    return _decode_body_sections(data)


def _decode_body_sections(data: bytes) -> bytes:
    parts: list[bytes] = []
    for code, value, at in _sections(data):
        if code == _DATA:
            parts.append(value)  # type: ignore[arg-type]
        elif code == _VALUE and isinstance(value, bytes):
            parts.append(value)
        elif code in (_SEQUENCE, _VALUE):
            _fail(
                f"the body is an {_SECTION_NAMES[code]} section holding a "
                f"{_type_name(value)}, not binary data",
                at,
            )
    return parts[0] if len(parts) == 1 else b"".join(parts)
