"""The Wireshark target: spells the language-neutral plan (``plan.py``) as a Lua dissector.

Wireshark loads Lua dissectors as plugins (``wireshark -X lua_script:FILE`` or the
personal plugins folder).  Each protocol version gets one self-contained file,
``generated/wireshark/<protocol>_<version>.lua``, that decodes exactly what the
generated codecs decode, step by step from the same plan, into a protocol tree:

- the protocol is ``ws_<protocol>_<version>`` (``ws_rsocket_v1_0``): Wireshark has no
  dissector of that name, and the six versions load side by side;
- every value has a field named after the IDL (``names``): a header value is
  ``<proto>.<name>``, a frame's or struct's value ``<proto>.<record>.<name>`` (the
  record in snake case), a length/count prefix the IDL leaves unnamed
  ``<proto>.<record>.<name>.length|count|byte_length``, a flag
  ``<proto>.flags.<name>`` (common) or ``<proto>.<frame>.flags.<name>``, a value of
  several flag bits (MQTT's QoS) ``<proto>.<frame>.flags.<name>`` too; a frame or
  struct whose name would be a header value's or one of the dissector's own
  (``length``...) gets a trailing ``_`` (``Names``);
- enums (open or closed) are value strings, bit fields of words up to 32 bits are
  masked fields (64-bit words are computed: Lua numbers are doubles), bool bits are
  boolean fields, f32/f64 float/double fields, 64-bit integers (varint, zigzag,
  lenenc...) UInt64/Int64; little-endian values are read as such; structs, unions and
  frames are subtrees, arrays a subtree of their elements;
- a field behind a presence flag, a bool bit, an ``if:`` condition (``LuaCond``) or
  ``more`` is there exactly when the codec reads it;
- masked bytes (``transform: {xor: key}``) are shown as their value, unmasked into a
  data source of its own, where the masked bytes are, and as on the wire
  (``<field>.masked``);
- an unknown frame the IDL lets the receiver ignore or skip (``unknown:``) is an
  ``<proto>.unknown_frame`` with its code, as the codecs say it (``(1, 3)`` for a code of
  several parts), and body;
- what the codec refuses is an expert-info error named after the ``ProtocolError``
  class it raises (``<proto>.truncated``, ``.invalid_value``, ``.rule_violation``
  for a broken ``rules:`` entry, ...), never a Lua error;
- frames are found on the TCP stream by the transport's length prefix, by the
  header's length field (``framing.length_field``: the header alone says where the
  frame ends, so a malformed body is skipped; a field running past that end is
  ``.invalid_value``, as in the codecs), or by decoding self-delimiting frames;
- what a frame means can depend on the conversation (``Conversation``): context values
  set by frames one side sends are kept for both directions (MySQL's capabilities,
  PostgreSQL's auth_request), the client's first frame has the ``startup:`` header (and,
  for PostgreSQL, the one after the server's one-byte 'N' to SSLRequest/GSSENCRequest:
  ``STARTUP_ANSWERS``), and a code part that is a context value (MySQL's ``ctx.phase``)
  is the receiver's state in the IDL's client/server machine, replayed for both sides
  (``PhaseMachine``), whatever the framing; a peeked header byte, ``select:`` and codes
  ending in ``*`` choose the frame as the codecs do, with codes of any number of parts
  (``CodeKeys``).

Readers and helpers that only some IDL constructs need (``Uses``) are emitted only
when used: a dissector of a protocol without them is the same Lua as before they
existed.

This module only decides names and spellings (field tables, Lua literals, size
expressions and conditions); ``templates/wireshark/dissector.lua.j2`` lays out the
code.
"""

from __future__ import annotations

from pathlib import Path

import re
from dataclasses import dataclass
from typing import Final

import jinja2

from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.targets.jinja import environment
from wirestream.codegen.frontend.model import (
    ArrayField,
    BytesField,
    Cond,
    Enum,
    IntType,
    Machine,
    Protocol,
    RefField,
    Word,
)
from wirestream.codegen.plan.codec import (
    ArrayStep,
    Bits,
    BytesStep,
    CodecPlan,
    CondPlan,
    ExprPlan,
    FixedRun,
    FloatPlan,
    FloatStep,
    IntPlan,
    IntStep,
    ItemStep,
    RefStep,
    lower_snake,
    plan_codec,
)

DIR: Final = "wireshark"  # the dissectors' folder under --out

DEFAULT_PORTS: Final = {("rsocket", "v1_0"): 7878, ("rabbitmq_stream", "v1"): 5552}
"""The TCP port each dissector registers by default: the servers' well-known ports, as
the pcap writer uses them (``runtime.capture.pcap.WELL_KNOWN_PORTS``), each given to the
current version of its protocol only (one port, one dissector).  The other versions,
Reactive Streams and BPMUX (no well-known port) register none: set the preference or
use Decode As."""

_INT_CTOR: Final = {"u8": "uint8", "u16": "uint16", "u24": "uint24", "u32": "uint32",
                    "u64": "uint64", "varint": "uint64", "varu64": "uint64", "i8": "int8",
                    "i16": "int16", "i32": "int32", "i64": "int64", "vbi": "uint32",
                    "zigzag": "int64", "lenenc": "uint64"}  # fmt: skip
"""The ``ProtoField`` of each integer type (little-endian ones as their big-endian twin:
the value is read by the dissector and handed to the field)."""

_FLOAT_CTOR: Final = {32: "float", 64: "double"}


def proto_name(protocol: str, version: str) -> str:
    """The dissector's protocol (filter) name: ``ws_rsocket_v1_0``."""
    return f"ws_{protocol}_{version}"


def capture_name(protocol: str, version: str) -> str:
    """The protocol as a capture file names it (``rsocket/1.0``): the Protocol column."""
    if version[:1] == "v" and version[1:2].isdigit():
        version = version[1:]
    return f"{protocol}/{version.replace('_', '.')}"


def label(name: str) -> str:
    """A field's display name: ``keepalive_interval`` -> ``Keepalive interval``."""
    text = name.replace("_", " ")
    return text[:1].upper() + text[1:]


def lua_str(text: str) -> str:
    """A Lua string literal (UTF-8 passes through; control characters are escaped)."""
    out = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03d}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def one_line(text: str) -> str:
    return " ".join(text.split())


def lit(value: int) -> str:
    """A Lua number literal (exact: every value spelled this way is below 2**53)."""
    if abs(value) >= 1 << 53:
        raise ValueError(f"{value} is not exact as a Lua number")
    if value < 0:
        return "-" + lit(-value)
    return hex(value) if value > 9 else str(value)


def big_lit(value: int, signed: bool) -> str:
    """A 64-bit constant: ``UInt64(lo, hi)`` / ``Int64(lo, hi)`` (two's complement)."""
    raw = value & 0xFFFFFFFFFFFFFFFF
    lo, hi = raw & 0xFFFFFFFF, raw >> 32
    return f"{'Int64' if signed else 'UInt64'}({lit(lo)}, {lit(hi)})"


def value_lit(value: int, itype: IntType) -> str:
    """``value`` as the reader returns integers of ``itype``: 64-bit ones as userdata."""
    return big_lit(value, itype.signed) if itype.bits > 32 else lit(value)


def is_big(itype: IntType) -> bool:
    return itype.bits > 32


def ctor(itype: IntType) -> str:
    name = itype.name[:-2] if itype.little else itype.name
    return _INT_CTOR[name]


def lua_expr(plan: ExprPlan, codec: CodecPlan) -> str:
    """A size or count expression as a Lua number (64-bit operands through ``num``:
    a value of 2**53 or more is ``math.huge``, which every bound check refuses).  One with
    parentheses or floor division is spelled from its tree (``ExprPlan.tree``)."""
    if plan.tree is not None:
        return LuaCond(codec, "struct").number(plan.tree)
    parts: list[str] = []
    for index, term in enumerate(plan.terms):
        if index:
            parts.append(f" {plan.operators[index - 1]} ")
        if term.kind == "literal":  # beyond 2**53: the nearest double (no input is that long)
            parts.append(lit(term.value) if abs(term.value) < 1 << 53 else str(term.value))
        elif term.kind == "field" and getattr(term, "optional", False):
            parts.append(f"num(v.{term.name} or 0)")  # absent: 0, as the codecs read it
        elif term.kind == "field":
            parts.append(f"num(v.{term.name})")
        elif term.keyed_by is not None:
            parts.append(f"ctx_get(s.ctx.{term.name}, v.{term.keyed_by}, {lit(term.default)})")
        else:
            parts.append(f"s.ctx.{term.name}")
    text = "".join(parts)
    return text if len(plan.terms) == 1 else f"({text})"


# --- conditions --------------------------------------------------------------------------

_LUA_COMPARISONS: Final = {"==": "==", "!=": "~=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_TRUTH_OPS: Final = ("and", "or", "not", "more", "flag", *_LUA_COMPARISONS)


class LuaCond:
    """A condition (``if:``, ``rules:``) spelled in Lua over the decoder's ``v`` (the
    record's values so far), ``h.flags`` (a frame's flags), ``s.ctx`` and ``s.pos`` /
    ``s.stop`` (``more``).

    Lua's 0 is true, so a value in a truth position is compared with 0, and a truth
    value in a value position is 1 or 0, as in Python.  Values are Lua numbers (doubles):
    a 64-bit field (UInt64, Int64) is its nearest double, so conditions over 64-bit
    values are exact below 2**53; ``&`` and ``|`` go through ``bitop`` (two's
    complement, as Python's).
    """

    def __init__(self, plan: CodecPlan, scope: str) -> None:
        self.context = {c.name: c for c in plan.context}
        self.scope = scope  # "frame" | "struct": only a frame has flags (``h``)
        self.big: frozenset[str] = frozenset()

    def spell(self, cond: CondPlan) -> str:
        self.big = cond.big
        return self.truth(cond.tree, top=True)

    def number(self, cond: CondPlan) -> str:
        """A value (a size expression's tree) as a Lua number."""
        self.big = cond.big
        return self.value(cond.tree)

    def truth(self, node: Cond, top: bool = False) -> str:
        op = node.op
        if op in ("and", "or"):
            text = f"{self.truth(node.args[0])} {op} {self.truth(node.args[1])}"
        elif op == "not":
            return f"not {self.truth(node.args[0])}"
        elif op in _LUA_COMPARISONS:
            text = f"{self.value(node.args[0])} {_LUA_COMPARISONS[op]} {self.value(node.args[1])}"
        elif op == "flag":
            # the validator refuses a flag in a struct's condition (a struct has no flags)
            assert self.scope == "frame", "a flag in a struct's condition"
            text = f"bit32.band(h.flags, {lit(node.value)}) ~= 0"
        elif op == "more":
            text = "s.pos < s.stop"
        else:
            text = f"{self.value(node)} ~= 0"
        return text if top else f"({text})"

    def value(self, node: Cond) -> str:
        op = node.op
        if op == "lit":  # beyond 2**53: the nearest double, as a 64-bit field's below
            return lit(node.value) if abs(node.value) < 1 << 53 else str(node.value)
        if op == "field":  # an absent (optional) value reads as 0, as in the codecs
            if node.name in self.big:
                return f"(v.{node.name} and v.{node.name}:tonumber() or 0)"
            return f"(v.{node.name} or 0)"
        if op == "ctx":
            value = self.context[node.name]
            if value.keyed_by is not None:
                return f"ctx_get(s.ctx.{node.name}, v.{value.keyed_by}, {lit(node.value)})"
            return f"s.ctx.{node.name}"
        if op in ("&", "|"):
            left, right = (self.value(arg) for arg in node.args)
            return f"bitop({'bit32.band' if op == '&' else 'bit32.bor'}, {left}, {right})"
        if op in ("+", "-", "*"):
            return f"({self.value(node.args[0])} {op} {self.value(node.args[1])})"
        if op == "/":  # floor division, as Python's //
            return f"math.floor({self.value(node.args[0])} / {self.value(node.args[1])})"
        if op == "remaining":
            return "(s.stop - s.pos)"
        if op in _TRUTH_OPS:
            return f"({self.truth(node, top=True)} and 1 or 0)"
        raise AssertionError(f"the condition operator '{op}'")  # the model has no other


def cond_ops(cond: Cond) -> set[str]:
    """The operators a condition uses (to emit the helpers it needs)."""
    found = {cond.op}
    for arg in cond.args:
        found |= cond_ops(arg)
    return found


# --- what a dissector uses ------------------------------------------------------------------


def step_ints(steps: list[ItemStep]) -> list[IntPlan]:
    """The integer values a layout reads (array elements included)."""
    found: list[IntPlan] = []
    for item in steps:
        step = item.step
        if isinstance(step, FixedRun):
            for unit in step.units:
                if unit.value is not None:
                    found.append(unit.value)
                found += [bits.value for bits in unit.bits if bits.value is not None]
        elif isinstance(step, IntStep):
            found.append(step.value)
        elif isinstance(step, ArrayStep) and step.element.value is not None:
            found.append(step.element.value)
    return found


def big_closed_enums(plan: CodecPlan) -> list[tuple[str, list[str]]]:
    """The closed enums some 64-bit value has, with their members' values in decimal: a
    UInt64 or Int64 is no Lua table key, so membership is checked by the value's text."""
    values = step_ints(plan.header_steps)
    if plan.startup is not None:
        values += step_ints(plan.startup.header_steps)
    for record in [*plan.structs, *plan.frames]:
        values += step_ints(record.steps)
        values += [value for value, _, _ in record.flag_values]
    used = {value.enum for value in values if value.enum is not None and value.big}
    return [(e.name, [str(number) for _, number in e.members])
            for e in plan.enums if e.name in used]  # fmt: skip


def is_exact(value: int) -> bool:
    """Whether a Lua number holds ``value`` exactly (a value string's key must)."""
    return abs(value) < _EXACT


@dataclass
class Uses:
    """The readers and helpers a dissector needs beyond those every dissector has: only
    these are emitted, so a protocol without the newer constructs gets the same Lua."""

    little: bool = False  # little-endian integers
    floats: bool = False
    vbi: bool = False
    zigzag: bool = False
    lenenc: bool = False
    terminator: bool = False
    rules: bool = False
    bitop: bool = False  # & or | in a condition
    min_count: bool = False  # an array with a least count
    forbid: bool = False  # bytes or strings that must not hold some values
    xor: bool = False  # transform: {xor: key} on bytes
    code_part: bool = False  # a code shown or keyed as the text of its parts

    def int_type(self, itype: IntType | None) -> None:
        if itype is None:
            return
        if itype.little and (itype.size or 0) > 1:
            self.little = True
        if itype.flavour in ("vbi", "zigzag", "lenenc"):
            setattr(self, itype.flavour, True)

    def cond(self, cond: CondPlan | None) -> None:
        if cond is not None and cond_ops(cond.tree) & {"&", "|"}:
            self.bitop = True

    def expr(self, expr: ExprPlan | None) -> None:
        if expr is not None:
            self.cond(expr.tree)

    def steps(self, steps: list[ItemStep]) -> None:
        for item in steps:
            self.cond(item.when)
            step = item.step
            if isinstance(step, FixedRun):
                for unit in step.units:
                    if unit.kind == "float":
                        self.floats = True
                        assert unit.float is not None
                        self.little = self.little or unit.float.little
                    self.int_type(unit.type)
            elif isinstance(step, IntStep):
                self.int_type(step.value.type)
            elif isinstance(step, FloatStep):
                self.floats = True
                self.little = self.little or step.value.little
            elif isinstance(step, BytesStep):
                self.bytes(step)
            elif isinstance(step, ArrayStep):
                self.int_type(step.count_prefix)
                self.int_type(step.byte_length_prefix)
                self.expr(step.count_expr)
                self.expr(step.byte_length_expr)
                self.min_count = self.min_count or step.min_count > 0
                element = step.element
                if element.value is not None:
                    self.int_type(element.value.type)
                if element.bytes is not None:
                    self.bytes(element.bytes)
                self.expr(element.fixed_size)

    def bytes(self, step: BytesStep) -> None:
        self.int_type(step.length)
        self.expr(step.size)
        if step.terminator is not None:
            self.terminator = True
        if step.forbid:
            self.forbid = True
        if step.xor_key is not None:
            self.xor = True

    @classmethod
    def of(cls, plan: CodecPlan) -> Uses:
        uses = cls()
        uses.steps(plan.header_steps)
        if plan.startup is not None:
            uses.steps(plan.startup.header_steps)
        for _, _, select in plan.selects:
            uses.cond(select)
        uses.int_type(plan.unknown_length)
        keys = [CodeKeys.of(plan)]
        if plan.startup is not None:
            keys.append(CodeKeys.of(plan, startup=True))
        uses.code_part = any(k.strings for k in keys) or (
            plan.unknown != "error" and not plan.single_code
        )
        for record in [*plan.structs, *plan.frames]:
            uses.steps(record.steps)
            for rule in record.rules:
                uses.rules = True
                uses.cond(rule.check)
        return uses


# --- conversations: context both directions keep, the receiver's phase, startup ---------


@dataclass(frozen=True)
class StartupAnswer:
    """What a server answers, in one byte that is no message, to some startup frames
    (PostgreSQL 55.2.10/55.2.11: SSLRequest and GSSENCRequest are answered 'S' or 'G'
    when encryption follows, 'N' when it does not and the client sends another startup
    frame).  The IDL leaves that byte to the caller (``startup: doc``); tshark's own
    pgsql dissector, like this one, follows it per conversation."""

    requests: tuple[str, ...]  # the startup frames that are answered so
    answers: tuple[tuple[int, str, bool], ...]  # (byte, meaning, another startup frame next)


STARTUP_ANSWERS: Final = {
    ("postgresql", "v3"): StartupAnswer(
        ("SslRequest", "GssencRequest"),
        ((0x4E, "N: no encryption, the startup goes on in the clear", True),
         (0x53, "S: SSL (TLS) follows", False),
         (0x47, "G: GSSAPI encryption follows", False)),
    ),
}  # fmt: skip


def shared_context(proto: Protocol) -> list[str]:
    """The context values both directions keep: set (or cleared) only by frames one side
    sends (MySQL's capabilities, from the client's HandshakeResponse41, lay out the
    server's OK packets; PostgreSQL's auth_request, from the server's Authentication, the
    client's 'p' message).  A value a frame of either side sets (``sender: any``: RSIO's
    Subscribed) belongs to the direction that announced it."""
    senders = {frame.name: frame.sender for frame in proto.frames}
    shared = []
    for value in proto.context:
        frames = [name for name, _ in value.set_by] + list(value.cleared_by)
        if frames and all(senders.get(name) in ("client", "server") for name in frames):
            shared.append(value.name)
    return shared


def pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


@dataclass(frozen=True)
class MachineRow:
    guard: str | None  # a Lua condition over the frame's values ``v``
    target: str | None  # the state it moves to (None: it stays)


@dataclass(frozen=True)
class PhaseMachine:
    """The connection machine both sides run, replayed to know a context value that is
    part of the code (MySQL's ``ctx.phase``): a packet is decoded in the member of the
    enum named after that value (``Phase``) named after the receiving side's machine state
    (the server's packets in the client's state, the client's in the server's), as the
    IDL's header says (``ctx.phase = Phase[machine.state.name.upper()]``)."""

    ctx: str  # the context value (``phase``)
    enum: str  # its enum (``Phase``)
    machine: str
    initial: dict[str, str]  # role -> state member
    phases: dict[str, dict[str, int | None]]  # role -> state member -> its enum value
    # role -> direction -> state member -> frame name or "*" -> rows
    table: dict[str, dict[str, dict[str, dict[str, list[MachineRow]]]]]
    flags: bool = False  # a guard tests a flag of the frame (v["@flags"])


def phase_machine(proto: Protocol, plan: CodecPlan) -> PhaseMachine | None:
    """The machine that says a context value that is part of the code, or None.

    A context part no frame sets or clears is the caller's (MySQL's phase): the
    receiver's state, when an enum named after the value (``Phase`` for ``ctx.phase``)
    names states of exactly one client/server machine.  Any other context part (one that
    frames set, or that no machine says) is kept as the codecs' ``track_context`` keeps
    context values: its default until a frame sets it.  One part at most is a machine's
    state (the first that can be)."""
    contexts = {c.name: c for c in proto.context}
    enums = {e.name: e for e in proto.enums}
    for kind, name, _ in plan.key_parts:
        value = contexts.get(name) if kind == "ctx" else None
        if value is None or value.set_by or value.cleared_by:
            continue
        enum = enums.get(pascal(name))
        machines = [m for m in proto.machines
                    if {"client", "server"} <= set(m.roles) and enum is not None
                    and any(state.upper() in enum.values for state in m.states)]  # fmt: skip
        if enum is not None and len(machines) == 1:
            return machine_plan(proto, name, enum, machines[0])
    return None


def machine_plan(proto: Protocol, name: str, enum: Enum, machine: Machine) -> PhaseMachine:
    """The tables of the machine whose receiver's state says ``ctx.<name>``."""
    frames = {f.name: f for f in proto.frames}
    phases = {role: {state.upper(): enum.values.get(state.upper()) for state in machine.states}
              for role in ("client", "server")}  # fmt: skip
    table: dict[str, dict[str, dict[str, dict[str, list[MachineRow]]]]] = {}
    frame_flags = {f.name: f.flags for f in proto.frames}
    flags = False  # a guard tests a flag: decode_frame keeps the frame's flags in v["@flags"]
    for row in machine.transitions:
        if row.role not in ("client", "server"):
            continue
        by_state = table.setdefault(row.role, {}).setdefault(row.direction, {})
        by_frame = by_state.setdefault(row.source.upper(), {})
        guard = None
        if row.conditions:
            tests = []
            for condition in row.conditions:
                if condition.is_flag:  # the frame's flag bit (set: a field it guards is there)
                    flag_mask = {**proto.common_flags, **frame_flags.get(row.frame, {})}.get(
                        condition.name, 0
                    )
                    test = f'bit32.band(v["@flags"] or 0, {lit(flag_mask)}) ~= 0'
                    tests.append(test if condition.values[0] else f"not ({test})")
                    flags = True
                    continue
                value = f"v.{condition.name}"
                test = " or ".join(f"num({value}) == {lit(n) if abs(n) < 1 << 53 else n}"
                                   for n in condition.values)  # fmt: skip
                test = f"{value} ~= nil and ({test})"
                tests.append(f"not ({test})" if condition.negated else f"({test})")
            guard = " and ".join(tests)
        target = row.target.upper() if row.outcome == "to" and row.target is not None else None
        assert row.frame == "*" or row.frame in frames, row.frame  # the validator says so
        by_frame.setdefault(row.frame, []).append(MachineRow(guard, target))
    for directions in table.values():
        for states in directions.values():
            for frame_rows in states.values():
                for rows in frame_rows.values():
                    rows.sort(key=lambda r: r.guard is None)  # guarded rows first
    return PhaseMachine(name, enum.name, machine.name,
                        {role: machine.initial[role].upper() for role in ("client", "server")},
                        phases, table, flags)  # fmt: skip


@dataclass(frozen=True)
class Conversation:
    """What a dissector keeps per TCP stream beyond each direction's context: the
    context values both directions keep, the phase machine, the startup state."""

    shared: tuple[str, ...]
    machine: PhaseMachine | None
    startup: bool  # the client's first frame has the startup header
    answer: StartupAnswer | None

    @property
    def needed(self) -> bool:
        return bool(self.shared) or self.machine is not None or self.startup

    @classmethod
    def of(cls, proto: Protocol, plan: CodecPlan) -> Conversation:
        answer = STARTUP_ANSWERS.get((proto.protocol, proto.version))
        if plan.startup is None:
            answer = None
        return cls(tuple(shared_context(proto)), phase_machine(proto, plan),
                   plan.startup is not None, answer)  # fmt: skip


# --- the field table ---------------------------------------------------------------------


def free_name(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


@dataclass(frozen=True)
class Names:
    """The names of fields that an IDL's names could clash with.

    Header values are ``<proto>.<name>``, a frame or struct ``<proto>.<record>`` (its
    fields under it), beside the dissector's own ``length`` (the transport's prefix),
    ``startup_answer``, ``unknown_frame``, ``flags``, ``startup.`` and ``ctx.``: where an
    IDL's name would be one of these, the dissector's own field yields (``length_``), and a
    frame or struct whose name would be a header value's or the dissector's (a frame
    ``Length``, a frame ``Kind`` beside the header's ``kind``) gets a trailing ``_``
    (``<proto>.length_``).  No committed dissector has such a clash."""

    length: str = "length"
    startup_answer: str = "startup_answer"
    unknown_frame: str = "unknown_frame"
    records: tuple[tuple[str, str], ...] = ()  # (frame or struct, its field name)

    def record(self, name: str) -> str:
        return dict(self.records).get(name, lower_snake(name))

    @classmethod
    def of(cls, plan: CodecPlan, conversation: Conversation) -> Names:
        header = set(header_ints(plan.header_steps))
        length = free_name("length", header)
        answer = free_name("startup_answer", header)
        unknown = free_name("unknown_frame", header)
        taken = set(header)
        for used, name in ((plan.length_prefix is not None, length),
                           (conversation.answer is not None, answer),
                           (plan.unknown != "error", unknown), (plan.has_flags, "flags"),
                           (plan.startup is not None, "startup"),
                           (conversation.machine is not None, "ctx")):  # fmt: skip
            if used:
                taken.add(name)
        records = []
        for record in [*plan.structs, *plan.frames]:
            key = free_name(lower_snake(record.name), taken)
            taken.add(key)
            records.append((record.name, key))
        return cls(length, answer, unknown, tuple(records))


@dataclass(frozen=True)
class LuaField:
    """One ``ProtoField``: ``key`` is its name after ``<proto>.``."""

    key: str
    ctor: str  # ProtoField constructor: uint32, int64, bool, string, bytes, none
    label: str
    doc: str = ""
    values: str | None = None  # enum name: its value string
    mask: int | None = None
    bits: int = 0  # bool: width of the word the mask applies to

    def lua(self, proto: str) -> str:
        abbrev = lua_str(f"{proto}.{self.key}")
        name = lua_str(self.label)
        doc = lua_str(self.doc) if self.doc else "nil"
        if self.ctor == "none":
            return f"ProtoField.none({abbrev}, {name}, {doc})"
        if self.ctor == "string":
            return f"ProtoField.string({abbrev}, {name}, base.UNICODE, {doc})"
        if self.ctor == "bytes":
            return f"ProtoField.bytes({abbrev}, {name}, base.NONE, {doc})"
        mask = lit(self.mask) if self.mask is not None else "nil"
        if self.ctor == "bool":
            return f"ProtoField.bool({abbrev}, {name}, {self.bits}, nil, {mask}, {doc})"
        values = f"vs.{self.values}" if self.values else "nil"
        shown = "base.HEX" if self.key == "flags" else "base.DEC"
        return f"ProtoField.{self.ctor}({abbrev}, {name}, {shown}, {values}, {mask}, {doc})"


class FieldTable:
    """The fields of one dissector, collected by walking the plan as the template does."""

    def __init__(self, proto: Protocol, plan: CodecPlan, conversation: Conversation,
                 names: Names) -> None:  # fmt: skip
        self.proto = proto
        self.plan = plan
        self.conversation = conversation
        self.names = names
        self.fields: dict[str, LuaField] = {}
        self.docs = _docs(proto)
        self.lines = {f.name: f.line for f in proto.frames}
        self._walk()

    def add(self, field: LuaField, owner: str) -> None:
        known = self.fields.get(field.key)
        if known is not None and known != field:
            raise IdlError(self.proto.source, self.lines.get(owner, 1), owner,
                           f"the Wireshark field {proto_name(self.proto.protocol, self.proto.version)}."
                           f"{field.key} would name two different values; rename one")  # fmt: skip
        self.fields[field.key] = field

    def doc(self, owner: str, value: IntPlan | FloatPlan) -> str:
        return one_line(value.doc or self.docs.get((owner, value.name), ""))

    def float_field(self, key: str, value: FloatPlan, owner: str) -> None:
        doc = self.doc(owner, value)
        self.add(LuaField(key, _FLOAT_CTOR[value.bits], label(value.name), doc), owner)

    def bool_field(self, prefix: str, bits: Bits, word: IntType, owner: str) -> None:
        """A bool bit of a word: masked from the word up to 32 bits, else given its value."""
        assert bits.value is not None
        small = word.bits <= 32
        self.add(LuaField(prefix + bits.value.name, "bool", label(bits.value.name),
                          self.doc(owner, bits.value), mask=bits.mask << bits.shift if small else None,
                          bits=word.bits if small else 0), owner)  # fmt: skip

    def int_field(self, key: str, value: IntPlan, itype: IntType, owner: str,
                  mask: int | None = None) -> None:  # fmt: skip
        doc = self.doc(owner, value)
        names = value.names
        if owner == "header" and value.name == self.plan.discriminator[0]:
            names = "frame_type"  # the frames' names (vs.frame_type)
        startup = self.plan.startup
        if owner == "startup" and startup is not None and value.name == startup.discriminator[0]:
            names = "startup_frame"  # the startup frames' names (vs.startup_frame)
        self.add(LuaField(key, ctor(itype), label(value.name), doc, names, mask), owner)

    def _walk(self) -> None:
        plan = self.plan
        if plan.length_prefix is not None:
            self.add(LuaField(self.names.length, ctor(plan.length_prefix), "Frame length",
                              "Length of the frame after the transport's length prefix"), "")  # fmt: skip
        self.steps("", plan.header_steps, "header")
        if plan.startup is not None:
            self.steps("startup.", plan.startup.header_steps, "startup")
        conversation = self.conversation
        if conversation.machine is not None:
            phase = conversation.machine
            doc = next(c.doc for c in plan.context if c.name == phase.ctx)
            self.add(LuaField(f"ctx.{phase.ctx}", "uint32", label(phase.ctx),
                              one_line(doc) + f" (the {phase.machine} machine's state of the receiver)",
                              phase.enum), "")  # fmt: skip
        if conversation.answer is not None:
            self.add(LuaField(self.names.startup_answer, "uint8", "Startup answer",
                              "The server's one-byte answer to "
                              + " or ".join(conversation.answer.requests) + " (no message)",
                              "startup_answer"), "")  # fmt: skip
        for name, mask in plan.common_flags.items():
            self.add(self.flag_field(f"flags.{name}", name, mask), "")
        for struct in plan.structs:
            self.steps(self.names.record(struct.name) + ".", struct.steps, struct.name)
        for frame, model in zip(plan.frames, self.proto.frames):
            key = self.names.record(frame.name)
            self.add(LuaField(key, "none", frame.name, one_line(frame.doc)), frame.name)
            for name, mask in model.flags.items():
                if name not in plan.common_flags:
                    self.add(self.flag_field(f"{key}.flags.{name}", name, mask), frame.name)
            for value, mask, _ in frame.flag_values:
                self.add(LuaField(f"{key}.flags.{value.name}", ctor(self.flags_type()),
                                  label(value.name), value.doc or f"flags {mask:#x}", value.names,
                                  self.flag_field(key, value.name, mask).mask), frame.name)  # fmt: skip
            self.steps(key + ".", frame.steps, frame.name)
        if plan.unknown != "error":
            unknown = self.names.unknown_frame
            self.add(LuaField(unknown, "none", "Unknown frame",
                              "A frame of a type this version does not define"), "")  # fmt: skip
            if plan.single_code:
                code_bits = 64 if plan.discriminator_big[0] else 32
                self.add(LuaField(f"{unknown}.code", f"uint{code_bits}", "Code",
                                  "The unknown type code"), "")  # fmt: skip
            else:  # shown as the codecs say it: (part, part, ...)
                self.add(LuaField(f"{unknown}.code", "string", "Code",
                                  "The unknown type code: " + ", ".join(plan.discriminator)),
                         "")  # fmt: skip
            if plan.unknown_length is not None:
                self.add(LuaField(f"{unknown}.length", ctor(plan.unknown_length), "Length",
                                  "Length of the skipped body"), "")  # fmt: skip
            self.add(LuaField(f"{unknown}.body", "bytes", "Body", "The frame after its header"),
                     "")  # fmt: skip

    def flags_unit(self) -> tuple[int, IntType]:
        """(shift, word type) of the header's flag bits."""
        return flags_unit(self.plan)

    def flags_shift(self) -> int:
        return self.flags_unit()[0]

    def flags_word_bits(self) -> int:
        return self.flags_unit()[1].bits

    def flags_type(self) -> IntType:
        return self.flags_unit()[1]

    def flag_field(self, key: str, name: str, mask: int) -> LuaField:
        """A flag's bool field: masked from the header's word up to 32 bits; in a wider word
        without a mask (the dissector gives the flag's value)."""
        if self.flags_word_bits() > 32:
            return LuaField(key, "bool", label(name), f"flag {mask:#x}")
        return LuaField(key, "bool", label(name), f"flag {mask:#x}",
                        mask=mask << self.flags_shift(), bits=self.flags_word_bits())  # fmt: skip

    def steps(self, prefix: str, steps: list[ItemStep], owner: str) -> None:
        for item in steps:
            step = item.step
            if isinstance(step, FixedRun):
                for unit in step.units:
                    if unit.kind == "float":
                        assert unit.float is not None
                        self.float_field(prefix + unit.float.name, unit.float, owner)
                        continue
                    assert unit.type is not None
                    if unit.kind == "int":
                        assert unit.value is not None
                        self.int_field(prefix + unit.value.name, unit.value, unit.type, owner)
                        continue
                    for bits in unit.bits:
                        if bits.kind == "value" and bits.value is not None and bits.value.boolean:
                            self.bool_field(prefix, bits, unit.type, owner)
                        elif bits.kind == "value":
                            assert bits.value is not None
                            mask = bits.mask << bits.shift if unit.type.bits <= 32 else None
                            self.int_field(prefix + bits.value.name, bits.value, unit.type, owner,
                                           mask)  # fmt: skip
                        elif bits.kind == "flags":
                            mask = bits.mask << bits.shift if unit.type.bits <= 32 else None
                            self.add(LuaField("flags", ctor(unit.type), "Flags", "The flag bits",
                                              mask=mask), owner)  # fmt: skip
            elif isinstance(step, IntStep):
                self.int_field(prefix + step.value.name, step.value, step.value.type, owner)
            elif isinstance(step, FloatStep):
                self.float_field(prefix + step.value.name, step.value, owner)
            elif isinstance(step, BytesStep):
                self.bytes_fields(prefix + step.name, step, owner, step.name)
            elif isinstance(step, ArrayStep):
                self.array_fields(prefix + step.name, step, owner)
            else:
                doc = one_line(self.docs.get((owner, step.name), ""))
                self.add(LuaField(prefix + step.name, "none", label(step.name), doc), owner)

    def bytes_fields(self, key: str, step: BytesStep, owner: str, name: str) -> None:
        doc = one_line(self.docs.get((owner, name), ""))
        if step.length is not None:
            kind = ctor(step.length)
            if step.nullable and step.length.flavour == "lenenc":
                kind = "int64"  # NULL (0xFB) shows as -1, as a signed length's -1 does
            self.add(LuaField(f"{key}.length", kind, f"{label(name)} length",
                              f"Length of {name}" + (" (-1: null)" if step.nullable else "")),
                     owner)  # fmt: skip
        if step.xor_key is not None:  # transform: the bytes on the wire, where they are
            self.add(LuaField(f"{key}.masked", "bytes", f"{label(name)} (masked)",
                              f"{name} as on the wire: XOR {step.xor_key.name}, repeated"),
                     owner)  # fmt: skip
        self.add(LuaField(key, "string" if step.string else "bytes", label(name), doc), owner)

    def array_fields(self, key: str, step: ArrayStep, owner: str) -> None:
        name = step.name
        if step.count_prefix is not None:
            self.add(LuaField(f"{key}.count", ctor(step.count_prefix), f"{label(name)} count",
                              f"Number of {name}"), owner)  # fmt: skip
        if step.byte_length_prefix is not None:
            self.add(LuaField(f"{key}.byte_length", ctor(step.byte_length_prefix),
                              f"{label(name)} byte length", f"Bytes of {name}"), owner)  # fmt: skip
        element = step.element
        doc = one_line(self.docs.get((owner, name), ""))
        if element.kind == "int":
            assert element.value is not None
            self.add(LuaField(key, ctor(element.value.type), label(name), doc,
                              element.value.names), owner)  # fmt: skip
        elif element.kind == "bytes":
            assert element.bytes is not None
            self.bytes_fields(key, element.bytes, owner, name)
        else:
            self.add(LuaField(key, "none", label(name), doc), owner)


def flags_unit(plan: CodecPlan) -> tuple[int, IntType]:
    """(shift, word type) of the header's flag bits."""
    for item in plan.header_steps:
        if isinstance(item.step, FixedRun):
            for unit in item.step.units:
                for bits in unit.bits:
                    if bits.kind == "flags" and unit.type is not None:
                        if bits.width > 32:  # h.flags is a Lua number the bit32 library masks
                            raise NotImplementedError(
                                "Wireshark target: header flags wider than 32 bits"
                            )
                        return bits.shift, unit.type
    raise NotImplementedError("Wireshark target: flags outside a header word")


def _docs(proto: Protocol) -> dict[tuple[str, str], str]:
    """(record, field) -> the IDL's doc of fields the plan keeps no doc for."""
    docs: dict[tuple[str, str], str] = {}
    records = [(s.name, s.items) for s in proto.structs] + [(f.name, f.items) for f in proto.frames]
    for owner, items in records:
        for item in items:
            node = item.node
            if isinstance(node, (BytesField, ArrayField, RefField)):
                docs[(owner, node.name)] = node.doc
            elif isinstance(node, Word):
                for bit in node.bits:
                    if bit.value is not None:
                        docs[(owner, bit.value.name)] = bit.value.doc
            else:
                docs[(owner, node.name)] = node.doc
    return docs


# --- rendering ---------------------------------------------------------------------------


def frame_names(proto: Protocol, startup: bool = False) -> list[tuple[int, str]]:
    """The discriminator's value string: each code (the first part of a multi-part code)
    with the frames it names (also_codes included), joined by "/" when several do; none
    when the first part is a context value (no header field shows it).  ``startup``: the
    startup frames' codes."""
    names: dict[int, list[str]] = {}
    if proto.discriminator[0].startswith("ctx."):
        return []
    for frame in proto.frames:
        if frame.startup != startup:
            continue
        for code in [frame.code, *frame.also_codes]:
            found = names.setdefault(code[0], [])
            if frame.name not in found:
                found.append(frame.name)
    return [(code, "/".join(found)) for code, found in sorted(names.items())]


@jinja2.pass_context
def lua_cond(context: jinja2.runtime.Context, cond: CondPlan, owner: str) -> str:
    """A condition of the record ``owner`` (a frame, a struct or "header") in Lua."""
    plan: CodecPlan = context["m"]
    scope = "struct" if owner in {s.name for s in plan.structs} else "frame"
    return LuaCond(plan, scope).spell(cond)


@jinja2.pass_context
def record_key(context: jinja2.runtime.Context, name: str) -> str:
    """The field name of a frame or struct (``Names``)."""
    names: Names = context["names"]
    return names.record(name)


@jinja2.pass_context
def lua_size(context: jinja2.runtime.Context, expr: ExprPlan) -> str:
    """A size or count expression in Lua (its tree spelled as a condition's values)."""
    return lua_expr(expr, context["m"])


def utf8_lit(code_point: int) -> str:
    """A code point's UTF-8 bytes as a Lua string literal."""
    return (
        '"' + "".join(f"\\{b:03d}" for b in chr(code_point).encode("utf-8", "surrogatepass")) + '"'
    )


def byte_lit(value: int) -> str:
    return f'"\\{value:03d}"'


_ENV = environment(
    Path(__file__).parent / "templates",
    filters=dict(lit=lit, big_lit=big_lit, value_lit=value_lit, lua=lua_str, ctor=ctor,
                 expr=lua_size, snake=lower_snake, rkey=record_key, one_line=one_line, label=label,
                 cond=lua_cond, utf8_lit=utf8_lit, byte_lit=byte_lit),
    tests=dict(big=is_big, exact=is_exact),
)  # fmt: skip


def tidy(source: str) -> str:
    """Generated Lua as committed: no trailing spaces, no runs of blank lines."""
    out: list[str] = []
    for line in source.splitlines():
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def flags_add(plan: CodecPlan) -> str:
    """The TreeItem method that adds a field masked from the header's flags word:
    ``add_le`` when the word is little-endian."""
    if not plan.has_flags:
        return "add"
    itype = flags_unit(plan)[1]
    return "add_le" if itype.little and (itype.size or 0) > 1 else "add"


_HF_KEY: Final = re.compile(r'hf\["([^"]+)"\]')


def header_ints(steps: list[ItemStep]) -> dict[str, IntPlan]:
    """The integer values of a header (or of a startup header), by name."""
    found: dict[str, IntPlan] = {}
    for item in steps:
        step = item.step
        if isinstance(step, FixedRun):
            for unit in step.units:
                if unit.value is not None:
                    found[unit.value.name] = unit.value
                for bits in unit.bits:
                    if bits.value is not None:
                        found[bits.value.name] = bits.value
        elif isinstance(step, IntStep):
            found[step.value.name] = step.value
    return found


_EXACT: Final = 1 << 53  # Lua numbers (doubles) are exact integers below this


@dataclass(frozen=True)
class CodeKeys:
    """How the decoder tables are keyed by a frame's code, and the code shown.

    A code is a Lua number where that is exact and unique: one part below 2**53, or two
    parts as ``first * 65536 + second`` when the first is at most 32-bit and the second
    takes at most 65,536 values (RabbitMQ's key and version, MySQL's phase and first
    byte).  Any other code (three parts and more, a wide second part, a part of 2**53 or
    more) is the text of its parts joined by ":" (``code_part``: decimal, 64-bit values
    exactly)."""

    parts: tuple[str, ...]  # each part's value in Lua (``v.<field>`` or ``s.ctx.<name>``)
    numbers: tuple[str, ...]  # each part as a Lua number (64-bit fields through ``num``)
    strings: bool

    @classmethod
    def of(cls, plan: CodecPlan, startup: bool = False) -> CodeKeys:
        kinds: list[tuple[str, str, int]]
        if startup:
            assert plan.startup is not None
            ints = header_ints(plan.startup.header_steps)
            kinds = [("field", name, 0) for name in plan.startup.discriminator]
            codes = [e.code for e in plan.startup.decoders]
        else:
            ints = header_ints(plan.header_steps)
            kinds = plan.key_parts
            codes = [e.code for e in plan.decoders] + [code for code, _, _ in plan.selects]
            codes += [prefix for prefix, _ in plan.wildcards]
        contexts = {c.name: c for c in plan.context}
        parts: list[str] = []
        numbers: list[str] = []
        wide: list[bool] = []  # a part that is not a Lua number, or not exactly
        spans: list[int | None] = []  # how many values a header part takes
        for kind, name, _ in kinds:
            if kind == "ctx":
                parts.append(f"s.ctx.{name}")
                numbers.append(f"s.ctx.{name}")
                wide.append(contexts[name].big)
                spans.append(None)
            else:
                value = ints[name]
                parts.append(f"v.{name}")
                numbers.append(f"num(v.{name})" if value.big else f"v.{name}")
                wide.append(value.big)
                spans.append(value.hi - value.lo + 1)
        if len(parts) == 1:
            strings = any(abs(code[0]) >= _EXACT for code in codes)
            if kinds[0][0] == "field":
                numbers[0] = f"num(v.{kinds[0][1]})"
        else:
            span = spans[1]
            strings = len(parts) > 2 or wide[0] or wide[1] or span is None or span > 65536
        return cls(tuple(parts), tuple(numbers), strings)

    @property
    def single(self) -> bool:
        return len(self.parts) == 1

    def key(self, code: tuple[int, ...]) -> str:
        """A code of the IDL as a key of the decoder tables."""
        if self.strings:
            return lua_str(":".join(str(part) for part in code))
        if len(code) == 1:
            return lit(code[0])
        return lit(code[0] * 65536 + code[1])

    def prefix_key(self, prefix: tuple[int, ...]) -> str:
        """The leading parts of a code ending in "*" as a key of ``DEFAULTS``."""
        if self.strings:
            return lua_str(":".join(str(part) for part in prefix))
        return lit(prefix[0])

    @property
    def expr(self) -> str:
        """The code of the frame being decoded (from ``v``, ``s.ctx``) as a table key."""
        if self.strings:
            return ' .. ":" .. '.join(f"code_part({p})" for p in self.parts)
        if self.single:
            return self.numbers[0]
        return f"{self.numbers[0]} * 65536 + {self.numbers[1]}"

    @property
    def prefix_expr(self) -> str:
        """The frame's leading parts (all but the last) as a key of ``DEFAULTS``."""
        if self.strings:
            return ' .. ":" .. '.join(f"code_part({p})" for p in self.parts[:-1])
        return self.numbers[0]

    @property
    def shown(self) -> str:
        """The code as text, as the codecs' messages say it: ``5``, ``(1, 3)``."""
        if self.single:
            return "code"
        return '"(" .. ' + ' .. ", " .. '.join(f"code_part({p})" for p in self.parts) + ' .. ")"'

    @property
    def message(self) -> str:
        """The code in the message of an unknown or ambiguous code: the table key when it
        is a number (as these dissectors have always said it), else as shown."""
        return self.shown if self.strings else "code"


def render_dissector(proto: Protocol) -> str:
    """The Lua dissector of one protocol version."""
    plan = plan_codec(proto)
    conversation = Conversation.of(proto, plan)
    names = Names.of(plan, conversation)
    table = FieldTable(proto, plan, conversation, names)
    name = proto_name(proto.protocol, proto.version)
    text = _ENV.get_template("dissector.lua.j2").render(
        m=plan,
        proto=name,
        fields=sorted(table.fields.values(), key=lambda f: f.key),
        column=capture_name(proto.protocol, proto.version),
        port=DEFAULT_PORTS.get((proto.protocol, proto.version), 0),
        frame_flags={f.name: {k: v for k, v in f.flags.items() if k not in plan.common_flags}
                     for f in proto.frames},  # fmt: skip
        frame_names=frame_names(proto),
        startup_names=frame_names(proto, startup=True),
        conv=conversation,
        keys=CodeKeys.of(plan),
        startup_keys=CodeKeys.of(plan, startup=True) if plan.startup is not None else None,
        union_names={u.name for u in plan.unions},
        uses=Uses.of(plan),
        big_enums=big_closed_enums(plan),
        names=names,
        flags_add=flags_add(plan),
        flags_big=plan.has_flags and flags_unit(plan)[1].bits > 32,
    )
    missing = sorted(set(_HF_KEY.findall(text)) - set(table.fields))
    if missing:  # the template names a field the table does not define: a generator bug
        raise AssertionError(f"{name}: fields used but not defined: {missing}")
    return tidy(text)


def render_wireshark(protos: list[Protocol]) -> dict[str, str]:
    """The files of ``generated/wireshark/``: relative path -> text."""
    return {f"{p.protocol}_{p.version}.lua": render_dissector(p) for p in protos}
