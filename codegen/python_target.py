"""The Python target: plans the code of one protocol version for the templates.

The plan is a tree of plain records (``PyModule``, ``PyClass``, ``PyFunction``) whose
bodies are lists of source lines; the jinja2 templates only lay them out. Everything
that decides *what* code to write lives here, in small emitters per field kind:

- decoding reads a ``data: bytes`` between ``pos`` and ``end``; consecutive fixed-size
  fields are read with one precompiled ``struct.Struct``;
- encoding appends ``bytes`` parts to ``out`` and joins them once;
- every bound the peer controls (lengths, counts) is checked against the bytes that
  are actually there before anything is sliced or allocated.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

from wirestream.codegen.model import (
    ArrayField,
    BytesField,
    Element,
    Enum,
    Expr,
    Frame,
    IntField,
    IntType,
    Item,
    Protocol,
    RefField,
    Struct,
    Union_,
    Word,
)
from wirestream.codegen.tidy import LINE_LENGTH

STRUCT_CODES = {
    "u8": "B",
    "u16": "H",
    "u32": "I",
    "u64": "Q",
    "i8": "b",
    "i16": "h",
    "i32": "i",
    "i64": "q",
}
STRATEGY_MAX_BYTES = 24
STRATEGY_MAX_ITEMS = 3


def upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def lower_snake(name: str) -> str:
    return upper_snake(name).lower()


@dataclass
class PyAttr:
    name: str
    annotation: str
    default: str
    doc: str
    init: str  # expression stored in __init__ (usually the parameter name)
    flag_mask: int | None = None  # a flag: a bool property over the `_flags` slot


@dataclass
class PyClass:
    name: str
    doc: list[str]
    attrs: list[PyAttr]
    class_lines: list[str] = field(default_factory=list)  # ClassVar lines
    methods: list[list[str]] = field(default_factory=list)  # each a list of lines

    @property
    def slots(self) -> list[tuple[str, str]]:
        """Stored attributes: flags share one ``_flags`` int (decoding stays cheap)."""
        stored = [(a.name, a.annotation) for a in self.attrs if a.flag_mask is None]
        if any(a.flag_mask is not None for a in self.attrs):
            stored.append(("_flags", "int"))
        return stored


@dataclass
class PyFunction:
    lines: list[str]


@dataclass
class PyEnum:
    name: str
    base: str
    doc: list[str]
    members: list[tuple[str, str]]


@dataclass
class PyModule:
    source: str
    title: str
    doc: list[str]
    structs: list[tuple[str, str]]  # (name, format)
    enums: list[PyEnum]
    classes: list[PyClass]
    aliases: list[str]
    functions: list[PyFunction]
    tables: list[str]
    exports: list[str]
    strategies: list[PyFunction]
    strategy_exports: list[str]
    protocol: str
    version: str
    # framing facts as module constants, (name, value, doc lines): what a reader of
    # recorded bytes (runtime.capture) needs to know besides the codec's functions
    facts: list[tuple[str, str, list[str]]] = field(default_factory=list)


class Lines:
    """Source lines with an indentation level."""

    def __init__(self, indent: int = 1) -> None:
        self.lines: list[str] = []
        self.level = indent

    def __call__(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    def indent(self) -> "Lines":
        self.level += 1
        return self

    def dedent(self) -> None:
        self.level -= 1


def doc_lines(text: str) -> list[str]:
    return [
        line.rstrip().replace('"""', "'''").replace("\\", "\\\\")
        for line in text.strip().splitlines()
    ]


def entry(key: str, value: str, indent: int) -> str:
    """A dict entry; its value in parentheses when the line would be too long, since black
    splits a long entry only there."""
    line = f"{key}: {value},"
    return line if indent + len(line) <= LINE_LENGTH else f"{key}: ({value}),"


INT_LITERAL = re.compile(r"-?(0x[0-9a-fA-F]+|[0-9]+)")


def is_literal(source: str) -> bool:
    return INT_LITERAL.fullmatch(source) is not None


def literal(value: int) -> str:
    return hex(value) if value > 9 else str(value)


class PythonTarget:
    """Plans ``generated/<protocol>/<version>`` for one protocol model."""

    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.struct_formats: dict[str, str] = {}
        self.counter = 0
        self.context_names = {c.name: c for c in proto.context}
        self.sink = "out"
        self.scope = "encode"
        self.derived_values: dict[str, str] = {}
        self.pre_encoded: dict[str, str] = {}
        self.current_flags: dict[str, int] = dict(proto.common_flags)
        self.presence_flags = {
            item.condition for f in proto.frames for item in f.items if item.condition
        }
        header_values = [v for item in proto.header for v in self.values(item)]
        self.header_attrs = [v for v in header_values if v.name not in proto.discriminator]
        self.has_flags = any(
            bit.kind == "flags"
            for item in proto.header
            if isinstance(item.node, Word)
            for bit in item.node.bits
        )

    # --- small helpers ------------------------------------------------------------------

    def lines(self) -> Lines:
        """A new function body; local names are numbered from 1 in each one."""
        self.counter = 0
        return Lines(1)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"_{stem}{self.counter}"

    def struct_const(self, fmt: str) -> str:
        name = "_S_" + fmt
        self.struct_formats[name] = ">" + fmt
        return name

    def values(self, item: Item) -> list[IntField]:
        node = item.node
        if isinstance(node, Word):
            return [bit.value for bit in node.bits if bit.value is not None]
        if isinstance(node, IntField):
            return [node]
        return []

    def int_bounds(self, node: IntField) -> tuple[int, int]:
        lo, hi = node.type.min, node.type.max
        if node.min is not None:
            lo = max(lo, node.min)
        if node.max is not None:
            hi = min(hi, node.max)
        return lo, hi

    def int_annotation(self, node: IntField) -> str:
        if node.enum is not None and not node.enum.open:
            return node.enum.name
        return "int"

    def int_default(self, node: IntField) -> str:
        lo, hi = self.int_bounds(node)
        if node.default is not None:
            value = node.default
        elif lo <= 0 <= hi:
            value = 0
        else:
            value = lo
        if node.enum is not None and not node.enum.open:
            members = node.enum.values
            for member, member_value in members.items():
                if member_value == value:
                    return f"{node.enum.name}.{member}"
            first = next(iter(members))
            return f"{node.enum.name}.{first}"
        return literal(value)

    def is_attr(self, node: IntField) -> bool:
        return node.const is None and node.derived_from is None

    # --- attributes of classes --------------------------------------------------------

    def item_attrs(self, items: list[Item]) -> list[PyAttr]:
        attrs: list[PyAttr] = []
        for item in items:
            node = item.node
            optional = item.condition is not None
            if isinstance(node, Word):
                for bit in node.bits:
                    if bit.value is not None and self.is_attr(bit.value):
                        attrs.append(self.int_attr(bit.value))
                continue
            if isinstance(node, IntField):
                if self.is_attr(node):
                    attr = self.int_attr(node)
                    if optional:
                        attr.annotation += " | None"
                        attr.default = "None"
                    attrs.append(attr)
                continue
            if isinstance(node, BytesField):
                kind = "str" if node.is_string else "bytes"
                if optional or node.nullable:
                    attrs.append(PyAttr(node.name, f"{kind} | None", "None", node.doc, node.name))
                else:
                    default = '""' if node.is_string else 'b""'
                    if (
                        node.size is not None
                        and node.length is None
                        and node.size.tokens[0].isdigit()
                        and len(node.size.tokens) == 1
                    ):
                        default = (
                            f"bytes({node.size.tokens[0]})"
                            if not node.is_string
                            else '" " * ' + node.size.tokens[0]
                        )
                    attrs.append(PyAttr(node.name, kind, default, node.doc, node.name))
                continue
            if isinstance(node, RefField):
                target = node.target
                if optional:
                    attrs.append(
                        PyAttr(node.name, f"{target.name} | None", "None", node.doc, node.name)
                    )
                else:
                    default_cls = (
                        target.name
                        if isinstance(target, Struct)
                        else next(iter(target.variants.values())).name
                    )
                    attrs.append(PyAttr(node.name, target.name, "None", node.doc,
                                        f"{default_cls}() if {node.name} is None else {node.name}"))  # fmt: skip
                continue
            if isinstance(node, ArrayField):
                elem = self.element_annotation(node.element)
                if optional:
                    attrs.append(
                        PyAttr(node.name, f"list[{elem}] | None", "None", node.doc, node.name)
                    )
                else:
                    attrs.append(PyAttr(node.name, f"list[{elem}]", "None", node.doc,
                                        f"[] if {node.name} is None else {node.name}"))  # fmt: skip
        return attrs

    def int_attr(self, node: IntField) -> PyAttr:
        return PyAttr(
            node.name, self.int_annotation(node), self.int_default(node), node.doc, node.name
        )

    def element_annotation(self, element: Element) -> str:
        if isinstance(element, IntField):
            return self.int_annotation(element)
        if isinstance(element, BytesField):
            kind = "str" if element.is_string else "bytes"
            return f"{kind} | None" if element.nullable else kind
        return element.target.name

    def frame_flag_attrs(self, frame: Frame) -> list[tuple[str, int]]:
        """Flags that are bool attributes of a frame (not presence flags, not always set)."""
        result = []
        for name, mask in {**self.proto.common_flags, **frame.flags}.items():
            if name in self.presence_flags or name in frame.set_flags:
                continue
            result.append((name, mask))
        return result

    def frame_attrs(self, frame: Frame) -> list[PyAttr]:
        attrs = [self.int_attr(v) for v in self.header_attrs]
        attrs += [
            PyAttr(name, "bool", "False", f"flag {literal(mask)}", name, mask)
            for name, mask in self.frame_flag_attrs(frame)
        ]
        return attrs + self.item_attrs(frame.items)

    # --- classes -----------------------------------------------------------------------------

    def common_methods(self, name: str, attrs: list[PyAttr]) -> list[list[str]]:
        params = ", ".join(f"{a.name}: {self.param_annotation(a)} = {a.default}" for a in attrs)
        init = [f"def __init__(self{', ' if attrs else ''}{params}) -> None:"]
        flags = [a for a in attrs if a.flag_mask is not None]
        stored = [a for a in attrs if a.flag_mask is None]
        for a in stored:
            init.append(f"    self.{a.name} = {a.init}")
        if flags:
            bits = " | ".join(f"({literal(a.flag_mask or 0)} if {a.name} else 0)" for a in flags)
            init.append(f"    self._flags = {bits}")
        if not attrs:
            init.append("    pass")
        names = [a.name for a in stored] + (["_flags"] if flags else [])
        eq = [
            "def __eq__(self, other: object) -> bool:",
            "    if type(other) is not type(self):",
            "        return NotImplemented",
        ]
        if names:
            eq.append(f"    assert isinstance(other, {name})")
            eq.append(
                f"    return ({', '.join(f'self.{n}' for n in names)},) == ({', '.join(f'other.{n}' for n in names)},)"
            )
        else:
            eq.append("    return True")
        parts = ", ".join(f"{a.name}={{self.{a.name}!r}}" for a in attrs)
        rep = ["def __repr__(self) -> str:", f'    return f"{name}({parts})"']
        methods = [init, eq, rep]
        for a in flags:
            mask = literal(a.flag_mask or 0)
            methods.append([
                "@property",
                f"def {a.name}(self) -> bool:",
                f'    """The {a.name} flag ({mask})."""',
                f"    return self._flags & {mask} != 0",
            ])  # fmt: skip
            methods.append([
                f"@{a.name}.setter",
                f"def {a.name}(self, value: bool) -> None:",
                f"    self._flags = self._flags | {mask} if value else self._flags & ~{mask}",
            ])  # fmt: skip
        return methods

    def param_annotation(self, attr: PyAttr) -> str:
        if attr.default == "None" and not attr.annotation.endswith("| None"):
            return f"{attr.annotation} | None"
        return attr.annotation

    # --- decoding: one emitter per field kind ------------------------------------------------

    def d_var(self, name: str) -> str:
        return f"v_{name}"

    def expr_code(self, expr: Expr, scope: str) -> str:
        """Python for an expression: decode scope reads locals, encode scope reads self."""
        out = []
        for index, token in enumerate(expr.tokens):
            if index % 2:
                out.append(f" {token} ")
            elif token.isdigit():
                out.append(token)
            elif token.startswith("ctx."):
                out.append(self.ctx_code(token[4:], scope))
            else:
                out.append(self.name_code(token, scope))
        return "".join(out) if len(out) == 1 else "(" + "".join(out) + ")"

    def name_code(self, name: str, scope: str) -> str:
        if scope == "decode":
            return self.d_var(name)
        if scope == "strategy":
            return self.d_var(name)
        derived = self.derived_values.get(name)
        if derived is not None:
            return derived
        return f"self.{name}"

    def ctx_code(self, name: str, scope: str) -> str:
        value = self.context_names[name]
        default = literal(value.default)
        if scope == "strategy":
            return f"ctx.{name}[{self.d_var(value.keyed_by)}]" if value.keyed_by else f"ctx.{name}"
        if value.keyed_by is None:
            return f"(ctx.{name} if ctx is not None else {default})"
        key = self.name_code(value.keyed_by, scope)
        return f"(ctx.{name}.get({key}, {default}) if ctx is not None else {default})"

    def where(self, owner: str, name: str) -> str:
        return f"{owner}.{name}"

    def check_int(self, out: Lines, node: IntField, var: str, owner: str) -> None:
        what = self.where(owner, node.name)
        if node.const is not None:
            out(f"if {var} != {literal(node.const)}:")
            out(f'    raise InvalidValue(f"{what}: must be {literal(node.const)}, got {{{var}}}")')
            return
        conditions = []
        if node.min is not None and node.min > node.type.min:
            conditions.append(f"{var} < {literal(node.min)}")
        if node.max is not None and node.max < node.type.max:
            conditions.append(f"{var} > {literal(node.max)}")
        if conditions:
            lo, hi = self.int_bounds(node)
            out(f"if {' or '.join(conditions)}:")
            out(
                f'    raise InvalidValue(f"{what}: {{{var}}} is outside {literal(lo)}..{literal(hi)}")'
            )
        if node.enum is not None and not node.enum.open:
            out("try:")
            out(f"    {var} = {node.enum.name}({var})")
            out("except ValueError:")
            out(f'    raise InvalidValue(f"{what}: {{{var}}} is not a {node.enum.name}") from None')

    def fixed_unit(self, item: Item) -> bool:
        if item.condition is not None:
            return False
        node = item.node
        return isinstance(node, Word) or (isinstance(node, IntField) and node.type.size is not None)

    def runs(self, items: list[Item]) -> list[tuple[list[IntField | Word], Item | None]]:
        """Items in order, consecutive fixed-size units merged: one struct.Struct each."""
        result: list[tuple[list[IntField | Word], Item | None]] = []
        for item in items:
            node = item.node
            if self.fixed_unit(item) and isinstance(node, (IntField, Word)):
                if result and result[-1][0]:
                    result[-1][0].append(node)
                else:
                    result.append(([node], None))
            else:
                result.append(([], item))
        return result

    def unit_format(self, node: IntField | Word) -> str:
        name = node.type.name
        return "BH" if name == "u24" else STRUCT_CODES[name]

    def unit_size(self, node: IntField | Word) -> int:
        size = node.type.size
        assert size is not None
        return size

    def decode_items(self, out: Lines, items: list[Item], owner: str, end: str = "end") -> None:
        for run, item in self.runs(items):
            if run:
                self.decode_fixed_run(out, run, owner, end)
                continue
            assert item is not None
            node = item.node
            assert not isinstance(node, Word)  # words are fixed units
            if item.condition is not None:
                mask = self.flag_mask(item.condition)
                out(f"if flags & {literal(mask)}:")
                out.indent()
                self.decode_value(out, node, self.d_var(node.name), owner, end)
                out.dedent()
                out("else:")
                out(f"    {self.d_var(node.name)} = None")
            else:
                self.decode_value(out, node, self.d_var(node.name), owner, end)

    def flag_mask(self, name: str) -> int:
        mask = self.current_flags.get(name)
        assert mask is not None, name
        return mask

    def decode_fixed_run(
        self, out: Lines, run: list[IntField | Word], owner: str, end: str
    ) -> None:
        size = sum(self.unit_size(node) for node in run)
        fmt = "".join(self.unit_format(node) for node in run)
        targets: list[str] = []
        post: list[tuple[IntField | Word, list[str]]] = []
        for node in run:
            if isinstance(node, Word):
                var = self.fresh("w")
                targets.append(var)
                post.append((node, [var]))
            elif node.type.name == "u24":
                hi, lo = self.fresh("hi"), self.fresh("lo")
                targets += [hi, lo]
                post.append((node, [hi, lo]))
            else:
                targets.append(self.d_var(node.name))
                post.append((node, []))
        out(f"if {end} - pos < {size}:")
        out(f'    raise Truncated("{owner}: input ends inside the frame", needed=pos + {size})')
        if fmt == "B":
            out(f"{targets[0]} = data[pos]")
        else:
            const = self.struct_const(fmt)
            lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
            out(f"{lhs} = {const}.unpack_from(data, pos)")
        out(f"pos += {size}")
        for node, temps in post:
            if isinstance(node, Word):
                self.split_word(out, node, temps[0], owner)
            else:
                if node.type.name == "u24":
                    out(f"{self.d_var(node.name)} = ({temps[0]} << 16) | {temps[1]}")
                self.check_int(out, node, self.d_var(node.name), owner)

    def split_word(self, out: Lines, word: Word, var: str, owner: str) -> None:
        shift = word.type.bits
        for bit in word.bits:
            shift -= bit.width
            mask = (1 << bit.width) - 1
            if bit.kind == "reserved":
                continue  # reserved bits: ignored on receive
            target = "flags" if bit.kind == "flags" else self.d_var(bit.value.name)  # type: ignore[union-attr]
            if shift == 0:
                out(f"{target} = {var} & {literal(mask)}")
            elif shift + bit.width == word.type.bits:
                out(f"{target} = {var} >> {shift}")
            else:
                out(f"{target} = ({var} >> {shift}) & {literal(mask)}")
            if bit.value is not None:
                self.check_int(out, bit.value, target, owner)

    def read_int(
        self, out: Lines, itype: IntType, var: str, owner: str, what: str, end: str
    ) -> None:
        if itype.name == "varint":
            out(f"{var}, pos = _support.read_varint(data, pos, {end})")
        elif itype.name == "varu64":
            out(f"{var}, pos = _support.read_varu64(data, pos, {end})")
        else:
            size = itype.size
            assert size is not None
            out(f"if {end} - pos < {size}:")
            out(f'    raise Truncated("{owner}.{what}: input ends", needed=pos + {size})')
            if itype.name == "u8":
                out(f"{var} = data[pos]")
            elif itype.name == "u24":
                high, low = self.fresh("hi"), self.fresh("lo")
                out(f"{high}, {low} = {self.struct_const('BH')}.unpack_from(data, pos)")
                out(f"{var} = ({high} << 16) | {low}")
            else:
                out(
                    f"({var},) = {self.struct_const(STRUCT_CODES[itype.name])}.unpack_from(data, pos)"
                )
            out(f"pos += {size}")

    def decode_value(
        self, out: Lines, node: Element | ArrayField, var: str, owner: str, end: str
    ) -> None:
        if isinstance(node, IntField):
            self.read_int(out, node.type, var, owner, node.name, end)
            self.check_int(out, node, var, owner)
        elif isinstance(node, BytesField):
            self.decode_bytes(out, node, var, owner, end)
        elif isinstance(node, RefField):
            out(f"{var}, pos = _decode_{node.target.name}(data, pos, {end}, ctx)")
        else:
            self.decode_array(out, node, var, owner, end)

    def decode_bytes(self, out: Lines, node: BytesField, var: str, owner: str, end: str) -> None:
        what = self.where(owner, node.name)
        if node.rest:
            out(f"{var} = data[pos:{end}]")
            out(f"pos = {end}")
            if node.is_string:
                out(f'{var} = _support.utf8({var}, "{what}")')
            return
        size = self.fresh("n")
        if node.size is not None:
            out(f"{size} = {self.expr_code(node.size, 'decode')}")
            if node.length is not None:
                out(f"if {size} <= 0:")
                out.indent()
                self.read_int(out, node.length, size, owner, node.name, end)
                out.dedent()
        else:
            assert node.length is not None
            self.read_int(out, node.length, size, owner, node.name, end)
        if node.nullable:
            out(f"if {size} == -1:")
            out(f"    {var} = None")
            out("else:")
            out.indent()
        if (
            node.nullable
            or (node.length is not None and node.length.signed)
            or node.size is not None
        ):
            out(f"if {size} < 0:")
            out(f'    raise InvalidValue(f"{what}: negative length {{{size}}}")')
        out(f"if {size} > {end} - pos:")
        out(
            f'    raise Truncated(f"{what}: {{{size}}} bytes declared, {{{end} - pos}} left", needed=pos + {size})'
        )
        value = f"data[pos : pos + {size}]"
        if node.is_string:
            value = f'_support.utf8({value}, "{what}")'
        out(f"{var} = {value}")
        out(f"pos += {size}")
        if node.nullable:
            out.dedent()

    def min_size(self, node: Element | ArrayField | Word | Struct | Union_) -> int:
        """The fewest bytes a value can take: bounds counts the peer declares."""
        if isinstance(node, Word):
            return self.unit_size(node)
        if isinstance(node, IntField):
            return node.type.size or 1
        if isinstance(node, BytesField):
            if node.rest:
                return 0
            if node.length is not None:
                return node.length.size or 1
            size = node.size
            return (
                int(size.tokens[0])
                if size is not None and len(size.tokens) == 1 and size.tokens[0].isdigit()
                else 0
            )
        if isinstance(node, ArrayField):
            for prefix in (node.count_prefix, node.byte_length_prefix):
                if prefix is not None:
                    return prefix.size or 1
            return 0
        if isinstance(node, RefField):
            return self.min_size(node.target)
        if isinstance(node, Union_):
            return min(self.min_size(v) for v in node.variants.values())
        return sum(self.min_size(item.node) for item in node.items if item.condition is None)

    def decode_array(self, out: Lines, node: ArrayField, var: str, owner: str, end: str) -> None:
        what = self.where(owner, node.name)
        item = self.fresh("item")
        out(f"{var} = []")
        element = node.element
        elem_size = (
            self.fresh("size")
            if isinstance(element, BytesField)
            and element.size is not None
            and element.length is None
            else None
        )
        if elem_size is not None:
            assert isinstance(element, BytesField) and element.size is not None
            out(f"{elem_size} = {self.expr_code(element.size, 'decode')}")
            out(f"if {elem_size} <= 0:")
            out(
                f'    raise InvalidValue(f"{what}: element size must be positive, is {{{elem_size}}}")'
            )
        if node.count_prefix is not None or node.count_expr is not None:
            count = self.fresh("count")
            if node.count_prefix is not None:
                self.read_int(out, node.count_prefix, count, owner, node.name, end)
            else:
                assert node.count_expr is not None
                out(f"{count} = {self.expr_code(node.count_expr, 'decode')}")
            if (
                node.count_expr is not None
                or node.count_prefix is not None
                and node.count_prefix.signed
            ):
                out(f"if {count} < 0:")
                out(f'    raise InvalidValue(f"{what}: negative count {{{count}}}")')
            least = elem_size or str(max(1, self.min_size(element)))
            out(f"if {count} * {least} > {end} - pos:")
            out(
                f'    raise Truncated(f"{what}: {{{count}}} elements declared, {{{end} - pos}} bytes left", needed=pos + {count} * {least})'
            )
            out(f"for _ in range({count}):")
            out.indent()
            self.decode_element(out, element, item, owner, node.name, end, elem_size)
            out(f"{var}.append({item})")
            out.dedent()
            return
        if node.count_rest:
            out(f"while pos < {end}:")
            out.indent()
            self.decode_element(out, element, item, owner, node.name, end, elem_size)
            out(f"{var}.append({item})")
            out.dedent()
            return
        length = self.fresh("length")
        if node.byte_length_prefix is not None:
            self.read_int(out, node.byte_length_prefix, length, owner, node.name, end)
        else:
            assert node.byte_length_expr is not None
            out(f"{length} = {self.expr_code(node.byte_length_expr, 'decode')}")
        out(f"if {length} < 0:")
        out(f'    raise InvalidValue(f"{what}: negative byte length {{{length}}}")')
        out(f"if {length} > {end} - pos:")
        out(
            f'    raise Truncated(f"{what}: {{{length}}} bytes declared, {{{end} - pos}} left", needed=pos + {length})'
        )
        stop = self.fresh("stop")
        out(f"{stop} = pos + {length}")
        out("try:")
        out.indent()
        out(f"while pos < {stop}:")
        out.indent()
        self.decode_element(out, element, item, owner, node.name, stop, elem_size)
        out(f"{var}.append({item})")
        out.dedent()
        out.dedent()
        out("except Truncated:")
        out(
            f'    raise InvalidValue("{what}: an element overruns the sequence\'s byte length") from None'
        )

    def decode_element(self, out: Lines, element: Element, var: str, owner: str, name: str, end: str,
                       elem_size: str | None) -> None:  # fmt: skip
        if elem_size is not None:
            out(f"if {elem_size} > {end} - pos:")
            out(
                f'    raise Truncated("{owner}.{name}: input ends inside an element", needed=pos + {elem_size})'
            )
            value = f"data[pos : pos + {elem_size}]"
            if isinstance(element, BytesField) and element.is_string:
                value = f'_support.utf8({value}, "{owner}.{name}")'
            out(f"{var} = {value}")
            out(f"pos += {elem_size}")
            return
        if isinstance(element, IntField):
            self.read_int(out, element.type, var, owner, name, end)
            self.check_int(out, element, var, owner)
        elif isinstance(element, BytesField):
            renamed = BytesField(
                name,
                element.is_string,
                element.length,
                element.rest,
                element.nullable,
                element.size,
            )
            self.decode_bytes(out, renamed, var, owner, end)
        else:
            out(f"{var}, pos = _decode_{element.target.name}(data, pos, {end}, ctx)")

    # --- encoding ----------------------------------------------------------------------------

    def check_range(self, out: Lines, value: str, lo: int, hi: int, what: str) -> None:
        out(f"if not {literal(lo)} <= {value} <= {literal(hi)}:")
        out(
            f'    raise EncodeError(f"{what}: {{{value}!r}} is outside {literal(lo)}..{literal(hi)}")'
        )

    def int_source(self, node: IntField, scope_values: dict[str, str]) -> str:
        if node.const is not None:
            return literal(node.const)
        if node.name in scope_values:
            return scope_values[node.name]
        if node.derived_from is not None:
            return self.derived_values[node.name]
        return f"self.{node.name}"

    def encode_items(
        self, out: Lines, items: list[Item], owner: str, scope_values: dict[str, str]
    ) -> None:
        for run, item in self.runs(items):
            if run:
                self.encode_fixed_run(out, run, owner, scope_values)
                continue
            assert item is not None
            node = item.node
            assert not isinstance(node, Word)
            value = scope_values.get(node.name, f"self.{node.name}")
            if item.condition is not None:
                local = self.fresh("opt")
                out(f"{local} = {value}")
                out(f"if {local} is not None:")
                out.indent()
                self.encode_value(out, node, local, owner)
                out.dedent()
            else:
                self.encode_value(out, node, value, owner)

    def encode_fixed_run(
        self, out: Lines, run: list[IntField | Word], owner: str, scope_values: dict[str, str]
    ) -> None:
        args: list[str] = []
        fmt = ""
        for node in run:
            fmt += self.unit_format(node)
            if isinstance(node, Word):
                parts = []
                shift = node.type.bits
                for bit in node.bits:
                    shift -= bit.width
                    if bit.kind == "reserved":
                        continue  # reserved bits: 0 on send
                    if bit.kind == "flags":
                        source = "flags"
                    else:
                        assert bit.value is not None
                        source = self.int_source(bit.value, scope_values)
                        if bit.value.const is None and not is_literal(source):
                            lo, hi = self.int_bounds(bit.value)
                            local = self.fresh("bits")
                            out(f"{local} = {source}")
                            self.check_range(out, local, lo, hi, self.where(owner, bit.value.name))
                            source = local
                    parts.append(f"({source} << {shift})" if shift else source)
                args.append(" | ".join(parts) if parts else "0")
            else:
                source = self.int_source(node, scope_values)
                if node.const is None and not is_literal(source):
                    lo, hi = self.int_bounds(node)
                    local = self.fresh("int")
                    out(f"{local} = {source}")
                    self.check_range(out, local, lo, hi, self.where(owner, node.name))
                    source = local
                if node.type.name == "u24":
                    args += [f"{source} >> 16", f"{source} & 0xFFFF"]
                else:
                    args.append(source)
        if fmt == "B":
            out(f"{self.sink}.append(bytes(({args[0]},)))")
        else:
            out(f"{self.sink}.append({self.struct_const(fmt)}.pack({', '.join(args)}))")

    def write_int(
        self,
        out: Lines,
        itype: IntType,
        value: str,
        what: str,
        lo: int | None = None,
        hi: int | None = None,
    ) -> None:
        lo = itype.min if lo is None else lo
        hi = itype.max if hi is None else hi
        if itype.name == "varint":
            if lo != itype.min or hi != itype.max:
                self.check_range(out, value, lo, hi, what)
            out(f"{self.sink}.append(_support.write_varint({value}))")
        elif itype.name == "varu64":
            if lo != itype.min or hi != itype.max:
                self.check_range(out, value, lo, hi, what)
            out(f"{self.sink}.append(_support.write_varu64({value}))")
        else:
            self.check_range(out, value, lo, hi, what)
            if itype.name == "u24":
                out(f'{self.sink}.append({value}.to_bytes(3, "big"))')
            elif itype.name == "u8":
                out(f"{self.sink}.append(bytes(({value},)))")
            else:
                out(
                    f"{self.sink}.append({self.struct_const(STRUCT_CODES[itype.name])}.pack({value}))"
                )

    def encode_value(self, out: Lines, node: Element | ArrayField, value: str, owner: str) -> None:
        what = self.where(owner, node.name)
        if isinstance(node, IntField):
            lo, hi = self.int_bounds(node)
            self.write_int(out, node.type, value, what, lo, hi)
        elif isinstance(node, BytesField):
            self.encode_bytes(out, node, value, what)
        elif isinstance(node, RefField):
            out(f"{value}._write({self.sink}, ctx)")
        else:
            self.encode_array(out, node, value, owner)

    def encode_bytes(self, out: Lines, node: BytesField, value: str, what: str) -> None:
        if node.nullable:
            out(f"if {value} is None:")
            assert node.length is not None
            out.indent()
            self.write_int(out, node.length, "-1", what)
            out.dedent()
            out("else:")
            out.indent()
        raw = self.pre_encoded.get(node.name) if value == f"self.{node.name}" else None
        if raw is None:
            raw = self.fresh("raw")
            out(f'{raw} = {value}.encode("utf-8")' if node.is_string else f"{raw} = {value}")
        if node.rest:
            out(f"{self.sink}.append({raw})")
        elif node.size is not None and node.size.single_name in self.derived_values:
            out(f"{self.sink}.append({raw})")  # its length was written by the field it derives
        elif node.size is not None:
            size = self.fresh("n")
            out(f"{size} = {self.expr_code(node.size, self.scope)}")
            if node.length is not None:
                out(f"if {size} <= 0:")
                out.indent()
                length = self.fresh("n")
                out(f"{length} = len({raw})")
                self.write_int(out, node.length, length, f"{what} length", 0, node.length.max)
                out.dedent()
                out(f"elif len({raw}) != {size}:")
            else:
                out(f"if len({raw}) != {size}:")
            out(
                f'    raise EncodeError(f"{what}: {{len({raw})}} bytes, but the layout needs exactly {{{size}}}")'
            )
            out(f"{self.sink}.append({raw})")
        else:
            assert node.length is not None
            length = self.fresh("n")
            out(f"{length} = len({raw})")
            self.write_int(out, node.length, length, f"{what} length", 0, node.length.max)
            out(f"{self.sink}.append({raw})")
        if node.nullable:
            out.dedent()

    def encode_array(self, out: Lines, node: ArrayField, value: str, owner: str) -> None:
        what = self.where(owner, node.name)
        if node.count_prefix is not None:
            self.write_int(
                out, node.count_prefix, f"len({value})", f"{what} count", 0, node.count_prefix.max
            )
        elif node.count_expr is not None and node.count_expr.single_name not in self.derived_values:
            out(f"if len({value}) != {self.expr_code(node.count_expr, self.scope)}:")
            out(f'    raise EncodeError("{what}: the element count does not match its layout")')
        if node.name in self.pre_encoded:
            out(f"{self.sink}.append({self.pre_encoded[node.name]})")
            return
        if node.byte_length_prefix is not None:
            sub = self.fresh("parts")
            out(f"{sub}: list[bytes] = []")
            self.encode_elements(out, node, value, owner, sub)
            joined = self.fresh("joined")
            out(f'{joined} = b"".join({sub})')
            self.write_int(
                out,
                node.byte_length_prefix,
                f"len({joined})",
                f"{what} byte length",
                0,
                node.byte_length_prefix.max,
            )
            out(f"{self.sink}.append({joined})")
            return
        self.encode_elements(out, node, value, owner, "out")

    def encode_elements(
        self, out: Lines, node: ArrayField, value: str, owner: str, target: str
    ) -> None:
        item = self.fresh("item")
        element = node.element
        elem_size = None
        if isinstance(element, BytesField) and element.size is not None and element.length is None:
            elem_size = self.fresh("size")
            out(f"{elem_size} = {self.expr_code(element.size, self.scope)}")
        out(f"for {item} in {value}:")
        out.indent()
        saved_sink, self.sink = self.sink, target
        what = self.where(owner, node.name)
        if elem_size is not None:
            raw = (
                item
                if not (isinstance(element, BytesField) and element.is_string)
                else f'{item}.encode("utf-8")'
            )
            out(f"if len({raw}) != {elem_size}:")
            out(
                f'    raise EncodeError(f"{what}: an element has {{len({raw})}} bytes, the layout needs {{{elem_size}}}")'
            )
            out(f"{self.sink}.append({raw})")
        elif isinstance(element, IntField):
            lo, hi = self.int_bounds(element)
            self.write_int(out, element.type, item, what, lo, hi)
        elif isinstance(element, BytesField):
            renamed = BytesField(
                node.name,
                element.is_string,
                element.length,
                element.rest,
                element.nullable,
                element.size,
            )
            saved = self.pre_encoded
            self.pre_encoded = {}
            self.encode_bytes(out, renamed, item, what)
            self.pre_encoded = saved
        else:
            out(f"{item}._write({self.sink}, ctx)")
        self.sink = saved_sink
        out.dedent()

    def prepare_derived(self, out: Lines, items: list[Item], owner: str) -> None:
        """Compute the values that derived fields carry, before anything is written."""
        self.derived_values = {}
        self.pre_encoded = {}
        values = {v.name: v for item in items for v in self.values(item)}
        for item in items:
            node = item.node
            if (
                isinstance(node, BytesField)
                and node.size is not None
                and node.size.single_name in values
            ):
                target = values[node.size.single_name]
                if target.derived_from == node.name:
                    raw = self.fresh("raw")
                    out(
                        f'{raw} = self.{node.name}.encode("utf-8")'
                        if node.is_string
                        else f"{raw} = self.{node.name}"
                    )
                    self.pre_encoded[node.name] = raw
                    self.derived_values[target.name] = f"len({raw})"
            if isinstance(node, ArrayField):
                if node.count_expr is not None and node.count_expr.single_name in values:
                    target = values[node.count_expr.single_name]
                    if target.derived_from == node.name:
                        self.derived_values[target.name] = f"len(self.{node.name})"
                if (
                    node.byte_length_expr is not None
                    and node.byte_length_expr.single_name in values
                ):
                    target = values[node.byte_length_expr.single_name]
                    if target.derived_from == node.name:
                        sub = self.fresh("parts")
                        out(f"{sub}: list[bytes] = []")
                        self.encode_elements(out, node, f"self.{node.name}", owner, sub)
                        joined = self.fresh("joined")
                        out(f'{joined} = b"".join({sub})')
                        self.pre_encoded[node.name] = joined
                        self.derived_values[target.name] = f"len({joined})"

    # --- whole module -------------------------------------------------------------------------

    def hdr_params(self) -> list[str]:
        params = [f"{self.d_var(v.name)}: int" for v in self.header_attrs]
        if self.has_flags:
            params.append("flags: int")
        return params

    def hdr_args(self) -> list[str]:
        args = [self.d_var(v.name) for v in self.header_attrs]
        if self.has_flags:
            args.append("flags")
        return args

    def frame_class(self, frame: Frame) -> PyClass:
        attrs = self.frame_attrs(frame)
        code = frame.code[0] if len(frame.code) == 1 else list(frame.code)
        doc = doc_lines(frame.doc) or [f"The {frame.name} frame."]
        if frame.spec:
            doc += ["", f"Spec: {frame.spec}"]
        doc += ["", f"Code: {code!r}; sent by: {frame.sender}."]
        class_lines = [
            f"FRAME_TYPE: ClassVar[FrameType] = FrameType.{upper_snake(frame.name)}",
            f'SENDER: ClassVar[str] = "{frame.sender}"',
        ]
        methods = self.common_methods(frame.name, attrs)
        methods.append(self.to_bytes_method(frame))
        if "msgpack" in self.proto.encodings:
            methods.append(self.to_msgpack_method(frame.code, attrs))
        return PyClass(frame.name, doc, attrs, class_lines, methods)

    def frame_flags_lines(self, out: Lines, frame: Frame) -> None:
        constant = sum(
            mask
            for name, mask in {**self.proto.common_flags, **frame.flags}.items()
            if name in frame.set_flags
        )
        if self.frame_flag_attrs(frame):
            out(f"flags = self._flags | {literal(constant)}" if constant else "flags = self._flags")
        else:
            out(f"flags = {literal(constant)}")
        present = []
        for item in frame.items:
            if item.condition is not None and item.condition not in present:
                present.append(item.condition)
                out(f"if self.{item.node.name} is not None:")  # type: ignore[union-attr]
                out(f"    flags |= {literal(self.current_flags[item.condition])}")

    def header_scope(self, code: tuple[int, ...] | None) -> dict[str, str]:
        scope: dict[str, str] = {}
        for index, name in enumerate(self.proto.discriminator):
            if code is not None:
                scope[name] = literal(code[index])
            else:
                scope[name] = (
                    "self.code" if len(self.proto.discriminator) == 1 else f"self.code[{index}]"
                )
        return scope

    def to_bytes_method(self, frame: Frame) -> list[str]:
        out = self.lines()
        self.scope = "encode"
        self.current_flags = {**self.proto.common_flags, **frame.flags}
        if self.has_flags:
            self.frame_flags_lines(out, frame)
        self.prepare_derived(out, frame.items, frame.name)
        out("out: list[bytes] = []")
        self.encode_items(out, self.proto.header, frame.name, self.header_scope(frame.code))
        self.encode_items(out, frame.items, frame.name, {})
        out('return b"".join(out)')
        return [
            "def to_bytes(self, ctx: Context | None = None) -> bytes:",
            '    """The frame\'s bytes, without the transport\'s length prefix."""',
            *out.lines,
        ]

    def to_msgpack_method(self, code: tuple[int, ...] | None, attrs: list[PyAttr]) -> list[str]:
        head = (
            "self.code"
            if code is None
            else (literal(code[0]) if len(code) == 1 else repr(list(code)))
        )
        values = [head] + [self.msgpack_value(a) for a in attrs]
        return [
            "def to_msgpack(self) -> list[object]:",
            '    """The frame as the MessagePack array [code, field, ...]."""',
            f"    return [{', '.join(values)}]",
        ]

    def msgpack_value(self, attr: PyAttr) -> str:
        if attr.annotation.startswith("list[") and attr.annotation[5:-1] in self.struct_names:
            return f"[item.to_msgpack() for item in self.{attr.name}]"
        if attr.annotation in self.struct_names:
            return f"self.{attr.name}.to_msgpack()"
        return f"self.{attr.name}"

    def struct_class(self, struct: Struct) -> PyClass:
        attrs = self.item_attrs(struct.items)
        methods = self.common_methods(struct.name, attrs)
        out = self.lines()
        self.scope = "encode"
        self.prepare_derived(out, struct.items, struct.name)
        self.encode_items(out, struct.items, struct.name, {})
        if not out.lines:
            out("pass")
        methods.append(
            ["def _write(self, out: list[bytes], ctx: Context | None) -> None:", *out.lines]
        )
        if "msgpack" in self.proto.encodings:
            methods.append([
                "def to_msgpack(self) -> list[object]:",
                f"    return [{', '.join(self.msgpack_value(a) for a in attrs)}]",
            ])  # fmt: skip
        return PyClass(
            struct.name,
            doc_lines(struct.doc) or [f"The {struct.name} structure."],
            attrs,
            [],
            methods,
        )

    def unknown_class(self) -> PyClass | None:
        policy = self.proto.unknown
        if policy.policy == "error":
            return None
        code_type = (
            "int"
            if len(self.proto.discriminator) == 1
            else "tuple[" + ", ".join(["int"] * len(self.proto.discriminator)) + "]"
        )
        code_default = (
            "0"
            if len(self.proto.discriminator) == 1
            else "(" + ", ".join(["0"] * len(self.proto.discriminator)) + ")"
        )
        attrs = [PyAttr("code", code_type, code_default, "the unknown type code", "code")]
        attrs += [self.int_attr(v) for v in self.header_attrs]
        if self.has_flags:
            attrs.append(PyAttr("flags", "int", "0", "all flag bits as received", "flags"))
        attrs.append(PyAttr("body", "bytes", 'b""', "the frame's bytes after the header", "body"))
        doc = ["A frame of a type this version does not define, kept so nothing is lost."]
        if policy.policy == "ignore_if_flag":
            doc.append(
                f"Decoded only when its `{policy.flag}` flag is set: the receiver should ignore it."
            )
        else:
            doc.append("Its length prefix let the decoder skip it; the receiver should ignore it.")
        methods = self.common_methods("UnknownFrame", attrs)
        out = self.lines()
        self.scope = "encode"
        self.derived_values, self.pre_encoded = {}, {}
        out("out: list[bytes] = []")
        if self.has_flags:
            out("flags = self.flags")
        self.encode_items(out, self.proto.header, "UnknownFrame", self.header_scope(None))
        if policy.policy == "skip_length":
            assert policy.length is not None
            self.write_int(
                out,
                policy.length,
                "len(self.body)",
                "UnknownFrame.body length",
                0,
                policy.length.max,
            )
        out("out.append(self.body)")
        out('return b"".join(out)')
        methods.append(["def to_bytes(self, ctx: Context | None = None) -> bytes:", *out.lines])
        if "msgpack" in self.proto.encodings:
            methods.append(
                ["def to_msgpack(self) -> list[object]:", "    return [self.code, self.body]"]
            )
        return PyClass("UnknownFrame", doc, attrs, [], methods)

    def frame_decoder(self, frame: Frame) -> PyFunction:
        out = self.lines()
        self.scope = "decode"
        self.current_flags = {**self.proto.common_flags, **frame.flags}
        self.decode_items(out, frame.items, frame.name)
        # Built without __init__: flags are stored as received (masked), not as bools.
        out(f"frame = _new({frame.name})")
        for value in self.header_attrs:
            out(f"frame.{value.name} = {self.d_var(value.name)}")
        flag_masks = sum(mask for _, mask in self.frame_flag_attrs(frame))
        if flag_masks:
            out(f"frame._flags = flags & {literal(flag_masks)}")
        for attr in self.item_attrs(frame.items):
            out(f"frame.{attr.name} = {self.d_var(attr.name)}")
        out("return frame, pos")
        params = ", ".join(
            ["data: bytes", "pos: int", "end: int", "ctx: Context | None", *self.hdr_params()]
        )
        return PyFunction(
            [
                f"def _decode_{lower_snake(frame.name)}({params}) -> tuple[{frame.name}, int]:",
                *out.lines,
            ]
        )

    def struct_decoder(self, struct: Struct) -> PyFunction:
        out = self.lines()
        self.scope = "decode"
        self.decode_items(out, struct.items, struct.name)
        args = [self.d_var(a.name) for a in self.item_attrs(struct.items)]
        out(f"return {struct.name}({', '.join(args)}), pos")
        head = f"def _decode_{struct.name}(data: bytes, pos: int, end: int, ctx: Context | None) -> tuple[{struct.name}, int]:"
        return PyFunction([head, *out.lines])

    def union_decoder(self, union: Union_) -> PyFunction:
        out = self.lines()
        size = union.peek.size
        assert size is not None
        out(f"if end - pos < {size}:")
        out(f'    raise Truncated("{union.name}: input ends", needed=pos + {size})')
        peek = (
            "data[pos]"
            if size == 1
            else f"{self.struct_const(STRUCT_CODES[union.peek.name])}.unpack_from(data, pos)[0]"
        )
        out(f"tag = {peek} & {literal(union.mask)}")
        for tag, struct in union.variants.items():
            out(f"if tag == {literal(tag)}:")
            out(f"    return _decode_{struct.name}(data, pos, end, ctx)")
        out(f'raise InvalidValue(f"{union.name}: no variant for tag {{tag:#x}}")')
        head = f"def _decode_{union.name}(data: bytes, pos: int, end: int, ctx: Context | None) -> tuple[{union.name}, int]:"
        return PyFunction([head, *out.lines])

    def key_expr(self) -> str:
        names = [self.d_var(n) for n in self.proto.discriminator]
        return names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"

    def code_key(self, code: tuple[int, ...]) -> str:
        return (
            literal(code[0]) if len(code) == 1 else "(" + ", ".join(literal(c) for c in code) + ")"
        )

    def table_key(self, code: tuple[int, ...], frame: Frame) -> str:
        """A decoder table's key for ``frame`` under ``code``: its ``FrameType`` member's
        value when ``code`` is the frame's own code, else (``also_codes``) the code."""
        if code == frame.code:
            return f"FrameType.{upper_snake(frame.name)}.value"
        return self.code_key(code)

    def decode_at_function(self, tables: list[str]) -> PyFunction:
        out = self.lines()
        self.scope = "decode"
        self.current_flags = dict(self.proto.common_flags)
        self.decode_items(out, self.proto.header, "header")
        out(f"key = {self.key_expr()}")
        if self.sender_tables:
            out("if sender is None:")
            out("    table = _DECODERS")
            out("elif sender in _DECODERS_FROM:")
            out("    table = _DECODERS_FROM[sender]")
            out("else:")
            out(
                '    raise LocalProtocolError(f"sender must be client, server or None, not {sender!r}")'
            )
            out("decoder = table.get(key)")
        else:
            out("decoder = _DECODERS.get(key)")
        out("if decoder is None:")
        out.indent()
        policy = self.proto.unknown
        title = self.proto.title
        hdr = [self.d_var(v.name) for v in self.header_attrs]
        if policy.policy == "ignore_if_flag":
            assert policy.flag is not None
            out(f"if flags & {literal(self.proto.common_flags[policy.flag])}:")
            args = ", ".join(["key", *hdr, "flags", "data[pos:end]"])
            out(f"    return UnknownFrame({args}), end")
        elif policy.policy == "skip_length":
            assert policy.length is not None
            self.read_int(out, policy.length, "length", "UnknownFrame", "body", "end")
            out("if length > end - pos:")
            out(
                '    raise Truncated(f"unknown frame {key!r}: {length} bytes declared", needed=pos + length)'
            )
            args = ", ".join(
                ["key", *hdr, *(["flags"] if self.has_flags else []), "data[pos : pos + length]"]
            )
            out(f"return UnknownFrame({args}), pos + length")
        if policy.policy != "skip_length":
            out(f'raise UnknownFrameType(f"{title}: unknown frame type {{key!r}}")')
        out.dedent()
        out(f"return decoder({', '.join(['data', 'pos', 'end', 'ctx', *self.hdr_args()])})")
        head = ("def decode_at(data: bytes, pos: int, end: int, ctx: Context | None = None, "
                "sender: str | None = None) -> tuple[Frame, int]:")  # fmt: skip
        doc = '    """Decode one frame from ``data[pos:end]``; returns it and the position after it."""'
        return PyFunction([head, doc, *out.lines])

    def msgpack_decoder(self, frame: Frame) -> PyFunction:
        out = self.lines()
        attrs = self.frame_attrs(frame)
        out(f"if len(items) != {len(attrs) + 1}:")
        out(
            f'    raise MalformedMsgpack(f"{frame.name}: expected {len(attrs) + 1} values, got {{len(items)}}")'
        )
        sizes = self.msgpack_sizes(frame)
        for index, attr in enumerate(attrs, start=1):
            out(f"{self.d_var(attr.name)} = {self.msgpack_check(attr, index, frame.name)}")
            if attr.name in sizes:
                expr, is_array = sizes[attr.name]
                n = self.fresh("n")
                value = self.d_var(attr.name)
                out(f"{n} = {self.expr_code(expr, 'decode')}")
                if is_array:
                    out(f"if any(len(item) != {n} for item in {value}):")
                else:
                    out(f"if {n} > 0 and {value} is not None and len({value}) != {n}:")
                out(
                    f'    raise InvalidValue(f"{frame.name}.{attr.name}: the layout needs {{{n}}} bytes")'
                )
        out(f"return {frame.name}({', '.join(self.d_var(a.name) for a in attrs)})")
        head = f"def _mp_{lower_snake(frame.name)}(items: list[object], ctx: Context | None) -> {frame.name}:"
        return PyFunction([head, *out.lines])

    def msgpack_sizes(self, frame: Frame) -> dict[str, tuple[Expr, bool]]:
        sizes: dict[str, tuple[Expr, bool]] = {}
        for item in frame.items:
            node = item.node
            if isinstance(node, BytesField) and node.size is not None:
                sizes[node.name] = (node.size, False)
            if (
                isinstance(node, ArrayField)
                and isinstance(node.element, BytesField)
                and node.element.size is not None
            ):
                sizes[node.name] = (node.element.size, True)
        return sizes

    def msgpack_check(self, attr: PyAttr, index: int, owner: str) -> str:
        value = f"items[{index}]"
        what = f'"{owner}.{attr.name}"'
        annotation = attr.annotation
        optional = annotation.endswith(" | None")
        base = annotation[: -len(" | None")] if optional else annotation
        if base.startswith("list["):
            element = base[5:-1]
            check = {"bytes": "_support.mp_bytes", "str": "_support.mp_str"}.get(element)
            if element == "int":
                node = self.find_int(owner, attr.name)
                lo, hi = self.int_bounds(node) if node else (0, (1 << 64) - 1)
                return f"[_support.mp_int(item, {literal(lo)}, {literal(hi)}, {what}) for item in _support.mp_list({value}, {what})]"
            if check is None:
                raise ValueError(
                    f"msgpack encoding of {owner}.{attr.name} ({annotation}) is not supported"
                )
            return f"[{check}(item, {what}) for item in _support.mp_list({value}, {what})]"
        if base == "bool":
            code = f"_support.mp_bool({value}, {what})"
        elif base == "bytes":
            code = f"_support.mp_bytes({value}, {what})"
        elif base == "str":
            code = f"_support.mp_str({value}, {what})"
        elif base == "int" or base in self.enum_names:
            node = self.find_int(owner, attr.name)
            lo, hi = self.int_bounds(node) if node else (0, (1 << 64) - 1)
            code = f"_support.mp_int({value}, {literal(lo)}, {literal(hi)}, {what})"
            if base in self.enum_names:
                code = f"{base}({code})"
        else:
            raise ValueError(
                f"msgpack encoding of {owner}.{attr.name} ({annotation}) is not supported"
            )
        if optional:
            return f"None if {value} is None else {code}"
        return code

    def find_int(self, owner: str, name: str) -> IntField | None:
        for frame in self.proto.frames:
            if frame.name == owner:
                for item in self.proto.header + frame.items:
                    for value in self.values(item):
                        if value.name == name:
                            return value
                    node = item.node
                    if (
                        isinstance(node, ArrayField)
                        and node.name == name
                        and isinstance(node.element, IntField)
                    ):
                        return node.element
                    if isinstance(node, IntField) and node.name == name:
                        return node
        return None

    # --- hypothesis strategies ---------------------------------------------------------------

    def st_int(self, node: IntField) -> str:
        if node.enum is not None and not node.enum.open:
            return f"st.sampled_from({node.enum.name})"
        lo, hi = self.int_bounds(node)
        return f"st.integers({literal(lo)}, {literal(hi)})"

    def st_bytes(self, out: Lines, node: BytesField, assigned: set[str]) -> str:
        limit = STRATEGY_MAX_BYTES
        if node.length is not None:
            limit = min(limit, node.length.max)
        if node.is_string:
            base = f'st.text(st.characters(codec="utf-8"), max_size={max(0, limit // 4)})'
        else:
            base = f"st.binary(max_size={limit})"
        if node.size is not None and node.size.single_name not in self.strategy_derived:
            self.st_context(out, node.size, assigned, positive=node.length is None)
            size = self.fresh("n")
            out(f"{size} = {self.expr_code(node.size, 'strategy')}")
            exact = f"st.binary(min_size={size}, max_size={size})"
            if node.is_string:
                exact = f'st.text(st.sampled_from("ab"), min_size={size}, max_size={size})'
            base = f"({exact} if {size} > 0 else {base})" if node.length is not None else exact
        if node.nullable:
            base = f"st.none() | {base}"
        return base

    def st_context(self, out: Lines, expr: Expr, assigned: set[str], positive: bool) -> None:
        for name in expr.context_names:
            if name in assigned:
                continue
            assigned.add(name)
            value = self.context_names[name]
            lo = 1 if positive else 0
            target = (
                f"ctx.{name}[{self.d_var(value.keyed_by)}]" if value.keyed_by else f"ctx.{name}"
            )
            out(f"{target} = draw(st.integers({lo}, 8))")

    def st_element(self, out: Lines, element: Element, assigned: set[str]) -> str:
        if isinstance(element, IntField):
            return self.st_int(element)
        if isinstance(element, BytesField):
            return self.st_bytes(out, element, assigned)
        return self.st_ref(element)

    def st_ref(self, node: RefField) -> str:
        target = node.target
        if isinstance(target, Struct):
            return f"{lower_snake(target.name)}_struct()"
        return (
            "st.one_of("
            + ", ".join(f"{lower_snake(v.name)}_struct()" for v in target.variants.values())
            + ")"
        )

    def st_items(self, out: Lines, items: list[Item], assigned: set[str]) -> None:
        self.strategy_derived = {
            v.name for item in items for v in self.values(item) if v.derived_from
        }
        for item in items:
            node = item.node
            if isinstance(node, Word):
                for bit in node.bits:
                    if bit.value is not None and self.is_attr(bit.value):
                        out(f"{self.d_var(bit.value.name)} = draw({self.st_int(bit.value)})")
                continue
            if isinstance(node, IntField):
                if not self.is_attr(node):
                    continue
                strategy = self.st_int(node)
            elif isinstance(node, BytesField):
                strategy = self.st_bytes(out, node, assigned)
            elif isinstance(node, RefField):
                strategy = self.st_ref(node)
            else:
                element = node.element
                if isinstance(element, BytesField) and element.size is not None:
                    self.st_context(out, element.size, assigned, positive=element.length is None)
                elem = self.st_element(out, element, assigned)
                strategy = f"st.lists({elem}, max_size={STRATEGY_MAX_ITEMS})"
            if item.condition is not None:
                strategy = f"st.none() | {strategy}"
            out(f"{self.d_var(node.name)} = draw({strategy})")

    def frame_strategy(self, frame: Frame) -> PyFunction:
        out = self.lines()
        out("ctx = Context()")
        assigned: set[str] = set()
        for value in self.header_attrs:
            out(f"{self.d_var(value.name)} = draw({self.st_int(value)})")
        for name, _ in self.frame_flag_attrs(frame):
            out(f"{self.d_var(name)} = draw(st.booleans())")
        self.st_items(out, frame.items, assigned)
        args = ", ".join(self.d_var(a.name) for a in self.frame_attrs(frame))
        if not any("draw(" in line for line in out.lines):
            return PyFunction([
                f"def {lower_snake(frame.name)}() -> st.SearchStrategy[tuple[{frame.name}, Context]]:",
                f'    """A {frame.name} frame (it has no fields to draw)."""',
                f"    return st.builds(lambda: ({frame.name}(), Context()))",
            ])  # fmt: skip
        out(f"return {frame.name}({args}), ctx")
        return PyFunction([
            "@st.composite",
            f"def {lower_snake(frame.name)}(draw: st.DrawFn) -> tuple[{frame.name}, Context]:",
            f'    """A {frame.name} frame and the context it needs."""',
            *out.lines,
        ])  # fmt: skip

    def struct_strategy(self, struct: Struct) -> PyFunction:
        out = self.lines()
        out("ctx = Context()")
        self.st_items(out, struct.items, set())
        out("del ctx")
        args = ", ".join(self.d_var(a.name) for a in self.item_attrs(struct.items))
        if not any("draw(" in line for line in out.lines):
            return PyFunction([
                f"def {lower_snake(struct.name)}_struct() -> st.SearchStrategy[{struct.name}]:",
                f"    return st.builds({struct.name})",
            ])  # fmt: skip
        out(f"return {struct.name}({args})")
        return PyFunction([
            "@st.composite",
            f"def {lower_snake(struct.name)}_struct(draw: st.DrawFn) -> {struct.name}:",
            *out.lines,
        ])  # fmt: skip

    # --- context tracking --------------------------------------------------------------------

    def context_tracker(self) -> PyFunction | None:
        """``track_context(frame, ctx)``: the context values' ``set_by`` and ``cleared_by``
        rules, one branch per group of frames that do the same; None without context."""
        if not self.proto.context:
            return None
        actions: dict[str, list[str]] = {}
        for value in self.proto.context:
            target = f"ctx.{value.name}"
            default = literal(value.default)
            for frame_name, field_name in value.set_by:
                source = f"frame.{field_name}"
                if value.keyed_by is None:
                    steps = [f"{target} = {source}"]
                else:
                    key = f"frame.{value.keyed_by}"
                    steps = [
                        f"if {source} != {default}:",
                        f"    {target}[{key}] = {source}",
                        "else:",
                        f"    {target}.pop({key}, None)",
                    ]
                actions.setdefault(frame_name, []).extend(steps)
            for frame_name in value.cleared_by:
                if value.keyed_by is None:
                    line = f"{target} = {default}"
                else:
                    line = f"{target}.pop(frame.{value.keyed_by}, None)"
                actions.setdefault(frame_name, []).append(line)
        groups: dict[tuple[str, ...], list[str]] = {}
        for frame in self.proto.frames:  # in the IDL's order
            if frame.name in actions:
                groups.setdefault(tuple(actions[frame.name]), []).append(frame.name)
        rules = []
        for value in self.proto.context:
            per = f" (per {value.keyed_by})" if value.keyed_by else ""
            parts = (
                [f"set by {', '.join(f'{f}.{n}' for f, n in value.set_by)}"] if value.set_by else []
            )
            if value.cleared_by:
                parts.append(
                    f"back to {literal(value.default)} after {', '.join(value.cleared_by)}"
                )
            rules.append(f"    - ``{value.name}``{per}: {'; '.join(parts) or 'set by the caller'}.")
        lines = [
            "def track_context(frame: Frame, ctx: Context) -> None:",
            '    """Keep ``ctx`` in step with the frames of one direction: call it with each frame',
            "    in stream order, after it is decoded (or encoded) and before the next one is.",
            "",
            *rules,
            '    """',
        ]
        if not groups:
            lines.append("    del frame, ctx  # no frame sets a context value: the caller does")
            return PyFunction(lines)
        lines.append("    kind = type(frame)")
        keyword = "if"
        for body, frames in groups.items():
            test = " or ".join(f"kind is {name}" for name in frames)
            kinds = frames[0] if len(frames) == 1 else "(" + ", ".join(frames) + ")"
            lines.append(f"    {keyword} {test}:")
            lines.append(f"        assert isinstance(frame, {kinds})")
            lines += ["        " + line for line in body]
            keyword = "elif"
        return PyFunction(lines)

    # --- assembly -------------------------------------------------------------------------------

    def enum(self, enum: Enum) -> PyEnum:
        doc = doc_lines(enum.doc) or [f"{enum.name} values."]
        if enum.open:
            doc += ["", "Open: fields typed with this enum keep unlisted values as plain ints."]
        return PyEnum(enum.name, "IntEnum", doc, [(m, literal(v)) for m, v in enum.values.items()])

    def plan(self) -> PyModule:
        proto = self.proto
        self.struct_names = {s.name for s in proto.structs}
        self.enum_names = {e.name for e in proto.enums if not e.open}
        codes: dict[tuple[int, ...], list[Frame]] = {}
        for frame in proto.frames:
            for code in [frame.code, *frame.also_codes]:
                codes.setdefault(code, []).append(frame)
        self.sender_tables = any(len(frames) > 1 for frames in codes.values())
        enums = [self.enum(e) for e in proto.enums]
        single = len(proto.discriminator) == 1
        frame_type = PyEnum(
            "FrameType",
            "IntEnum" if single else "Enum",
            ["The frame type codes of this protocol version."],
            [(upper_snake(f.name), self.code_key(f.code)) for f in proto.frames],
        )
        enums.insert(0, frame_type)
        classes = [self.struct_class(s) for s in proto.structs]
        aliases = [
            f"{u.name} = " + " | ".join(v.name for v in u.variants.values()) for u in proto.unions
        ]
        context_attrs = []
        for value in proto.context:
            if value.keyed_by:
                context_attrs.append(PyAttr(value.name, "dict[int, int]", "None", value.doc or f"per {value.keyed_by}",
                                            f"{{}} if {value.name} is None else {value.name}"))  # fmt: skip
            else:
                context_attrs.append(
                    PyAttr(value.name, "int", literal(value.default), value.doc, value.name)
                )
        context = PyClass("Context", ["Values negotiated on a connection that frame layouts depend on."],
                          context_attrs, [], self.common_methods("Context", context_attrs))  # fmt: skip
        classes.insert(0, context)
        for frame in proto.frames:
            classes.append(self.frame_class(frame))
        unknown = self.unknown_class()
        frame_names = [f.name for f in proto.frames] + (["UnknownFrame"] if unknown else [])
        if unknown:
            classes.append(unknown)
        functions = [self.struct_decoder(s) for s in proto.structs]
        functions += [self.union_decoder(u) for u in proto.unions]
        functions += [self.frame_decoder(f) for f in proto.frames]
        params = ", ".join(
            ["bytes", "int", "int", "Context | None", *(["int"] * len(self.hdr_args()))]
        )
        tables = [f"_Decoder = Callable[[{params}], tuple[Frame, int]]"]
        if self.sender_tables:
            hdr = ", ".join(self.hdr_params())
            functions.append(PyFunction([
                f"def _ambiguous(data: bytes, pos: int, end: int, ctx: Context | None{', ' if hdr else ''}{hdr}) -> tuple[Frame, int]:",
                '    raise AmbiguousFrameType("this code is used by a client frame and a server frame: pass sender=")',
            ]))  # fmt: skip
        table_any = []
        table_from: dict[str, list[str]] = {"client": [], "server": []}
        for code, frames in codes.items():
            if len(frames) == 1:
                key = self.table_key(code, frames[0])
                table_any.append(entry(key, f"_decode_{lower_snake(frames[0].name)}", 4))
            else:
                table_any.append(f"{self.code_key(code)}: _ambiguous,")
            for sender in ("client", "server"):
                match = [f for f in frames if f.sender in (sender, "any")]
                if match:
                    key = self.table_key(code, match[0])
                    decoder = f"_decode_{lower_snake(match[0].name)}"
                    table_from[sender].append(entry(key, decoder, 8))
        tables.append(
            "# Keyed by the codes' plain values: the code read from the wire finds its entry"
        )
        tables.append("# without a comparison against an enum member.")
        tables.append("_DECODERS: dict[object, _Decoder] = {")
        tables += ["    " + line for line in table_any]
        tables.append("}")
        if self.sender_tables:
            tables.append("_DECODERS_FROM: dict[str, dict[object, _Decoder]] = {")
            for sender, lines in table_from.items():
                tables.append(f'    "{sender}": {{')
                tables += ["        " + line for line in lines]
                tables.append("    },")
            tables.append("}")
        api = [self.decode_at_function(tables)]
        tracker = self.context_tracker()
        if tracker is not None:
            api.append(tracker)
        exports = ["Context", "FrameType", "Frame", *[e.name for e in proto.enums], *[s.name for s in proto.structs],
                   *[u.name for u in proto.unions], *frame_names, "decode", "decode_at", "encode", "frame_bytes",
                   "StreamDecoder", "MAX_FRAME_SIZE", "LENGTH_PREFIX_SIZE", "ENCODINGS",
                   "NEEDS_SENDER", "NEEDS_CONTEXT"]  # fmt: skip
        if tracker is not None:
            exports.append("track_context")
        if "msgpack" in proto.encodings:
            msgpack_table = [
                "_MSGPACK_DECODERS: dict[object, Callable[[list[object], Context | None], Frame]] = {"
            ]
            for frame in proto.frames:
                functions.append(self.msgpack_decoder(frame))
                key = self.table_key(frame.code, frame)
                msgpack_table.append("    " + entry(key, f"_mp_{lower_snake(frame.name)}", 4))
            msgpack_table.append("}")
            tables += msgpack_table
            exports += ["encode_msgpack", "decode_msgpack", "MsgpackStreamDecoder"]
        strategies = [self.struct_strategy(s) for s in proto.structs]
        strategies += [self.frame_strategy(f) for f in proto.frames]
        strategy_exports = [lower_snake(f.name) for f in proto.frames]
        doc = [f"{proto.title}: frames, codec and stream decoder."]
        if proto.spec:
            doc += ["", f"Spec: {proto.spec}"]
        if proto.doc:
            doc += [""] + doc_lines(proto.doc)
        return PyModule(
            source=proto.source,
            title=proto.title,
            doc=doc,
            structs=sorted(self.struct_formats.items()),
            enums=enums,
            classes=classes,
            aliases=aliases + ["Frame = " + " | ".join(frame_names)],
            functions=functions + api,
            tables=tables,
            exports=sorted(set(exports)),
            strategies=strategies,
            strategy_exports=strategy_exports,
            protocol=proto.protocol,
            version=proto.version,
            facts=self.facts(),
        )

    def facts(self) -> list[tuple[str, str, list[str]]]:
        prefix = self.proto.framing.length_prefix
        size = prefix.size if prefix is not None else 0
        encodings = tuple(self.proto.encodings)
        functions = ["``binary``: ``encode``, ``decode``, ``StreamDecoder``"]
        if "msgpack" in encodings:
            functions.append(
                "``msgpack``: ``encode_msgpack``, ``decode_msgpack``, ``MsgpackStreamDecoder``"
            )
        if self.sender_tables:
            sender = [
                "Some codes mean a different frame from each side: decoding needs ``sender``",
                '("client" or "server").',
            ]
        else:
            sender = ["Every code means one frame, whoever sends it: decoding needs no ``sender``."]
        if self.proto.context:
            context = [
                "Frame layouts depend on a ``Context`` that earlier frames set: decode a",
                "direction's frames in order with one context, kept in step by ``track_context``.",
            ]
        else:
            context = ["Frames decode without a ``Context``: each frame's bytes are enough."]
        return [
            ("LENGTH_PREFIX_SIZE", str(size), [
                "Bytes of the big-endian length prefix before each frame on a byte stream",
                "(``frame_bytes``, ``StreamDecoder``); 0: frames delimit themselves."]),
            ("ENCODINGS", repr(encodings), ["The encodings of a frame (" + "; ".join(functions) + ")."]),
            ("NEEDS_SENDER", str(self.sender_tables), sender),
            ("NEEDS_CONTEXT", str(bool(self.proto.context)), context),
        ]  # fmt: skip
