"""The Python machines' outcomes, as JSON, for tests/typescript/machines.test.ts.

For every protocol version: sample frames of every frame type (drawn from the generated
hypothesis strategies, plus copies whose guarded attributes -- the flags and integer
fields some machine row tests -- take each value a guard names and one it does not),
serialised with the Python codec; and for every machine, role, state and direction the
outcome of applying each frame to a fresh Python machine in that state: the new state,
IGNORE, or the error (class and every field).  The TypeScript test decodes the same
bytes with the generated TypeScript codec, applies them to the TypeScript machines and
expects the same outcome, so both languages' tables and guards agree row for row.

Run from the repository root: ``python -m tests.typescript.machine_cases [OUT.json]``
(stdout without OUT).  Deterministic: hypothesis is derandomized.
"""

from __future__ import annotations

import importlib
import itertools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.machines import _int_fields
from wirestream.codegen.plan.machines import MachinesTarget, PlannedCondition
from wirestream.codegen.frontend.model import Protocol, snake_case
from wirestream.runtime.errors import IllegalSend, UnexpectedFrame
from wirestream.runtime.machine import Ignore, StateMachine

ROOT = Path(__file__).resolve().parent.parent.parent
DRAWN = 4  # random frames per frame type
VARIANTS = 48  # at most this many guard-driven copies per frame type


def draw(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples of ``strategy``, the same on every run."""
    found: list[Any] = []

    @settings(max_examples=count, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)  # fmt: skip
    @given(strategy)
    def collect(example: Any) -> None:
        found.append(example)

    collect()
    return found[:count]


@dataclass
class Sample:
    frame: Any
    data: bytes
    ctx: Any
    sender: str | None


@dataclass
class VersionCases:
    proto: Protocol
    codec: ModuleType
    samples: list[Sample] = field(default_factory=list)
    seen: set[tuple[bytes, str | None]] = field(default_factory=set)

    def add(self, frame: Any, ctx: Any) -> None:
        """Keep ``frame`` if the codec round-trips it (a variant may break a layout rule)."""
        codec = self.codec
        sender = frame.SENDER if frame.SENDER in ("client", "server") else None
        if codec.NEEDS_SENDER and sender is None:
            sender = "client"
        try:
            data = codec.encode(frame, ctx)
            if codec.decode(data, ctx, sender) != frame:
                return
        except Exception:  # noqa: BLE001 -- any refusal drops the variant
            return
        try:  # a context that changes nothing (e.g. element_size 0) is left out
            if codec.decode(data, codec.Context(), sender) == frame:
                ctx = None
        except Exception:  # noqa: BLE001 -- the frame needs its context
            pass
        if (data, sender) not in self.seen:
            self.seen.add((data, sender))
            self.samples.append(Sample(frame, data, ctx, sender))


def attribute_values(conditions: list[PlannedCondition]) -> dict[str, list[Any]]:
    """Per guarded attribute: the values worth trying (each named one and one other)."""
    values: dict[str, list[Any]] = {}
    for condition in conditions:
        tried = values.setdefault(condition.name, [])
        if condition.test == "flag":
            candidates: list[Any] = [True, False]
        elif condition.test == "present":
            continue  # drawn frames cover presence both ways
        else:
            named = [v.number for v in condition.values]
            other = next(n for n in itertools.count(0) if n not in named)
            candidates = [*named, other]
        tried.extend(c for c in candidates if c not in tried)
    return values


def variants(frame: Any, values: dict[str, list[Any]]) -> list[Any]:
    cls = type(frame)
    names = [n for n in values if n in cls.__match_args__]
    fields = {n: getattr(frame, n) for n in cls.__match_args__}
    combos = list(itertools.product(*(values[n] for n in names)))
    step = max(1, len(combos) // VARIANTS)
    out = []
    for combo in combos[::step]:
        try:
            out.append(cls(**{**fields, **dict(zip(names, combo))}))
        except Exception:  # noqa: BLE001 -- a value the constructor refuses
            continue
    return out


def frames_of(proto: Protocol) -> VersionCases:
    codec = importlib.import_module(f"wirestream.generated.{proto.protocol}.{proto.version}")
    strategies = importlib.import_module(f"{codec.__name__}.strategies")
    plan = MachinesTarget(proto).plan()
    cases = VersionCases(proto, codec)
    for frame_model in proto.frames:
        strategy = getattr(strategies, snake_case(frame_model.name))
        drawn = draw(strategy(), DRAWN * 4)
        # Prefer frames that need no context (the TypeScript side then decodes them
        # without one); keep the others only when there is nothing else.
        plain = [(f, c) for f, c in drawn if c == codec.Context()]
        chosen = (plain or drawn)[:DRAWN]
        conditions = [c for g in plan.guards if g.frame == frame_model.name for c in g.conditions]
        values = attribute_values(conditions)
        for frame, ctx in chosen:
            cases.add(frame, ctx)
        if values and chosen:
            for frame, ctx in chosen[:2]:
                for variant in variants(frame, values):
                    cases.add(variant, ctx)
    return cases


def outcome(machine: StateMachine[Any], direction: str, frame: Any, errors: dict[str, int]) -> Any:
    """The Python outcome: the state value, "IGNORE", or an index into the error table."""
    try:
        if direction == "send":
            allowed = machine.allows_send(frame)
            state = machine.send(frame)
            assert allowed
            return {"to": state.value}
        result = machine.receive(frame)
        return "IGNORE" if isinstance(result, Ignore) else {"to": result.value}
    except (IllegalSend, UnexpectedFrame) as error:
        spelled = json.dumps({"class": type(error).__name__, "message": str(error),
                              "machine": error.machine, "role": error.role,
                              "state": error.state, "frame": error.frame, "spec": error.spec},
                             sort_keys=True)  # fmt: skip
        return {"error": errors.setdefault(spelled, len(errors))}


def context_plain(proto: Protocol, ctx: Any) -> dict[str, Any] | None:
    """``ctx`` as JSON: per value its entries ``[[key, value], ...]`` (a value kept per
    key, e.g. per subscriber) or ``[[null, value]]``, and whether the TypeScript codec
    holds keys and values as bigint (64-bit integer types, as the contract says);
    integers are decimal strings so that 64-bit ones survive JSON."""
    if ctx is None or ctx == type(ctx)():
        return None
    out: dict[str, Any] = {}
    for value in proto.context:
        current = getattr(ctx, value.name)
        frame_name, field_name = value.set_by[0] if value.set_by else (None, None)
        frame = next((f for f in proto.frames if f.name == frame_name), None)
        ints = _int_fields([*proto.header, *(frame.items if frame else [])])

        def wide(name: str | None) -> bool:
            return name is not None and name in ints and ints[name].type.bits > 32

        entries = current.items() if isinstance(current, dict) else [(None, current)]
        out[value.name] = {
            "entries": [[None if k is None else str(k), str(v)] for k, v in entries],
            "bigintKey": wide(value.keyed_by),
            "bigintValue": wide(field_name),
        }
    return out


SpellContext = Callable[[Protocol, Any], Any]


def version_cases(proto: Protocol, spell_ctx: SpellContext = context_plain) -> dict[str, Any]:
    """The cases of one version; ``spell_ctx`` writes a sample's context as JSON (the
    Rust runner reads the cross-language corpus's form instead of TypeScript's)."""
    cases = frames_of(proto)
    machines_module = importlib.import_module(f"{cases.codec.__name__}.machines")
    errors: dict[str, int] = {}
    machines = []
    for planned in MachinesTarget(proto).plan().machines:
        cls = getattr(machines_module, planned.class_name)
        states = type(next(iter(cls.INITIAL.values())))
        rows = []
        for role in cls.ROLES:
            for state in states:
                for direction in ("send", "receive"):
                    outcomes = [
                        outcome(cls(role, state), direction, sample.frame, errors)
                        for sample in cases.samples
                    ]
                    rows.append({"role": role, "state": state.value, "direction": direction,
                                 "outcomes": outcomes})  # fmt: skip
        machines.append({"class": cls.__name__, "cases": rows,
                         "handlers": {role: {f.__name__: name for f, name in table.items()}
                                      for role, table in cls.HANDLERS.items()}})  # fmt: skip
    return {
        "protocol": proto.protocol,
        "version": proto.version,
        "frames": [
            {"class": type(s.frame).__name__, "hex": s.data.hex(), "sender": s.sender,
             "ctx": spell_ctx(proto, s.ctx)}
            for s in cases.samples
        ],  # fmt: skip
        "errors": [json.loads(e) for e in errors],
        "machines": machines,
    }


def all_cases() -> list[dict[str, Any]]:
    out = []
    for path in sorted((ROOT / "idl").glob("*/*.yaml")):
        proto = load_protocol(path, str(path.relative_to(ROOT)))
        out.append(version_cases(proto))
    return out


def main(argv: list[str]) -> None:
    text = json.dumps(all_cases(), separators=(",", ":"))
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
