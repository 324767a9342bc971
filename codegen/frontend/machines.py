"""Build and validate the ``machines:`` section of an IDL file (see idl/README.md).

A machine is a table: for a role in a state, sending or receiving a frame (optionally
only when its flags/fields match ``when``) leads to another state, is ignored (the spec
says so), or is an error.  Validation rejects what would make the table ambiguous or
dead: unknown states/frames/roles/fields, unreachable states, two rows that can match
the same event (non-determinism), a frame sent by the wrong side, rows leaving a
terminal state, and a ``to:`` that contradicts the rows around it (``check_neutral``).
"""

from __future__ import annotations

from typing import Any

from wirestream.codegen.frontend.loader import Mapping
from wirestream.codegen.frontend.model import (
    Condition,
    Enum,
    Frame,
    IntField,
    Item,
    Machine,
    Transition,
    Word,
)
from wirestream.codegen.frontend.reader import LOWER, NodeReader

TRANSITION_KEYS = {"role", "from", "send", "receive", "when", "to", "stay", "ignore", "error",
                   "spec", "note"}  # fmt: skip
MACHINE_KEYS = {"doc", "spec", "scope", "roles", "states", "initial", "terminal", "transitions",
                "observes"}  # fmt: skip


def _int_fields(items: list[Item]) -> dict[str, IntField]:
    """The integer fields a condition may test: plain ints and values packed in words."""
    found: dict[str, IntField] = {}
    for item in items:
        node = item.node
        if isinstance(node, IntField):
            found[node.name] = node
        elif isinstance(node, Word):
            for bit in node.bits:
                if bit.kind == "value" and bit.value is not None:
                    found[bit.value.name] = bit.value
    return found


class MachineBuilder:
    def __init__(self, builder: NodeReader, frames: list[Frame], header: list[Item],
                 common_flags: dict[str, int]) -> None:  # fmt: skip
        self.b = builder
        self.frames = {frame.name: frame for frame in frames}
        self.header_fields = _int_fields(header)
        self.common_flags = common_flags

    def build(self, top: Mapping) -> list[Machine]:
        if "machines" not in top:
            return []
        node = self.b.mapping(top["machines"], "machines", self.b.line_of(top, "machines"))
        machines = []
        for name, body in node.items():
            line = self.b.line_of(node, name)
            self.b.name(name, LOWER, "lower_snake", line, f"machines.{name}")
            machines.append(self.machine(name, body, line))
        return machines

    # --- one machine ----------------------------------------------------------------

    def machine(self, name: str, body: Any, line: int) -> Machine:
        path = f"machines.{name}"
        node = self.b.mapping(body, path, line)
        self.b.keys(node, path, MACHINE_KEYS,
                    {"roles", "states", "initial", "transitions"})  # fmt: skip
        roles_node = self.b.sequence(node["roles"], f"{path}.roles", self.b.line_of(node, "roles"))
        roles: list[str] = []
        for index, role in enumerate(roles_node):
            role_line = self.b.line_of(roles_node, index)
            self.b.name(role, LOWER, "lower_snake", role_line, f"{path}.roles")
            if role in roles:
                self.b.fail(role_line, f"{path}.roles", f"role '{role}' is listed twice")
            roles.append(role)
        if not roles:
            self.b.fail(roles_node.line, f"{path}.roles", "a machine needs at least one role")
        states = self.states(node, path)
        initial = self.initial(node, path, roles, states)
        terminal = self.terminal(node, path, states)
        transitions = self.transitions(node, path, roles, states)
        machine = Machine(
            name=name,
            doc=self.b.text(node, "doc", path),
            spec=self.b.text(node, "spec", path),
            scope=self.scope(node, path),
            roles=roles,
            states=states,
            initial=initial,
            terminal=terminal,
            transitions=transitions,
            line=line,
        )
        machine.observes = self.observes(node, path, machine)
        self.check_terminal(machine, path)
        self.check_deterministic(machine, path)
        self.check_neutral(machine, node, path)
        self.check_reachable(machine, node, path)
        return machine

    def scope(self, node: Mapping, path: str) -> str:
        scope = node.get("scope", "connection")
        self.b.name(scope, LOWER, "lower_snake", self.b.line_of(node, "scope"), f"{path}.scope")
        return str(scope)

    def observes(self, node: Mapping, path: str, machine: Machine) -> list[str]:
        """``observes: [Frame, ...]``: frames whose receive rows only move this machine
        (another scope's machine handles them), so the dispatch gives them no handler."""
        if "observes" not in node:
            return []
        key = f"{path}.observes"
        items = self.b.sequence(node["observes"], key, self.b.line_of(node, "observes"))
        received = {row.frame for row in machine.transitions if row.direction == "receive"}
        observed: list[str] = []
        for index, name in enumerate(items):
            line = self.b.line_of(items, index)
            if name not in self.frames:
                self.b.fail(line, key, f"unknown frame {name!r}")
            if name not in received:
                self.b.fail(line, key, f"no receive row of this machine names {name}")
            if name in observed:
                self.b.fail(line, key, f"{name} is listed twice")
            observed.append(str(name))
        return observed

    def states(self, node: Mapping, path: str) -> dict[str, str]:
        states_node = self.b.mapping(node["states"], f"{path}.states",
                                     self.b.line_of(node, "states"))  # fmt: skip
        states: dict[str, str] = {}
        for state, doc in states_node.items():
            line = self.b.line_of(states_node, state)
            self.b.name(state, LOWER, "lower_snake", line, f"{path}.states.{state}")
            if not isinstance(doc, str):
                self.b.fail(line, f"{path}.states.{state}", "expected a description (a string)")
            states[state] = " ".join(doc.split())
        if not states:
            self.b.fail(states_node.line, f"{path}.states", "a machine needs at least one state")
        return states

    def state_ref(self, value: Any, states: dict[str, str], line: int, key: str) -> str:
        if not isinstance(value, str) or value not in states:
            known = ", ".join(states)
            self.b.fail(line, key, f"unknown state '{value}' (states: {known})")
        return value

    def initial(self, node: Mapping, path: str, roles: list[str],
                states: dict[str, str]) -> dict[str, str]:  # fmt: skip
        value = node["initial"]
        line = self.b.line_of(node, "initial")
        if isinstance(value, Mapping):
            self.b.keys(value, f"{path}.initial", set(roles), set(roles))
            return {
                role: self.state_ref(value[role], states, self.b.line_of(value, role),
                                     f"{path}.initial.{role}")  # fmt: skip
                for role in roles
            }
        state = self.state_ref(value, states, line, f"{path}.initial")
        return {role: state for role in roles}

    def terminal(self, node: Mapping, path: str, states: dict[str, str]) -> list[str]:
        if "terminal" not in node:
            return []
        seq = self.b.sequence(node["terminal"], f"{path}.terminal",
                              self.b.line_of(node, "terminal"))  # fmt: skip
        return [
            self.state_ref(value, states, self.b.line_of(seq, index), f"{path}.terminal")
            for index, value in enumerate(seq)
        ]

    # --- transitions ----------------------------------------------------------------

    def transitions(self, node: Mapping, path: str, roles: list[str],
                    states: dict[str, str]) -> list[Transition]:  # fmt: skip
        seq = self.b.sequence(node["transitions"], f"{path}.transitions",
                              self.b.line_of(node, "transitions"))  # fmt: skip
        rows: list[Transition] = []
        for index, item in enumerate(seq):
            line = self.b.line_of(seq, index)
            key = f"{path}.transitions[{index}]"
            row = self.b.mapping(item, key, line)
            self.b.keys(row, key, TRANSITION_KEYS, {"from"})
            rows.extend(self.transition(row, key, roles, states))
        return rows

    def transition(self, row: Mapping, key: str, roles: list[str],
                   states: dict[str, str]) -> list[Transition]:  # fmt: skip
        line = row.line
        role_value = row.get("role", roles if len(roles) == 1 else None)
        if role_value is None:
            self.b.fail(line, f"{key}.role", f"missing required key (roles: {', '.join(roles)})")
        role_list = role_value if isinstance(role_value, list) else [role_value]
        for role in role_list:
            if role not in roles:
                self.b.fail(self.b.line_of(row, "role"), f"{key}.role",
                            f"unknown role '{role}' (roles: {', '.join(roles)})")  # fmt: skip
        sources_value = row["from"]
        source_list = sources_value if isinstance(sources_value, list) else [sources_value]
        sources = [
            self.state_ref(s, states, self.b.line_of(row, "from"), f"{key}.from")
            for s in source_list
        ]
        directions = [d for d in ("send", "receive") if d in row]
        if len(directions) != 1:
            self.b.fail(line, key, "a transition needs exactly one of 'send' or 'receive'")
        direction = directions[0]
        frame_line = self.b.line_of(row, direction)
        frame_names = row[direction] if isinstance(row[direction], list) else [row[direction]]
        outcomes = [o for o in ("to", "stay", "ignore", "error") if o in row]
        if len(outcomes) != 1:
            self.b.fail(line, key,
                        "a transition needs exactly one of 'to', 'stay', 'ignore' or 'error'")  # fmt: skip
        outcome = outcomes[0]
        target = None
        message = ""
        stay = outcome == "stay"
        if stay:  # the frame is handled and the machine stays where it is: `to` its source
            if row["stay"] is not True:
                self.b.fail(self.b.line_of(row, "stay"), f"{key}.stay", "must be true")
            outcome = "to"
        elif outcome == "to":
            target = self.state_ref(row["to"], states, self.b.line_of(row, "to"), f"{key}.to")
        elif outcome == "ignore":
            if row["ignore"] is not True:
                self.b.fail(self.b.line_of(row, "ignore"), f"{key}.ignore", "must be true")
        else:
            message = row["error"]
            if not isinstance(message, str) or not message.strip():
                self.b.fail(self.b.line_of(row, "error"), f"{key}.error",
                            "expected a message saying which rule the event breaks")  # fmt: skip
            message = " ".join(message.split())
        if outcome != "error":
            message = " ".join(self.b.text(row, "note", key).split())
        spec = " ".join(self.b.text(row, "spec", key).split())
        result = []
        for frame_name in frame_names:
            frame = self.frame_ref(frame_name, frame_line, f"{key}.{direction}")
            conditions = self.conditions(row, key, frame)
            for role in role_list:
                if frame is not None and outcome == "to":  # ignoring a misdirected frame is fine
                    self.check_sender(frame, role, direction, frame_line, f"{key}.{direction}")
                for source in sources:
                    result.append(Transition(role, source, direction, str(frame_name), conditions,
                                             outcome, source if stay else target, message, spec,
                                             line))  # fmt: skip
        return result

    def frame_ref(self, value: Any, line: int, key: str) -> Frame | None:
        if value == "*":
            return None
        if not isinstance(value, str) or value not in self.frames:
            self.b.fail(line, key, f"unknown frame '{value}'")
        return self.frames[value]

    def check_sender(self, frame: Frame, role: str, direction: str, line: int, key: str) -> None:
        """A machine role named client/server may only send what that side sends."""
        if role not in ("client", "server") or frame.sender == "any":
            return
        sender = role if direction == "send" else ("server" if role == "client" else "client")
        if frame.sender != sender:
            self.b.fail(line, key, f"{frame.name} is sent by the {frame.sender} only, so the "
                                   f"{role} cannot {direction} it")  # fmt: skip

    def conditions(self, row: Mapping, key: str, frame: Frame | None) -> list[Condition]:
        if "when" not in row:
            return []
        line = self.b.line_of(row, "when")
        when = self.b.mapping(row["when"], f"{key}.when", line)
        if frame is None:
            self.b.fail(line, f"{key}.when", "a '*' transition cannot have conditions")
        flags = {**self.common_flags, **frame.flags}
        fields = {**self.header_fields, **_int_fields(frame.items),
                  **{name: value for name, (value, _) in frame.flag_values.items()}}  # fmt: skip
        result = []
        for name, value in when.items():
            cond_line = self.b.line_of(when, name)
            cond_key = f"{key}.when.{name}"
            if name in frame.set_flags:
                self.b.fail(cond_line, cond_key,
                            f"flag '{name}' is always set on {frame.name}: it tells no frames apart")  # fmt: skip
            if name in flags:
                if not isinstance(value, bool):
                    self.b.fail(cond_line, cond_key, "a flag condition must be true or false")
                text = name if value else f"!{name}"
                result.append(Condition(name, True, (int(value),), text))
            elif name in fields:
                negated = isinstance(value, Mapping)
                if negated:
                    self.b.keys(value, cond_key, {"not"}, {"not"})
                    value = value["not"]
                values = value if isinstance(value, list) else [value]
                numbers = tuple(self.field_value(v, fields[name], cond_line, cond_key)
                                for v in values)  # fmt: skip
                shown = [str(v) for v in values]
                if len(shown) == 1:
                    text = f"{name}{'!=' if negated else '='}{shown[0]}"
                else:
                    text = f"{name} {'not in' if negated else 'in'} {{{', '.join(shown)}}}"
                result.append(Condition(name, False, numbers, text, negated))
            else:
                known = ", ".join(sorted({*flags, *fields}))
                self.b.fail(cond_line, cond_key,
                            f"{frame.name} has no flag or integer field '{name}' (it has: {known})")  # fmt: skip
        return result

    def field_value(self, value: Any, field: IntField, line: int, key: str) -> int:
        enum: Enum | None = field.enum
        if isinstance(value, str):
            if enum is None or value not in enum.values:
                members = ", ".join(enum.values) if enum else "none: the field is not an enum"
                self.b.fail(line, key, f"unknown value '{value}' (enum members: {members})")
            return enum.values[value]
        number = self.b.integer(value, line, key)
        if not field.type.min <= number <= field.type.max:
            self.b.fail(line, key, f"{number} does not fit {field.type.name}")
        return number

    # --- whole-machine checks -------------------------------------------------------

    def check_terminal(self, machine: Machine, path: str) -> None:
        for row in machine.transitions:
            if row.source in machine.terminal and row.outcome == "to" and row.target != row.source:
                self.b.fail(row.line, f"{path}.transitions",
                            f"terminal state '{row.source}' cannot lead to '{row.target}'")  # fmt: skip

    def check_deterministic(self, machine: Machine, path: str) -> None:
        """Two rows for the same (role, state, direction, frame) must exclude each other:
        some name they both test must have disjoint allowed values."""
        seen: dict[tuple[str, str, str, str], list[Transition]] = {}
        for row in machine.transitions:
            key = (row.role, row.source, row.direction, row.frame)
            for other in seen.get(key, []):
                if not _exclusive(row.conditions, other.conditions):
                    self.b.fail(row.line, f"{path}.transitions",
                                f"non-deterministic: role {row.role} in state '{row.source}' "
                                f"can {row.direction} {row.frame} by this row and by the row at "
                                f"line {other.line}; give them conditions that exclude each other")  # fmt: skip
            seen.setdefault(key, []).append(row)

    def check_neutral(self, machine: Machine, node: Mapping, path: str) -> None:
        """An event (role, direction, frame and conditions) the table handles without a
        change of state in at least two states is state-neutral there (a keepalive, a
        ping, a Sync while busy); a row that moves on it may only lead into one of those
        states (RSocket's first request moves setup_sent to established, where requests
        stay; PostgreSQL's Sync moves ready to busy, where Syncs stay).  A row that moves
        it anywhere else contradicts every row around it: that ``to:`` was copied from a
        neighbouring row, or a ``from:`` list was given one ``to:``, where ``stay: true``
        was meant.  Rows with other conditions are other events, so they do not count."""
        groups: dict[tuple[str, str, str, tuple[str, ...]], list[Transition]] = {}
        for row in machine.transitions:
            if row.outcome == "to" and row.frame != "*":
                texts = tuple(sorted(c.text for c in row.conditions))
                groups.setdefault((row.role, row.direction, row.frame, texts), []).append(row)
        rows_node = node["transitions"]
        for rows in groups.values():
            stays = sorted({r.source for r in rows if r.target == r.source})
            if len(stays) < 2:
                continue
            for row in rows:
                if row.target == row.source or row.target in stays:
                    continue
                index = next(i for i in range(len(rows_node))
                             if self.b.line_of(rows_node, i) == row.line)  # fmt: skip
                where = ", ".join(f"'{s}'" for s in stays)
                self.b.fail(self.b.line_of(rows_node[index], "to"), f"{path}.transitions[{index}].to",
                            f"{row.role} {row.direction}s {row.frame} without a change of state in "
                            f"{where}, yet this row moves '{row.source}' to '{row.target}', a state "
                            f"where it does not stay: write 'stay: true', or tell the events apart "
                            f"by conditions")  # fmt: skip

    def check_reachable(self, machine: Machine, node: Mapping, path: str) -> None:
        reached = set(machine.initial.values())
        changed = True
        while changed:
            changed = False
            for row in machine.transitions:
                if row.source in reached and row.target is not None and row.target not in reached:
                    reached.add(row.target)
                    changed = True
        states_node = node["states"]
        for state in machine.states:
            if state not in reached:
                self.b.fail(self.b.line_of(states_node, state), f"{path}.states.{state}",
                            "unreachable: no transition leads here from an initial state")  # fmt: skip


def _exclusive(a: list[Condition], b: list[Condition]) -> bool:
    """Whether no frame can satisfy both condition lists."""
    b_by_name = {c.name: c for c in b}
    return any(c.name in b_by_name and _disjoint(c, b_by_name[c.name]) for c in a)


def _disjoint(c: Condition, d: Condition) -> bool:
    if c.negated and d.negated:
        return False  # both exclude finitely many values: some value satisfies both
    if c.negated:
        c, d = d, c
    if d.negated:  # c allows only its values; d forbids some of them
        return set(c.values) <= set(d.values)
    return not set(c.values) & set(d.values)
