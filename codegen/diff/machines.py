"""The machine rules of ``wirestream diff``: what each side may send and how it takes
what it receives, state by state (see ``wirestream.codegen.diff.compare``).

For every machine, role, state and direction that both versions have, each event --
a frame (paired as the frame rules paired it) under the conditions some row of either
table gives it -- is looked up in both tables the way ``runtime/machine.py`` does: the
rows of that frame in order, then the state's ``*`` row, else no row (refused).  An
event the tables only split differently (one row in one version, two in the other) is
judged by the finer rows, which both tables decide.

Only states the role can reach in both versions are compared (a state one version
never puts the role in has no outcome to compare; the rows leading into it are judged).
Sending: ``to`` and ``ignore`` allow it, ``error`` and no row refuse it.  Receiving:
``to`` accepts it, ``ignore`` drops it, ``error`` and no row refuse it.  A send newly
allowed breaks old readers -- the peers (the machine's other role) that were never sent
it in that state; a receive newly refused or dropped breaks new readers -- old peers
still send it.  The same change in several states is one report.
"""

from __future__ import annotations

from dataclasses import dataclass

from wirestream.codegen.frontend.machines import _exclusive
from wirestream.codegen.diff.changes import Comparison
from wirestream.codegen.frontend.model import Condition, Machine, Transition

Signature = tuple[tuple[str, bool, tuple[int, ...], bool], ...]


@dataclass(frozen=True)
class Outcome:
    kind: str  # "to" | "ignore" | "error" | "none" (no row)
    target: str | None
    line: int | None
    message: str

    def category(self, direction: str) -> str:
        if direction == "send":
            return "allowed" if self.kind in ("to", "ignore") else "refused"
        return {"to": "accepted", "ignore": "dropped"}.get(self.kind, "refused")

    def describe(self) -> str:
        if self.kind == "to":
            return f"to {self.target}"
        if self.kind == "ignore":
            return "ignored"
        if self.kind == "error":
            return "refused"
        return "refused (no row)"


def signature(conditions: list[Condition]) -> Signature:
    return tuple(sorted((c.name, c.is_flag, tuple(sorted(c.values)), c.negated)
                        for c in conditions))  # fmt: skip


def implies(given: list[Condition], required: list[Condition]) -> bool:
    """Whether every frame meeting ``given`` meets ``required``."""
    by_name = {c.name: c for c in given}
    for need in required:
        have = by_name.get(need.name)
        if have is None:
            return False
        have_values, need_values = set(have.values), set(need.values)
        if not have.negated and not need.negated and not have_values <= need_values:
            return False
        if not have.negated and need.negated and have_values & need_values:
            return False
        if have.negated and not need.negated:
            return False
        if have.negated and need.negated and not need_values <= have_values:
            return False
    return True


def outcome(row: Transition | None) -> Outcome:
    if row is None:
        return Outcome("none", None, None, "")
    return Outcome(row.outcome, row.target, row.line, row.message)


def resolve(machine: Machine, role: str, state: str, direction: str, frame: str,
            given: list[Condition]) -> list[Outcome]:  # fmt: skip
    """The outcomes an event can have (one, unless the table splits it)."""
    found: list[Outcome] = []
    for row in machine.transitions:
        if (row.role, row.source, row.direction, row.frame) != (role, state, direction, frame):
            continue
        if _exclusive(given, row.conditions):
            continue
        found.append(outcome(row))
        if implies(given, row.conditions):
            return found
    found.append(star(machine, role, state, direction))
    return found


def star(machine: Machine, role: str, state: str, direction: str) -> Outcome:
    row = next((r for r in machine.transitions
                if (r.role, r.source, r.direction, r.frame) == (role, state, direction, "*")),
               None)  # fmt: skip
    return outcome(row)


@dataclass
class Event:
    """One judged difference, before the states it happens in are merged."""

    rule: str
    role: str
    direction: str
    frame: str
    when: str
    old: Outcome
    new: Outcome


def judge(direction: str, old: Outcome, new: Outcome) -> str | None:
    """The rule an outcome change falls under (None: no change that matters)."""
    if (old.kind, old.target) == (new.kind, new.target):
        return None
    before, after = old.category(direction), new.category(direction)
    if direction == "send":
        if before == "refused" and after == "allowed":
            return "machine-send-allowed"
        if before == "allowed" and after == "refused":
            return "machine-send-refused"
        return "machine-target-changed" if after == "allowed" else None
    if before in ("accepted", "dropped") and after == "refused":
        return "machine-receive-refused"
    if before == "accepted" and after == "dropped":
        return "machine-receive-dropped"
    if after == "accepted" and before != "accepted" or (before, after) == ("refused", "dropped"):
        return "machine-receive-allowed"
    return "machine-target-changed" if after == "accepted" else None


def compare_machines(cmp: Comparison, frame_map: dict[str, str]) -> None:
    old_machines = {m.name: m for m in cmp.old.machines}
    new_machines = {m.name: m for m in cmp.new.machines}
    for name in [*new_machines, *(n for n in old_machines if n not in new_machines)]:
        old, new = old_machines.get(name), new_machines.get(name)
        if old is None or new is None:
            which = "added" if old is None else "removed"
            present = new or old
            assert present is not None
            text = ("new peers check this table; old peers had none to agree or disagree with it"
                    if old is None else
                    "new peers no longer check this table; what it refused, new readers take as "
                    "the frame rules allow")  # fmt: skip
            cmp.add(f"machine-{which}", f"machine {name}", old_breaks=False, new_breaks=False,
                    readers=tuple(present.roles), reason=f"machine {name} {which}: {text}",
                    old_line=old.line if old else None,
                    new_line=new.line if new else None)  # fmt: skip
            continue
        compare_machine(cmp, old, new, frame_map)


def compare_machine(cmp: Comparison, old: Machine, new: Machine,
                    frame_map: dict[str, str]) -> None:  # fmt: skip
    subject = f"machine {new.name}"
    for role in [*new.roles, *(r for r in old.roles if r not in new.roles)]:
        if (role in old.roles) != (role in new.roles):
            which = "added" if role in new.roles else "removed"
            cmp.add(f"machine-role-{which}", f"{subject}: role {role}", old_breaks=False,
                    new_breaks=False, readers=(role,), reason=f"role {role} {which}",
                    old_line=old.line, new_line=new.line)  # fmt: skip
    for state in [*new.states, *(s for s in old.states if s not in new.states)]:
        if (state in old.states) != (state in new.states):
            which = "added" if state in new.states else "removed"
            proto = cmp.new if state in new.states else cmp.old
            line = proto.line(f"machines.{new.name}.states.{state}")
            cmp.add(f"machine-state-{which}", f"{subject}: state {state}", old_breaks=False,
                    new_breaks=False, readers=tuple(new.roles),
                    reason=f"state {state} {which} (the rows that lead to it are judged as rows)",
                    old_line=line if which == "removed" else old.line,
                    new_line=line if which == "added" else new.line)  # fmt: skip
    roles = [r for r in new.roles if r in old.roles]
    for role in roles:
        if old.initial.get(role) != new.initial.get(role):
            cmp.add("machine-initial-changed", f"{subject}: role {role}", old_breaks=False,
                    new_breaks=False, readers=(role,),
                    reason=f"starts in {old.initial.get(role)} -> {new.initial.get(role)}",
                    old_line=old.line, new_line=new.line)  # fmt: skip
    events: dict[tuple[str, ...], tuple[Event, list[str]]] = {}
    for role in roles:
        # A state the role never reaches in one version has no outcome there to compare:
        # the rows that lead into it (or not) are what changed, and they are judged.
        reached = reachable(old, role) & reachable(new, role)
        for state in [s for s in old.states if s in reached]:
            for direction in ("send", "receive"):
                for event in state_events(old, new, role, state, direction, frame_map):
                    key = (event.rule, event.role, event.direction, event.frame, event.when,
                           event.old.describe(), event.new.describe())  # fmt: skip
                    events.setdefault(key, (event, []))[1].append(state)
    for event, where in events.values():
        report(cmp, new, event, where)


def reachable(machine: Machine, role: str) -> set[str]:
    """The states ``role`` can be in: its initial state and where its rows lead."""
    found = {machine.initial[role]}
    grew = True
    while grew:
        grew = False
        for row in machine.transitions:
            if row.role == role and row.source in found and row.target is not None:
                if row.target not in found:
                    found.add(row.target)
                    grew = True
    return found


def state_events(old: Machine, new: Machine, role: str, state: str, direction: str,
                 frame_map: dict[str, str]) -> list[Event]:  # fmt: skip

    def rows(machine: Machine, frame: str) -> list[Transition]:
        return [r for r in machine.transitions
                if (r.role, r.source, r.direction, r.frame) == (role, state, direction, frame)]  # fmt: skip

    found: list[Event] = []
    for old_frame, new_frame in frame_map.items():
        given: dict[Signature, list[Condition]] = {}
        for row in [*rows(old, old_frame), *rows(new, new_frame)]:
            given.setdefault(signature(row.conditions), row.conditions)
        for conditions in given.values():
            before = resolve(old, role, state, direction, old_frame, conditions)
            after = resolve(new, role, state, direction, new_frame, conditions)
            if len(before) > 1 or len(after) > 1:
                continue  # split differently: the finer rows of the other table decide
            rule = judge(direction, before[0], after[0])
            if rule is not None:
                name = new_frame if old_frame == new_frame else f"{old_frame} -> {new_frame}"
                when = ", ".join(c.text for c in conditions)
                found.append(Event(rule, role, direction, name, when, before[0], after[0]))
    old_star, new_star = star(old, role, state, direction), star(new, role, state, direction)
    rule = judge(direction, old_star, new_star)
    if rule is not None:
        found.append(Event(rule, role, direction, "any other frame", "", old_star, new_star))
    return found


def peers(machine: Machine, role: str) -> tuple[str, ...]:
    """The roles that receive what ``role`` sends."""
    others = tuple(r for r in machine.roles if r != role)
    return others or (role,)


def report(cmp: Comparison, machine: Machine, event: Event, states: list[str]) -> None:
    when = f" [{event.when}]" if event.when else ""
    subject = f"machine {machine.name}: {event.role} {event.direction}s {event.frame}{when}"
    where = ", ".join(states)
    change = f"in {where}: {event.old.describe()} -> {event.new.describe()}"
    old_breaks = new_breaks = False
    if event.rule == "machine-send-allowed":
        old_breaks = True
        change += (
            f"; old readers: new {event.role}s may send it there, old "
            f"{'/'.join(peers(machine, event.role))}s were never sent it there"
        )
    elif event.rule in ("machine-receive-refused", "machine-receive-dropped"):
        new_breaks = True
        verb = "refuse" if event.rule == "machine-receive-refused" else "drop"
        change += f"; new readers: old peers send it there, new {event.role}s {verb} it"
    readers = peers(machine, event.role) if event.direction == "send" else (event.role,)
    cmp.add(event.rule, subject, old_breaks=old_breaks, new_breaks=new_breaks, readers=readers,
            reason=change, old_line=event.old.line or machine_line(cmp, "old", machine),
            new_line=event.new.line or machine_line(cmp, "new", machine))  # fmt: skip


def machine_line(cmp: Comparison, which: str, machine: Machine) -> int:
    proto = cmp.old if which == "old" else cmp.new
    found = next((m for m in proto.machines if m.name == machine.name), None)
    return found.line if found else 1
