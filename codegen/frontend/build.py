"""Validate an IDL file and build the typed model (``wirestream.codegen.frontend.model``).

Every check raises ``IdlError`` naming the file, the line and the key path, so that a
user editing YAML is told exactly what to fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from wirestream.codegen.frontend.machines import MachineBuilder, _int_fields
from wirestream.codegen.frontend.conditions import CondSyntaxError, parse_condition
from wirestream.codegen.frontend.loader import Mapping, Sequence, key_paths, load_yaml
from wirestream.codegen.frontend.model import (
    FLOAT_TYPES,
    INT_TYPES,
    WORD_TYPES,
    ArrayField,
    Bit,
    BytesField,
    Cond,
    ContextValue,
    Element,
    Enum,
    Expr,
    FloatField,
    Frame,
    Framing,
    IntField,
    IntType,
    Item,
    Protocol,
    RefField,
    Rule,
    Startup,
    Struct,
    Union_,
    Unknown,
    WILDCARD,
    Word,
    resolve_int_type,
)
from wirestream.codegen.frontend.reader import LOWER, PASCAL, UPPER, NodeReader

RESERVED_NAMES = {
    "self",
    "to_bytes",
    "to_msgpack",
    "pack",
    "ctx",
    "more",
    "and",
    "or",
    "not",
    "flags",
}
DEFAULT_MAX_FRAME_SIZE = 16777215
FRAME_COUNTS = ("after_header", "after_length", "from_length", "frame")


def fixed_size(item: Item) -> int:
    """The bytes a header item takes when it has one size (else 0)."""
    node = item.node
    if isinstance(node, IntField) and node.peek:
        return 0  # a peeked byte belongs to the body
    if isinstance(node, (Word, IntField)):
        return node.type.size or 0
    return 0


PREFIX_NAMES = ", ".join(INT_TYPES)
_TOKEN = re.compile(r"\s*(?:(\d+|0x[0-9a-fA-F]+)|(ctx\.[a-z][a-z0-9_]*|[a-z][a-z0-9_]*)|([*/+-]))")


class _Builder(NodeReader):
    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.context: dict[str, ContextValue] = {}
        self.context_nodes: dict[str, Mapping] = {}
        self.enums: dict[str, Enum] = {}
        self.struct_nodes: dict[str, tuple[Mapping, str]] = {}
        self.structs: dict[str, Struct] = {}
        self.unions: dict[str, Union_] = {}
        self.union_nodes: dict[str, tuple[Mapping, str]] = {}
        self.building: list[str] = []
        self.self_delimiting = False
        self.little = False  # the file's default byte order (``byte_order: little``)
        self.startup_header: list[Item] | None = None  # ``startup:``'s fields
        self.framing_node = Mapping()  # the ``framing:`` mapping, for lines
        self.last_part_peeked = False  # the discriminator's last part is a peeked byte
        self.startup_discriminator: list[str] = []
        self.startup_length: str | None = None  # ``startup.length_field``

    def int_type(
        self, value: Any, line: int, path: str, allowed: tuple[str, ...] | None = None
    ) -> IntType:
        """The integer type ``value`` names, in the file's default byte order unless the
        name says its own (``u32le``, ``u32be``)."""
        names = allowed or tuple(INT_TYPES)
        found = resolve_int_type(value, self.little) if isinstance(value, str) else None
        base = value[:-2] if isinstance(value, str) and value.endswith(("le", "be")) else value
        if found is None or (value not in names and base not in names):
            self.fail(
                line, path, f"unknown integer type '{value}' (expected one of {', '.join(names)})"
            )
        return found

    # --- top level ---------------------------------------------------------------

    def build(self, root: Any) -> Protocol:
        top = self.mapping(root, "<top>", 1)
        self.keys(top, "", {"wirestream", "protocol", "version", "title", "spec", "doc", "framing",
                            "encodings", "context", "enums", "structs", "unions", "header",
                            "unknown", "frames", "machines", "frame_log", "predecessor",
                            "byte_order", "startup"},
                  {"wirestream", "protocol", "version", "title", "framing", "header", "unknown",
                   "frames"})  # fmt: skip
        if top["wirestream"] != 1:
            self.fail(
                self.line_of(top, "wirestream"), "wirestream", "IDL language version must be 1"
            )
        protocol = self.name(
            top["protocol"], LOWER, "lower_snake", self.line_of(top, "protocol"), "protocol"
        )
        version = self.name(
            top["version"], LOWER, "lower_snake", self.line_of(top, "version"), "version"
        )
        predecessor = None
        if "predecessor" in top:
            line = self.line_of(top, "predecessor")
            predecessor = self.name(top["predecessor"], LOWER, "lower_snake", line, "predecessor")
            if predecessor == version:
                self.fail(line, "predecessor", f"'{version}' cannot be its own predecessor")
        if "byte_order" in top:
            order = top["byte_order"]
            if order not in ("big", "little"):
                self.fail(self.line_of(top, "byte_order"), "byte_order",
                          f"'{order}' is not big or little")  # fmt: skip
            self.little = order == "little"
        framing = self.framing(top["framing"], self.line_of(top, "framing"))
        encodings = self.encodings(top.get("encodings", ["binary"]), self.line_of(top, "encodings"))
        for name, node in self.entries(top, "context"):
            self.context_value(name, node)
        for name, node in self.entries(top, "enums"):
            self.enum(name, node)
        for name, node in self.entries(top, "structs"):
            self.name(
                name, PASCAL, "PascalCase", self.line_of(top["structs"], name), f"structs.{name}"
            )
            self.struct_nodes[name] = (node, f"structs.{name}")
        for name, node in self.entries(top, "unions"):
            self.name(
                name, PASCAL, "PascalCase", self.line_of(top["unions"], name), f"unions.{name}"
            )
            if name in self.struct_nodes:
                self.fail(
                    self.line_of(top["unions"], name), f"unions.{name}", "a struct has this name"
                )
            self.union_nodes[name] = (node, f"unions.{name}")
        for name in self.struct_nodes:
            self.resolve_struct(name, self.struct_nodes[name][0].line)
        for name in self.union_nodes:
            self.resolve_union(name, self.union_nodes[name][0].line)
        header_node = self.mapping(top["header"], "header", self.line_of(top, "header"))
        self.keys(
            header_node, "header", {"fields", "discriminator", "flags"}, {"fields", "discriminator"}
        )
        common_flags = self.flag_masks(
            header_node.get("flags", Mapping()), "header.flags", header_node
        )
        header = self.items(header_node["fields"], "header.fields", self.line_of(header_node, "fields"),
                            flags=common_flags, in_frame=False, scope_prefix=[])  # fmt: skip
        flag_width = self.flag_width(header, "header.fields")
        for name, mask in common_flags.items():
            self.check_mask(
                mask, flag_width, self.line_of(header_node["flags"], name), f"header.flags.{name}"
            )
        if flag_width > 32:
            self.fail(self.line_of(header_node, "fields"), "header.fields",
                      f"flags wider than 32 bits ({flag_width}) are not supported (Wireshark "
                      "target: its dissector masks flags with 32-bit operations)")  # fmt: skip
        discriminator = self.discriminator(header_node, header)
        last = discriminator[-1]
        self.last_part_peeked = any(v.name == last and v.peek
                                    for item in header for v in self.values_of(item))  # fmt: skip
        self.header_length(framing, header, discriminator, self.framing_node, "framing")
        startup = self.startup(top, framing)
        unknown = self.unknown(
            top["unknown"], self.line_of(top, "unknown"), common_flags, flag_width
        )
        frames = self.frames(top, header, discriminator, framing.length_field, common_flags,
                             flag_width)  # fmt: skip
        self.context_tracking(header, frames)
        machines = MachineBuilder(self, frames, header, common_flags).build(top)
        stream_id_field = self.frame_log(top, header, discriminator, frames)
        if unknown.policy == "ignore_if_flag" and flag_width == 0:
            self.fail(
                self.line_of(top, "unknown"),
                "unknown.policy",
                "ignore_if_flag needs a header flags word",
            )
        return Protocol(
            source=self.source,
            protocol=protocol,
            version=version,
            title=self.text(top, "title", ""),
            spec=self.text(top, "spec", ""),
            doc=self.text(top, "doc", ""),
            framing=framing,
            encodings=encodings,
            context=list(self.context.values()),
            enums=list(self.enums.values()),
            structs=[self.structs[name] for name in self.struct_order()],
            unions=list(self.unions.values()),
            header=header,
            discriminator=discriminator,
            common_flags=common_flags,
            unknown=unknown,
            frames=frames,
            machines=machines,
            stream_id_field=stream_id_field,
            predecessor=predecessor,
            lines=key_paths(top),
            startup=startup,
        )

    def entries(self, top: Mapping, key: str) -> list[tuple[str, Any]]:
        if key not in top:
            return []
        node = self.mapping(top[key], key, self.line_of(top, key))
        return [(str(name), value) for name, value in node.items()]

    def framing(self, node: Any, line: int) -> Framing:
        node = self.mapping(node, "framing", line)
        self.framing_node = node
        self.keys(
            node,
            "framing",
            {"length_prefix", "self_delimiting", "max_frame_size", "length_field", "counts",
             "adjust"},
            set(),
        )  # fmt: skip
        size = self.integer(
            node.get("max_frame_size", DEFAULT_MAX_FRAME_SIZE),
            self.line_of(node, "max_frame_size"),
            "framing.max_frame_size",
        )
        if size <= 0:
            self.fail(
                self.line_of(node, "max_frame_size"), "framing.max_frame_size", "must be positive"
            )
        kinds = [k for k in ("length_prefix", "self_delimiting", "length_field") if k in node]
        if len(kinds) != 1:
            self.fail(node.line, "framing",
                      "give exactly one of length_prefix, self_delimiting or length_field")  # fmt: skip
        for key in ("counts", "adjust"):
            if key in node and "length_field" not in node:
                self.fail(self.line_of(node, key), f"framing.{key}", "applies to length_field only")
        if "length_field" in node:
            counts = node.get("counts", "after_header")
            if counts not in FRAME_COUNTS:
                self.fail(self.line_of(node, "counts"), "framing.counts",
                          f"'{counts}' is not one of {', '.join(FRAME_COUNTS)}")  # fmt: skip
            adjust = self.integer(node.get("adjust", 0), self.line_of(node, "adjust"),
                                  "framing.adjust")  # fmt: skip
            field = self.name(node["length_field"], LOWER, "lower_snake",
                              self.line_of(node, "length_field"), "framing.length_field")  # fmt: skip
            return Framing(None, size, field, str(counts), adjust)
        if "self_delimiting" in node:
            if node["self_delimiting"] is not True:
                self.fail(
                    self.line_of(node, "self_delimiting"), "framing.self_delimiting", "must be true"
                )
            self.self_delimiting = True
            return Framing(None, size)
        prefix = self.int_type(node["length_prefix"], self.line_of(node, "length_prefix"),
                               "framing.length_prefix", ("u24", "u32"))  # fmt: skip
        if "max_frame_size" not in node:
            size = min(size, prefix.max)
        if size > prefix.max:
            self.fail(self.line_of(node, "max_frame_size"), "framing.max_frame_size",
                      f"exceeds what a {prefix.name} prefix can declare")  # fmt: skip
        return Framing(prefix, size)

    def startup(self, top: Mapping, framing: Framing) -> Startup | None:
        """``startup:``: the header of a connection's first messages (``startup: true``)."""
        if "startup" not in top:
            return None
        node = self.mapping(top["startup"], "startup", self.line_of(top, "startup"))
        self.keys(node, "startup", {"fields", "discriminator", "length_field", "counts", "adjust",
                                    "doc"}, {"fields", "discriminator", "length_field"})  # fmt: skip
        header = self.items(node["fields"], "startup.fields", self.line_of(node, "fields"),
                            flags={}, in_frame=False, scope_prefix=[])  # fmt: skip
        discriminator = self.discriminator(node, header, "startup")
        counts = node.get("counts", "frame")
        if counts not in FRAME_COUNTS:
            self.fail(self.line_of(node, "counts"), "startup.counts",
                      f"'{counts}' is not one of {', '.join(FRAME_COUNTS)}")  # fmt: skip
        adjust = self.integer(node.get("adjust", 0), self.line_of(node, "adjust"), "startup.adjust")
        field = self.name(node["length_field"], LOWER, "lower_snake",
                          self.line_of(node, "length_field"), "startup.length_field")  # fmt: skip
        if framing.length_field is None:
            self.fail(node.line, "startup",
                      "startup frames need frames framed by a header length (framing.length_field)")  # fmt: skip
        own = Framing(None, framing.max_frame_size, field, str(counts), adjust)
        self.header_length(own, header, discriminator, node, "startup")
        self.startup_header = header
        self.startup_discriminator = discriminator
        self.startup_length = field
        return Startup(header, discriminator, field, str(counts), adjust,
                       self.text(node, "doc", "startup"))  # fmt: skip

    def header_length(self, framing: Framing, header: list[Item], discriminator: list[str],
                      node: Mapping, prefix: str) -> None:  # fmt: skip
        """``framing.length_field``: an unsigned integer of the header, not the discriminator,
        derived on encode; ``frame`` and ``from_length`` counts need the header bytes they
        include to have one size (a length cannot count a prefix whose size it changes)."""
        if framing.length_field is None:
            return
        line, path = self.line_of(node, "length_field"), f"{prefix}.length_field"
        name = framing.length_field
        found = [v for item in header for v in self.values_of(item) if v.name == name]
        if not found or any(isinstance(item.node, Word) and name in self.named(item)
                            for item in header):  # fmt: skip
            self.fail(line, path, f"'{name}' is not an integer field of the header (a whole field)")
        value = found[0]
        if name in discriminator:
            self.fail(line, path, f"'{name}' is the discriminator")
        if value.type.signed or value.const is not None or value.enum is not None:
            self.fail(line, path, f"'{name}' must be a plain unsigned integer")
        index = next(i for i, item in enumerate(header) if name in self.named(item))
        counted = {"frame": header, "from_length": header[index:],
                   "after_length": header[index + 1:], "after_header": []}[framing.counts]  # fmt: skip
        for item in counted:
            if isinstance(item.node, IntField) and item.node.type.size is None:
                self.fail(self.line_of(node, "counts"), f"{prefix}.counts",
                          f"counting '{item.node.name}' (variable size) in the length is not "
                          "supported: its size would depend on the length")  # fmt: skip
        cap = value.type.max + framing.adjust + sum(fixed_size(item) for item in header)
        if framing.max_frame_size > cap:
            if "max_frame_size" in node:
                self.fail(self.line_of(node, "max_frame_size"), "framing.max_frame_size",
                          f"exceeds what '{name}' ({value.type.name}) can declare")  # fmt: skip
            framing.max_frame_size = cap
        value.derived_from = "<frame>"
        value.doc = value.doc or f"derived: the frame's length ({framing.counts})"

    def encodings(self, node: Any, line: int) -> list[str]:
        node = self.sequence(node, "encodings", line)
        for index, value in enumerate(node):
            if value not in ("binary", "msgpack"):
                self.fail(
                    self.line_of(node, index),
                    f"encodings[{index}]",
                    f"unknown encoding '{value}' (binary, msgpack)",
                )
        if "binary" not in node:
            self.fail(line, "encodings", "binary is always an encoding")
        return list(dict.fromkeys(node))

    def context_value(self, name: str, node: Any) -> None:
        path = f"context.{name}"
        node = self.mapping(node, path, 0)
        self.name(name, LOWER, "lower_snake", node.line, path)
        self.keys(node, path, {"keyed_by", "default", "doc", "set_by", "cleared_by"}, set())
        keyed_by = node.get("keyed_by")
        if keyed_by is not None:
            self.name(
                keyed_by, LOWER, "lower_snake", self.line_of(node, "keyed_by"), f"{path}.keyed_by"
            )
        default = self.integer(
            node.get("default", 0), self.line_of(node, "default"), f"{path}.default"
        )
        self.context[name] = ContextValue(name, keyed_by, default, self.text(node, "doc", path))
        self.context_nodes[name] = node

    def context_tracking(self, header: list[Item], frames: list[Frame]) -> None:
        """Resolve each context value's ``set_by`` (``Frame.field``) and ``cleared_by``
        (``Frame``) lists, now that the frames are known."""
        by_name = {frame.name: frame for frame in frames}
        for name, node in self.context_nodes.items():
            value = self.context[name]
            for key in ("set_by", "cleared_by"):
                if key not in node:
                    continue
                path = f"context.{name}.{key}"
                entries = self.sequence(node[key], path, self.line_of(node, key))
                for index, entry in enumerate(entries):
                    line = self.line_of(entries, index)
                    text = entry if isinstance(entry, str) else ""
                    frame_name, _, field_name = text.partition(".")
                    if key == "set_by" and not field_name:
                        self.fail(line, path, f"expected Frame.field, got {entry!r}")
                    if key == "cleared_by" and field_name:
                        self.fail(line, path, f"expected a frame name, got {entry!r}")
                    frame = by_name.get(frame_name)
                    if frame is None:
                        self.fail(line, path, f"unknown frame '{frame_name}'")
                    fields = {
                        f.name: f
                        for f in _int_fields([*header, *frame.items]).values()
                        if f.const is None and f.derived_from is None
                    }
                    wanted = [field_name] if field_name else []
                    if value.keyed_by is not None:
                        wanted.append(value.keyed_by)
                    for wanted_name in wanted:
                        if wanted_name not in fields:
                            self.fail(line, path,
                                      f"{frame_name} has no integer field '{wanted_name}'")  # fmt: skip
                    if field_name:
                        value.set_by.append((frame_name, field_name))
                    else:
                        value.cleared_by.append(frame_name)

    def enum(self, name: str, node: Any) -> None:
        path = f"enums.{name}"
        node = self.mapping(node, path, 0)
        self.name(name, PASCAL, "PascalCase", node.line, path)
        self.keys(node, path, {"type", "open", "doc", "values"}, {"type", "values"})
        itype = self.int_type(node["type"], self.line_of(node, "type"), f"{path}.type")
        is_open = node.get("open", False)
        if not isinstance(is_open, bool):
            self.fail(self.line_of(node, "open"), f"{path}.open", "expected true or false")
        values_node = self.mapping(node["values"], f"{path}.values", self.line_of(node, "values"))
        if not values_node:
            self.fail(values_node.line, f"{path}.values", "an enum needs at least one value")
        values: dict[str, int] = {}
        seen: dict[int, str] = {}
        for member, value in values_node.items():
            line = self.line_of(values_node, member)
            self.name(member, UPPER, "UPPER_SNAKE", line, f"{path}.values.{member}")
            value = self.integer(value, line, f"{path}.values.{member}")
            if not itype.min <= value <= itype.max:
                self.fail(line, f"{path}.values.{member}", f"{value} does not fit {itype.name}")
            if value in seen:
                self.fail(line, f"{path}.values.{member}", f"value {value} is also {seen[value]}")
            seen[value] = member
            values[member] = value
        self.enums[name] = Enum(name, itype, is_open, values, self.text(node, "doc", path))

    # --- structs and unions ---------------------------------------------------------

    def resolve_struct(self, name: str, line: int) -> Struct:
        if name in self.structs:
            return self.structs[name]
        if name in self.building:
            cycle = " -> ".join(self.building + [name])
            self.fail(line, f"structs.{name}", f"structs contain themselves: {cycle}")
        node, path = self.struct_nodes[name]
        node = self.mapping(node, path, line)
        self.keys(node, path, {"fields", "doc", "rules"}, {"fields"})
        self.building.append(name)
        items = self.items(node["fields"], f"{path}.fields", self.line_of(node, "fields"),
                           flags={}, in_frame=False, scope_prefix=[])  # fmt: skip
        self.building.pop()
        struct = Struct(name, items, self.text(node, "doc", path),
                        self.rules(node, path, items, [], {}))  # fmt: skip
        self.structs[name] = struct
        return struct

    def resolve_union(self, name: str, line: int) -> Union_:
        if name in self.unions:
            return self.unions[name]
        node, path = self.union_nodes[name]
        node = self.mapping(node, path, line)
        self.keys(node, path, {"peek", "mask", "variants", "doc"}, {"peek", "mask", "variants"})
        peek = self.int_type(node["peek"], self.line_of(node, "peek"), f"{path}.peek", WORD_TYPES)
        mask = self.integer(node["mask"], self.line_of(node, "mask"), f"{path}.mask")
        if not 0 < mask <= peek.max:
            self.fail(
                self.line_of(node, "mask"), f"{path}.mask", f"must be a non-zero {peek.name} mask"
            )
        variants_node = self.mapping(
            node["variants"], f"{path}.variants", self.line_of(node, "variants")
        )
        variants: dict[int, Struct] = {}
        for tag, target in variants_node.items():
            vline = self.line_of(variants_node, tag)
            tag = self.integer(tag, vline, f"{path}.variants")
            if tag & ~mask:
                self.fail(
                    vline,
                    f"{path}.variants.{tag}",
                    f"tag {tag:#x} has bits outside the mask {mask:#x}",
                )
            if target not in self.struct_nodes:
                self.fail(
                    vline, f"{path}.variants.{tag}", f"'{target}' is not a struct of this file"
                )
            variants[tag] = self.resolve_struct(target, vline)
        if not variants:
            self.fail(variants_node.line, f"{path}.variants", "a union needs at least one variant")
        union = Union_(name, peek, mask, variants, self.text(node, "doc", path))
        self.unions[name] = union
        return union

    def struct_order(self) -> list[str]:
        order: list[str] = []

        def visit(struct: Struct) -> None:
            if struct.name in order:
                return
            for item in struct.items:
                for target in self.referenced_structs(item):
                    visit(target)
            order.append(struct.name)

        for struct in self.structs.values():
            visit(struct)
        return order

    def referenced_structs(self, item: Item) -> list[Struct]:
        node = item.node
        element = node.element if isinstance(node, ArrayField) else node
        if isinstance(element, RefField):
            target = element.target
            return list(target.variants.values()) if isinstance(target, Union_) else [target]
        return []

    # --- fields ------------------------------------------------------------------------

    def items(self, node: Any, path: str, line: int, *, flags: dict[str, int], in_frame: bool,
              scope_prefix: list[Item], unread: frozenset[str] = frozenset()) -> list[Item]:  # fmt: skip
        """``unread``: header fields a frame's body cannot read (the discriminator, the length
        field, peeked bytes: the decoder does not hand them to the body); their names are
        still taken."""
        seq = self.sequence(node, path, line)
        items: list[Item] = []
        names: dict[str, int] = {}
        scope: dict[str, IntField] = {}
        for item in scope_prefix:
            for value in self.values_of(item):
                if value.name not in unread:
                    scope[value.name] = value
                names[value.name] = 0
        flag_runs = sum(1 for item in scope_prefix for _ in self.flag_bits(item))
        for index, entry in enumerate(seq):
            ipath = f"{path}[{index}]"
            iline = self.line_of(seq, index)
            entry = self.mapping(entry, ipath, iline)
            if "word" in entry:
                item = Item(self.word(entry, ipath), None, iline)
                flag_runs += len(self.flag_bits(item))
                if flag_runs > 1:
                    self.fail(iline, ipath, "only one run of flag bits per frame (header included)")
            else:
                item = self.field(entry, ipath, flags, scope, in_frame)
            for field_name in self.named(item):
                if field_name in names:
                    self.fail(
                        self.line_of(entry, "name") or iline,
                        ipath,
                        f"duplicate field name '{field_name}'",
                    )
                names[field_name] = iline
            for value in self.values_of(item):
                scope[value.name] = value
            if isinstance(item.node, IntField) and (item.condition or item.when):
                item.node.optional = True  # later conditions and sizes read it as 0 when absent
                scope[item.node.name] = item.node
            items.append(item)
        rest = [i for i, item in enumerate(items) if self.is_rest(item)]
        if rest and (rest[-1] != len(items) - 1 or len(rest) > 1):
            bad = rest[0] if rest[0] != len(items) - 1 else rest[-1]
            self.fail(
                items[bad].line,
                f"{path}[{bad}]",
                "a field that runs to the end of the frame must be the last one",
            )
        self.mark_derived(items, path, scope_prefix)
        for item in items:  # a bool bit named by `if:` is set on encode when the field is there
            if item.condition is not None and item.condition in scope:
                bit = scope[item.condition]
                if bit.derived_from is None:
                    bit.derived_from = self.named(item)[0]
                    bit.doc = bit.doc or f"derived: whether {bit.derived_from} is present"
        return items

    def is_rest(self, item: Item) -> bool:
        node = item.node
        return (isinstance(node, BytesField) and node.rest) or (
            isinstance(node, ArrayField) and node.count_rest
        )

    def named(self, item: Item) -> list[str]:
        node = item.node
        if isinstance(node, Word):
            return [bit.value.name for bit in node.bits if bit.value is not None]
        return [node.name]

    def values_of(self, item: Item) -> list[IntField]:
        node = item.node
        if isinstance(node, Word):
            return [bit.value for bit in node.bits if bit.value is not None]
        if isinstance(node, IntField) and item.condition is None and item.when is None:
            return [node]
        return []

    def flag_bits(self, item: Item) -> list[Bit]:
        node = item.node
        return [bit for bit in node.bits if bit.kind == "flags"] if isinstance(node, Word) else []

    def flag_width(self, items: list[Item], path: str) -> int:
        widths = [bit.width for item in items for bit in self.flag_bits(item)]
        return widths[0] if widths else 0

    def word(self, node: Mapping, path: str) -> Word:
        self.keys(node, path, {"word", "bits"}, {"word", "bits"})
        wtype = self.int_type(node["word"], self.line_of(node, "word"), f"{path}.word", WORD_TYPES)
        bits_node = self.sequence(node["bits"], f"{path}.bits", self.line_of(node, "bits"))
        bits: list[Bit] = []
        total = 0
        for index, entry in enumerate(bits_node):
            bpath = f"{path}.bits[{index}]"
            bline = self.line_of(bits_node, index)
            entry = self.mapping(entry, bpath, bline)
            if "reserved" in entry or "flags" in entry:
                kind = "reserved" if "reserved" in entry else "flags"
                self.keys(entry, bpath, {kind}, {kind})
                width = self.integer(entry[kind], bline, f"{bpath}.{kind}")
                bit = Bit(kind, width)
            else:
                self.keys(entry, bpath, {"name", "width", "min", "max", "enum", "const", "default", "doc",
                                         "bool"}, {"name"})  # fmt: skip
                boolean = entry.get("bool", False)
                if boolean not in (True, False):
                    self.fail(
                        self.line_of(entry, "bool"), f"{bpath}.bool", "expected true or false"
                    )
                if "width" not in entry and not boolean:
                    self.fail(bline, f"{bpath}.width", "missing required key")
                width = self.integer(
                    entry.get("width", 1), self.line_of(entry, "width"), f"{bpath}.width"
                )
                if boolean:
                    if width != 1:
                        self.fail(
                            self.line_of(entry, "bool"), f"{bpath}.bool", "a bool bit has width 1"
                        )
                    for key in ("min", "max", "enum", "const"):
                        if key in entry:
                            self.fail(
                                self.line_of(entry, key),
                                f"{bpath}.{key}",
                                "a bool bit takes no " + key,
                            )
                bit_type = IntType(f"{wtype.name}:{width}", max(width, 1), False, None)
                value = self.int_field(entry, bpath, bit_type)
                value.boolean = bool(boolean)
                bit = Bit("value", width, value)
            if width <= 0:
                self.fail(bline, bpath, "a bit run needs a positive width")
            total += width
            bits.append(bit)
        if total != wtype.bits:
            self.fail(self.line_of(node, "bits"), f"{path}.bits",
                      f"bit widths add up to {total}, but a {wtype.name} word has {wtype.bits}")  # fmt: skip
        return Word(wtype, bits)

    def int_field(self, node: Mapping, path: str, itype: IntType) -> IntField:
        name = self.name(
            node["name"], LOWER, "lower_snake", self.line_of(node, "name"), f"{path}.name"
        )
        if name in RESERVED_NAMES:
            self.fail(
                self.line_of(node, "name"),
                f"{path}.name",
                f"'{name}' is reserved for generated code",
            )
        result = IntField(name, itype, doc=self.text(node, "doc", path))
        for key in ("min", "max", "const", "default"):
            if key in node:
                value = self.integer(node[key], self.line_of(node, key), f"{path}.{key}")
                if not itype.min <= value <= itype.max:
                    self.fail(
                        self.line_of(node, key),
                        f"{path}.{key}",
                        f"{value} does not fit {itype.name}",
                    )
                setattr(result, key, value)
        if result.min is not None and result.max is not None and result.min > result.max:
            self.fail(self.line_of(node, "min"), f"{path}.min", "min is greater than max")
        if "enum" in node:
            enum_name = node["enum"]
            if enum_name not in self.enums:
                self.fail(self.line_of(node, "enum"), f"{path}.enum", f"unknown enum '{enum_name}'")
            result.enum = self.enums[enum_name]
            for member, value in result.enum.values.items():
                if not itype.min <= value <= itype.max:
                    self.fail(self.line_of(node, "enum"), f"{path}.enum",
                              f"{enum_name}.{member} = {value} does not fit {itype.name}")  # fmt: skip
        if result.const is not None and (
            result.min is not None or result.max is not None or result.enum
        ):
            self.fail(
                self.line_of(node, "const"),
                f"{path}.const",
                "a const field takes no min, max or enum",
            )
        return result

    def field(self, node: Mapping, path: str, flags: dict[str, int], scope: dict[str, IntField],
              in_frame: bool) -> Item:  # fmt: skip
        allowed = {"name", "type", "doc", "min", "max", "enum", "const", "default", "length", "nullable",
                   "size", "of", "count", "byte_length", "if", "terminator", "peek", "forbid",
                   "min_count", "transform"}  # fmt: skip
        self.keys(node, path, allowed, {"name", "type"})
        peek = node.get("peek", False)
        if peek is not False:
            if peek is not True or not path.startswith("header.fields[") or node["type"] != "u8":
                self.fail(self.line_of(node, "peek"), f"{path}.peek",
                          "peek: true is for a u8 field of the header (the first body byte)")  # fmt: skip
        condition = None
        when: Cond | None = None
        text = ""
        if "if" in node:
            raw = node["if"]
            iline = self.line_of(node, "if")
            text = str(raw)
            if isinstance(raw, str) and raw in flags:
                if not in_frame:
                    self.fail(iline, f"{path}.if", "only frame fields can depend on a flag")
                condition = raw
            elif isinstance(raw, str) and raw in scope and scope[raw].boolean:
                condition = raw  # a bool bit of this record says whether the field is there
                scope[raw].presence = True
            else:
                when = self.cond(raw, iline, f"{path}.if", scope, flags)
                if when.uses("remaining"):
                    self.fail(iline, f"{path}.if", "`remaining` is for `select:` (use `more`)")
                if when.uses_more() and when.op != "more":
                    self.fail(iline, f"{path}.if", "`more` must be the whole condition")
                if when.op == "more" and self.self_delimiting:
                    self.fail(iline, f"{path}.if",
                              "`more` needs frames of a known length (length_prefix or length_field)")  # fmt: skip
        value = self.value(node, path, scope, top=True)
        if (
            isinstance(value, IntField)
            and value.const is not None
            and (condition is not None or (when is not None and when.op == "more"))
        ):
            self.fail(self.line_of(node, "if"), f"{path}.if",
                      "a const field may depend on a condition, not on a flag, a bit or more")  # fmt: skip
        if peek:
            value.peek = True
        return Item(value, condition, node.line, when, text)

    def cond(self, raw: Any, line: int, path: str, scope: dict[str, IntField],
             flags: dict[str, int]) -> Cond:  # fmt: skip
        """A condition over earlier values (``if:``, ``rules:``), or an IdlError saying why not."""

        def resolve(name: str) -> str | None:
            if name.startswith("ctx."):
                return "ctx" if name[4:] in self.context else None
            if name in flags:
                return "flag"
            if name in scope:
                return "field"
            return None

        try:
            return parse_condition(raw, resolve)
        except CondSyntaxError as error:
            self.fail(line, path, str(error))

    def rules(self, node: Mapping, path: str, items: list[Item], prefix: list[Item],
              flags: dict[str, int]) -> list[Rule]:  # fmt: skip
        """``rules:``: each ``{check: <condition>, spec: "..."}`` over the record's values."""
        if "rules" not in node:
            return []
        seq = self.sequence(node["rules"], f"{path}.rules", self.line_of(node, "rules"))
        scope = {v.name: v for item in [*prefix, *items] for v in self.values_of(item)}
        result: list[Rule] = []
        for index, entry in enumerate(seq):
            rpath, rline = f"{path}.rules[{index}]", self.line_of(seq, index)
            entry = self.mapping(entry, rpath, rline)
            self.keys(entry, rpath, {"check", "spec"}, {"check"})
            check = self.cond(entry["check"], self.line_of(entry, "check"), f"{rpath}.check",
                              {k: v for k, v in scope.items()}, flags)  # fmt: skip
            if check.uses_more() or check.uses("remaining"):
                self.fail(
                    self.line_of(entry, "check"),
                    f"{rpath}.check",
                    "`more` and `remaining` are for `if:` and `select:` only",
                )
            result.append(Rule(check, str(entry["check"]), self.text(entry, "spec", rpath), rline))
        return result

    def value(self, node: Mapping, path: str, scope: dict[str, IntField], top: bool) -> Any:
        type_name = node["type"]
        tline = self.line_of(node, "type")
        kind_keys = {
            "int": {"min", "max", "enum", "const", "default"},
            "bytes": {"length", "nullable", "size", "terminator", "forbid", "transform"},
            "array": {"of", "count", "byte_length", "terminator", "min_count"},
            "ref": set(),
            "float": {"default"},
        }
        float_name = (
            type_name[:-2]
            if isinstance(type_name, str) and type_name.endswith(("le", "be"))
            else type_name
        )
        if isinstance(type_name, str) and resolve_int_type(type_name, self.little) is not None:
            kind = "int"
        elif float_name in FLOAT_TYPES:
            kind = "float"
        elif type_name in ("bytes", "string"):
            kind = "bytes"
        elif type_name == "array":
            kind = "array"
        elif isinstance(type_name, str) and (
            type_name in self.struct_nodes or type_name in self.union_nodes
        ):
            kind = "ref"
        else:
            self.fail(tline, f"{path}.type",
                      f"unknown type '{type_name}' (expected an integer type, f32, f64, bytes, "
                      "string, array, or a struct/union of this file)")  # fmt: skip
        for other, keys in kind_keys.items():
            if other != kind:
                for key in keys - kind_keys[kind]:
                    if key in node:
                        self.fail(
                            self.line_of(node, key),
                            f"{path}.{key}",
                            f"'{key}' does not apply to type {type_name}",
                        )
        name = node.get("name", "item")
        if top:
            self.name(name, LOWER, "lower_snake", self.line_of(node, "name"), f"{path}.name")
            if name in RESERVED_NAMES:
                self.fail(
                    self.line_of(node, "name"),
                    f"{path}.name",
                    f"'{name}' is reserved for generated code",
                )
        doc = self.text(node, "doc", path)
        if kind == "int":
            shadow = Mapping(node)
            shadow.line, shadow.key_lines = node.line, node.key_lines
            shadow["name"] = name
            return self.int_field(shadow, path, self.int_type(type_name, tline, f"{path}.type"))
        if kind == "float":
            little = type_name.endswith("le") or (self.little and not type_name.endswith("be"))
            default = node.get("default", 0.0)
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                self.fail(self.line_of(node, "default"), f"{path}.default", "expected a number")
            return FloatField(name, FLOAT_TYPES[float_name], little, float(default), doc)
        if kind == "ref":
            if type_name in self.struct_nodes:
                return RefField(name, self.resolve_struct(type_name, tline), doc)
            return RefField(name, self.resolve_union(type_name, tline), doc)
        if kind == "bytes":
            return self.bytes_field(node, path, name, type_name == "string", scope, doc)
        return self.array_field(node, path, name, scope, doc)

    def bytes_field(self, node: Mapping, path: str, name: str, is_string: bool, scope: dict[str, IntField],
                    doc: str) -> BytesField:  # fmt: skip
        result = self.bytes_layout(node, path, name, is_string, scope, doc)
        if "transform" in node:
            xline = self.line_of(node, "transform")
            transform = self.mapping(node["transform"], f"{path}.transform", xline)
            self.keys(transform, f"{path}.transform", {"xor"}, {"xor"})
            key = transform["xor"]
            kline = self.line_of(transform, "xor")
            found = scope.get(key) if isinstance(key, str) else None
            if (found is None or found.type.size is None or found.type.size < 1
                    or found.type.signed or found.optional):  # fmt: skip
                self.fail(kline, f"{path}.transform.xor",
                          f"'{key}' is not an earlier fixed-size unsigned integer field that is "
                          "always there (the key)")  # fmt: skip
            if is_string:
                self.fail(xline, f"{path}.transform", "transforms apply to bytes (a masked "
                          "string is bytes until it is unmasked)")  # fmt: skip
            result.xor_key = found
        if "forbid" in node:
            fline = self.line_of(node, "forbid")
            values = self.sequence(node["forbid"], f"{path}.forbid", fline)
            top = 0x10FFFF if is_string else 0xFF
            result.forbid = tuple(self.integer(v, fline, f"{path}.forbid") for v in values)
            if not result.forbid or any(not 0 <= v <= top for v in result.forbid):
                self.fail(fline, f"{path}.forbid",
                          f"a list of {'code points' if is_string else 'byte values'} (0..{top:#x})")  # fmt: skip
        return result

    def bytes_layout(self, node: Mapping, path: str, name: str, is_string: bool,
                     scope: dict[str, IntField], doc: str) -> BytesField:  # fmt: skip
        length: IntType | None = None
        rest = False
        terminator = None
        if "terminator" in node:
            tline = self.line_of(node, "terminator")
            terminator = self.integer(node["terminator"], tline, f"{path}.terminator")
            if not 0 <= terminator <= 255:
                self.fail(tline, f"{path}.terminator", "a terminator is one byte (0..255)")
            for key in ("length", "size", "nullable"):
                if key in node:
                    self.fail(self.line_of(node, key), f"{path}.{key}",
                              "a terminated value takes no length, size or nullable")  # fmt: skip
            return BytesField(name, is_string, None, False, False, None, doc, terminator)
        if "length" not in node and "size" not in node:
            self.fail(
                node.line,
                path,
                "bytes and string need `length` (a prefix type or rest), `size` or `terminator`",
            )
        if "length" in node:
            lline = self.line_of(node, "length")
            if node["length"] == "rest":
                rest = True
                if self.self_delimiting:
                    self.fail(
                        lline,
                        f"{path}.length",
                        "`rest` needs length_prefix framing (frames here delimit themselves)",
                    )
            elif isinstance(node["length"], str) and resolve_int_type(node["length"], self.little):
                length = resolve_int_type(node["length"], self.little)
            else:
                self.fail(
                    lline,
                    f"{path}.length",
                    f"unknown length type '{node['length']}' (expected one of {PREFIX_NAMES}, rest)",
                )
        nullable = node.get("nullable", False)
        if nullable is not False:
            if nullable is not True:
                self.fail(
                    self.line_of(node, "nullable"), f"{path}.nullable", "expected true or false"
                )
            if length is None or not (length.signed or length.flavour == "lenenc"):
                self.fail(
                    self.line_of(node, "nullable"),
                    f"{path}.nullable",
                    "nullable needs a signed length prefix (-1 = null) or lenenc (0xFB = null)",
                )
        size = None
        if "size" in node:
            if rest:
                self.fail(
                    self.line_of(node, "size"),
                    f"{path}.size",
                    "`size` and `length: rest` exclude each other",
                )
            size = self.expr(node["size"], self.line_of(node, "size"), f"{path}.size", scope)
        return BytesField(name, is_string, length, rest, nullable, size, doc)

    def array_field(
        self, node: Mapping, path: str, name: str, scope: dict[str, IntField], doc: str
    ) -> ArrayField:
        if "of" not in node:
            self.fail(node.line, f"{path}.of", "an array needs `of`")
        of = node["of"]
        oline = self.line_of(node, "of")
        if isinstance(of, str):
            shadow = Mapping({"type": of})
            shadow.line, shadow.key_lines = oline, {"type": oline}
            of = shadow
        of = self.mapping(of, f"{path}.of", oline)
        self.keys(
            of,
            f"{path}.of",
            {
                "type",
                "length",
                "nullable",
                "size",
                "min",
                "max",
                "enum",
                "doc",
                "terminator",
                "forbid",
            },
            {"type"},
        )
        if of["type"] == "array":
            self.fail(
                oline,
                f"{path}.of.type",
                "arrays of arrays are not supported; wrap the inner array in a struct",
            )
        element: Element = self.value(of, f"{path}.of", scope, top=False)
        if isinstance(element, FloatField):
            self.fail(oline, f"{path}.of.type", "arrays of floats are not supported yet; "
                      "wrap the float in a struct")  # fmt: skip
        if isinstance(element, BytesField) and element.rest:
            self.fail(oline, f"{path}.of.length", "an element cannot run to the end of the frame")
        result = ArrayField(name, element, doc=doc)
        if "min_count" in node:
            mline = self.line_of(node, "min_count")
            result.min_count = self.integer(node["min_count"], mline, f"{path}.min_count")
            if result.min_count < 1:
                self.fail(mline, f"{path}.min_count", "must be at least 1")
        if "terminator" in node:
            tline = self.line_of(node, "terminator")
            for key in ("count", "byte_length"):
                if key in node:
                    self.fail(self.line_of(node, key), f"{path}.{key}",
                              "an array ends at its terminator or by count/byte_length, not both")  # fmt: skip
            result.terminator = self.integer(node["terminator"], tline, f"{path}.terminator")
            if not 0 <= result.terminator <= 255:
                self.fail(tline, f"{path}.terminator", "a terminator is one byte (0..255)")
            return result
        has_count, has_bytes = "count" in node, "byte_length" in node
        if has_count == has_bytes:
            self.fail(node.line, path,
                      "an array needs exactly one of `count`, `byte_length` or `terminator`")  # fmt: skip
        key = "count" if has_count else "byte_length"
        value = node[key]
        kline = self.line_of(node, key)
        prefix = resolve_int_type(value, self.little) if isinstance(value, str) else None
        if prefix is not None:
            setattr(result, f"{key}_prefix", prefix)
        elif value == "rest" and key == "count":
            if self.self_delimiting:
                self.fail(
                    kline,
                    f"{path}.count",
                    "`rest` needs length_prefix framing (frames here delimit themselves)",
                )
            result.count_rest = True
        else:
            setattr(result, f"{key}_expr", self.expr(value, kline, f"{path}.{key}", scope))
        return result

    def expr(self, value: Any, line: int, path: str, scope: dict[str, IntField]) -> Expr:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                self.fail(line, path, "a size cannot be negative")
            return Expr(str(value), (str(value),))
        if not isinstance(value, str):
            self.fail(line, path, f"expected an integer or an expression, got {value!r}")
        if re.search(r"[()/]", value):
            return self.expr_tree(value, line, path, scope)
        tokens: list[str] = []
        pos = 0
        text = value.strip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match:
                self.fail(line, path, f"cannot read the expression '{value}' at '{text[pos:]}'")
            token = match.group(1) or match.group(2) or match.group(3)
            expect_operand = len(tokens) % 2 == 0
            if expect_operand == bool(match.group(3)):
                self.fail(line, path, f"misplaced '{token}' in expression '{value}'")
            if match.group(1):
                token = str(int(token, 0))
            elif match.group(2):
                if token.startswith("ctx."):
                    cname = token[4:]
                    if cname not in self.context:
                        self.fail(line, path, f"unknown context value '{cname}'")
                    keyed_by = self.context[cname].keyed_by
                    if keyed_by is not None and keyed_by not in scope:
                        self.fail(
                            line,
                            path,
                            f"ctx.{cname} is keyed by '{keyed_by}', which is not an earlier field here",
                        )
                elif token not in scope:
                    self.fail(line, path, f"'{token}' is not an earlier integer field here")
            tokens.append(token)
            pos = match.end()
        if not tokens or len(tokens) % 2 == 0:
            self.fail(line, path, f"incomplete expression '{value}'")
        return Expr(text, tuple(tokens))

    def expr_tree(self, value: str, line: int, path: str, scope: dict[str, IntField]) -> Expr:
        """A size expression with parentheses or ``/``: parsed as a condition's arithmetic."""
        tree = self.cond(value, line, path, scope, {})
        operands: list[str] = []

        def walk(node: Cond) -> None:
            if node.op in ("and", "or", "not", "more", "remaining", "==", "!=", "<", "<=", ">",
                           ">="):  # fmt: skip
                self.fail(line, path, f"'{value}' is not an arithmetic expression")
            if node.op == "lit":
                operands.append(str(node.value))
            elif node.op == "field":
                operands.append(node.name)
            elif node.op == "ctx":
                if self.context[node.name].keyed_by is not None:
                    self.fail(
                        line, path, f"ctx.{node.name} is keyed: write it without parentheses or '/'"
                    )
                operands.append("ctx." + node.name)
            for arg in node.args:
                walk(arg)

        walk(tree)
        tokens = tuple(" + ".join(operands).split(" "))
        return Expr(value.strip(), tokens, tree)

    def mark_derived(self, items: list[Item], path: str, prefix: list[Item]) -> None:
        """A field named alone by a later size/count/byte_length is computed on encode."""
        values = {v.name: v for item in prefix + items for v in self.values_of(item)}
        users: dict[str, str] = {}
        for item in items:
            node = item.node
            if isinstance(node, Word):
                continue
            exprs: list[Expr] = []
            if isinstance(node, BytesField) and node.size is not None:
                exprs.append(node.size)
            if isinstance(node, ArrayField):
                exprs += [e for e in (node.count_expr, node.byte_length_expr) if e is not None]
                if isinstance(node.element, BytesField) and node.element.size is not None:
                    exprs.append(node.element.size)
            for expr in exprs:
                single = expr.single_name
                if (
                    single is None
                    or single not in values
                    or (
                        isinstance(node, ArrayField) and expr is getattr(node.element, "size", None)
                    )
                ):
                    continue
                target = values[single]
                if any(target is v for p in prefix for v in self.values_of(p)):
                    continue  # header values stay attributes
                if single in users:
                    self.fail(
                        item.line, path, f"'{single}' already gives the size of '{users[single]}'"
                    )
                if item.condition is not None:
                    self.fail(
                        item.line,
                        path,
                        f"'{node.name}' depends on a flag, so it cannot size itself by '{single}'",
                    )
                if target.const is not None:
                    self.fail(
                        item.line, path, f"'{single}' is const, so it cannot be a computed length"
                    )
                users[single] = node.name
                target.doc = (
                    target.doc
                    or f"derived: the {'length' if not isinstance(node, ArrayField) else 'size'} of {node.name}"
                )
                target.derived_from = node.name

    # --- header, frames ------------------------------------------------------------------

    def flag_masks(self, node: Any, path: str, parent: Mapping) -> dict[str, int]:
        node = self.mapping(node, path, parent.line)
        masks: dict[str, int] = {}
        for name, mask in node.items():
            line = self.line_of(node, name)
            self.name(name, LOWER, "lower_snake", line, f"{path}.{name}")
            masks[name] = self.integer(mask, line, f"{path}.{name}")
        return masks

    def frame_flags(self, fnode: Mapping, path: str,
                    width: int) -> tuple[dict[str, int], dict[str, tuple[IntField, int]]]:  # fmt: skip
        """A frame's ``flags:``: ``name: mask`` (one bit: a bool) or ``name: {mask: ...,
        enum:/min:/max:/default:/doc:}`` (contiguous bits holding a number, MQTT's QoS)."""
        node = self.mapping(fnode.get("flags", Mapping()), f"{path}.flags", fnode.line)
        bits: dict[str, int] = {}
        values: dict[str, tuple[IntField, int]] = {}
        for name, entry in node.items():
            line, fpath = self.line_of(node, name), f"{path}.flags.{name}"
            self.name(name, LOWER, "lower_snake", line, fpath)
            if not isinstance(entry, Mapping):
                mask = self.integer(entry, line, fpath)
                self.check_mask(mask, width, line, fpath)
                bits[name] = mask
                continue
            self.keys(entry, fpath, {"mask", "enum", "min", "max", "default", "doc"}, {"mask"})
            mask = self.integer(entry["mask"], self.line_of(entry, "mask"), f"{fpath}.mask")
            low = mask & -mask
            if width == 0 or mask <= 0 or mask >= 1 << width or (mask + low) & mask:
                self.fail(self.line_of(entry, "mask"), f"{fpath}.mask",
                          f"{mask:#x} is not a run of bits of the {width}-bit flags")  # fmt: skip
            run = (mask // low).bit_length()
            shadow = Mapping(entry)
            shadow.line, shadow.key_lines = entry.line, entry.key_lines
            shadow["name"] = name
            shadow.pop("mask")
            values[name] = (
                self.int_field(shadow, fpath, IntType(f"flags:{run}", run, False, None)),
                mask,
            )
        return bits, values

    def check_mask(self, mask: int, width: int, line: int, path: str) -> None:
        if width == 0:
            self.fail(line, path, "there is no flags run in the header to hold this flag")
        if mask <= 0 or mask >= 1 << width or mask & (mask - 1):
            self.fail(line, path, f"{mask:#x} is not a single bit of the {width}-bit flags")

    def discriminator(self, header_node: Mapping, header: list[Item],
                      where: str = "header") -> list[str]:  # fmt: skip
        value = header_node["discriminator"]
        line = self.line_of(header_node, "discriminator")
        names = list(value) if isinstance(value, list) else [value]
        scope = {v.name: v for item in header for v in self.values_of(item)}
        for name in names:
            if isinstance(name, str) and name.startswith("ctx.") and where == "header":
                found = self.context.get(name[4:])
                if found is None or found.keyed_by is not None:
                    self.fail(line, f"{where}.discriminator",
                              f"'{name}' is not a context value (unkeyed) of this file")  # fmt: skip
                continue
            if name not in scope:
                self.fail(
                    line, f"{where}.discriminator", f"'{name}' is not an integer {where} field"
                )
        if len(set(names)) != len(names):
            self.fail(line, f"{where}.discriminator", "a field is named twice")
        # TypeScript keys its frame table by one number: two parts are combined as
        # ``first * 0x10000 + second`` (RabbitMQ's key and version), so a second part must
        # fit 16 bits. (Three parts: Python and Lua key by tuple; TypeScript refuses them.)
        if len(names) == 2 and isinstance(names[1], str) and names[1] in scope:
            bits = scope[names[1]].type.bits
            if bits > 16:
                self.fail(line, f"{where}.discriminator",
                          f"the second part '{names[1]}' is {bits} bits wide; at most 16 are "
                          "supported")  # fmt: skip
        return [str(name) for name in names]

    def unknown(self, node: Any, line: int, flags: dict[str, int], flag_width: int) -> Unknown:
        node = self.mapping(node, "unknown", line)
        self.keys(node, "unknown", {"policy", "flag", "length"}, {"policy"})
        policy = node["policy"]
        pline = self.line_of(node, "policy")
        if policy == "error":
            self.keys(node, "unknown", {"policy"}, set())
            return Unknown("error")
        if policy == "ignore_if_flag":
            self.keys(node, "unknown", {"policy", "flag"}, {"flag"})
            if node["flag"] not in flags:
                self.fail(
                    self.line_of(node, "flag"),
                    "unknown.flag",
                    f"'{node['flag']}' is not a header flag",
                )
            return Unknown("ignore_if_flag", flag=node["flag"])
        if policy == "skip":
            # the header says how long the frame is: an unknown type is skipped by that length
            self.keys(node, "unknown", {"policy"}, set())
            if "length_field" not in self.framing_node:
                self.fail(pline, "unknown.policy",
                          "skip needs frames whose header holds their length (framing.length_field)")  # fmt: skip
            return Unknown("skip")
        if policy == "skip_length":
            self.keys(node, "unknown", {"policy", "length"}, {"length"})
            length = self.int_type(node["length"], self.line_of(node, "length"), "unknown.length")
            return Unknown("skip_length", length=length)
        self.fail(
            pline,
            "unknown.policy",
            f"unknown policy '{policy}' (error, ignore_if_flag, skip_length, skip)",
        )

    def frames(self, top: Mapping, header: list[Item], discriminator: list[str],
               framing_length: str | None, common: dict[str, int],
               flag_width: int) -> list[Frame]:  # fmt: skip
        node = self.mapping(top["frames"], "frames", self.line_of(top, "frames"))
        if not node:
            self.fail(node.line, "frames", "a protocol needs at least one frame")
        scope = {v.name: v for item in header for v in self.values_of(item)}
        disc_types = [scope[name].type if name in scope else INT_TYPES["u32"]
                      for name in discriminator]  # fmt: skip
        frames: list[Frame] = []
        codes: dict[tuple[int, ...], list[tuple[str, str, int]]] = {}
        for name, fnode in node.items():
            path = f"frames.{name}"
            fline = self.line_of(node, name)
            self.name(name, PASCAL, "PascalCase", fline, path)
            if name in self.struct_nodes or name in self.union_nodes or name == "UnknownFrame":
                self.fail(fline, path, f"'{name}' is already a struct/union/generated name")
            fnode = self.mapping(fnode, path, fline)
            self.keys(fnode, path, {"code", "also_codes", "sender", "doc", "spec", "flags", "set_flags", "fields",
                                    "rules", "fixed_flags", "startup", "select"}, {"code", "fields"})  # fmt: skip
            is_startup = fnode.get("startup", False)
            if is_startup not in (True, False):
                self.fail(
                    self.line_of(fnode, "startup"), f"{path}.startup", "expected true or false"
                )
            if is_startup and self.startup_header is None:
                self.fail(self.line_of(fnode, "startup"), f"{path}.startup",
                          "there is no top-level `startup:` header to frame it")  # fmt: skip
            if is_startup:
                for key in ("also_codes", "flags", "set_flags", "fixed_flags"):
                    if key in fnode:
                        self.fail(self.line_of(fnode, key), f"{path}.{key}",
                                  "does not apply to a startup frame")  # fmt: skip
            own_header = self.startup_header if is_startup and self.startup_header else header
            own_scope = {v.name: v for item in own_header for v in self.values_of(item)}
            own_types = ([own_scope[n].type for n in self.startup_discriminator]
                         if is_startup else disc_types)  # fmt: skip
            code = self.code(fnode["code"], self.line_of(fnode, "code"), f"{path}.code", own_types)
            also = []
            if "also_codes" in fnode:
                aseq = self.sequence(
                    fnode["also_codes"], f"{path}.also_codes", self.line_of(fnode, "also_codes")
                )
                also = [
                    self.code(c, self.line_of(aseq, i), f"{path}.also_codes[{i}]", disc_types)
                    for i, c in enumerate(aseq)
                ]
            sender = fnode.get("sender", "any")
            if sender not in ("client", "server", "any"):
                self.fail(
                    self.line_of(fnode, "sender"),
                    f"{path}.sender",
                    f"'{sender}' is not client, server or any",
                )
            own, flag_values = self.frame_flags(fnode, path, flag_width)
            masks = {**own, **{n: m for n, (_, m) in flag_values.items()}}
            for fname, mask in masks.items():
                fl = self.line_of(fnode["flags"], fname)
                if fname in common:
                    self.fail(fl, f"{path}.flags.{fname}", "already a header flag")
                if mask & sum(common.values()) or mask & sum(
                    m for n, m in masks.items() if n != fname
                ):
                    self.fail(fl, f"{path}.flags.{fname}", f"{mask:#x} overlaps another flag")
            flags = {**common, **own}
            fixed_flags = None
            if "fixed_flags" in fnode:
                xline = self.line_of(fnode, "fixed_flags")
                fixed_flags = self.integer(fnode["fixed_flags"], xline, f"{path}.fixed_flags")
                if flag_width == 0 or not 0 <= fixed_flags < 1 << flag_width:
                    self.fail(
                        xline, f"{path}.fixed_flags", f"does not fit the {flag_width}-bit flags"
                    )
                if fixed_flags & sum(masks.values()) or fixed_flags & sum(common.values()):
                    self.fail(xline, f"{path}.fixed_flags", "overlaps a named flag")
            set_flags = fnode.get("set_flags", [])
            for i, flag in enumerate(
                self.sequence(set_flags, f"{path}.set_flags", self.line_of(fnode, "set_flags"))
            ):
                if flag not in flags:
                    self.fail(
                        self.line_of(set_flags, i),
                        f"{path}.set_flags[{i}]",
                        f"unknown flag '{flag}'",
                    )
            own_length = (
                self.startup_length if is_startup and self.startup_header else framing_length
            )
            own_unread = [v.name for item in own_header for v in self.values_of(item)
                          if v.peek or v.name == own_length]  # fmt: skip
            scope_prefix = list(own_header)
            if flag_values:  # multi-bit flag values read like fields of the frame
                scope_prefix.append(Item(Word(IntType("flags", flag_width, False, None),
                                              [Bit("value", 0, v) for v, _ in flag_values.values()])))  # fmt: skip
            unread = frozenset([*(self.startup_discriminator if is_startup else discriminator),
                                *own_unread])  # fmt: skip
            items = self.items(fnode["fields"], f"{path}.fields", self.line_of(fnode, "fields"),
                               flags=flags, in_frame=True, scope_prefix=scope_prefix,
                               unread=unread)  # fmt: skip
            extra_flags = self.flag_width(items, path)
            if extra_flags:
                self.fail(
                    self.line_of(fnode, "fields"),
                    f"{path}.fields",
                    "flag bits belong to the header",
                )
            frame = Frame(name, code, also, sender, own, list(set_flags), items,
                          self.text(fnode, "doc", path), self.text(fnode, "spec", path), fline,
                          self.rules(fnode, path, items, scope_prefix, flags), flag_values,
                          fixed_flags, bool(is_startup))  # fmt: skip
            if "select" in fnode:
                sline = self.line_of(fnode, "select")
                if WILDCARD in code:
                    self.fail(sline, f"{path}.select", "a frame whose code has '*' is the fallback")
                values = {v.name: v for item in own_header for v in self.values_of(item)
                          if not v.peek and v.derived_from is None}  # fmt: skip
                frame.select = self.cond(fnode["select"], sline, f"{path}.select", values, common)
                frame.select_text = str(fnode["select"])
            for c in [code, *also]:
                for other, other_sender, other_line in codes.get(c, []):
                    if sender == "any" or other_sender == "any" or sender == other_sender:
                        self.fail(self.line_of(fnode, "code"), f"{path}.code",
                                  f"code {list(c) if len(c) > 1 else c[0]} is also {other} (line {other_line}); "
                                  "frames may share a code only with different senders")  # fmt: skip
                codes.setdefault(c, []).append((name, sender, fline))
            frames.append(frame)
        return frames

    def frame_log(
        self, top: Mapping, header: list[Item], discriminator: list[str], frames: list[Frame]
    ) -> str | None:
        """The field that is a frame's stream id in the Spark frame log (``spark.py``).

        Given as ``frame_log: {stream_id: NAME}`` (or ``null``: no stream ids); by
        default the integer field named ``stream_id``, if the header or a frame has one.
        """
        where: dict[str, list[tuple[str, IntField | None]]] = {}  # name -> (owner, int or not)
        for item in header:
            for value in self.values_of(item):
                if value.name not in discriminator:
                    where.setdefault(value.name, []).append(("header", value))
        for frame in frames:
            for item in frame.items:
                if isinstance(item.node, Word):
                    for bit in item.node.bits:
                        if bit.value is not None:
                            where.setdefault(bit.value.name, []).append((frame.name, bit.value))
                elif isinstance(item.node, IntField):
                    where.setdefault(item.node.name, []).append((frame.name, item.node))
                else:
                    where.setdefault(item.node.name, []).append((frame.name, None))
        if "frame_log" not in top:
            found = where.get("stream_id", [])
            plain = found and not any(self.not_a_stream_id(node) for _, node in found)
            return "stream_id" if plain else None
        node = self.mapping(top["frame_log"], "frame_log", self.line_of(top, "frame_log"))
        self.keys(node, "frame_log", {"stream_id"}, {"stream_id"})
        name, line = node["stream_id"], self.line_of(node, "stream_id")
        if name is None:
            return None
        self.name(name, LOWER, "lower_snake", line, "frame_log.stream_id")
        if name not in where:
            self.fail(line, "frame_log.stream_id",
                      f"'{name}' is not a field of the header or of any frame")  # fmt: skip
        for owner, found_field in where[name]:
            problem = self.not_a_stream_id(found_field)
            if problem:
                self.fail(line, "frame_log.stream_id",
                          f"'{name}' of {owner} is {problem}; a stream id is an integer attribute")  # fmt: skip
        return str(name)

    def not_a_stream_id(self, value: IntField | None) -> str | None:
        """Why a field cannot be a stream id (None: it can)."""
        if value is None:
            return "not an integer"
        if value.enum is not None:
            return f"an enum ({value.enum.name})"
        if value.const is not None:
            return "a const"
        if value.derived_from is not None:
            return f"derived (the size of {value.derived_from})"
        return None

    def code(self, value: Any, line: int, path: str, types: list[IntType]) -> tuple[int, ...]:
        values = list(value) if isinstance(value, list) else [value]
        if len(values) != len(types):
            self.fail(
                line,
                path,
                f"expected {len(types)} value(s) for the discriminator, got {len(values)}",
            )
        result = []
        for index, (v, itype) in enumerate(zip(values, types)):
            if v == "*" and index == len(types) - 1 and len(types) > 1:
                if not self.last_part_peeked:
                    self.fail(line, path, "'*' needs the code's last part to be a peeked byte "
                              "(peek: true): an encoder could not write 'any other value'")  # fmt: skip
                result.append(WILDCARD)  # any value of the last part no other frame takes
                continue
            v = self.integer(v, line, path)
            if not itype.min <= v <= itype.max:
                self.fail(line, path, f"{v} does not fit the discriminator ({itype.name})")
            result.append(v)
        return tuple(result)


def load_protocol(path: Path, display: str | None = None) -> Protocol:
    """Read, validate and model one IDL file."""
    return load_protocol_text(path.read_text(encoding="utf-8"), display or str(path))


def load_protocol_text(text: str, source: str) -> Protocol:
    """Validate and model the IDL ``text``; errors name ``source`` (e.g. a file at a git
    revision, ``origin/main:idl/rsocket/v1_0.yaml``)."""
    return _Builder(source).build(load_yaml(text, source))
