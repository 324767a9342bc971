"""The TypeScript target: spells the language-neutral plan (``plan.py``) in TypeScript.

Everything that decides *what* the code does is in the plan; this module only holds the
spelling the templates in ``templates/typescript/`` need, as the Kaitai Struct compiler
has one expression translator per language: names (camelCase attributes), literals
(``bigint`` for 64-bit values), ``DataView`` accessors and ``Writer`` methods, types, and
size expressions. The templates lay the code out; ``render_typescript`` writes the files
of the npm package ``@wirestream/generated`` (``generated/typescript/``).
"""

from __future__ import annotations

import json


from wirestream.codegen.jinja import environment
from wirestream.codegen.model import IntType, Protocol
from wirestream.codegen.typescript_machines import render_ts_machines
from wirestream.codegen.plan import (
    AttrPlan,
    CodecPlan,
    ElementPlan,
    ExprPlan,
    IntPlan,
    plan_codec,
)

PACKAGE = "@wirestream/generated"
RUNTIME = "@wirestream/runtime"

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


def is_big(itype: IntType) -> bool:
    return itype.bits > 32


def view_get(itype: IntType) -> str:
    return "get" + _VIEW[itype.name]


def view_set(itype: IntType) -> str:
    return "set" + _VIEW[itype.name]


def read_at(itype: IntType, at: str) -> str:
    """An expression reading a big-endian ``itype`` at ``at`` of ``data``: byte arithmetic
    up to 32 bits (no DataView to make per frame), the reader's DataView for 64 bits."""

    def b(i: int) -> str:
        return f"data[{at}{f' + {i}' if i else ''}]!"

    name = itype.name
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
    """Statements storing ``value`` as a big-endian ``itype`` at ``at`` of ``buf`` (a
    Uint8Array store keeps the low 8 bits, so each byte is one shift)."""
    size = itype.size
    assert size is not None
    if itype.bits > 32:
        return f"w.view.set{_VIEW[itype.name]}({at}, {value});"
    if size == 1:
        return f"buf[{at}] = {value};"
    if not value.replace("_", "").isalnum():
        value = f"({value})"
    stores = []
    for i in range(size):
        shift = 8 * (size - 1 - i)
        where = f"{at} + {i}" if i else at
        stores.append(
            f"buf[{where}] = {value} >>> {shift};" if shift else f"buf[{where}] = {value};"
        )
    return "\n".join(stores)


def enum_type(plan: IntPlan) -> str:
    return plan.enum if plan.enum is not None else ("bigint" if plan.big else "number")


def element_type(element: ElementPlan) -> str:
    if element.kind == "int":
        assert element.value is not None
        return enum_type(element.value)
    if element.kind == "bytes":
        assert element.bytes is not None
        base = "string" if element.bytes.string else "Uint8Array"
        return f"{base} | null" if element.bytes.nullable else base
    assert element.ref is not None
    return element.ref


def attr_type(attr: AttrPlan) -> str:
    """The attribute's TypeScript type (``| null`` when it can be absent)."""
    if attr.kind == "int":
        assert attr.value is not None
        base = enum_type(attr.value)
    elif attr.kind == "bool":
        base = "boolean"
    elif attr.kind == "bytes":
        base = "Uint8Array"
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
        if value.default_member is not None:
            return f"{value.enum}.{value.default_member}"
        return lit(value.default, value.big)
    if attr.kind == "bool":
        return "false"
    if attr.kind == "bytes":
        return f"new Uint8Array({attr.fixed_default or 0})"
    if attr.kind == "string":
        return f'" ".repeat({attr.fixed_default})' if attr.fixed_default else '""'
    if attr.kind == "ref":
        return f"new {attr.ref_default}()"
    return "[]"


def expr(plan: ExprPlan, scope: str, values: dict[str, str] | None = None) -> str:
    """A size or count expression as a TypeScript ``number``.

    ``scope`` "decode": fields are the decoder's locals (``v_name``); "encode": the
    record's attributes (``this.name``) unless ``values`` (derived values) names them.
    """
    parts: list[str] = []
    for index, term in enumerate(plan.terms):
        if index:
            parts.append(f" {plan.operators[index - 1]} ")
        if term.kind == "literal":
            parts.append(lit(term.value))
            continue
        if term.kind == "field":
            source = field_ref(term.name, scope, values)
            parts.append(f"Number({source})" if term.big else source)
            continue
        default = lit(term.default, term.big)
        if term.keyed_by is not None:
            key = field_ref(term.keyed_by, scope, values)
            value = (
                f"(ctx === undefined ? {default} : ctx.{camel(term.name)}.get({key}) ?? {default})"
            )
        else:
            value = f"(ctx === undefined ? {default} : ctx.{camel(term.name)})"
        parts.append(f"Number{value}" if term.big else value)
    text = "".join(parts)
    return text if len(plan.terms) == 1 else f"({text})"


def field_ref(name: str, scope: str, values: dict[str, str] | None) -> str:
    if values and name in values:
        return values[name]
    return f"v_{camel(name)}" if scope == "decode" else f"this.{camel(name)}"


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
    "typescript",
    filters=dict(camel=camel, lit=lit, view_get=view_get, view_set=view_set, read_at=read_at,
                 write_at=write_at, attr_type=attr_type, attr_default=attr_default,
                 element_type=element_type, enum_type=enum_type, array_of=array_of, expr=expr,
                 code_key=code_key, js=js_string, doc=doc_comment),
    tests=dict(big=is_big),
)  # fmt: skip


def tidy(source: str) -> str:
    """Generated TypeScript as committed: no trailing spaces, no runs of blank lines."""
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
    return "\n".join(out) + "\n"


def render_codec(plan: CodecPlan) -> str:
    return tidy(_ENV.get_template("codec.ts.j2").render(m=plan, runtime=RUNTIME))


def render_typescript(protos: list[Protocol]) -> dict[str, str]:
    """The files of ``generated/typescript/``: relative path -> text."""
    files: dict[str, str] = {}
    versions = []
    for proto in protos:
        plan = plan_codec(proto)
        base = f"src/{proto.protocol}/{proto.version}"
        files[f"{base}/index.ts"] = render_codec(plan)
        files[f"{base}/machines.ts"] = tidy(render_ts_machines(proto))
        versions.append((proto.protocol, proto.version, proto.title))
    versions.sort()
    for name in ("package.json", "tsconfig.json", "README.md"):
        files[name] = _ENV.get_template(name + ".j2").render(
            versions=versions, package=PACKAGE, runtime=RUNTIME
        )
    return files
