"""The TypeScript target: spells the language-neutral plan (``plan.py``) in TypeScript.

Everything that decides *what* the code does is in the plan; this module only holds the
spelling the templates in ``templates/typescript/`` need, as the Kaitai Struct compiler
has one expression translator per language: names (camelCase attributes), literals
(``bigint`` for 64-bit values), ``DataView`` accessors and ``Writer`` methods, types, and
size expressions and conditions. The templates lay the code out; ``render_typescript``
writes the files of the npm package ``@wirestream/generated`` (``generated/typescript/``).
"""

from __future__ import annotations

from pathlib import Path

import json
import math
import re
from dataclasses import dataclass

import jinja2

from wirestream.codegen.targets.jinja import environment
from wirestream.codegen.frontend.model import INT_TYPES, WILDCARD, Cond, IntType, Protocol
from wirestream.codegen.targets.typescript.fit import fit_lines
from wirestream.codegen.targets.typescript.machines import render_ts_machines, ts_class
from wirestream.codegen.targets.typescript.package import RUNTIME, render_ts_package
from wirestream.codegen.plan.codec import (
    ArrayStep,
    AttrPlan,
    BytesStep,
    CodecPlan,
    CondPlan,
    ContextPlan,
    ElementPlan,
    ExprPlan,
    FixedRun,
    FloatPlan,
    FrameLengthPlan,
    IntPlan,
    IntStep,
    ItemStep,
    RecordPlan,
    StartupPlan,
    plan_codec,
)

_VIEW = {"u8": "Uint8", "u16": "Uint16", "u32": "Uint32", "i8": "Int8", "i16": "Int16",
         "i32": "Int32", "u64": "BigUint64", "i64": "BigInt64"}  # fmt: skip


def camel(name: str) -> str:
    """``resume_token`` -> ``resumeToken`` (TypeScript attribute and parameter names)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def lit(value: int, big: bool = False) -> str:
    """An integer literal: hex above 9, ``n``-suffixed for bigint values."""
    text = hex(value) if value > 9 else str(value)
    if value < -9:
        text = "-" + hex(-value)
    return text + ("n" if big else "")


_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def ts_names(text: str) -> str:
    """IDL text (a condition) naming fields by their TypeScript properties:
    ``will_flag or will_qos == 0`` -> ``willFlag or willQos == 0``."""
    return _SNAKE.sub(lambda found: camel(found.group()), text)


def dec(value: int, big: bool = False) -> str:
    """A decimal integer literal (shift counts: ``x << 10``, not ``x << 0xa``)."""
    return str(value) + ("n" if big else "")


def is_big(itype: IntType) -> bool:
    return itype.bits > 32


def view_get(itype: IntType) -> str:
    return "get" + _VIEW[itype.name]


def view_set(itype: IntType) -> str:
    return "set" + _VIEW[itype.name]


def offset(at: str, i: int) -> str:
    """``at + i`` with a constant term folded (``pos + 4`` + 1 is ``pos + 5``)."""
    if not i:
        return at
    found = re.fullmatch(r"(.*) \+ (\d+)", at)
    if found and "?" not in found.group(1):
        return f"{found.group(1)} + {int(found.group(2)) + i}"
    if at.isdigit():
        return str(int(at) + i)
    return f"{at} + {i}"


def read_at(itype: IntType, at: str) -> str:
    """An expression reading ``itype`` at ``at`` of ``data``: byte arithmetic up to 32 bits
    (no DataView to make per frame), the reader's DataView for 64 bits."""

    def b(i: int) -> str:
        if itype.little:
            i = (itype.size or 1) - 1 - i  # the same arithmetic on the bytes reversed
        return f"data[{offset(at, i)}]!"

    name = itype.name.removesuffix("le") if itype.little else itype.name
    if itype.little and name in ("u64", "i64"):
        return f"r.view.get{_VIEW[name]}({at}, true)"
    if name == "u8":
        return b(0)
    if name == "i8":
        return f"(({b(0)} << 24) >> 24)"
    if name in ("u16", "i16"):
        value = f"(({b(0)} << 8) | {b(1)})"
        return value if name == "u16" else f"(({value} << 16) >> 16)"
    if name == "u24":
        return f"(({b(0)} << 16) | ({b(1)} << 8) | {b(2)})"
    if name in ("u32", "i32"):
        value = f"({b(0)} << 24) | ({b(1)} << 16) | ({b(2)} << 8) | {b(3)}"
        return f"(({value}) >>> 0)" if name == "u32" else f"(({value}) | 0)"
    return f"r.view.get{_VIEW[name]}({at})"


def write_at(itype: IntType, at: str, value: str) -> str:
    """Statements storing ``value`` as ``itype`` at ``at`` of ``buf`` (a Uint8Array store
    keeps the low 8 bits, so each byte is one shift)."""
    size = itype.size
    assert size is not None
    if itype.bits > 32:
        name = itype.name.removesuffix("le") if itype.little else itype.name
        return f"w.view.set{_VIEW[name]}({at}, {value}{', true' if itype.little else ''});"
    if size == 1:
        return f"buf[{at}] = {value};"
    if not value.replace("_", "").isalnum():
        value = f"({value})"
    stores = []
    for i in range(size):
        shift = 8 * i if itype.little else 8 * (size - 1 - i)
        where = offset(at, i)
        stores.append(
            f"buf[{where}] = {value} >>> {shift};" if shift else f"buf[{where}] = {value};"
        )
    return "\n".join(stores)


def enum_type(plan: IntPlan) -> str:
    if plan.boolean:
        return "boolean"
    return plan.enum if plan.enum is not None else ("bigint" if plan.big else "number")


def float_lit(value: float) -> str:
    """A number literal for a float default (``-0``, ``NaN`` and infinities spelled)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return repr(value)


def float_read(value: FloatPlan, at: str) -> str:
    """An expression reading ``value``'s float at ``at``: binary32 through its bits (as
    Python's ``f32_from_bits``: NaN payloads kept), binary64 by the reader's DataView."""
    if value.bits == 32:
        return f"f32FromBits({read_at(INT_TYPES['u32le' if value.little else 'u32'], at)})"
    return f"r.view.getFloat64({at}{', true' if value.little else ''})"


def float_write(value: FloatPlan, at: str, source: str) -> str:
    """A statement storing ``source`` as ``value``'s float at ``at`` of the writer's buffer."""
    little = ", true" if value.little else ""
    if value.bits == 32:
        return f"w.view.setUint32({at}, f32Bits({source}){little});"
    return f"w.view.setFloat64({at}, {source}{little});"


def element_type(element: ElementPlan) -> str:
    if element.kind == "int":
        assert element.value is not None
        return enum_type(element.value)
    if element.kind == "bytes":
        assert element.bytes is not None
        base = "string" if element.bytes.string else "Uint8Array<ArrayBuffer>"
        return f"{base} | null" if element.bytes.nullable else base
    assert element.ref is not None
    return element.ref


def attr_type(attr: AttrPlan) -> str:
    """The attribute's TypeScript type (``| null`` when it can be absent)."""
    if attr.kind == "int":
        assert attr.value is not None
        base = enum_type(attr.value)
    elif attr.kind == "float":
        base = "number"
    elif attr.kind == "bool":
        base = "boolean"
    elif attr.kind == "bytes":
        base = "Uint8Array<ArrayBuffer>"
    elif attr.kind == "string":
        base = "string"
    elif attr.kind == "ref":
        assert attr.ref is not None
        base = attr.ref
    else:
        assert attr.element is not None
        inner = element_type(attr.element)
        base = f"({inner})[]" if "|" in inner else f"{inner}[]"
    return f"{base} | null" if attr.optional or attr.nullable else base


def attr_default(attr: AttrPlan) -> str:
    """What a constructor stores when the attribute is not given."""
    if attr.optional or attr.nullable:
        return "null"
    if attr.kind == "int":
        value = attr.value
        assert value is not None
        if value.boolean:
            return "true" if value.default else "false"
        if value.default_member is not None:
            return f"{value.enum}.{value.default_member}"
        return lit(value.default, value.big)
    if attr.kind == "bool":
        return "false"
    if attr.kind == "float":
        assert attr.float is not None
        return float_lit(attr.float.default)
    if attr.kind == "bytes":
        return f"new Uint8Array({attr.fixed_default or 0})"
    if attr.kind == "string":
        return f'" ".repeat({attr.fixed_default})' if attr.fixed_default else '""'
    if attr.kind == "ref":
        return f"new {attr.ref_default}()"
    return "[]"


@jinja2.pass_context
def expr(context: jinja2.runtime.Context, plan: ExprPlan, scope: str,
         values: dict[str, str] | None = None) -> str:  # fmt: skip
    """A size or count expression as a TypeScript ``number``.

    ``scope`` "decode": fields are the decoder's locals (``v_name``); "encode": the
    record's attributes (``this.name``) unless ``values`` (derived values) names them. An
    expression with parentheses or ``/`` is a tree (``ExprPlan.tree``), spelled as a
    condition's arithmetic is (``TsCond``); a field that may be absent counts as 0.
    """
    if plan.tree is not None:
        names: CondNames = context["cond_names"][id(plan.tree)]
        spelling = TsCond(plan.tree, scope, values, names)
        big = spelling.needs_big(plan.tree.tree)
        text = spelling.number(plan.tree.tree, big)
        return f"Number({text})" if big else (text if _wrapped(text) else f"({text})")
    parts: list[str] = []
    for index, term in enumerate(plan.terms):
        if index:
            parts.append(f" {plan.operators[index - 1]} ")
        if term.kind == "literal":
            parts.append(lit(term.value))
            continue
        if term.kind == "field":
            source = field_ref(term.name, scope, values)
            if term.optional:
                source = f"({source} ?? {lit(0, term.big)})"
            parts.append(f"Number({source})" if term.big else source)
            continue
        value = ctx_value(term.name, term.default, term.big, term.keyed_by, scope, values)
        parts.append(f"Number{value}" if term.big else value)
    text = "".join(parts)
    return text if len(plan.terms) == 1 else f"({text})"


def ctx_value(name: str, default_value: int, big: bool, keyed_by: str | None, scope: str,
              values: dict[str, str] | None) -> str:  # fmt: skip
    """A context value, or its default without a context (or without an entry)."""
    default = lit(default_value, big)
    if keyed_by is not None:
        key = field_ref(keyed_by, scope, values)
        return f"(ctx === undefined ? {default} : ctx.{camel(name)}.get({key}) ?? {default})"
    return f"(ctx === undefined ? {default} : ctx.{camel(name)})"


def field_ref(name: str, scope: str, values: dict[str, str] | None) -> str:
    if values and name in values:
        return values[name]
    return f"v_{camel(name)}" if scope == "decode" else f"this.{camel(name)}"


# --- conditions ----------------------------------------------------------------------------

_COMPARE = {"==": "===", "!=": "!==", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_SAFE = 2**53 - 1  # a number holds every integer up to this exactly
_INT32 = (-(2**31), 2**31 - 1)  # what JavaScript's & and | compute on


@dataclass
class CondNames:
    """What the conditions of one record read: its integers (header ones included, for
    a frame) and the protocol's context values."""

    ints: dict[str, IntPlan]
    contexts: dict[str, ContextPlan]


class TsCond:
    """One condition (``if:``, ``rules:``) as a TypeScript expression.

    Python's integers are exact at any size; here each comparison (and each truth test of
    a value) is one *island* of arithmetic spelled either in ``number`` or, when a 64-bit
    value takes part (``CondPlan.big``) or a ``number`` could be inexact (beyond 2**53, or
    ``&``/``|`` on values outside 32-bit signed range), all in ``bigint``: literals with
    ``n``, smaller values through ``BigInt(...)``. Bools (flags, bool bits, comparisons)
    are ``boolean``; used as numbers they are 1 or 0, as in Python. A field that may be
    absent (``Cond.value`` 1) reads as 0; ``/`` rounds down (Python's ``//``).
    """

    def __init__(self, plan: CondPlan, scope: str, values: dict[str, str] | None,
                 names: CondNames) -> None:  # fmt: skip
        self.plan = plan
        self.scope = scope
        self.values = values
        self.names = names

    def spell(self) -> str:
        text = self.boolean(self.plan.tree)
        return text[1:-1] if _wrapped(text) else text

    # --- what a node is ---

    def is_bool(self, node: Cond) -> bool:
        if node.op == "field":
            value = self.names.ints.get(node.name)
            return value is not None and value.boolean
        return node.op in ("flag", "more", "not", "and", "or", *_COMPARE)

    def leaf_big(self, node: Cond) -> bool:
        if node.op == "field":
            value = self.names.ints.get(node.name)
            return node.name in self.plan.big or (value is not None and value.big)
        if node.op == "ctx":
            context = self.names.contexts.get(node.name)
            return "ctx." + node.name in self.plan.big or (context is not None and context.big)
        return False

    def bounds(self, node: Cond) -> tuple[int, int]:
        """The values a numeric node can take (exact integers, as Python computes them)."""
        if self.is_bool(node):
            return 0, 1
        if node.op == "lit":
            return node.value, node.value
        if node.op == "field":
            value = self.names.ints.get(node.name)
            if value is None:
                raise NotImplementedError(f"TypeScript target: condition names '{node.name}', "
                                          "which is not an integer of the record")  # fmt: skip
            if node.value:  # may be absent: 0
                return min(value.lo, 0), max(value.hi, 0)
            return value.lo, value.hi
        if node.op == "ctx":
            if self.leaf_big(node):
                return -(2**63), 2**64 - 1
            return -(2**31), 2**32 - 1
        if node.op == "remaining":
            return 0, _SAFE
        (alo, ahi), (blo, bhi) = (self.bounds(arg) for arg in node.args)
        if node.op == "/":  # |a // b| <= |a| (or 1 more, rounding down a negative)
            width = max(abs(alo), abs(ahi)) + 1
            return -width, width
        if node.op == "+":
            return alo + blo, ahi + bhi
        if node.op == "-":
            return alo - bhi, ahi - blo
        if node.op == "*":
            products = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
            return min(products), max(products)
        if alo >= 0 and blo >= 0:
            if node.op == "&":
                return 0, min(ahi, bhi)
            return 0, (1 << max(ahi, bhi).bit_length()) - 1
        width = max(abs(v).bit_length() for v in (alo, ahi, blo, bhi)) + 1
        return -(1 << width), (1 << width) - 1

    def needs_big(self, node: Cond) -> bool:
        """Whether a numeric island must be spelled in ``bigint``."""
        if self.is_bool(node):
            return False  # its own island: 1 or 0
        if node.op in ("field", "ctx"):
            return self.leaf_big(node)
        if node.op == "lit":
            return abs(node.value) > _SAFE
        if node.op == "remaining":
            return False
        if any(self.needs_big(arg) for arg in node.args):
            return True
        lo, hi = self.bounds(node)
        if lo < -_SAFE or hi > _SAFE:
            return True
        if node.op in ("&", "|"):
            return any(not (_INT32[0] <= b <= _INT32[1])
                       for arg in node.args for b in self.bounds(arg))  # fmt: skip
        return False

    # --- spelling ---

    def boolean(self, node: Cond) -> str:
        op = node.op
        if op == "flag":
            return f"((flags & {lit(node.value)}) !== 0)"
        if op == "more":
            return "(pos < end)"
        if op == "field" and self.is_bool(node):
            return self.ref(node.name)
        if op == "not":
            return f"!{self.boolean(node.args[0])}"
        if op in ("and", "or"):
            # a comparison or a like chain needs no parentheses of its own: a || b === 3 || c
            left, right = (self.boolean(arg)[1:-1] if arg.op == op or arg.op in _COMPARE
                           else self.boolean(arg) for arg in node.args)  # fmt: skip
            return f"({left} {'&&' if op == 'and' else '||'} {right})"
        if op in _COMPARE:
            big = any(self.needs_big(arg) for arg in node.args)
            left, right = (self.number(arg, big) for arg in node.args)
            return f"({left} {_COMPARE[op]} {right})"
        big = self.needs_big(node)  # a value as a truth test: non-zero
        return f"({self.number(node, big)} !== {lit(0, big)})"

    def number(self, node: Cond, big: bool) -> str:
        op = node.op
        if self.is_bool(node):
            return f"({self.boolean(node)} ? {lit(1, big)} : {lit(0, big)})"
        if op == "lit":
            return lit(node.value, big)
        if op == "remaining":
            if self.scope != "decode":  # what remains is only known while decoding
                raise NotImplementedError(f"TypeScript target: 'remaining' in '{self.plan.text}', "
                                          "which the encoder evaluates")  # fmt: skip
            text = "(end - pos)"
            return f"BigInt{text}" if big else text
        if op in ("field", "ctx"):
            if op == "field":
                text = self.ref(node.name)
                value = self.names.ints.get(node.name)
                if node.value:  # may be absent: read as 0
                    text = f"({text} ?? {lit(0, self.leaf_big(node))})"
                elif value is not None and value.enum is not None and self.scope == "encode":
                    text = f"({text} as number)"  # an enum attribute compared as a number
            else:
                context = self.names.contexts[node.name]
                text = ctx_value(node.name, node.value, context.big, context.keyed_by,
                                 self.scope, self.values)  # fmt: skip
            if big and not self.leaf_big(node):
                return f"BigInt({text})"
            return text
        left, right = (self.number(arg, big) for arg in node.args)
        if op == "/":
            return f"floorDiv({left}, {right})" if big else f"Math.floor({left} / {right})"
        return f"({left} {op} {right})"

    def ref(self, name: str) -> str:
        return field_ref(name, self.scope, self.values)


def _wrapped(text: str) -> bool:
    """Whether ``text`` is one parenthesised expression (its outer parentheses match)."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and index < len(text) - 1:
            return False
    return True


def step_ints(steps: list[ItemStep]) -> dict[str, IntPlan]:
    """The integers ``steps`` read, by name."""
    ints: dict[str, IntPlan] = {}
    for item in steps:
        step = item.step
        if isinstance(step, FixedRun):
            for unit in step.units:
                if unit.value is not None:
                    ints[unit.value.name] = unit.value
                for bits in unit.bits:
                    if bits.value is not None:
                        ints[bits.value.name] = bits.value
        elif isinstance(step, IntStep):
            ints[step.value.name] = step.value
    return ints


def record_names(plan: CodecPlan, rec: RecordPlan, frame: bool) -> CondNames:
    """The integers a record's conditions may name: its own, and a frame's header ones
    (the startup header's, for a startup frame)."""
    header: list[ItemStep] = []
    if frame:
        header = plan.startup.header_steps if rec.startup and plan.startup else plan.header_steps
    ints = step_ints([*header, *rec.steps])
    for value, _, _ in rec.flag_values:
        ints[value.name] = value
    return CondNames(ints, {c.name: c for c in plan.context})


@jinja2.pass_context
def cond(context: jinja2.runtime.Context, plan: CondPlan, scope: str,
         values: dict[str, str] | None = None) -> str:  # fmt: skip
    """A condition as a TypeScript ``boolean`` expression; ``scope`` as for ``expr``. The
    record it belongs to is found by the render's table of conditions."""
    names: CondNames = context["cond_names"][id(plan)]
    return TsCond(plan, scope, values, names).spell()


def cond_table(plan: CodecPlan) -> dict[int, CondNames]:
    """Every condition of the plan (by identity) -> what its record's names are."""
    table: dict[int, CondNames] = {}
    for rec, frame in [*((s, False) for s in plan.structs), *((f, True) for f in plan.frames)]:
        names = record_names(plan, rec, frame)
        for item in rec.steps:
            if item.when is not None:
                table[id(item.when)] = names
            for size in step_exprs(item.step):
                if size.tree is not None:
                    table[id(size.tree)] = names
        for rule in rec.rules:
            table[id(rule.check)] = names
        for check in rec.msgpack_checks:
            if check.size.tree is not None:
                table[id(check.size.tree)] = names
    contexts = {c.name: c for c in plan.context}
    header = CondNames(step_ints(plan.header_steps), contexts)
    for item in plan.header_steps:
        if item.when is not None:
            table[id(item.when)] = header
    for _, _, select in plan.selects:  # over the header's values, flags and context
        table[id(select)] = header
    if plan.startup is not None:
        startup = CondNames(step_ints(plan.startup.header_steps), contexts)
        for item in plan.startup.header_steps:
            if item.when is not None:
                table[id(item.when)] = startup
    return table


def key_parts(plan: CodecPlan | StartupPlan) -> list[str]:
    """The parts of a frame's code as the decoder has them, as numbers: header values
    (64-bit ones converted) or context values (their default without a context)."""
    if isinstance(plan, StartupPlan):
        ints = step_ints(plan.header_steps)
        return [f"Number(v_{camel(n)})" if ints[n].big else f"v_{camel(n)}"
                for n in plan.discriminator]  # fmt: skip
    contexts = {c.name: c for c in plan.context}
    parts = []
    for (kind, name, default), big in zip(plan.key_parts, plan.discriminator_big):
        if kind == "ctx":
            context = contexts[name]
            value = ctx_value(name, default, context.big, context.keyed_by, "decode", None)
            parts.append(f"Number{value}" if context.big else value)
        else:
            parts.append(f"Number(v_{camel(name)})" if big else f"v_{camel(name)}")
    return parts


def code_values(plan: CodecPlan, frame: RecordPlan) -> dict[str, str]:
    """The literals a frame's encoder writes for its header's code fields (the startup
    header's, for a startup frame)."""
    if frame.startup and plan.startup is not None:
        ints = step_ints(plan.startup.header_steps)
        return {name: lit(code, ints[name].big)
                for name, code in zip(plan.startup.discriminator, frame.code)}  # fmt: skip
    return {name: lit(code, big)
            for name, code, big in zip(plan.discriminator, frame.code, plan.discriminator_big)}  # fmt: skip


def select_table(plan: CodecPlan) -> dict[tuple[int, ...], int]:
    """The frames decoded only when their ``select:`` holds: code -> the number of its
    condition's function (``_select<n>``, in the order of ``CodecPlan.selects``)."""
    return {code: index for index, (code, _, _) in enumerate(plan.selects, start=1)}


def wildcard_claims(plan: CodecPlan, frame: RecordPlan) -> list[tuple[int, int | None]]:
    """For a frame whose code ends in '*': the last parts of the other codes with its
    leading parts (the first bytes its body must not begin with), each with the number of
    the ``select:`` that must hold too (None: always), as Python's encoder checks them."""
    if frame.startup or not frame.code or frame.code[-1] != WILDCARD:
        return []
    selects = select_table(plan)
    return [(entry.code[-1], selects.get(entry.code)) for entry in plan.decoders
            if entry.code[:-1] == frame.code[:-1]]  # fmt: skip


def frame_length_value(plan: FrameLengthPlan, length: str) -> str:
    """The header's length field of a body of ``length`` bytes (``FrameLengthPlan``)."""
    k = plan.counted - plan.adjust
    text = length + (f" + {k}" if k > 0 else f" - {-k}" if k < 0 else "")
    return f"BigInt({text})" if is_big(plan.type) else text


def step_exprs(step: object) -> list[ExprPlan]:
    """The size and count expressions of one step."""
    found: list[ExprPlan] = []
    if isinstance(step, BytesStep) and step.size is not None:
        found.append(step.size)
    if isinstance(step, ArrayStep):
        found += [e for e in (step.count_expr, step.byte_length_expr) if e is not None]
        element = step.element
        if element.fixed_size is not None:
            found.append(element.fixed_size)
        if element.bytes is not None and element.bytes.size is not None:
            found.append(element.bytes.size)
    return found


def rule_message(rec: RecordPlan, text: str, spec: str) -> str:
    """A broken rule's message, as Python words it (the rule's names the properties')."""
    return f"{rec.name}: {ts_names(text)} does not hold" + (f" ({spec})" if spec else "")


def code_key(code: tuple[int, ...]) -> str:
    """A frame code as one number: multi-part codes (RabbitMQ's key and version, each
    16 bits) are combined as ``key * 0x10000 + version``, so lookups stay numeric."""
    if len(code) == 1:
        return lit(code[0])
    if len(code) != 2:
        raise NotImplementedError("TypeScript target: codes of more than two parts")
    return lit(code[0] * 0x10000 + code[1])


def array_of(element: str) -> str:
    return f"({element})[]" if "|" in element else f"{element}[]"


def js_string(text: str) -> str:
    return json.dumps(text)


def js_char(code: int) -> str:
    """A one-character string literal of the code point ``code``."""
    return json.dumps(chr(code))


def doc_comment(text: str, indent: int = 0) -> str:
    """A JSDoc block (``/** ... */``), or nothing for an empty text."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    if not lines or not any(lines):
        return ""
    pad = " " * indent
    if len(lines) == 1:
        return f"/** {lines[0].replace('*/', '* /')} */\n{pad}"
    body = "\n".join(f"{pad} *{' ' + line.replace('*/', '* /') if line else ''}" for line in lines)
    return f"/**\n{body}\n{pad} */\n{pad}"


_ENV = environment(
    Path(__file__).parent / "templates",
    filters=dict(camel=camel, lit=lit, dec=dec, ts_names=ts_names, view_get=view_get,
                 view_set=view_set, read_at=read_at, write_at=write_at, attr_type=attr_type,
                 attr_default=attr_default, element_type=element_type, enum_type=enum_type,
                 array_of=array_of, expr=expr, ts_class=ts_class,
                 code_key=code_key, js=js_string, js_char=js_char, doc=doc_comment, cond=cond,
                 float_read=float_read, float_write=float_write),
    tests=dict(big=is_big),
    rule_message=rule_message,
    frame_length_value=frame_length_value,
    key_parts=key_parts,
    code_values=code_values,
    wildcard_claims=wildcard_claims,
)  # fmt: skip

# Runtime names a codec imports only when its code uses them (so that the codecs of IDLs
# without the constructs that need them stay as they were).
_OPTIONAL_IMPORTS = ("InvalidString", "RuleViolation", "f32Bits", "f32FromBits", "floorDiv", "frameName",
                     "readLenenc", "readLenencOrNull", "readVbi", "readZigzag", "xor")  # fmt: skip
_IMPORTS_MARK = "  //@@optional-imports@@\n"
_IMPORT_BLOCK = re.compile(r"^import \{\n((?:  .*\n)+)\} from ", re.MULTILINE)


def add_imports(source: str) -> str:
    """The runtime import list with the optional names the code uses, sorted."""
    found = _IMPORT_BLOCK.search(source)
    assert found is not None and _IMPORTS_MARK in found.group(1)
    rest = source[found.end() :]
    names = [line.strip().rstrip(",") for line in found.group(1).splitlines()]
    names = [name for name in names if not name.startswith("//")]
    names += [name for name in _OPTIONAL_IMPORTS if re.search(rf"\b{name}\b", rest)]
    block = "".join(f"  {name},\n" for name in sorted(set(names)))
    return source[: found.start(1)] + block + source[found.end(1) :]


def tidy(source: str) -> str:
    """Generated TypeScript as committed: no trailing spaces, no runs of blank lines, lines
    within :data:`fit.WIDTH` columns."""
    lines = [line.rstrip() for line in source.splitlines()]
    out: list[str] = []
    for index, line in enumerate(lines):
        if not line:
            after = next((x for x in lines[index + 1 :] if x), "")
            before = out[-1] if out else ""
            if (not before or before.endswith("{") or after.lstrip().startswith("}")
                    or (before.startswith("    ") and after.startswith("    "))):  # fmt: skip
                continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return fit_lines("\n".join(out)) + "\n"


def render_codec(plan: CodecPlan) -> str:
    text = _ENV.get_template("codec.ts.j2").render(
        m=plan,
        runtime=RUNTIME,
        cond_names=cond_table(plan),
        selects=select_table(plan),
        header_values=plan.header_values,
        has_flags=plan.has_flags,
    )
    return tidy(add_imports(text))


def render_ts_version(proto: Protocol) -> dict[str, str]:
    """One protocol version's modules: ``src/<protocol>/<version>/{index,machines}.ts``."""
    base = f"src/{proto.protocol}/{proto.version}"
    return {
        f"{base}/index.ts": render_codec(plan_codec(proto)),
        f"{base}/machines.ts": tidy(render_ts_machines(proto)),
    }


def render_typescript(protos: list[Protocol], standalone: bool = False) -> dict[str, str]:
    """The files of ``generated/typescript/``: relative path -> text (the package files:
    ``package.py``)."""
    files: dict[str, str] = {}
    for proto in protos:
        files.update(render_ts_version(proto))
    versions = sorted((p.protocol, p.version, p.title) for p in protos)
    files.update(render_ts_package(versions, standalone))
    return files
