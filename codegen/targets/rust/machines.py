"""The Rust target's state machines: the machines plan (``plan/machines.py``, the one Python's
``machines.py`` and TypeScript's ``machines.ts`` are rendered from) spelled as the
``machines`` module of a protocol version's crate.

Per machine: a state enum (its values Python's), a role enum, the send and receive tables of
every role as ``static`` data (``wirestream_runtime::machine::Key`` rows keyed by state and
frame class name, guards as generated functions over ``Frame``), and a ``Copy`` machine that
applies them through ``wirestream_runtime::machine::lookup``. Per machine scope and role whose
machines hand frames on: a handler trait (Python's ``*Handlers`` protocol) and, per machine, a
``dispatch_<role>`` that applies a received frame and calls the trait's method for it.
Everything that decides *what* happens comes from the plan; this module only spells it.
"""

from __future__ import annotations

from wirestream.codegen.plan.codec import AttrPlan, CodecPlan, RecordPlan
from wirestream.codegen.plan.machines import (
    MachinesPlan,
    PlannedCondition,
    PlannedGuard,
    PlannedMachine,
    PlannedOutcome,
    PlannedValue,
    pascal,
)
from wirestream.codegen.targets.rust.codec import (
    Code,
    Spell,
    doc_lines,
    ident,
    lit,
    refuse,
)

__all__ = ["render_machines", "rust_str", "variant"]


def rust_str(text: str) -> str:
    """A Rust string literal."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def variant(value: str) -> str:
    """A state's or role's IDL name as an enum variant: ``setup_sent`` -> ``SetupSent``."""
    return pascal(value)


class MachineSpell:
    def __init__(self, codec: CodecPlan, plan: MachinesPlan) -> None:
        self.codec = codec
        self.plan = plan
        self.sp = Spell(codec)
        self.frames: dict[str, RecordPlan] = {f.name: f for f in codec.frames}
        self.open_enums = {e.name for e in codec.enums if e.open}

    # --- types ---

    def frame_ref(self, name: str) -> str:
        """The frame's struct as a handler takes it (``Setup<'_>``, ``RequestN``)."""
        return self.sp.rec_type(self.frames[name], "'_")

    def attr(self, frame: str, name: str) -> AttrPlan:
        for a in self.frames[frame].attrs:
            if a.name == name:
                return a
        raise refuse(self.codec, f"a machine guard on {name!r}, which is no attribute", frame)

    # --- guards ---

    def value(self, a: AttrPlan, v: PlannedValue) -> str:
        """``v`` as the attribute holds it (a closed enum's member, an open enum's constant,
        a bool, a number)."""
        assert a.value is not None
        if a.value.boolean:
            return "true" if v.number else "false"
        if a.value.enum is not None:
            enum = next(e for e in self.codec.enums if e.name == a.value.enum)
            member = next((name for name, value in enum.members if value == v.number), None)
            if member is None:
                raise refuse(self.codec, f"a guard value {v.number} outside enum {enum.name}")
            return f"{enum.name}::{member}"
        if v.enum in self.open_enums and v.member is not None:
            return f"{v.enum.lower()}::{v.member}"
        return lit(v.number)

    def condition(self, frame: str, c: PlannedCondition) -> str:
        a = self.attr(frame, c.name)
        field = f"f.{ident(c.name)}"
        optional = a.optional or a.nullable
        if c.test == "present":
            return f"{field}.{'is_none' if c.negated else 'is_some'}()"
        if c.test == "flag":
            if optional or a.kind not in ("bool", "int"):
                raise refuse(self.codec, f"a flag guard on {c.name!r}", frame)
            return f"!{field}" if c.negated else field
        if a.kind != "int" or a.value is None:
            raise refuse(self.codec, f"a value guard on {c.name!r} ({a.kind})", frame)
        wants = [self.value(a, v) for v in c.values]
        if len(wants) == 1:
            want = f"Some({wants[0]})" if optional else wants[0]
            return f"{field} {'!=' if c.negated else '=='} {want}"
        # several values: one pattern (Python's ``in``; an absent value is in none of them)
        pattern = " | ".join(wants)
        test = f"matches!({field}, {f'Some({pattern})' if optional else pattern})"
        return f"!{test}" if c.negated else test

    def guard(self, c: Code, g: PlannedGuard) -> None:
        text = " && ".join(self.condition(g.frame, cond) for cond in g.conditions)
        c(f"/// {g.frame} [{g.text}]",
          f"fn guard_{g.index}(frame: &Frame<'_>) -> bool {{",
          f"match frame {{ Frame::{g.frame}(f) => {text}, _ => false }}", "}")  # fmt: skip

    # --- one machine ---

    def outcome(self, o: PlannedOutcome, states: dict[str, str], state_enum: str) -> str:
        if o.kind == "to":
            assert o.target is not None
            return f"Outcome::To({state_enum}::{states[o.target]})"
        if o.kind == "ignore":
            return "Outcome::Ignore"
        return (f"Outcome::Illegal(Illegal {{ message: {rust_str(o.message)}, "
                f"spec: {rust_str(o.spec)} }})")  # fmt: skip

    def tables(self, c: Code, m: PlannedMachine, states: dict[str, str]) -> None:
        upper = m.name.upper()
        for direction, tables in (("SEND", m.send), ("RECEIVE", m.receive)):
            for role in m.roles:
                c(f"/// The {direction.lower()} table of the `{role}` of the `{m.name}` machine.",
                  f"static {upper}_{role.upper()}_{direction}: Table<{m.state_enum}> = &[")  # fmt: skip
                for key in tables[role]:
                    frame = f'Some("{key.frame}")' if key.frame else "None"
                    c(
                        f"Key {{ state: {m.state_enum}::{states[key.state]}, frame: {frame}, rows: &["
                    )
                    for row in key.rows:
                        guard = f"Some(guard_{row.guard.index})" if row.guard else "None"
                        out = self.outcome(row.outcome, states, m.state_enum)
                        c(f"Row {{ guard: {guard}, outcome: {out} }},")
                    c("] },")
                c("];")

    def machine(self, c: Code, m: PlannedMachine) -> None:
        states = {s.member: variant(s.value) for s in m.states}
        state, role_enum, cls = m.state_enum, f"{pascal(m.name)}Role", m.class_name
        # the states, with Python's values
        c(f"/// States of the `{m.name}` machine.",
          "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]", f"pub enum {state} {{")  # fmt: skip
        for s in m.states:
            c(*doc_lines(s.doc or s.value), f"{states[s.member]},")
        c("}", f"impl {state} {{", "/// Every state, in the IDL's order.",
          f"pub const ALL: [Self; {len(m.states)}] = [{', '.join(f'Self::{states[s.member]}' for s in m.states)}];",
          "/// The state's IDL name (Python's enum value).",
          "pub fn value(self) -> &'static str { match self {")  # fmt: skip
        for s in m.states:
            c(f'Self::{states[s.member]} => "{s.value}",')
        c("} }", "/// The state of an IDL name.",
          "pub fn from_value(value: &str) -> Option<Self> {",
          "Self::ALL.into_iter().find(|s| s.value() == value) } }")  # fmt: skip
        # the roles
        c(f"/// The roles of the `{m.name}` machine.",
          "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]", f"pub enum {role_enum} {{")  # fmt: skip
        for role in m.roles:
            c(f"/// `{role}`", f"{variant(role)},")
        c("}", f"impl {role_enum} {{", "/// Every role, in the IDL's order.",
          f"pub const ALL: [Self; {len(m.roles)}] = [{', '.join(f'Self::{variant(r)}' for r in m.roles)}];",
          "/// The role's IDL name.", "pub fn name(self) -> &'static str { match self {")  # fmt: skip
        for role in m.roles:
            c(f'Self::{variant(role)} => "{role}",')
        c("} }", "/// The role of an IDL name.",
          "pub fn from_name(name: &str) -> Option<Self> {",
          "Self::ALL.into_iter().find(|r| r.name() == name) } }")  # fmt: skip
        self.tables(c, m, states)
        # the machine
        c(*doc_lines(m.doc), "///")
        if m.spec:
            c(f"/// Spec: {m.spec}", "///")
        c(f"/// One instance per {m.scope}; roles: {', '.join(m.roles)}.",
          "#[derive(Debug, Clone, Copy, PartialEq, Eq)]",
          f"pub struct {cls} {{ role: {role_enum}, state: {state} }}",
          f"impl {cls} {{", "/// The machine's IDL name.",
          f'pub const NAME: &\'static str = "{m.name}";',
          "/// What one instance tracks (the IDL's `scope:`).",
          f'pub const SCOPE: &\'static str = "{m.scope}";',
          "/// The states the machine ends in.",
          f"pub const TERMINAL: &'static [{state}] = &[{', '.join(f'{state}::{states[t]}' for t in m.terminal)}];",
          "/// Where a role starts.",
          f"pub fn initial(role: {role_enum}) -> {state} {{ match role {{")  # fmt: skip
        for role, member in m.initial:
            c(f"{role_enum}::{variant(role)} => {state}::{states[member]},")
        c("} }", "/// A machine in the initial state of `role`.",
          f"pub fn new(role: {role_enum}) -> Self {{ Self {{ role, state: Self::initial(role) }} }}",
          "/// A machine of `role` in `state`.",
          f"pub fn with_state(role: {role_enum}, state: {state}) -> Self {{ Self {{ role, state }} }}",
          "/// The role it is driven as.",
          f"pub fn role(&self) -> {role_enum} {{ self.role }}",
          "/// The state it is in.", f"pub fn state(&self) -> {state} {{ self.state }}",
          "/// Whether it is in a terminal state.",
          "pub fn terminated(&self) -> bool { Self::TERMINAL.contains(&self.state) }",
          "/// Whether it holds nothing worth keeping: a terminal state, or, for machines",
          "/// without one (an id that is reused), back in its initial state.",
          "pub fn vacant(&self) -> bool { if Self::TERMINAL.is_empty() { "
          "self.state == Self::initial(self.role) } else { self.terminated() } }",
          f"fn tables(&self) -> (Table<{state}>, Table<{state}>) {{ match self.role {{")  # fmt: skip
        upper = m.name.upper()
        for role in m.roles:
            r = role.upper()
            c(f"{role_enum}::{variant(role)} => ({upper}_{r}_SEND, {upper}_{r}_RECEIVE),")
        c("} }",
          f"fn lookup(&self, table: Table<{state}>, frame: &Frame<'_>) -> Option<Outcome<{state}>> {{",
          "lookup(table, self.state, frame.class_name(), |guard| guard(frame)) }",
          "fn error(&self, kind: Refusal, frame: &Frame<'_>, illegal: Option<Illegal>) -> MachineError {",
          "MachineError::new(kind, Self::NAME, self.role.name(), self.state.value(), "
          "frame.class_name(), illegal) }",
          "/// Whether [`Self::send`] would take `frame`, without changing anything.",
          "pub fn allows_send(&self, frame: &Frame<'_>) -> bool {",
          "matches!(self.lookup(self.tables().0, frame), Some(Outcome::To(_) | Outcome::Ignore)) }",
          "/// Check that `frame` may be sent now and move on: the new state (a row that says",
          "/// ignore leaves it as it is), or `IllegalSend`.",
          f"pub fn send(&mut self, frame: &Frame<'_>) -> Result<{state}, MachineError> {{",
          "match self.lookup(self.tables().0, frame) {",
          "Some(Outcome::To(next)) => { self.state = next; Ok(next) }",
          "Some(Outcome::Ignore) => Ok(self.state),",
          "Some(Outcome::Illegal(illegal)) => Err(self.error(Refusal::IllegalSend, frame, Some(illegal))),",
          "None => Err(self.error(Refusal::IllegalSend, frame, None)), } }",
          "/// Apply a received frame: the new state, `Ignored` when the spec says to drop it,",
          "/// or `UnexpectedFrame` when the peer broke the machine's rules.",
          f"pub fn receive(&mut self, frame: &Frame<'_>) -> Result<Received<{state}>, MachineError> {{",
          "match self.lookup(self.tables().1, frame) {",
          "Some(Outcome::To(next)) => { self.state = next; Ok(Received::To(next)) }",
          "Some(Outcome::Ignore) => Ok(Received::Ignored),",
          "Some(Outcome::Illegal(illegal)) => Err(self.error(Refusal::UnexpectedFrame, frame, Some(illegal))),",
          "None => Err(self.error(Refusal::UnexpectedFrame, frame, None)), } }")  # fmt: skip
        for handlers in m.handlers:
            if handlers.interface is None:
                continue
            c(f"/// Apply a frame the `{handlers.role}` received, then hand it to its method of",
              f"/// `handlers`: `Ok(false)` when a row says to ignore it (no method runs),",
              "/// `Ok(true)` when the machine took it; `UnexpectedFrame` when it refuses it.",
              f"pub fn dispatch_{handlers.role}(&mut self, frame: &Frame<'_>, "
              f"handlers: &mut (impl {handlers.interface} + ?Sized)) -> Result<bool, MachineError> {{",
              "if self.receive(frame)? == Received::Ignored { return Ok(false); }",
              "match frame {")  # fmt: skip
            for h in handlers.frames:
                c(f"Frame::{h.frame}(f) => handlers.{'_'.join(h.method)}(f),")
            c("_ => {}", "}", "Ok(true) }")
        c("}")

    def render(self) -> str:
        p = self.plan
        c = Code()
        c(f"// Generated by wirestream codegen from {p.source} -- do not edit.",
          "// Change the `machines:` section of that file and run",
          "// `wirestream generate --target rust`.",
          f"//! State machines of {p.title}.",
          "//!",
          "//! States, transition tables and handler traits, as data.",
          "//!",
          f"//! Each `*Machine` is one `machines:` entry of `{p.source}`; its send and receive",
          "//! tables (one per role) map a state and a frame's class to rows of (guard, outcome)",
          "//! that `wirestream_runtime::machine::lookup` applies exactly as Python's",
          "//! `StateMachine` does (`send` fails with `IllegalSend`, `receive` with",
          "//! `UnexpectedFrame` or says `Ignored`). The `*Handlers` traits, one per machine",
          "//! scope and role, are Python's handler protocols: a machine's `dispatch_<role>`",
          "//! hands each frame it lets through to the trait's method for it.",
          "#![allow(clippy::match_like_matches_macro, clippy::nonminimal_bool)]",
          "use crate::*;",
          "use wirestream_runtime::machine::{lookup, Illegal, Key, Outcome, Row};",
          "pub use wirestream_runtime::machine::{MachineError, Received, Refusal};",
          "/// A row's condition on a frame.",
          "type Guard = fn(&Frame<'_>) -> bool;",
          "/// A machine's table for one role and direction.",
          "type Table<S> = &'static [Key<S, &'static str, Guard>];")  # fmt: skip
        for interface in p.interfaces:
            c(f"/// What an engine implements to take the frames the `{interface.role}` of the",
              f"/// `{interface.scope}` machines hand on: one method per frame, called once a",
              "/// machine let the frame through (Python's protocol of the same name).",
              f"pub trait {interface.name} {{")  # fmt: skip
            for h in interface.methods:
                c(*doc_lines(h.doc),
                  f"fn {'_'.join(h.method)}(&mut self, frame: &{self.frame_ref(h.frame)});")  # fmt: skip
            c("}")
        for g in p.guards:
            self.guard(c, g)
        for m in p.machines:
            self.machine(c, m)
        return c.text()


def render_machines(codec: CodecPlan, plan: MachinesPlan) -> str | None:
    """The ``src/machines.rs`` of a crate (unformatted), or None when the version declares no
    machines."""
    if not plan.machines:
        return None
    return MachineSpell(codec, plan).render()
