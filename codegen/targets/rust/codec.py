"""The Rust target: spells the language-neutral codec plan (``plan/codec.py``) in Rust.

One crate per protocol version (``generated/rust/<protocol>_<version>/``), ``#![no_std]``
with ``alloc``, ``#![forbid(unsafe_code)]``, depending only on the hand-written support
crate ``runtime/rust/wirestream-runtime``. Decoding borrows: ``decode(&'a [u8]) ->
Result<Frame<'a>, ProtocolError>``; bytes and strings are slices of the input. Every length
is checked before a slice is taken, so no input makes the decoder panic; ``ProtocolError`` is
a small ``Copy`` enum whose variants carry Python's class names (``Truncated``,
``InvalidValue``, ...).

Like the TypeScript target, everything that decides *what* the code does comes from the plan;
this module only spells it. The code is written as lines here (each plan step is one method
of ``Spell``) and laid out by ``rustfmt``, as prost-build does. Constructs this target does
not spell yet are refused with ``NotImplementedError`` naming the construct and the record,
never spelled wrongly.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from wirestream.codegen.frontend.model import WILDCARD, Cond, IntType
from wirestream.codegen.plan.codec import (
    ArrayStep,
    AttrPlan,
    BytesStep,
    CodecPlan,
    CondPlan,
    DecoderEntry,
    ElementPlan,
    EnumPlan,
    ExprPlan,
    FixedRun,
    FloatStep,
    IntPlan,
    IntStep,
    ItemStep,
    ContextPlan,
    RecordPlan,
    RefStep,
    UnionPlan,
    lower_snake,
)
from wirestream.codegen.targets.jinja import environment

RUNTIME_CRATE = "wirestream-runtime"
EDITION = "2021"
TOOLCHAIN = "1.95.0"
_ENV = environment(Path(__file__).parent / "templates")

# Names the generated code uses itself: a record of the same name would shadow them.
_RESERVED = {"Ok", "Err", "Some", "None", "Result", "Option", "Vec", "String", "Box", "Frame",
             "ProtocolError", "FrameType", "UnknownFrame", "Self", "Default", "Copy", "Clone",
             "Debug", "PartialEq", "Eq", "Context", "Sender"}  # fmt: skip
_KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
             "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
             "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe",
             "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do",
             "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield",
             "try", "gen"}  # fmt: skip


_COMPARE = ("==", "!=", "<", "<=", ">", ">=")


class Refused(NotImplementedError):
    """A construct the Rust target does not spell (yet)."""


def refuse(plan: CodecPlan, what: str, where: str = "") -> Refused:
    at = f" ({where})" if where else ""
    return Refused(f"Rust target: {plan.protocol}/{plan.version}: {what}{at} is not supported yet")


def type_name(name: str) -> str:
    """A frame's struct name: its IDL name, or with ``Frame`` after it when the IDL name is
    one the generated code uses itself (MySQL's ``Ok`` and ``Err`` are ``OkFrame`` and
    ``ErrFrame``; the ``Frame`` variant and ``class_name`` keep the IDL name)."""
    return f"{name}Frame" if name in _RESERVED else name


def ident(name: str) -> str:
    """A field name as a Rust identifier (``r#type`` for keywords)."""
    return f"r#{name}" if name in _KEYWORDS else name


def fn(name: str) -> str:
    """A record's decoder function suffix (``RequestN`` -> ``request_n``)."""
    return lower_snake(name)


def var(name: str) -> str:
    return f"v_{name}"


def lit(value: int) -> str:
    if value < 0:
        return f"-{lit(-value)}"
    if value <= 9:
        return str(value)
    digits = f"{value:x}"
    groups: list[str] = []
    while digits:
        groups.insert(0, digits[-4:])
        digits = digits[:-4]
    return "0x" + "_".join(groups)


def int_rust(bits: int, signed: bool) -> str:
    for size in (8, 16, 32, 64):
        if bits <= size:
            return f"{'i' if signed else 'u'}{size}"
    raise NotImplementedError(f"Rust target: a {bits}-bit integer")


def itype_rust(itype: IntType) -> str:
    return int_rust(itype.bits, itype.signed)


def rust_range(rtype: str) -> tuple[int, int]:
    bits = int(rtype[1:])
    if rtype[0] == "i":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def value_rust(v: IntPlan) -> str:
    """The Rust type holding an integer value on the wire (before enums and bools)."""
    return itype_rust(v.type)


def value_type(v: IntPlan) -> str:
    """The Rust type of an integer attribute: its closed enum, bool, or the integer."""
    if v.boolean:
        return "bool"
    if v.enum is not None:
        return v.enum
    return value_rust(v)


def read_at(itype: IntType, at: str) -> str:
    """An expression reading ``itype`` at ``data[at..]`` (bounds already checked), or at
    ``b[at]`` when ``at`` is a number (``b``: the slice ``fixed`` takes)."""
    size = itype.size
    assert size is not None

    base, _, offset = at.partition(" + ")
    start = int(offset) if offset else 0

    def b(i: int) -> str:
        if base.isdigit():  # an offset into `b`, a slice of known length (see `fixed`)
            return f"b[{int(base) + start + i}]"
        return f"data[{base}{f' + {start + i}' if start + i else ''}]"

    rtype = itype_rust(itype)
    if size == 3:
        order = [2, 1, 0] if itype.little else [0, 1, 2]
        value = (f"(u32::from({b(order[0])}) << 16) | (u32::from({b(order[1])}) << 8)"
                 f" | u32::from({b(order[2])})")  # fmt: skip
        return value if not itype.signed else f"((({value}) << 8) as i32 >> 8)"
    if size == 1:
        return b(0) if rtype == "u8" else f"{b(0)} as i8"
    items = ", ".join(b(i) for i in range(size))
    return f"{rtype}::from_{'le' if itype.little else 'be'}_bytes([{items}])"


_VAR_READ = {"varint": "read_varint", "varu64": "read_varu64", "vbi": "read_vbi",
             "zigzag": "read_zigzag", "lenenc": "read_lenenc"}  # fmt: skip


def write_int(itype: IntType, value: str) -> str:
    """A statement appending ``value`` (of ``itype``'s Rust type) to ``w``."""
    size = itype.size
    if size is None:
        if itype.flavour == "vbi":
            return (f"if !wirestream_runtime::write_vbi(w, {value}) {{ "
                    "return Err(ProtocolError::EncodeError); }")  # fmt: skip
        return f"wirestream_runtime::write_{itype.flavour}(w, {value});"
    order = "le" if itype.little else "be"
    if size == 3:
        part = "[..3]" if itype.little else "[1..]"
        return f"w.extend_from_slice(&({value}).to_{order}_bytes(){part});"
    if size == 1:
        return f"w.push({value});" if itype_rust(itype) == "u8" else f"w.push(({value}) as u8);"
    return f"w.extend_from_slice(&({value}).to_{order}_bytes());"


def unparen(text: str) -> str:
    """``text`` without its outer parentheses when they enclose all of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and index < len(text) - 1:
            return text
    return text[1:-1]


def doc_lines(text: str, inner: bool = False) -> list[str]:
    mark = "//!" if inner else "///"
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return [f"{mark} {line}".rstrip() for line in lines if True] if any(lines) else []


@dataclass
class Code:
    lines: list[str] = field(default_factory=list)

    def __call__(self, *lines: str) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class Spell:
    """Spells one protocol version's plan as the lib.rs of its crate."""

    def __init__(self, plan: CodecPlan) -> None:
        self.m = plan
        self.structs = {s.name: s for s in plan.structs}
        self.unions = {u.name: u for u in plan.unions}
        self.enums = {e.name: e for e in plan.enums}
        self.frame_ids = {id(f) for f in plan.frames}
        self.check_supported()
        self.current_ints: dict[str, IntPlan] = {}
        self.borrows: dict[str, bool] = {}
        for name in [*self.structs, *self.unions]:
            self.record_borrows(name)

    # --- what is supported ---

    def check_supported(self) -> None:
        m = self.m
        if m.wildcards and m.sender_tables:
            raise refuse(m, "frame codes ending in '*' with codes both sides use")
        if m.wildcards and m.frame_length is None:
            raise refuse(m, "frame codes ending in '*' without a frame length in the header")
        for item in m.header_steps:
            st = item.step
            if isinstance(st, IntStep) and st.value.peek and (
                    st.value.type.size != 1 or item.optional or m.frame_length is None):  # fmt: skip
                raise refuse(m, "a peeked header value other than one byte of a framed body",
                             st.value.name)  # fmt: skip
        if m.frame_length is not None and m.unknown not in ("error",):
            raise refuse(
                m, f"a frame length in the header with the unknown-frame policy {m.unknown!r}"
            )
        if m.unknown not in ("error", "ignore_if_flag", "skip_length"):
            raise refuse(m, f"the unknown-frame policy {m.unknown!r}")
        for rec in m.structs:
            if rec.name in _RESERVED:
                raise refuse(m, f"a record named {rec.name!r} (a name the Rust code uses)")
        names = [type_name(f.name) for f in m.frames] + [s.name for s in m.structs]
        for f in m.frames:
            if names.count(type_name(f.name)) > 1:
                raise refuse(m, f"a frame named {f.name!r} beside a record named "
                             f"{type_name(f.name)!r}")  # fmt: skip
        for e in m.enums:
            if e.name in _RESERVED or e.name in names:
                raise refuse(m, f"an enum named {e.name!r} (a name the Rust code uses)")

    def record_borrows(self, name: str) -> bool:
        if name in self.borrows:
            return self.borrows[name]
        self.borrows[name] = False  # a cycle borrows only through its other members
        if name in self.structs:
            result = any(self.attr_borrows(a) for a in self.structs[name].attrs)
        else:
            result = any(self.record_borrows(v) for _, v in self.unions[name].variants)
        self.borrows[name] = result
        return result

    def attr_borrows(self, a: AttrPlan) -> bool:
        if a.kind in ("bytes", "string"):
            return True
        if a.kind == "ref":
            assert a.ref is not None
            return self.record_borrows(a.ref)
        if a.kind == "array":
            assert a.element is not None
            return self.element_borrows(a.element)
        return False

    def element_borrows(self, e: ElementPlan) -> bool:
        if e.kind == "bytes":
            return True
        if e.kind == "ref":
            assert e.ref is not None
            return self.record_borrows(e.ref)
        return False

    def named(self, name: str) -> str:
        """A struct or union type with its lifetime when it borrows."""
        return f"{name}<'a>" if self.record_borrows(name) else name

    # --- types ---

    def element_type(self, e: ElementPlan) -> str:
        if e.kind == "int":
            assert e.value is not None
            return value_type(e.value)
        if e.kind == "bytes":
            assert e.bytes is not None
            base = "&'a str" if e.bytes.string else "&'a [u8]"
            return f"Option<{base}>" if e.bytes.nullable else base
        assert e.ref is not None
        return self.named(e.ref)

    def attr_type(self, a: AttrPlan) -> str:
        if a.kind == "int":
            assert a.value is not None
            base = value_type(a.value)
        elif a.kind == "bool":
            base = "bool"
        elif a.kind == "float":
            assert a.float is not None
            base = f"f{a.float.bits}"
        elif a.kind == "bytes":
            base = "&'a [u8]"
        elif a.kind == "string":
            base = "&'a str"
        elif a.kind == "ref":
            assert a.ref is not None
            base = self.named(a.ref)
        else:
            assert a.element is not None
            base = f"Vec<{self.element_type(a.element)}>"
        return f"Option<{base}>" if a.optional or a.nullable else base

    def record_borrows_attrs(self, rec: RecordPlan) -> bool:
        return any(self.attr_borrows(a) for a in rec.attrs)

    def rec_type(self, rec: RecordPlan, life: str = "'a") -> str:
        name = type_name(rec.name) if id(rec) in self.frame_ids else rec.name
        return f"{name}<{life}>" if self.record_borrows_attrs(rec) else name

    def gen(self, rec: RecordPlan) -> str:
        return "<'a>" if self.record_borrows_attrs(rec) else ""

    def data(self, rec: RecordPlan) -> str:
        return "&'a [u8]" if self.record_borrows_attrs(rec) else "&[u8]"

    def named_elided(self, name: str) -> str:
        return f"{name}<'_>" if self.record_borrows(name) else name

    # --- expressions ---

    def expr(self, plan: ExprPlan, scope: str, values: dict[str, str], where: str) -> str:
        """A size or count expression as an ``i128`` (no overflow for any 64-bit operands)."""
        if plan.tree is not None:
            return self.number(plan.tree.tree, scope, values, self.current_ints, plan.text, where)
        parts: list[str] = []
        for index, term in enumerate(plan.terms):
            if index:
                op = plan.operators[index - 1]
                if op not in ("+", "-", "*"):
                    raise refuse(self.m, f"the operator {op!r} in '{plan.text}'", where)
                parts.append(f" {op} ")
            if term.kind == "literal":
                parts.append(f"{lit(term.value)}i128")
            elif term.kind == "field":
                if term.optional:
                    raise refuse(self.m, f"an optional field in '{plan.text}'", where)
                parts.append(f"i128::from({self.ref(term.name, scope, values)})")
            else:
                parts.append(f"i128::from({self.ctx_value(term.name, scope, values)})")
        return "".join(parts) if len(parts) == 1 else "(" + "".join(parts) + ")"

    def ctx_value(self, name: str, scope: str, values: dict[str, str]) -> str:
        """A context value, or its default without a context (or without an entry)."""
        plan = next(c for c in self.m.context if c.name == name)
        default = f"{lit(plan.default)}_{self.ctx_types(plan)[1]}"
        if plan.keyed_by is not None:
            key = self.ref(plan.keyed_by, scope, values)
            return f"ctx.and_then(|c| c.{ident(name)}.get(&{key}).copied()).unwrap_or({default})"
        return f"ctx.map_or({default}, |c| c.{ident(name)})"

    def ctx_types(self, plan: ContextPlan) -> tuple[str | None, str]:
        """The Rust types of a context value's key (None: not keyed) and value: those of
        the fields that key and set it."""

        def field_type(name: str) -> str:
            found = {value_rust(v) for f in self.m.frames for v in self.record_ints(f)
                     if v.name == name}  # fmt: skip
            if len(found) != 1:
                raise refuse(self.m, f"a context value set from fields of several types ({name})",
                             plan.name)  # fmt: skip
            return found.pop()

        if not plan.set_by:  # set only by the caller (MySQL's phase): a u32, as a key part
            return (field_type(plan.keyed_by) if plan.keyed_by else None), "u32"
        setters = {field_type(field) for _, field in plan.set_by}
        if len(setters) != 1:
            raise refuse(self.m, "a context value set from fields of several types", plan.name)
        return (field_type(plan.keyed_by) if plan.keyed_by else None), setters.pop()

    def record_ints(self, rec: RecordPlan) -> list[IntPlan]:
        found: list[IntPlan] = []
        for item in [*self.m.header_steps, *rec.steps]:
            s = item.step
            if isinstance(s, FixedRun):
                for u in s.units:
                    found += [u.value] if u.value is not None else []
                    found += [b.value for b in u.bits if b.value is not None]
            elif isinstance(s, IntStep):
                found.append(s.value)
        return found

    # --- conditions: bools are bool, every number an i128 (exact for any 64-bit operands)

    def cond(self, plan: CondPlan, scope: str, values: dict[str, str], ints: dict[str, IntPlan],
             where: str) -> str:  # fmt: skip
        return unparen(self.boolean(plan.tree, scope, values, ints, plan.text, where))

    def is_bool(self, node: Cond, ints: dict[str, IntPlan]) -> bool:
        if node.op == "field":
            value = ints.get(node.name)
            return value is not None and value.boolean
        return node.op in ("flag", "more", "not", "and", "or", *_COMPARE)

    def boolean(self, node: Cond, scope: str, values: dict[str, str], ints: dict[str, IntPlan],
                text: str, where: str) -> str:  # fmt: skip

        def b(n: Cond) -> str:
            return self.boolean(n, scope, values, ints, text, where)

        def num(n: Cond) -> str:
            return self.number(n, scope, values, ints, text, where)

        op = node.op
        if op == "flag":
            return f"(flags & {lit(node.value)} != 0)"
        if op == "more":
            if scope != "decode":
                raise refuse(self.m, f"'more' in '{text}' when encoding", where)
            return "(pos < end)"
        if op == "field" and self.is_bool(node, ints):
            return self.ref(node.name, scope, values)
        if op == "not":
            return f"!{b(node.args[0])}"
        if op in ("and", "or"):
            left, right = (b(arg) for arg in node.args)
            return f"({left} {'&&' if op == 'and' else '||'} {right})"
        if op in _COMPARE:
            left, right = (num(arg) for arg in node.args)
            return f"({left} {op} {right})"
        return f"({num(node)} != 0)"

    def number(self, node: Cond, scope: str, values: dict[str, str], ints: dict[str, IntPlan],
               text: str, where: str) -> str:  # fmt: skip
        op = node.op
        if self.is_bool(node, ints):
            return f"i128::from({self.boolean(node, scope, values, ints, text, where)})"
        if op == "lit":
            return f"{lit(node.value)}_i128"
        if op == "remaining":
            if scope != "decode":
                raise refuse(self.m, f"'remaining' in '{text}' when encoding", where)
            return "((end - pos) as i128)"
        if op == "field":
            value = ints.get(node.name)
            if value is None:
                raise refuse(self.m, f"'{node.name}' in '{text}' (not an integer of the record)",
                             where)  # fmt: skip
            src = self.ref(node.name, scope, values)
            if node.value:  # may be absent: 0
                if value.enum is not None:
                    return f"{src}.map_or(0, |v| i128::from(v as {value_rust(value)}))"
                return f"{src}.map_or(0, i128::from)"
            if value.enum is not None and not (scope == "encode" and node.name in values):
                return f"i128::from({src} as {value_rust(value)})"
            return f"i128::from({src})"
        if op == "ctx":
            return f"i128::from({self.ctx_value(node.name, scope, values)})"
        left, right = (self.number(arg, scope, values, ints, text, where) for arg in node.args)
        if op == "/":
            divisor = node.args[1]
            if divisor.op != "lit" or divisor.value == 0:
                raise refuse(self.m, f"a division by a value that may be 0 in '{text}'", where)
            return f"{left}.div_euclid({right})"
        return f"({left} {op} {right})"

    def rec_ints(self, rec: RecordPlan | None) -> dict[str, IntPlan]:
        """The integers a record's conditions may name (a frame's header ones too)."""
        steps = [*self.m.header_steps, *(rec.steps if rec else [])]
        if rec is not None and rec.name in self.structs:
            steps = list(rec.steps)
        found: dict[str, IntPlan] = {}
        for item in steps:
            st = item.step
            if isinstance(st, FixedRun):
                for u in st.units:
                    if u.value is not None:
                        found[u.value.name] = u.value
                    for bb in u.bits:
                        if bb.value is not None:
                            found[bb.value.name] = bb.value
            elif isinstance(st, IntStep):
                found[st.value.name] = st.value
        for v, _, _ in rec.flag_values if rec else []:
            found[v.name] = v
        return found

    def ref(self, name: str, scope: str, values: dict[str, str]) -> str:
        if name in values:
            return values[name]
        return var(name) if scope == "decode" else f"self.{ident(name)}"

    # --- decoding ---

    def truncated(self, needed: str) -> str:
        if "i128" in needed:  # a declared length: may be beyond u64 (saturates)
            return f"return Err(ProtocolError::Truncated {{ needed: saturate({needed}) }});"
        return f"return Err(ProtocolError::Truncated {{ needed: ({needed}) as u64 }});"

    def check_int(self, c: Code, v: IntPlan, name: str, owner: str) -> None:
        """Checks of a decoded integer ``name``; may rebind it to its enum."""
        if v.boolean:
            return
        rtype = value_rust(v)
        if v.const is not None:
            c(f"if {name} != {lit(v.const)} {{ return Err(ProtocolError::InvalidValue); }}")
        elif v.narrowed:
            test = self.out_of_range(name, v, (v.type.min, v.type.max))
            if test:
                c(f"if {test} {{ return Err(ProtocolError::InvalidValue); }}")
        if v.enum is not None:
            c(f"let {name} = match {v.enum}::from_code({name}) {{ Some(e) => e, "
              "None => return Err(ProtocolError::InvalidValue) };")  # fmt: skip

    def out_of_range(self, name: str, v: IntPlan, bounds: tuple[int, int]) -> str:
        """A test that ``name`` is outside ``v``'s bounds, given it is within ``bounds``
        (empty when it cannot be)."""
        lo, hi = bounds
        if v.lo > lo and v.hi < hi:
            return f"!({lit(v.lo)}..={lit(v.hi)}).contains(&{name})"
        if v.lo > lo:
            return f"{name} < {lit(v.lo)}"
        if v.hi < hi:
            return f"{name} > {lit(v.hi)}"
        return ""

    def fixed(self, c: Code, size: int, end: str) -> None:
        """Check that ``size`` bytes remain before ``end`` and take them as ``b``: one
        bounds check for the run, where indexing ``data`` byte by byte costs one a byte
        (``end`` is not known to be within ``data``); ``b[k]`` with a constant ``k`` below
        ``size`` is then checked at compile time."""
        c(f"if {end} - pos < {size} {{ {self.truncated(f'pos + {size}')} }}",
          f"let b = &data[pos..pos + {size}];")  # fmt: skip

    def read_int(self, c: Code, itype: IntType, name: str, end: str, where: str) -> None:
        if itype.size is None:
            if itype.flavour not in _VAR_READ:
                raise refuse(self.m, f"the variable-length integer {itype.name}", where)
            c(f"let ({name}, next) = wirestream_runtime::{_VAR_READ[itype.flavour]}(data, pos, {end})?;",
              "pos = next;")  # fmt: skip
            return
        if itype.size == 1:  # one byte: one bounds check either way
            c(f"if {end} - pos < 1 {{ {self.truncated('pos + 1')} }}",
              f"let {name}: {itype_rust(itype)} = {read_at(itype, 'pos')};", "pos += 1;")  # fmt: skip
            return
        self.fixed(c, itype.size, end)
        c(f"let {name}: {itype_rust(itype)} = {read_at(itype, '0')};", f"pos += {itype.size};")

    def read_size(self, c: Code, itype: IntType, name: str, end: str, where: str) -> None:
        """A length or count as an ``i128``."""
        self.read_int(c, itype, f"{name}_raw", end, where)
        c(f"let {name} = i128::from({name}_raw);")

    def decode_run(self, c: Code, run: FixedRun, owner: str, si: int) -> None:
        self.fixed(c, run.size, "end")
        for u in run.units:
            at = str(u.offset)
            if u.kind == "float":
                assert u.float is not None
                itype = IntType(f"u{u.float.bits}", u.float.bits, False, u.float.bits // 8,
                                little=u.float.little)  # fmt: skip
                c(f"let {var(u.float.name)} = f{u.float.bits}::from_bits({read_at(itype, at)});")
            elif u.kind == "int":
                assert u.value is not None and u.type is not None
                c(f"let {var(u.value.name)}: {value_rust(u.value)} = {read_at(u.type, at)};")
                self.check_int(c, u.value, var(u.value.name), owner)
            else:
                assert u.type is not None
                word = f"w{si}_{u.offset}"
                wtype = itype_rust(u.type)
                c(f"let {word}: {wtype} = {read_at(u.type, at)};")
                for b in u.bits:
                    if b.kind == "reserved":
                        continue
                    shifted = f"({word} >> {b.shift})" if b.shift else word
                    if b.kind == "flags":
                        ftype = self.flags_type()
                        cast = "" if ftype == wtype else f" as {ftype}"
                        masked = (
                            f"({shifted} & {lit(b.mask)}){cast}"
                            if cast
                            else f"{shifted} & {lit(b.mask)}"
                        )
                        c(f"let flags = {masked};")
                        continue
                    assert b.value is not None
                    name = var(b.value.name)
                    if b.value.boolean:
                        c(f"let {name} = {shifted} & 1 != 0;")
                        continue
                    vtype = value_rust(b.value)
                    cast = "" if vtype == wtype else f" as {vtype}"
                    masked = (
                        f"({shifted} & {lit(b.mask)}){cast}"
                        if cast
                        else f"{shifted} & {lit(b.mask)}"
                    )
                    c(f"let {name} = {masked};")
                    self.check_int(c, b.value, name, owner)
        c(f"pos += {run.size};")

    def flags_type(self) -> str:
        return int_rust(max(8, self.m.flags_max.bit_length()), False)

    def decode_bytes(self, c: Code, b: BytesStep, name: str, owner: str, end: str) -> None:
        where = f"{owner}.{b.name}"
        if b.xor_key is not None:
            raise refuse(self.m, "the xor transform", where)
        if b.terminator is not None:
            framed = self.m.frame_length is not None or self.m.length_prefix is not None
            missing = ("return Err(ProtocolError::InvalidValue);" if framed
                       else self.truncated(f"{end} + 1"))  # fmt: skip
            c(f"let Some(stop) = data[pos..{end}].iter().position(|&b| b == {lit(b.terminator)}) "
              f"else {{ {missing} }};",
              "let raw = &data[pos..pos + stop];", "pos += stop + 1;",
              f"let {name} = {self.as_string('raw', b.string)};")  # fmt: skip
            self.check_forbid(c, b, name, "InvalidString" if b.string else "InvalidValue")
            return
        if b.rest:
            raw = f"&data[pos..{end}]"
            c(f"let {name} = {self.as_string(raw, b.string)};", f"pos = {end};")
            self.check_forbid(c, b, name, "InvalidString" if b.string else "InvalidValue")
            return
        if b.size is not None and b.length is not None:
            c(f"let n: i128 = {unparen(self.expr(b.size, 'decode', {}, where))};",
              "let n = if n <= 0 {")  # fmt: skip
            self.read_int(c, b.length, "n_raw", end, where)
            c("i128::from(n_raw) } else { n };")
        elif b.size is not None:
            c(f"let n: i128 = {unparen(self.expr(b.size, 'decode', {}, where))};")
        elif b.nullable and b.length is not None and b.length.flavour == "lenenc":
            c(f"let (n_raw, next) = wirestream_runtime::read_lenenc_or_null(data, pos, {end})?;",
              "pos = next;", "let n: i128 = n_raw.map_or(-1, i128::from);")  # fmt: skip
        else:
            assert b.length is not None
            self.read_size(c, b.length, "n", end, where)
        if b.nullable:
            c(f"let {name} = if n == -1 {{ None }} else {{")
        if b.check_negative:
            c("if n < 0 { return Err(ProtocolError::InvalidValue); }")
        c(f"if n > ({end} - pos) as i128 {{ {self.truncated('pos as i128 + n')} }}",
          "let n = n as usize;",
          f"let raw = &data[pos..pos + n];",
          "pos += n;")  # fmt: skip
        value = self.as_string("raw", b.string)
        c(f"let {name} = {value};")
        self.check_forbid(c, b, name, "InvalidString" if b.string else "InvalidValue")
        if b.nullable:
            c(f"Some({name}) }};")

    def check_forbid(self, c: Code, b: BytesStep, name: str, error: str) -> None:
        if not b.forbid:
            return
        if b.string:
            tests = [f"{name}.contains('\\u{{{c_:x}}}')" for c_ in b.forbid]
        else:
            tests = [f"{name}.contains(&{lit(c_)})" for c_ in b.forbid]
        c(f"if {' || '.join(tests)} {{ return Err(ProtocolError::{error}); }}")

    def as_string(self, raw: str, string: bool) -> str:
        if not string:
            return raw
        return f"match core::str::from_utf8({raw}) {{ Ok(s) => s, Err(_) => return Err(ProtocolError::InvalidString) }}"

    def decode_element(self, c: Code, e: ElementPlan, name: str, owner: str, arr: str,
                       end: str) -> None:  # fmt: skip
        where = f"{owner}.{arr}"
        if e.fixed_size is not None:
            assert e.bytes is not None
            c(f"if elem_size > ({end} - pos) as i128 {{ {self.truncated('pos as i128 + elem_size')} }}",
              f"let {name} = {self.as_string('&data[pos..pos + elem_size as usize]', e.bytes.string)};",
              "pos += elem_size as usize;")  # fmt: skip
        elif e.kind == "int":
            assert e.value is not None
            self.read_int(c, e.value.type, name, end, where)
            self.check_int(c, e.value, name, owner)
        elif e.kind == "bytes":
            assert e.bytes is not None
            self.decode_bytes(c, e.bytes, name, owner, end)
        else:
            assert e.ref is not None
            c(f"let ({name}, next) = decode_{fn(e.ref)}(data, pos, {end}, ctx)?;", "pos = next;")

    def decode_array(self, c: Code, a: ArrayStep, name: str, owner: str, end: str) -> None:
        where = f"{owner}.{a.name}"
        least = a.element.least
        c("let mut items = Vec::new();")
        if a.element.fixed_size is not None:
            c(f"let elem_size: i128 = {self.expr(a.element.fixed_size, 'decode', {}, where)};",
              "if elem_size <= 0 { return Err(ProtocolError::InvalidValue); }")  # fmt: skip
            least = "elem_size"  # type: ignore[assignment]
        if a.count_prefix is not None or a.count_expr is not None:
            if a.count_prefix is not None:
                self.read_size(c, a.count_prefix, "count", end, where)
            else:
                assert a.count_expr is not None
                c(f"let count: i128 = {self.expr(a.count_expr, 'decode', {}, where)};")
            if a.check_negative_count:
                c("if count < 0 { return Err(ProtocolError::InvalidValue); }")
            c(f"if count.saturating_mul({least}) > ({end} - pos) as i128 {{ "
              f"{self.truncated(f'pos as i128 + count.saturating_mul({least})')} }}",
              "let count = count as usize;",
              "items.reserve_exact(count);")  # fmt: skip
            if a.element.exact:
                c("for _ in 0..count {")
                self.decode_element(c, a.element, "item", owner, a.name, end)
                c("items.push(item); }")
            else:
                c("let decode_one = |mut pos: usize| {")
                self.decode_element(c, a.element, "item", owner, a.name, end)
                c("Ok::<_, ProtocolError>((item, pos)) };",
                  "for i in 0..count {",
                  "match decode_one(pos) {",
                  "Ok((item, next)) => { items.push(item); pos = next; }",
                  "Err(ProtocolError::Truncated { needed }) => {",
                  f"let rest = ((count - i - 1) * {least}) as u64;",
                  "let needed = if needed != 0 { needed.saturating_add(rest) } else { "
                  f"(pos + {least}) as u64 + rest }};",
                  "return Err(ProtocolError::Truncated { needed }); }",
                  "Err(e) => return Err(e), } }")  # fmt: skip
        elif a.terminator is not None:
            framed = self.m.frame_length is not None or self.m.length_prefix is not None
            missing = ("return Err(ProtocolError::InvalidValue);" if framed
                       else self.truncated("pos + 1"))  # fmt: skip
            c("loop {", f"if pos >= {end} {{ {missing} }}",
              f"if data[pos] == {lit(a.terminator)} {{ pos += 1; break; }}")  # fmt: skip
            self.decode_element(c, a.element, "item", owner, a.name, end)
            c("items.push(item); }")
        elif a.count_rest:
            c(f"while pos < {end} {{")
            self.decode_element(c, a.element, "item", owner, a.name, end)
            c("items.push(item); }")
        else:
            if a.byte_length_prefix is not None:
                self.read_size(c, a.byte_length_prefix, "length", end, where)
            else:
                assert a.byte_length_expr is not None
                c(f"let length: i128 = {self.expr(a.byte_length_expr, 'decode', {}, where)};")
            c("if length < 0 { return Err(ProtocolError::InvalidValue); }",
              f"if length > ({end} - pos) as i128 {{ {self.truncated('pos as i128 + length')} }}",
              "let stop = pos + length as usize;",
              "let decode_one = |mut pos: usize| {")  # fmt: skip
            self.decode_element(c, a.element, "item", owner, a.name, "stop")
            c("Ok::<_, ProtocolError>((item, pos)) };",
              "while pos < stop {",
              "match decode_one(pos) {",
              "Ok((item, next)) => { items.push(item); pos = next; }",
              "Err(ProtocolError::Truncated { .. }) => return Err(ProtocolError::InvalidValue),",
              "Err(e) => return Err(e), } }")  # fmt: skip
        if a.min_count:
            short = "items.is_empty()" if a.min_count == 1 else f"items.len() < {a.min_count}"
            c(f"if {short} {{ return Err(ProtocolError::InvalidValue); }}")
        c(f"let {name} = items;")

    def decode_value(self, c: Code, s: object, name: str, owner: str, end: str) -> None:
        if isinstance(s, FloatStep):
            raise refuse(self.m, "a float behind a condition", f"{owner}.{s.name}")
        if isinstance(s, IntStep):
            if s.value.peek:
                raise refuse(self.m, "peeked integers", f"{owner}.{s.value.name}")
            self.read_int(c, s.value.type, name, end, f"{owner}.{s.value.name}")
            self.check_int(c, s.value, name, owner)
        elif isinstance(s, ArrayStep):
            self.decode_array(c, s, name, owner, end)
        elif isinstance(s, RefStep):
            c(f"let ({name}, next) = decode_{fn(s.target)}(data, pos, {end}, ctx)?;", "pos = next;")
        else:
            assert isinstance(s, BytesStep)
            self.decode_bytes(c, s, name, owner, end)

    def decode_step(self, c: Code, item: ItemStep, owner: str, si: int) -> None:
        s = item.step
        if isinstance(s, FixedRun):
            self.decode_run(c, s, owner, si)
            return
        name = var(item.name)
        if not item.optional:
            self.decode_value(c, s, name, owner, "end")
            return
        if item.flag is not None:
            test = f"flags & {lit(item.mask)} != 0"
        elif item.bit is not None:
            test = var(item.bit)
        else:
            assert item.when is not None
            test = self.cond(item.when, "decode", {}, self.current_ints, f"{owner}.{item.name}")
        c(f"let {name} = if {test} {{")
        self.decode_value(c, s, name, owner, "end")
        c(f"Some({name}) }} else {{ None }};")

    def attr_value(self, a: AttrPlan) -> str:
        if a.kind == "bool":
            return f"flags & {lit(a.flag_mask)} != 0"
        return var(a.name)

    def construct(self, rec: RecordPlan) -> str:
        fields = ", ".join(f"{ident(a.name)}: {self.attr_value(a)}" for a in rec.attrs)
        name = type_name(rec.name) if id(rec) in self.frame_ids else rec.name
        return f"{name} {{ {fields} }}"

    # --- encoding ---

    def check_range(self, c: Code, v: IntPlan, value: str) -> None:
        test = self.out_of_range(value, v, rust_range(value_rust(v)))
        if test:
            c(f"if {test} {{ return Err(ProtocolError::EncodeError); }}")

    def int_source(self, v: IntPlan, values: dict[str, str]) -> str:
        if v.const is not None:
            return f"{lit(v.const)}_{value_rust(v)}"
        if v.name in values:
            return values[v.name]
        src = f"self.{ident(v.name)}"
        if v.enum is not None:
            return f"({src} as {value_rust(v)})"
        return src

    def encode_run(self, c: Code, run: FixedRun, owner: str, values: dict[str, str]) -> None:
        for u in run.units:
            if u.kind == "float":
                assert u.float is not None
                src = values.get(u.float.name, f"self.{ident(u.float.name)}")
                itype = IntType(f"u{u.float.bits}", u.float.bits, False, u.float.bits // 8,
                                little=u.float.little)  # fmt: skip
                c(write_int(itype, f"{src}.to_bits()"))
            elif u.kind == "int":
                assert u.value is not None and u.type is not None
                src = self.int_source(u.value, values)
                if u.value.const is None and not src[0].isdigit():
                    c(f"let i = {unparen(src)};")
                    self.check_range(c, u.value, "i")
                    src = "i"
                c(write_int(u.type, src))
            else:
                assert u.type is not None
                wtype = itype_rust(u.type)
                parts = []
                for b in u.bits:
                    if b.kind == "reserved":
                        continue
                    if b.kind == "flags":
                        src = "flags" if self.flags_type() == wtype else f"({wtype}::from(flags))"
                    else:
                        assert b.value is not None
                        if b.value.boolean:
                            one = f"{lit(1 << b.shift)}"
                            parts.append(
                                f"(if {self.int_source(b.value, values)} {{ {one} }} else {{ 0 }})"
                            )
                            continue
                        src = self.int_source(b.value, values)
                        if src[0].isdigit():  # a constant or a code: typed as the word
                            src = src.rsplit("_", 1)[0] + "_" + wtype
                            parts.append(f"({src} << {b.shift})" if b.shift else src)
                            continue
                        if b.value.const is None:
                            tmp = f"b{u.offset}_{b.shift}"
                            c(f"let {tmp} = {unparen(src)};")
                            self.check_range(c, b.value, tmp)
                            src = tmp
                        if value_rust(b.value) != wtype:
                            src = f"({src} as {wtype})"
                    parts.append(f"({src} << {b.shift})" if b.shift else src)
                word = " | ".join(parts) if parts else "0"
                c(f"let word: {wtype} = {unparen(word)};", write_int(u.type, "word"))

    def write_size(self, c: Code, itype: IntType, value: str) -> None:
        if itype.size is None and itype.flavour not in _VAR_READ:
            raise refuse(self.m, f"the variable-length integer {itype.name}")
        rtype = itype_rust(itype)
        c(f"let size = {value} as u64;")
        if itype.max < 2**64 - 1:
            c(f"if size > {lit(itype.max)} {{ return Err(ProtocolError::EncodeError); }}")
        c(write_int(itype, "size" if rtype == "u64" else f"size as {rtype}"))

    def encode_bytes(self, c: Code, b: BytesStep, value: str, values: dict[str, str],
                     where: str) -> None:  # fmt: skip
        if b.nullable:
            assert b.length is not None
            null = (
                "w.push(0xFB);"  # a length-encoded integer's NULL
                if b.length.flavour == "lenenc"
                else write_int(b.length, "-1_" + itype_rust(b.length))
            )
            c(f"match {value} {{ None => {{ {null} }} Some(v) => {{")
            value = "v"
        if b.forbid:
            c(f"let checked = {value};")
            self.check_forbid(c, b, "checked", "EncodeError")
        raw = f"{value}.as_bytes()" if b.string else value
        c(f"let raw: &[u8] = {raw};")
        if b.terminator is not None:
            c(f"if raw.contains(&{lit(b.terminator)}) {{ return Err(ProtocolError::EncodeError); }}",
              "w.extend_from_slice(raw);", f"w.push({lit(b.terminator)});")  # fmt: skip
        elif b.rest or b.length_derived:
            c("w.extend_from_slice(raw);")
        elif b.size is not None and b.length is not None:
            c(f"let n: i128 = {self.expr(b.size, 'encode', values, where)};", "if n <= 0 {")
            self.write_size(c, b.length, "raw.len()")
            c("} else if raw.len() as i128 != n { return Err(ProtocolError::EncodeError); }",
              "w.extend_from_slice(raw);")  # fmt: skip
        elif b.size is not None:
            c(f"if raw.len() as i128 != {self.expr(b.size, 'encode', values, where)} {{ "
              "return Err(ProtocolError::EncodeError); }",
              "w.extend_from_slice(raw);")  # fmt: skip
        else:
            assert b.length is not None
            self.write_size(c, b.length, "raw.len()")
            c("w.extend_from_slice(raw);")
        if b.nullable:
            c("} }")

    def encode_element(self, c: Code, a: ArrayStep, values: dict[str, str], owner: str) -> None:
        e = a.element
        if e.fixed_size is not None:
            assert e.bytes is not None
            raw = "item.as_bytes()" if e.bytes.string else "item"
            c(f"let raw: &[u8] = {raw};",
              "if raw.len() as i128 != elem_size { return Err(ProtocolError::EncodeError); }",
              "w.extend_from_slice(raw);")  # fmt: skip
        elif e.kind == "int":
            assert e.value is not None
            src = f"(*item as {value_rust(e.value)})" if e.value.enum else "*item"
            c(f"let i = {unparen(src)};")
            self.check_range(c, e.value, "i")
            c(write_int(e.value.type, "i"))
        elif e.kind == "bytes":
            assert e.bytes is not None
            self.encode_bytes(c, e.bytes, "item", values,
                              f"{owner}.{a.name}")  # fmt: skip
        else:
            c("item.write(w, ctx)?;")

    def encode_array(self, c: Code, a: ArrayStep, value: str, owner: str,
                     values: dict[str, str]) -> None:  # fmt: skip
        where = f"{owner}.{a.name}"
        c("{")
        if not a.byte_length_derived:
            c(f"let items = &{value};")
        if a.element.fixed_size is not None and not a.byte_length_derived:
            c(f"let elem_size: i128 = {self.expr(a.element.fixed_size, 'encode', values, where)};")
        if a.min_count:
            short = f"{value}.is_empty()" if a.min_count == 1 else f"{value}.len() < {a.min_count}"
            c(f"if {short} {{ return Err(ProtocolError::EncodeError); }}")
        if a.count_prefix is not None:
            self.write_size(c, a.count_prefix, "items.len()")
        elif a.count_expr is not None and not a.count_derived:
            c(f"if items.len() as i128 != {self.expr(a.count_expr, 'encode', values, where)} {{ "
              "return Err(ProtocolError::EncodeError); }")  # fmt: skip
        if a.terminator is not None:
            c("for item in items.iter() {", "let mut one = Vec::new();", "{ let w = &mut one;")
            self.encode_element(c, a, values, owner)
            c("}",
              f"if one.first().is_none_or(|&b| b == {lit(a.terminator)}) {{ "
              "return Err(ProtocolError::EncodeError); }",
              "w.extend_from_slice(&one); }", f"w.push({lit(a.terminator)});")  # fmt: skip
        elif a.byte_length_derived:
            c(f"w.extend_from_slice(&raw_{a.name});")
        elif a.byte_length_prefix is not None:
            c("let mut sub = Vec::new();", "{ let w = &mut sub;", "for item in items.iter() {")
            self.encode_element(c, a, values, owner)
            c("} }")
            self.write_size(c, a.byte_length_prefix, "sub.len()")
            c("w.extend_from_slice(&sub);")
        else:
            c("for item in items.iter() {")
            self.encode_element(c, a, values, owner)
            c("}")
        c("}")

    def encode_value(self, c: Code, s: object, value: str, owner: str,
                     values: dict[str, str]) -> None:  # fmt: skip
        if isinstance(s, IntStep):
            c(f"let i = {unparen(value)};")
            if not value.lstrip("(").startswith(tuple("0123456789-")):
                self.check_range(c, s.value, "i")
            c(write_int(s.value.type, "i"))
        elif isinstance(s, ArrayStep):
            self.encode_array(c, s, value, owner, values)
        elif isinstance(s, RefStep):
            c(f"{value}.write(w, ctx)?;")
        else:
            assert isinstance(s, BytesStep)
            self.encode_bytes(c, s, value, values, f"{owner}.{s.name}")

    def encode_steps(self, c: Code, steps: list[ItemStep], owner: str,
                     values: dict[str, str]) -> None:  # fmt: skip
        bits_seen: dict[str, str] = {}
        more_seen: list[str] = []
        for item in steps:
            s = item.step
            if isinstance(s, FixedRun):
                self.encode_run(c, s, owner, values)
                continue
            if isinstance(s, IntStep) and s.value.peek:
                continue  # the body's first byte, peeked: the body writes it
            if isinstance(s, IntStep) and s.value.const is not None:
                if item.optional:  # written when its condition holds
                    c(f"if {self.present(item, owner, values)} {{")
                self.encode_value(c, s, f"{lit(s.value.const)}_{value_rust(s.value)}", owner,
                                  values)  # fmt: skip
                if item.optional:
                    c("}")
                continue
            if isinstance(s, IntStep) and s.value.name in values:
                self.encode_value(c, s, values[s.value.name], owner, values)
                continue
            value = f"self.{ident(item.name)}"
            if isinstance(s, IntStep) and s.value.enum is not None:
                value = f"({value} as {value_rust(s.value)})"
            if item.optional:
                field_ref = f"self.{ident(item.name)}"
                if item.more:
                    for earlier in more_seen:
                        c(f"if {field_ref}.is_some() && self.{ident(earlier)}.is_none() {{ "
                          "return Err(ProtocolError::EncodeError); }")  # fmt: skip
                    if (isinstance(s, BytesStep) and s.rest) or (
                            isinstance(s, ArrayStep) and s.count_rest):  # fmt: skip
                        c(f"if {field_ref}.as_ref().is_some_and(|v| v.is_empty()) {{ "
                          "return Err(ProtocolError::EncodeError); }")  # fmt: skip
                    more_seen.append(item.name)
                elif item.when is not None:
                    test = self.cond(item.when, "encode", values, self.current_ints,
                                     f"{owner}.{item.name}")  # fmt: skip
                    c(f"if ({test}) != {field_ref}.is_some() {{ "
                      "return Err(ProtocolError::EncodeError); }")  # fmt: skip
                if item.bit is not None:
                    first = bits_seen.setdefault(item.bit, item.name)
                    if first != item.name:
                        c(f"if self.{ident(item.name)}.is_some() != self.{ident(first)}.is_some() {{"
                          " return Err(ProtocolError::EncodeError); }")  # fmt: skip
                c(f"if let Some(v) = &self.{ident(item.name)} {{")
                inner = "*v" if isinstance(s, IntStep) else "v"
                if isinstance(s, IntStep) and s.value.enum is not None:
                    inner = f"(*v as {value_rust(s.value)})"
                self.encode_value(c, s, inner, owner, values)
                c("}")
            else:
                if isinstance(s, BytesStep) and not s.nullable:
                    value = f"self.{ident(item.name)}"
                self.encode_value(c, s, value, owner, values)

    def present(self, item: ItemStep, owner: str, values: dict[str, str]) -> str:
        """The test, when encoding, that an optional item without an attribute (a constant)
        is there."""
        if item.flag is not None:
            return f"flags & {lit(item.mask)} != 0"
        if item.bit is not None:
            return values.get(item.bit, f"self.{ident(item.bit)}")
        assert item.when is not None
        if item.more:
            raise refuse(self.m, "a constant present while bytes remain", f"{owner}.{item.name}")
        return self.cond(item.when, "encode", values, self.current_ints, f"{owner}.{item.name}")

    def derivations(self, c: Code, rec: RecordPlan, values: dict[str, str]) -> None:
        for d in rec.derivations:
            src = f"self.{ident(d.source)}"
            target = self.find_int(rec, d.target)
            rtype = value_rust(target)
            if d.kind == "presence":
                values[d.target] = f"{src}.is_some()"
                continue
            if d.kind == "bytes_length":
                measure = f"{src}.len()"
            elif d.kind == "count":
                measure = f"{src}.len()"
            else:
                assert d.array is not None
                if d.array.element.fixed_size is not None:
                    size = self.expr(d.array.element.fixed_size, "encode", values, rec.name)
                    c(f"let elem_size: i128 = {size};")
                c(f"let mut raw_{d.source} = Vec::new();", f"{{ let w = &mut raw_{d.source};",
                  f"for item in {src}.iter() {{")  # fmt: skip
                self.encode_element(c, d.array, values, rec.name)
                c("} }")
                measure = f"raw_{d.source}.len()"
            c(f"let d_{d.target} = {measure};",
              f"if d_{d.target} as u128 > {lit(target.hi)} {{ return Err(ProtocolError::EncodeError); }}",
              f"let d_{d.target} = d_{d.target} as {rtype};")  # fmt: skip
            values[d.target] = f"d_{d.target}"

    def find_int(self, rec: RecordPlan, name: str) -> IntPlan:
        for item in rec.steps:
            s = item.step
            if isinstance(s, FixedRun):
                for u in s.units:
                    if u.value is not None and u.value.name == name:
                        return u.value
                    for b in u.bits:
                        if b.value is not None and b.value.name == name:
                            return b.value
            elif isinstance(s, IntStep) and s.value.name == name:
                return s.value
        raise refuse(self.m, f"a derived value {name!r} outside its record", rec.name)

    # --- the records ---

    def struct_def(self, c: Code, rec: RecordPlan, extra: list[str] | None = None) -> None:
        c(*doc_lines(rec.doc or f"The {rec.name} record."))
        c("#[derive(Debug, Clone, PartialEq)]", f"pub struct {self.rec_type(rec)} {{")
        for a in rec.attrs:
            c(*doc_lines(a.doc))
            c(f"pub {ident(a.name)}: {self.attr_type(a)},")
        c(*(extra or []))
        c("}")

    def decode_struct(self, c: Code, rec: RecordPlan) -> None:
        c("#[allow(unused_mut, unused_variables)]",
          f"fn decode_{fn(rec.name)}{self.gen(rec)}(data: {self.data(rec)}, mut pos: usize, end: usize, ctx: Option<&Context>) -> "
          f"Result<({self.rec_type(rec)}, usize), ProtocolError> {{")  # fmt: skip
        self.current_ints = self.rec_ints(rec)
        for si, item in enumerate(rec.steps):
            self.decode_step(c, item, rec.name, si)
        self.rules(c, rec, "decode", {})
        c(f"Ok(({self.construct(rec)}, pos))", "}")

    def rules(self, c: Code, rec: RecordPlan, scope: str, values: dict[str, str]) -> None:
        error = "RuleViolation" if scope == "decode" else "EncodeError"
        for r in rec.rules:
            test = self.cond(r.check, scope, values, self.current_ints, rec.name)
            c(f"if !({test}) {{ return Err(ProtocolError::{error}); }}")

    def write_struct(self, c: Code, rec: RecordPlan) -> None:
        life = "<'a>" if self.record_borrows_attrs(rec) else ""
        c(f"impl{life} {self.rec_type(rec)} {{",
          "#[allow(unused_variables)] fn write(&self, w: &mut Vec<u8>, ctx: Option<&Context>) -> Result<(), ProtocolError> {")  # fmt: skip
        values: dict[str, str] = {}
        self.current_ints = self.rec_ints(rec)
        self.derivations(c, rec, values)
        self.rules(c, rec, "encode", values)
        self.encode_steps(c, rec.steps, rec.name, values)
        c("Ok(())", "}", "}")

    def union_def(self, c: Code, u: UnionPlan) -> None:
        c(*doc_lines(u.doc or f"The {u.name} union."))
        life = "<'a>" if self.record_borrows(u.name) else ""
        c("#[derive(Debug, Clone, PartialEq)]", f"pub enum {u.name}{life} {{")
        for _, name in u.variants:
            c(f"{name}({self.named(name)}),")
        c("}")
        if u.peek.size is None:
            raise refuse(self.m, "a union peeking a variable-length integer", u.name)
        borrows = self.record_borrows(u.name)
        c(f"fn decode_{fn(u.name)}{'<' + chr(39) + 'a>' if borrows else ''}(data: &{chr(39) + 'a ' if borrows else ''}[u8], pos: usize, end: usize, ctx: Option<&Context>) -> "
          f"Result<({self.named(u.name)}, usize), ProtocolError> {{",
          f"if end - pos < {u.peek.size} {{ {self.truncated(f'pos + {u.peek.size}')} }}",
          f"let tag = {read_at(u.peek, 'pos')} & {lit(u.mask)};",
          "match tag {")  # fmt: skip
        for tag, name in u.variants:
            c(f"{lit(tag)} => {{ let (v, next) = decode_{fn(name)}(data, pos, end, ctx)?; "
              f"Ok(({u.name}::{name}(v), next)) }}")  # fmt: skip
        c("_ => Err(ProtocolError::InvalidValue),", "}", "}")
        c(f"impl{life} {u.name}{life} {{",
          "#[allow(unused_variables)] fn write(&self, w: &mut Vec<u8>, ctx: Option<&Context>) -> Result<(), ProtocolError> {", "match self {")  # fmt: skip
        for _, name in u.variants:
            c(f"{u.name}::{name}(v) => v.write(w, ctx),")
        c("}", "}", "}")

    def frame_hdr_params(self, startup: bool = False) -> str:
        if startup:
            assert self.m.startup is not None
            return "".join(
                f", {var(v.name)}: {value_type(v)}" for v in self.m.startup.header_values
            )
        params = "".join(f", {var(v.name)}: {value_type(v)}" for v in self.m.header_values)
        if self.m.has_flags:
            params += f", flags: {self.flags_type()}"
        return params

    def frame_hdr_args(self, startup: bool = False) -> str:
        if startup:
            assert self.m.startup is not None
            return "".join(f", {var(v.name)}" for v in self.m.startup.header_values)
        args = "".join(f", {var(v.name)}" for v in self.m.header_values)
        return args + (", flags" if self.m.has_flags else "")

    def decode_frame_fn(self, c: Code, f: RecordPlan) -> None:
        c("#[allow(unused_mut, unused_variables)]",
          f"fn decode_{fn(f.name)}{self.gen(f)}(data: {self.data(f)}, mut pos: usize, end: usize, ctx: Option<&Context>"
          f"{self.frame_hdr_params(f.startup)}) -> Result<({self.rec_type(f)}, usize), ProtocolError> {{")  # fmt: skip
        self.current_ints = self.rec_ints(f)
        if f.fixed_flags is not None:
            fixed_mask = self.m.flags_max - f.named_flags_mask
            c(f"if flags & {lit(fixed_mask)} != {lit(f.fixed_flags)} {{ "
              "return Err(ProtocolError::InvalidValue); }")  # fmt: skip
        for v, mask, shift in f.flag_values:
            shifted = f"(flags & {lit(mask)}) >> {shift}" if shift else f"flags & {lit(mask)}"
            cast = "" if value_rust(v) == self.flags_type() else f" as {value_rust(v)}"
            c(f"let {var(v.name)} = {'(' + shifted + ')' + cast if cast else shifted};")
            self.check_int(c, v, var(v.name), f.name)
        for si, item in enumerate(f.steps):
            self.decode_step(c, item, f.name, si + 100)
        self.rules(c, f, "decode", {})
        c(f"Ok(({self.construct(f)}, pos))", "}")

    def code_key(self, code: tuple[int, ...]) -> int:
        if len(code) == 1:
            return code[0]
        return code[0] * 0x10000 + code[1]

    def key_type(self) -> str:
        return "u64" if not self.m.single_code or any(self.m.discriminator_big) else "u32"

    def frame_write(self, c: Code, f: RecordPlan) -> None:
        m = self.m
        life = "<'a>" if self.record_borrows_attrs(f) else ""
        c(f"impl{life} {self.rec_type(f)} {{",
          "#[allow(unused_variables)] fn write(&self, w: &mut Vec<u8>, ctx: Option<&Context>) -> Result<(), ProtocolError> {")  # fmt: skip
        values: dict[str, str] = {}
        head_steps = m.startup.header_steps if f.startup and m.startup else m.header_steps
        head_disc = m.startup.discriminator if f.startup and m.startup else m.discriminator
        head_length = m.startup.frame_length if f.startup and m.startup else m.frame_length
        for name, code in zip(head_disc, f.code):
            # a caller's context value, a wildcard and a peeked byte are not written here
            if name.startswith("ctx.") or code == WILDCARD:
                continue
            part = self.header_int(name, head_steps)
            if not part.peek:
                values[name] = f"{lit(code)}_{value_rust(part)}"
        if m.has_flags and not f.startup:
            ftype = self.flags_type()
            parts = [lit(f.set_flags)] if f.set_flags else []
            parts += [f"(if self.{ident(n)} {{ {lit(mask)} }} else {{ 0 }})"
                      for n, mask in f.flag_attrs]  # fmt: skip
            if f.fixed_flags:
                parts.insert(0, lit(f.fixed_flags))
            c(f"#[allow(unused_mut)] let mut flags: {ftype} = {unparen(' | '.join(parts) or '0')};")
            for _, mask, fname in f.presence:
                c(f"if self.{ident(fname)}.is_some() {{ flags |= {lit(mask)}; }}")
            for v, mask, shift in f.flag_values:
                src = f"self.{ident(v.name)}"
                if v.enum is not None:
                    src = f"({src} as {value_rust(v)})"
                c(f"let fv = {unparen(src)};")
                self.check_range(c, v, "fv")
                cast = "fv" if value_rust(v) == ftype else f"(fv as {ftype})"
                c(f"flags |= {cast}{f' << {shift}' if shift else ''};")
        self.current_ints = self.rec_ints(f)
        self.derivations(c, f, values)
        self.rules(c, f, "encode", values)
        if head_length is not None:
            fl = head_length
            # the body's bytes and strings sized up front (no regrowth while it is written),
            # and the whole frame's room reserved once the body's size is known
            sized = [f"self.{ident(a.name)}.len()" for a in f.attrs
                     if a.kind in ("bytes", "string") and not (a.optional or a.nullable)]  # fmt: skip
            c(f"let mut body = Vec::with_capacity({' + '.join(['16', *sized])});",
              "{ let w = &mut body;")  # fmt: skip
            self.encode_steps(c, f.steps, f.name, values)
            c("}", "w.reserve(body.len() + 16);")
            self.claims(c, f)
            length = self.header_int(fl.field, head_steps)
            k = fl.counted - fl.adjust
            c(f"let flen = body.len() as i128 + {k}_i128;")
            c(f"if !({lit(length.lo)}_i128..={lit(length.hi)}_i128).contains(&flen) {{ "
              "return Err(ProtocolError::EncodeError); }")  # fmt: skip
            values[fl.field] = f"(flen as {value_rust(length)})"
            self.encode_steps(c, head_steps, f.name, values)
            c("w.extend_from_slice(&body);")
        else:
            self.encode_steps(c, m.header_steps, f.name, values)
            self.encode_steps(c, f.steps, f.name, values)
        c("Ok(())", "}", "}")

    def claims(self, c: Code, f: RecordPlan) -> None:
        """A frame whose code ends in '*' takes any other first byte: its body must not begin
        with one the codes beside it take (with their ``select:``, if any), as Python's
        encoder checks."""
        if f.startup or not f.code or f.code[-1] != WILDCARD:
            return
        selects = self.select_numbers()
        args = "".join(f", self.{ident(v.name)}" for v in self.m.header_values)
        args += ", flags" if self.m.has_flags else ""
        tests = []
        for e in self.m.decoders:
            if e.code[:-1] != f.code[:-1]:
                continue
            test = f"first == {lit(e.code[-1])}"
            if e.code in selects:
                test = f"({test} && select_{selects[e.code]}(0, body.len(), ctx{args}))"
            tests.append(test)
        if tests:
            c("// a frame that takes any other first byte must not begin with one a sibling takes",
              "let first: i16 = body.first().map_or(-1, |&b| i16::from(b));",
              f"if {' || '.join(tests)} {{ return Err(ProtocolError::EncodeError); }}")  # fmt: skip

    def select_numbers(self) -> dict[tuple[int, ...], int]:
        """The frames decoded only when their ``select:`` holds: code -> its function's number."""
        return {code: n for n, (code, _, _) in enumerate(self.m.selects, start=1)}

    def select_defs(self, c: Code) -> None:
        ints = self.rec_ints(None)
        for n, (_, f, cond) in enumerate(self.m.selects, start=1):
            c(f"/// {f.name} only when {cond.text} (`pos`: after the header, `end`: the frame's).",
              "#[allow(unused_variables)]",
              f"fn select_{n}(pos: usize, end: usize, ctx: Option<&Context>{self.frame_hdr_params()}) -> bool {{",
              self.cond(cond, "decode", {}, ints, f.name), "}")  # fmt: skip

    # --- the whole crate ---

    def enum_def(self, c: Code, e: EnumPlan) -> None:
        rtype = itype_rust(e.type)
        c(*doc_lines(e.doc or f"The {e.name} values."))
        if e.open:
            c(f"/// Open: any other {rtype} is a valid value too (kept as the number).",
              f"pub mod {e.name.lower()} {{")  # fmt: skip
            for name, value in e.members:
                c(f"/// {e.name}.{name}", f"pub const {name}: {rtype} = {lit(value)};")
            c("}")
            return
        c("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]", f"#[repr({rtype})]",
          f"pub enum {e.name} {{")  # fmt: skip
        for name, value in e.members:
            c(f"#[allow(non_camel_case_types)] {name} = {lit(value)},")
        c("}", f"impl {e.name} {{", "/// The member of this code, if any.",
          f"pub fn from_code(code: {rtype}) -> Option<Self> {{", "match code {")  # fmt: skip
        for name, value in e.members:
            c(f"{lit(value)} => Some(Self::{name}),")
        c("_ => None,", "}", "}", "}")

    def table(self, c: Code, entries: list[DecoderEntry], startup: bool = False) -> None:
        selects = {} if startup else self.select_numbers()
        c("match key {")
        for e in entries:
            code = lit(self.code_key(e.code))
            if e.frame is None:
                c(f"{code} => return Err(ProtocolError::AmbiguousFrameType),")
                continue
            guard = ""
            if e.code in selects:  # only when its select: holds; else what is left
                guard = f" if select_{selects[e.code]}(pos, end, ctx{self.frame_hdr_args()})"
            c(f"{code}{guard} => {{ {self.call(e.frame, startup)} }}")
        c("_ => {}", "}")

    def call(self, frame: RecordPlan, startup: bool = False) -> str:
        """Decode ``frame`` and return it from ``decode_frame``."""
        call = f"decode_{fn(frame.name)}(data, pos, end, ctx{self.frame_hdr_args(startup)})"
        if self.m.frame_length is not None or startup:
            call = f"whole({call}, end)"
        return f"let (f, next) = {call}?; *at = next; return Ok(Frame::{frame.name}(f));"

    def header_decode(self, c: Code) -> None:
        m = self.m
        # The position after the frame goes out through `at`, not in a tuple with the
        # frame: the frame (as large as the largest frame type) is then written once, into
        # the caller's `Result<Frame>`, instead of being moved out of a tuple (measured:
        # bench/rust, python -m bench.rust_ratios).
        # `inline(always)`: inlined into its two callers (`decode_with`, `decode_at`), the
        # frame is written once, into their `Result`; called, it was written into a
        # temporary with narrow stores and copied out in 16-byte loads, which stall on
        # store forwarding (bench/rust under perf: 17.5 -> 14 ns a PAYLOAD).
        c("/// Decode one frame from `data[*at..end]`, and set `*at` to the position after it.",
          "#[allow(unused_variables)]",
          "#[inline(always)]",
          "fn decode_frame<'a>(data: &'a [u8], at: &mut usize, end: usize, ctx: Option<&Context>, "
          "sender: Option<Sender>) -> Result<Frame<'a>, ProtocolError> {",
          "let mut pos = *at;")  # fmt: skip
        self.current_ints = self.rec_ints(None)
        fl = m.frame_length
        if fl is not None and fl.back is None:
            c("let start = pos;")
        peeked = [item for item in m.header_steps
                  if isinstance(item.step, IntStep) and item.step.value.peek]  # fmt: skip
        for si, item in enumerate(m.header_steps):
            if not any(item is p for p in peeked):
                self.decode_step(c, item, "header", si)
        if fl is not None:
            base = "start" if fl.back is None else (f"pos - {fl.back}" if fl.back else "pos")
            c(f"let frame_end: i128 = ({base}) as i128 + i128::from({var(fl.field)}) + {fl.adjust}_i128;",
              "if frame_end < pos as i128 { return Err(ProtocolError::InvalidValue); }",
              f"if frame_end > end as i128 {{ {self.truncated('frame_end')} }}",
              "let end = frame_end as usize;")  # fmt: skip
        for item in peeked:  # the body's first byte, not consumed (-1: an empty body)
            assert isinstance(item.step, IntStep)
            c(f"let {var(item.step.value.name)}: i16 = if pos < end {{ i16::from(data[pos]) }} "
              "else { -1 };")  # fmt: skip
        key = self.key_type()
        parts = []
        missing = []  # peeked parts: no key (u64::MAX matches no code) when the body is empty
        for kind, name, _ in m.key_parts or [("field", n, 0) for n in m.discriminator]:
            if kind == "ctx":
                parts.append(f"{key}::from({self.ctx_value(name, 'decode', {})})")
            elif self.header_int(name).peek:
                parts.append(f"({var(name)} as {key})")
                missing.append(f"{var(name)} < 0")
            elif value_rust(self.header_int(name)) == key:
                parts.append(var(name))
            else:
                parts.append(f"{key}::from({var(name)})")
        if m.wildcards and len(parts) > 1:
            c(f"let key0: {key} = {parts[0]};")
            parts[0] = "key0"
        joined = parts[0] if len(parts) == 1 else f"{parts[0]} * 0x1_0000 + {parts[1]}"
        if missing:
            joined = f"if {' || '.join(missing)} {{ {key}::MAX }} else {{ {joined} }}"
        c(f"let key: {key} = {joined};")
        if m.sender_tables:
            c("match sender {", "None => {")
            self.table(c, m.decoders)
            c("}", "Some(Sender::Client) => {")
            self.table(c, m.by_sender["client"])
            c("}", "Some(Sender::Server) => {")
            self.table(c, m.by_sender["server"])
            c("}", "}")
        else:
            self.table(c, m.decoders)
        if m.wildcards:  # frames whose code ends in "*": any other value of the code's last part
            if len(m.discriminator) == 1:
                c(self.call(m.wildcards[0][1]))
            else:
                c("match key0 {")
                for prefix, f in m.wildcards:
                    c(f"{lit(self.code_key(prefix))} => {{ {self.call(f)} }}")
                c("_ => {}", "}")
        header_fields = "".join(f"{ident(v.name)}: {var(v.name)}, " for v in m.header_values)
        code = "key" if m.single_code else "[" + ", ".join(parts) + "]"
        flags = "flags, " if m.has_flags else ""
        if m.unknown == "ignore_if_flag":
            c(f"if flags & {lit(m.unknown_flag_mask)} != 0 {{",
              f"*at = end; Ok(Frame::UnknownFrame(UnknownFrame {{ code: {code}, {header_fields}{flags}"
              "body: &data[pos..end] }))",
              "} else { Err(ProtocolError::UnknownFrameType) }")  # fmt: skip
        elif m.unknown == "skip_length":
            assert m.unknown_length is not None
            self.read_size(c, m.unknown_length, "length", "end", "UnknownFrame.body")
            c(f"if length > (end - pos) as i128 {{ {self.truncated('pos as i128 + length')} }}",
              "let length = length as usize;",
              f"*at = pos + length; Ok(Frame::UnknownFrame(UnknownFrame {{ code: {code}, "
              f"{header_fields}{flags}body: &data[pos..pos + length] }}))")  # fmt: skip
        else:
            c("Err(ProtocolError::UnknownFrameType)")
        c("}")

    def startup_decode(self, c: Code) -> None:
        m = self.m
        st = m.startup
        if st is None:
            return
        c("#[allow(unused_variables)]",
          "fn decode_startup_frame<'a>(data: &'a [u8], at: &mut usize, end: usize, "
          "ctx: Option<&Context>) -> Result<Frame<'a>, ProtocolError> {",
          "let mut pos = *at;")  # fmt: skip
        fl = st.frame_length
        if fl.back is None:
            c("let start = pos;")
        for si, item in enumerate(st.header_steps):
            self.decode_step(c, item, "startup", si)
        base = "start" if fl.back is None else (f"pos - {fl.back}" if fl.back else "pos")
        c(f"let frame_end: i128 = ({base}) as i128 + i128::from({var(fl.field)}) + {fl.adjust}_i128;",
          "if frame_end < pos as i128 { return Err(ProtocolError::InvalidValue); }",
          f"if frame_end > end as i128 {{ {self.truncated('frame_end')} }}",
          "let end = frame_end as usize;")  # fmt: skip
        key = "u64"
        parts = [f"u64::from({var(n)})" for n in st.discriminator]
        joined = parts[0] if len(parts) == 1 else f"{parts[0]} * 0x1_0000 + {parts[1]}"
        c(f"let key: {key} = {joined};")
        self.table(c, st.decoders, startup=True)
        c("Err(ProtocolError::UnknownFrameType)", "}")

    def unknown_def(self, c: Code) -> None:
        m = self.m
        if m.unknown == "error":
            return
        key = self.key_type()
        code = key if m.single_code else f"[{key}; {len(m.discriminator)}]"
        c("/// A frame of a type this version does not define, kept so nothing is lost.",
          "#[derive(Debug, Clone, PartialEq)]", "pub struct UnknownFrame<'a> {",
          "/// The unknown type code.", f"pub code: {code},")  # fmt: skip
        for v in m.header_values:
            c(*doc_lines(v.doc), f"pub {ident(v.name)}: {value_type(v)},")
        if m.has_flags:
            c("/// All flag bits as received.", f"pub flags: {self.flags_type()},")
        c("/// The frame's bytes after the header.", "pub body: &'a [u8],", "}")
        c("impl UnknownFrame<'_> {",
          "#[allow(unused_variables)] fn write(&self, w: &mut Vec<u8>, ctx: Option<&Context>) -> Result<(), ProtocolError> {")  # fmt: skip
        values: dict[str, str] = {}
        for index, name in enumerate(m.discriminator):
            src = "self.code" if m.single_code else f"self.code[{index}]"
            part = self.header_int(name)
            rtype = value_rust(part)
            c(f"let k{index} = {src};",
              f"if k{index} > {lit(part.hi)} {{ return Err(ProtocolError::EncodeError); }}")  # fmt: skip
            values[name] = f"(k{index} as {rtype})"
        if m.has_flags:
            c("let flags = self.flags;")
            if (1 << int(self.flags_type()[1:])) - 1 != m.flags_max:
                c(f"if flags > {lit(m.flags_max)} {{ return Err(ProtocolError::EncodeError); }}")
        self.encode_steps(c, m.header_steps, "UnknownFrame", values)
        if m.unknown == "skip_length":
            assert m.unknown_length is not None
            self.write_size(c, m.unknown_length, "self.body.len()")
        c("w.extend_from_slice(self.body);", "Ok(())", "}", "}")

    def whole_def(self, c: Code) -> None:
        if self.m.frame_length is None and self.m.startup is None:
            return
        c("/// A frame whose header says how long it is: all of it is there, so a field that runs",
          "/// past it is malformed (InvalidValue, not Truncated), and its body must fill it.",
          "fn whole<T>(decoded: Result<(T, usize), ProtocolError>, end: usize) "
          "-> Result<(T, usize), ProtocolError> {",
          "match decoded {",
          "Ok((_, next)) if next != end => Err(ProtocolError::TrailingBytes),",
          "Ok(found) => Ok(found),",
          "Err(ProtocolError::Truncated { .. }) => Err(ProtocolError::InvalidValue),",
          "Err(error) => Err(error), } }")  # fmt: skip

    def context_def(self, c: Code) -> None:
        m = self.m
        c("/// Values negotiated on a connection that frame layouts depend on.",
          "#[derive(Debug, Clone, PartialEq, Eq)]", "pub struct Context {")  # fmt: skip
        for plan in m.context:
            key, value = self.ctx_types(plan)
            kind = f"alloc::collections::BTreeMap<{key}, {value}>" if key else value
            c(*doc_lines(plan.doc), f"pub {ident(plan.name)}: {kind},")
        c("}", "impl Default for Context {", "fn default() -> Self {", "Context {")
        for plan in m.context:
            key, value = self.ctx_types(plan)
            init = "alloc::collections::BTreeMap::new()" if key else f"{lit(plan.default)}_{value}"
            c(f"{ident(plan.name)}: {init},")
        c("}", "}", "}")
        c("/// Keep `ctx` in step with the frames of one direction: call it with each frame in",
          "/// stream order, after it is decoded (or encoded) and before the next one is.",
          "#[allow(unused_variables)]",
          "pub fn track_context(frame: &Frame<'_>, ctx: &mut Context) {",
          "match frame {")  # fmt: skip
        frames = {f.name: f for f in m.frames}
        for frame_name, actions in [(n, acts) for names, acts in m.tracking for n in names]:
            c(f"Frame::{frame_name}(frame) => {{")
            ints = self.rec_ints(frames[frame_name])

            def src(name: str) -> str:
                v = ints.get(name)
                if v is not None and v.enum is not None:
                    return f"(frame.{ident(name)} as {value_rust(v)})"
                return f"frame.{ident(name)}"

            for a in actions:
                target = f"ctx.{ident(a.value.name)}"
                _, value = self.ctx_types(a.value)
                default = f"{lit(a.value.default)}_{value}"
                if a.kind == "set" and a.value.keyed_by:
                    key = src(a.value.keyed_by)
                    c(f"if {src(a.field)} != {default} {{",
                      f"{target}.insert({key}, {src(a.field)});",
                      f"}} else {{ {target}.remove(&{key}); }}")  # fmt: skip
                elif a.kind == "set":
                    c(f"{target} = {unparen(src(a.field))};")
                elif a.value.keyed_by:
                    c(f"{target}.remove(&{src(a.value.keyed_by)});")
                else:
                    c(f"{target} = {default};")
            c("}")
        c("_ => {}", "}", "}")

    def header_int(self, name: str, steps: list[ItemStep] | None = None) -> IntPlan:
        for item in self.m.header_steps if steps is None else steps:
            s = item.step
            if isinstance(s, FixedRun):
                for u in s.units:
                    if u.value is not None and u.value.name == name:
                        return u.value
                    for b in u.bits:
                        if b.value is not None and b.value.name == name:
                            return b.value
            elif isinstance(s, IntStep) and s.value.name == name:
                return s.value
        raise refuse(self.m, f"the header value {name!r}")

    def render(self) -> str:
        m = self.m
        c = Code()
        for e in m.enums:
            self.enum_def(c, e)
        for s in m.structs:
            self.struct_def(c, s)
            self.decode_struct(c, s)
            self.write_struct(c, s)
        for u in m.unions:
            self.union_def(c, u)
        for f in m.frames:
            self.struct_def(c, f)
            self.decode_frame_fn(c, f)
            self.frame_write(c, f)
        self.unknown_def(c)
        self.context_def(c)
        self.whole_def(c)
        self.select_defs(c)
        self.header_decode(c)
        self.startup_decode(c)
        return c.text()


def rustfmt(source: str) -> str:
    """``source`` laid out by rustfmt (the generated code is committed formatted)."""
    exe = shutil.which("rustfmt")
    if exe is None:
        raise RuntimeError("Rust target: rustfmt is needed to lay out the generated code")
    done = subprocess.run([exe, "--edition", EDITION, "--emit", "stdout", "--quiet"],
                          input=source, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"Rust target: rustfmt refused the generated code:\n{done.stderr}")
    return done.stdout


def crate_name(plan: CodecPlan) -> str:
    return f"wirestream-{plan.protocol.replace('_', '-')}-{plan.version.replace('_', '-')}"


def render_crate(plan: CodecPlan, machines: str | None = None) -> dict[str, str]:
    """The files of one protocol version's crate, relative to the crate's folder;
    ``machines``: the source of its ``machines`` module, if it has machines."""
    sp = Spell(plan)
    body = sp.render()
    lib = _ENV.get_template("lib.rs.j2").render(
        m=plan, body=body, lit=lit, sp=sp, machines=machines is not None
    )
    files = {
        "Cargo.toml": _ENV.get_template("Cargo.toml.j2").render(
            name=crate_name(plan), m=plan, runtime=RUNTIME_CRATE, edition=EDITION
        ),
        "src/lib.rs": rustfmt(lib),
    }
    if machines is not None:
        files["src/machines.rs"] = rustfmt(machines)
    return files
