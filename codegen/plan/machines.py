"""Plan the state machines and the Markdown docs of one protocol version from the model.

The plan is plain data, in no target language: states, initial and terminal states, per
role and direction the table rows keyed by (state, frame or ANY) with their guards as
structured conditions and their outcomes as data, and per role the frames each handler
method receives.  Each language spells it in its own template (``machines.py.j2``,
``typescript/machines.ts.j2``), so a target is a template plus a few spelling helpers;
``protocol.md.j2`` draws the docs from the same plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wirestream.codegen.frontend.machines import _int_fields
from wirestream.codegen.frontend.model import (
    Condition,
    Frame,
    IntField,
    Item,
    Machine,
    Protocol,
    Transition,
)


def pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def one_line(text: str) -> str:
    return " ".join(text.split())


def first_sentence(text: str) -> str:
    text = one_line(text)
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


@dataclass(frozen=True)
class PlannedValue:
    """One value a condition allows (or, negated, refuses)."""

    number: int
    enum: str | None = None  # the enum the field is typed with, when it names the value
    member: str | None = None  # that enum's member for ``number``


@dataclass(frozen=True)
class PlannedCondition:
    """One test of a guard on the frame attribute ``name`` (the IDL's snake_case name).

    ``test`` is ``"flag"`` (a boolean flag attribute is set), ``"present"`` (the optional
    field a presence flag guards is there) or ``"values"`` (an integer attribute holds
    one of ``values``); ``negated`` turns each around (clear, absent, none of them).
    """

    name: str
    test: str
    negated: bool = False
    values: tuple[PlannedValue, ...] = ()
    bits: int = 0  # the integer type's value bits, for "values" (64: a wide integer)
    text: str = field(default="", compare=False)  # as written in the IDL
    # For "flag": the flag's bit in the frame's flags word (0: unknown), so a target that
    # stores the flags as one integer tests the bit instead of calling an accessor.
    mask: int = 0


@dataclass
class PlannedGuard:
    """A guard function: all ``conditions`` hold for a frame of class ``frame``."""

    index: int  # unique per protocol version, in order of first use: names the function
    frame: str
    conditions: list[PlannedCondition]
    text: str  # the IDL's conditions, for docs


@dataclass
class PlannedOutcome:
    kind: str  # "to" | "ignore" | "error"
    target: str | None = None  # for "to": the state member
    message: str = ""  # for "error": why the event is illegal
    spec: str = ""


@dataclass
class PlannedRow:
    guard: PlannedGuard | None  # None: the row always applies
    outcome: PlannedOutcome


@dataclass
class PlannedKey:
    state: str  # a state member ("CONNECTED")
    frame: str | None  # a frame class name, or None for ANY (a frame no other key matched)
    rows: list[PlannedRow]


@dataclass
class PlannedHandler:
    frame: str  # the frame class
    method: tuple[str, ...]  # the method name's words: ("on", "connection", "request", "n")
    doc: str


@dataclass
class PlannedHandlers:
    """What one role of a machine hands on to its engine: the frames and their methods,
    the handler interface they belong to and the binder that maps frames to an engine's
    bound methods (``bind`` words: Python ``bind_item_sender``, TypeScript
    ``bindItemSender``)."""

    role: str
    frames: list[PlannedHandler]
    interface: str | None  # None: the role hands nothing on (no interface; any engine binds)
    bind: tuple[str, ...]


@dataclass
class PlannedInterface:
    """The typed handler interface of one scope and role (a ``typing.Protocol`` in Python,
    an ``interface`` in TypeScript): every method the machines of that scope call for
    that role, each taking its exact frame class.  Machines of one scope share handlers
    (``on_<scope>_<frame>``), so they share the interface; an engine that implements it
    can be bound to any of them, and a type checker refuses one with a method missing or
    taking another frame."""

    name: str  # "StreamRequesterHandlers"
    scope: str
    role: str
    methods: list[PlannedHandler]


@dataclass
class PlannedState:
    member: str  # "CONNECTED"
    value: str  # the IDL name, "connected"
    doc: str


@dataclass
class PlannedMachine:
    name: str
    class_name: str
    state_enum: str
    doc: str
    spec: str
    scope: str
    roles: list[str]
    states: list[PlannedState]
    initial: list[tuple[str, str]]  # (role, state member)
    terminal: list[str]  # state members
    send: dict[str, list[PlannedKey]]  # role -> keys
    receive: dict[str, list[PlannedKey]]
    handlers: list[PlannedHandlers]
    diagrams: dict[str, list[str]]  # role -> Mermaid lines
    rules: list[tuple[str, str, str, str, str]]  # (role, state, event, outcome, spec) for docs


@dataclass
class PlannedDocs:
    frames: list[tuple[str, str, str, str]]  # (name, code, sender, summary)


@dataclass
class MachinesPlan:
    source: str
    title: str
    protocol: str
    version: str
    frame_imports: list[str]  # frame classes (in IDL order), then enums (sorted)
    guards: list[PlannedGuard]
    uses_any: bool
    machines: list[PlannedMachine] = field(default_factory=list)
    interfaces: list[PlannedInterface] = field(default_factory=list)
    docs: PlannedDocs = field(default_factory=lambda: PlannedDocs([]))


class MachinesTarget:
    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.frames = {frame.name: frame for frame in proto.frames}
        self.guards: dict[tuple[str, tuple[PlannedCondition, ...]], PlannedGuard] = {}
        self.used_frames: set[str] = set()
        self.used_enums: set[str] = set()

    def plan(self) -> MachinesPlan:
        machines = [self.machine(m) for m in self.proto.machines]
        frame_order = [f.name for f in self.proto.frames]
        imports = [name for name in frame_order if name in self.used_frames]
        imports += sorted(self.used_enums)
        return MachinesPlan(
            source=self.proto.source,
            title=self.proto.title,
            protocol=self.proto.protocol,
            version=self.proto.version,
            frame_imports=imports,
            guards=list(self.guards.values()),
            uses_any=any(t.frame == "*" for m in self.proto.machines for t in m.transitions),
            machines=machines,
            interfaces=self.interfaces(machines),
            docs=PlannedDocs([self.frame_doc(f) for f in self.proto.frames]),
        )

    def interfaces(self, machines: list[PlannedMachine]) -> list[PlannedInterface]:
        """One interface per (scope, role) whose machines hand frames on, its methods in
        IDL frame order, in order of first use."""
        found: dict[str, PlannedInterface] = {}
        for machine in machines:
            for handlers in machine.handlers:
                if handlers.interface is None:
                    continue
                interface = found.setdefault(
                    handlers.interface,
                    PlannedInterface(handlers.interface, machine.scope, handlers.role, []),
                )
                known = {h.frame for h in interface.methods}
                interface.methods += [h for h in handlers.frames if h.frame not in known]
        order = {frame.name: index for index, frame in enumerate(self.proto.frames)}
        for interface in found.values():
            interface.methods.sort(key=lambda h: order[h.frame])
        return list(found.values())

    def frame_doc(self, frame: Frame) -> tuple[str, str, str, str]:
        code = "/".join(f"0x{c:02X}" for c in frame.code)
        return frame.name, code, frame.sender, first_sentence(frame.doc).replace("|", "\\|")

    # --- one machine ----------------------------------------------------------------

    def machine(self, machine: Machine) -> PlannedMachine:
        member = {state: state.upper() for state in machine.states}
        send: dict[str, list[PlannedKey]] = {}
        receive: dict[str, list[PlannedKey]] = {}
        for role in machine.roles:
            send[role] = self.table(machine, role, "send", member)
            receive[role] = self.table(machine, role, "receive", member)
        return PlannedMachine(
            name=machine.name,
            class_name=f"{pascal(machine.name)}Machine",
            state_enum=f"{pascal(machine.name)}State",
            doc=machine.doc,
            spec=machine.spec,
            scope=machine.scope,
            roles=machine.roles,
            states=[PlannedState(member[s], s, one_line(doc)) for s, doc in machine.states.items()],
            initial=[(role, member[machine.initial[role]]) for role in machine.roles],
            terminal=[member[s] for s in machine.terminal],
            send=send,
            receive=receive,
            handlers=[self.handler(machine, role) for role in machine.roles],
            diagrams={role: self.diagram(machine, role) for role in machine.roles},
            rules=[self.rule(row) for row in machine.transitions if row.outcome != "to"],
        )

    def table(self, machine: Machine, role: str, direction: str,
              member: dict[str, str]) -> list[PlannedKey]:  # fmt: skip
        keys: dict[tuple[str, str | None], PlannedKey] = {}
        for row in machine.transitions:
            if row.role != role or row.direction != direction:
                continue
            frame = None if row.frame == "*" else row.frame
            if frame is not None:
                self.used_frames.add(frame)
            key = (row.source, frame)
            if key not in keys:
                keys[key] = PlannedKey(member[row.source], frame, [])
            guard = self.guard(self.frames[row.frame], row.conditions) if row.conditions else None
            keys[key].rows.append(PlannedRow(guard, self.outcome(row, member)))
        for planned in keys.values():
            # Unconditional rows last: rows exclude each other, so order only matters
            # for readability and to try the cheap specific guards first.
            planned.rows.sort(key=lambda r: r.guard is None)
        return list(keys.values())

    def outcome(self, row: Transition, member: dict[str, str]) -> PlannedOutcome:
        if row.outcome == "to":
            assert row.target is not None
            return PlannedOutcome("to", target=member[row.target])
        if row.outcome == "ignore":
            return PlannedOutcome("ignore")
        return PlannedOutcome("error", message=row.message, spec=row.spec)

    def guard(self, frame: Frame, conditions: list[Condition]) -> PlannedGuard:
        planned = tuple(self.condition(frame, c) for c in conditions)
        key = (frame.name, planned)
        if key not in self.guards:
            text = ", ".join(c.text for c in conditions)
            self.guards[key] = PlannedGuard(len(self.guards), frame.name, list(planned), text)
        return self.guards[key]

    def condition(self, frame: Frame, condition: Condition) -> PlannedCondition:
        if condition.is_flag:
            clear = not condition.values[0]
            present = self.presence_field(frame.items, condition.name)
            if present is not None:
                return PlannedCondition(present, "present", clear, text=condition.text)
            mask = {**self.proto.common_flags, **frame.flags}.get(condition.name, 0)
            return PlannedCondition(condition.name, "flag", clear, mask=mask,
                                    text=condition.text)  # fmt: skip
        int_field = _int_fields([*self.proto.header, *frame.items]).get(condition.name)
        values = tuple(self.value(int_field, v) for v in condition.values)
        bits = int_field.type.bits if int_field is not None else 0
        return PlannedCondition(condition.name, "values", condition.negated, values, bits,
                                condition.text)  # fmt: skip

    def value(self, int_field: IntField | None, value: int) -> PlannedValue:
        """An allowed value, with the enum member that names it when the field is typed
        with an enum (a guard then spells ``ErrorCode.X``, not the number)."""
        enum = int_field.enum if int_field is not None else None
        if enum is not None:
            for member, number in enum.values.items():
                if number == value:
                    self.used_enums.add(enum.name)
                    return PlannedValue(value, enum.name, member)
        return PlannedValue(value)

    def presence_field(self, items: list[Item], flag: str) -> str | None:
        """The field a presence flag guards (its attribute is absent when the flag is clear)."""
        for item in items:
            if item.condition == flag and hasattr(item.node, "name"):
                return str(getattr(item.node, "name"))
        return None

    # --- handler stubs and docs -------------------------------------------------------

    def handler(self, machine: Machine, role: str) -> PlannedHandlers:
        handled = set(machine.handled(role))
        frames = [
            PlannedHandler(f.name, machine.handler_words(f.name), first_sentence(f.doc))
            for f in self.proto.frames
            if f.name in handled
        ]
        bind = ("bind", *role.split("_"))
        if not frames:  # a binder all the same (an empty one): engines bind every role alike
            return PlannedHandlers(role, frames, None, bind)
        return PlannedHandlers(role, frames, f"{pascal(machine.scope)}{pascal(role)}Handlers", bind)

    def diagram(self, machine: Machine, role: str) -> list[str]:
        lines = ["stateDiagram-v2", f"    [*] --> {machine.initial[role]}"]
        edges: dict[tuple[str, str], list[str]] = {}
        for row in machine.transitions:
            if row.role != role or row.outcome != "to" or row.target is None:
                continue
            label = f"{row.direction} {row.frame}"
            if row.conditions:
                label += " [" + ", ".join(c.text for c in row.conditions) + "]"
            label = label.replace("{", "(").replace("}", ")").replace(":", " ")
            edges.setdefault((row.source, row.target), []).append(label)
        for (source, target), labels in edges.items():
            lines.append(f"    {source} --> {target}: {'<br/>'.join(labels)}")
        for state in machine.terminal:
            lines.append(f"    {state} --> [*]")
        return lines

    def rule(self, row: Transition) -> tuple[str, str, str, str, str]:
        event = f"{row.direction} {row.frame}"
        if row.conditions:
            event += " [" + ", ".join(c.text for c in row.conditions) + "]"
        outcome = "ignore" if row.outcome == "ignore" else f"error: {row.message}"

        def cell(text: str) -> str:
            return text.replace("|", "\\|")

        return cell(row.role), cell(row.source), cell(event), cell(outcome), cell(row.spec)
