"""The TypeScript side under pytest: `pytest` alone proves both languages.

Builds the npm workspaces (``tsc -b``: runtime/typescript, generated/typescript and
tests/typescript, strict) and runs each node:test suite of ``tests/typescript`` (one
pytest test per ``*.test.ts``), failing with the suite's own report. Needs Node >= 20
and the packages of package-lock.json (``make node-deps``, which ``make test`` and
``make pytest`` run; the ``node`` fixture runs ``npm ci`` when they are missing).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.typescript_support import ROOT, run

TS_TESTS = ROOT / "tests" / "typescript"

# corpus.test.ts needs the corpus Python writes: tests/crosslang/test_crosslang.py runs it.
SUITES = sorted(
    path.relative_to(TS_TESTS)
    for path in TS_TESTS.rglob("*.test.ts")
    if "dist" not in path.relative_to(TS_TESTS).parts and path.name != "corpus.test.ts"
)


def test_typescript_suites_exist() -> None:
    assert SUITES, f"no *.test.ts under {TS_TESTS}"


@pytest.mark.parametrize("suite", SUITES, ids=[str(suite) for suite in SUITES])
def test_typescript_suite(node: str, suite: Path) -> None:
    """One node:test suite of tests/typescript, compiled to tests/typescript/dist."""
    compiled = TS_TESTS / "dist" / suite.with_suffix(".js")
    assert compiled.exists(), f"tsc -b did not write {compiled}"
    run(
        [node, "--test", "--test-reporter=spec", str(compiled.relative_to(ROOT))],
        f"node --test {suite}",
    )


# @wirestream/rsocket: its main entry runs in browsers too; only its Node entry
# (`@wirestream/rsocket/node`: TCP, the `ws` WebSocket server) imports Node modules.
RSOCKET_SRC = "runtime/typescript/rsocket/src"
# The `/node` entry, and what only it imports (frame capture writes files): nothing else
# may import these (checked below), so the browser entry never reaches a `node:` module.
NODE_ENTRIES = {f"{RSOCKET_SRC}/node.ts", f"{RSOCKET_SRC}/capture.ts"}


def test_the_packages_use_no_any_and_no_node_only_api() -> None:
    """The issue's rules for what users import: no `any` (tsc --strict does not refuse an
    explicit one), and nothing Node-only (they run in browsers: their tsconfigs load no
    Node types, so `Buffer` would not compile; imports of `node:` modules are checked
    here)."""
    found = []
    folders = ("runtime/typescript/src", "generated/typescript/src", RSOCKET_SRC)
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.ts")):
            node_entry = path.relative_to(ROOT).as_posix() in NODE_ENTRIES
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.lstrip().startswith(("*", "/*", "//")):
                    continue  # documentation
                code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split("//")[0])
                # imports are matched on the line as written (`code` has strings blanked)
                imported = re.search(
                    r"""from\s+["'](node:|buffer["']|ws["']|\./capture\.js["'])""", line
                )
                if re.search(r":\s*any\b|\bas any\b|<any>|\bany\[\]", code) or (
                    imported and not node_entry
                ):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
