"""The value rules of ``wirestream diff``: whether what a writer puts in one field
comes out of a reader of the other version as the same thing (see
``wirestream.codegen.diff.compare`` for the reasoning).

An integer is judged value by value over the writer's bounds: its unit (size), its bits
in the unit, its width and signedness, and the reader's bounds, const and closed enum;
bytes and strings by their length encoding, UTF-8 and null; arrays by their count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wirestream.codegen.frontend.model import ArrayField, BytesField, Enum, IntField, Word
from wirestream.codegen.plan.codec import int_bounds

# --- values ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """An integer as it sits on the wire: its unit, its bits there and its bounds."""

    unit: str  # "u32" for a whole integer, "u32 word" for bits of a word, "varint"
    size: int | None  # bytes of the unit; None: variable-length
    shift: int  # of its lowest bit in the unit
    width: int
    signed: bool
    lo: int
    hi: int
    const: int | None
    enum: Enum | None
    runs: tuple[tuple[str, int, int], ...]  # the unit's runs: (name or "reserved", shift, width)
    # What writers put there when it is fewer than its bounds allow: a discriminator holds
    # the codes of the frames only (None: any value in lo..hi).
    written: tuple[int, ...] | None = None

    @property
    def in_word(self) -> bool:
        return self.unit.endswith(" word")

    def shape(self) -> tuple[Any, ...]:
        enum = self.enum.name if self.enum else None  # its members: the enum rules
        return (self.unit, self.size, self.shift, self.width, self.signed, self.lo, self.hi,
                self.const, enum)  # fmt: skip

    def describe(self) -> str:
        if self.in_word:
            text = f"bits {self.shift}..{self.shift + self.width - 1} of a {self.unit}"
        else:
            text = self.unit
        if self.const is not None:
            return f"{text} = {self.const}"
        full = whole_range(self)
        if (self.lo, self.hi) != full:
            text += f" in {self.lo}..{self.hi}"
        if self.enum is not None:
            text += f" ({'open' if self.enum.open else 'closed'} enum {self.enum.name})"
        return text


def whole_range(value: Value) -> tuple[int, int]:
    if value.signed:
        return -(1 << (value.width - 1)), (1 << (value.width - 1)) - 1
    return 0, (1 << value.width) - 1


def int_value(node: IntField) -> Value:
    lo, hi = int_bounds(node)
    unit = node.type.name
    return Value(unit, node.type.size, 0, node.type.bits, node.type.signed, lo, hi, node.const,
                 node.enum, ((node.name, 0, node.type.bits),))  # fmt: skip


def word_values(word: Word) -> list[tuple[IntField, Value]]:
    runs: list[tuple[str, int, int]] = []
    shift = word.type.bits
    placed: list[tuple[IntField, int, int]] = []
    for bit in word.bits:
        shift -= bit.width
        name = bit.value.name if bit.value is not None else bit.kind
        runs.append((name, shift, bit.width))
        if bit.value is not None:
            placed.append((bit.value, shift, bit.width))
    result = []
    for node, at, width in placed:
        lo, hi = int_bounds(node)
        result.append((node, Value(f"{word.type.name} word", word.type.size, at, width, False, lo,
                                   hi, node.const, node.enum, tuple(runs))))  # fmt: skip
    return result


def number(value: int) -> str:
    return str(value) if abs(value) < 1 << 16 else f"{value} ({value:#x})"


def int_problems(writer: Value, reader: Value) -> list[str]:
    """Why values ``writer`` writes do not come out of ``reader`` as the same values
    (nothing when they all do)."""
    if writer.size != reader.size or (writer.size is None and writer.unit != reader.unit):
        return ["read with another size: it and what follows are misread"]
    if writer.shift != reader.shift:
        return ["read from other bits"]
    problems: list[str] = []
    # The values that survive the trip through the reader's bits: `ok` lo..hi.
    if reader.width > writer.width:
        low, high = writer.shift + writer.width, writer.shift + reader.width
        others = [name for name, at, width in writer.runs
                  if at < high and at + width > low and name != "reserved"]  # fmt: skip
        if others:
            return [f"readers read {reader.width} bits, including the writers' "
                    f"{', '.join(others)}"]  # fmt: skip
        ok = (0, min((1 << writer.width) - 1, whole_range(reader)[1]))
    elif reader.width == writer.width and reader.signed == writer.signed:
        ok = whole_range(writer)
    else:
        reader_lo, reader_hi = whole_range(reader)
        if not writer.signed:
            reader_lo = max(reader_lo, 0)
        if reader.width == writer.width:  # same bits, other signedness
            reader_lo = max(reader_lo, 0)
        ok = (reader_lo, reader_hi)
    wanted = writer_values(writer, reader)
    accepted = reader_values(reader, writer)
    if isinstance(wanted, tuple):
        lo, hi = wanted
        if lo < ok[0]:
            problems.append(f"values below {number(ok[0])} are misread")
        if hi > ok[1]:
            problems.append(f"values above {number(ok[1])} are misread")
        lo, hi = max(lo, ok[0]), min(hi, ok[1])
        if lo <= hi:
            if isinstance(accepted, tuple):
                if lo < accepted[0]:
                    problems.append(f"values below {number(accepted[0])} are refused")
                if hi > accepted[1]:
                    problems.append(f"values above {number(accepted[1])} are refused")
            else:
                problems.append(f"readers accept only {members_text(reader, accepted)}, writers "
                                f"may write any of {number(lo)}..{number(hi)}")  # fmt: skip
    else:
        misread = [v for v in wanted if not ok[0] <= v <= ok[1]]
        if misread:
            problems.append(f"{members_text(writer, misread)} {verb(misread)} misread")
        refused = [v for v in wanted if ok[0] <= v <= ok[1] and not accepts(accepted, v)]
        if refused:
            problems.append(f"{members_text(writer, refused)} {verb(refused)} refused")
    return problems


def verb(numbers: list[int]) -> str:
    return "are" if len(numbers) > 1 else "is"


def closed_enum(value: Value, other: Value) -> bool:
    """Whether ``value``'s enum restricts it here (closed, and not the same enum as the
    other side's: membership changes of one enum are the enum rules' to report)."""
    if value.enum is None or value.enum.open:
        return False
    return other.enum is None or other.enum.name != value.enum.name


def writer_values(writer: Value, reader: Value) -> tuple[int, int] | list[int]:
    if writer.const is not None:
        return [writer.const]
    if writer.written is not None:
        return list(writer.written)
    if closed_enum(writer, reader):
        assert writer.enum is not None
        return sorted(v for v in writer.enum.values.values() if writer.lo <= v <= writer.hi)
    return (writer.lo, writer.hi)


def reader_values(reader: Value, writer: Value) -> tuple[int, int] | list[int]:
    if reader.const is not None:
        return [reader.const]
    if closed_enum(reader, writer):
        assert reader.enum is not None
        return sorted(v for v in reader.enum.values.values() if reader.lo <= v <= reader.hi)
    return (reader.lo, reader.hi)


def accepts(accepted: tuple[int, int] | list[int], value: int) -> bool:
    if isinstance(accepted, tuple):
        return accepted[0] <= value <= accepted[1]
    return value in accepted


def members_text(value: Value, numbers: list[int]) -> str:
    names = {v: m for m, v in value.enum.values.items()} if value.enum else {}
    shown = [f"{names[n]} ({number(n)})" if n in names else number(n) for n in numbers[:6]]
    more = f" and {len(numbers) - 6} more" if len(numbers) > 6 else ""
    return f"value{'s' if len(numbers) > 1 else ''} {', '.join(shown)}{more}"


def int_rule(old: Value, new: Value) -> str:
    if (
        old.size != new.size
        or old.width != new.width
        or (old.size is None and old.unit != new.unit)
    ):
        return "field-resized"
    if old.shift != new.shift:
        return "bits-moved"
    old_enum = old.enum.name if old.enum else None
    new_enum = new.enum.name if new.enum else None
    if old.signed != new.signed or old_enum != new_enum:
        return "field-retyped"
    return "value-range-changed"


# --- bytes and arrays ------------------------------------------------------------------


def bytes_length(node: BytesField) -> str:
    if node.rest:
        return "to the end of the frame"
    if node.length is not None and node.size is not None:
        return f"{node.length.name}-prefixed (size {node.size.text})"
    if node.length is not None:
        return f"{node.length.name}-prefixed"
    if node.terminator is not None:
        return f"ended by byte {node.terminator:#04x}"
    assert node.size is not None
    return f"of size {node.size.text}"


def bytes_text(node: BytesField) -> str:
    kind = "string" if node.is_string else "bytes"
    null = ", nullable" if node.nullable else ""
    xor = f", xor {node.xor_key.name}" if node.xor_key is not None else ""
    forbid = f", forbidding {len(node.forbid)} values" if node.forbid else ""
    return f"{kind} {bytes_length(node)}{null}{xor}{forbid}"


def bytes_problems(writer: BytesField, reader: BytesField) -> list[str]:
    if bytes_length(writer) != bytes_length(reader):
        return ["its length is read another way: it and what follows are misread"]
    problems = []
    if (writer.xor_key is None) != (reader.xor_key is None) or (
        writer.xor_key is not None
        and reader.xor_key is not None
        and writer.xor_key.name != reader.xor_key.name
    ):
        problems.append("its bytes are masked another way: readers see other bytes")
    if set(reader.forbid) - set(writer.forbid):
        problems.append("readers refuse values holding bytes the writer allows")
    if reader.is_string and not writer.is_string:
        problems.append("readers refuse bytes that are not UTF-8")
    if writer.nullable and not reader.nullable:
        problems.append("readers refuse null (length -1)")
    return problems


def bytes_rule(old: BytesField, new: BytesField) -> str:
    both_prefixed = old.length is not None and new.length is not None and not old.size
    both_sized = old.length is None and new.length is None and not old.rest and not new.rest
    if bytes_length(old) != bytes_length(new) and ((both_prefixed and not new.size) or both_sized):
        return "field-resized"
    return "field-retyped"


def count_text(node: ArrayField) -> str:
    if node.count_prefix is not None:
        return f"a {node.count_prefix.name} count"
    if node.count_expr is not None:
        return f"a count of {node.count_expr.text}"
    if node.count_rest:
        return "elements to the end of the frame"
    if node.byte_length_prefix is not None:
        return f"a {node.byte_length_prefix.name} byte length"
    if node.terminator is not None:
        return f"elements until byte {node.terminator:#04x}"
    assert node.byte_length_expr is not None
    return f"a byte length of {node.byte_length_expr.text}"
