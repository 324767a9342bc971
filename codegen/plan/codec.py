"""The language-neutral plan of one protocol version's codec: what every target spells.

``build`` checks the IDL and makes the model; this module decides, once, everything about
the code that does not depend on the language it is written in:

- the order in which fields are read and written, and which consecutive fixed-size fields
  form one run with one bounds check (``FixedRun``);
- the bounds each value must satisfy, the bit positions of word fields, and which fields
  are constants, derived (a later field's length or count, computed when encoding) or the
  frame's attributes;
- which flags say a field is present, and the fewest bytes each element can take (the
  bound a declared count is checked against before anything is allocated);
- the decoder table (codes, frames sent by each side, the unknown-frame policy), the
  MessagePack checks and the ``track_context`` rules.

A target (``python_target``, ``typescript_target``) walks this plan and only says how to
spell each step in its language, in its own templates (``templates/<language>/``), as the
Kaitai Struct compiler keeps format semantics once and a translator per language.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Union

from wirestream.codegen.frontend.model import (
    ArrayField,
    BytesField,
    Cond,
    Element,
    Expr,
    FloatField,
    Frame,
    IntField,
    IntType,
    Item,
    Protocol,
    RefField,
    Struct,
    Union_,
    WILDCARD,
    Word,
)


def upper_snake(name: str) -> str:
    """``RequestStream`` -> ``REQUEST_STREAM`` (frame-type enum members)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def lower_snake(name: str) -> str:
    return upper_snake(name).lower()


def int_bounds(node: IntField) -> tuple[int, int]:
    """The values ``node`` may hold: its type's range narrowed by the IDL's min/max."""
    lo, hi = node.type.min, node.type.max
    if node.min is not None:
        lo = max(lo, node.min)
    if node.max is not None:
        hi = min(hi, node.max)
    return lo, hi


def item_values(item: Item) -> list[IntField]:
    """The integer fields an item carries (a word's value bits, or the field itself)."""
    node = item.node
    if isinstance(node, Word):
        return [bit.value for bit in node.bits if bit.value is not None]
    if isinstance(node, IntField):
        return [node]
    return []


def is_attr(node: IntField) -> bool:
    """Whether an integer is an attribute of its frame (not a constant, not derived)."""
    return node.const is None and node.derived_from is None


def fixed_unit(item: Item) -> bool:
    """Whether an item has one size and is always there: it can join a ``FixedRun``."""
    if item.condition is not None or item.when is not None:
        return False
    if isinstance(item.node, IntField) and item.node.peek:
        return False
    node = item.node
    return isinstance(node, (Word, FloatField)) or (
        isinstance(node, IntField) and node.type.size is not None
    )


def unit_little(node: IntField | Word | FloatField) -> bool:
    """The byte order of a fixed-size unit (a run holds units of one order)."""
    return node.little if isinstance(node, FloatField) else node.type.little


def unit_size(node: IntField | Word | FloatField) -> int:
    return node.bits // 8 if isinstance(node, FloatField) else node.type.size or 0


def literal_size(expr: Expr | None) -> int | None:
    """The size of an expression that is one literal number, else None."""
    if expr is not None and len(expr.tokens) == 1 and expr.tokens[0].isdigit():
        return int(expr.tokens[0])
    return None


def min_size(node: Element | ArrayField | Word | Struct | Union_ | FloatField) -> int:
    """The fewest bytes a value can take: bounds counts the peer declares."""
    if isinstance(node, FloatField):
        return node.bits // 8
    if isinstance(node, Word):
        return node.type.size or 1
    if isinstance(node, IntField):
        return node.type.size or 1
    if isinstance(node, BytesField):
        if node.rest:
            return 0
        if node.terminator is not None:
            return 1
        if node.length is not None:
            return node.length.size or 1
        return literal_size(node.size) or 0
    if isinstance(node, ArrayField):
        for prefix in (node.count_prefix, node.byte_length_prefix):
            if prefix is not None:
                return prefix.size or 1
        return 0
    if isinstance(node, RefField):
        return min_size(node.target)
    if isinstance(node, Union_):
        return min(min_size(v) for v in node.variants.values())
    return sum(
        min_size(item.node) for item in node.items if item.condition is None and item.when is None
    )


# --- the plan's records -----------------------------------------------------------------


@dataclass
class IntPlan:
    """An integer value: where its bounds are and what it is to its frame."""

    name: str
    type: IntType
    lo: int
    hi: int
    narrowed: bool  # lo/hi are narrower than the type's range: decoding checks them
    const: int | None
    enum: str | None  # a closed enum: decoding checks membership, the attribute has its type
    derived_from: str | None  # the field whose length/count this one carries
    default: int
    default_member: str | None  # the closed enum's member for ``default``
    doc: str = ""
    names: str | None = None  # the enum naming the values, open or closed (docs, dissectors)
    boolean: bool = False  # a one-bit value that is a bool attribute
    peek: bool = False  # read without being consumed, never written (the next body byte)
    optional: bool = False  # may be None (behind an ``if:``): expressions read it as 0

    @property
    def attr(self) -> bool:
        return self.const is None and self.derived_from is None

    @property
    def big(self) -> bool:
        """64-bit values: languages without exact 64-bit numbers use big integers."""
        return self.type.bits > 32


@dataclass
class Term:
    """An operand of a size/count expression."""

    kind: str  # "literal" | "field" | "ctx"
    value: int = 0  # for literal
    name: str = ""  # field (IDL name) or context value name
    big: bool = False  # the field or context value is a 64-bit integer
    optional: bool = False  # a field that may be None (read as 0)
    keyed_by: str | None = None  # ctx: the field that keys the value
    key_big: bool = False
    default: int = 0  # ctx: the value without a context or an entry


@dataclass
class ExprPlan:
    text: str
    terms: list[Term]
    operators: list[str]  # between consecutive terms
    tree: CondPlan | None = None  # with parentheses or "/": spell the tree, not the terms

    @property
    def single_field(self) -> str | None:
        if self.tree is None and len(self.terms) == 1 and self.terms[0].kind == "field":
            return self.terms[0].name
        return None


@dataclass
class Bits:
    """A run of bits in a word: ``(word >> shift) & mask``."""

    kind: str  # "value" | "flags" | "reserved"
    shift: int
    width: int
    mask: int
    value: IntPlan | None  # for "value"


@dataclass
class FloatPlan:
    """An IEEE 754 value (binary32 or binary64) in one byte order."""

    name: str
    bits: int
    little: bool
    default: float
    doc: str = ""


@dataclass
class Unit:
    """One fixed-size value of a run: an integer, a float or a word of bit fields."""

    kind: str  # "int" | "word" | "float"
    type: IntType | None  # None for "float"
    offset: int  # from the start of the run
    value: IntPlan | None = None  # for "int"
    bits: list[Bits] = field(default_factory=list)  # for "word"
    float: FloatPlan | None = None  # for "float"


@dataclass
class FixedRun:
    """Consecutive fixed-size units of one byte order: one bounds check, then reads at
    known offsets."""

    size: int
    units: list[Unit]
    little: bool = False


@dataclass
class IntStep:
    """A variable-length integer (varint, VarU64) or one behind a presence flag."""

    value: IntPlan


@dataclass
class BytesStep:
    name: str
    string: bool
    rest: bool  # to the end of the frame
    length: IntType | None  # a length prefix of this type
    size: ExprPlan | None  # an exact size (with ``length``: used when > 0)
    nullable: bool  # length -1 means null
    length_derived: bool  # encoding: the length was written by the field that derives it
    fixed_default: int | None  # a literal size: the attribute's default has it
    terminator: int | None = None  # ends at this byte (consumed; not in the value)
    forbid: tuple[int, ...] = ()  # characters (strings) or bytes it must not hold
    xor_key: IntPlan | None = None  # transform: XOR with this earlier field's bytes

    @property
    def check_negative(self) -> bool:
        """Whether a size read or computed here can be negative and must be refused."""
        return (
            self.nullable
            or (self.length is not None and self.length.signed)
            or (self.size is not None)
        )


@dataclass
class ElementPlan:
    """What an array holds."""

    kind: str  # "int" | "bytes" | "ref"
    value: IntPlan | None = None
    bytes: BytesStep | None = None  # named after the array (errors name the array)
    fixed_size: ExprPlan | None = None  # bytes of one exact size each, no prefix
    ref: str | None = None  # struct or union name
    least: int = 1  # the fewest bytes one element takes (at least 1)
    exact: bool = False  # every element takes exactly `least` (or `fixed_size`) bytes


@dataclass
class ArrayStep:
    name: str
    element: ElementPlan
    count_prefix: IntType | None
    count_expr: ExprPlan | None
    count_rest: bool
    byte_length_prefix: IntType | None
    byte_length_expr: ExprPlan | None
    count_derived: bool  # encoding: the count was written by the field that derives it
    byte_length_derived: bool
    terminator: int | None = None  # elements until this byte (consumed, written after them)
    min_count: int = 0  # the fewest elements allowed

    @property
    def check_negative_count(self) -> bool:
        return self.count_expr is not None or (
            self.count_prefix is not None and self.count_prefix.signed
        )


@dataclass
class RefStep:
    name: str
    target: str
    union: bool


@dataclass
class FloatStep:
    """A float behind a condition (unconditional floats join a ``FixedRun``)."""

    value: FloatPlan

    @property
    def name(self) -> str:
        return self.value.name


Step = Union[FixedRun, IntStep, BytesStep, ArrayStep, RefStep, FloatStep]


@dataclass
class CondPlan:
    """A condition (``if:``, ``rules:``): the model's tree, with each flag's mask and each
    context value's default filled in (``Cond.value``), and which names are 64-bit."""

    tree: Cond
    text: str
    big: frozenset[str] = frozenset()


@dataclass
class RulePlan:
    check: CondPlan
    spec: str


@dataclass
class ItemStep:
    """One step of a layout, present only when ``flag`` is set (``mask`` in the flags),
    when the bool bit ``bit`` of the record is set, or when ``when`` holds."""

    step: Step
    flag: str | None = None
    mask: int = 0
    bit: str | None = None
    when: CondPlan | None = None

    @property
    def name(self) -> str:
        step = self.step
        assert not isinstance(step, FixedRun)
        return step.value.name if isinstance(step, (IntStep, FloatStep)) else step.name

    @property
    def optional(self) -> bool:
        return self.flag is not None or self.bit is not None or self.when is not None

    @property
    def more(self) -> bool:
        """Present while bytes remain (``if: more``)."""
        return self.when is not None and self.when.tree.op == "more"


@dataclass
class Derivation:
    """A derived integer's value, computed before anything is written (encoding)."""

    target: str  # the derived field
    kind: str  # "bytes_length" | "count" | "byte_length" | "presence" (a bool bit: 1 when there)
    source: str  # the field it measures
    string: bool = False  # bytes_length of a string: its UTF-8 length
    array: ArrayStep | None = None  # byte_length: the array encoded first


@dataclass
class AttrPlan:
    """An attribute of a frame or struct class."""

    name: str
    kind: str  # "int" | "bool" | "bytes" | "string" | "ref" | "array" | "float"
    doc: str
    optional: bool = False  # present only when its flag is set
    nullable: bool = False
    value: IntPlan | None = None  # int
    flag_mask: int = 0  # bool
    ref: str | None = None  # ref: the struct/union type
    ref_default: str | None = None  # the struct (or a union's first variant) made by default
    element: ElementPlan | None = None  # array
    fixed_default: int | None = None  # bytes/string of one literal size
    float: FloatPlan | None = None  # float


@dataclass
class MsgpackCheck:
    """A size the layout fixes, checked on a MessagePack-decoded attribute."""

    attr: str
    size: ExprPlan
    each: bool  # an array whose elements each have the size


@dataclass
class RecordPlan:
    """A frame or a struct: its attributes and its layout."""

    name: str
    doc: str
    attrs: list[AttrPlan]
    steps: list[ItemStep]
    derivations: list[Derivation]
    # frames only
    code: tuple[int, ...] = ()
    member: str = ""  # FrameType member
    sender: str = ""
    spec: str = ""
    flag_attrs: list[tuple[str, int]] = field(default_factory=list)
    set_flags: int = 0  # flags always set on send
    presence: list[tuple[str, int, str]] = field(default_factory=list)  # (flag, mask, field)
    flag_attr_mask: int = 0
    msgpack_checks: list[MsgpackCheck] = field(default_factory=list)
    rules: list[RulePlan] = field(default_factory=list)
    # multi-bit flag values (MQTT's QoS): the value, its mask and shift within the flags
    flag_values: list[tuple[IntPlan, int, int]] = field(default_factory=list)
    fixed_flags: int | None = None  # the flag bits no flag names must equal this
    named_flags_mask: int = 0  # every flag bit the frame or header names (with fixed_flags)
    startup: bool = False  # framed by the startup header (``CodecPlan.startup``)


@dataclass
class FrameLengthPlan:
    """Framing described by the header (``framing.length_field``).

    Decoding: the frame ends at ``base + value + adjust`` where base is the frame's
    start when ``back`` is None, else the end of the header minus ``back`` bytes.
    Encoding: ``value = len(body) + counted - adjust``.
    """

    field: str
    type: IntType
    counts: str
    adjust: int
    back: int | None
    counted: int


@dataclass
class UnionPlan:
    name: str
    doc: str
    peek: IntType
    mask: int
    variants: list[tuple[int, str]]


@dataclass
class EnumPlan:
    name: str
    doc: str
    open: bool
    type: IntType
    members: list[tuple[str, int]]


@dataclass
class ContextPlan:
    name: str
    doc: str
    keyed_by: str | None
    key_big: bool
    big: bool
    default: int
    set_by: list[tuple[str, str]] = field(default_factory=list)  # (frame, its field)
    cleared_by: list[str] = field(default_factory=list)  # frames that reset it


@dataclass
class ContextAction:
    kind: str  # "set" | "clear"
    value: ContextPlan
    field: str = ""  # set: the frame's field holding the new value


@dataclass
class DecoderEntry:
    """A code of the decoder table and the frame it decodes (None: ambiguous)."""

    code: tuple[int, ...]
    frame: RecordPlan | None
    own: bool  # the frame's own code (not one of its also_codes)


@dataclass
class StartupPlan:
    """The header of a connection's first messages (``startup:``) and their decoder table:
    ``decode_startup`` / ``StreamDecoder(startup=True)`` read a frame framed by it."""

    header_steps: list[ItemStep]
    header_values: list[IntPlan]
    discriminator: list[str]
    frame_length: FrameLengthPlan
    decoders: list[DecoderEntry]
    doc: str = ""

    @property
    def single_code(self) -> bool:
        return len(self.discriminator) == 1


@dataclass
class CodecPlan:
    source: str
    protocol: str
    version: str
    title: str
    spec: str
    doc: str
    max_frame_size: int
    length_prefix: IntType | None
    encodings: list[str]
    enums: list[EnumPlan]
    structs: list[RecordPlan]
    unions: list[UnionPlan]
    frames: list[RecordPlan]
    header_steps: list[ItemStep]
    header_values: list[IntPlan]  # header attributes (not the discriminator)
    discriminator: list[str]
    discriminator_big: list[bool]  # per part: a 64-bit integer (varint codes)
    has_flags: bool
    flags_max: int  # the largest value of the header's flag bits (0: none)
    common_flags: dict[str, int]
    decoders: list[DecoderEntry]
    sender_tables: bool
    by_sender: dict[str, list[DecoderEntry]]
    unknown: str  # "error" | "ignore_if_flag" | "skip_length"
    unknown_flag: str | None  # ignore_if_flag: the flag's name
    unknown_flag_mask: int
    unknown_length: IntType | None
    context: list[ContextPlan]
    tracking: list[tuple[list[str], list[ContextAction]]]  # (frames, what they do)
    frame_length: FrameLengthPlan | None = None
    startup: StartupPlan | None = None
    # per discriminator part: ("field", name, 0) or ("ctx", name, default) -- a part may be
    # a context value the caller keeps (MySQL's phase)
    key_parts: list[tuple[str, str, int]] = field(default_factory=list)
    # frames decoded only when their ``select`` holds: (code, frame, condition)
    selects: list[tuple[tuple[int, ...], RecordPlan, CondPlan]] = field(default_factory=list)
    # the frames whose code ends in "*": (the leading parts, frame)
    wildcards: list[tuple[tuple[int, ...], RecordPlan]] = field(default_factory=list)

    @property
    def msgpack(self) -> bool:
        return "msgpack" in self.encodings

    @property
    def single_code(self) -> bool:
        return len(self.discriminator) == 1


# --- planning ---------------------------------------------------------------------------


class Planner:
    """Builds the ``CodecPlan`` of one protocol model."""

    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.context = {c.name: c for c in proto.context}
        self.presence_flags = {
            item.condition for f in proto.frames for item in f.items if item.condition
        }
        self.flags: dict[str, int] = dict(proto.common_flags)
        self.ints: dict[str, IntPlan] = {}  # the integers of the record being planned
        self.header_ints: dict[str, IntPlan] = {}
        self.startup_ints: dict[str, IntPlan] = {}
        self.startup_values: list[IntPlan] = []

    # --- values ---

    def int_plan(self, node: IntField) -> IntPlan:
        lo, hi = int_bounds(node)
        if node.default is not None:
            default = node.default
        elif lo <= 0 <= hi:
            default = 0
        else:
            default = lo
        enum = node.enum if node.enum is not None and not node.enum.open else None
        member = None
        if enum is not None:
            member = next((m for m, v in enum.values.items() if v == default), None)
            if member is None:
                member, default = next(iter(enum.values.items()))
        narrowed = (node.min is not None and node.min > node.type.min) or (
            node.max is not None and node.max < node.type.max
        )
        plan = IntPlan(node.name, node.type, lo, hi, narrowed, node.const,
                       enum.name if enum else None, node.derived_from, default, member,
                       node.doc, node.enum.name if node.enum else None,
                       node.boolean, node.peek, node.optional)  # fmt: skip
        self.ints[node.name] = plan
        return plan

    def expr(self, expr: Expr) -> ExprPlan:
        terms: list[Term] = []
        for token in expr.tokens[::2]:
            if token.isdigit():
                terms.append(Term("literal", value=int(token)))
            elif token.startswith("0x"):
                terms.append(Term("literal", value=int(token, 16)))
            elif token.startswith("ctx."):
                value = self.context_plan(token[4:])
                terms.append(Term("ctx", name=value.name, big=value.big, keyed_by=value.keyed_by,
                                  key_big=value.key_big, default=value.default))  # fmt: skip
            else:
                known = self.ints.get(token)
                terms.append(Term("field", name=token, big=known.big if known else False,
                                  optional=known.optional if known else False))  # fmt: skip
        tree = self.cond(expr.tree, expr.text) if expr.tree is not None else None
        return ExprPlan(expr.text, terms, list(expr.tokens[1::2]), tree)

    # --- layouts ---

    def steps(self, items: list[Item]) -> list[ItemStep]:
        result: list[ItemStep] = []
        run: FixedRun | None = None
        for item in items:
            node = item.node
            if fixed_unit(item) and isinstance(node, (IntField, Word, FloatField)):
                little = unit_little(node) and unit_size(node) > 1
                if run is not None and run.little != little and unit_size(node) > 1:
                    if any(u.kind == "float" or (u.type is not None and (u.type.size or 0) > 1)
                           for u in run.units):  # fmt: skip
                        run = None
                if run is None:
                    run = FixedRun(0, [], little)
                    result.append(ItemStep(run))
                if unit_size(node) > 1:
                    run.little = little
                run.units.append(self.unit(node, run.size))
                run.size += unit_size(node)
                continue
            run = None
            assert not isinstance(node, Word)
            flag = bit = None
            mask = 0
            if item.condition is not None and item.condition in self.flags:
                flag, mask = item.condition, self.flags[item.condition]
            elif item.condition is not None:
                bit = item.condition
            when = self.cond(item.when, item.when_text) if item.when is not None else None
            result.append(ItemStep(self.step(node), flag, mask, bit, when))
        return result

    def cond(self, tree: Cond, text: str) -> CondPlan:
        """The plan of a condition: flags carry their masks and context values their
        defaults (in ``Cond.value``); ``big`` names the 64-bit values it reads."""
        big: set[str] = set()

        def fill(node: Cond) -> Cond:
            if node.op == "flag":
                return Cond("flag", value=self.flags[node.name], name=node.name)
            if node.op == "ctx":
                value = self.context[node.name]
                if self.is_big_ctx(node.name):
                    big.add("ctx." + node.name)
                return Cond("ctx", value=value.default, name=node.name)
            if node.op == "field":
                known = self.ints.get(node.name)
                if known is not None and known.big:
                    big.add(node.name)
                if known is not None and known.optional:  # value 1: may be None, read as 0
                    return Cond("field", value=1, name=node.name)
                return node
            return Cond(node.op, tuple(fill(arg) for arg in node.args), node.value, node.name)

        return CondPlan(fill(tree), text, frozenset(big))

    def select_plan(self, frame: Frame) -> CondPlan:
        """A frame's ``select:``, over the header's values (and flags, context)."""
        assert frame.select is not None
        self.ints = dict(self.header_ints)
        self.flags = dict(self.proto.common_flags)
        return self.cond(frame.select, frame.select_text)

    def is_big_ctx(self, name: str) -> bool:
        return any(self.is_big(field_name) for _, field_name in self.context[name].set_by)

    def unit(self, node: IntField | Word | FloatField, offset: int) -> Unit:
        if isinstance(node, FloatField):
            return Unit("float", None, offset, float=self.float_plan(node))
        if isinstance(node, IntField):
            return Unit("int", node.type, offset, value=self.int_plan(node))
        bits: list[Bits] = []
        shift = node.type.bits
        for bit in node.bits:
            shift -= bit.width
            value = self.int_plan(bit.value) if bit.value is not None else None
            bits.append(Bits(bit.kind, shift, bit.width, (1 << bit.width) - 1, value))
        return Unit("word", node.type, offset, bits=bits)

    def float_plan(self, node: FloatField) -> FloatPlan:
        return FloatPlan(node.name, node.bits, node.little, node.default, node.doc)

    def step(self, node: IntField | BytesField | RefField | ArrayField | FloatField) -> Step:
        if isinstance(node, FloatField):
            return FloatStep(self.float_plan(node))
        if isinstance(node, IntField):
            return IntStep(self.int_plan(node))
        if isinstance(node, BytesField):
            return self.bytes_step(node, node.name)
        if isinstance(node, RefField):
            return RefStep(node.name, node.target.name, isinstance(node.target, Union_))
        return self.array_step(node)

    def bytes_step(self, node: BytesField, name: str) -> BytesStep:
        size = self.expr(node.size) if node.size is not None else None
        derived = (
            size is not None
            and size.single_field is not None
            and (
                self.ints.get(size.single_field) is not None
                and self.ints[size.single_field].derived_from == node.name
            )
        )
        fixed = literal_size(node.size) if node.length is None else None
        key = self.ints.get(node.xor_key.name) if node.xor_key is not None else None
        return BytesStep(name, node.is_string, node.rest, node.length, size, node.nullable,
                         derived, fixed, node.terminator, node.forbid, key)  # fmt: skip

    def element(self, element: Element, array: str) -> ElementPlan:
        least = max(1, min_size(element))
        if isinstance(element, IntField):
            return ElementPlan("int", value=self.int_plan(element), least=least,
                               exact=element.type.size is not None)  # fmt: skip
        if isinstance(element, BytesField):
            if element.size is not None and element.length is None:
                return ElementPlan("bytes", bytes=self.bytes_step(element, array),
                                   fixed_size=self.expr(element.size), least=least,
                                   exact=True)  # fmt: skip
            return ElementPlan("bytes", bytes=self.bytes_step(element, array), least=least)
        return ElementPlan("ref", ref=element.target.name, least=least)

    def derives(self, expr: ExprPlan | None, name: str) -> bool:
        if expr is None or expr.single_field is None:
            return False
        target = self.ints.get(expr.single_field)
        return target is not None and target.derived_from == name

    def array_step(self, node: ArrayField) -> ArrayStep:
        count = self.expr(node.count_expr) if node.count_expr is not None else None
        length = self.expr(node.byte_length_expr) if node.byte_length_expr is not None else None
        return ArrayStep(node.name, self.element(node.element, node.name), node.count_prefix,
                         count, node.count_rest, node.byte_length_prefix, length,
                         self.derives(count, node.name),
                         self.derives(length, node.name), node.terminator,
                         node.min_count)  # fmt: skip

    def derivations(self, steps: list[ItemStep]) -> list[Derivation]:
        result: list[Derivation] = []
        for item in steps:
            step = item.step
            if item.bit is not None and self.ints[item.bit].derived_from == item.name:
                result.append(Derivation(item.bit, "presence", item.name))
            if isinstance(step, BytesStep) and step.length_derived:
                assert step.size is not None and step.size.single_field is not None
                result.append(Derivation(step.size.single_field, "bytes_length", step.name,
                                         string=step.string))  # fmt: skip
            if isinstance(step, ArrayStep) and step.count_derived:
                assert step.count_expr is not None and step.count_expr.single_field is not None
                result.append(Derivation(step.count_expr.single_field, "count", step.name))
            if isinstance(step, ArrayStep) and step.byte_length_derived:
                assert step.byte_length_expr is not None
                assert step.byte_length_expr.single_field is not None
                result.append(Derivation(step.byte_length_expr.single_field, "byte_length",
                                         step.name, array=step))  # fmt: skip
        return result

    # --- attributes ---

    def attrs(self, items: list[Item]) -> list[AttrPlan]:
        attrs: list[AttrPlan] = []
        for item in items:
            node = item.node
            optional = item.condition is not None or item.when is not None
            if isinstance(node, FloatField):
                attrs.append(AttrPlan(node.name, "float", node.doc, optional,
                                      float=self.float_plan(node)))  # fmt: skip
            elif isinstance(node, (Word, IntField)):
                for value in item_values(item):
                    if is_attr(value):
                        plan = self.ints.get(value.name) or self.int_plan(value)
                        attrs.append(AttrPlan(value.name, "int", value.doc, optional,
                                              value=plan))  # fmt: skip
            elif isinstance(node, BytesField):
                kind = "string" if node.is_string else "bytes"
                fixed = literal_size(node.size) if node.length is None else None
                attrs.append(AttrPlan(node.name, kind, node.doc, optional, node.nullable,
                                      fixed_default=None if optional else fixed))  # fmt: skip
            elif isinstance(node, RefField):
                target = node.target
                default = (target.name if isinstance(target, Struct)
                           else next(iter(target.variants.values())).name)  # fmt: skip
                attrs.append(AttrPlan(node.name, "ref", node.doc, optional, ref=target.name,
                                      ref_default=default))  # fmt: skip
            else:
                attrs.append(AttrPlan(node.name, "array", node.doc, optional,
                                      element=self.element(node.element, node.name)))  # fmt: skip
        return attrs

    def flag_attrs(self, frame: Frame) -> list[tuple[str, int]]:
        """Flags that are bool attributes of a frame (not presence flags, not always set)."""
        if frame.startup:
            return []
        return [(name, mask) for name, mask in {**self.proto.common_flags, **frame.flags}.items()
                if name not in self.presence_flags and name not in frame.set_flags]  # fmt: skip

    # --- records ---

    def struct(self, struct: Struct) -> RecordPlan:
        self.ints = {}
        self.flags = dict(self.proto.common_flags)
        steps = self.steps(struct.items)
        return RecordPlan(struct.name, struct.doc, self.attrs(struct.items), steps,
                          self.derivations(steps),
                          rules=[RulePlan(self.cond(r.check, r.text), r.spec)
                                 for r in struct.rules])  # fmt: skip

    def frame(self, frame: Frame, header_values: list[IntPlan]) -> RecordPlan:
        if frame.startup:
            header_values = self.startup_values
        self.ints = dict(self.startup_ints if frame.startup else self.header_ints)
        self.flags = {**self.proto.common_flags, **frame.flags}
        flag_values: list[tuple[IntPlan, int, int]] = []
        for value, mask in frame.flag_values.values():
            shift = (mask & -mask).bit_length() - 1
            flag_values.append((self.int_plan(value), mask, shift))
        steps = self.steps(frame.items)
        flag_attrs = self.flag_attrs(frame)
        attrs = [AttrPlan(v.name, "int", v.doc, value=v) for v in header_values]
        attrs += [AttrPlan(name, "bool", f"flag {mask:#x}", flag_mask=mask)
                  for name, mask in flag_attrs]  # fmt: skip
        attrs += [AttrPlan(v.name, "int", v.doc or f"flags {mask:#x}", value=v)
                  for v, mask, _ in flag_values]  # fmt: skip
        attrs += self.attrs(frame.items)
        presence: list[tuple[str, int, str]] = []
        for item in frame.items:
            if (item.condition is not None and item.condition in self.flags
                    and item.condition not in [p[0] for p in presence]):  # fmt: skip
                presence.append((item.condition, self.flags[item.condition], item_name(item)))
        checks: list[MsgpackCheck] = []
        for item in frame.items:
            node = item.node
            if isinstance(node, BytesField) and node.size is not None:
                checks.append(MsgpackCheck(node.name, self.expr(node.size), False))
            if (isinstance(node, ArrayField) and isinstance(node.element, BytesField)
                    and node.element.size is not None):  # fmt: skip
                checks.append(MsgpackCheck(node.name, self.expr(node.element.size), True))
        set_flags = sum(mask for name, mask in self.flags.items() if name in frame.set_flags)
        named = sum(self.flags.values()) + sum(mask for _, mask, _ in flag_values)
        return RecordPlan(
            frame.name, frame.doc, attrs, steps, self.derivations(steps), code=frame.code,
            member=upper_snake(frame.name), sender=frame.sender, spec=frame.spec,
            flag_attrs=flag_attrs, set_flags=set_flags, presence=presence,
            flag_attr_mask=sum(mask for _, mask in flag_attrs), msgpack_checks=checks,
            rules=[RulePlan(self.cond(r.check, r.text), r.spec) for r in frame.rules],
            flag_values=flag_values, fixed_flags=frame.fixed_flags, named_flags_mask=named,
            startup=frame.startup,
        )  # fmt: skip

    def union(self, union: Union_) -> UnionPlan:
        return UnionPlan(union.name, union.doc, union.peek, union.mask,
                         [(tag, s.name) for tag, s in union.variants.items()])  # fmt: skip

    def tracking(self, contexts: list[ContextPlan]) -> list[tuple[list[str], list[ContextAction]]]:
        """The ``set_by``/``cleared_by`` rules, one group per set of frames that do the same."""
        actions: dict[str, list[ContextAction]] = {}
        for value, plan in zip(self.proto.context, contexts):
            for frame_name, field_name in value.set_by:
                actions.setdefault(frame_name, []).append(ContextAction("set", plan, field_name))
            for frame_name in value.cleared_by:
                actions.setdefault(frame_name, []).append(ContextAction("clear", plan))
        groups: dict[tuple[tuple[str, str, str], ...], tuple[list[str], list[ContextAction]]] = {}
        for frame in self.proto.frames:  # in the IDL's order
            if frame.name in actions:
                todo = actions[frame.name]
                key = tuple((a.kind, a.value.name, a.field) for a in todo)
                groups.setdefault(key, ([], todo))[0].append(frame.name)
        return list(groups.values())

    def plan(self) -> CodecPlan:
        proto = self.proto
        self.flags = dict(proto.common_flags)
        self.ints = {}
        header_steps = self.steps(proto.header)
        header_ints = dict(self.ints)
        self.header_ints = header_ints
        length_field = proto.framing.length_field
        header_values = [header_ints[v.name] for item in proto.header for v in item_values(item)
                         if v.name not in proto.discriminator and v.name != length_field
                         and not v.peek]  # fmt: skip
        startup_steps: list[ItemStep] = []
        if proto.startup is not None:
            self.ints = {}
            startup_steps = self.steps(proto.startup.header)
            self.startup_ints = dict(self.ints)
            self.startup_values = [
                self.startup_ints[v.name] for item in proto.startup.header for v in item_values(item)
                if v.name not in proto.startup.discriminator
                and v.name != proto.startup.length_field
            ]  # fmt: skip
            self.ints = {}
        flag_widths = [bit.width for item in proto.header if isinstance(item.node, Word)
                       for bit in item.node.bits if bit.kind == "flags"]  # fmt: skip
        has_flags = bool(flag_widths)
        contexts = [self.context_plan(value.name) for value in proto.context]
        structs = [self.struct(s) for s in proto.structs]
        frames = [self.frame(f, header_values) for f in proto.frames]
        by_name = {f.name: f for f in frames}
        codes: dict[tuple[int, ...], list[Frame]] = {}
        for frame in proto.frames:
            if frame.startup or frame.code[-1:] == (WILDCARD,):
                continue
            for code in [frame.code, *frame.also_codes]:
                codes.setdefault(code, []).append(frame)
        sender_tables = any(len(found) > 1 for found in codes.values())
        decoders: list[DecoderEntry] = []
        by_sender: dict[str, list[DecoderEntry]] = {"client": [], "server": []}
        for code, found in codes.items():
            single = by_name[found[0].name] if len(found) == 1 else None
            decoders.append(DecoderEntry(code, single, single is not None and code == single.code))
            for sender in ("client", "server"):
                match = [f for f in found if f.sender in (sender, "any")]
                if match:
                    plan = by_name[match[0].name]
                    by_sender[sender].append(DecoderEntry(code, plan, code == plan.code))
        unknown = proto.unknown
        enums = [EnumPlan(e.name, e.doc, e.open, e.type, list(e.values.items()))
                 for e in proto.enums]  # fmt: skip
        return CodecPlan(
            source=proto.source, protocol=proto.protocol, version=proto.version,
            title=proto.title, spec=proto.spec, doc=proto.doc,
            max_frame_size=proto.framing.max_frame_size,
            length_prefix=proto.framing.length_prefix, encodings=list(proto.encodings),
            enums=enums, structs=structs, unions=[self.union(u) for u in proto.unions],
            frames=frames, header_steps=header_steps, header_values=header_values,
            discriminator=list(proto.discriminator), has_flags=has_flags,
            flags_max=(1 << max(flag_widths)) - 1 if flag_widths else 0,
            discriminator_big=[header_ints[n].big if n in header_ints else False
                               for n in proto.discriminator],
            key_parts=[("ctx", n[4:], self.context[n[4:]].default) if n.startswith("ctx.")
                       else ("field", n, 0) for n in proto.discriminator],
            selects=[(code, by_name[f.name], self.select_plan(f)) for f in proto.frames
                     if f.select is not None for code in [f.code, *f.also_codes]],
            wildcards=[(f.code[:-1], by_name[f.name]) for f in proto.frames
                       if f.code and f.code[-1] == WILDCARD],
            common_flags=dict(proto.common_flags), decoders=decoders,
            sender_tables=sender_tables, by_sender=by_sender, unknown=unknown.policy,
            unknown_flag=unknown.flag,
            unknown_flag_mask=proto.common_flags[unknown.flag] if unknown.flag else 0,
            unknown_length=unknown.length, context=contexts,
            tracking=self.tracking(contexts), frame_length=self.frame_length(),
            startup=self.startup_plan(startup_steps, by_name),
        )  # fmt: skip

    def startup_plan(self, steps: list[ItemStep],
                     by_name: dict[str, RecordPlan]) -> StartupPlan | None:  # fmt: skip
        startup = self.proto.startup
        if startup is None:
            return None
        length = self.frame_length(startup.header, startup.length_field, startup.counts,
                                   startup.adjust)  # fmt: skip
        assert length is not None
        decoders = [DecoderEntry(f.code, by_name[f.name], True)
                    for f in self.proto.frames if f.startup]  # fmt: skip
        return StartupPlan(steps, self.startup_values, list(startup.discriminator), length,
                           decoders, startup.doc)  # fmt: skip

    def frame_length(self, header: list[Item] | None = None, field: str | None = None,
                     counts: str = "", adjust: int = 0) -> FrameLengthPlan | None:  # fmt: skip
        framing = self.proto.framing
        if header is None:
            header, field = self.proto.header, framing.length_field
            counts, adjust = framing.counts, framing.adjust
        if field is None:
            return None
        index = next(i for i, item in enumerate(header)
                     if any(v.name == field for v in item_values(item)))  # fmt: skip
        node = header[index].node
        assert isinstance(node, IntField)

        def header_bytes(item: Item) -> int:  # a peeked byte is the body's, not the header's
            peeked = isinstance(item.node, IntField) and item.node.peek
            return 0 if peeked else min_size(item.node)

        after = sum(header_bytes(item) for item in header[index + 1 :])
        size = node.type.size or 0
        back = {"after_header": 0, "after_length": after, "from_length": after + size,
                "frame": None}[counts]  # fmt: skip
        counted = {"after_header": 0, "after_length": after, "from_length": after + size,
                   "frame": sum(header_bytes(item) for item in header)}[counts]  # fmt: skip
        return FrameLengthPlan(field, node.type, counts, adjust, back, counted)

    def context_plan(self, name: str) -> ContextPlan:
        """A context value: 64-bit when the field that sets it is, keyed by a 64-bit key
        when the field that keys it is."""
        value = self.context[name]
        setters = [field_name for _, field_name in value.set_by]
        return ContextPlan(value.name, value.doc, value.keyed_by,
                           self.is_big(value.keyed_by) if value.keyed_by else False,
                           any(self.is_big(n) for n in setters), value.default,
                           list(value.set_by), list(value.cleared_by))  # fmt: skip

    def is_big(self, name: str) -> bool:
        """Whether the integer field ``name`` (of the header or any frame) is 64-bit."""
        for item in [*self.proto.header, *(i for f in self.proto.frames for i in f.items)]:
            for value in item_values(item):
                if value.name == name:
                    return value.type.bits > 32
        return False


def item_name(item: Item) -> str:
    node = item.node
    assert not isinstance(node, Word)
    return node.name


def plan_codec(proto: Protocol) -> CodecPlan:
    """The language-neutral plan of ``proto``'s codec."""
    return Planner(proto).plan()


def layout_fingerprint(plan: CodecPlan) -> str:
    """A digest of everything ``plan`` decides. Code generated in another language from the
    same plan carries the same one, so a module that uses native code built earlier (the
    native ``pack``, codegen/targets/rust/py_pack.py) can tell a build of another layout --
    an IDL edited and regenerated since ``make native`` -- and not use it."""
    return hashlib.sha256(repr(plan).encode()).hexdigest()[:16]
