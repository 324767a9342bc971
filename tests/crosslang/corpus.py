"""The cross-language conformance corpus: Python's answers, written once for every target.

``python -m tests.crosslang.corpus OUTDIR`` writes one JSON file per protocol version and
encoding (``rsocket_v1_0.json``, ..., ``rsio_v0_msgpack.json``) and ``index.json`` naming
them. Each file holds four lists of cases, all decoded and re-encoded by Python here:

- ``golden``: every vector of ``tests/vectors/<protocol>_<version>.yaml`` (for msgpack, the
  vectors with a ``msgpack_hex``);
- ``golden_errors``: every ``*_errors.yaml`` vector, with the exact class Python raises
  (the vector's class or a subclass of it; the writer checks which);
- ``differential``: frames drawn from the generated hypothesis strategies
  (``generated/<p>/<v>/strategies.py``) with a fixed seed, as Python encodes them;
- ``mutations``: valid frames with bits flipped, cut short, extended, spliced or a
  length-like field edited (and, for MessagePack, one value of the array replaced),
  with whatever Python makes of them: a frame or an error class.

A case is ``{"bytes": hex, "ctx": ..., "sender": ...}`` (and ``"startup": true`` for a
frame a connection starts with, decoded with ``decode_startup``: PostgreSQL's startup
messages) plus either ``"frame"`` (the
decoded frame) with ``"encoded"`` (Python's encoding of that frame; ``"encode_error"``
instead when Python refuses to encode it), or ``"error"`` (the class name; ``"needed"``
as well for Truncated: a number, or ``{"big": ...}`` beyond 2**53 - 1). Each case carries its own context (the one its frame was drawn
or written with). For versions with a context, a fifth list, ``tracking``, is one
direction's stream: the random frames that set or clear context values, their keys
folded into a few values so that later frames overwrite and clear earlier ones; each
case's ``ctx`` is the running context before its frame and ``"tracked"`` the context
after ``track_context`` has seen it (where the frame's code has a context part, MySQL's
phase, the running context holds the frame's code there; when the random frames hold too
few that change the context, more of those are drawn). Mutants include, for versions
with a context, the same bytes under another context: one value set to a value the IDL's
conditions test (or a bound). Another language decodes ``bytes`` with ``ctx``/``sender`` and
must give the same frame or error; for a frame, its encoding of the decoded frame and of
a frame built from ``frame`` must both be ``encoded``.

The JSON form of values is lossless and the same for every language:

- integers of at most 32 bits (by the IDL type) are JSON numbers; u64, i64, varint and
  varu64 ones are ``{"big": "<decimal>"}`` (a JSON number cannot hold them exactly);
- floats (f32, f64) are ``{"float": "<16 hex digits>"}``, the binary64 bits of Python's
  float (NaN payloads, the sign of zero and infinities stay exact; JSON has none of them);
- bytes are ``{"hex": "..."}``; strings, booleans and null are themselves; lists are lists;
- a frame, a struct or a union variant is ``{"$type": "<Python class name>", <field>:
  ...}`` with the fields in Python's order and Python's snake_case names;
- a context is ``{<slot>: value}``; a keyed slot (rsio's element_size) is a list of
  ``[key, value]`` pairs in key order; it is null where the version has no context.

Everything is drawn from fixed seeds, so the corpus is the same on every run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import msgpack
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.support.protocols import VERSIONS, Version, context, is_startup
from wirestream.codegen.frontend import model
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.plan.codec import lower_snake
from wirestream.runtime import errors

SEED = 16  # issue 16
DIFFERENTIAL = 1000  # random frames per protocol version (the floor)
MUTATIONS = 10_000  # mutated inputs per protocol version and encoding (the floor)
TRACKING = 100  # frames that change the context, at least (where a version has a context)
_CTX_WEIGHT = 3  # of the mutators' 17: a source's bytes under another context
FORMAT = 1  # bump when the case layout changes

Json = Any  # what json.dumps takes: the corpus is plain nested dicts and lists
_SAFE = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER


# --- the protocol versions and encodings ----------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One protocol version in one encoding: one corpus file."""

    version: Version
    encoding: str  # "binary" | "msgpack"

    @property
    def name(self) -> str:
        suffix = "" if self.encoding == "binary" else f"_{self.encoding}"
        return f"{self.version.protocol}_{self.version.version}{suffix}"

    @property
    def module(self) -> str:
        """The generated module's path below the package root (``rsocket/v1_0``)."""
        return f"{self.version.protocol}/{self.version.version}"

    @property
    def msgpack(self) -> bool:
        return self.encoding == "msgpack"

    def decode(self, data: bytes, ctx: Any, sender: str | None, startup: bool = False) -> Any:
        codec = self.version.codec()
        if self.msgpack:
            return codec.decode_msgpack(data, ctx)
        if startup:
            return codec.decode_startup(data, ctx)
        return codec.decode(data, ctx, sender)

    def encode(self, frame: Any, ctx: Any) -> bytes:
        codec = self.version.codec()
        data: bytes = codec.encode_msgpack(frame) if self.msgpack else codec.encode(frame, ctx)
        return data


VARIANTS = [Variant(v, encoding) for v in VERSIONS for encoding in v.codec().ENCODINGS]


# --- integer widths from the IDL model -------------------------------------------------------


def _int_fields(items: Iterable[model.Item]) -> Iterator[tuple[str, model.IntType]]:
    """The integer attributes among ``items``: fields, values in bit words, int arrays."""
    for item in items:
        node = item.node
        if isinstance(node, model.IntField):
            yield node.name, node.type
        elif isinstance(node, model.Word):
            for bit in node.bits:
                if bit.kind == "value" and bit.value is not None:
                    yield bit.value.name, bit.value.type
        elif isinstance(node, model.ArrayField) and isinstance(node.element, model.IntField):
            yield node.name, node.element.type


def _flags_word(items: Iterable[model.Item]) -> model.IntType | None:
    for item in items:
        node = item.node
        if isinstance(node, model.Word) and any(bit.kind == "flags" for bit in node.bits):
            return node.type
    return None


@dataclass(frozen=True)
class Widths:
    """Value bits of every integer attribute, by class name and attribute name."""

    fields: dict[str, dict[str, int]]
    context: dict[str, tuple[int, int | None]]  # slot -> (value bits, key bits or None)

    def bits(self, owner: str, name: str) -> int:
        try:
            return self.fields[owner][name]
        except KeyError:
            raise KeyError(f"{owner}.{name}: no integer field of that name in the IDL") from None


@cache
def widths(version: Version) -> Widths:
    proto = load_protocol(version.idl)
    header = dict(_int_fields(proto.header))
    startup = dict(_int_fields(proto.startup.header)) if proto.startup is not None else {}
    fields: dict[str, dict[str, int]] = {}
    for frame in proto.frames:
        own = startup if frame.startup else header
        fields[frame.name] = {
            n: t.bits for n, t in {**own, **dict(_int_fields(frame.items))}.items()
        }
        # multi-bit flag values (MQTT's QoS) are integer attributes too
        fields[frame.name].update({n: v.type.bits for n, (v, _) in frame.flag_values.items()})
    structs = list(proto.structs) + [s for u in proto.unions for s in u.variants.values()]
    for struct in structs:
        fields[struct.name] = {n: t.bits for n, t in _int_fields(struct.items)}
    # UnknownFrame (where the IDL keeps unknown frames): its code has the discriminator's
    # type (a context part counts as 32 bits), its flags the type of the word that holds
    # them, the rest is the header.
    unknown = {n: t.bits for n, t in header.items()}
    unknown["code"] = max(header[name].bits if name in header else 32
                          for name in proto.discriminator)  # fmt: skip
    flags = _flags_word(proto.header)
    if flags is not None:
        unknown["flags"] = flags.bits
    fields["UnknownFrame"] = unknown
    ctx: dict[str, tuple[int, int | None]] = {}
    for value in proto.context:
        if not value.set_by:  # set by the caller only (MySQL's phase): a plain number
            ctx[value.name] = (32, 32 if value.keyed_by else None)
            continue
        setter, field = value.set_by[0]
        key = fields[setter][value.keyed_by] if value.keyed_by else None
        ctx[value.name] = (fields[setter][field], key)
    return Widths(fields, ctx)


# --- the JSON form ---------------------------------------------------------------------------


def _int(value: int, bits: int) -> Json:
    return int(value) if bits <= 32 else {"big": str(int(value))}


def to_json(obj: Any, w: Widths) -> Json:
    """A frame, struct or union variant in the tagged JSON form."""
    owner = type(obj).__name__
    out: dict[str, Json] = {"$type": owner}
    for name in type(obj).__match_args__:
        out[name] = _value(getattr(obj, name), w, owner, name)
    return out


def _value(value: Any, w: Widths, owner: str, name: str) -> Json:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return _int(value, w.bits(owner, name))
    if isinstance(value, float):
        return {"float": struct.pack(">d", value).hex()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, (list, tuple)):
        return [_value(item, w, owner, name) for item in value]
    if hasattr(type(value), "__match_args__"):
        return to_json(value, w)
    raise TypeError(f"{owner}.{name}: no JSON form for {value!r}")


def from_json(codec: ModuleType, value: Json) -> Any:
    """The inverse of ``to_json``: what another language does to build a frame."""
    if isinstance(value, list):
        return [from_json(codec, item) for item in value]
    if isinstance(value, dict):
        if "$type" in value:
            cls = getattr(codec, value["$type"])
            return cls(**{k: from_json(codec, v) for k, v in value.items() if k != "$type"})
        if set(value) == {"big"}:
            return int(value["big"])
        if set(value) == {"hex"}:
            return bytes.fromhex(value["hex"])
        if set(value) == {"float"}:
            return struct.unpack(">d", bytes.fromhex(value["float"]))[0]
        raise ValueError(f"not a tagged JSON value: {value!r}")
    return value


def ctx_to_json(ctx: Any, w: Widths) -> Json:
    """``ctx`` in the JSON form; null for none, or for a version whose context is empty."""
    if ctx is None or not type(ctx).__match_args__:
        return None
    out: dict[str, Json] = {}
    for name in type(ctx).__match_args__:
        bits, key_bits = w.context[name]
        value = getattr(ctx, name)
        if key_bits is None:
            out[name] = _int(value, bits)
        else:
            out[name] = [[_int(k, key_bits), _int(v, bits)] for k, v in sorted(value.items())]
    return out


def ctx_from_json(codec: ModuleType, value: Json) -> Any:
    if value is None:
        return None

    def plain(v: Json) -> int:
        return int(v["big"]) if isinstance(v, dict) else int(v)

    return codec.Context(**{
        name: ({plain(k): plain(v) for k, v in slot} if isinstance(slot, list) else plain(slot))
        for name, slot in value.items()
    })  # fmt: skip


# --- one case --------------------------------------------------------------------------------


class Tally:
    """Outcomes that are not ProtocolErrors: a Python bug the corpus still records."""

    def __init__(self) -> None:
        self.foreign: dict[str, int] = {}


def case(
    variant: Variant,
    data: bytes,
    ctx: Any,
    sender: str | None,
    tally: Tally | None = None,
    startup: bool = False,
) -> dict[str, Json]:
    """What Python makes of ``data``: the frame (and its encoding) or the error;
    ``startup``: ``data`` is read as a frame a connection starts with."""
    w = widths(variant.version)
    out: dict[str, Json] = {"bytes": data.hex(), "ctx": ctx_to_json(ctx, w), "sender": sender}
    if startup:
        out["startup"] = True
    try:
        frame = variant.decode(data, ctx, sender, startup)
    except errors.ProtocolError as error:
        out["error"] = type(error).__name__
        if isinstance(error, errors.Truncated):
            # A length read from the input can announce more bytes than a double holds
            # exactly (TypeScript's needed is a number): those are {"big": ...}.
            needed = error.needed
            out["needed"] = needed if needed <= _SAFE else {"big": str(needed)}
        return out
    except Exception as error:  # noqa: BLE001 - recorded, and counted for the report
        out["error"] = type(error).__name__
        if tally is not None:
            name = type(error).__name__
            tally.foreign[name] = tally.foreign.get(name, 0) + 1
        return out
    out["frame"] = to_json(frame, w)
    try:
        out["encoded"] = variant.encode(frame, ctx).hex()
    except errors.ProtocolError as error:
        out["encode_error"] = type(error).__name__
    return out


def _startup(frame: Any) -> bool:
    """Whether ``frame`` is one a connection starts with (``decode_startup`` reads it)."""
    return bool(getattr(type(frame), "STARTUP", False))


def _sender(variant: Variant, frame: Any) -> str | None:
    """The sender a decoder needs for ``frame``: its side, where codes are shared."""
    if not variant.version.codec().NEEDS_SENDER:
        return None
    sender = getattr(type(frame), "SENDER", "any")
    return None if sender == "any" else str(sender)


# --- golden vectors --------------------------------------------------------------------------


def golden(variant: Variant) -> list[dict[str, Json]]:
    codec = variant.version.codec()
    out = []
    for vector in variant.version.vectors():
        key = "msgpack_hex" if variant.msgpack else "hex"
        if key not in vector:
            continue
        ctx = context(codec, vector.get("ctx"))
        sender = None if variant.msgpack else vector.get("sender")
        startup = not variant.msgpack and is_startup(codec, vector)
        one = case(variant, bytes.fromhex(vector[key]), ctx, sender, startup=startup)
        if "frame" not in one or one["frame"]["$type"] != vector["frame"]:
            raise AssertionError(f"{variant.name}: golden vector {vector['name']} gives {one}")
        out.append({"name": vector["name"], **one})
    return out


def golden_errors(variant: Variant) -> list[dict[str, Json]]:
    if variant.msgpack:
        return []  # the *_errors files hold binary inputs only
    codec = variant.version.codec()
    out = []
    for vector in variant.version.vectors("_errors"):
        ctx = context(codec, vector.get("ctx"))
        one = case(variant, bytes.fromhex(vector["hex"]), ctx, vector.get("sender"),
                   startup=bool(vector.get("startup", False)))  # fmt: skip
        expected = getattr(errors, vector["error"])
        raised = getattr(errors, one.get("error", ""), None)
        if raised is None or not issubclass(raised, expected):
            raise AssertionError(f"{variant.name}: error vector {vector['name']} gives {one}")
        out.append({"name": vector["name"], **one})
    return out


# --- differential: frames from the generated strategies -------------------------------------


@cache
def drawn(version: Version, count: int) -> tuple[tuple[Any, Any], ...]:
    """``count`` distinct (frame, ctx) pairs from the version's strategies, the same on
    every run: hypothesis with a fixed seed, no database, generation only."""
    return _draw(version, version.strategies().frames(), count)


def _draw(version: Version, frames: Any, count: int) -> tuple[tuple[Any, Any], ...]:
    """``count`` distinct (frame, ctx) pairs drawn from the strategy ``frames``."""
    codec = version.codec()
    seen: set[tuple[bytes, str]] = set()
    out: list[tuple[Any, Any]] = []
    for attempt in range(20):

        @seed(SEED + attempt)
        @settings(
            max_examples=count,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(frames)
        def collect(pair: tuple[Any, Any]) -> None:
            if len(out) >= count:
                return
            frame, ctx = pair
            key = (codec.encode(frame, ctx), repr(ctx))
            if key not in seen:
                seen.add(key)
                out.append(pair)

        collect()
        if len(out) >= count:
            return tuple(out)
    raise AssertionError(f"{version.id}: only {len(out)} distinct frames drawn")


def differential(variant: Variant, count: int) -> list[dict[str, Json]]:
    out = []
    for frame, ctx in drawn(variant.version, count):
        data = variant.encode(frame, ctx)
        startup = not variant.msgpack and _startup(frame)
        one = case(variant, data, ctx, _sender(variant, frame), startup=startup)
        decoded = from_json(variant.version.codec(), one.get("frame"))
        if decoded != frame or one.get("encoded") != data.hex():
            raise AssertionError(f"{variant.name}: {frame!r} does not round-trip: {one}")
        out.append(one)
    return out


def tracking(variant: Variant, count: int) -> list[dict[str, Json]]:
    """One direction's frames that change the context, with the context kept in step:
    those among the ``count`` random frames, and more of their kinds when they are fewer
    than ``TRACKING``."""
    codec = variant.version.codec()
    proto = load_protocol(variant.version.idl)
    if not proto.context:
        return []
    keyed = {v.keyed_by for v in proto.context if v.keyed_by}
    kinds = {f for v in proto.context for f, _ in v.set_by} | {
        f for v in proto.context for f in v.cleared_by
    }
    originals = [frame for frame, _ in drawn(variant.version, count)
                 if type(frame).__name__ in kinds]  # fmt: skip
    if len(originals) < TRACKING:
        strategies = variant.version.strategies()
        more = st.one_of([getattr(strategies, lower_snake(f.name))()
                          for f in proto.frames if f.name in kinds])  # fmt: skip
        originals += [frame for frame, _ in _draw(variant.version, more, TRACKING)]
        originals = originals[:TRACKING]
    running = codec.Context()
    out = []
    for original in originals:
        frame = from_json(codec, to_json(original, widths(variant.version)))  # a copy
        for name in keyed:
            if hasattr(frame, name):
                setattr(frame, name, getattr(frame, name) % 4)
        _code_in_context(proto, frame, running)
        before = ctx_to_json(running, widths(variant.version))
        startup = not variant.msgpack and _startup(frame)
        one = case(variant, variant.encode(frame, running), running, _sender(variant, frame),
                   startup=startup)  # fmt: skip
        one["ctx"] = before
        codec.track_context(frame, running)
        one["tracked"] = ctx_to_json(running, widths(variant.version))
        out.append(one)
    return out


def _code_in_context(proto: model.Protocol, frame: Any, ctx: Any) -> None:
    """Where a frame's code has a context part (MySQL's phase), ``ctx`` takes the frame's
    value there: what a receiver expecting that frame has."""
    if _startup(frame):
        return
    code = type(frame).FRAME_TYPE.value
    parts = code if isinstance(code, tuple) else (code,)
    for name, part in zip(proto.discriminator, parts):
        if name.startswith("ctx.") and part != model.WILDCARD:
            setattr(ctx, name[4:], part)


# --- error parity: mutated valid frames -----------------------------------------------------

_INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF)
_INTERESTING_VALUES: tuple[object, ...] = (
    0, 1, -1, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
    2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**31), -(2**31) - 1, -(2**63),
    0.0, 1.0, 1.5, -0.0, True, False, None, "", "x", "\u00e9", b"", b"\x00", b"\xff" * 9,
    [], [1], [b"a"], [[[]]], {}, {"a": 1}, {1: 2},
    msgpack.ExtType(1, b"x"), msgpack.Timestamp(1, 0), msgpack.Timestamp(2**34, 5),
)  # fmt: skip


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_fields(data: bytes) -> list[tuple[int, int, int, str]]:
    """Places that may hold a length or count: (position, width, value, "be" | "varint")
    where a big-endian or LEB128 integer there is no larger than the bytes after it."""
    found = []
    for pos in range(len(data)):
        for width in (1, 2, 3, 4):
            if pos + width <= len(data):
                value = int.from_bytes(data[pos : pos + width], "big")
                if value <= len(data) - pos - width and (width == 1 or data[pos] == 0):
                    found.append((pos, width, value, "be"))
        value, shift, end = 0, 0, pos
        while end < len(data) and end - pos < 10:
            value |= (data[end] & 0x7F) << shift
            shift += 7
            end += 1
            if data[end - 1] < 0x80:
                if end - pos > 1 and value <= len(data) - end:
                    found.append((pos, end - pos, value, "varint"))
                break
    return found


def _edit_length(data: bytes, rng: random.Random) -> bytes:
    spots = _length_fields(data)
    if not spots:
        return _set_byte(data, rng)
    pos, width, value, kind = rng.choice(spots)
    if kind == "varint" and rng.random() < 0.25:
        # The same value with a redundant continuation byte: not canonical.
        encoded = _varint(value)
        new = encoded[:-1] + bytes((encoded[-1] | 0x80, 0x00))
        return data[:pos] + new + data[pos + width :]
    delta = rng.choice((1, -1, 2, -2, rng.randint(3, 64), -value, len(data)))
    new_value = max(0, value + delta)
    if kind == "varint":
        return data[:pos] + _varint(new_value) + data[pos + width :]
    new_value = min(new_value, (1 << (8 * width)) - 1)
    if rng.random() < 0.1:
        new_value = (1 << (8 * width)) - 1
    return data[:pos] + new_value.to_bytes(width, "big") + data[pos + width :]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _set_byte(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    out[rng.randrange(len(out))] = rng.choice((*_INTERESTING_BYTES, rng.randrange(256)))
    return bytes(out)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def _extend(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return data + data[rng.randrange(len(data)) :]  # a second frame's worth, or part
    return data + rng.randbytes(rng.randint(1, 8))


def _splice(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.randbytes(rng.randint(1, 4)) + data[at:]


def _delete(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randint(1, 4) :]


def _object(data: bytes, rng: random.Random) -> bytes:
    """For MessagePack: one value of the frame's array (or of a nested array) replaced,
    dropped or added, repacked -- inputs that are valid MessagePack but wrong frames."""
    obj = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=False)
    lists: list[list[object]] = []

    def walk(value: object) -> None:
        if isinstance(value, list):
            lists.append(value)
            for item in value:
                walk(item)

    walk(obj)
    if not lists:
        return _flip(data, rng)
    target = rng.choice(lists)
    action = rng.random()
    if action < 0.15 and target:
        del target[rng.randrange(len(target))]
    elif action < 0.3:
        target.insert(rng.randrange(len(target) + 1), rng.choice(_INTERESTING_VALUES))
    elif target:
        at = rng.randrange(len(target))
        old = target[at]
        if isinstance(old, int) and not isinstance(old, bool) and rng.random() < 0.5:
            target[at] = old + rng.choice((1, -1, 2**64, -(2**63)))
        else:
            target[at] = rng.choice(_INTERESTING_VALUES)
    try:
        packed: bytes = msgpack.packb(obj, use_bin_type=True)
    except (OverflowError, ValueError, TypeError):
        return _flip(data, rng)
    return packed


def _ext(code: int, body: bytes) -> bytes:
    """A MessagePack ext value: fixext for 1/2/4/8/16 bytes, ext 8 otherwise."""
    fixed = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}
    head = bytes((fixed[len(body)],)) if len(body) in fixed else bytes((0xC7, len(body)))
    return head + bytes((code & 0xFF,)) + body


# Type codes around the reserved range (-128..-1; -1 is the timestamp) and bodies of the
# sizes a timestamp may and may not have, plus timestamps at the nanosecond limit.
_EXT_VALUES = tuple(
    [_ext(code, bytes((fill,)) * size)
     for code in (-128, -2, -1, 0, 5, 127)
     for size in (1, 2, 3, 4, 8, 12, 16)
     for fill in (0x00, 0xFF)]
    + [_ext(-1, (ns << 34).to_bytes(8, "big")) for ns in (999_999_999, 1_000_000_000)]
    + [_ext(-1, ns.to_bytes(4, "big") + bytes(8)) for ns in (999_999_999, 1_000_000_000)]
)  # fmt: skip


def _with_ext_values(data: bytes) -> list[bytes]:
    """``data`` (a MessagePack array) with its second item replaced by each ext value,
    alone and with a byte after it: the frame's own checks refuse an ext value where the
    frame has a field, so only the trailing byte tells an unpacker that refused the value
    (MalformedMsgpack) from one that took it (TrailingBytes)."""
    items = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=False)
    if not isinstance(items, list) or len(items) < 2 or len(items) > 15:
        return []
    packed = [msgpack.packb(item, use_bin_type=True) for item in items]
    head = bytes((0x90 | len(items),))
    return [
        head + packed[0] + ext + b"".join(packed[2:]) + tail
        for ext in _EXT_VALUES
        for tail in (b"", b"\xc0")
    ]


_BYTE_MUTATORS: dict[str, tuple[int, Callable[[bytes, random.Random], bytes]]] = {
    "flip": (4, _flip),
    "byte": (2, _set_byte),
    "truncate": (3, _truncate),
    "extend": (2, _extend),
    "splice": (1, _splice),
    "delete": (1, _delete),
    "length": (4, _edit_length),
}


_CONDITION_LITERAL = re.compile(r"ctx\.(\w+)\s*(?:==|!=|<=|>=|<|>|&)\s*(0x[0-9a-fA-F]+|\d+)")


def context_values(version: Version) -> list[tuple[str, list[int]]]:
    """The plain (not keyed) context values of a version and values worth decoding under:
    0, 1, the default, the largest, each literal the IDL compares or masks the value with
    (and its neighbours), and where the value is a part of frame codes (MySQL's phase),
    every code's part."""
    proto = load_protocol(version.idl)
    w = widths(version)
    text = version.idl.read_text(encoding="utf-8")
    found: dict[str, set[int]] = {}
    for value in proto.context:
        if value.keyed_by:
            continue
        bits = w.context[value.name][0]
        found[value.name] = {0, 1, value.default, (1 << bits) - 1}
    for name, literal in _CONDITION_LITERAL.findall(text):
        if name in found:
            number = int(literal, 0)
            found[name] |= {number, number + 1, max(0, number - 1)}
    for index, part in enumerate(proto.discriminator):
        if part.startswith("ctx.") and part[4:] in found:
            found[part[4:]] |= {f.code[index] for f in proto.frames
                                if not f.startup and f.code[index] != model.WILDCARD}  # fmt: skip
    return [(name, sorted(values)) for name, values in found.items()]


def mutations(
    variant: Variant, sources: list[dict[str, Json]], count: int, tally: Tally | None = None
) -> list[dict[str, Json]]:
    """``count`` distinct mutants of the valid ``sources`` with Python's outcome: their
    bytes changed, or (``"ctx"``) the same bytes decoded under another context."""
    codec = variant.version.codec()
    mutators = dict(_BYTE_MUTATORS)
    if variant.msgpack:
        mutators["object"] = (5, _object)
    slots = [] if variant.msgpack else context_values(variant.version)
    names = list(mutators) + (["ctx"] if slots else [])
    weights = [mutators[n][0] for n in mutators] + ([_CTX_WEIGHT] if slots else [])
    w = widths(variant.version)
    rng = random.Random(f"{SEED}:{variant.name}")  # str seeds do not depend on PYTHONHASHSEED
    parsed = [
        (bytes.fromhex(s["bytes"]), json.dumps(s["ctx"]), s["sender"], bool(s.get("startup")))
        for s in sources
        if s["bytes"]
    ]
    contexts = {c: ctx_from_json(codec, json.loads(c)) for _, c, _, _ in parsed}
    seen: set[tuple[bytes, str, str | None, bool]] = set()
    out: list[dict[str, Json]] = []
    if variant.msgpack:
        # Extension values in the place of a frame's first field, for one frame of each
        # type: what unpacking makes of each type code and size is easy to get wrong and
        # rare among random bytes.
        codes: set[int] = set()
        for data, ctx_json, sender, _ in parsed:
            if data[1] in codes:  # data[0] is the fixarray head, data[1] the frame code
                continue
            codes.add(data[1])
            for mutant in _with_ext_values(data):
                key = (mutant, ctx_json, sender, False)
                if key not in seen:
                    seen.add(key)
                    one = case(variant, mutant, contexts[ctx_json], sender, tally)
                    out.append({"op": "ext", **one})
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > count * 20:
            raise AssertionError(f"{variant.name}: only {len(out)} distinct mutants")
        data, ctx_json, sender, startup = rng.choice(parsed)
        op = rng.choices(names, weights)[0]
        if op == "ctx":
            mutant = data
            slot, values = rng.choice(slots)
            ctx = ctx_from_json(codec, json.loads(ctx_json))
            if ctx is None:
                ctx = codec.Context()
            setattr(ctx, slot, rng.choice(values))
            new_json = json.dumps(ctx_to_json(ctx, w))
            if new_json == ctx_json:
                continue
            contexts.setdefault(new_json, ctx)
            ctx_json = new_json
        else:
            mutant = mutators[op][1](data, rng)
            if mutant == data:
                continue
        key = (mutant, ctx_json, sender, startup)
        if key in seen:
            continue
        seen.add(key)
        one = case(variant, mutant, contexts[ctx_json], sender, tally, startup)
        out.append({"op": op, **one})
    return out


# --- the corpus ------------------------------------------------------------------------------


def build(
    variant: Variant,
    differential_count: int = DIFFERENTIAL,
    mutation_count: int = MUTATIONS,
    tally: Tally | None = None,
) -> dict[str, Json]:
    """One corpus file's content."""
    version = variant.version
    codec = version.codec()
    gold = golden(variant)
    diff = differential(variant, differential_count)
    if variant.msgpack:
        # The binary vectors without a msgpack_hex still make good msgpack frames.
        known = {g["bytes"] for g in gold}
        extra = []
        for vector in version.vectors():
            if "msgpack_hex" in vector:
                continue
            ctx = context(codec, vector.get("ctx"))
            frame = codec.decode(bytes.fromhex(vector["hex"]), ctx, vector.get("sender"))
            one = case(variant, codec.encode_msgpack(frame), ctx, None)
            if one["bytes"] not in known:
                extra.append(one)
        diff = extra + diff
    muts = mutations(variant, gold + diff, mutation_count, tally)
    return {
        "format": FORMAT,
        "protocol": version.protocol,
        "version": version.version,
        "module": variant.module,
        "encoding": variant.encoding,
        "needs_context": bool(codec.NEEDS_CONTEXT),
        "needs_sender": bool(codec.NEEDS_SENDER),
        "seed": SEED,
        "golden": gold,
        "golden_errors": golden_errors(variant),
        "differential": diff,
        "tracking": tracking(variant, differential_count),
        "mutations": muts,
    }


KINDS = ("golden", "golden_errors", "differential", "tracking", "mutations")


def write(
    out_dir: Path,
    variants: Iterable[Variant] = VARIANTS,
    differential_count: int = DIFFERENTIAL,
    mutation_count: int = MUTATIONS,
    log: Callable[[str], None] | None = None,
) -> dict[str, Json]:
    """Write the corpus files and ``index.json`` into ``out_dir``; returns the index."""
    out_dir.mkdir(parents=True, exist_ok=True)
    index: dict[str, Json] = {"format": FORMAT, "seed": SEED, "files": []}
    for variant in variants:
        started = time.perf_counter()
        tally = Tally()
        content = build(variant, differential_count, mutation_count, tally)
        path = out_dir / f"{variant.name}.json"
        path.write_text(json.dumps(content, separators=(",", ":")) + "\n", encoding="utf-8")
        counts = {kind: len(content[kind]) for kind in KINDS}
        errors_seen = sum("error" in c for c in content["mutations"])
        index["files"].append({
            "file": path.name,
            "module": variant.module,
            "encoding": variant.encoding,
            "counts": counts,
            "foreign_errors": tally.foreign,
        })  # fmt: skip
        if log is not None:
            log(
                f"{variant.name}: {counts} ({errors_seen} mutants are errors, "
                f"{len(content['mutations']) - errors_seen} decode; non-ProtocolErrors "
                f"{tally.foreign or 'none'}) in {time.perf_counter() - started:.2f}s"
            )
    (out_dir / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.crosslang.corpus", description=__doc__)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--differential", type=int, default=DIFFERENTIAL)
    parser.add_argument("--mutations", type=int, default=MUTATIONS)
    parser.add_argument("--only", action="append", help="variant name (e.g. rsio_v0_msgpack)")
    args = parser.parse_args(argv)
    chosen = [v for v in VARIANTS if not args.only or v.name in args.only]
    write(args.out_dir, chosen, args.differential, args.mutations, log=print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
