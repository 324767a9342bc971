"""The TypeScript side under pytest: `pytest` alone proves both languages.

Builds the npm workspaces (``tsc -b``: runtime/typescript, generated/typescript and
tests/typescript, strict) and runs each node:test suite of ``tests/typescript`` (one
pytest test per ``*.test.ts``), failing with the suite's own report. Needs Node >= 20
and the packages of package-lock.json (``make node-deps``, which ``make test`` and
``make pytest`` run; here ``npm ci`` is run when they are missing). Without Node the
tests skip, with the reason; under ``CI=true`` they fail instead (CI must run them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TS_TESTS = ROOT / "tests" / "typescript"
NODE_MAJOR = 20
TIMEOUT = 900  # seconds, for a build or one suite (the 2-core CI box included)

SUITES = sorted(
    path.relative_to(TS_TESTS)
    for path in TS_TESTS.rglob("*.test.ts")
    if "dist" not in path.relative_to(TS_TESTS).parts
)


def _missing(reason: str) -> None:
    """Skip with ``reason``; under ``CI=true`` fail instead (as the broker tests do)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the TypeScript tests must run)", pytrace=False)
    pytest.skip(reason)


def _run(args: list[str], what: str) -> None:
    """Run ``args`` in the repository root; fail with its output when it fails. The
    suites that start a Python server (requester.test.ts) use this interpreter unless
    WIRESTREAM_PYTHON says otherwise."""
    env = {"WIRESTREAM_PYTHON": sys.executable, **os.environ}
    done = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{output}", pytrace=False)


@pytest.fixture(scope="module")
def node() -> str:
    """The node executable, the packages installed and everything built (once)."""
    node = shutil.which("node")
    if node is None:
        _missing(f"node is not installed (Node >= {NODE_MAJOR} runs the TypeScript tests)")
        raise AssertionError  # unreachable: _missing skips or fails
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    found = re.match(r"v(\d+)\.", version)
    if found is None or int(found.group(1)) < NODE_MAJOR:
        _missing(f"node {version} is too old (the TypeScript tests need Node >= {NODE_MAJOR})")
    tsc = ROOT / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        npm = shutil.which("npm")
        if npm is None:
            _missing("npm is not installed (it installs the TypeScript packages: npm ci)")
            raise AssertionError
        _run([npm, "ci", "--no-audit", "--no-fund"], "npm ci")
    _run([node, str(tsc), "-b"], "tsc -b (runtime/, generated/ and tests/typescript)")
    return node


def test_typescript_suites_exist() -> None:
    assert SUITES, f"no *.test.ts under {TS_TESTS}"


@pytest.mark.parametrize("suite", SUITES, ids=[str(suite) for suite in SUITES])
def test_typescript_suite(node: str, suite: Path) -> None:
    """One node:test suite of tests/typescript, compiled to tests/typescript/dist."""
    compiled = TS_TESTS / "dist" / suite.with_suffix(".js")
    assert compiled.exists(), f"tsc -b did not write {compiled}"
    _run(
        [node, "--test", "--test-reporter=spec", str(compiled.relative_to(ROOT))],
        f"node --test {suite}",
    )
