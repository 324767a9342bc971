"""Render planned modules with jinja2 and format them with black (deterministically)."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

from typing import Final

import black

from wirestream.codegen.targets.docs.protocol_md import render_protocol_md
from wirestream.codegen.targets.jinja import environment
from wirestream.codegen.plan.machines import MachinesTarget
from wirestream.codegen.frontend.model import Protocol
from wirestream.codegen.plan.codec import plan_codec
from wirestream.codegen.targets.python.codec import render_codec, render_strategies
from wirestream.codegen.targets.python.spark import SparkTarget
from wirestream.codegen.targets.cache_dir import TextMemo
from wirestream.codegen.targets.python import tidy
from wirestream.codegen.targets.python.tidy import LINE_LENGTH, drop_unused_imports, fit_long_lines

WIRESHARK_DIR: Final = "wireshark"  # the dissectors' folder under --out (target `wireshark`)


def py_doc(text: str) -> str:
    """Text safe inside a triple-quoted docstring (IDL docs are prose, not Python)."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return text + " " if text.endswith('"') else text


# py_repr: a Python literal (machine errors); py_doc: docstring text (handler docs).
_ENV = environment(Path(__file__).parent / "templates", filters={"py_repr": repr, "py_doc": py_doc})


def _black_whole(source: str) -> str:
    return black.format_str(source, mode=black.Mode(line_length=LINE_LENGTH))


# black dominates the generator's time: its results are kept by the hash of the source
# it formatted and of everything that decides how (black's version, this module, tidy.py),
# so a module whose rendered source did not change is not formatted again.
_SALT = (
    f"black {metadata.version('black')} {LINE_LENGTH}\0".encode()
    + Path(__file__).read_bytes()
    + Path(tidy.__file__).read_bytes()
)
_FORMATTED = TextMemo("format", _SALT)
_CHUNKS = TextMemo("format-chunk", _SALT)


def _black(source: str) -> str:
    """black on the whole module, one top-level definition at a time: black puts exactly
    two blank lines before a module-level ``def``/``class`` that follows another statement
    with only blank lines between (PEP 8; black's ``EmptyLineTracker``), and formats each
    statement by its own lines alone, so formatting the pieces and joining them so gives
    black's text for the whole (tests/codegen/test_python_format.py checks it on every
    generated module).  Each piece is kept in the cache, so a one-line edit of a large
    protocol formats one function, not its whole codec."""
    pieces = _pieces(source)
    if pieces is None:
        return _black_whole(source)  # black names the syntax error
    out = []
    for piece in pieces:
        formatted = _CHUNKS.get(piece)
        if formatted is None:
            formatted = _black_whole(piece)
            _CHUNKS.put(piece, formatted)
        out.append(formatted.strip("\n"))
    return "\n\n\n".join(p for p in out if p) + "\n"


def _pieces(source: str) -> list[str] | None:
    """``source`` cut before each module-level ``def``/``class`` (its decorators
    included) that only blank lines separate from the statement before it."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    starts = [0]
    for before, node in zip(body, body[1:]):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        assert before.end_lineno is not None
        if all(not line.strip() for line in lines[before.end_lineno : first]):
            starts.append(first)
    return ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)])]


def format_python(source: str) -> str:
    """Generated source as committed: the imports it uses, black-formatted (the mode of
    `make lint`), long strings and docstring lines fitted to the line length."""
    formatted = _FORMATTED.get(source)
    if formatted is None:
        formatted = fit_long_lines(_black(drop_unused_imports(source)), LINE_LENGTH, _black)
        _FORMATTED.put(source, formatted)
    return formatted


def render_protocol(proto: Protocol, package: str = "wirestream.generated",
                    predecessor: Protocol | None = None) -> dict[str, str]:  # fmt: skip
    """The files of ``<package>/<protocol>/<version>/``: relative path -> text.  With
    the model of the version's ``predecessor``, its ``PROTOCOL.md`` says what changed."""
    return {**render_modules(proto, package), **render_docs(proto, package, predecessor)}


def render_modules(proto: Protocol, package: str = "wirestream.generated") -> dict[str, str]:
    """The Python modules of one version (they depend on its IDL alone)."""
    plan = plan_codec(proto)
    codec = render_codec(plan)
    strategies = render_strategies(plan, package)
    machines_py = _ENV.get_template("machines.py.j2").render(m=MachinesTarget(proto).plan())
    base = f"{proto.protocol}/{proto.version}"
    return {
        f"{base}/__init__.py": format_python(codec),
        f"{base}/strategies.py": format_python(strategies),
        f"{base}/machines.py": format_python(machines_py),
        f"{base}/spark.py": render_spark(proto, package),
    }


def render_docs(proto: Protocol, package: str = "wirestream.generated",
                predecessor: Protocol | None = None) -> dict[str, str]:  # fmt: skip
    """``PROTOCOL.md`` of one version (it also depends on the predecessor's IDL)."""
    docs = render_protocol_md(proto, MachinesTarget(proto).plan(), package, predecessor,
                              dissector=f"{WIRESHARK_DIR}/{proto.protocol}_{proto.version}.lua")  # fmt: skip
    return {f"{proto.protocol}/{proto.version}/PROTOCOL.md": docs}


def render_spark(proto: Protocol, package: str = "wirestream.generated") -> str:
    """``spark.py``: the Spark schemas and frame-log converter (imports pyspark)."""
    module = SparkTarget(proto).plan()
    return format_python(_ENV.get_template("spark.py.j2").render(m=module, package=package))


def render_package_init(title: str, members: list[tuple[str, str]]) -> str:
    """An ``__init__.py`` for a package of generated packages (the root or a protocol)."""
    lines = [
        "# Generated by wirestream codegen -- do not edit.",
        f'"""{title}',
        "",
        *[f"- ``{name}``: {text}" for name, text in members],
        '"""',
        "",
    ]
    return format_python("\n".join(lines))
