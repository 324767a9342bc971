"""The Rust target's frame-log mappings: ``generated/rust/frame_log/<protocol>_<version>.rs``.

One module per protocol version for the PyO3 extension ``runtime/rust/wirestream-native``
(which ``#[path]``-includes them; the codec crates stay dependency-free): the columns of the
Spark frame log (``generated/<protocol>/<version>/spark.py``: ``FRAME_COLUMNS`` and the
``*_SCHEMA`` structs, as Arrow kinds) and ``row``, which decodes a frame with the generated
Rust decoder and writes its frame column's row -- the values ``frame_row`` gives, in the
same types.

Everything is decided by the Spark target's plan (``SparkTarget``, ``python/spark.py``):
this module subclasses it so that each value it plans also says what it is (``Shape``), and
spells that in Rust; names, types, nullability, enum names and flag bits are the plan's.
A contextual version (``NEEDS_CONTEXT``) keeps each (connection, direction)'s context in
the frame log's ``State`` and feeds it in record order, as ``RecordDecoder`` does (no
sender, as there). A version with a construct this does not map (floats, a multi-part
frame code: none today) is refused (``Refused``) and read by the pure-Python path.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from wirestream.codegen.frontend.model import (
    ArrayField,
    Element,
    Enum,
    FloatField,
    Frame,
    IntField,
    Item,
    Protocol,
    RefField,
    Struct,
    Union_,
)
from wirestream.codegen.plan.codec import lower_snake, plan_codec, upper_snake
from wirestream.codegen.targets.python.spark import (
    INT64,
    PRESENT,
    UNKNOWN_FRAME,
    SparkTarget,
    Value,
    user_version,
)
from wirestream.codegen.targets.rust.codec import Refused, Spell, ident, lit, rustfmt, unparen

DIR = "frame_log"  # under generated/rust: modules, not a crate (no Cargo.toml)

_KINDS = {
    "IntegerType()": "int32",
    "LongType()": "int64",
    "BooleanType()": "bool",
    "BinaryType()": "binary",
    "StringType()": "utf8",
    "DecimalType(20, 0)": "decimal",
}
_ARROW = {"int32": "Int32", "int64": "Int64", "bool": "Bool", "binary": "Binary",
          "utf8": "Utf8", "decimal": "Decimal", "enum": "Utf8"}  # fmt: skip


@dataclass
class Shape:
    """What a value is in Arrow and how the Rust value becomes it."""

    kind: str  # int32, int64, decimal, bool, binary, utf8, enum, list, struct, union
    enum: str | None = None  # enum: the enum's name
    element: Shape | None = None  # list: the element's shape
    element_nullable: bool = False
    record: str | None = None  # struct, union: the record's name


@dataclass
class Typed(Value):
    shape: Shape | None = None


def typed(value: Value, shape: Shape) -> Typed:
    return Typed(**{f.name: getattr(value, f.name) for f in fields(Value)}, shape=shape)


def refuse(proto: Protocol, what: str) -> Refused:
    return Refused(f"Rust target: {proto.protocol}/{proto.version}: no native frame log: {what}")


class FrameLogTarget(SparkTarget):
    """The Spark plan, each value with its ``Shape``."""

    def int_value(self, name: str, node: IntField, nullable: bool) -> Value:
        value = super().int_value(name, node, nullable)
        if node.boolean:
            return typed(value, Shape("bool"))
        if node.enum is not None:
            return typed(value, Shape("enum", enum=node.enum.name))
        return typed(value, Shape(_KINDS[value.spark_type]))

    def ref_value(self, name: str, node: RefField, nullable: bool) -> Value:
        value = super().ref_value(name, node, nullable)
        kind = "struct" if isinstance(node.target, Struct) else "union"
        return typed(value, Shape(kind, record=node.target.name))

    def element_value(self, element: Element) -> Value:
        return self.typed(super().element_value(element))

    def array_value(self, node: ArrayField, optional: bool) -> Value:
        value = super().array_value(node, optional)
        element = self.typed(self.element_value(node.element))
        assert isinstance(element, Typed) and element.shape is not None
        return typed(value, Shape("list", element=element.shape, element_nullable=element.nullable))

    def item_values(self, items: list[Item]) -> list[Value]:
        if any(isinstance(item.node, FloatField) for item in items):
            raise refuse(self.proto, "a float field (no Arrow kind mapped natively)")
        return [self.typed(v) for v in super().item_values(items)]

    def typed(self, value: Value) -> Typed:
        if isinstance(value, Typed):
            return value
        if value.flag_mask is not None:
            return typed(value, Shape("bool"))
        kind = _KINDS.get(value.spark_type)
        if kind is None:
            raise refuse(self.proto, f"the value {value.name} of type {value.spark_type}")
        return typed(value, Shape(kind))


class Writer:
    """Spells one protocol version's frame-log module."""

    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        plan = plan_codec(proto)
        self.plan = plan
        self.spell = Spell(plan)
        self.target = FrameLogTarget(proto)
        self.enums: dict[str, Enum] = {}
        self.scratch: dict[str, bool] = {}  # records whose writers use the scratch string
        self.records: dict[str, Struct | Union_] = {
            **{s.name: s for s in proto.structs},
            **{u.name: u for u in proto.unions},
        }
        self.schemas: dict[str, list[tuple[str, str, bool]]] = {}

    # --- kinds ---

    def kind(self, shape: Shape) -> str:
        if shape.kind in _ARROW:
            if shape.kind == "enum":
                assert shape.enum is not None
                self.enums[shape.enum] = next(e for e in self.proto.enums if e.name == shape.enum)
            return f"Kind::{_ARROW[shape.kind]}"
        if shape.kind == "list":
            assert shape.element is not None
            return f'Kind::List(&("element", {self.kind(shape.element)}, {rust_bool(shape.element_nullable)}))'
        assert shape.record is not None
        self.schema(shape.record)
        return f"Kind::Struct({upper_snake(shape.record)}_SCHEMA)"

    def schema(self, name: str) -> None:
        """The fields of a struct or union's Arrow struct (``<NAME>_SCHEMA``)."""
        if name in self.schemas:
            return
        self.schemas[name] = []  # no cycles in a Spark schema; guards the recursion
        record = self.records[name]
        out: list[tuple[str, str, bool]] = []
        if isinstance(record, Struct):
            values = self.values(record.items)
            out = [(v.name, self.kind(self.shape(v)), v.nullable) for v in values]
            if not out:
                out = [(PRESENT, "Kind::Bool", False)]
        else:
            for struct in self.target.variants(record):
                self.schema(struct.name)
                out.append((lower_snake(struct.name),
                            f"Kind::Struct({upper_snake(struct.name)}_SCHEMA)", True))  # fmt: skip
        self.schemas[name] = out

    def values(self, items: list[Item]) -> list[Typed]:
        return [self.target.typed(v) for v in self.target.item_values(items)]

    def shape(self, value: Value) -> Shape:
        shape = self.target.typed(value).shape
        assert shape is not None
        return shape

    # --- writing values ---

    def put(self, col: str, value: Value | Shape, src: str, by_ref: bool, nullable: bool,
            depth: int) -> list[str]:  # fmt: skip
        """Statements writing ``src`` (a place, or a reference when ``by_ref``) into the
        column ``col`` (an expression of a ``Column``)."""
        shape = value if isinstance(value, Shape) else self.shape(value)
        if nullable:
            v = f"v{depth}"
            inner = self.put(col, shape, v, True, False, depth + 1)
            scrutinee = src if by_ref else f"&{src}"
            return [f"match {scrutinee} {{", f"Some({v}) => {{", *inner, "}",
                    f"None => {col}.null(),", "}"]  # fmt: skip
        plain = f"*{src}" if by_ref else src
        kind = shape.kind
        if kind == "int32":
            return [f"{col}.i32({plain} as i32);"]
        if kind == "int64":
            return [f"{col}.i64({plain} as i64);"]
        if kind == "decimal":
            return [f"{col}.i128({plain} as i128);"]
        if kind == "bool":
            return [f"{col}.bool({plain});"]
        if kind == "binary":
            return [f"{col}.bytes({src});"]
        if kind == "utf8":
            return [f"{col}.bytes({src}.as_bytes());"]
        if kind == "enum":
            assert shape.enum is not None
            self.enums[shape.enum] = next(e for e in self.proto.enums if e.name == shape.enum)
            return [f"{col}.bytes({enum_fn(shape.enum)}({plain} as i128, scratch).as_bytes());"]
        reference = src if by_ref else f"&{src}"
        if kind in ("struct", "union"):
            assert shape.record is not None
            tail = ", scratch" if self.uses_scratch(shape.record) else ""
            if kind == "union":  # the union's column: `variants` (columns.rs)
                target = col if col.startswith("l") else f"&mut {col}"
                return [f"{record_fn(shape)}({target}, {reference}{tail});"]
            return [f"{record_fn(shape)}({col}.fields(), {reference}{tail});"]
        assert kind == "list" and shape.element is not None
        items, v = f"l{depth}", f"v{depth}"
        inner = self.put(items, shape.element, v, True, shape.element_nullable, depth + 1)
        return [f"if let Some({items}) = {col}.items() {{", f"for {v} in {reference} {{",
                *inner, "}", "}", f"{col}.close();"]  # fmt: skip

    def uses_scratch(self, name: str) -> bool:
        if name not in self.scratch:
            self.scratch[name] = False  # no cycles; guards the recursion
            self.scratch[name] = any("scratch" in line for line in self.record_body(name))
        return self.scratch[name]

    def record_body(self, name: str) -> list[str]:
        record = self.records[name]
        if isinstance(record, Struct):
            values = self.values(record.items)
            if not values:
                return ["c[0].bool(true); // `present`: Spark cannot write empty structs"]
            out: list[str] = []
            for index, value in enumerate(values):
                out += self.put(f"c[{index}]", value, f"v.{ident(value.name)}", False,
                                value.nullable, 0)  # fmt: skip
            return out
        # Only the variant set is written (and caught up with the rows it was null in);
        # the others are padded at export (`Column::variants`).
        out = ["let (row, c) = column.variants();", "match v {"]
        for index, struct in enumerate(self.target.variants(record)):
            tail = ", scratch" if self.uses_scratch(struct.name) else ""
            out += [
                f"codec::{record.name}::{struct.name}(x) => {{",
                f"c[{index}].pad(row);",
                f"{record_fn(Shape('struct', record=struct.name))}(c[{index}].fields(), x{tail});",
                "}",
            ]
        return [*out, "}"]

    def record_function(self, name: str) -> list[str]:
        record = self.records[name]
        body = self.record_body(name)
        kind = "struct" if isinstance(record, Struct) else "union"
        param = "_v" if isinstance(record, Struct) and not self.values(record.items) else "v"
        tail = ", scratch: &mut String" if self.uses_scratch(name) else ""
        columns = "c: &mut [Column]" if kind == "struct" else "column: &mut Column"
        return [f"fn {kind}_{lower_snake(name)}({columns}, {param}: "
                f"&codec::{self.spell.named_elided(name)}{tail}) {{",
                *body, "}"]  # fmt: skip

    # --- frames ---

    def frame_arm(
        self, name: str, frame: Frame | None, values: list[Typed], column: int
    ) -> list[str]:
        binding = "f" if values else "_"
        out = [f"Frame::{name}({binding}) => {{", f"let c = columns[{column}].row(row);"]
        if not values:
            out.append("c[0].bool(true); // `present`: Spark cannot write empty structs")
        for index, value in enumerate(values):
            out += self.put(f"c[{index}]", value, f"f.{ident(value.name)}", False,
                            value.nullable, 0)  # fmt: skip
        out += [
            "Head {",
            f'frame_type: "{upper_snake(name)}",',
            f"stream_id: {self.stream_id(values)},",
            f"flags: {self.flags(frame, values)},",
            "}",
            "}",
        ]
        return out

    def stream_id(self, values: list[Typed]) -> str:
        target = self.proto.stream_id_field
        value = next((v for v in values if v.name == target and v.int_max is not None), None)
        if value is None:
            return "None"
        src = f"f.{ident(value.name)}"
        if value.int_max is not None and value.int_max > INT64[1]:
            if value.nullable:
                return f"{src}.and_then(|v| i64::try_from(v).ok())"
            return f"i64::try_from({src}).ok()"
        if value.nullable:
            return f"{src}.map(|v| v as i64)"
        return f"Some({src} as i64)"

    def flags(self, frame: Frame | None, values: list[Typed]) -> str:
        """``flags_expr`` of the Spark plan, spelled from the Rust frame's attributes (the
        stored flag bits are the flag attributes it read)."""
        if frame is None:
            return "Some(i32::from(f.flags))" if self.target.has_flags else "None"
        if not self.target.has_flags:
            return "None"
        if self.target.flags_type() != "IntegerType()":
            raise refuse(self.proto, "header flags wider than 31 bits")
        flags = {**self.proto.common_flags, **frame.flags}
        parts = [f"(if f.{ident(v.name)} {{ {lit(v.flag_mask)} }} else {{ 0 }})"
                 for v in values if v.flag_mask is not None]  # fmt: skip
        constant = sum(mask for name, mask in flags.items() if name in frame.set_flags)
        constant |= frame.fixed_flags or 0
        if constant or not parts:
            parts.append(lit(constant))
        for name, (_, mask) in frame.flag_values.items():
            shift = (mask & -mask).bit_length() - 1
            value = f"(f.{ident(name)} as i32)"
            parts.append(f"({value} << {shift})" if shift else value)
        present: list[str] = []
        for item in frame.items:
            condition = item.condition
            if condition is not None and condition in flags and condition not in present:
                present.append(condition)
                field_name = item.node.name  # type: ignore[union-attr]
                parts.append(f"(if f.{ident(field_name)}.is_some() "
                             f"{{ {lit(flags[condition])} }} else {{ 0 }})")  # fmt: skip
        return f"Some({unparen(' | '.join(parts)) if len(parts) == 1 else ' | '.join(parts)})"

    # --- the module ---

    def render(self) -> str:
        proto, target = self.proto, self.target
        frames: list[tuple[str, Frame | None, list[Typed]]] = [
            (f.name, f, [target.typed(v) for v in target.frame_values(f)]) for f in proto.frames
        ]
        if proto.unknown.policy != "error":
            values = [target.typed(v) for v in target.unknown_values()]
            frames.append((UNKNOWN_FRAME, None, values))
        columns: list[tuple[str, list[tuple[str, str, bool]]]] = []
        arms: list[str] = []
        for index, (name, frame, values) in enumerate(frames):
            spec = [(v.name, self.kind(self.shape(v)), v.nullable) for v in values]
            columns.append((lower_snake(name), spec or [(PRESENT, "Kind::Bool", False)]))
            arms += self.frame_arm(name, frame, values, index)
        functions: list[str] = []
        for name in self.records:
            if name in self.schemas:  # used by the frame log
                functions += self.record_function(name)
        # A contextual version decodes as `RecordDecoder` does: with the context of the
        # record's (connection, direction), fed in record order, and no sender.
        contextual = bool(self.plan.context)
        sender = "sender(flags)" if self.plan.sender_tables and not contextual else "None"
        name = f"{proto.protocol}/{user_version(proto.version)}"
        crate = f"wirestream_{proto.protocol}_{proto.version}"
        lines = [
            f"// Generated by wirestream codegen from {proto.source} -- do not edit.",
            "// Edit the IDL and run `wirestream generate --target rust`.",
            f"//! {proto.title} in the Spark frame log:",
            f"//! the columns of `generated/{proto.protocol}/{proto.version}/spark.py` "
            "(`FRAME_COLUMNS`, the `*_SCHEMA`s)",
            "//! as Arrow kinds, and `row`, which decodes a frame with the generated Rust decoder",
            "//! and writes the values `frame_row` gives (same types, same nulls, same enum names",
            "//! and flag bits) into the frame's column. Included by the `wirestream.runtime._native`",
            "//! extension (`runtime/rust/wirestream-native`): codegen/targets/rust/frame_log.py.",
            "#![allow(clippy::unnecessary_cast, clippy::identity_op, clippy::match_single_binding)]",
            "",
            f"use {crate}::{{self as codec, Frame}};",
            "",
            f"use crate::columns::{{{'Column, ' if functions else ''}Field, Kind, StructColumn}};",
            "use crate::log::{Head, Protocol, State};",
            "",
            f"/// {proto.title} in the frame log.",
            "pub static PROTOCOL: Protocol = Protocol {",
            f'name: "{name}",',
            f'protocol: "{proto.protocol}",',
            f'version: "{user_version(proto.version)}",',
            "columns: COLUMNS,",
            "row,",
            "};",
            "",
            "const COLUMNS: &[(&str, &[Field])] = &[",
        ]
        for column, spec in columns:
            lines.append(f'("{column}", &[')
            lines += [f'("{n}", {k}, {rust_bool(b)}),' for n, k, b in spec]
            lines.append("]),")
        lines.append("];")
        for record, spec in self.schemas.items():
            lines.append(f"const {upper_snake(record)}_SCHEMA: &[Field] = &[")
            lines += [f'("{n}", {k}, {rust_bool(b)}),' for n, k, b in spec]
            lines.append("];")
        for enum in sorted(self.enums.values(), key=lambda e: e.name):
            lines += [
                f"/// `_{upper_snake(enum.name)}_NAMES` of spark.py: a value no member names "
                "is its decimal number.",
                f"fn {enum_fn(enum.name)}(code: i128, scratch: &mut String) -> &str {{",
                "match code {",
                *(f'{lit(v)} => "{m}",' for m, v in enum.values.items()),
                "other => {",
                "use core::fmt::Write;",
                "scratch.clear();",
                'let _ = write!(scratch, "{other}");',
                "scratch",
                "}",
                "}",
                "}",
            ]
        if self.plan.sender_tables and not contextual:
            lines += [
                "/// Who sent a recorded frame (the capture record's direction and side bits:",
                "/// `wirestream.runtime.capture.format`), as `capture_source._sender`.",
                "fn sender(flags: u8) -> Option<codec::Sender> {",
                "let server = flags & 0x02 != 0;",
                "Some(if (flags & 0x01 != 0) == server { codec::Sender::Server } "
                "else { codec::Sender::Client })",
                "}",
            ]
        lines += functions
        flags_param = "flags" if sender != "None" or contextual else "_flags"
        scratch = "scratch" if any("scratch" in a for a in arms) else "_scratch"
        state = ("connection", "state") if contextual else ("_connection", "_state")
        decode = [
            f"let frame = codec::decode_with(data, None, {sender}).map_err(|e| e.class_name())?;"
        ]
        if contextual:
            lines += [
                "/// Each (connection, direction)'s context, fed in record order, as",
                "/// `wirestream.runtime.capture.protocols.RecordDecoder` keeps them.",
                "type Contexts = std::collections::HashMap<(u64, bool), codec::Context>;",
            ]
            decode = [
                "if !state.as_ref().is_some_and(|s| s.is::<Contexts>()) {",
                "*state = Some(Box::new(Contexts::new()));",
                "}",
                "let Some(contexts) = state.as_mut().and_then(|s| s.downcast_mut::<Contexts>()) "
                "else {",
                'return Err("DecodeError"); // never: made just above',
                "};",
                "let ctx = contexts.entry((connection, flags & 0x01 != 0)).or_default();",
                "let frame = codec::decode_with(data, Some(ctx), None).map_err(|e| e.class_name())?;",
                "codec::track_context(&frame, ctx);",
            ]
        lines += [
            "/// Decode `data` and write its frame column's row; the frame log's head of the row.",
            f"fn row(data: &[u8], {flags_param}: u8, {state[0]}: u64, {state[1]}: &mut State, "
            f"columns: &mut [StructColumn], row: usize, "
            f"{scratch}: &mut String) -> Result<Head, &'static str> {{",
            *decode,
            "// Every column index below is COLUMNS' order (the frame log's FRAME_COLUMNS).",
            "Ok(match frame {",
            *arms,
            "})",
            "}",
        ]
        return rustfmt("\n".join(lines) + "\n")


def enum_fn(name: str) -> str:
    return f"{lower_snake(name)}_name"


def record_fn(shape: Shape) -> str:
    assert shape.record is not None
    return f"{shape.kind}_{lower_snake(shape.record)}"


def rust_bool(value: bool) -> str:
    return "true" if value else "false"


def render_frame_log(proto: Protocol) -> str:
    """``frame_log/<protocol>_<version>.rs`` (``Refused`` when not mapped)."""
    return Writer(proto).render()
