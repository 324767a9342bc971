"""Render ``machines.ts``: the machines plan of one protocol version in TypeScript.

The plan (``machines_target.MachinesTarget``) is the one Python's ``machines.py`` is
rendered from; ``templates/typescript/machines.ts.j2`` spells it, with the few helpers
below for what TypeScript spells differently: attribute names in camelCase (the codec's
field names), string literals and doc comments, handler methods in camelCase
(``on_connection_request_n`` -> ``onConnectionRequestN``).  The tables run on
``StateMachine`` of ``@wirestream/runtime`` (``runtime/typescript/src/machine.ts``).
"""

from __future__ import annotations

from pathlib import Path

import json
import re
import textwrap


from wirestream.codegen.targets.jinja import environment
from wirestream.codegen.plan.machines import MachinesPlan, MachinesTarget
from wirestream.codegen.frontend.model import Protocol

__all__ = ["camel", "render_ts_machines", "ts_class", "ts_method"]

# The ECMAScript built-ins a class of that name would shadow in its module and in every
# module that imports it by name (RSocket's ERROR frame is `Error` in Python): such a
# frame class is `<Name>Frame` in TypeScript. Its messages keep the Python name (the
# class's static NAME), so errors read the same in both languages. DOM names (Request,
# Response) are not here: they exist in browsers only and no generated module uses them.
JS_BUILTINS: frozenset[str] = frozenset({
    "AggregateError", "Array", "ArrayBuffer", "Atomics", "BigInt", "Boolean", "DataView",
    "Date", "Error", "EvalError", "Function", "Iterator", "JSON", "Map", "Math", "Number",
    "Object", "Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set",
    "String", "Symbol", "SyntaxError", "TypeError", "URIError", "WeakMap", "WeakRef",
    "WeakSet",
})  # fmt: skip

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def camel(name: str) -> str:
    """An IDL snake_case name as the TypeScript codec's field: ``stream_id`` -> ``streamId``."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def ts_class(name: str) -> str:
    """A frame class's TypeScript name: its IDL (and Python) name unless that is a JS built-in."""
    return name + "Frame" if name in JS_BUILTINS else name


def ts_method(words: tuple[str, ...]) -> str:
    """A handler method from its words: ``("on", "connection", "setup")`` -> ``onConnectionSetup``."""
    return camel("_".join(words))


def ts_string(text: str) -> str:
    """A TypeScript string literal (JSON's spelling is valid ECMAScript since ES2019)."""
    return json.dumps(text, ensure_ascii=False)


def ts_key(name: str) -> str:
    """An object literal key: bare when it is an identifier, else quoted."""
    return name if _IDENTIFIER.match(name) else ts_string(name)


def ts_doc(text: str) -> str:
    """Text safe inside a ``/** ... */`` comment."""
    return text.replace("*/", "*\\/")


def wrap(text: str, width: int) -> list[str]:
    """Prose as comment lines of at most ``width`` characters; blank lines (paragraphs)
    are kept."""
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if lines:
            lines.append("")
        lines += textwrap.wrap(" ".join(paragraph.split()), width, break_on_hyphens=False) or [""]
    return lines


_ENV = environment(
    Path(__file__).parent / "templates",
    filters=dict(camel=camel, ts_class=ts_class, ts_method=ts_method, ts_string=ts_string,
                 ts_key=ts_key, ts_doc=ts_doc, wrap=wrap),
)  # fmt: skip


def runtime_imports(plan: MachinesPlan) -> list[str]:
    """The names ``machines.ts`` takes from ``@wirestream/runtime``: only those it uses
    (a project may compile generated code with ``noUnusedLocals``)."""
    kinds = {
        row.outcome.kind
        for machine in plan.machines
        for tables in (machine.send, machine.receive)
        for keys in tables.values()
        for key in keys
        for row in key.rows
    }
    names = ["ANY"] if plan.uses_any else []
    names += ["IGNORE"] if "ignore" in kinds else []
    names += ["Illegal"] if "error" in kinds else []
    names += ["StateMachine", "table"]
    if plan.machines:
        names += ["type BoundHandler", "type BoundHandlers"]
    names += ["type FrameClass", "type Handlers", "type Table"]
    return names


def render_ts_machines(proto: Protocol) -> str:
    """``src/<protocol>/<version>/machines.ts`` of the generated TypeScript package."""
    plan = MachinesTarget(proto).plan()
    return _ENV.get_template("machines.ts.j2").render(m=plan, runtime_imports=runtime_imports(plan))
