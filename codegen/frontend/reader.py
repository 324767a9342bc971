"""Reading checked values out of loaded YAML nodes (``loader.Mapping``/``Sequence``).

Every builder of the IDL model (``build.py`` for frames, ``build_machines.py`` for
machines) reads through one ``NodeReader``, so that every failure is reported the same
way: ``IdlError`` naming the file, the line and the key path.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.frontend.loader import Mapping, Sequence

LOWER = re.compile(r"^[a-z][a-z0-9_]*$")
PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")
UPPER = re.compile(r"^[A-Z][A-Z0-9_]*$")
PYTHON_KEYWORDS = {
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
    "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "match", "case", "type",
}  # fmt: skip


class NodeReader:
    """The checks shared by every part of one IDL file, each failing with its place."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, line: int, key: str, message: str) -> NoReturn:
        raise IdlError(self.source, line, key, message)

    def line_of(self, node: Any, key: Any = None) -> int:
        if isinstance(node, Mapping):
            if key is not None and key in node.key_lines:
                return node.key_lines[key]
            return node.line
        if isinstance(node, Sequence):
            if isinstance(key, int) and key < len(node.item_lines):
                return node.item_lines[key]
            return node.line
        return 0

    def mapping(self, node: Any, path: str, line: int) -> Mapping:
        if not isinstance(node, Mapping):
            self.fail(line, path, f"expected a mapping, got {type(node).__name__}")
        return node

    def sequence(self, node: Any, path: str, line: int) -> Sequence:
        if type(node) is list:  # a default supplied by the builder, not read from YAML
            seq = Sequence(node)
            seq.line, seq.item_lines = line, [line] * len(node)
            return seq
        if not isinstance(node, Sequence):
            self.fail(line, path, f"expected a list, got {type(node).__name__}")
        return node

    def keys(self, node: Mapping, path: str, allowed: set[str], required: set[str]) -> None:
        for key in node:
            if key not in allowed:
                names = ", ".join(sorted(allowed))
                self.fail(self.line_of(node, key), f"{path}.{key}".lstrip("."),
                          f"unknown key '{key}' (expected one of: {names})")  # fmt: skip
        for key in sorted(required):
            if key not in node:
                self.fail(node.line, f"{path}.{key}".lstrip("."), "missing required key")

    def name(self, value: Any, pattern: re.Pattern[str], style: str, line: int, path: str) -> str:
        if not isinstance(value, str) or not pattern.match(value):
            self.fail(line, path, f"'{value}' is not a {style} name")
        if style == "lower_snake" and value in PYTHON_KEYWORDS:
            self.fail(line, path, f"'{value}' is a Python keyword")
        return value

    def integer(self, value: Any, line: int, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(line, path, f"expected an integer, got {value!r}")
        return value

    def text(self, node: Mapping, key: str, path: str) -> str:
        value = node.get(key, "")
        if not isinstance(value, str):
            self.fail(self.line_of(node, key), f"{path}.{key}", "expected a string")
        return value.strip()
