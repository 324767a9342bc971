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

from tests.spec_rules import audit

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


# --- the seeds' normative statements (tests/spec_rules/audit.py) ----------------------


def test_every_normative_statement_of_the_seeds_has_a_row() -> None:
    """Every sentence of a seed with MUST / MUST NOT / SHOULD / SHOULD NOT / MAY / REQUIRED
    (extracted by ``python -m tests.spec_rules.audit SEEDS --write`` into
    seed_statements.json) is quoted, in the seed's own words, by a row of its table."""
    statements = audit.load()
    assert {s.seed for s in statements} >= {"000", "001", "002", "003"}
    unquoted = [f"{s.seed} L{s.line}: {s.text}" for s in audit.missing(statements)]
    assert not unquoted, "normative statements without a row:\n" + "\n".join(unquoted)


def test_the_audit_sees_a_statement_whose_row_is_gone() -> None:
    """The check above can fail: a statement no row quotes is reported."""
    statement = audit.Statement("003", 1, "A client MUST NOT send frames nobody has heard of")
    assert audit.missing([statement]) == [statement]
    quoted = next(s for s in audit.load() if s.seed == "003")
    assert audit.missing([quoted]) == []


@pytest.mark.parametrize("table", sorted(set(audit.TABLE_OF_SEED.values())))
def test_every_seed_row_has_a_test_or_a_stated_reason(table: str) -> None:
    """A row of a seed's table names a test, or says why there is none ("not
    implemented: <reason>")."""
    bare = []
    for line in (TESTS / "spec_rules" / f"{table}.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("| Rule |"):
            continue
        last = line.strip().strip("|").split(" | ")[-1].strip()
        if not REFERENCE.search(last) and not re.match(r"not implemented: \S", last):
            bare.append(line[:80])
    assert not bare, f"{table}.md rows with neither a test nor a reason: {bare}"
