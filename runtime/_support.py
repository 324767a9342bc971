"""The small support module that generated codecs import (and nothing else but stdlib).

It holds what every generated codec shares: variable-length integers (LEB128 varint,
VarU64), the two stream decoders (length-prefixed and self-delimiting framing) and the
MessagePack boundary. Keeping them here, once, keeps generated modules readable.
"""

from __future__ import annotations

import os
import struct
from types import ModuleType
from typing import Any, Callable, Generic, TypeVar

import msgpack

from wirestream.runtime.errors import (
    DecodeError,
    EncodeError,
    FrameTooLarge,
    InvalidString,
    InvalidValue,
    MalformedMsgpack,
    NonCanonical,
    ProtocolError,
    TrailingBytes,
    Truncated,
)

F = TypeVar("F")
C = TypeVar("C")

U64_MAX = 0xFFFFFFFFFFFFFFFF

# --- unsigned LEB128 (protobuf varint) ------------------------------------------


def native_module() -> ModuleType | None:
    """``wirestream.runtime._native`` (runtime/rust/wirestream-native), or None where it is
    not built (``make native``, which needs cargo) or ``WIRESTREAM_NATIVE=0`` switches the
    native paths off: every one of them has a pure-Python path that gives the same results."""
    if os.environ.get("WIRESTREAM_NATIVE", "1") == "0":
        return None
    try:
        from wirestream.runtime import _native
    except ImportError:
        return None
    return _native


NativeBytes = Callable[[object, bool], "bytes | None"]


def use_native_packers(
    module: str, fingerprint: str, frames: tuple[type, ...]
) -> tuple[NativeBytes | None, frozenset[type]]:
    """Put the native ``pack`` of each of ``module``'s frame classes in place of its Python
    one (codegen/targets/rust/py_pack.py), where the extension has packers for ``module``
    built from the same plan (``fingerprint``: not those of an IDL edited since ``make
    native``). The Python one stays as ``_pack_python``: the native one returns to it for
    whatever it does not take, so both give the same bytes and the same errors.

    Returns the native bytes of a frame object (``(frame, framed)`` -> its bytes, with the
    transport framing when ``framed``, or None where the module's ``encode`` and
    ``frame_bytes`` go on in Python) and the classes it encodes (the module's functions
    ask it for those only: a frame of another class would cost them a call for nothing),
    or ``(None, frozenset())``."""
    native = native_module()
    built: Any = getattr(native, "packers", {}).get(module)
    if built is None or built[0] != fingerprint:
        return None, frozenset()
    packed = []
    for cls in frames:
        pack = built[1].get(cls.__name__)
        if pack is not None:
            setattr(cls, "pack", staticmethod(pack))
            packed.append(cls)
    object_bytes: NativeBytes = built[1]["object_bytes"]
    return object_bytes, frozenset(packed)


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read an unsigned LEB128 varint at ``pos``; returns (value, next position).

    Protobuf varints carry at most 64 bits, so at most 10 bytes are read: a longer
    run of continuation bits is an error, never a loop sized by the peer.
    """
    if pos >= end:
        raise Truncated("varint: input ends", needed=pos + 1)
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise Truncated("varint: input ends inside a varint", needed=pos + 1)
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            if result > U64_MAX:
                raise InvalidValue("varint: value exceeds 64 bits")
            if byte == 0:
                # A last group of 0 adds nothing: the same value fits in fewer bytes.
                raise NonCanonical("varint: overlong encoding (a trailing 0x00 group)")
            return result, pos
        shift += 7
        if shift >= 70:
            raise InvalidValue("varint: longer than 10 bytes")


def write_varint(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**64) as an unsigned LEB128 varint."""
    if value < 0x80:
        if value < 0:
            raise EncodeError(f"varint: negative value {value}")
        return bytes((value,))
    if value > U64_MAX:
        raise EncodeError(f"varint: value {value} exceeds 64 bits")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --- IEEE 754 binary32 ------------------------------------------------------------
# A binary32 value is carried as a Python float (a binary64). Every binary32 value but a
# NaN converts exactly; a NaN keeps its sign and payload by moving the 23 fraction bits
# to the top of binary64's 52 (where the quiet bit sits in both), not by a C float cast,
# which on x86 turns a signalling NaN quiet.

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def f32_from_bits(bits: int) -> float:
    """The float of binary32 ``bits``; NaN payloads kept bit for bit."""
    if bits & 0x7F800000 == 0x7F800000 and bits & 0x7FFFFF:
        double = ((bits >> 31) << 63) | (0x7FF << 52) | ((bits & 0x7FFFFF) << 29)
        value: float = _F64.unpack(_U64.pack(double))[0]
        return value
    value = _F32.unpack(_U32.pack(bits))[0]
    return value


def f32_bits(value: float) -> int:
    """The binary32 bits of ``value`` (rounded to nearest); NaN payloads kept."""
    if value != value:
        double: int = _U64.unpack(_F64.pack(value))[0]
        fraction = (double >> 29) & 0x7FFFFF or 0x400000  # a payload only in low bits: quiet
        return ((double >> 63) << 31) | 0x7F800000 | fraction
    try:
        bits: int = _U32.unpack(_F32.pack(value))[0]
    except (OverflowError, struct.error):
        raise EncodeError(f"binary32: {value!r} is out of range") from None
    return bits


# --- transforms ------------------------------------------------------------------


def xor(data: bytes, key: bytes) -> bytes:
    """``data`` XOR ``key`` repeated (a masked payload, e.g. WebSocket's 4-byte key)."""
    if not data:
        return b""
    size = len(data)
    stream = (key * (size // len(key) + 1))[:size]
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(size, "big")


# --- zigzag (protobuf sint64): (n << 1) ^ (n >> 63) as a LEB128 varint ----------


def read_zigzag(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a zigzag-mapped signed 64-bit value; its varint must be in shortest form."""
    raw, pos = read_varint(data, pos, end)
    return (raw >> 1) ^ -(raw & 1), pos


def write_zigzag(value: int) -> bytes:
    """Encode ``-2**63 <= value < 2**63`` zigzag-mapped as a LEB128 varint."""
    if not -(1 << 63) <= value < 1 << 63:
        raise EncodeError(f"zigzag: value {value} does not fit 64 signed bits")
    return write_varint((value << 1) ^ (value >> 63) if value < 0 else value << 1)


# --- MQTT 5 Variable Byte Integer (MQTT 5.0, 1.5.5) -------------------------------
# 7 bits a byte, least significant group first, high bit = more bytes follow; at most
# four bytes (values up to 268,435,455). [MQTT-1.5.5-1]: the minimum number of bytes.

VBI_MAX = 268_435_455


def read_vbi(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a Variable Byte Integer; more than 4 bytes or an overlong form is an error."""
    value = 0
    for index in range(4):
        if pos >= end:
            raise Truncated("variable byte integer: input ends", needed=pos + 1)
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            if byte == 0 and index:
                raise NonCanonical("variable byte integer: not in its shortest form")
            return value, pos
    raise InvalidValue("variable byte integer: longer than 4 bytes")


def write_vbi(value: int) -> bytes:
    """Encode ``0 <= value <= 268,435,455`` as a Variable Byte Integer."""
    if value < 0x80:
        if value < 0:
            raise EncodeError(f"variable byte integer: negative value {value}")
        return bytes((value,))
    if value > VBI_MAX:
        raise EncodeError(f"variable byte integer: {value} exceeds {VBI_MAX}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --- MySQL length-encoded integer (MySQL client/server protocol, Basic Data Types) --
# < 0xFB: the value; 0xFC + 2 bytes, 0xFD + 3 bytes, 0xFE + 8 bytes (little-endian);
# 0xFB: NULL (in a row; an error where a number is required); 0xFF: not an integer
# (the first byte of an ERR packet). Only the shortest form is valid.

_LENENC_SIZES = {0xFC: (2, 0xFB), 0xFD: (3, 1 << 16), 0xFE: (8, 1 << 24)}


def read_lenenc_or_null(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a length-encoded integer; NULL (0xFB) reads as -1."""
    if pos >= end:
        raise Truncated("length-encoded integer: input ends", needed=pos + 1)
    first = data[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFB:
        return -1, pos + 1
    if first == 0xFF:
        raise InvalidValue("length-encoded integer: 0xFF is not a valid first byte")
    size, least = _LENENC_SIZES[first]
    stop = pos + 1 + size
    if stop > end:
        raise Truncated("length-encoded integer: input ends inside it", needed=stop)
    value = int.from_bytes(data[pos + 1 : stop], "little")
    if value < least:
        raise NonCanonical(f"length-encoded integer: {value} in {size + 1} bytes is not shortest")
    return value, stop


def read_lenenc(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a length-encoded integer where NULL is not allowed."""
    value, stop = read_lenenc_or_null(data, pos, end)
    if value < 0:
        raise InvalidValue("length-encoded integer: NULL (0xFB) where a number is required")
    return value, stop


def write_lenenc(value: int) -> bytes:
    """Encode ``0 <= value < 2**64`` as a length-encoded integer (shortest form)."""
    if 0 <= value < 0xFB:
        return bytes((value,))
    if value < 0 or value > U64_MAX:
        raise EncodeError(f"length-encoded integer: value {value} out of range")
    if value < 1 << 16:
        return b"\xfc" + value.to_bytes(2, "little")
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + value.to_bytes(8, "little")


# --- VarU64 (https://github.com/AljoschaMeyer/varu64) ---------------------------
# A first byte below 248 is the value; 248 + k - 1 announces k (1..8) further bytes
# holding the value big-endian. Only the shortest encoding is valid.

_VARU64_MIN = (0, 248, 1 << 8, 1 << 16, 1 << 24, 1 << 32, 1 << 40, 1 << 48, 1 << 56)


def read_varu64(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a VarU64 at ``pos``; rejects non-canonical encodings."""
    if pos >= end:
        raise Truncated("VarU64: input ends", needed=pos + 1)
    first = data[pos]
    if first < 248:
        return first, pos + 1
    size = first - 247
    stop = pos + 1 + size
    if stop > end:
        raise Truncated("VarU64: input ends inside a VarU64", needed=stop)
    value = int.from_bytes(data[pos + 1 : stop], "big")
    if value < _VARU64_MIN[size]:
        raise NonCanonical(
            f"VarU64: {value} encoded in {size + 1} bytes; the shortest form is required"
        )
    return value, stop


def write_varu64(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**64) as a canonical VarU64."""
    if 0 <= value < 248:
        return bytes((value,))
    if value < 0 or value > U64_MAX:
        raise EncodeError(f"VarU64: value {value} out of range")
    size = (value.bit_length() + 7) // 8
    return bytes((247 + size,)) + value.to_bytes(size, "big")


# --- stream decoders ----------------------------------------------------------------

DecodeAt = Callable[[bytes, int, int, "C | None", "str | None"], "tuple[F, int]"]


class _FrameSplitter(Generic[F, C]):
    """What both stream decoders hold: the codec's decode_at, limits and the buffer."""

    def __init__(
        self,
        decode_at: Callable[[bytes, int, int, C | None, str | None], tuple[F, int]],
        max_frame_size: int,
        ctx: C | None,
        sender: str | None,
    ) -> None:
        self._decode_at = decode_at
        self.max_frame_size = max_frame_size
        self.ctx = ctx
        self.sender = sender
        self._buffer = bytearray()
        self._broken: ProtocolError | None = None
        # Called with each frame and its size on the wire (without a transport prefix)
        # as soon as it is decoded, before the next one is: for layouts that depend on
        # earlier frames (rsio's elementSize in ``ctx``) and byte credit (BPMUX).
        self.after_frame: Callable[[F, int], None] | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that has not fully arrived yet."""
        return len(self._buffer)


class LengthPrefixedDecoder(_FrameSplitter[F, C]):
    """Splits a byte stream into frames behind an unsigned big-endian length prefix.

    The prefix does not count itself (RSocket over TCP: 24 bits; RabbitMQ stream:
    32 bits). A declared length above ``max_frame_size`` fails before anything of the
    frame is buffered. A malformed frame is consumed (its length is known), so the
    caller may report it and go on feeding.
    """

    def __init__(
        self,
        decode_at: Callable[[bytes, int, int, C | None, str | None], tuple[F, int]],
        prefix_size: int,
        max_frame_size: int,
        ctx: C | None,
        sender: str | None,
    ) -> None:
        super().__init__(decode_at, max_frame_size, ctx, sender)
        self._prefix_size = prefix_size
        self._wanted = 0

    def feed(self, data: bytes | bytearray | memoryview) -> list[F]:
        """Add bytes from the stream; return every frame they complete, in order."""
        if self._broken is not None:
            raise self._broken
        buffer = self._buffer
        buffer += data
        frames: list[F] = []
        size = len(buffer)
        prefix = self._prefix_size
        if size < prefix or size < self._wanted:
            # Still inside a frame whose length we know: no copy, no decode attempt (a
            # big frame arriving in many pieces costs linear, not quadratic, time).
            return frames
        self._wanted = 0
        view = bytes(buffer)
        pos = 0
        try:
            while size - pos >= prefix:
                length = int.from_bytes(view[pos : pos + prefix], "big")
                if length > self.max_frame_size:
                    error = FrameTooLarge(
                        f"frame declares {length} bytes; the limit is {self.max_frame_size}"
                    )
                    self._broken = error
                    raise error
                start = pos + prefix
                stop = start + length
                if stop > size:
                    self._wanted = stop - pos  # what the buffer must hold once `pos` is cut
                    break
                pos = stop
                frame, used = self._decode_at(view, start, stop, self.ctx, self.sender)
                if used != stop:
                    raise TrailingBytes(f"{stop - used} bytes after the end of a frame")
                frames.append(frame)
                if self.after_frame is not None:
                    self.after_frame(frame, length)
        except DecodeError as error:
            del buffer[:pos]
            error.frames = list(frames)
            raise
        del buffer[:pos]
        return frames


class SelfDelimitingDecoder(_FrameSplitter[F, C]):
    """Splits a byte stream of self-delimiting frames (Reactive Streams, BPMUX).

    A frame is decoded from the buffer start; when the input ends inside it the
    decoder waits for at least the bytes the truncated field declared, and fails once
    a frame needs more than ``max_frame_size`` bytes. Any other error leaves the
    stream out of sync, so the decoder stays broken and re-raises it.
    """

    def __init__(
        self,
        decode_at: Callable[[bytes, int, int, C | None, str | None], tuple[F, int]],
        max_frame_size: int,
        ctx: C | None,
        sender: str | None,
    ) -> None:
        super().__init__(decode_at, max_frame_size, ctx, sender)
        self._needed = 0
        # A protocol whose first messages have a header of their own (PostgreSQL's startup
        # packet): the codec sets this, and ``expect_startup`` makes the next frame one.
        self.startup_decode_at: (
            Callable[[bytes, int, int, C | None, str | None], tuple[F, int]] | None
        ) = None
        self._startup_next = False

    def expect_startup(self) -> None:
        """Read the next frame with the startup header (the first message of a connection,
        or the one after an SSLRequest answered 'N')."""
        if self.startup_decode_at is None:
            raise TypeError("this protocol has no startup frames")
        self._startup_next = True

    def feed(self, data: bytes | bytearray | memoryview) -> list[F]:
        """Add bytes from the stream; return every frame they complete, in order."""
        if self._broken is not None:
            raise self._broken
        buffer = self._buffer
        buffer += data
        frames: list[F] = []
        size = len(buffer)
        if size < self._needed:
            return frames
        view = bytes(buffer)
        pos = 0
        limit = self.max_frame_size
        try:
            while pos < size:
                decode_at = self._decode_at
                if self._startup_next and self.startup_decode_at is not None:
                    decode_at = self.startup_decode_at
                try:
                    frame, stop = decode_at(view, pos, size, self.ctx, self.sender)
                except Truncated as short:
                    if short.needed - pos > limit or size - pos > limit:
                        raise FrameTooLarge(
                            f"a frame needs more than the limit of {limit} bytes"
                        ) from None
                    self._needed = max(short.needed - pos, size - pos + 1)
                    break
                if stop - pos > limit:
                    raise FrameTooLarge(
                        f"a frame of {stop - pos} bytes exceeds the limit of {limit}"
                    )
                frames.append(frame)
                self._startup_next = False
                if self.after_frame is not None:
                    self.after_frame(frame, stop - pos)
                pos = stop
            else:
                self._needed = 0
        except DecodeError as error:
            self._broken = error
            error.frames = list(frames)
            raise
        del buffer[:pos]
        return frames


# --- MessagePack boundary -----------------------------------------------------------


def msgpack_pack(obj: object) -> bytes:
    """Pack a frame's MessagePack array (bytes as bin, str as str)."""
    packed: bytes = msgpack.packb(obj, use_bin_type=True)
    return packed


def msgpack_unpack(data: bytes) -> object:
    """Unpack exactly one MessagePack object; every failure is a DecodeError."""
    try:
        return msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
    except msgpack.ExtraData as error:
        raise TrailingBytes("bytes after one MessagePack object") from error
    except msgpack.OutOfData as error:
        raise Truncated("MessagePack object is incomplete") from error
    except (ValueError, TypeError, msgpack.UnpackException) as error:
        raise MalformedMsgpack(f"not MessagePack: {error}") from error


MSGPACK_INITIAL_BUFFER = 16 * 1024


class MsgpackDecoder(Generic[F, C]):
    """Splits a byte stream of MessagePack-encoded frames."""

    def __init__(
        self,
        from_object: Callable[[object, C | None], F],
        max_frame_size: int,
        ctx: C | None,
    ) -> None:
        self._from_object = from_object
        self.max_frame_size = max_frame_size
        self.ctx = ctx
        self._unpacker = msgpack.Unpacker(
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_buffer_size=max_frame_size,
            # The buffer it starts with (msgpack's default: min(max_buffer_size, 1 MiB),
            # allocated up front -- 1 MiB per connection before a byte arrives); it grows
            # up to max_buffer_size only as frames need it.
            read_size=min(max_frame_size, MSGPACK_INITIAL_BUFFER),
        )
        self._broken: ProtocolError | None = None
        self.after_frame: Callable[[F, int], None] | None = None  # as in _FrameSplitter
        self._consumed = 0  # bytes of the stream the unpacker has turned into objects
        # Bytes of the stream fed so far.  The Unpacker's buffer does not bound a frame:
        # it parses an unfinished object as its bytes come (only an unfinished bin or str
        # stays in the buffer), so an object fed in small pieces -- arrays of arrays of
        # small items -- would grow without limit.  ``_fed - _consumed`` does.
        self._fed = 0

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that has not fully arrived yet."""
        return self._fed - self._consumed

    def feed(self, data: bytes | bytearray | memoryview) -> list[F]:
        """Add bytes from the stream; return every frame they complete, in order."""
        if self._broken is not None:
            raise self._broken
        frames: list[F] = []
        view = memoryview(data)
        step = max(1, self.max_frame_size // 2)
        try:
            for start in range(0, len(view), step):
                piece = view[start : start + step]
                try:
                    self._unpacker.feed(piece)
                except msgpack.BufferFull:
                    raise self._too_large() from None
                self._fed += len(piece)
                try:
                    for obj in self._unpacker:
                        consumed = self._unpacker.tell()
                        if consumed - self._consumed > self.max_frame_size:
                            raise self._too_large()
                        frame = self._from_object(obj, self.ctx)
                        frames.append(frame)
                        if self.after_frame is not None:
                            self.after_frame(frame, consumed - self._consumed)
                        self._consumed = consumed
                except DecodeError:
                    raise
                except (ValueError, TypeError, msgpack.UnpackException) as error:
                    raise MalformedMsgpack(f"not MessagePack: {error}") from error
                if self._fed - self._consumed > self.max_frame_size:
                    raise self._too_large()  # an unfinished frame already beyond the limit
        except DecodeError as error:
            self._broken = error
            error.frames = list(frames)
            raise
        return frames

    def _too_large(self) -> FrameTooLarge:
        return FrameTooLarge(f"a MessagePack frame exceeds the limit of {self.max_frame_size}")


def utf8(data: bytes, what: str) -> str:
    """Decode a UTF-8 string field, naming the field when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidString(f"{what}: not UTF-8 ({error.reason})") from None


# --- checks of values read from MessagePack -------------------------------------------


def mp_int(value: object, low: int, high: int, what: str) -> int:
    """An integer within [low, high] (bool is not an integer here)."""
    if type(value) is not int:
        raise MalformedMsgpack(f"{what}: expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidValue(f"{what}: {value} is outside {low}..{high}")
    return value


def mp_bool(value: object, what: str) -> bool:
    if type(value) is not bool:
        raise MalformedMsgpack(f"{what}: expected a boolean, got {type(value).__name__}")
    return value


def mp_bytes(value: object, what: str) -> bytes:
    if type(value) is not bytes:
        raise MalformedMsgpack(f"{what}: expected bin, got {type(value).__name__}")
    return value


def mp_str(value: object, what: str) -> str:
    if type(value) is not str:
        raise MalformedMsgpack(f"{what}: expected str, got {type(value).__name__}")
    return value


def mp_list(value: object, what: str) -> list[object]:
    if type(value) is not list:
        raise MalformedMsgpack(f"{what}: expected an array, got {type(value).__name__}")
    return value
