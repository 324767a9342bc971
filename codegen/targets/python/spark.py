"""The Spark target: plans ``generated/<protocol>/<version>/spark.py`` from the model.

One ``StructType`` per frame, struct and union, the common frame-log row
(``FRAME_LOG_SCHEMA``) and ``frame_row``: a converter from decoded frame objects to the
values of those schemas, as straight-line generated code (one function per frame class,
dispatched by ``type(frame)``), because the capture reader calls it for every frame.

The plan is plain data for ``templates/spark.py.j2``: every type, expression and name is
decided here. The fields of a frame are exactly the attributes of its generated class
(the codec plan, ``plan.py``, decides those; ``SparkTarget`` walks the same model and
checks that it finds the same names), so the decoded frame object and its Spark row never drift apart.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import NoReturn

from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.frontend.model import (
    INT_TYPES,
    ArrayField,
    BytesField,
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
    Word,
)
from wirestream.codegen.plan.codec import (
    Planner,
    int_bounds,
    is_attr,
    item_values,
    lower_snake,
    plan_codec,
    upper_snake,
)
from wirestream.codegen.targets.python.codec import doc_lines, literal

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
# An exact Spark type for every value below 2**64: DecimalType(20, 0) holds 20 digits.
DECIMAL_DIGITS = 20
# Spark's Parquet, ORC and JSON writers refuse empty structs
# ([EMPTY_SCHEMA_NOT_SUPPORTED_FOR_DATASOURCE]), so a frame or struct without fields
# gets this one always-true field and the frame log stays writable.
PRESENT = "present"
UNKNOWN_FRAME = "UnknownFrame"

# The frame-log columns before the one-struct-per-frame columns: (name, type, nullable).
COMMON_COLUMNS: list[tuple[str, str, bool]] = [
    ("capture_time", "TimestampType()", False),
    ("connection_id", "LongType()", False),
    ("direction", "StringType()", False),
    ("protocol", "StringType()", False),
    ("version", "StringType()", False),
    ("frame_type", "StringType()", False),
    ("stream_id", "LongType()", True),
    ("flags", "IntegerType()", True),
    ("length", "IntegerType()", False),
]


def tuple_source(parts: list[str]) -> str:
    """A tuple display; the comma only where a one-tuple needs it (black would otherwise
    spread every tuple over one line per element)."""
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def user_version(version: str) -> str:
    """The version as users write it in ``protocol="rsocket/1.0"``: the IDL's version
    without its leading ``v`` and with dots (v1_0 -> 1.0, v1 -> 1); names stay (rel)."""
    if re.fullmatch(r"v[0-9]+(_[0-9]+)*", version):
        return version[1:].replace("_", ".")
    return version


@dataclass
class SparkField:
    name: str
    type: str  # Python source of the pyspark DataType
    nullable: bool


@dataclass
class SparkSchema:
    name: str  # the module constant, e.g. PAYLOAD_SCHEMA
    doc: str
    fields: list[SparkField]


@dataclass
class SparkModule:
    source: str
    title: str
    protocol: str
    version: str  # as users write it
    idl_version: str
    type_imports: list[str]
    uses_decimal: bool
    codec_imports: list[str]
    enum_tables: list[tuple[str, str, list[tuple[str, str]]]]  # (constant, enum, [(value, name)])
    schemas: list[SparkSchema]  # structs and unions (dependency order), then frames
    frame_log: SparkSchema
    common_columns: list[str]
    frame_columns: list[str]
    null_columns: list[str]  # common columns no frame of the protocol sets
    functions: list[list[str]]  # converters: struct, union and frame row functions
    rows: list[tuple[str, str]]  # (frame class, its row function)
    exports: list[str]
    columns_doc: list[str]  # wrapped lines of the module docstring
    stream_id_doc: list[str]
    flags_doc: list[str]


@dataclass
class Value:
    """One attribute of a frame or struct: its Spark field and how its value converts."""

    name: str
    spark_type: str
    nullable: bool  # None is a valid value (an optional field, a nullable length)
    convert: str | None = None  # template with {} for the (non-None) value; None: as is
    flag_mask: int | None = None  # a bool flag attribute: read from the stored flag bits
    int_max: int | None = None  # an integer attribute: its largest value


class SparkTarget:
    """Plans ``spark.py`` for one protocol model."""

    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.planner = Planner(proto)  # the attributes of the codec's classes
        self.header_attrs = [v for item in proto.header for v in item_values(item)
                             if v.name not in proto.discriminator
                             and v.name != proto.framing.length_field]  # fmt: skip
        self.has_flags = plan_codec(proto).has_flags
        self.types: set[str] = {"StructType", "StructField"}
        self.uses_decimal = False
        self.enums_used: dict[str, Enum] = {}

    # --- errors ---------------------------------------------------------------------------

    def fail(self, frame: Frame | None, key: str, message: str) -> NoReturn:
        raise IdlError(self.proto.source, frame.line if frame else 1, key, message)

    # --- types and conversions ------------------------------------------------------------

    def spark_type(self, name: str, *args: str) -> str:
        self.types.add(name)
        return f"{name}({', '.join(args)})"

    def int_value(self, name: str, node: IntField, nullable: bool) -> Value:
        if node.boolean:
            return Value(name, self.spark_type("BooleanType"), nullable)
        lo, hi = int_bounds(node)
        if node.enum is not None:
            self.enums_used[node.enum.name] = node.enum
            table = self.enum_table(node.enum)
            return Value(name, self.spark_type("StringType"), nullable,
                         f"{table}.get({{}}) or str({{}})", int_max=hi)  # fmt: skip
        if INT32[0] <= lo and hi <= INT32[1]:
            return Value(name, self.spark_type("IntegerType"), nullable, int_max=hi)
        if INT64[0] <= lo and hi <= INT64[1]:
            return Value(name, self.spark_type("LongType"), nullable, int_max=hi)
        self.uses_decimal = True
        decimal = self.spark_type("DecimalType", str(DECIMAL_DIGITS), "0")
        return Value(name, decimal, nullable, "Decimal({})", int_max=hi)

    def enum_table(self, enum: Enum) -> str:
        return f"_{upper_snake(enum.name)}_NAMES"

    def element_value(self, element: Element) -> Value:
        if isinstance(element, IntField):
            return self.int_value("item", element, False)
        if isinstance(element, BytesField):
            kind = "StringType" if element.is_string else "BinaryType"
            return Value("item", self.spark_type(kind), element.nullable)
        return self.ref_value("item", element, False)

    def ref_value(self, name: str, node: RefField, nullable: bool) -> Value:
        target = node.target
        if isinstance(target, Struct):
            return Value(name, self.schema_name(target.name), nullable,
                         f"_struct_{lower_snake(target.name)}({{}})")  # fmt: skip
        return Value(name, self.schema_name(target.name), nullable,
                     f"_union_{lower_snake(target.name)}({{}})")  # fmt: skip

    def schema_name(self, name: str) -> str:
        return f"{upper_snake(name)}_SCHEMA"

    def item_values(self, items: list[Item]) -> list[Value]:
        """The attributes of ``items`` as the codec plan makes them, in order."""
        values: list[Value] = []
        for item in items:
            node = item.node
            optional = item.condition is not None or item.when is not None
            if isinstance(node, FloatField):
                values.append(Value(node.name, self.spark_type("DoubleType"), optional))
            elif isinstance(node, Word):
                for bit in node.bits:
                    if bit.value is not None and is_attr(bit.value):
                        values.append(self.int_value(bit.value.name, bit.value, False))
            elif isinstance(node, IntField):
                if is_attr(node):
                    values.append(self.int_value(node.name, node, optional))
            elif isinstance(node, BytesField):
                kind = "StringType" if node.is_string else "BinaryType"
                values.append(Value(node.name, self.spark_type(kind), optional or node.nullable))
            elif isinstance(node, RefField):
                values.append(self.ref_value(node.name, node, optional))
            else:
                values.append(self.array_value(node, optional))
        expected = [a.name for a in self.planner.attrs(items)]
        assert [v.name for v in values] == expected, (expected, values)
        return values

    def array_value(self, node: ArrayField, optional: bool) -> Value:
        element = self.element_value(node.element)
        array = self.spark_type("ArrayType", element.spark_type, str(element.nullable))
        convert = None
        if element.convert is not None:
            item = element.convert.replace("{}", "item")
            convert = f"[{item} for item in {{}}]"
        return Value(node.name, array, optional, convert)

    def frame_values(self, frame: Frame) -> list[Value]:
        values = [self.int_value(v.name, v, False) for v in self.header_attrs]
        values += [
            Value(name, self.spark_type("BooleanType"), False, flag_mask=mask)
            for name, mask in self.planner.flag_attrs(frame)
        ]
        values += [
            self.int_value(name, node, False) for name, (node, _) in frame.flag_values.items()
        ]
        return values + self.item_values(frame.items)

    def unknown_values(self) -> list[Value]:
        """``UnknownFrame``: code, header attributes, flags (all bits), body."""
        header = {v.name: v for item in self.proto.header for v in item_values(item)}
        for name in self.proto.discriminator:  # a context value of the code (MySQL's phase)
            header.setdefault(name, IntField(name[4:], INT_TYPES["u32"]))
        if len(self.proto.discriminator) == 1:
            code = self.int_value("code", header[self.proto.discriminator[0]], False)
        else:
            parts = [self.int_value(n, header[n], False) for n in self.proto.discriminator]
            fields = ", ".join(self.field_source(SparkField(p.name, p.spark_type, False))
                               for p in parts)  # fmt: skip
            converts = [
                (p.convert or "{}").replace("{}", f"{{}}[{i}]") for i, p in enumerate(parts)
            ]
            convert = None
            if any(p.convert for p in parts):
                convert = tuple_source(converts)
            code = Value("code", f"StructType([{fields}])", False, convert)
        values = [code]
        values += [self.int_value(v.name, v, False) for v in self.header_attrs]
        if self.has_flags:
            values.append(Value("flags", self.flags_type(), False))
        values.append(Value("body", self.spark_type("BinaryType"), False))
        return values

    def field_source(self, spark_field: SparkField) -> str:
        return f'StructField("{spark_field.name}", {spark_field.type}, {spark_field.nullable})'

    def flags_type(self) -> str:
        width = max(
            (bit.width for item in self.proto.header if isinstance(item.node, Word)
             for bit in item.node.bits if bit.kind == "flags"),
            default=0,
        )  # fmt: skip
        return self.spark_type("IntegerType" if width <= 31 else "LongType")

    # --- schemas ------------------------------------------------------------------------------

    def schema(self, name: str, doc: str, values: list[Value]) -> SparkSchema:
        fields = [SparkField(v.name, v.spark_type, v.nullable) for v in values]
        if not fields:
            fields = [SparkField(PRESENT, self.spark_type("BooleanType"), False)]
        return SparkSchema(self.schema_name(name), doc, fields)

    def union_schema(self, union: Union_) -> SparkSchema:
        fields = [
            SparkField(lower_snake(struct.name), self.schema_name(struct.name), True)
            for struct in self.variants(union)
        ]
        doc = f"{union.name}: one non-null field, the variant's struct."
        return SparkSchema(self.schema_name(union.name), doc, fields)

    def variants(self, union: Union_) -> list[Struct]:
        return list({s.name: s for s in union.variants.values()}.values())

    # --- converters ---------------------------------------------------------------------------

    def value_expr(self, value: Value, source: str, out: list[str]) -> str:
        """The converted value of ``source`` (an attribute read); may add local lines."""
        if value.flag_mask is not None:
            return f"flags & {literal(value.flag_mask)} != 0"
        if value.convert is None:
            return source
        if not value.nullable and value.convert.count("{}") == 1:
            return value.convert.replace("{}", source)
        local = "v_" + value.name
        out.append(f"{local} = {source}")
        converted = value.convert.replace("{}", local)
        if value.nullable:
            return f"None if {local} is None else {converted}"
        return converted

    def struct_function(self, struct: Struct) -> list[str]:
        values = self.item_values(struct.items)
        out: list[str] = []
        parts = [self.value_expr(v, f"value.{v.name}", out) for v in values] or ["True"]
        name = f"_struct_{lower_snake(struct.name)}"
        head = f"def {name}(value: {struct.name}) -> tuple[Any, ...]:"
        if not values:
            return [head, "    return (True,)  # `present`: Spark cannot write empty structs"]
        return [head, *(f"    {line}" for line in out), f"    return {tuple_source(parts)}"]

    def union_function(self, union: Union_) -> list[str]:
        variants = self.variants(union)
        lines = [f"def _union_{lower_snake(union.name)}(value: {union.name}) -> tuple[Any, ...]:"]
        for index, struct in enumerate(variants):
            slots = ["None"] * len(variants)
            slots[index] = f"_struct_{lower_snake(struct.name)}(value)"
            lines.append(f"    if type(value) is {struct.name}:")
            lines.append(f"        return {tuple_source(slots)}")
        lines.append(
            f'    raise TypeError(f"{{type(value).__name__}} is not a variant of {union.name}")'
        )
        return lines

    def row_function(self, name: str, frame: Frame | None, values: list[Value],
                     column: int) -> list[str]:  # fmt: skip
        """``_row_<frame>``: (frame type, stream id, flags, column, struct values)."""
        out: list[str] = []
        stored_flags = any(v.flag_mask is not None for v in values)
        if stored_flags:
            out.append("flags = frame._flags")
        parts = [self.value_expr(v, f"frame.{v.name}", out) for v in values] or ["True"]
        stream_id = self.stream_id_expr(values)
        flags = "None"
        if frame is None:
            flags = "frame.flags" if self.has_flags else "None"
        elif self.has_flags:
            flags = self.flags_expr(frame, stored_flags)
        head = f"def _row_{lower_snake(name)}(frame: {name}) -> FrameRow:"
        row = f'("{upper_snake(name)}", {stream_id}, {flags}, {column}, {tuple_source(parts)})'
        return [head, *(f"    {line}" for line in out), f"    return {row}"]

    def stream_id_expr(self, values: list[Value]) -> str:
        target = self.proto.stream_id_field
        value = next((v for v in values if v.name == target and v.int_max is not None), None)
        if value is None:
            return "None"
        source = f"frame.{value.name}"
        if value.int_max is None or value.int_max <= INT64[1]:
            return source
        # Above LongType: null in the stream_id column (the exact value is in the frame's
        # own struct column, as a DecimalType).
        fits = f"{source} <= {literal(INT64[1])}"
        if value.nullable:
            fits = f"{source} is not None and {fits}"
        return f"{source} if {fits} else None"

    def flags_expr(self, frame: Frame, stored_flags: bool) -> str:
        """The header flag bits as the codec encodes the frame (``to_bytes``): stored
        flags, the frame's always-set flags, and presence flags of the fields present."""
        flags = {**self.proto.common_flags, **frame.flags}
        constant = sum(mask for name, mask in flags.items() if name in frame.set_flags)
        constant |= frame.fixed_flags or 0
        parts = ["flags"] if stored_flags else []
        if constant or not parts:
            parts.append(literal(constant))
        for name, (_, mask) in frame.flag_values.items():
            shift = (mask & -mask).bit_length() - 1
            parts.append(f"(frame.{name} << {shift})" if shift else f"frame.{name}")
        present: list[str] = []
        for item in frame.items:
            condition = item.condition
            if condition is not None and condition in flags and condition not in present:
                present.append(condition)
                field_name = item.node.name  # type: ignore[union-attr]
                parts.append(
                    f"({literal(flags[condition])} if frame.{field_name} is not None else 0)"
                )
        return " | ".join(parts)

    # --- names ----------------------------------------------------------------------------------

    def check_names(self, owners: list[tuple[str, str, Frame | None]]) -> None:
        """Frame-log columns and schema constants must be unique: ``owners`` lists
        (column or constant, IDL key of its owner, the frame if it is one)."""
        common = {name for name, _, _ in COMMON_COLUMNS}
        seen: dict[str, str] = {"FRAME_LOG_SCHEMA": "the frame log"}
        for name, key, frame in owners:
            if name in common:
                self.fail(frame, key, f"its Spark frame-log column '{name}' would be the common "
                                      "column of that name; rename the frame")  # fmt: skip
            if name in seen:
                self.fail(frame, key, f"its Spark name {name} is also {seen[name]}'s; "
                                      "rename one of them")  # fmt: skip
            seen[name] = key

    # --- the module -------------------------------------------------------------------------------

    def plan(self) -> SparkModule:
        proto = self.proto
        schemas: list[SparkSchema] = []
        functions: list[list[str]] = []
        owners: list[tuple[str, str, Frame | None]] = []
        emitted: set[str] = set()
        for struct in proto.structs:  # dependency order; a union follows its variants
            values = self.item_values(struct.items)
            schemas.append(self.schema(struct.name, self.doc(struct.name, struct.doc), values))
            functions.append(self.struct_function(struct))
            owners.append((schemas[-1].name, f"structs.{struct.name}", None))
            emitted.add(struct.name)
            for union in proto.unions:
                names = {s.name for s in union.variants.values()}
                if union.name not in emitted and names <= emitted:
                    schemas.append(self.union_schema(union))
                    functions.append(self.union_function(union))
                    owners.append((schemas[-1].name, f"unions.{union.name}", None))
                    emitted.add(union.name)

        frames: list[tuple[str, Frame | None, list[Value], str]] = [
            (f.name, f, self.frame_values(f), self.doc(f.name, f.doc)) for f in proto.frames
        ]
        if proto.unknown.policy != "error":  # the codec keeps such frames as UnknownFrame
            doc = f"{UNKNOWN_FRAME}: a frame of a type this version does not define."
            frames.append((UNKNOWN_FRAME, None, self.unknown_values(), doc))
        log_fields = [
            SparkField(name, self.flags_type() if name == "flags" else type_, nullable)
            for name, type_, nullable in COMMON_COLUMNS
        ]
        self.types.update(type_.split("(")[0] for _, type_, _ in COMMON_COLUMNS)
        rows: list[tuple[str, str]] = []
        for index, (name, frame, values, doc) in enumerate(frames):
            schemas.append(self.schema(name, doc, values))
            functions.append(self.row_function(name, frame, values, index))
            key = f"frames.{name}" if frame else "unknown"
            owners.append((schemas[-1].name, key, frame))
            owners.append((lower_snake(name), key, frame))
            log_fields.append(SparkField(lower_snake(name), self.schema_name(name), True))
            rows.append((name, f"_row_{lower_snake(name)}"))
        self.check_names(owners)

        enum_tables = [
            (self.enum_table(e), e.name, [(literal(v), m) for m, v in e.values.items()])
            for e in self.enums_used.values()
        ]
        codec_imports = sorted({
            "Frame",
            *(name for name, _, _, _ in frames),
            *(s.name for s in proto.structs),
            *(u.name for u in proto.unions),
        })  # fmt: skip
        exports = ["COMMON_COLUMNS", "FRAME_COLUMNS", "FRAME_LOG_SCHEMA", "FrameRow",
                   "NULL_COLUMNS", "PROTOCOL", "VERSION", "frame_row",
                   *(s.name for s in schemas)]  # fmt: skip
        return SparkModule(
            source=proto.source,
            title=proto.title,
            protocol=proto.protocol,
            version=user_version(proto.version),
            idl_version=proto.version,
            type_imports=sorted(self.types),
            uses_decimal=self.uses_decimal,
            codec_imports=codec_imports,
            enum_tables=enum_tables,
            schemas=schemas,
            frame_log=SparkSchema("FRAME_LOG_SCHEMA", "The frame log", log_fields),
            common_columns=[name for name, _, _ in COMMON_COLUMNS],
            frame_columns=[lower_snake(name) for name, _, _, _ in frames],
            null_columns=[
                *(["stream_id"] if self.proto.stream_id_field is None else []),
                *([] if self.has_flags else ["flags"]),
            ],
            functions=functions,
            rows=rows,
            exports=sorted(exports),
            columns_doc=textwrap.wrap(", ".join(name for name, _, _ in COMMON_COLUMNS), 92),
            stream_id_doc=self.stream_id_doc(),
            flags_doc=self.flags_doc(),
        )

    def doc(self, name: str, text: str) -> str:
        lines = doc_lines(text)
        return f"{name}: {lines[0]}" if lines else f"{name}."

    def stream_id_doc(self) -> list[str]:
        target = self.proto.stream_id_field
        if target is None:
            text = "always null: this protocol has no stream ids (its IDL's `frame_log`)."
        else:
            text = (
                f"the frame's `{target}` field (the IDL's `frame_log`; by default the field "
                "named stream_id); null in frames "
                "without one, and above LongType's range (the exact value stays in the "
                "frame's struct)."
            )
        return wrap("stream_id: " + text)

    def flags_doc(self) -> list[str]:
        if not self.has_flags:
            text = "always null: this protocol's frames have no header flags."
        else:
            text = (
                "the header flag bits as the codec encodes the frame: its flag attributes, "
                "the flags it always sets and the presence flags of its optional fields "
                "(reserved bits read as 0); an UnknownFrame's bits as received."
            )
        return wrap("flags: " + text)


def wrap(text: str) -> list[str]:
    """Lines of the module docstring, indented under a list item."""
    return textwrap.wrap(text, width=94, initial_indent="  ", subsequent_indent="    ")
