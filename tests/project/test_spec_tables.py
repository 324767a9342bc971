"""The spec-passage -> test tables in tests/spec_rules/*.md stay true.

Each table row names a rule, quotes its passage and names the test(s) proving it as
``tests/<group>/test_x.py::test_name`` (several separated by ``<br>`` or ``, ``).  This test
fails when a named test does not exist, so the tables cannot drift from the suite.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).parent.parent
TABLES = sorted((TESTS / "spec_rules").glob("*.md"))
REFERENCE = re.compile(r"(tests/(?:[a-z0-9_]+/)?test_[a-z0-9_]+\.py)::(test_[A-Za-z0-9_]+)")


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test_"
        ):
            names.add(node.name)
    return names


def test_there_is_a_table_per_protocol_family() -> None:
    assert {p.stem for p in TABLES} >= {"rsocket", "rsio", "bpmux", "rabbitmq_stream"}


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.stem)
def test_every_test_named_in_the_table_exists(table: Path) -> None:
    text = table.read_text(encoding="utf-8")
    references = REFERENCE.findall(text)
    assert references, f"{table} names no tests"
    cache: dict[str, set[str]] = {}
    missing = []
    for file, name in references:
        path = TESTS.parent / file
        if file not in cache:
            cache[file] = _test_names(path) if path.exists() else set()
        if name not in cache[file]:
            missing.append(f"{file}::{name}")
    assert not missing, f"{table.name} names tests that do not exist: {missing}"
