"""The Python target: spells the language-neutral plan (``plan.py``) in Python.

Everything that decides *what* the code does is in the plan; this module only holds the
spelling the templates in ``templates/python/`` need, as ``typescript_target`` does for
TypeScript: names, literals, ``struct`` format codes (each run of fixed-size fields is
read and written with one precompiled ``struct.Struct``), type annotations, defaults,
size expressions and hypothesis strategies. The templates lay the code out:

- decoding reads a ``data: bytes`` between ``pos`` and ``end``;
- encoding appends ``bytes`` parts to ``out`` and joins them once;
- every bound the peer controls (lengths, counts) is checked against the bytes that
  are actually there before anything is sliced or allocated.

``render_codec`` and ``render_strategies`` return the unformatted modules; ``render``
formats them with black.
"""

from __future__ import annotations

from pathlib import Path

import ast
import io
import re
import struct
import tokenize
from typing import NamedTuple

import jinja2

from wirestream.codegen.targets.jinja import environment
from wirestream.codegen.frontend.model import Cond, IntType
from wirestream.codegen.plan.codec import (
    ArrayStep,
    AttrPlan,
    BytesStep,
    CodecPlan,
    CondPlan,
    ContextPlan,
    DecoderEntry,
    ElementPlan,
    ExprPlan,
    FixedRun,
    FloatPlan,
    FrameLengthPlan,
    IntPlan,
    layout_fingerprint,
    lower_snake,
)
from wirestream.codegen.targets.python.tidy import LINE_LENGTH

STRUCT_CODES = {"u8": "B", "u16": "H", "u24": "BH", "u32": "I", "u64": "Q",
                "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u16le": "H", "u24le": "HB",
                "u32le": "I", "u64le": "Q", "i16le": "h", "i32le": "i", "i64le": "q"}  # fmt: skip
STRATEGY_MAX_BYTES = 24
STRATEGY_MAX_ITEMS = 3

INT_LITERAL = re.compile(r"-?(0x[0-9a-fA-F]+|[0-9]+)")


# --- names and literals ----------------------------------------------------------------


def literal(value: int) -> str:
    """An integer literal: hex above 9."""
    return hex(value) if value > 9 else str(value)


def is_literal(source: str) -> bool:
    return INT_LITERAL.fullmatch(source) is not None


def int_value(source: str) -> int:
    """The value of an integer literal (``is_literal``)."""
    return int(source, 0)


def hex_bytes(data: bytes) -> str:
    """``data`` as a ``bytes`` literal of ``\\xNN`` escapes (wire bytes read as bytes)."""
    return 'b"' + "".join(f"\\x{byte:02x}" for byte in data) + '"'


def packed(value: int, itype: IntType) -> str:
    """The bytes of ``value`` as ``itype`` on the wire, as a ``bytes`` literal: a
    constant the generator packs once rather than the encoder at every call."""
    if itype.name in ("u24", "u24le"):
        data = value.to_bytes(3, "little" if itype.little else "big", signed=False)
    else:
        data = struct.pack(("<" if itype.little else ">") + int_format(itype), value)
    return hex_bytes(data)


def pack_literals(args: list[str], fmt: str, little: bool) -> str:
    """The bytes of a run of constants (integer literals) as a ``bytes`` literal."""
    return hex_bytes(struct.pack(("<" if little else ">") + fmt, *(int_value(a) for a in args)))


def fold_head(head: str, body: str) -> str:
    """A frame's header steps (``head``, writing to ``out``) and the return of the
    header followed by ``body``: when the header is one ``out.append(X)`` after its
    checks, ``return X + body`` (one concatenation, no second list and join)."""
    lines = head.rstrip("\n").split("\n")
    appends = [n for n, line in enumerate(lines) if "out.append(" in line]
    last = lines[-1]
    if appends == [len(lines) - 1] and last.startswith("out.append(") and last.endswith(")"):
        return "\n".join([*lines[:-1], f"return {last[len('out.append('):-1]} + {body}"]) + "\n"
    return f'out = []\n{head.rstrip()}\nout.append({body})\nreturn b"".join(out)\n'


def braced(source: str) -> str:
    """``source`` as an f-string replacement field."""
    return "{" + source + "}"


def part(var: str, stem: str) -> str:
    """A temporary named after ``var``: ``part("v_size", "hi")`` -> ``_hi_size``."""
    return f"_{stem}_{var.removeprefix('v_').lstrip('_')}"


def doc_lines(text: str) -> list[str]:
    """A docstring's lines: no ``\"\"\"`` inside, backslashes kept as written."""
    return [
        line.rstrip().replace('"""', "'''").replace("\\", "\\\\")
        for line in text.strip().splitlines()
    ]


def code_key(code: tuple[int, ...]) -> str:
    """A frame code as a ``FrameType`` value: an int, or a tuple of the parts."""
    if len(code) == 1:
        return literal(code[0])
    return "(" + ", ".join(literal(c) for c in code) + ")"


def table_key(entry: DecoderEntry) -> str:
    """A decoder table's key: the ``FrameType`` member's value for the frame's own code,
    else (``also_codes``) the code."""
    if entry.own and entry.frame is not None:
        return f"FrameType.{entry.frame.member}.value"
    return code_key(entry.code)


def dict_entry(key: str, value: str, indent: int) -> str:
    """A dict entry; its value in parentheses when the line would be too long, since black
    splits a long entry only there."""
    line = f"{key}: {value},"
    return line if indent + len(line) <= LINE_LENGTH else f"{key}: ({value}),"


def tuple_repr(values: list[str]) -> str:
    return repr(tuple(values))


def exports(plan: CodecPlan) -> list[str]:
    """The codec module's public names (``__all__``), which its strategies import."""
    names = ["Context", "FrameType", "Frame", *[e.name for e in plan.enums],
             *[s.name for s in plan.structs], *[u.name for u in plan.unions],
             *[f.name for f in plan.frames], "decode", "decode_at", "encode", "frame_bytes",
             "StreamDecoder", "MAX_FRAME_SIZE", "LENGTH_PREFIX_SIZE", "ENCODINGS",
             "NEEDS_SENDER", "NEEDS_CONTEXT"]  # fmt: skip
    if plan.unknown != "error":
        names.append("UnknownFrame")
    if plan.context:
        names.append("track_context")
    if plan.startup:
        names += ["decode_startup", "decode_startup_at"]
    if plan.msgpack:
        names += ["encode_msgpack", "decode_msgpack", "MsgpackStreamDecoder"]
    return sorted(set(names))


# --- struct formats ----------------------------------------------------------------------


class StructFormats:
    """The ``struct.Struct`` constants a module uses, named as the templates ask for them
    (the module lists them before its code, so the code is rendered first)."""

    def __init__(self) -> None:
        self.formats: set[tuple[str, bool]] = set()

    def name(self, fmt: str, little: bool = False) -> str:
        self.formats.add((fmt, little))
        return ("_SLE_" if little else "_S_") + fmt

    def constants(self) -> list[tuple[str, str]]:
        return [
            (("_SLE_" if little else "_S_") + fmt, ("<" if little else ">") + fmt)
            for fmt, little in sorted(self.formats)
        ]


def int_format(itype: IntType) -> str:
    return STRUCT_CODES[itype.name]


def plain_array_format(e: ElementPlan) -> str | None:
    """The ``struct`` format of one element of an array of plain fixed-width integers (no
    constant, range, enum or bool to check; the one-byte and three-byte types aside), read
    all at once as ``<order><count><code>``; None for any other element."""
    if e.kind != "int" or e.fixed_size is not None or e.value is None:
        return None
    v, t = e.value, e.value.type
    if t.size is None or t.name in ("u8", "u24", "u24le") or v.const is not None:
        return None
    if v.lo != t.min or v.hi != t.max or v.enum is not None or v.boolean:
        return None
    return ("<" if t.little else ">") + "%d" + int_format(t)


def run_format(run: FixedRun) -> str:
    codes = []
    for unit in run.units:
        if unit.kind == "float":
            assert unit.float is not None
            # binary32 is read as its bits: CPython's "f" turns a signalling NaN quiet
            codes.append("I" if unit.float.bits == 32 else "d")
        else:
            assert unit.type is not None
            codes.append(int_format(unit.type))
    return "".join(codes)


@jinja2.pass_context
def struct_const(context: jinja2.runtime.Context, fmt: str | IntType, little: bool = False) -> str:
    """The constant of a format (or of one integer type), recorded for the module."""
    formats: StructFormats = context["structs"]
    if isinstance(fmt, IntType):
        return formats.name(int_format(fmt), fmt.little)
    return formats.name(fmt, little)


# --- expressions -------------------------------------------------------------------------


def expr(plan: ExprPlan, scope: str, values: dict[str, str] | None = None) -> str:
    """A size or count expression.

    ``scope`` "decode": fields are the decoder's locals (``v_name``) and the context may
    be None; "encode": the record's attributes (``self.name``) unless ``values`` (derived
    values) names them; "strategy": the strategy's locals and its context.
    """
    if plan.tree is not None:
        return "(" + cond_node(plan.tree.tree, scope, values, top=True) + ")"
    parts: list[str] = []
    for index, term in enumerate(plan.terms):
        if index:
            operator = plan.operators[index - 1]
            parts.append(f" {'//' if operator == '/' else operator} ")
        if term.kind == "literal":
            parts.append(str(term.value))
        elif term.kind == "field":
            ref = field_ref(term.name, scope, values)
            parts.append(f"({ref} or 0)" if term.optional else ref)
        elif scope == "strategy":
            key = f"[v_{term.keyed_by}]" if term.keyed_by else ""
            parts.append(f"ctx.{term.name}{key}")
        else:
            default = literal(term.default)
            if term.keyed_by is None:
                parts.append(f"(ctx.{term.name} if ctx is not None else {default})")
            else:
                key = field_ref(term.keyed_by, scope, values)
                parts.append(f"(ctx.{term.name}.get({key}, {default}) "
                             f"if ctx is not None else {default})")  # fmt: skip
    text = "".join(parts)
    return text if len(plan.terms) == 1 else f"({text})"


PY_OPERATORS = {"and": "and", "or": "or", "==": "==", "!=": "!=", "<": "<", "<=": "<=",
                ">": ">", ">=": ">=", "+": "+", "-": "-", "*": "*", "/": "//", "&": "&",
                "|": "|"}  # fmt: skip


def cond(plan: CondPlan, scope: str, values: dict[str, str] | None = None) -> str:
    """A condition (``if:``, ``rules:``) as a Python expression; ``scope`` as for ``expr``
    ("decode": the decoder's locals, ``flags`` and ``end``; "encode": the attributes)."""
    return cond_node(plan.tree, scope, values, top=True)


def cond_node(node: Cond, scope: str, values: dict[str, str] | None, top: bool = False) -> str:
    if node.op == "lit":
        return literal(node.value)
    if node.op == "field":
        ref = field_ref(node.name, scope, values)
        return f"({ref} or 0)" if node.value else ref
    if node.op == "flag":
        if scope == "strategy":
            return f"v_{node.name}"
        return f"flags & {literal(node.value)} != 0"
    if node.op == "ctx":
        if scope == "strategy":
            return f"ctx.{node.name}"
        return f"(ctx.{node.name} if ctx is not None else {literal(node.value)})"
    if node.op == "more":
        return "pos < end"
    if node.op == "remaining":
        return "(end - pos)"
    if node.op == "not":
        text = f"not {cond_node(node.args[0], scope, values)}"
    else:
        left, right = (cond_node(arg, scope, values) for arg in node.args)
        text = f"{left} {PY_OPERATORS[node.op]} {right}"
    return text if top else f"({text})"


def field_ref(name: str, scope: str, values: dict[str, str] | None) -> str:
    if values and name in values:
        return values[name]
    return f"self.{name}" if scope == "encode" else f"v_{name}"


# --- attributes --------------------------------------------------------------------------


class PyAttr(NamedTuple):
    """An attribute of a generated class, spelled."""

    name: str
    annotation: str  # as stored
    param: str  # the ``__init__`` parameter's annotation
    default: str
    init: str  # what ``__init__`` stores
    doc: str
    flag_mask: int | None = None  # a flag: a bool property over the ``_flags`` slot


def int_annotation(value: IntPlan) -> str:
    if value.boolean:
        return "bool"
    return value.enum if value.enum is not None else "int"


def int_default(value: IntPlan) -> str:
    if value.boolean:
        return "True" if value.default else "False"
    if value.default_member is not None:
        return f"{value.enum}.{value.default_member}"
    return literal(value.default)


def element_annotation(element: ElementPlan) -> str:
    if element.kind == "int":
        assert element.value is not None
        return int_annotation(element.value)
    if element.kind == "bytes":
        assert element.bytes is not None
        base = "str" if element.bytes.string else "bytes"
        return f"{base} | None" if element.bytes.nullable else base
    assert element.ref is not None
    return element.ref


def py_attr(attr: AttrPlan) -> PyAttr:
    name = attr.name
    if attr.kind == "bool":
        return PyAttr(name, "bool", "bool", "False", name, f"flag {literal(attr.flag_mask)}",
                      attr.flag_mask)  # fmt: skip
    if attr.kind == "int":
        assert attr.value is not None
        base, default = int_annotation(attr.value), int_default(attr.value)
    elif attr.kind == "float":
        assert attr.float is not None
        base, default = "float", repr(attr.float.default)
    elif attr.kind in ("bytes", "string"):
        base = "str" if attr.kind == "string" else "bytes"
        if attr.fixed_default is not None:
            size = attr.fixed_default
            default = f"bytes({size})" if attr.kind == "bytes" else f'" " * {size}'
        else:
            default = '""' if attr.kind == "string" else 'b""'
        if attr.nullable:
            return PyAttr(name, f"{base} | None", f"{base} | None", "None", name, attr.doc)
    elif attr.kind == "ref":
        assert attr.ref is not None
        base, default = attr.ref, "None"
    else:
        assert attr.element is not None
        base, default = f"list[{element_annotation(attr.element)}]", "None"
    if attr.optional:
        return PyAttr(name, f"{base} | None", f"{base} | None", "None", name, attr.doc)
    if attr.kind == "ref":
        init = f"{attr.ref_default}() if {name} is None else {name}"
        return PyAttr(name, base, f"{base} | None", "None", init, attr.doc)
    if attr.kind == "array":
        return PyAttr(name, base, f"{base} | None", "None", f"[] if {name} is None else {name}",
                      attr.doc)  # fmt: skip
    return PyAttr(name, base, base, default, name, attr.doc)


def context_attr(value: ContextPlan) -> PyAttr:
    name = value.name
    if value.keyed_by:
        return PyAttr(name, "dict[int, int]", "dict[int, int] | None", "None",
                      f"{{}} if {name} is None else {name}",
                      value.doc or f"per {value.keyed_by}")  # fmt: skip
    return PyAttr(name, "int", "int", literal(value.default), name, value.doc)


def unknown_attrs(plan: CodecPlan) -> list[PyAttr]:
    """``UnknownFrame``: its code, the header's values, the flags as received, the body."""
    parts = len(plan.discriminator)
    code_type = "int" if parts == 1 else "tuple[" + ", ".join(["int"] * parts) + "]"
    code_default = "0" if parts == 1 else "(" + ", ".join(["0"] * parts) + ")"
    attrs = [PyAttr("code", code_type, code_type, code_default, "code", "the unknown type code")]
    attrs += [py_attr(AttrPlan(v.name, "int", v.doc, value=v)) for v in plan.header_values]
    if plan.has_flags:
        attrs.append(PyAttr("flags", "int", "int", "0", "flags", "all flag bits as received"))
    attrs.append(PyAttr("body", "bytes", "bytes", 'b""', "body",
                        "the frame's bytes after the header"))  # fmt: skip
    return attrs


# --- hypothesis strategies ---------------------------------------------------------------


def st_int(value: IntPlan) -> str:
    if value.boolean:
        return "st.booleans()"
    if value.enum is not None:
        return f"st.sampled_from({value.enum})"
    return f"st.integers({literal(value.lo)}, {literal(value.hi)})"


def st_float(value: FloatPlan) -> str:
    """Floats that compare equal after a round trip (NaN payloads have their own tests)."""
    return f"st.floats(allow_nan=False, width={value.bits})"


def st_bytes(step: BytesStep) -> str:
    """A bytes or string value's strategy; one of an exact size draws ``_n_<name>`` of it
    (the template computes it first)."""
    limit = STRATEGY_MAX_BYTES
    if step.length is not None:
        limit = min(limit, step.length.max)
    if step.terminator is not None:
        if step.string:
            char = chr(step.terminator)
            return (f'st.text(st.characters(codec="utf-8", exclude_characters={char!r}), '
                    f"max_size={limit // 4})")  # fmt: skip
        return f"st.binary(max_size={limit}).map(lambda b: b.replace({bytes([step.terminator])!r}, b''))"
    if step.string and step.forbid:
        chars = "".join(chr(c) for c in step.forbid)
        base = (f'st.text(st.characters(codec="utf-8", exclude_characters={chars!r}), '
                f"max_size={max(0, limit // 4)})")  # fmt: skip
    elif step.string:
        base = f'st.text(st.characters(codec="utf-8"), max_size={max(0, limit // 4)})'
    elif step.forbid:
        base = (f"st.binary(max_size={limit}).map(lambda b: bytes(x for x in b "
                f"if x not in {tuple(step.forbid)!r}))")  # fmt: skip
    else:
        base = f"st.binary(max_size={limit})"
    if step.size is not None and not step.length_derived:
        size = f"_n_{step.name}"
        exact = f"st.binary(min_size={size}, max_size={size})"
        if step.string:
            exact = f'st.text(st.sampled_from("ab"), min_size={size}, max_size={size})'
        base = f"({exact} if {size} > 0 else {base})" if step.length is not None else exact
    if step.nullable:
        base = f"st.none() | {base}"
    return base


def frame_length_value(length: FrameLengthPlan, body: str) -> str:
    """The header length field's value on encode: the body's size plus the header bytes it
    counts, less the IDL's adjustment (``FrameLengthPlan``)."""
    extra = length.counted - length.adjust
    if extra > 0:
        return f"{body} + {extra}"
    return f"{body} - {-extra}" if extra < 0 else body


def has_terminated_arrays(plan: CodecPlan) -> bool:
    """Whether a record has an array of structs until a terminator (strategies need
    ``_first_byte``)."""
    records = [*plan.structs, *plan.frames]
    return any(isinstance(item.step, ArrayStep) and item.step.terminator is not None
               and item.step.element.kind == "ref" for r in records for item in r.steps)  # fmt: skip


# --- rendering ---------------------------------------------------------------------------


_ENV = environment(
    Path(__file__).parent / "templates",
    filters=dict(lit=literal, braced=braced, part=part, doc_lines=doc_lines,
                 int_value=int_value, packed=packed, fold_head=fold_head,
                 pack_literals=pack_literals,
                 code_key=code_key, table_key=table_key, entry=dict_entry,
                 tuple_repr=tuple_repr, exports=exports, snake=lower_snake,
                 struct=struct_const, run_format=run_format, expr=expr, py_attr=py_attr,
                 context_attr=context_attr, unknown_attrs=unknown_attrs, st_int=st_int,
                 cond=cond, st_float=st_float, chr=chr, bytes_repr=lambda v: repr(bytes(v)),
                 has_terminated_arrays=has_terminated_arrays,
                 frame_length_value=frame_length_value,
                 st_bytes=st_bytes, pyrepr=repr, plain_array_format=plain_array_format),
    tests=dict(literal=is_literal),
    max_items=STRATEGY_MAX_ITEMS,
)  # fmt: skip


def drop_blank_lines_in_functions(source: str) -> str:
    """``source`` without the blank lines the templates leave inside function bodies (a
    macro's output ends with a newline): black keeps those, but not the ones around
    definitions, which it sets itself. Blank lines inside strings stay."""
    in_strings: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            in_strings.update(range(token.start[0] + 1, token.end[0] + 1))
    in_bodies: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            assert node.end_lineno is not None
            in_bodies.update(range(node.body[0].lineno, node.end_lineno + 1))
    lines = source.splitlines(keepends=True)
    return "".join(
        line
        for number, line in enumerate(lines, start=1)
        if line.strip() or number not in in_bodies or number in in_strings
    )


def render_codec(plan: CodecPlan) -> str:
    """``<protocol>/<version>/__init__.py``, before formatting."""
    # encoded_enums: the closed enums whose values the encoders check (the module defines
    # their value sets after the enums, so the code is rendered first)
    source = _ENV.get_template("codec.py.j2").render(m=plan, structs=StructFormats(),
                                                     encoded_enums=[],
                                                     fingerprint=layout_fingerprint(plan))  # fmt: skip
    return drop_blank_lines_in_functions(source)


def render_strategies(plan: CodecPlan, package: str) -> str:
    """``<protocol>/<version>/strategies.py``, before formatting."""
    source = _ENV.get_template("strategies.py.j2").render(m=plan, package=package)
    return drop_blank_lines_in_functions(source)
