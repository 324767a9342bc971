"""The TypeScript target over every construct of the IDL beyond the seed protocols
(tests/idl_constructs: byte order, f32/f64, vbi/zigzag/lenenc, NUL-terminated strings,
bool bits and presence by them, ``if:`` conditions and ``more``, multi-bit flag values,
fixed flags, rules, framing by a header length field), held to the Python codec byte for
byte and error class for error class. A second IDL of this file's own (``SPELLING``) puts
the same constructs where TypeScript spells them differently: conditions over 64-bit and
32-bit values (bigint arithmetic where a number would not be exact), bool and small values
in a 64-bit little-endian word, a context value in a condition, flavours as length
prefixes, little-endian lengths and counts, rules over header fields and in structs.

A third (``CHOOSING``) holds what chooses and frames a frame beyond the seed protocols'
ways: a startup header (frames decoded with ``decodeStartup``, one of them setting a
context value), a header length field with a peeked body byte as the code's second part,
a code ending in '*' (its body may not begin as a sibling's: refused on encode),
``select:`` over ``remaining``, unknown frames kept (``skip``) with
their two-part code, arrays until a terminator (elements that would read as it are
refused), ``transform: {xor: ...}`` with 32- and 64-bit keys, and present-but-empty
``more`` rests (refused). MySQL's context part of the code is the families' corpus's
(tests/crosslang/corpus.py).

All three IDLs are generated (Python and TypeScript) into a temporary folder. The TypeScript
package is the standalone one a user gets for an IDL outside ``idl/`` (a tsconfig with no
project reference, ``@wirestream/runtime`` resolved as a dependency: here from this
checkout's ``node_modules``) and is compiled by the repository's tsc, strict. Python then
writes a corpus in the cross-language form (tests/crosslang/corpus.py) and
tests/typescript/corpus.test.ts checks the compiled modules against it:

- ``golden``: hand-picked frames at the edges (startup frames marked ``startup``): NaN
  payloads (signalling and quiet, both
  widths), signed zeros, infinities and denormals; lenenc values and lengths at each
  form's bounds and a NULL blob; vbi frame lengths at each size's bounds; zigzag and
  varint extremes; absent ``more`` fields;
- ``differential``: frames drawn from the generated hypothesis strategies (and
  ``tracking``: SPELLING's frames that set its context value);
- ``golden_errors``: malformed inputs (overlong and 5-byte vbi, non-minimal and 0xFF
  lenenc, overlong varint, wrong fixed flags, a broken rule, declared lengths too long and
  too short, a missing terminator...), each with the class Python raises (checked here);
- ``mutations``: the valid frames with bits flipped, cut, extended...;
- ``encode_errors``: frames Python refuses to encode, which TypeScript must refuse too.

TypeScript decodes every input to the frame Python decodes (floats compared by their
bits) or throws the error Python raises (``Truncated.needed`` included), and encodes the
decoded frame and one built from Python's fields to Python's bytes.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.crosslang import corpus
from tests.support.protocols import ROOT, Version
from tests.crosslang.test_crosslang import TS_TEST, _differences
from tests.support.typescript_support import TSC
from tests.support.typescript_support import run as run_checked
from wirestream.codegen.cli import generate_tree
from wirestream.runtime import _support, errors

IDL_TREE = ROOT / "tests" / "idl_constructs"
PACKAGE = "ts_constructs_gen"  # the temporary package (unique: no clash with other tests)
DIFFERENTIAL = 300  # frames drawn from the strategies, per protocol
MUTATIONS = 2000  # per protocol
BIG = 1 << 16  # frames longer than this are not mutated (the 2 MiB vbi boundary ones)

SPELLING = """\
# The constructs again, where TypeScript spells them differently (tests/typescript/test_constructs_typescript.py).
wirestream: 1
protocol: spelling
version: v1
title: TypeScript spelling checks
framing: {length_prefix: u32}
context:
  limit:                        # 64-bit (set by a u64): a bigint in conditions
    default: 10
    set_by: [Wide.limit]
header:
  fields:
    - {name: kind, type: u8}
    - word: u16le               # a little-endian word in the header, flags in it
      bits:
        - {name: channel, width: 8}
        - {flags: 8}
  discriminator: kind
unknown: {policy: error}
structs:
  Item:
    fields:
      - {name: weight, type: f32be}
      - {name: tag, type: i16le}
    rules:
      - {check: "tag + 100 > 0", spec: "a rule of a struct"}
frames:
  Wide:
    code: 1
    flags:
      wide: 0x80
      mode: {mask: 0x30, max: 2}
    fields:
      - word: u64le             # a bool and values of at most 32 bits in a 64-bit word
        bits:
          - {name: big_flag, bool: true}
          - {name: hi, width: 31}
          - {name: lo, width: 32}
      - {name: limit, type: u64}
      - {name: n, type: u32}
      - {name: m, type: u32}
      - {name: signed, type: i32le}
      - {name: extra, type: u16, if: "limit > 0xFFFFFFFF"}    # a 64-bit comparison
      # & beyond 32-bit signed: a number would be negative; a product beyond 2^53: a number
      # would round it to 0xFFFFFFFE00000000 (n = m = 0xFFFFFFFF)
      - {name: masked, type: u8, if: "n & 0x80000000 == 0x80000000"}
      - {name: product, type: u8, if: "n * m > 0xFFFFFFFE00000000"}
      - {name: sum, type: u8, if: "signed + 1 < 0"}           # numbers, signed
      - {name: ctxv, type: u8, if: "ctx.limit == 3"}          # a 64-bit context value
      - {name: sflag, type: f64le, if: "wide and mode == 2"}   # floats behind conditions
      - {name: s32, type: f32, if: "not wide"}
      - {name: z, type: zigzag, if: big_flag}                 # presence by a bool bit
      - {name: v, type: vbi}
      - {name: lv, type: lenenc}
      - {name: label, type: string, length: vbi}
      - {name: blob, type: bytes, length: u16le}
      - {name: zz, type: bytes, length: lenenc}
      - {name: items, type: array, of: Item, count: u16le}
      - {name: tail, type: bytes, terminator: 0xFF}
    rules:
      - {check: "hi | lo != 1", spec: "a rule over word bits"}
      - {check: "channel != 255", spec: "a rule over a header field"}
  Exprs:
    code: 3
    fields:
      - {name: k, type: u8}
      - {name: opt, type: u8, if: "k > 3"}
      - {name: after, type: u8, if: "opt + 1 > 5"}            # an absent opt reads as 0
      - {name: half, type: bytes, size: "(k / 2)"}            # a size tree, rounding down
      - {name: neg, type: i8}
      - {name: q, type: u8, if: "neg / 4 + 2 == 1"}           # -4..-1 (rounding down)
      - {name: d64, type: i64}
      - {name: r, type: u8, if: "d64 / 3 + 1 == 0"}           # -3..-1, in bigint
      - {name: sized, type: bytes, size: "opt * 2"}           # an absent opt: 0 bytes
      - {name: last, type: bytes, length: rest}
  Small:
    code: 2
    fields:
      - {name: a, type: u24le}
      - {name: b, type: i16le}
      - {name: c, type: u32le}
      - {name: d, type: i64le}
      - {name: e, type: u64le}
      - {name: rest, type: bytes, length: rest}
"""


CHOOSING = """\
# Choosing and framing a frame (tests/typescript/test_constructs_typescript.py).
wirestream: 1
protocol: choosing
version: v1
title: TypeScript choosing checks
byte_order: little
framing:
  length_field: size
  counts: after_header
startup:                        # a connection's first frames: their own header
  fields:
    - {name: length, type: u32be}
    - {name: request, type: u16}
  discriminator: request
  length_field: length
  counts: frame
header:
  fields:
    - {name: size, type: u16}
    - {name: kind, type: u8}
    - {name: first, type: u8, peek: true}     # the body's first byte, not consumed
  discriminator: [kind, first]
unknown: {policy: skip}         # kept as UnknownFrame((kind, first), body)
context:
  level:
    default: 0
    set_by: [Hello.level]       # by a startup frame
structs:
  Pair:
    fields:
      - {name: key, type: string, terminator: 0}
      - {name: value, type: string, terminator: 0}
frames:
  Hello:
    startup: true
    code: 7
    fields:
      - {name: level, type: u8}
      - {name: pairs, type: array, of: Pair, terminator: 0}
  Cancel:
    startup: true
    code: 8
    fields: [{name: secret, type: u32}]
  Small:
    code: [1, 0x01]
    fields:
      - {name: tag, type: u8, const: 1}
      - {name: more_data, type: bytes, length: rest, if: more}
  Tail:
    code: [1, 0xFE]
    also_codes: [[3, 0xFE]]     # kind 3 has no '*' frame: else an UnknownFrame
    select: "remaining < 4"
    fields:
      - {name: tag, type: u8, const: 0xFE}
      - {name: w, type: u16, if: more}
  Other:                        # may not begin as Small or (when it is short) Tail
    code: [1, "*"]
    fields: [{name: body, type: bytes, length: rest}]
  Masked:
    code: [2, 0x4D]
    fields:
      - {name: tag, type: u8, const: 0x4D}
      - {name: key, type: u32be}
      - {name: payload, type: bytes, length: u16, transform: {xor: key}}
      - {name: key64, type: u64}
      - {name: tail, type: bytes, length: rest, transform: {xor: key64}}
  Lists:
    code: [2, 0x4C]
    fields:
      - {name: tag, type: u8, const: 0x4C}
      - {name: nums, type: array, of: u8, terminator: 0xFF}
      - {name: words, type: array, of: {type: string, terminator: 0}, terminator: 0}
      - {name: rows, type: array, of: u16, count: rest, if: more}
"""


@dataclass(frozen=True)
class ConstructsVersion(Version):
    """A protocol version generated into ``PACKAGE`` from ``tree``: what
    tests.crosslang.corpus needs of a version (its IDL, codec and strategies)."""

    tree: Path = IDL_TREE

    @property
    def idl(self) -> Path:
        return self.tree / self.protocol / f"{self.version}.yaml"

    def codec(self) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{self.protocol}.{self.version}")

    def strategies(self) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{self.protocol}.{self.version}.strategies")

    def vectors(self, suffix: str = "") -> list[dict[str, Any]]:
        return []


@dataclass
class Built:
    out: Path
    constructs: corpus.Variant
    spelling: corpus.Variant
    choosing: corpus.Variant

    @property
    def variants(self) -> tuple[corpus.Variant, ...]:
        return (self.constructs, self.spelling, self.choosing)

    def module_js(self, variant: corpus.Variant) -> Path:
        """The compiled TypeScript module of ``variant``."""
        return self.out / PACKAGE / "typescript" / "dist" / variant.module / "index.js"


@pytest.fixture(scope="module")
def built(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """tests/idl_constructs and SPELLING generated (Python + TypeScript) and the
    TypeScript package compiled on its own; ``node`` (the fixture) has built
    @wirestream/runtime."""
    out = tmp_path_factory.mktemp("constructs_ts")
    tree = out / "idl"
    for protocol, text in (("constructs", (IDL_TREE / "constructs" / "v1.yaml").read_text()),
                           ("spelling", SPELLING), ("choosing", CHOOSING)):  # fmt: skip
        (tree / protocol).mkdir(parents=True)
        (tree / protocol / "v1.yaml").write_text(text, encoding="utf-8")
    files = generate_tree(tree, PACKAGE, targets=("python", "typescript"))
    for rel, text in files.items():
        path = out / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    package = out / PACKAGE / "typescript"
    # What `npm install` of the dependencies gives a user: @wirestream/runtime (and
    # typescript) in a node_modules above the package.
    (out / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    run_checked(
        [node, str(TSC), "-p", str(package)], "tsc -p (the standalone package)", cwd=package
    )
    sys.path.insert(0, str(out))
    try:
        yield Built(out, *(corpus.Variant(ConstructsVersion(name, "v1", tree), "binary")
                           for name in ("constructs", "spelling", "choosing")))  # fmt: skip
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


# --- frames and bytes: constructs ----------------------------------------------------------


def f32(bits: int) -> float:
    """The float Python's codec holds for binary32 ``bits`` (NaN payloads kept)."""
    return _support.f32_from_bits(bits)


def f64(bits: int) -> float:
    value: float = struct.unpack(">d", bits.to_bytes(8, "big"))[0]
    return value


def numbers(c: ModuleType, /, **fields: Any) -> Any:
    """A Numbers frame: ``fields`` over valid defaults."""
    return c.Numbers(**{"a": 1, "level": c.Level.LOW, **fields})


def texts(c: ModuleType, /, **fields: Any) -> Any:
    return c.Texts(**fields)


def golden_frames(c: ModuleType) -> list[tuple[str, Any]]:
    """Valid frames at the edges of every construct."""
    out: list[tuple[str, Any]] = []
    for bits in (0x7FA00001, 0xFFC12345, 0x7F800001, 0x7FFFFFFF, 0x7F800000, 0xFF800000,
                 0x80000000, 0x00000001, 0x7F7FFFFF, 0x3F800000):  # fmt: skip
        out.append((f"f32 bits {bits:#010x}", numbers(c, e=f32(bits))))
    for bits in (0x7FF0000000000001, 0xFFF8DEADBEEF0001, 0x7FF7FFFFFFFFFFFF, 0x7FF8000000000000,
                 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x0000000000000001,
                 0x7FEFFFFFFFFFFFFF):  # fmt: skip
        out.append((f"f64 bits {bits:#018x}", numbers(c, f=f64(bits))))
    for value in (0, 250, 251, 0xFFFF, 0x10000, 0xFFFFFF, 0x1000000, 2**64 - 1):
        out.append((f"lenenc {value}", numbers(c, i=value)))
    for value in (-(2**63), 2**63 - 1, -1, 1, 0):
        out.append((f"zigzag {value}", numbers(c, g=value)))
    for value in (127, 128, 2**63, 2**64 - 1):
        out.append((f"varint {value}", numbers(c, h=value)))
    out += [
        ("extremes", numbers(c, a=0xFFFE, b=0xFFFFFFFF, c=0xFFFFFF, d=-(2**63), urgent=True)),
        ("i64 max", numbers(c, d=2**63 - 1, c=0x123456)),
        ("level MID with j", numbers(c, level=c.Level.MID, j=0xFFFF)),
        ("level HIGH with j 0", numbers(c, level=c.Level.HIGH, j=0, urgent=True)),
        ("texts empty", texts(c)),
        ("texts null blob", texts(c, blob=None)),
        ("texts empty blob (not null)", texts(c, blob=b"")),
        ("texts empty name", texts(c, name="")),
        ("texts name and pairs", texts(c, name="h\u00e9llo \u2713", secure=True,
                                       pairs=[c.Pair("k", "v"), c.Pair("", "\u00e9")])),  # fmt: skip
        ("texts reason, no tail", texts(c, reason=7)),
        ("texts reason and empty tail", texts(c, reason=0, tail=b"")),
        ("texts reason and tail", texts(c, name="n", blob=b"\x00\xfb", reason=255, tail=b"\xff")),
        ("empty", c.Empty()),
        ("masked: RFC 6455's 'Hello' (5.7)", c.Masked(mask=0x37FA213D, masked=b"Hello")),
        ("masked: empty", c.Masked(mask=0xFFFFFFFF)),
    ]
    for size in (250, 251, 0xFFFF, 0x10000):
        out.append((f"blob of {size} bytes", texts(c, blob=bytes(range(256)) * (size // 256)
                                                   + bytes(size % 256))))  # fmt: skip
    # Frame lengths (the header's vbi) at each size's bounds: a Texts body is 6 bytes
    # (bits, NULL blob, no pairs, reason, tail length) plus the tail, or 2 + the blob's
    # lenenc length + the blob.
    for body in (127, 128, 16383, 16384):
        out.append((f"body of {body} bytes", texts(c, reason=1, tail=b"t" * (body - 6))))
    for body in (2097151, 2097152):
        out.append((f"body of {body} bytes", texts(c, blob=b"b" * (body - 6))))
    return out


def frame(kind: int, flags: int, body: bytes, length: int | None = None) -> bytes:
    """A frame's bytes: the header (kind, flags, vbi length) and ``body``."""
    declared = len(body) if length is None else length
    return bytes(((kind << 4) | flags,)) + _support.write_vbi(declared) + body


def numbers_body(a: bytes = b"\x01\x00", g: bytes = b"\x00", h: bytes = b"\x00",
                 i: bytes = b"\x05", j: bytes = b"") -> bytes:  # fmt: skip
    """A Numbers body: a (u16le), b c d e f (27 fixed bytes), g h i, j."""
    return a + bytes(27) + g + h + i + j


def malformed() -> list[tuple[str, bytes, str]]:
    """Bytes that are not a frame, with the error class Python raises for them (or a base
    of it)."""
    ok = numbers_body()
    # "DecodeError": the input ends inside the frame's declared length (a field runs past
    # it, a terminator is missing): Truncated, or InvalidValue since the frame's length is
    # known -- Python decides, TypeScript must agree.
    # fmt: off
    cases = [
        ("vbi overlong (0x80 0x00)", b"\x30\x80\x00", "NonCanonical"),
        ("vbi overlong (3 bytes for 1)", b"\x30\x81\x80\x00", "NonCanonical"),
        ("vbi of 5 bytes", b"\x30\x80\x80\x80\x80\x01", "InvalidValue"),
        ("vbi of 4 bytes and a continuation", b"\x30\xff\xff\xff\xff", "InvalidValue"),
        ("vbi cut", b"\x30\x80", "Truncated"),
        ("no header", b"", "Truncated"),
        ("fixed flags clear", frame(1, 0b0000, ok), "InvalidValue"),
        ("level 3 (not a Level)", frame(1, 0b0111, numbers_body(j=b"\x00\x00")), "InvalidValue"),
        ("level MID without j", frame(1, 0b0011, ok), "DecodeError"),
        ("rule broken (a = 0xFFFF)", frame(1, 1, numbers_body(a=b"\xff\xff")), "RuleViolation"),
        ("lenenc 5 in 3 bytes", frame(1, 1, numbers_body(i=b"\xfc\x05\x00")), "NonCanonical"),
        ("lenenc 250 in 3 bytes", frame(1, 1, numbers_body(i=b"\xfc\xfa\x00")), "NonCanonical"),
        ("lenenc 65535 in 4 bytes", frame(1, 1, numbers_body(i=b"\xfd\xff\xff\x00")),
         "NonCanonical"),
        ("lenenc 2^24-1 in 9 bytes", frame(1, 1, numbers_body(i=b"\xfe\xff\xff\xff" + bytes(5))),
         "NonCanonical"),
        ("lenenc 0xFF", frame(1, 1, numbers_body(i=b"\xff")), "InvalidValue"),
        ("lenenc NULL where a number is needed", frame(1, 1, numbers_body(i=b"\xfb")),
         "InvalidValue"),
        ("lenenc cut", frame(1, 1, numbers_body(i=b"\xfe\x00\x00")), "DecodeError"),
        ("varint overlong (0x80 0x00)", frame(1, 1, numbers_body(h=b"\x80\x00")), "NonCanonical"),
        ("varint overlong (0x81 0x80 0x00)", frame(1, 1, numbers_body(h=b"\x81\x80\x00")),
         "NonCanonical"),
        ("varint of 11 bytes", frame(1, 1, numbers_body(h=b"\x80" * 10 + b"\x01")),
         "InvalidValue"),
        ("varint above 2^64", frame(1, 1, numbers_body(h=b"\xff" * 9 + b"\x02")), "InvalidValue"),
        ("zigzag overlong", frame(1, 1, numbers_body(g=b"\x80\x00")), "NonCanonical"),
        ("declared length too long", frame(1, 1, ok, len(ok) + 3), "Truncated"),
        ("declared length too short (inside a run)", frame(1, 1, ok[:10], 10) + ok[10:],
         "DecodeError"),
        ("declared length too short (in a varint)", frame(1, 1, ok[:-3], len(ok) - 3) + ok[-3:],
         "DecodeError"),
        ("declared length too short (Texts pairs)", frame(2, 0, b"\x00\xfb") + b"\x00",
         "DecodeError"),
        ("body shorter than declared (Empty)", frame(3, 0, b"\x00"), "TrailingBytes"),
        ("body shorter than declared (Texts)", frame(2, 0, b"\x00\xfb\x00\x01\x00\x00\x09"),
         "TrailingBytes"),
        ("bytes after the frame", frame(3, 0, b"") + b"\x00", "TrailingBytes"),
        ("terminator missing", frame(2, 0, b"\x80abc\xfb\x01"), "DecodeError"),
        ("terminator missing (at the end)", frame(2, 0, b"\x80abc"), "DecodeError"),
        ("name not UTF-8", frame(2, 0, b"\x80\xff\x00\xfb\x00"), "InvalidString"),
        ("blob length overlong", frame(2, 0, b"\x00\xfc\x03\x00abc\x00"), "NonCanonical"),
        ("blob length 0xFF", frame(2, 0, b"\x00\xff\x00"), "InvalidValue"),
        ("blob longer than the frame", frame(2, 0, b"\x00\x05ab\x00"), "DecodeError"),
        ("tail cut by the frame", frame(2, 0, b"\x00\xfb\x00\x01\x05\x00ab"), "DecodeError"),
        ("tail length cut by the frame", frame(2, 0, b"\x00\xfb\x00\x01\x05"), "DecodeError"),
        ("pair cut", frame(2, 0, b"\x00\xfb\x01\x00\x01k\x00"), "DecodeError"),
        ("unknown kind", b"\x50\x00", "UnknownFrameType"),
        ("unknown kind 15", b"\xf0\x00", "UnknownFrameType"),
    ]
    # fmt: on
    # vbi lengths at each size's bounds, declared but not there: Truncated with needed =
    # the header and the declared length (the value read exactly).
    for value in (127, 128, 16383, 16384, 2097151, 2097152, 268435455):
        cases.append((f"declared {value}, absent", frame(3, 0, b"", value), "Truncated"))
    return cases


def refused(c: ModuleType) -> list[tuple[str, Any]]:
    """Frames Python refuses to encode (EncodeError)."""
    return [
        ("rule broken (a = 0xFFFF)", numbers(c, a=0xFFFF)),
        ("level MID without j", numbers(c, level=c.Level.MID)),
        ("level LOW with j", numbers(c, j=5)),
        ("f32 out of range", numbers(c, e=1e39)),
        ("zigzag 2^63", numbers(c, g=2**63)),
        ("lenenc 2^64", numbers(c, i=2**64)),
        ("varint -1", numbers(c, h=-1)),
        ("u24le 2^24", numbers(c, c=2**24)),
        ("i64 below -2^63", numbers(c, d=-(2**63) - 1)),
        ("name holds the terminator", texts(c, name="a\x00b")),
        ("tail without reason", texts(c, tail=b"x")),
        ("pair key too long", texts(c, pairs=[c.Pair("k" * 0x10000, "")])),
    ]


# --- frames and bytes: SPELLING --------------------------------------------------------------


def wide(c: ModuleType, /, **fields: Any) -> Any:
    return c.Wide(**{"hi": 2, "tail": b"", "s32": None if fields.get("wide") else 0.0, **fields})


def spelling_frames(c: ModuleType) -> list[tuple[str, Any, Any]]:
    """(name, frame, context): each condition on both sides of its edge."""
    three = c.Context(limit=3)
    # fmt: off
    return [
        ("limit 2^32 - 1 (no extra)", wide(c, limit=0xFFFFFFFF), None),
        ("limit 2^32 (extra)", wide(c, limit=0x100000000, extra=7), None),
        ("n has its top bit (masked)", wide(c, n=0x80000000, masked=1), None),
        ("n * m = 0xFFFFFFFE00000001 (product)",
         wide(c, n=0xFFFFFFFF, m=0xFFFFFFFF, masked=2, product=3), None),
        ("n * m just below (no product)", wide(c, n=0xFFFFFFFF, m=0xFFFFFFFE, masked=2), None),
        ("signed -1 (no sum)", wide(c, signed=-1), None),
        ("signed -2 (sum)", wide(c, signed=-2, sum=5), None),
        ("signed min (sum)", wide(c, signed=-(2**31), sum=6), None),
        ("ctx.limit 3 (ctxv)", wide(c, ctxv=9), three),
        ("ctx.limit 3, limit 3 set", wide(c, limit=3, ctxv=0), three),
        ("word extremes, zigzag min (big_flag)",
         wide(c, hi=0x7FFFFFFF, lo=0xFFFFFFFF, z=-(2**63), channel=254, wide=True, mode=2,
              sflag=f64(0x7FF0000000000001)), None),
        ("wide, mode 1 (no floats)", wide(c, wide=True, mode=1), None),
        ("wide, mode 2, sflag -0.0", wide(c, wide=True, mode=2, sflag=-0.0), None),
        ("not wide: s32 a NaN payload", wide(c, s32=f32(0xFFC12345)), None),
        ("not wide: s32 a signalling NaN", wide(c, s32=f32(0x7FA00001), mode=2), None),
        ("zigzag max", wide(c, z=2**63 - 1), None),
        ("vbi 127", wide(c, v=127), None),
        ("vbi 128", wide(c, v=128), None),
        ("vbi 16383", wide(c, v=16383), None),
        ("vbi 16384", wide(c, v=16384), None),
        ("vbi 2097151", wide(c, v=2097151), None),
        ("vbi 2097152", wide(c, v=2097152), None),
        ("vbi max", wide(c, v=268435455), None),
        ("lenenc max", wide(c, lv=2**64 - 1), None),
        ("label of 200 bytes (2-byte vbi length)", wide(c, label="\u00e9" * 100), None),
        ("zz of 300 bytes (3-byte lenenc length)", wide(c, zz=bytes(300)), None),
        ("items with NaN weights",
         wide(c, items=[c.Item(f32(0x7FA00001), -99), c.Item(-0.0, 0x7FFF)], tail=b"\x00\x01"),
         None),
        ("exprs: opt absent (reads as 0), neg -1 and d64 -1 round down",
         c.Exprs(k=3, half=b"h", neg=-1, q=1, d64=-1, r=2), None),
        ("exprs: opt 5 (after), neg -5, d64 -4", c.Exprs(k=4, opt=5, after=6, half=b"hh", neg=-5,
                                                         d64=-4, sized=bytes(10), last=b"z"), None),
        ("exprs: opt 4 (no after), neg -4, d64 -3", c.Exprs(k=5, opt=4, half=b"hh", neg=-4, q=3,
                                                           d64=-3, r=4, sized=bytes(8)), None),
        ("exprs: d64 min", c.Exprs(k=255, opt=255, after=0, half=bytes(127), neg=-128,
                                   d64=-(2**63), sized=bytes(510)), None),
        ("small extremes", c.Small(a=0xFFFFFF, b=-32768, c=0xFFFFFFFF, d=-(2**63), e=2**64 - 1,
                                   rest=b"xyz"), None),
        ("small ones", c.Small(a=0x010203, b=0x0405, c=0x06070809, d=0x0A0B0C0D0E0F1011,
                               e=0x1213141516171819), None),
    ]
    # fmt: on


def spelling_malformed(c: ModuleType) -> list[tuple[str, bytes, str]]:
    """A valid Wide frame (one item, an empty tail) with one thing broken."""
    good = bytearray(c.encode(wide(c, items=[c.Item(1.0, 5)])))
    assert good[-1] == 0xFF and good[0] == 1

    def patched(at: int, value: bytes) -> bytes:
        out = bytearray(good)
        out[at : at + len(value)] = value
        return bytes(out)

    # fmt: off
    return [
        ("mode 3 (above its max)", patched(1, b"\x30"), "InvalidValue"),
        ("channel 255 (a rule over the header)", patched(2, b"\xff"), "RuleViolation"),
        ("hi | lo == 1 (a rule over word bits)", patched(3, bytes([1, 0, 0, 0, 0, 0, 0, 0])),
         "RuleViolation"),
        ("item tag -100 (a struct's rule)",
         patched(len(good) - 3, (-100).to_bytes(2, "little", signed=True)), "RuleViolation"),
        ("tail without its terminator", bytes(good[:-1]), "DecodeError"),
        ("big_flag set, no zigzag", patched(10, b"\x80"), "DecodeError"),
        ("unknown kind", b"\x07\x00\x00", "UnknownFrameType"),
    ]
    # fmt: on


def spelling_refused(c: ModuleType) -> list[tuple[str, Any, Any]]:
    return [
        ("extra without a large limit", wide(c, extra=1), None),
        ("no extra with a large limit", wide(c, limit=2**40), None),
        ("masked missing", wide(c, n=0x80000001), None),
        ("product missing", wide(c, n=0xFFFFFFFF, m=0xFFFFFFFF, masked=1), None),
        ("product where it cannot be", wide(c, n=0x10000, m=0x10000, product=1), None),
        ("ctxv with the default context", wide(c, ctxv=1), None),
        ("ctxv missing with limit 3", wide(c), c.Context(limit=3)),
        ("tail holding its terminator", wide(c, tail=b"\xff"), None),
        ("rule over word bits", wide(c, hi=0, lo=1), None),
        ("rule over the header", wide(c, channel=255), None),
        ("struct rule", wide(c, items=[c.Item(0.0, -100)]), None),
        ("mode above its max", wide(c, mode=3), None),
        ("s32 missing (not wide)", wide(c, s32=None), None),
        ("s32 while wide", wide(c, wide=True, s32=1.0), None),
        ("sflag missing (wide, mode 2)", wide(c, wide=True, mode=2), None),
        ("s32 out of binary32's range", wide(c, s32=1e39), None),
        ("vbi above its max", wide(c, v=2**28), None),
        ("i16le below its min", c.Small(b=-32769), None),
        ("exprs: half of the wrong size", c.Exprs(k=4, opt=0, half=b"h"), None),
        ("exprs: sized with opt absent", c.Exprs(k=0, sized=b"s"), None),
        ("exprs: q missing (neg -2)", c.Exprs(neg=-2), None),
        ("exprs: r where d64 // 3 is 0", c.Exprs(d64=0, r=1), None),
    ]


# --- frames and bytes: CHOOSING -------------------------------------------------------------


def choosing_frames(c: ModuleType) -> list[tuple[str, Any, Any]]:
    """(name, frame, context): each way of choosing a frame, and each edge."""
    # fmt: off
    return [
        ("startup: pairs", c.Hello(level=3, pairs=[c.Pair("user", "bob"),
                                                            c.Pair("a", ""), c.Pair("\u00e9", "x")]), None),
        ("startup: no pairs", c.Hello(), None),
        ("startup: cancel", c.Cancel(secret=0xFFFFFFFF), None),
        ("small, no more data", c.Small(), None),
        ("small, more data", c.Small(more_data=b"\x00\xff"), None),
        ("tail (select holds: 1 byte left)", c.Tail(), None),
        ("tail with w (select holds: 3 bytes left)", c.Tail(w=0xFFFF), None),
        ("other: empty body (the peeked byte is -1)", c.Other(), None),
        ("other: any first byte", c.Other(body=b"\x4dz"), None),
        ("other: 0xfe and 3 more bytes (Tail's select fails)", c.Other(body=b"\xfe\x01\x02\x03"),
         None),
        ("masked: keys 0", c.Masked(payload=b"Hello", tail=b"x"), None),
        ("masked: RFC 6455's key", c.Masked(key=0x37FA213D, payload=b"Hello", key64=0x1122334455667788,
                                           tail=bytes(range(20))), None),
        ("masked: largest keys", c.Masked(key=0xFFFFFFFF, payload=b"\xff\x00" * 3,
                                         key64=2**64 - 1, tail=b"\x01"), None),
        ("masked: empty", c.Masked(key=5, key64=7), None),
        ("lists: empty", c.Lists(), None),
        ("lists: values", c.Lists(nums=[0, 1, 0xFE], words=["a", "\u00e9\u00e9", "\xff"],
                                  rows=[0, 0xFFFF]), None),
        ("unknown kind (skipped by its length)", c.UnknownFrame(code=(9, 0x33), body=b"3abc"), None),
        ("unknown kind, empty body", c.UnknownFrame(code=(9, -1)), None),
        ("kind 3, 0xfe and 3 more bytes (select fails, no '*': unknown)",
         c.UnknownFrame(code=(3, 0xFE), body=b"\xfe\x01\x02\x03"), None),
    ]
    # fmt: on


def choosing_malformed(c: ModuleType) -> list[tuple[str, bytes, str, bool]]:
    """Bytes that are not a frame (the fourth item: read as a startup frame)."""
    hello = c.encode(c.Hello(pairs=[c.Pair("k", "v")]))
    # fmt: off
    return [
        ("startup: pairs without their terminator", _startup(7, b"\x00k\x00v\x00"), "InvalidValue",
         True),
        ("startup: a pair cut by the length", _startup(7, b"\x00k\x00v"), "InvalidValue", True),
        ("startup: no level", _startup(7, b""), "InvalidValue", True),
        ("startup: length below the header", (5).to_bytes(4, "big") + hello[4:], "InvalidValue",
         True),
        ("startup: length beyond the input", (len(hello) + 5).to_bytes(4, "big") + hello[4:],
         "Truncated", True),
        ("startup: cut in the header", hello[:5], "Truncated", True),
        ("startup: bytes left in the declared length", _startup(8, bytes(6)), "TrailingBytes",
         True),
        ("startup: unknown request", _startup(9, b""), "UnknownFrameType", True),
        ("a startup frame read as a frame", hello, "DecodeError", False),
        ("tail: w cut by the length", _frame(1, b"\xfe\x01"), "InvalidValue", False),
        ("masked: payload beyond the frame", _frame(2, b"\x4d\x00\x00\x00\x00\x09\x00ab"),
         "InvalidValue", False),
        ("masked: key64 cut", _frame(2, b"\x4d" + bytes(6) + bytes(3)), "InvalidValue", False),
        ("lists: nums without their terminator", _frame(2, b"\x4c\x01\x02"), "InvalidValue", False),
        ("lists: words without their terminator", _frame(2, b"\x4c\xff\x61\x00"), "InvalidValue",
         False),
        ("lists: a word without its terminator", _frame(2, b"\x4c\xff\x61"), "InvalidValue", False),
        ("lists: a word not UTF-8", _frame(2, b"\x4c\xff\xc3\x00\x00"), "InvalidString", False),
        ("lists: half a row", _frame(2, b"\x4c\xff\x00\x01"), "InvalidValue", False),
        ("length beyond the input", _frame(1, b"\x01")[:3], "Truncated", False),
        ("header cut", b"\x01\x00", "Truncated", False),
    ]
    # fmt: on


def _frame(kind: int, body: bytes) -> bytes:
    """A CHOOSING frame: its u16le length, its kind, its body."""
    return len(body).to_bytes(2, "little") + bytes((kind,)) + body


def _startup(request: int, body: bytes) -> bytes:
    """A CHOOSING startup frame: its u32be length (all of it), its u16le request, its body."""
    return (len(body) + 6).to_bytes(4, "big") + request.to_bytes(2, "little") + body


def choosing_refused(c: ModuleType) -> list[tuple[str, Any, Any]]:
    return [
        ("a pair that starts with the terminator", c.Hello(pairs=[c.Pair("", "x")]), None),
        ("a num that is the terminator", c.Lists(nums=[1, 0xFF]), None),
        ("an empty word (it is the terminator)", c.Lists(words=["a", ""]), None),
        ("a word holding the terminator", c.Lists(words=["a\x00b"]), None),
        ("rows present but empty", c.Lists(rows=[]), None),
        ("more data present but empty", c.Small(more_data=b""), None),
        ("other beginning as Small", c.Other(body=b"\x01x"), None),
        (
            "other beginning as Tail (its select holds: 3 bytes)",
            c.Other(body=b"\xfe\x01\x02"),
            None,
        ),
        ("a key beyond u32", c.Masked(key=2**32), None),
        ("a key64 below 0", c.Masked(key64=-1), None),
        ("an unknown frame's kind beyond u8", c.UnknownFrame(code=(256, 0)), None),
        ("a startup frame's level beyond u8", c.Hello(level=256), None),
    ]


# --- the corpus ------------------------------------------------------------------------------


def corpus_file(variant: corpus.Variant, golden_frames: list[tuple[str, Any, Any]],
                malformed: list[tuple[str, bytes, str]] | list[tuple[str, bytes, str, bool]],
                refused: list[tuple[str, Any, Any]]) -> dict[str, Any]:  # fmt: skip
    """One corpus file; Python's answers checked on the way where they are the point of
    a case (the frame decodes to itself, the error is the one named). A malformed input
    may say it is read as a startup frame (a fourth item, True); a startup frame is."""
    codec = variant.version.codec()
    w = corpus.widths(variant.version)
    golden = []
    for name, value, ctx in golden_frames:
        data = codec.encode(value, ctx)
        one = corpus.case(variant, data, ctx, None, startup=corpus._startup(value))
        assert "frame" in one and one.get("encoded") == data.hex(), (name, one)
        golden.append({"name": name, **one})
    errors_ = []
    for name, data, error, *startup in malformed:
        one = corpus.case(variant, data, None, None, startup=bool(startup and startup[0]))
        raised = getattr(errors, str(one.get("error")), None)
        assert raised is not None and issubclass(raised, getattr(errors, error)), (name, one)
        errors_.append({"name": name, **one})
    encode_errors = []
    for name, value, ctx in refused:
        with pytest.raises(errors.EncodeError):
            codec.encode(value, ctx)
        encode_errors.append({"name": name, "bytes": "", "ctx": corpus.ctx_to_json(ctx, w),
                              "sender": None, "frame": corpus.to_json(value, w),
                              "encode_error": "EncodeError"})  # fmt: skip
    drawn = corpus.differential(variant, DIFFERENTIAL)
    small = [g for g in golden if len(g["bytes"]) <= 2 * BIG]
    return {
        "format": corpus.FORMAT, "protocol": variant.version.protocol,
        "version": variant.version.version, "module": variant.module, "encoding": "binary",
        "needs_context": bool(codec.NEEDS_CONTEXT), "needs_sender": False, "seed": corpus.SEED,
        "golden": golden, "golden_errors": errors_, "differential": drawn,
        "tracking": corpus.tracking(variant, DIFFERENTIAL),
        "mutations": corpus.mutations(variant, small + drawn, MUTATIONS),
        "encode_errors": encode_errors,
    }  # fmt: skip


def write_corpus(built: Built) -> Path:
    """The corpus files and their index (naming the compiled modules)."""
    folder = built.out / "corpus"
    folder.mkdir()
    c = built.constructs.version.codec()
    s = built.spelling.version.codec()
    h = built.choosing.version.codec()
    contents = {
        built.constructs: corpus_file(built.constructs, [(n, f, None) for n, f in golden_frames(c)],
                                      malformed(), [(n, f, None) for n, f in refused(c)]),
        built.spelling: corpus_file(built.spelling, spelling_frames(s), spelling_malformed(s),
                                    spelling_refused(s)),
        built.choosing: corpus_file(built.choosing, choosing_frames(h), choosing_malformed(h),
                                    choosing_refused(h)),
    }  # fmt: skip
    files = []
    for variant, content in contents.items():
        (folder / f"{variant.name}.json").write_text(json.dumps(content), encoding="utf-8")
        files.append({"file": f"{variant.name}.json", "module": variant.module,
                      "encoding": "binary", "path": str(built.module_js(variant))})  # fmt: skip
    index = {"format": corpus.FORMAT, "seed": corpus.SEED, "files": files}
    (folder / "index.json").write_text(json.dumps(index), encoding="utf-8")
    return folder


# --- the tests -------------------------------------------------------------------------------


def test_the_package_builds_on_its_own(built: Built) -> None:
    """An IDL outside idl/ gets a package that refers to nothing outside its folder: the
    runtime's sources come with it (``runtime/``, a file: dependency and a reference)."""
    package = built.out / PACKAGE / "typescript"
    tsconfig = json.loads((package / "tsconfig.json").read_text())
    assert tsconfig["references"] == [{"path": "runtime"}]
    assert tsconfig["compilerOptions"]["strict"] is True
    assert (package / "runtime" / "tsconfig.json").is_file()
    manifest = json.loads((package / "package.json").read_text())
    assert manifest["dependencies"] == {"@wirestream/runtime": "file:runtime"}
    assert manifest["scripts"]["build"] == "tsc -b"
    assert "typescript" in manifest["devDependencies"]
    for variant in built.variants:
        module = built.module_js(variant)
        assert module.is_file() and module.with_suffix(".d.ts").is_file()


def test_floats_keep_their_bits_in_python(built: Built) -> None:
    """What the golden NaN cases rest on: Python's own round trip keeps every bit."""
    c = built.constructs.version.codec()
    for bits in (0x7FA00001, 0xFFC12345, 0x7F800001):
        decoded = c.decode(c.encode(numbers(c, e=f32(bits))))
        assert _support.f32_bits(decoded.e) == bits
    for bits in (0x7FF0000000000001, 0xFFF8DEADBEEF0001):
        decoded = c.decode(c.encode(numbers(c, f=f64(bits))))
        assert struct.pack(">d", decoded.f) == bits.to_bytes(8, "big")


def test_typescript_agrees_with_python(node: str, built: Built) -> None:
    """Every case of the corpus: the same frame, bytes or error class in TypeScript."""
    folder = write_corpus(built)
    assert TS_TEST.exists(), f"tsc -b did not write {TS_TEST}"
    result = subprocess.run(
        [node, "--test", str(TS_TEST)],
        cwd=ROOT,
        env={**os.environ, "WIRESTREAM_CORPUS": str(folder)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, _differences(result.stdout) + result.stderr[-5000:]
    assert "# skipped 0" in result.stdout and "# fail 0" in result.stdout, result.stdout
    for variant in built.variants:
        for kind in ("golden", "golden_errors", "differential", "mutations", "encode_errors"):
            assert f"{variant.name}.json {kind}: " in result.stdout, (variant.name, kind)
    assert f"{built.spelling.name}.json tracking: " in result.stdout
    assert f"{built.choosing.name}.json tracking: " in result.stdout


# A stream of CHOOSING frames through TypeScript's StreamDecoder, in chunks: the frames it
# gives (class and re-encoded bytes), and where expectStartup() was called. argv: the
# module's path, the stream (hex), the chunk sizes, the frame counts after which to expect
# a startup frame again, and a module without startup frames (expectStartup refuses).
STREAM_JS = """
const [path, hex, sizes, rearm, other] = process.argv.slice(1);
const codec = await import(path);
const data = Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const decoder = new codec.StreamDecoder({ startup: true });
const again = new Set(JSON.parse(rearm));
let seen = 0;
decoder.afterFrame = () => {
  seen += 1;
  if (again.has(seen)) decoder.expectStartup();
};
const out = [];
let at = 0;
for (const size of JSON.parse(sizes)) {
  for (const frame of decoder.feed(data.subarray(at, at + size))) {
    const bytes = Array.from(codec.encode(frame), (b) => b.toString(16).padStart(2, "0")).join("");
    out.push([frame.constructor.name, bytes]);
  }
  at += size;
}
let refused = "";
try {
  new (await import(other)).StreamDecoder().expectStartup();
} catch (error) {
  refused = error.name;
}
console.log(JSON.stringify({ frames: out, buffered: decoder.buffered, refused }));
"""


def test_stream_decoder_reads_startup_frames(node: str, built: Built) -> None:
    """StreamDecoder({startup: true}) reads the first frame with the startup header and
    expectStartup() arms that again, as Python's StreamDecoder(startup=True) and
    expect_startup() do, whatever the chunks (the decoder is told between frames, by its
    after-frame callback, as a reader of PostgreSQL's 'N' answer would)."""
    c = built.choosing.version.codec()
    frames = [c.Hello(level=1, pairs=[c.Pair("user", "me")]), c.Small(more_data=b"x"),
              c.Masked(key=9, payload=b"hi", key64=3, tail=b"yo"), c.Cancel(secret=5),
              c.Other(), c.UnknownFrame(code=(9, 0x33), body=b"3")]  # fmt: skip
    stream = b"".join(c.encode(f) for f in frames)
    rearm = [3]  # after the third frame, a startup frame again (the Cancel)
    mixed = [7, 1, 3, 2, 40, 5] * len(stream)
    for sizes in ([len(stream)], [1] * len(stream), mixed[: len(stream)]):
        python = c.StreamDecoder(startup=True)
        count = [0]

        def after(frame: Any, size: int, python: Any = python, count: list[int] = count) -> None:
            count[0] += 1
            if count[0] in rearm:
                python.expect_startup()

        python.after_frame = after
        got: list[Any] = []
        at = 0
        for size in sizes:
            for frame in python.feed(stream[at : at + size]):
                got.append([type(frame).__name__, c.encode(frame).hex()])
            at += size
        assert got == [[type(f).__name__, c.encode(f).hex()] for f in frames]
        script = [node, "--input-type=module", "-e", STREAM_JS,
                  str(built.module_js(built.choosing)), stream.hex(), json.dumps(sizes),
                  json.dumps(rearm), str(built.module_js(built.constructs))]  # fmt: skip
        answer = json.loads(run_checked(script, "node (StreamDecoder)"))
        assert answer == {"frames": got, "buffered": 0, "refused": "TypeError"}, sizes
