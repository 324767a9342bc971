"""One test per construct rule of the IDL (idl/README.md), named after the rule.

Each group of rules has a small IDL of its own, inline below: integer flavours, byte order
and floats (``INTS``); framing by a header length field, once per way of counting
(``LENGTHS``); a startup header and terminators (``BOOT``); presence, flags, rules,
constraints, expressions, enums and a machine with ``stay`` rows (``PRESENCE``); frames
chosen by context, peeked byte, ``*`` codes and ``select`` (``ROUTED``). All of them are
generated once per module (Python codec, strategies, machines) into a temporary package,
in-process with ``generate_tree`` as tests/typescript/test_constructs_typescript.py does, and each
test proves its rule on bytes: the exact bytes written, what they decode to, and the exact
``ProtocolError`` subclass a broken rule raises on decode and on encode. A hypothesis round
trip over each IDL's generated strategies closes the module.
"""

from __future__ import annotations

import importlib
import math
import struct
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from wirestream.codegen.cli import generate_tree
from wirestream.runtime.errors import (
    EncodeError,
    IllegalSend,
    InvalidString,
    InvalidValue,
    NonCanonical,
    ProtocolError,
    RuleViolation,
    TrailingBytes,
    Truncated,
    UnknownFrameType,
)

PACKAGE = "idl_constructs_gen"  # the temporary package (unique: no clash with other tests)

INTS = """\
wirestream: 1
protocol: ints
version: v1
title: integer flavours, byte order and floats
byte_order: little
framing: {length_prefix: u32}
header:
  fields:
    - {name: kind, type: u8}
  discriminator: kind
unknown: {policy: error}
frames:
  Vbi: {code: 1, fields: [{name: v, type: vbi}]}
  Lenenc: {code: 2, fields: [{name: n, type: lenenc}]}
  LenencBytes:
    code: 3
    fields:
      - {name: maybe, type: bytes, length: lenenc, nullable: true}
      - {name: never, type: bytes, length: lenenc}
  Varint: {code: 4, fields: [{name: v, type: varint}]}
  Zigzag: {code: 5, fields: [{name: v, type: zigzag}]}
  Little:
    code: 6
    fields:
      - {name: a, type: u16}          # the file's byte order: little
      - {name: b, type: u32be}        # its own
      - {name: c, type: i32}
      - word: u16                     # a word in the file's byte order
        bits:
          - {name: hi, width: 4}
          - {name: lo, width: 12}
      - word: u16be
        bits:
          - {name: top, width: 8}
          - {name: bottom, width: 8}
  U24:
    code: 7
    fields:
      - {name: le, type: u24le}
      - {name: be, type: u24be}
      - {name: default, type: u24}
  F32:
    code: 8
    fields:
      - {name: x, type: f32}
      - {name: y, type: f32be}
  F64:
    code: 9
    fields:
      - {name: x, type: f64}
      - {name: y, type: f64be}
"""

# One header (kind, a length, seq) framed five ways: what the length counts, and a vbi length.
LENGTH_TEMPLATE = """\
wirestream: 1
protocol: {protocol}
version: v1
title: a header length counting {counts}
framing: {{length_field: length, counts: {counts}{adjust}}}
header:
  fields:
    - {{name: kind, type: u8}}
    - {{name: length, type: {length}}}
    - {{name: seq, type: u8}}
  discriminator: kind
unknown: {{policy: {policy}}}
frames:
  Msg: {{code: 1, fields: [{{name: data, type: bytes, length: rest}}]}}
  Fixed: {{code: 2, fields: [{{name: value, type: u32}}]}}
"""
LENGTHS = {
    protocol: LENGTH_TEMPLATE.format(
        protocol=protocol, length=length, counts=counts, adjust=adjust, policy=policy
    )
    for protocol, length, counts, adjust, policy in [
        ("len_after_header", "u16", "after_header", "", "error"),
        ("len_after_length", "u16", "after_length", "", "skip"),
        ("len_from_length", "u16", "from_length", "", "error"),
        ("len_frame", "u16", "frame", ", adjust: 2", "error"),
        ("len_vbi", "vbi", "after_header", "", "error"),  # a flavour (MQTT's Remaining Length)
    ]
}

BOOT = """\
wirestream: 1
protocol: boot
version: v1
title: a startup header, terminated strings and arrays
framing: {length_field: length, counts: from_length}
startup:
  fields:
    - {name: length, type: u32}
    - {name: request_code, type: u32}
  discriminator: request_code
  length_field: length
  counts: frame
header:
  fields:
    - {name: message_type, type: u8}
    - {name: length, type: u32}
  discriminator: message_type
unknown: {policy: error}
structs:
  Param:
    fields:
      - {name: name, type: string, terminator: 0}
      - {name: value, type: string, terminator: 0}
frames:
  Hello:
    startup: true
    code: 196608
    fields:
      - {name: params, type: array, of: Param, terminator: 0}
  SslRequest:
    startup: true
    code: 80877103
    fields: []
  Query:
    code: 0x51
    fields:
      - {name: sql, type: string, terminator: 0}
  Names:
    code: 0x4E
    fields:
      - {name: names, type: array, of: {type: string, terminator: 0}, terminator: 0}
"""

PRESENCE = """\
wirestream: 1
protocol: presence
version: v1
title: presence, flags, rules, constraints, expressions, enums, machines
framing: {length_prefix: u32}
header:
  fields:
    - word: u16
      bits:
        - {name: kind, width: 8}
        - {flags: 8}
  discriminator: kind
unknown: {policy: error}
enums:
  QoS: {type: u8, values: {AT_MOST_ONCE: 0, AT_LEAST_ONCE: 1, EXACTLY_ONCE: 2}}
  Color: {type: u8, values: {RED: 1, GREEN: 2}}
  Tag: {type: u8, open: true, values: {A: 1}}
frames:
  Flagged:
    code: 1
    flags: {meta: 0x80, loud: 0x40}
    fields:
      - {name: metadata, type: bytes, length: u8, if: meta}
      - {name: data, type: bytes, length: rest}
  Will:
    code: 2
    fields:
      - word: u8
        bits:
          - {name: will, bool: true}
          - {name: retain, bool: true}
          - {reserved: 6}
      - {name: topic, type: string, length: u8, if: will}
      - {name: payload, type: bytes, length: u8, if: will}
  Conditional:
    code: 3
    fields:
      - {name: qos, type: u8, max: 2}
      - {name: packet_id, type: u16, if: "qos > 0"}
  More:
    code: 4
    fields:
      - {name: first, type: u8}
      - {name: reason, type: u8, if: more}
      - {name: props, type: bytes, length: u8, if: more}
      - {name: tail, type: bytes, length: rest, if: more}
  Publish:
    code: 5
    flags:
      dup: 0x08
      qos: {mask: 0x06, enum: QoS}
      retain: 0x01
    fields:
      - {name: topic, type: string, length: u8}
  Subscribe:
    code: 6
    fixed_flags: 0x02
    fields:
      - {name: packet_id, type: u16}
  Ruled:
    code: 7
    fields:
      - {name: low, type: u8}
      - {name: high, type: u8}
    rules:
      - {check: "low <= high", spec: "test rule: low must not exceed high"}
  Texts:
    code: 8
    fields:
      - {name: topic, type: string, length: u8, forbid: [0, 0x2B]}
      - {name: blob, type: bytes, length: u8, forbid: [0xFF]}
  Listed:
    code: 9
    fields:
      - {name: items, type: array, of: u8, count: rest, min_count: 2}
  Sized:
    code: 10
    fields:
      - {name: n, type: u8}
      - {name: half, type: bytes, size: "(n + 1) / 2"}
      - {name: k, type: u8}
      - {name: opt, type: u8, if: "k > 3"}
      - {name: sized, type: bytes, size: "opt * 2"}
  Enums:
    code: 11
    fields:
      - {name: color, type: u8, enum: Color}
      - word: u8
        bits:
          - {name: shade, width: 4, enum: Color}
          - {reserved: 4}
      - {name: tag, type: u8, enum: Tag}
machines:
  session:
    roles: [client]
    states:
      idle: nothing sent yet
      open: a Conditional was sent
      closed: a Ruled was sent
    initial: idle
    terminal: [closed]
    transitions:
      - {from: idle, send: Conditional, to: open}
      - {from: [idle, open], send: Flagged, stay: true}
      - {from: [idle, open], receive: More, stay: true}
      - {from: open, send: Ruled, to: closed}
      - {from: open, send: "*", error: "only Flagged or Ruled while open"}
"""

ROUTED = """\
wirestream: 1
protocol: routed
version: v1
title: frames chosen by context and first byte
framing: {length_field: length, counts: after_header}
context:
  phase: {default: 1, doc: what the receiver expects next}
header:
  fields:
    - {name: length, type: u16}
    - {name: first, type: u8, peek: true}
  discriminator: [ctx.phase, first]
unknown: {policy: error}
frames:
  Ok:
    code: [1, 0x00]
    fields:
      - {name: marker, type: u8, const: 0x00}
      - {name: info, type: bytes, length: rest}
  Err:
    code: [1, 0xFF]
    fields:
      - {name: marker, type: u8, const: 0xFF}
      - {name: error_code, type: u16}
  Data:
    code: [1, "*"]
    fields:
      - {name: payload, type: bytes, length: rest}
  Eof:
    code: [2, 0xFE]
    select: "remaining < 5"
    fields:
      - {name: marker, type: u8, const: 0xFE}
      - {name: warnings, type: u16}
  Row:
    code: [2, "*"]
    fields:
      - {name: cells, type: bytes, length: rest}
"""

IDLS = {"ints": INTS, **LENGTHS, "boot": BOOT, "presence": PRESENCE, "routed": ROUTED}


class Generated:
    """The generated package: ``codec(name)``, ``strategies(name)``, ``machines(name)``."""

    def codec(self, protocol: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{protocol}.v1")

    def strategies(self, protocol: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{protocol}.v1.strategies")

    def machines(self, protocol: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{protocol}.v1.machines")


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    """Every IDL above generated (Python) into ``PACKAGE`` in a temporary folder, once."""
    out = tmp_path_factory.mktemp("idl_constructs")
    tree = out / "idl"
    for protocol, text in IDLS.items():
        (tree / protocol).mkdir(parents=True)
        (tree / protocol / "v1.yaml").write_text(text, encoding="utf-8")
    for rel, text in generate_tree(tree, PACKAGE).items():
        path = out / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(out))
    try:
        yield Generated()
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def ints(gen: Generated) -> ModuleType:
    return gen.codec("ints")


@pytest.fixture(scope="module")
def boot(gen: Generated) -> ModuleType:
    return gen.codec("boot")


@pytest.fixture(scope="module")
def pres(gen: Generated) -> ModuleType:
    return gen.codec("presence")


@pytest.fixture(scope="module")
def routed(gen: Generated) -> ModuleType:
    return gen.codec("routed")


def refused(error: type[ProtocolError], call: Callable[..., Any], *args: Any, **kw: Any) -> str:
    """``call(*args, **kw)`` raises exactly ``error`` (not a subclass, not a base); its
    message."""
    assert issubclass(error, ProtocolError)
    with pytest.raises(ProtocolError) as info:
        call(*args, **kw)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    return str(info.value)


def f32_bytes(bits: int, little: bool = True) -> bytes:
    return bits.to_bytes(4, "little" if little else "big")


def f64_bytes(bits: int, little: bool = True) -> bytes:
    return bits.to_bytes(8, "little" if little else "big")


# --- integer flavours ---------------------------------------------------------------------


VBI_BOUNDS = [
    (0, "00"),
    (127, "7f"),
    (128, "8001"),
    (16383, "ff7f"),
    (16384, "808001"),
    (2097151, "ffff7f"),
    (2097152, "80808001"),
    (268435455, "ffffff7f"),
]


def test_vbi_takes_one_to_four_bytes_at_each_size_bound(ints: ModuleType) -> None:
    for value, wire in VBI_BOUNDS:
        data = b"\x01" + bytes.fromhex(wire)
        assert ints.encode(ints.Vbi(v=value)) == data
        assert ints.decode(data) == ints.Vbi(v=value)
    refused(EncodeError, ints.encode, ints.Vbi(v=268435456))
    refused(EncodeError, ints.encode, ints.Vbi(v=-1))


def test_vbi_rejects_a_fifth_byte(ints: ModuleType) -> None:
    refused(InvalidValue, ints.decode, b"\x01\x80\x80\x80\x80\x01")
    # four bytes that all say "more follows": refused without waiting for a fifth
    refused(InvalidValue, ints.decode, b"\x01\xff\xff\xff\xff")
    decoder = ints.StreamDecoder()
    frame = b"\x01\xff\xff\xff\xff"
    refused(InvalidValue, decoder.feed, len(frame).to_bytes(4, "big") + frame)


def test_vbi_rejects_an_overlong_form(ints: ModuleType) -> None:
    for wire in ("8000", "8100", "ff8000", "80808000", "ffffff00"):
        refused(NonCanonical, ints.decode, b"\x01" + bytes.fromhex(wire))
    refused(Truncated, ints.decode, b"\x01\x80")


LENENC_BOUNDS = [
    (0, "00"),
    (250, "fa"),
    (251, "fcfb00"),
    (0xFFFF, "fcffff"),
    (0x10000, "fd000001"),
    (0xFFFFFF, "fdffffff"),
    (0x1000000, "fe0000000100000000"),
    (2**64 - 1, "feffffffffffffffff"),
]


def test_lenenc_forms_at_their_bounds(ints: ModuleType) -> None:
    for value, wire in LENENC_BOUNDS:
        data = b"\x02" + bytes.fromhex(wire)
        assert ints.encode(ints.Lenenc(n=value)) == data, value
        assert ints.decode(data) == ints.Lenenc(n=value)
    refused(EncodeError, ints.encode, ints.Lenenc(n=2**64))
    refused(EncodeError, ints.encode, ints.Lenenc(n=-1))


def test_lenenc_rejects_a_longer_form_than_needed(ints: ModuleType) -> None:
    for wire in ("fc0500", "fcfa00", "fdffff00", "fdfaff00", "feffffff0000000000"):
        refused(NonCanonical, ints.decode, b"\x02" + bytes.fromhex(wire))


def test_lenenc_rejects_0xff(ints: ModuleType) -> None:
    refused(InvalidValue, ints.decode, b"\x02\xff")
    refused(InvalidValue, ints.decode, b"\x03\xff")  # as a length too


def test_lenenc_null_only_where_nullable(ints: ModuleType) -> None:
    assert ints.encode(ints.LenencBytes(maybe=None, never=b"")) == b"\x03\xfb\x00"
    assert ints.decode(b"\x03\xfb\x00") == ints.LenencBytes(maybe=None, never=b"")
    # an empty value is not NULL
    assert ints.encode(ints.LenencBytes(maybe=b"", never=b"x")) == b"\x03\x00\x01x"
    assert ints.decode(b"\x03\x00\x01x").maybe == b""
    refused(InvalidValue, ints.decode, b"\x03\x00\xfb")  # NULL where the length is not nullable
    refused(InvalidValue, ints.decode, b"\x02\xfb")  # NULL where a number is needed


def test_varint_rejects_a_trailing_zero_group(ints: ModuleType) -> None:
    for wire in ("8000", "ff00", "ff8000", "80808080808080808000"):
        refused(NonCanonical, ints.decode, b"\x04" + bytes.fromhex(wire))
    assert ints.decode(b"\x04\xff\x01") == ints.Varint(v=255)


def test_varint_carries_at_most_64_bits_in_10_bytes(ints: ModuleType) -> None:
    top = b"\x04" + b"\xff" * 9 + b"\x01"
    assert ints.encode(ints.Varint(v=2**64 - 1)) == top
    assert ints.decode(top) == ints.Varint(v=2**64 - 1)
    refused(InvalidValue, ints.decode, b"\x04" + b"\xff" * 9 + b"\x02")  # 2**64
    refused(InvalidValue, ints.decode, b"\x04" + b"\x80" * 10 + b"\x01")  # 11 bytes
    refused(EncodeError, ints.encode, ints.Varint(v=2**64))
    refused(EncodeError, ints.encode, ints.Varint(v=-1))


def test_zigzag_round_trips_extremes(ints: ModuleType) -> None:
    for value, wire in [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"),
                        (2**63 - 1, "feffffffffffffffff01"),
                        (-(2**63), "ffffffffffffffffff01")]:  # fmt: skip
        data = b"\x05" + bytes.fromhex(wire)
        assert ints.encode(ints.Zigzag(v=value)) == data, value
        assert ints.decode(data) == ints.Zigzag(v=value)
    refused(EncodeError, ints.encode, ints.Zigzag(v=2**63))
    refused(EncodeError, ints.encode, ints.Zigzag(v=-(2**63) - 1))
    refused(NonCanonical, ints.decode, b"\x05\x80\x00")


# --- byte order ---------------------------------------------------------------------------


def test_little_endian_fields_and_words(ints: ModuleType) -> None:
    frame = ints.Little(a=0x0102, b=0x03040506, c=-2, hi=0xA, lo=0xBCD, top=0x11, bottom=0x22)
    data = bytes.fromhex("06" "0201" "03040506" "feffffff" "cdab" "1122")
    assert ints.encode(frame) == data
    assert ints.decode(data) == frame
    refused(EncodeError, ints.encode, ints.Little(hi=16))  # 4 bits
    refused(EncodeError, ints.encode, ints.Little(c=2**31))


def test_u24(ints: ModuleType) -> None:
    frame = ints.U24(le=0x010203, be=0x010203, default=0x0A0B0C)
    data = bytes.fromhex("07" "030201" "010203" "0c0b0a")
    assert ints.encode(frame) == data
    assert ints.decode(data) == frame
    assert ints.decode(bytes.fromhex("07" "ffffff" "ffffff" "ffffff")).le == 0xFFFFFF
    refused(EncodeError, ints.encode, ints.U24(le=1 << 24))
    refused(EncodeError, ints.encode, ints.U24(be=-1))
    refused(Truncated, ints.decode, bytes.fromhex("07" "030201" "0102"))


# --- floats -------------------------------------------------------------------------------


def test_f32_keeps_nan_payload_bits(ints: ModuleType) -> None:
    # signalling (0x7FA00001, 0x7F800001), quiet with a payload, negative; both byte orders
    for x_bits, y_bits in [(0x7FA00001, 0xFFC12345), (0x7F800001, 0x7FFFFFFF),
                           (0xFF800001, 0x7FC00000)]:  # fmt: skip
        data = b"\x08" + f32_bytes(x_bits) + f32_bytes(y_bits, little=False)
        frame = ints.decode(data)
        assert math.isnan(frame.x) and math.isnan(frame.y)
        assert ints.encode(frame) == data, f"{x_bits:#x} {y_bits:#x}"


def test_f32_is_rounded_and_refused_out_of_range(ints: ModuleType) -> None:
    data = ints.encode(ints.F32(x=0.1, y=-0.0))
    assert data == b"\x08" + struct.pack("<f", 0.1) + b"\x80\x00\x00\x00"
    back = ints.decode(data)
    assert back.x == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert math.copysign(1.0, back.y) == -1.0
    for value in (math.inf, -math.inf):
        assert ints.decode(ints.encode(ints.F32(x=value, y=0.0))).x == value
    refused(EncodeError, ints.encode, ints.F32(x=1e39, y=0.0))


def test_f64_signed_zero(ints: ModuleType) -> None:
    data = b"\x09" + f64_bytes(1 << 63) + f64_bytes(0, little=False)
    assert ints.encode(ints.F64(x=-0.0, y=0.0)) == data
    back = ints.decode(data)
    assert math.copysign(1.0, back.x) == -1.0 and math.copysign(1.0, back.y) == 1.0
    data = b"\x09" + f64_bytes(0) + f64_bytes(1 << 63, little=False)
    assert math.copysign(1.0, ints.decode(data).y) == -1.0


def test_f64_keeps_nan_payload_bits(ints: ModuleType) -> None:
    data = b"\x09" + f64_bytes(0x7FF0000000000001) + f64_bytes(0xFFF8DEADBEEF0001, little=False)
    assert ints.encode(ints.decode(data)) == data


# --- framing by a header length field -----------------------------------------------------


def check_length_counts(c: ModuleType, header: bytes, empty_header: bytes) -> None:
    """``Msg(seq=7, data=b"abc")`` is ``header`` and the body; an empty one, ``empty_header``;
    the declared length decides where each frame ends, on a stream fed byte by byte too."""
    frame, empty = c.Msg(seq=7, data=b"abc"), c.Msg(seq=1, data=b"")
    data = header + b"abc"
    assert c.encode(frame) == data
    assert c.decode(data) == frame
    assert c.encode(empty) == empty_header
    assert c.decode(empty_header) == empty
    decoder = c.StreamDecoder()
    frames = []
    for byte in data + empty_header + data:
        frames += decoder.feed(bytes((byte,)))
    assert frames == [frame, empty, frame]


def test_length_field_counts_after_header(gen: Generated) -> None:
    # the body: 3
    check_length_counts(gen.codec("len_after_header"), b"\x01\x00\x03\x07", b"\x01\x00\x00\x01")


def test_length_field_counts_after_length(gen: Generated) -> None:
    # seq and the body: 4
    check_length_counts(gen.codec("len_after_length"), b"\x01\x00\x04\x07", b"\x01\x00\x01\x01")


def test_length_field_counts_from_length(gen: Generated) -> None:
    # the length field itself, seq and the body: 6
    check_length_counts(gen.codec("len_from_length"), b"\x01\x00\x06\x07", b"\x01\x00\x03\x01")


def test_length_field_counts_frame_with_adjust(gen: Generated) -> None:
    # the whole frame (7 bytes), less the adjust of 2 (the count is the value + 2): 5
    check_length_counts(gen.codec("len_frame"), b"\x01\x00\x05\x07", b"\x01\x00\x02\x01")


def test_length_field_of_a_flavour(gen: Generated) -> None:
    # a vbi length (MQTT's Remaining Length): the header grows with it
    c = gen.codec("len_vbi")
    check_length_counts(c, b"\x01\x03\x07", b"\x01\x00\x01")
    bounds = [(127, b"\x7f"), (128, b"\x80\x01"), (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01")]
    for size, length in bounds:
        frame = c.Msg(seq=2, data=b"d" * size)
        data = b"\x01" + length + b"\x02" + b"d" * size
        assert c.encode(frame) == data, size
        assert c.decode(data) == frame
        decoder = c.StreamDecoder()
        assert decoder.feed(data[:-1]) == []
        assert decoder.feed(data[-1:]) == [frame]
    refused(NonCanonical, c.decode, b"\x01\x81\x00\x07")
    refused(Truncated, c.decode, b"\x01\x80")


def test_length_shorter_than_the_header_is_refused(gen: Generated) -> None:
    # counts: frame, adjust 2: 1 + 2 = 3 bytes, but the header alone is 4
    c = gen.codec("len_frame")
    refused(InvalidValue, c.decode, b"\x01\x00\x01\x07")
    assert c.decode(b"\x01\x00\x02\x07") == c.Msg(seq=7, data=b"")
    # counts: from_length: 2 counts the length field but not seq
    c = gen.codec("len_from_length")
    refused(InvalidValue, c.decode, b"\x01\x00\x02\x07")
    refused(InvalidValue, c.StreamDecoder().feed, b"\x01\x00\x02\x07\x01\x00\x03\x07")
    assert c.decode(b"\x01\x00\x03\x07") == c.Msg(seq=7, data=b"")


def test_length_longer_than_the_input_is_truncated_and_awaited(gen: Generated) -> None:
    c = gen.codec("len_after_header")
    with pytest.raises(Truncated) as info:
        c.decode(b"\x01\x00\x05\x07ab")
    assert type(info.value) is Truncated and info.value.needed == 9
    decoder = c.StreamDecoder()
    assert decoder.feed(b"\x01\x00\x05\x07ab") == []
    assert decoder.feed(b"cde") == [c.Msg(seq=7, data=b"abcde")]


def test_body_past_declared_length_is_invalid_not_truncated(gen: Generated) -> None:
    c = gen.codec("len_after_header")
    short = b"\x02\x00\x02\x07\x00\x00"  # a u32 in a body of 2 bytes
    refused(InvalidValue, c.decode, short)
    # a stream decoder refuses it at once instead of waiting for bytes that belong to the
    # next frame
    decoder = c.StreamDecoder()
    with pytest.raises(InvalidValue) as info:
        decoder.feed(c.encode(c.Msg(seq=1, data=b"x")) + short)
    assert type(info.value) is InvalidValue
    assert info.value.frames == [c.Msg(seq=1, data=b"x")]  # what came before is not lost
    refused(InvalidValue, c.StreamDecoder().feed, short + b"\x00" * 8)
    refused(InvalidValue, c.StreamDecoder().feed, short)


def test_body_shorter_than_declared_length_is_trailing_bytes(gen: Generated) -> None:
    c = gen.codec("len_after_header")
    refused(TrailingBytes, c.decode, b"\x02\x00\x06\x07" + bytes(6))
    assert c.decode(b"\x02\x00\x04\x07" + bytes((0, 0, 1, 0))) == c.Fixed(seq=7, value=256)


def test_unknown_policy_skip_keeps_the_body(gen: Generated) -> None:
    c = gen.codec("len_after_length")
    unknown = b"\x09\x00\x03\x05xy"  # type 9: seq and a body of 2 bytes
    frame = c.decode(unknown)
    assert type(frame) is c.UnknownFrame
    assert (frame.code, frame.seq, frame.body) == (9, 5, b"xy")
    assert c.encode(frame) == unknown
    msg = c.encode(c.Msg(seq=1, data=b"m"))
    assert c.StreamDecoder().feed(msg + unknown + msg) == [c.Msg(seq=1, data=b"m"), frame,
                                                           c.Msg(seq=1, data=b"m")]  # fmt: skip
    # the length is still derived, and checked
    refused(EncodeError, c.encode, c.UnknownFrame(code=9, seq=0, body=bytes(0xFFFF)))
    # the policy error refuses the same bytes
    refused(UnknownFrameType, gen.codec("len_after_header").decode, b"\x09\x00\x02\x05xy")


# --- startup header and terminators -------------------------------------------------------

HELLO = bytes.fromhex("00000012" "00030000") + b"user\x00bob\x00\x00"
SSL = bytes.fromhex("00000008" "04d2162f")
QUERY = b"Q\x00\x00\x00\x0dselect 1\x00"


def test_startup_frame_then_regular_frames(boot: ModuleType) -> None:
    hello = boot.Hello(params=[boot.Param("user", "bob")])
    assert boot.encode(hello) == HELLO
    assert boot.encode(boot.SslRequest()) == SSL
    assert boot.encode(boot.Query(sql="select 1")) == QUERY
    assert boot.decode_startup(HELLO) == hello
    assert boot.Hello.STARTUP and not boot.Query.STARTUP
    decoder = boot.StreamDecoder(startup=True)
    assert decoder.feed(SSL) == [boot.SslRequest()]
    # SSLRequest answered 'N': the client sends another startup frame
    decoder.expect_startup()
    frames = []
    for byte in HELLO + QUERY + QUERY:
        frames += decoder.feed(bytes((byte,)))
    assert frames == [hello, boot.Query(sql="select 1"), boot.Query(sql="select 1")]
    # the regular header does not read a startup frame, nor the startup header a regular one
    refused(UnknownFrameType, boot.decode_startup, bytes.fromhex("00000008" "00000001"))
    refused(InvalidValue, boot.decode_startup, bytes.fromhex("00000004" "04d2162f"))
    refused(TrailingBytes, boot.decode_startup, SSL + b"\x00")
    refused(Truncated, boot.decode, SSL)  # type 0x00 declaring 0x804 bytes


def test_terminated_string_missing_terminator(boot: ModuleType) -> None:
    refused(InvalidValue, boot.decode, b"Q\x00\x00\x00\x08abcd")  # within the frame's length
    assert boot.decode(b"Q\x00\x00\x00\x05\x00") == boot.Query(sql="")
    refused(EncodeError, boot.encode, boot.Query(sql="a\x00b"))
    refused(TrailingBytes, boot.decode, b"Q\x00\x00\x00\x07ab\x00c")


def test_terminated_array_missing_terminator(boot: ModuleType) -> None:
    refused(InvalidValue, boot.decode, b"N\x00\x00\x00\x06a\x00")
    assert boot.decode(b"N\x00\x00\x00\x07a\x00\x00") == boot.Names(names=["a"])
    assert boot.decode(b"N\x00\x00\x00\x05\x00") == boot.Names(names=[])
    assert boot.encode(boot.Names(names=["a", "bc"])) == b"N\x00\x00\x00\x0aa\x00bc\x00\x00"


def test_terminated_array_element_cannot_start_with_terminator(boot: ModuleType) -> None:
    refused(EncodeError, boot.encode, boot.Names(names=["a", ""]))
    refused(EncodeError, boot.encode, boot.Hello(params=[boot.Param("", "x")]))
    refused(EncodeError, boot.encode, boot.Hello(params=[boot.Param("x\x00", "x")]))
    assert boot.encode(boot.Hello(params=[boot.Param("x", "")])) is not None


# --- presence -----------------------------------------------------------------------------


def test_presence_flag_is_set_by_the_field(pres: ModuleType) -> None:
    cases = [
        (pres.Flagged(metadata=None, data=b"x"), "0100" "78"),
        (pres.Flagged(metadata=b"", data=b"x"), "0180" "00" "78"),
        (pres.Flagged(metadata=b"m", data=b"", loud=True), "01c0" "016d"),
    ]
    for frame, wire in cases:
        assert pres.encode(frame) == bytes.fromhex(wire)
        assert pres.decode(bytes.fromhex(wire)) == frame
    assert not hasattr(pres.Flagged(data=b""), "meta")  # the flag is not an attribute
    assert pres.decode(bytes.fromhex("0100" "0078")).data == b"\x00x"  # flag clear: data


def test_bool_bit_presence_shared_by_two_fields(pres: ModuleType) -> None:
    both = pres.Will(retain=True, topic="t", payload=b"p")
    assert pres.encode(both) == bytes.fromhex("0200" "c0" "0174" "0170")
    assert pres.decode(bytes.fromhex("0200" "c0" "0174" "0170")) == both
    assert pres.encode(pres.Will(retain=False)) == bytes.fromhex("0200" "00")
    assert pres.decode(bytes.fromhex("0200" "40")) == pres.Will(retain=True)
    refused(EncodeError, pres.encode, pres.Will(topic="t", payload=None))
    refused(EncodeError, pres.encode, pres.Will(topic=None, payload=b"p"))


def test_condition_presence_enforced_on_encode(pres: ModuleType) -> None:
    assert pres.encode(pres.Conditional(qos=1, packet_id=0x0102)) == bytes.fromhex("0300010102")
    assert pres.encode(pres.Conditional(qos=0)) == bytes.fromhex("030000")
    assert pres.decode(bytes.fromhex("0300020304")) == pres.Conditional(qos=2, packet_id=0x0304)
    assert pres.decode(bytes.fromhex("030000")) == pres.Conditional(qos=0, packet_id=None)
    refused(EncodeError, pres.encode, pres.Conditional(qos=1, packet_id=None))
    refused(EncodeError, pres.encode, pres.Conditional(qos=0, packet_id=5))
    refused(TrailingBytes, pres.decode, bytes.fromhex("0300000102"))
    refused(InvalidValue, pres.decode, bytes.fromhex("0300030000"))  # max: 2
    refused(EncodeError, pres.encode, pres.Conditional(qos=3, packet_id=1))


def test_more_fields_in_order(pres: ModuleType) -> None:
    cases = [
        (pres.More(first=1), "0400" "01"),
        (pres.More(first=1, reason=2), "0400" "0102"),
        (pres.More(first=1, reason=2, props=b""), "0400" "010200"),
        (pres.More(first=1, reason=2, props=b"", tail=b"t"), "0400" "01020074"),
    ]
    for frame, wire in cases:
        assert pres.encode(frame) == bytes.fromhex(wire)
        assert pres.decode(bytes.fromhex(wire)) == frame
    refused(EncodeError, pres.encode, pres.More(first=1, reason=None, props=b"p"))
    refused(EncodeError, pres.encode, pres.More(first=1, reason=2, props=None, tail=b"t"))
    refused(EncodeError, pres.encode, pres.More(first=1, tail=b"t"))


def test_more_rest_field_cannot_be_empty(pres: ModuleType) -> None:
    refused(EncodeError, pres.encode, pres.More(first=1, reason=2, props=b"", tail=b""))
    # it would read back as absent
    assert pres.decode(bytes.fromhex("0400010200")).tail is None


# --- flags --------------------------------------------------------------------------------


def test_flag_value_with_enum(pres: ModuleType) -> None:
    frame = pres.Publish(topic="a", qos=pres.QoS.EXACTLY_ONCE, retain=True)
    assert pres.encode(frame) == bytes.fromhex("0505" "0161")
    assert pres.decode(bytes.fromhex("0505" "0161")) == frame
    back = pres.decode(bytes.fromhex("050a" "0161"))
    assert back.qos is pres.QoS.AT_LEAST_ONCE and back.dup and not back.retain
    refused(InvalidValue, pres.decode, bytes.fromhex("0506" "0161"))  # qos 3
    refused(EncodeError, pres.encode, pres.Publish(topic="a", qos=3))
    # bits no flag names: ignored on receive, 0 on send
    assert pres.encode(pres.decode(bytes.fromhex("05f2" "0161"))) == bytes.fromhex("0502" "0161")


def test_fixed_flags_checked_and_written(pres: ModuleType) -> None:
    assert pres.encode(pres.Subscribe(packet_id=1)) == bytes.fromhex("0602" "0001")
    assert pres.decode(bytes.fromhex("0602" "0001")) == pres.Subscribe(packet_id=1)
    for flags in ("00", "03", "82", "06"):
        refused(InvalidValue, pres.decode, bytes.fromhex("06" + flags + "0001"))


# --- rules and constraints ----------------------------------------------------------------


def test_rule_refused_on_decode_with_rule_violation_and_on_encode(pres: ModuleType) -> None:
    assert pres.decode(bytes.fromhex("0700" "0102")) == pres.Ruled(low=1, high=2)
    assert pres.decode(bytes.fromhex("0700" "0202")) == pres.Ruled(low=2, high=2)
    message = refused(RuleViolation, pres.decode, bytes.fromhex("0700" "0201"))
    assert "low <= high" in message and "test rule: low must not exceed high" in message
    message = refused(EncodeError, pres.encode, pres.Ruled(low=2, high=1))
    assert "low <= high" in message


def test_forbid_characters(pres: ModuleType) -> None:
    assert pres.encode(pres.Texts(topic="\u00e9", blob=b"\x00")) == bytes.fromhex(
        "0800" "02c3a9" "0100"
    )
    refused(InvalidString, pres.decode, bytes.fromhex("0800" "026100" "00"))
    refused(InvalidString, pres.decode, bytes.fromhex("0800" "012b" "00"))
    refused(InvalidValue, pres.decode, bytes.fromhex("0800" "00" "0261ff"))
    refused(InvalidString, pres.decode, bytes.fromhex("0800" "01ff" "00"))  # not UTF-8
    refused(EncodeError, pres.encode, pres.Texts(topic="a\x00", blob=b""))
    refused(EncodeError, pres.encode, pres.Texts(topic="a+", blob=b""))
    refused(EncodeError, pres.encode, pres.Texts(topic="", blob=b"\xff"))


def test_min_count(pres: ModuleType) -> None:
    assert pres.encode(pres.Listed(items=[1, 2])) == bytes.fromhex("0900" "0102")
    assert pres.decode(bytes.fromhex("0900" "010203")) == pres.Listed(items=[1, 2, 3])
    refused(InvalidValue, pres.decode, bytes.fromhex("0900" "01"))
    refused(InvalidValue, pres.decode, bytes.fromhex("0900"))
    refused(EncodeError, pres.encode, pres.Listed(items=[1]))


def test_expression_with_division_and_parentheses(pres: ModuleType) -> None:
    for n, half in [(0, b""), (1, b"a"), (2, b"a"), (3, b"ab"), (4, b"ab"), (255, b"h" * 128)]:
        frame = pres.Sized(n=n, half=half, k=0)
        data = bytes.fromhex("0a00") + bytes((n,)) + half + b"\x00"
        assert pres.encode(frame) == data, n
        assert pres.decode(data) == frame
    refused(EncodeError, pres.encode, pres.Sized(n=3, half=b"abc", k=0))
    refused(EncodeError, pres.encode, pres.Sized(n=3, half=b"a", k=0))


def test_optional_field_reads_as_zero_in_a_size(pres: ModuleType) -> None:
    frame = pres.Sized(n=0, half=b"", k=4, opt=2, sized=b"wxyz")
    assert pres.encode(frame) == bytes.fromhex("0a00" "00" "04" "02" "7778797a")
    assert pres.decode(bytes.fromhex("0a00" "00" "04" "02" "7778797a")) == frame
    absent = pres.Sized(n=0, half=b"", k=3, opt=None, sized=b"")
    assert pres.encode(absent) == bytes.fromhex("0a00" "00" "03")
    assert pres.decode(bytes.fromhex("0a00" "00" "03")) == absent
    refused(EncodeError, pres.encode, pres.Sized(n=0, half=b"", k=3, opt=None, sized=b"x"))
    refused(TrailingBytes, pres.decode, bytes.fromhex("0a00" "00" "03" "7778"))


def test_closed_enum_checked_on_encode(pres: ModuleType) -> None:
    frame = pres.Enums(color=pres.Color.RED, shade=pres.Color.GREEN, tag=7)
    assert pres.encode(frame) == bytes.fromhex("0b00" "01" "20" "07")
    assert pres.decode(bytes.fromhex("0b00" "01" "20" "07")) == frame
    refused(EncodeError, pres.encode, pres.Enums(color=3, shade=pres.Color.RED, tag=1))
    refused(EncodeError, pres.encode, pres.Enums(color=pres.Color.RED, shade=0, tag=1))
    refused(InvalidValue, pres.decode, bytes.fromhex("0b00" "03" "10" "01"))
    refused(InvalidValue, pres.decode, bytes.fromhex("0b00" "01" "30" "01"))
    # an open enum keeps any value, both ways
    assert pres.decode(bytes.fromhex("0b00" "01" "10" "c8")).tag == 200
    assert pres.encode(pres.Enums(color=1, shade=1, tag=200))[-1] == 200


# --- frames chosen by context and first byte ----------------------------------------------


def test_context_discriminator_and_peek_and_wildcard(routed: ModuleType) -> None:
    one = routed.Context(phase=1)
    cases = [
        (routed.Ok(info=b"i"), "0002" "0069"),
        (routed.Err(error_code=0x0102), "0003" "ff0102"),
        (routed.Data(payload=b"\x42\xff"), "0002" "42ff"),  # any other first byte
        (routed.Data(payload=b""), "0000"),  # an empty body peeks -1
    ]
    for frame, wire in cases:
        assert routed.encode(frame) == bytes.fromhex(wire)
        assert routed.decode(bytes.fromhex(wire), one) == frame
        assert routed.decode(bytes.fromhex(wire)) == frame  # phase 1 is the default
    # the same bytes in phase 2
    two = routed.Context(phase=2)
    assert routed.decode(bytes.fromhex("0002" "0069"), two) == routed.Row(cells=b"\x00i")
    refused(UnknownFrameType, routed.decode, bytes.fromhex("0002" "0069"), routed.Context(phase=3))
    refused(InvalidValue, routed.decode, bytes.fromhex("0002" "ff01"), one)  # Err cut short
    # the peeked byte is the frame's own: an empty body peeks -1, not the next frame's byte
    stream = bytes.fromhex("0000" "0002" "0069" "0000")
    assert routed.StreamDecoder().feed(stream) == [
        routed.Data(payload=b""),
        routed.Ok(info=b"i"),
        routed.Data(payload=b""),
    ]


def test_select_falls_back_to_wildcard(routed: ModuleType) -> None:
    two = routed.Context(phase=2)
    eof = bytes.fromhex("0003" "fe0001")
    assert routed.decode(eof, two) == routed.Eof(warnings=1)
    assert routed.encode(routed.Eof(warnings=1)) == eof
    # remaining < 5 holds for 4 bytes (an Eof then, one byte too long), not for 5 (a Row)
    refused(TrailingBytes, routed.decode, bytes.fromhex("0004" "fe000100"), two)
    long = bytes.fromhex("0005" "fe00010203")
    assert routed.decode(long, two) == routed.Row(cells=bytes.fromhex("fe00010203"))
    assert routed.decode(bytes.fromhex("0001" "01"), two) == routed.Row(cells=b"\x01")
    # remaining is what is left of the frame, not of the stream
    assert routed.StreamDecoder(ctx=two).feed(eof + eof + long) == [
        routed.Eof(warnings=1),
        routed.Eof(warnings=1),
        routed.Row(cells=bytes.fromhex("fe00010203")),
    ]


def test_wildcard_frame_refuses_a_body_its_siblings_would_claim(routed: ModuleType) -> None:
    """GENERATOR BUG (reported, kept failing): a ``*`` frame whose body starts with a byte
    another frame's code names is encoded without complaint, and reads back as that other
    frame (``Data(payload=b"\\x00")`` -> 00 01 00 -> ``Ok(info=b"")``); the strategies draw
    such frames too. As for a terminated array's element or an empty ``more`` rest field,
    encoding should refuse what cannot read back as itself."""
    two = routed.Context(phase=2)
    cases = [
        (routed.Data(payload=b"\x00"), None),  # reads back as Ok(info=b"")
        (routed.Data(payload=b"\xff\x00\x01"), None),  # as Err(error_code=1)
        (routed.Row(cells=b"\xfe\x00\x01"), two),  # as Eof(warnings=1)
    ]
    for frame, ctx in cases:
        with pytest.raises(EncodeError):
            wire = routed.encode(frame, ctx)
            pytest.fail(f"{frame!r} encoded to {wire.hex()}, which reads back as "
                        f"{routed.decode(wire, ctx)!r}")  # fmt: skip


# --- machines -----------------------------------------------------------------------------


def test_machine_stay_row(gen: Generated, pres: ModuleType) -> None:
    machines = gen.machines("presence")
    state = machines.SessionState
    m = machines.SessionMachine("client")
    assert m.state is state.IDLE
    assert m.send(pres.Flagged(data=b"")) is state.IDLE  # stay, from idle
    assert m.receive(pres.More(first=0)) is state.IDLE
    assert m.send(pres.Conditional(qos=0)) is state.OPEN
    assert m.send(pres.Flagged(data=b"")) is state.OPEN  # stay, from open
    assert m.receive(pres.More(first=0)) is state.OPEN
    assert m.state is state.OPEN
    refused(IllegalSend, m.send, pres.Publish(topic="t"))
    assert m.send(pres.Ruled(low=0, high=0)) is state.CLOSED
    # a stay row is handled, not ignored: the frame has a handler
    assert pres.More in machines.SessionMachine.HANDLERS["client"]


# --- round trips over the generated strategies --------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equal frames, NaN fields included (compared by repr: the bytes compare the bits)."""
    return type(a) is type(b) and (a == b or repr(a) == repr(b))


def claimed_by_a_sibling(routed: ModuleType, frame: Any) -> bool:
    """A ``*`` frame of ROUTED whose body another frame of its phase would read."""
    if type(frame) is routed.Data:
        return frame.payload[:1] in (b"\x00", b"\xff")
    if type(frame) is routed.Row:
        return frame.cells[:1] == b"\xfe" and len(frame.cells) < 5
    return False


@pytest.mark.parametrize("protocol", list(IDLS))
@given(data=st.data())
def test_round_trip_over_generated_strategies(gen: Generated, protocol: str, data: Any) -> None:
    c = gen.codec(protocol)
    frame, ctx = data.draw(gen.strategies(protocol).frames())
    if protocol == "routed":  # the strategies draw these: see the bug test above
        assume(not claimed_by_a_sibling(c, frame))
    wire = c.encode(frame, ctx)
    startup = getattr(frame, "STARTUP", False)
    back = c.decode_startup(wire, ctx) if startup else c.decode(wire, ctx)
    assert same(back, frame), (frame, back)
    assert c.encode(back, ctx) == wire
    decoder = c.StreamDecoder(ctx=ctx, **({"startup": True} if startup else {}))
    assert [same(f, frame) for f in decoder.feed(c.frame_bytes(frame, ctx))] == [True]
