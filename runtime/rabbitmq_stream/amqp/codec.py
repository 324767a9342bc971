"""The AMQP 1.0 type codec (OASIS AMQP 1.0 part 1 §1.6): ``encode_value`` and
``decode_value`` between one encoded value and Python (the mapping is in the package's
docstring). ``Reader`` walks encoded values for the message sections too.

Nothing is allocated from a length or count before the input has been checked to hold
that many bytes; nesting is bounded by ``MAX_NESTING``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

from wirestream.runtime.rabbitmq_stream.amqp.types import (
    FixedBytes,
    MAX_NESTING,
    AmqpEncodeError,
    Array,
    ArrayElementType,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    fail,
    short_repr,
    type_name,
)

__all__ = ["encode_value", "decode_value"]

# --- format codes (part 1 §1.6) ----------------------------------------------------------

_NULL, _TRUE, _FALSE, _UINT0, _ULONG0, LIST0 = 0x40, 0x41, 0x42, 0x43, 0x44, 0x45
_UBYTE, _BYTE, _SMALLUINT, SMALLULONG, _SMALLINT, _SMALLLONG, _BOOLEAN = range(0x50, 0x57)
_USHORT, _SHORT = 0x60, 0x61
_UINT, _INT, _FLOAT, _CHAR, _DECIMAL32 = 0x70, 0x71, 0x72, 0x73, 0x74
_ULONG, _LONG, _DOUBLE, _TIMESTAMP, _DECIMAL64 = 0x80, 0x81, 0x82, 0x83, 0x84
_DECIMAL128, _UUID = 0x94, 0x98
_VBIN8, _STR8, _SYM8, _VBIN32, _STR32, _SYM32 = 0xA0, 0xA1, 0xA3, 0xB0, 0xB1, 0xB3
LIST8, _MAP8, LIST32, _MAP32 = 0xC0, 0xC1, 0xD0, 0xD1
_ARRAY8, _ARRAY32 = 0xE0, 0xF0
DESCRIBED = 0x00

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


def _decode_char(raw: bytes, at: int) -> Char:
    point = int.from_bytes(raw, "big")
    if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
        fail(f"char U+{point:X} is not a Unicode scalar value", at)
    return Char(chr(point))


def _decode_boolean(raw: bytes, at: int) -> bool:
    # §1.6.1: 'boolean with the octet 0x00 being false and octet 0x01 being true'
    if raw == b"\x01":
        return True
    if raw == b"\x00":
        return False
    fail(f"boolean octet 0x{raw[0]:02x} is neither 0x00 nor 0x01", at)


_FixedDecoder = Callable[[bytes, int], object]

# Fixed-width encodings: format code -> (width, name, bytes -> value).
_FIXED: dict[int, tuple[int, ArrayElementType, _FixedDecoder]] = {
    _NULL: (0, "null", lambda raw, at: None),
    _TRUE: (0, "boolean", lambda raw, at: True),
    _FALSE: (0, "boolean", lambda raw, at: False),
    _UINT0: (0, "uint", lambda raw, at: UInt(0)),
    _ULONG0: (0, "ulong", lambda raw, at: ULong(0)),
    LIST0: (0, "list", lambda raw, at: []),
    _UBYTE: (1, "ubyte", lambda raw, at: UByte(raw[0])),
    _BYTE: (1, "byte", lambda raw, at: Byte(int.from_bytes(raw, "big", signed=True))),
    _SMALLUINT: (1, "uint", lambda raw, at: UInt(raw[0])),
    SMALLULONG: (1, "ulong", lambda raw, at: ULong(raw[0])),
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
    LIST8: (1, "list"),
    LIST32: (4, "list"),
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


class Reader:
    """One pass over ``data``: every method takes the position to read at and the end
    that the enclosing value (or the input) allows, and returns the next position."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def size(self, pos: int, width: int, end: int, what: str) -> int:
        if pos + width > end:
            fail(f"{what} needs {width} bytes, {max(end - pos, 0)} remain", pos)
        if width == 1:
            return self.data[pos]
        return int.from_bytes(self.data[pos : pos + 4], "big")

    def constructor(self, pos: int, end: int, depth: int) -> tuple[_Constructor, int]:
        if pos >= end:
            fail("a value's constructor is missing: no bytes remain", pos)
        code = self.data[pos]
        if code != DESCRIBED:
            return code, pos + 1
        if depth >= MAX_NESTING:
            fail(f"described values nest deeper than {MAX_NESTING}", pos)
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
                fail(f"{name} (0x{constructor:02x}) needs {width} bytes, {end - pos} remain", at)
            return convert(self.data[pos : pos + width], at), pos + width
        variable = _VARIABLE.get(constructor)
        if variable is not None:
            return self._variable(constructor, variable[0], variable[1], at, pos, end)
        compound = _COMPOUND.get(constructor)
        if compound is not None:
            if depth >= MAX_NESTING:
                fail(f"lists, maps and arrays nest deeper than {MAX_NESTING}", at)
            width, name = compound
            size = self.size(pos, width, end, f"the size of a {name}")
            pos += width
            if size < width:
                fail(f"{name} size {size} is below the {width} bytes of its count", at)
            if pos + size > end:
                fail(f"{name} size {size} exceeds the {end - pos} bytes that remain", at)
            stop = pos + size
            count = self.size(pos, width, stop, f"the count of a {name}")
            pos += width
            if name == "array":
                return self._array(count, at, pos, stop, depth + 1), stop
            if count > stop - pos:
                fail(f"{name} count {count} exceeds the {stop - pos} bytes of its items", at)
            if name == "list":
                return self._list(count, at, pos, stop, depth + 1), stop
            return self._map(count, at, pos, stop, depth + 1), stop
        fail(f"unknown format code 0x{constructor:02x}", at)

    def _variable(
        self, code: int, width: int, name: str, at: int, pos: int, end: int
    ) -> tuple[object, int]:
        length = self.size(pos, width, end, f"the length of a {name}")
        pos += width
        if length > end - pos:
            fail(
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
            fail(f"{name} is not valid {encoding}: {exc.reason} at its byte {exc.start}", at)

    def _list(self, count: int, at: int, pos: int, stop: int, depth: int) -> list[object]:
        items: list[object] = []
        for _ in range(count):
            item, pos = self.value(pos, stop, depth)
            items.append(item)
        if pos != stop:
            fail(f"list of {count} items ends {stop - pos} bytes before its size says", at)
        return items

    def _map(self, count: int, at: int, pos: int, stop: int, depth: int) -> dict[object, object]:
        # §1.6.23: 'the count ... is the number of keys plus the number of values'
        if count % 2:
            fail(f"map count {count} is odd: keys and values come in pairs", at)
        entries: dict[object, object] = {}
        for _ in range(count // 2):
            key_at = pos
            key, pos = self.value(pos, stop, depth)
            value, pos = self.value(pos, stop, depth)
            try:
                if key in entries:
                    fail(
                        f"map key {short_repr(key)} appears twice (or equals an earlier key)",
                        key_at,
                    )
                entries[key] = value
            except TypeError:
                fail(f"map key of type {type(key).__name__} is not hashable in Python", key_at)
        if pos != stop:
            fail(f"map of {count} items ends {stop - pos} bytes before its size says", at)
        return entries

    def _array(self, count: int, at: int, pos: int, stop: int, depth: int) -> Array:
        # §1.6.24 / §1.2: array = size count element-constructor *(element data)
        constructor_at = pos
        constructor, pos = self.constructor(pos, stop, depth)
        descriptor: str | int | None = None
        code = constructor
        if not isinstance(code, int):
            if not isinstance(code.descriptor, (Symbol, ULong)):
                fail("array element descriptor is not a symbol or ulong", constructor_at)
            descriptor = code.descriptor
            if not isinstance(code.inner, int):
                fail("array element constructor with two descriptors", constructor_at)
            code = code.inner
        name = _element_type_name(code)
        if name is None:
            fail(f"unknown array element format code 0x{code:02x}", constructor_at)
        width = _FIXED[code][0] if code in _FIXED else 1
        # Every element takes at least `width` bytes; zero-width elements (null, true,
        # false, uint0, ulong0, list0) take none, so their count is bounded by the input
        # size instead (decision: no allocation beyond the input's own length).
        limit = (stop - pos) // width if width else len(self.data)
        if count > limit:
            fail(f"array count {count} exceeds what its {stop - pos} bytes can hold", at)
        items: list[object] = []
        for _ in range(count):
            item, pos = self.body(code, constructor_at, pos, stop, depth)
            items.append(item)
        if pos != stop:
            fail(f"array of {count} items ends {stop - pos} bytes before its size says", at)
        return Array(name, tuple(items), descriptor)


def _element_type_name(code: int) -> ArrayElementType | None:
    for table in (_FIXED, _VARIABLE, _COMPOUND):
        entry = table.get(code)
        if entry is not None:
            return entry[1]
    return None


def decode_value(data: bytes) -> object:
    """The one AMQP value ``data`` holds (trailing bytes are an error)."""
    value, pos = Reader(data).value(0, len(data), 0)
    if pos != len(data):
        fail(f"{len(data) - pos} bytes follow the value", pos)
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


def compound(out: bytearray, small: int, large: int, count: int, payload: bytes) -> None:
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
            out += bytes((SMALLULONG, value))
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
    elif isinstance(value, FixedBytes):
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
            out.append(LIST0)  # list0: fixed width, nests nothing
            return
        _check_depth(depth)
        payload = bytearray()
        for item in value:
            _encode(payload, item, depth + 1)
        compound(out, LIST8, LIST32, len(value), bytes(payload))
    elif isinstance(value, dict):
        _check_depth(depth)
        payload = bytearray()
        for key, item in value.items():
            _encode(payload, key, depth + 1)
            _encode(payload, item, depth + 1)
        compound(out, _MAP8, _MAP32, 2 * len(value), bytes(payload))
    elif isinstance(value, Array):
        _check_depth(depth)
        compound(out, _ARRAY8, _ARRAY32, len(value.items), _array_payload(value, depth + 1))
    elif isinstance(value, Described):
        _check_depth(depth)
        out.append(DESCRIBED)
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
    if not isinstance(value, FixedBytes) or len(value) != value.WIDTH:
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
        out.append(DESCRIBED)
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
    "list": (LIST8, LIST32),
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
