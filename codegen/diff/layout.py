"""The layout rules of ``wirestream diff``: fields, bits, flags, structs and unions.

Why each judgement is what it is is told in ``wirestream.codegen.diff.compare``; this module
holds the machinery: a layout (the items of a header, frame or struct) becomes a list
of ``Elem`` -- one per named value on the wire, in wire order -- and two lists are
aligned by name (``difflib``'s longest matching runs; a name in both but outside them
is reordered; what is left in a gap between matches pairs up by kind as a rename, or is
added / removed).  Each pair is then judged writer -> reader, once per direction.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any

from wirestream.codegen.diff.changes import SIDES, Comparison
from wirestream.codegen.diff.values import (
    Value,
    bytes_problems,
    bytes_rule,
    bytes_text,
    count_text,
    int_problems,
    int_rule,
    int_value,
    word_values,
)
from wirestream.codegen.frontend.model import (
    ArrayField,
    BytesField,
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

Owner = tuple[str, str, str]  # ("struct" | "union", old name, new name)
ANOTHER_KIND = "read as another kind of value: it and what follows are misread"
OTHER_COUNT = "the element count is read another way: it and what follows are misread"


# --- elements and alignment ------------------------------------------------------------


@dataclass
class Elem:
    """One named value of a layout, in wire order."""

    name: str
    kind: str  # "int" | "bytes" | "array" | "ref" | "float"
    node: IntField | BytesField | ArrayField | RefField | FloatField
    line: int
    condition: str | None = None
    value: Value | None = None  # for "int"
    mates: frozenset[str] = frozenset()  # the names sharing its word
    last: bool = False  # the last value of its layout

    @property
    def rest(self) -> bool:
        node = self.node
        return (isinstance(node, BytesField) and node.rest) or (
            isinstance(node, ArrayField) and node.count_rest
        )

    def describe(self) -> str:
        node = self.node
        if self.value is not None:
            return self.value.describe()
        if isinstance(node, BytesField):
            return bytes_text(node)
        if isinstance(node, ArrayField):
            return f"an array ({count_text(node)})"
        assert isinstance(node, RefField)
        kind = "union" if isinstance(node.target, Union_) else "struct"
        return f"{kind} {node.target.name}"


def elements(items: list[Item]) -> list[Elem]:
    result: list[Elem] = []
    for item in items:
        node = item.node
        if isinstance(node, Word):
            placed = word_values(node)
            mates = frozenset(value.name for value, _ in placed)
            for value, shape in placed:
                result.append(Elem(value.name, "int", value, item.line, item.condition, shape,
                                   mates))  # fmt: skip
        else:
            result.append(element(node, item.line, item.condition))
    if result:
        result[-1].last = True
    return result


def element(node: IntField | BytesField | ArrayField | RefField | FloatField, line: int,
            condition: str | None = None) -> Elem:  # fmt: skip
    if isinstance(node, FloatField):
        return Elem(node.name, "float", node, line, condition)
    if isinstance(node, IntField):
        return Elem(node.name, "int", node, line, condition, int_value(node))
    if isinstance(node, BytesField):
        return Elem(node.name, "bytes", node, line, condition)
    if isinstance(node, ArrayField):
        return Elem(node.name, "array", node, line, condition)
    return Elem(node.name, "ref", node, line, condition)


def same_kind(old: Elem, new: Elem) -> bool:
    if old.kind != new.kind:
        return False
    if old.value is not None and new.value is not None:
        return old.value.size == new.value.size
    return True


@dataclass
class Alignment:
    pairs: list[tuple[Elem, Elem, str]]  # (old, new, "same" | "reordered" | "renamed")
    removed: list[Elem]
    added: list[Elem]


def align(old: list[Elem], new: list[Elem]) -> Alignment:
    old_names, new_names = [e.name for e in old], [e.name for e in new]
    matcher = difflib.SequenceMatcher(None, old_names, new_names, autojunk=False)
    pairs: list[tuple[Elem, Elem, str]] = []
    used_old: set[int] = set()
    used_new: set[int] = set()
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            pairs.append((old[block.a + k], new[block.b + k], "same"))
            used_old.add(block.a + k)
            used_new.add(block.b + k)
    common = set(old_names) & set(new_names)
    for i, elem in enumerate(old):
        if i not in used_old and elem.name in common:
            j = new_names.index(elem.name)
            pairs.append((elem, new[j], "reordered"))
            used_old.add(i)
            used_new.add(j)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        gap_new = [j for j in range(j1, j2) if j not in used_new]
        for i in range(i1, i2):
            if i in used_old:
                continue
            match = next((j for j in gap_new if same_kind(old[i], new[j])), None)
            if match is not None:
                pairs.append((old[i], new[match], "renamed"))
                used_old.add(i)
                used_new.add(match)
                gap_new = [j for j in gap_new if j > match]
        # One value replaced by one of another kind at the same place: a retyped field
        # under a new name, not one removed and one added.
        left_old = [i for i in range(i1, i2) if i not in used_old]
        left_new = [j for j in range(j1, j2) if j not in used_new]
        if len(left_old) == len(left_new) == 1:
            pairs.append((old[left_old[0]], new[left_new[0]], "renamed"))
            used_old.add(left_old[0])
            used_new.add(left_new[0])
    pairs.sort(key=lambda p: new.index(p[1]))
    removed = [e for i, e in enumerate(old) if i not in used_old]
    added = [e for j, e in enumerate(new) if j not in used_new]
    return Alignment(pairs, removed, added)


# --- header bits and flag positions -----------------------------------------------------


@dataclass
class Run:
    kind: str  # "value" | "reserved" | "flags"
    name: str
    start: int | None  # bit index from the header's first bit (most significant first)
    width: int
    unit: int
    shift: int
    const: int | None = None


class HeaderBits:
    """What each bit of a version's header is, for a frame: where flags sit, and which
    bits a writer of a frame always, never or sometimes sets."""

    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.runs: list[Run] = []
        offset: int | None = 0
        for index, item in enumerate(proto.header):
            node = item.node
            if isinstance(node, Word):
                bits = node.type.bits
                shift = bits
                for bit in node.bits:
                    shift -= bit.width
                    start = None if offset is None else offset + bits - shift - bit.width
                    name = bit.value.name if bit.value is not None else bit.kind
                    const = bit.value.const if bit.value is not None else None
                    self.runs.append(Run(bit.kind, name, start, bit.width, index, shift, const))
                offset = None if offset is None else offset + bits
            elif isinstance(node, IntField) and node.type.size is not None:
                bits = node.type.bits
                self.runs.append(Run("value", node.name, offset, bits, index, 0, node.const))
                offset = None if offset is None else offset + bits
            else:
                offset = None
        self.flags = next((run for run in self.runs if run.kind == "flags"), None)

    def flag_position(self, mask: int) -> tuple[int, ...]:
        """Where a flag's bit is: (bit from the header's start,) or (unit, bit in it)."""
        run = self.flags
        assert run is not None
        low = mask.bit_length() - 1
        if run.start is not None:
            return (run.start + run.width - 1 - low,)
        return (run.unit, run.shift + low)

    def position_text(self, mask: int) -> str:
        position = self.flag_position(mask)
        if len(position) == 1:
            return f"{mask:#x} (header bit {position[0]})"
        return f"{mask:#x} (bit {position[1]} of header word {position[0] + 1})"

    def run_at(self, position: tuple[int, ...]) -> tuple[Run, int] | None:
        """The run holding a flag position and the bit's index in the run (0 = lowest)."""
        for run in self.runs:
            if len(position) == 1 and run.start is not None:
                if run.start <= position[0] < run.start + run.width:
                    return run, run.start + run.width - 1 - position[0]
            elif len(position) == 2 and run.unit == position[0]:
                if run.shift <= position[1] < run.shift + run.width:
                    return run, position[1] - run.shift
        return None

    def frame_flags(self, frame: Frame) -> dict[str, tuple[int, ...]]:
        if self.flags is None:
            return {}
        flags = {**self.proto.common_flags, **frame.flags}
        return {name: self.flag_position(mask) for name, mask in flags.items()}

    def bit_state(self, frame: Frame, position: tuple[int, ...]) -> tuple[str, str]:
        """Whether a writer of ``frame`` sets a header bit: ("always" | "never" |
        "varies", what the bit is to it)."""
        found = self.run_at(position)
        if found is None:
            return "varies", "not a header bit"
        run, low = found
        if run.kind == "reserved":
            return "never", "a reserved bit"
        if run.kind == "flags":
            flags = {**self.proto.common_flags, **frame.flags}
            for name, mask in flags.items():
                if mask == 1 << low:
                    if name in frame.set_flags:
                        return "always", f"its {name} flag, always set"
                    return "varies", f"its {name} flag"
            return "never", "a flag bit it does not declare"
        fixed: int | None = run.const
        if run.name in self.proto.discriminator:
            fixed = frame.code[self.proto.discriminator.index(run.name)]
        if fixed is not None:
            state = "always" if fixed >> low & 1 else "never"
            return state, f"a bit of its {run.name} ({fixed:#x})"
        return "varies", f"a bit of its {run.name}"


@dataclass
class Presence:
    """When a side has a field on the wire: "always", "never" or when a flag is set."""

    kind: str
    flag: str | None = None
    position: tuple[int, ...] = ()


@dataclass
class FrameSide:
    """One version's frame of a compared pair (None for structs and the header)."""

    frame: Frame
    bits: HeaderBits

    def presence(self, elem: Elem | None) -> Presence:
        if elem is None:
            return Presence("never")
        if elem.condition is None:
            return Presence("always")
        if elem.condition in self.frame.set_flags:
            return Presence("always")
        mask = {**self.bits.proto.common_flags, **self.frame.flags}[elem.condition]
        return Presence("flag", elem.condition, self.bits.flag_position(mask))


def presence_problem(writer_elem: Elem | None, reader_elem: Elem | None,
                     writer: FrameSide | None, reader: FrameSide | None) -> str | None:  # fmt: skip
    """Why readers do not find a field exactly when writers write it (None: they do)."""
    if writer is None or reader is None:  # structs and the header: no flags
        wrote = Presence("never" if writer_elem is None else "always")
        read = Presence("never" if reader_elem is None else "always")
    else:
        wrote, read = writer.presence(writer_elem), reader.presence(reader_elem)
    either = reader_elem or writer_elem
    trailing = either is not None and either.rest
    if wrote.kind == read.kind == "never" or wrote.kind == read.kind == "always":
        return None
    if wrote.kind == "never":
        if read.kind == "always":
            if trailing:
                return None  # a frame that ends before it: the field reads as empty
            return "writers do not write it, readers always read it"
        assert writer is not None
        state, what = writer.bits.bit_state(writer.frame, read.position)
        if state == "never":
            return None
        return (f"writers do not write it, readers read it when the {read.flag} bit is set, "
                f"which is {what} to writers")  # fmt: skip
    if read.kind == "never":
        when = "" if wrote.kind == "always" else f" when its {wrote.flag} flag is set"
        if trailing:
            return f"writers write it{when}, readers refuse it as trailing bytes when not empty"
        return f"writers write it{when}, readers do not read it (what follows is misread)"
    if wrote.kind == "always":
        assert writer is not None and read.flag is not None
        state, what = writer.bits.bit_state(writer.frame, read.position)
        if state == "always":
            return None
        return (f"writers always write it, readers read it only when the {read.flag} bit is "
                f"set, which is {what} to writers")  # fmt: skip
    if read.kind == "always":
        return f"writers write it only when {wrote.flag} is set, readers always read it"
    if wrote.position == read.position:
        return None
    return f"writers write it when {wrote.flag} is set, readers when {read.flag} is set"


# --- comparing layouts --------------------------------------------------------------------


@dataclass
class Deferred:
    """A change to a struct or union, reported once its readers are all known."""

    owner: Owner
    rule: str
    subject: str
    old_problems: list[str]
    new_problems: list[str]
    summary: str
    old_line: int | None
    new_line: int | None


class LayoutComparer:
    """Compares the header, frame layouts and (once each) the structs and unions they
    use, adding the changes to a ``Comparison``."""

    def __init__(self, cmp: Comparison) -> None:
        self.cmp = cmp
        self.old_bits = HeaderBits(cmp.old)
        self.new_bits = HeaderBits(cmp.new)
        self.owner_readers: dict[Owner, set[str]] = {}
        self.owner_children: dict[Owner, set[Owner]] = {}
        self.queue: list[tuple[Owner, Struct | Union_, Struct | Union_]] = []
        self.deferred: list[Deferred] = []

    # --- reporting ---

    def report(self, owner: frozenset[str] | Owner, rule: str, subject: str, summary: str,
               old_problems: list[str], new_problems: list[str], old_line: int | None,
               new_line: int | None) -> None:  # fmt: skip
        if isinstance(owner, tuple):
            self.deferred.append(Deferred(owner, rule, subject, old_problems, new_problems,
                                          summary, old_line, new_line))  # fmt: skip
            return
        self.cmp.add(rule, subject, old_breaks=bool(old_problems), new_breaks=bool(new_problems),
                     readers=owner, reason=reason(summary, old_problems, new_problems),
                     old_line=old_line, new_line=new_line)  # fmt: skip

    def finish(self, usage: dict[str, set[str]]) -> None:
        """Compare the structs and unions the layouts paired, and those of the same name
        no paired field reaches (``usage``: who reads each, ``"struct X"`` -> sides); then
        report their changes with the readers of every frame that uses them."""
        done: set[Owner] = set()
        self.drain(done)
        compared = {name for _, old, new in done for name in (old, new)}
        old_types: dict[str, Struct | Union_] = {s.name: s for s in self.cmp.old.structs}
        old_types.update({u.name: u for u in self.cmp.old.unions})
        new_types: dict[str, Struct | Union_] = {s.name: s for s in self.cmp.new.structs}
        new_types.update({u.name: u for u in self.cmp.new.unions})
        for name, old in old_types.items():
            new = new_types.get(name)
            if (
                new is None
                or name in compared
                or isinstance(old, Union_) != isinstance(new, Union_)
            ):
                continue
            kind = "union" if isinstance(old, Union_) else "struct"
            self.owner_readers.setdefault((kind, name, name), set()).update(
                usage.get(f"{kind} {name}", set())
            )
            self.queue.append(((kind, name, name), old, new))
        self.drain(done)
        changed = True
        while changed:  # a nested struct is read by whoever reads its parents
            changed = False
            for parent, children in self.owner_children.items():
                for child in children:
                    before = len(self.owner_readers[child])
                    self.owner_readers[child] |= self.owner_readers[parent]
                    changed = changed or len(self.owner_readers[child]) != before
        for item in self.deferred:
            self.cmp.add(item.rule, item.subject, old_breaks=bool(item.old_problems),
                         new_breaks=bool(item.new_problems),
                         readers=frozenset(self.owner_readers[item.owner]),
                         reason=reason(item.summary, item.old_problems, item.new_problems),
                         old_line=item.old_line, new_line=item.new_line)  # fmt: skip

    def drain(self, done: set[Owner]) -> None:
        while self.queue:
            owner, old, new = self.queue.pop(0)
            if owner in done:
                continue
            done.add(owner)
            if isinstance(old, Struct) and isinstance(new, Struct):
                self.compare_items(old.items, new.items, f"struct {pair_name(old, new)}", owner)
            else:
                assert isinstance(old, Union_) and isinstance(new, Union_)
                self.compare_union(owner, old, new)

    def pair(self, parent: frozenset[str] | Owner, old: Struct | Union_,
             new: Struct | Union_) -> None:  # fmt: skip
        kind = "union" if isinstance(old, Union_) else "struct"
        owner: Owner = (kind, old.name, new.name)
        readers = self.owner_readers.setdefault(owner, set())
        if isinstance(parent, tuple):
            self.owner_children.setdefault(parent, set()).add(owner)
        else:
            readers |= parent
        self.queue.append((owner, old, new))

    # --- the header ---

    def compare_header(self) -> None:
        old, new = self.cmp.old, self.cmp.new
        both = frozenset(SIDES)
        self.compare_items(old.header, new.header, "header", both,
                           discriminator=set(old.discriminator) | set(new.discriminator))  # fmt: skip
        if self.old_bits.flags is None and self.new_bits.flags is None:
            return
        self.compare_flags(old.common_flags, new.common_flags, "header", both,
                           lambda name: old.line(f"header.flags.{name}", "header"),
                           lambda name: new.line(f"header.flags.{name}", "header"))  # fmt: skip

    # --- frames ---

    def compare_frame(self, old: Frame, new: Frame, readers: frozenset[str]) -> None:
        subject = f"frame {pair_name(old, new)}"
        if self.old_bits.flags is not None or self.new_bits.flags is not None:
            # A frame's flags are its own and the header's.  The header's are judged once,
            # with the header: those it declares in both versions, and those it declares
            # in one version when the other's frame has no flag of that name.
            old_common, new_common = set(self.cmp.old.common_flags), set(self.cmp.new.common_flags)
            old_flags = {**self.cmp.old.common_flags, **old.flags}
            new_flags = {**self.cmp.new.common_flags, **new.flags}
            skip = (old_common & new_common) | (
                (old_common | new_common) - (set(old_flags) & set(new_flags))
            )
            self.compare_flags({n: m for n, m in old_flags.items() if n not in skip},
                               {n: m for n, m in new_flags.items() if n not in skip},
                               subject, readers,
                               lambda name: self.cmp.old.line(f"frames.{old.name}.flags.{name}",
                                                              "header.flags"),
                               lambda name: self.cmp.new.line(f"frames.{new.name}.flags.{name}",
                                                              "header.flags"),
                               (old, new))  # fmt: skip
        self.compare_items(old.items, new.items, subject, readers,
                           sides=(FrameSide(old, self.old_bits), FrameSide(new, self.new_bits)),
                           frame_lines=(old.line, new.line))  # fmt: skip

    def compare_flags(self, old: dict[str, int], new: dict[str, int], subject: str,
                      readers: frozenset[str], old_line: Any, new_line: Any,
                      frames: tuple[Frame, Frame] | None = None) -> None:  # fmt: skip
        """Flags by name and bit.  Readers ignore flag bits their frame does not declare,
        so a flag added or removed is compatible; what it guards is judged per field."""
        old_bits, new_bits = self.old_bits, self.new_bits
        old_at = {name: old_bits.flag_position(mask) for name, mask in old.items()}
        new_at = {name: new_bits.flag_position(mask) for name, mask in new.items()}
        for name in [*new, *(n for n in old if n not in new)]:
            if name in old and name in new:
                if old_at[name] == new_at[name]:
                    continue
                self.report(readers, "flag-moved", f"{subject}: flag {name}",
                            f"{name} moves from {old_bits.position_text(old[name])} to "
                            f"{new_bits.position_text(new[name])}",
                            ["new writers set it where old readers do not look"],
                            ["old writers set it where new readers do not look"],
                            old_line(name), new_line(name))  # fmt: skip
                continue
            if name in new:
                renamed = next((o for o in old if o not in new and old_at[o] == new_at[name]), None)
                if renamed is not None:
                    self.report(readers, "flag-renamed", f"{subject}: flag {renamed} -> {name}",
                                f"{renamed} is called {name} (same bit, "
                                f"{new_bits.position_text(new[name])})", [], [],
                                old_line(renamed), new_line(name))  # fmt: skip
                    continue
                problem = self.foreign_bit(old_bits, new_at[name], frames[0] if frames else None)
                self.report(readers, "flag-added", f"{subject}: flag {name}",
                            f"{name} added at {new_bits.position_text(new[name])}",
                            [problem] if problem else [], [], None, new_line(name))  # fmt: skip
            elif not any(old_at[name] == new_at[n] for n in new if n not in old):
                problem = self.foreign_bit(new_bits, old_at[name], frames[1] if frames else None)
                self.report(readers, "flag-removed", f"{subject}: flag {name}",
                            f"{name} at {old_bits.position_text(old[name])} removed",
                            [], [problem] if problem else [], old_line(name), None)  # fmt: skip

    def foreign_bit(self, bits: HeaderBits, position: tuple[int, ...],
                    frame: Frame | None) -> str | None:  # fmt: skip
        """Why readers of ``bits`` do not simply ignore a flag bit (None: they do)."""
        found = bits.run_at(position)
        if found is None or found[0].kind == "reserved":
            return None
        run, low = found
        if run.kind == "flags":
            if frame is None:
                return None
            flags = {**bits.proto.common_flags, **frame.flags}
            other = next((n for n, m in flags.items() if m == 1 << low), None)
            return None if other is None else f"the readers' frame has its {other} flag there"
        return f"the bit is part of the readers' {run.name}"

    # --- items ---

    def compare_items(self, old_items: list[Item], new_items: list[Item], subject: str,
                      owner: frozenset[str] | Owner, *,
                      sides: tuple[FrameSide, FrameSide] | None = None,
                      frame_lines: tuple[int, int] | None = None,
                      discriminator: set[str] | None = None) -> None:  # fmt: skip
        found = align(elements(old_items), elements(new_items))
        old_side, new_side = sides if sides else (None, None)
        for elem in found.added:
            old_problem = presence_problem(elem, None, new_side, old_side)
            new_problem = presence_problem(None, elem, old_side, new_side)
            where = f" (if {elem.condition})" if elem.condition else ""
            self.report(owner, "field-added", f"{subject}: field {elem.name}",
                        f"{elem.name}, {elem.describe()}{where}, added",
                        [old_problem] if old_problem else [],
                        [new_problem] if new_problem else [],
                        frame_lines[0] if frame_lines else None, elem.line)  # fmt: skip
        for elem in found.removed:
            old_problem = presence_problem(None, elem, new_side, old_side)
            new_problem = presence_problem(elem, None, old_side, new_side)
            where = f" (if {elem.condition})" if elem.condition else ""
            self.report(owner, "field-removed", f"{subject}: field {elem.name}",
                        f"{elem.name}, {elem.describe()}{where}, removed",
                        [old_problem] if old_problem else [],
                        [new_problem] if new_problem else [],
                        elem.line, frame_lines[1] if frame_lines else None)  # fmt: skip
        for old, new, how in found.pairs:
            name = old.name if old.name == new.name else f"{old.name} -> {new.name}"
            field_subject = f"{subject}: field {name}"
            if how == "renamed":
                self.report(owner, "field-renamed", field_subject,
                            f"{old.name} is called {new.name} (same place)", [], [],
                            old.line, new.line)  # fmt: skip
            if how == "reordered" and not (old.mates == new.mates and len(old.mates) > 1):
                self.report(owner, "field-reordered", field_subject,
                            f"{old.name} moved to another place among the fields",
                            ["new writers put it where old readers read something else"],
                            ["old writers put it where new readers read something else"],
                            old.line, new.line)  # fmt: skip
            if sides is not None and old.condition != new.condition:
                old_problem = presence_problem(new, old, new_side, old_side)
                new_problem = presence_problem(old, new, old_side, new_side)
                self.report(owner, "presence-changed", field_subject,
                            f"present {presence_text(old)} -> {presence_text(new)}",
                            [old_problem] if old_problem else [],
                            [new_problem] if new_problem else [], old.line, new.line)  # fmt: skip
            o, n = old.node, new.node
            if isinstance(o, IntField) and isinstance(n, IntField) and o.default != n.default:
                self.report(owner, "default-changed", field_subject,
                            f"writers write {n.default} unless told otherwise (was "
                            f"{o.default}); the wire format is the same", [], [], old.line,
                            new.line)  # fmt: skip
            key = None
            if discriminator and old.name in discriminator:
                key = "discriminator-changed"
                old, new = written_codes(old, self.cmp.old), written_codes(new, self.cmp.new)
            self.compare_shapes(old, new, field_subject, owner, key)

    def compare_shapes(self, old: Elem, new: Elem, subject: str,
                       owner: frozenset[str] | Owner, rule: str | None = None) -> None:  # fmt: skip
        """Report how one value's wire shape changed (nothing when it did not)."""
        if old.kind != new.kind:
            self.report(owner, rule or "field-retyped", subject,
                        f"{old.describe()} -> {new.describe()}", kind_problems(new, old),
                        kind_problems(old, new), old.line, new.line)  # fmt: skip
            return
        if old.value is not None and new.value is not None:
            if old.value.shape() == new.value.shape():
                return
            self.report(owner, rule or int_rule(old.value, new.value), subject,
                        f"{old.value.describe()} -> {new.value.describe()}",
                        int_problems(new.value, old.value), int_problems(old.value, new.value),
                        old.line, new.line)  # fmt: skip
            return
        o, n = old.node, new.node
        if isinstance(o, BytesField) and isinstance(n, BytesField):
            if bytes_text(o) == bytes_text(n):
                return
            self.report(owner, rule or bytes_rule(o, n), subject,
                        f"{bytes_text(o)} -> {bytes_text(n)}", bytes_problems(n, o),
                        bytes_problems(o, n), old.line, new.line)  # fmt: skip
            return
        if isinstance(o, ArrayField) and isinstance(n, ArrayField):
            if count_text(o) != count_text(n):
                both_prefixed = o.count_prefix is not None and n.count_prefix is not None
                self.report(owner, "field-resized" if both_prefixed else "field-retyped",
                            subject, f"{count_text(o)} -> {count_text(n)}", [OTHER_COUNT],
                            [OTHER_COUNT], old.line, new.line)  # fmt: skip
            self.compare_shapes(element(o.element, old.line), element(n.element, new.line),
                                f"{subject}[]", owner, rule)  # fmt: skip
            return
        assert isinstance(o, RefField) and isinstance(n, RefField)
        if isinstance(o.target, Union_) != isinstance(n.target, Union_):
            self.report(owner, rule or "field-retyped", subject,
                        f"{old.describe()} -> {new.describe()}", [ANOTHER_KIND], [ANOTHER_KIND],
                        old.line, new.line)  # fmt: skip
            return
        self.pair(owner, o.target, n.target)

    # --- unions ---

    def compare_union(self, owner: Owner, old: Union_, new: Union_) -> None:
        subject = f"union {pair_name(old, new)}"
        old_line = self.cmp.old.line(f"unions.{old.name}")
        new_line = self.cmp.new.line(f"unions.{new.name}")
        if (old.peek.name, old.mask) != (new.peek.name, new.mask):
            self.report(owner, "union-changed", subject,
                        f"variants chosen by {union_tag(old)} -> {union_tag(new)}",
                        ["variant tags read as other variants"],
                        ["variant tags read as other variants"], old_line, new_line)  # fmt: skip
        old_tags = {s.name: tag for tag, s in old.variants.items()}
        new_tags = {s.name: tag for tag, s in new.variants.items()}
        paired: list[tuple[int, int]] = [
            (old_tags[n], new_tags[n]) for n in new_tags if n in old_tags
        ]
        for tag in new.variants:
            if (
                tag in old.variants
                and all(tag != o for o, _ in paired)
                and all(tag != n for _, n in paired)
            ):
                paired.append((tag, tag))
        old_used = {o for o, _ in paired}
        new_used = {n for _, n in paired}

        def vline(proto: Protocol, union: Union_, tag: int) -> int:
            return proto.line(f"unions.{union.name}.variants.{tag}")

        for old_tag, new_tag in paired:
            o, n = old.variants[old_tag], new.variants[new_tag]
            if old_tag != new_tag:
                self.report(owner, "variant-retagged", f"{subject}: variant {pair_name(o, n)}",
                            f"tag {old_tag:#x} -> {new_tag:#x}",
                            [self.tag_reading(old, new_tag, o)],
                            [self.tag_reading(new, old_tag, n)],
                            vline(self.cmp.old, old, old_tag),
                            vline(self.cmp.new, new, new_tag))  # fmt: skip
            self.pair(owner, o, n)
        for tag, struct in new.variants.items():
            if tag not in new_used:
                self.report(owner, "variant-added", f"{subject}: variant {struct.name}",
                            f"variant {struct.name} (tag {tag:#x}) added",
                            [self.tag_reading(old, tag, None)], [], None,
                            vline(self.cmp.new, new, tag))  # fmt: skip
        for tag, struct in old.variants.items():
            if tag not in old_used:
                self.report(owner, "variant-removed", f"{subject}: variant {struct.name}",
                            f"variant {struct.name} (tag {tag:#x}) removed",
                            [], [self.tag_reading(new, tag, None)],
                            vline(self.cmp.old, old, tag), None)  # fmt: skip

    @staticmethod
    def tag_reading(reader: Union_, tag: int, same: Struct | None) -> str:
        found = reader.variants.get(tag)
        if found is None:
            return f"readers know no variant with tag {tag:#x}"
        return f"readers read tag {tag:#x} as {found.name}"


def same_shape(a: Elem, b: Elem) -> bool:
    """Whether two values are written alike (names aside)."""
    if a.kind != b.kind:
        return False
    if a.value is not None and b.value is not None:
        return a.value.shape() == b.value.shape()
    if isinstance(a.node, BytesField) and isinstance(b.node, BytesField):
        return bytes_text(a.node) == bytes_text(b.node)
    if isinstance(a.node, RefField) and isinstance(b.node, RefField):
        return a.node.target.name == b.node.target.name
    return False


def kind_problems(writer: Elem, reader: Elem) -> list[str]:
    """Why a value of one kind is not read back as another.  One exception: a trailing
    array of X (count: rest) and a single trailing X are the same bytes when the array
    holds exactly one element."""
    for array, single in ((writer, reader), (reader, writer)):
        node = array.node
        if isinstance(node, ArrayField) and node.count_rest and single.last:
            if same_shape(element(node.element, array.line), single):
                if array is writer:
                    return ["readers read exactly one element; writers may write none or several"]
                return []  # one X, read as an array of X that holds it
    return [ANOTHER_KIND]


def written_codes(elem: Elem, proto: Protocol) -> Elem:
    """A discriminator field as writers fill it: with their frames' codes only."""
    if elem.value is None or elem.name not in proto.discriminator:
        return elem
    index = proto.discriminator.index(elem.name)
    codes = tuple(sorted({frame.code[index] for frame in proto.frames}))
    return dataclasses.replace(elem, value=dataclasses.replace(elem.value, written=codes))


def union_tag(union: Union_) -> str:
    return f"{union.peek.name} & {union.mask:#x}"


def pair_name(old: Any, new: Any) -> str:
    return str(old.name) if old.name == new.name else f"{old.name} -> {new.name}"


def presence_text(elem: Elem) -> str:
    return "always" if elem.condition is None else f"if {elem.condition}"


def reason(summary: str, old_problems: list[str], new_problems: list[str]) -> str:
    text = summary
    if old_problems:
        text += "; old readers: " + "; ".join(old_problems)
    if new_problems:
        text += "; new readers: " + "; ".join(new_problems)
    return text
