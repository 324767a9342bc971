"""Plan ``machines.py`` and the Markdown docs of one protocol version from the model.

The plan is plain data for the templates (``machines.py.j2``, ``protocol.md.j2``):
every name, expression and table row is decided here, so the templates only loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wirestream.codegen.build_machines import _int_fields
from wirestream.codegen.model import Condition, Frame, Item, Machine, Protocol, Transition


def pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def one_line(text: str) -> str:
    return " ".join(text.split())


def first_sentence(text: str) -> str:
    text = one_line(text)
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


@dataclass
class PlannedRow:
    guard: str  # a guard function name, or "None"
    outcome: str  # a Python expression: a state member, IGNORE or Illegal(...)


@dataclass
class PlannedKey:
    state: str  # "FooState.BAR"
    frame: str  # a frame class name, or "ANY"
    rows: list[PlannedRow]


@dataclass
class PlannedHandler:
    role: str
    frames: list[tuple[str, str, str]]  # (frame class, engine method name, frame doc)


@dataclass
class PlannedMachine:
    name: str
    class_name: str
    state_enum: str
    doc: str
    spec: str
    scope: str
    roles: list[str]
    states: list[tuple[str, str, str]]  # (MEMBER, value, doc)
    initial: list[tuple[str, str]]  # (role, MEMBER)
    terminal: list[str]
    send: dict[str, list[PlannedKey]]
    receive: dict[str, list[PlannedKey]]
    handlers: list[PlannedHandler]
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
    frame_imports: list[str]
    guards: list[tuple[str, str, str, str]]  # (name, frame class, expression, IDL text)
    uses_any: bool
    machines: list[PlannedMachine] = field(default_factory=list)
    docs: PlannedDocs = field(default_factory=lambda: PlannedDocs([]))


class MachinesTarget:
    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.frames = {frame.name: frame for frame in proto.frames}
        self.guards: dict[tuple[str, str], str] = {}  # (frame, expression) -> name
        self.guard_rows: list[tuple[str, str, str, str]] = []
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
            guards=self.guard_rows,
            uses_any=any(t.frame == "*" for m in self.proto.machines for t in m.transitions),
            machines=machines,
            docs=PlannedDocs([self.frame_doc(f) for f in self.proto.frames]),
        )

    def frame_doc(self, frame: Frame) -> tuple[str, str, str, str]:
        code = "/".join(f"0x{c:02X}" for c in frame.code)
        return frame.name, code, frame.sender, first_sentence(frame.doc).replace("|", "\\|")

    # --- one machine ----------------------------------------------------------------

    def machine(self, machine: Machine) -> PlannedMachine:
        enum_name = f"{pascal(machine.name)}State"
        member = {state: state.upper() for state in machine.states}
        send: dict[str, list[PlannedKey]] = {}
        receive: dict[str, list[PlannedKey]] = {}
        for role in machine.roles:
            send[role] = self.table(machine, role, "send", enum_name, member)
            receive[role] = self.table(machine, role, "receive", enum_name, member)
        return PlannedMachine(
            name=machine.name,
            class_name=f"{pascal(machine.name)}Machine",
            state_enum=enum_name,
            doc=machine.doc,
            spec=machine.spec,
            scope=machine.scope,
            roles=machine.roles,
            states=[(member[s], s, one_line(doc)) for s, doc in machine.states.items()],
            initial=[(role, member[machine.initial[role]]) for role in machine.roles],
            terminal=[member[s] for s in machine.terminal],
            send=send,
            receive=receive,
            handlers=[self.handler(machine, role) for role in machine.roles],
            diagrams={role: self.diagram(machine, role) for role in machine.roles},
            rules=[self.rule(row) for row in machine.transitions if row.outcome != "to"],
        )

    def table(self, machine: Machine, role: str, direction: str, enum_name: str,
              member: dict[str, str]) -> list[PlannedKey]:  # fmt: skip
        keys: dict[tuple[str, str], PlannedKey] = {}
        for row in machine.transitions:
            if row.role != role or row.direction != direction:
                continue
            frame = "ANY" if row.frame == "*" else row.frame
            if row.frame != "*":
                self.used_frames.add(row.frame)
            key = (row.source, frame)
            if key not in keys:
                keys[key] = PlannedKey(f"{enum_name}.{member[row.source]}", frame, [])
            guard = self.guard(self.frames[row.frame], row.conditions) if row.conditions else "None"
            keys[key].rows.append(PlannedRow(guard, self.outcome(row, enum_name, member)))
        for planned in keys.values():
            # Unconditional rows last: rows exclude each other, so order only matters
            # for readability and to try the cheap specific guards first.
            planned.rows.sort(key=lambda r: r.guard == "None")
        return list(keys.values())

    def outcome(self, row: Transition, enum_name: str, member: dict[str, str]) -> str:
        if row.outcome == "to":
            assert row.target is not None
            return f"{enum_name}.{member[row.target]}"
        if row.outcome == "ignore":
            return "IGNORE"
        return f"Illegal({row.message!r}, {row.spec!r})"

    def guard(self, frame: Frame, conditions: list[Condition]) -> str:
        parts = [self.condition(frame, c) for c in conditions]
        expression = " and ".join(parts)
        key = (frame.name, expression)
        if key not in self.guards:
            name = f"_guard_{len(self.guards)}"
            self.guards[key] = name
            text = ", ".join(c.text for c in conditions)
            self.guard_rows.append((name, frame.name, expression, text))
        return self.guards[key]

    def condition(self, frame: Frame, condition: Condition) -> str:
        if condition.is_flag:
            present = self.presence_field(frame.items, condition.name)
            if present is not None:
                test = f"frame.{present} is not None"
                return test if condition.values[0] else f"frame.{present} is None"
            return (
                f"frame.{condition.name}" if condition.values[0] else f"not frame.{condition.name}"
            )
        spelled = [self.value(frame, condition.name, v) for v in condition.values]
        if len(spelled) == 1:
            operator = "!=" if condition.negated else "=="
            return f"frame.{condition.name} {operator} {spelled[0]}"
        values = ", ".join(spelled)
        operator = "not in" if condition.negated else "in"
        return f"frame.{condition.name} {operator} ({values})"

    def value(self, frame: Frame, name: str, value: int) -> str:
        """An allowed value as the guard spells it: the enum member (``ErrorCode.X``) when
        the field is typed with an enum that names the value, else the number."""
        field = _int_fields([*self.proto.header, *frame.items]).get(name)
        enum = field.enum if field is not None else None
        if enum is not None:
            for member, number in enum.values.items():
                if number == value:
                    self.used_enums.add(enum.name)
                    return f"{enum.name}.{member}"
        return str(value)

    def presence_field(self, items: list[Item], flag: str) -> str | None:
        """The field a presence flag guards (its attribute is None when the flag is clear)."""
        for item in items:
            if item.condition == flag and hasattr(item.node, "name"):
                return str(getattr(item.node, "name"))
        return None

    # --- handler stubs and docs -------------------------------------------------------

    def handler(self, machine: Machine, role: str) -> PlannedHandler:
        handled = set(machine.handled(role))
        frames = [
            (f.name, machine.handler_name(f.name), first_sentence(f.doc))
            for f in self.proto.frames
            if f.name in handled
        ]
        return PlannedHandler(role, frames)

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
