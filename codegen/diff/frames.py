"""The frame and enum rules of ``wirestream diff`` (see ``wirestream.codegen.diff.compare``).

Frames are paired by name, then what is left by code (a rename that keeps the code);
each pair is checked for a new code, a new sender, its flags and its layout, and every
frame left over is added or removed.  Which readers a frame concerns follows from its
``sender``; what a reader makes of a code it is sent follows from its own decoder table
for that direction of travel and its ``unknown:`` policy.
"""

from __future__ import annotations

from wirestream.codegen.diff.changes import (
    SIDES,
    Comparison,
    code_text,
    readers_of,
    senders,
    side_text,
)
from wirestream.codegen.diff.layout import LayoutComparer
from wirestream.codegen.frontend.model import (
    ArrayField,
    Enum,
    Frame,
    IntField,
    Item,
    Protocol,
    RefField,
    Union_,
    Word,
)


def compare_frames(cmp: Comparison) -> dict[str, str]:
    """Report the header, frame, struct, union and enum changes; returns the frame
    pairing (old name -> new name) for the machine rules."""
    layout = LayoutComparer(cmp)
    layout.compare_header()
    compare_enums(cmp)
    old_by_name = {f.name: f for f in cmp.old.frames}
    new_by_name = {f.name: f for f in cmp.new.frames}
    pairs: list[tuple[Frame, Frame]] = [
        (old_by_name[f.name], f) for f in cmp.new.frames if f.name in old_by_name
    ]
    old_left = [f for f in cmp.old.frames if f.name not in new_by_name]
    new_left = [f for f in cmp.new.frames if f.name not in old_by_name]
    same_codes = cmp.old.discriminator == cmp.new.discriminator  # else codes mean other things
    for new in list(new_left) if same_codes else []:
        match = next((o for o in old_left if o.code == new.code and senders(o) & senders(new)),
                     None)  # fmt: skip
        if match is not None:
            pairs.append((match, new))
            old_left.remove(match)
            new_left.remove(new)
    pairs.sort(key=lambda pair: cmp.new.frames.index(pair[1]))
    for old, new in pairs:
        compare_frame_pair(cmp, layout, old, new)
    for new in new_left:
        frame_added(cmp, new)
    for old in old_left:
        frame_removed(cmp, old)
    old_usage, new_usage = usage_readers(cmp.old), usage_readers(cmp.new)
    layout.finish({key: old_usage.get(key, set()) | new_usage.get(key, set())
                   for key in {*old_usage, *new_usage}})  # fmt: skip
    return {old.name: new.name for old, new in pairs}


# --- decoder tables ------------------------------------------------------------------------


def reading(reader: Protocol, sender: str, code: tuple[int, ...],
            writer: Frame) -> tuple[bool, str]:  # fmt: skip
    """What readers of ``reader`` make of ``code`` sent by ``sender`` in a frame like
    ``writer``: (whether that breaks, how it is read)."""
    for frame in reader.frames:
        if sender in senders(frame) and code in (frame.code, *frame.also_codes):
            return True, f"they read code {code_text(code)} as {frame.name}"
    unknown = reader.unknown
    if unknown.policy == "skip_length":
        return False, f"they skip code {code_text(code)} as an unknown frame"
    if unknown.policy == "ignore_if_flag" and unknown.flag in writer.set_flags:
        return False, f"they drop code {code_text(code)}: unknown, with the {unknown.flag} flag"
    if unknown.policy == "ignore_if_flag":
        return True, (f"code {code_text(code)} is unknown to them: dropped if the "
                      f"{unknown.flag} flag is set, refused otherwise")  # fmt: skip
    return True, f"they refuse code {code_text(code)} as an unknown frame"


def codes(frame: Frame) -> list[tuple[int, ...]]:
    return [frame.code, *frame.also_codes]


# --- frames ---------------------------------------------------------------------------------


def compare_frame_pair(cmp: Comparison, layout: LayoutComparer, old: Frame, new: Frame) -> None:
    name = old.name if old.name == new.name else f"{old.name} -> {new.name}"
    subject = f"frame {name}"
    if old.name != new.name:
        cmp.add("frame-renamed", subject, old_breaks=False, new_breaks=False,
                readers=readers_of(old.sender) | readers_of(new.sender),
                reason=f"{old.name} is called {new.name} (same code {code_text(new.code)})",
                old_line=old.line, new_line=new.line)  # fmt: skip
    common = senders(old) & senders(new)
    if codes(old) != codes(new) and cmp.old.discriminator == cmp.new.discriminator:
        old_problems: list[str] = []
        new_problems: list[str] = []
        if new.code not in codes(old):
            old_problems = by_side(cmp.old, common, new.code, new)[0]
        if old.code not in codes(new):
            new_problems = by_side(cmp.new, common, old.code, old)[0]
        old_codes = ", ".join(code_text(c) for c in codes(old))
        new_codes = ", ".join(code_text(c) for c in codes(new))
        summary = f"code {old_codes} -> {new_codes}"
        cmp.add("frame-recoded", subject, old_breaks=bool(old_problems),
                new_breaks=bool(new_problems), readers=readers_of_sides(common),
                reason=explain(summary, old_problems, new_problems),
                old_line=cmp.old.line(f"frames.{old.name}.code", f"frames.{old.name}"),
                new_line=cmp.new.line(f"frames.{new.name}.code", f"frames.{new.name}"))  # fmt: skip
    if old.sender != new.sender:
        gained = senders(new) - senders(old)
        lost = senders(old) - senders(new)
        old_problems = [f"{plural_side(s)} never sent it to old {plural_side(other(s))}"
                        for s in sorted(gained)]  # fmt: skip
        new_problems = [f"old {plural_side(s)} still send it to new {plural_side(other(s))}, "
                        "which do not expect it" for s in sorted(lost)]  # fmt: skip
        cmp.add("frame-sender-changed", subject, old_breaks=bool(gained), new_breaks=bool(lost),
                readers=readers_of_sides(gained | lost),
                reason=explain(f"sent by {old.sender} -> {new.sender}", old_problems,
                               new_problems),
                old_line=cmp.old.line(f"frames.{old.name}.sender", f"frames.{old.name}"),
                new_line=cmp.new.line(f"frames.{new.name}.sender", f"frames.{new.name}"))  # fmt: skip
    if common:
        layout.compare_frame(old, new, readers_of_sides(common))


def by_side(reader: Protocol, sides: frozenset[str], code: tuple[int, ...],
            writer: Frame) -> tuple[list[str], list[str]]:  # fmt: skip
    """How readers of ``reader`` take ``code`` from each sending side: (what breaks, what
    does not), naming the side only when the sides differ."""
    found = {side: reading(reader, side, code, writer) for side in sorted(sides)}
    if len(set(found.values())) == 1:
        breaks, text = next(iter(found.values()))
        return ([text], []) if breaks else ([], [text])
    problems = [f"{text} (from {side}s)" for side, (breaks, text) in found.items() if breaks]
    fine = [f"{text} (from {side}s)" for side, (breaks, text) in found.items() if not breaks]
    return problems, fine


def frame_added(cmp: Comparison, new: Frame) -> None:
    problems, fine = by_side(cmp.old, senders(new), new.code, new)
    cmp.add("frame-added", f"frame {new.name}", old_breaks=bool(problems), new_breaks=False,
            readers=readers_of(new.sender),
            reason=explain(f"{new.name} ({code_text(new.code)}, sent by {new.sender}) added",
                           problems or fine, []),
            old_line=None, new_line=new.line)  # fmt: skip


def frame_removed(cmp: Comparison, old: Frame) -> None:
    problems, fine = by_side(cmp.new, senders(old), old.code, old)
    cmp.add("frame-removed", f"frame {old.name}", old_breaks=False, new_breaks=bool(problems),
            readers=readers_of(old.sender),
            reason=explain(f"{old.name} ({code_text(old.code)}, sent by {old.sender}) removed",
                           [], problems or fine),
            old_line=old.line, new_line=None)  # fmt: skip


def other(side: str) -> str:
    return "server" if side == "client" else "client"


def plural_side(side: str) -> str:
    return f"{side}s"


def readers_of_sides(sides: frozenset[str] | set[str]) -> frozenset[str]:
    return frozenset(other(s) for s in sides)


def explain(summary: str, old: list[str], new: list[str]) -> str:
    text = summary
    if old:
        text += "; old readers: " + "; ".join(old)
    if new:
        text += "; new readers: " + "; ".join(new)
    return text


# --- enums ------------------------------------------------------------------------------


def usage_readers(proto: Protocol) -> dict[str, set[str]]:
    """Which sides read each enum, struct and union (``"enum X"``, ``"struct X"``,
    ``"union X"``): the readers of every frame (or the header) whose fields use it,
    directly or inside structs and unions."""
    found: dict[str, set[str]] = {}

    def walk(items: list[Item], readers: frozenset[str], seen: set[str]) -> None:
        for item in items:
            node = item.node
            values: list[IntField] = []
            if isinstance(node, Word):
                values = [bit.value for bit in node.bits if bit.value is not None]
            element = node.element if isinstance(node, ArrayField) else node
            if isinstance(element, IntField):
                values.append(element)
            for value in values:
                if value.enum is not None:
                    found.setdefault(f"enum {value.enum.name}", set()).update(readers)
            if isinstance(element, RefField):
                target = element.target
                kind = "union" if isinstance(target, Union_) else "struct"
                found.setdefault(f"{kind} {target.name}", set()).update(readers)
                structs = (list(target.variants.values()) if isinstance(target, Union_)
                           else [target])  # fmt: skip
                for struct in structs:
                    found.setdefault(f"struct {struct.name}", set()).update(readers)
                    if struct.name not in seen:
                        walk(struct.items, readers, seen | {struct.name})

    walk(proto.header, frozenset(SIDES), set())
    for frame in proto.frames:
        walk(frame.items, readers_of(frame.sender), set())
    return found


def compare_enums(cmp: Comparison) -> None:
    old_enums = {e.name: e for e in cmp.old.enums}
    new_enums = {e.name: e for e in cmp.new.enums}
    old_readers, new_readers = usage_readers(cmp.old), usage_readers(cmp.new)
    for name in [*new_enums, *(n for n in old_enums if n not in new_enums)]:
        old, new = old_enums.get(name), new_enums.get(name)
        key = f"enum {name}"
        readers = old_readers.get(key, set()) | new_readers.get(key, set())
        if old is None or new is None:
            which = "added" if old is None else "removed"
            cmp.add(f"enum-{which}", f"enum {name}", old_breaks=False, new_breaks=False,
                    readers=readers, reason=f"enum {name} {which} (fields that use it are "
                                            "judged with the fields)",
                    old_line=cmp.old.line(f"enums.{name}") if old else None,
                    new_line=cmp.new.line(f"enums.{name}") if new else None)  # fmt: skip
            continue
        compare_enum(cmp, old, new, readers)


def compare_enum(cmp: Comparison, old: Enum, new: Enum, readers: set[str]) -> None:
    subject = f"enum {new.name}"
    unused = not readers
    note = "; no field uses it" if unused else ""
    who = side_text(readers)

    def line(proto: Protocol, enum: Enum, member: str | None = None) -> int:
        base = f"enums.{enum.name}"
        return proto.line(f"{base}.values.{member}" if member else base, base)

    def add(rule: str, what: str, old_breaks: bool, new_breaks: bool, why: str,
            old_member: str | None, new_member: str | None) -> None:  # fmt: skip
        member = new_member or old_member
        text = what + (f"; {why}" if why and (old_breaks or new_breaks) and not unused else "")
        cmp.add(rule, subject + (f": {member}" if member else ""),
                old_breaks=old_breaks and not unused, new_breaks=new_breaks and not unused,
                readers=readers, reason=text + note,
                old_line=line(cmp.old, old, old_member),
                new_line=line(cmp.new, new, new_member))  # fmt: skip

    if old.open != new.open:
        if new.open:
            add("enum-opened", f"{new.name} becomes open", True, False,
                f"new writers may send values outside its members, which old {who} refuse",
                None, None)  # fmt: skip
        else:
            add("enum-closed", f"{new.name} becomes closed", False, True,
                f"old writers may send values outside its members, which new {who} refuse",
                None, None)  # fmt: skip
    by_value_old = {v: m for m, v in old.values.items()}
    for member, value in new.values.items():
        if member in old.values:
            if old.values[member] != value:
                add("enum-member-renumbered",
                    f"{member} {old.values[member]:#x} -> {value:#x}", True, True,
                    f"each side reads the other's {member} as another value", member, member)  # fmt: skip
            continue
        before = by_value_old.get(value)
        if before is not None and before not in new.values:
            add("enum-member-renamed", f"{before} -> {member} (same value {value:#x})",
                False, False, "", before, member)  # fmt: skip
            continue
        add("enum-member-added", f"{member} = {value:#x} added", not old.open, False,
            f"old {who} refuse it (the old enum is closed)" if not old.open else "",
            None, member)  # fmt: skip
    by_value_new = {v: m for m, v in new.values.items()}
    for member, value in old.values.items():
        if member in new.values:
            continue
        after = by_value_new.get(value)
        if after is not None and after not in old.values:
            continue  # a rename, reported above
        add("enum-member-removed", f"{member} = {value:#x} removed", False, not new.open,
            f"new {who} refuse it (the new enum is closed)" if not new.open else "",
            member, None)  # fmt: skip
