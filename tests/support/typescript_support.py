"""What the tests that run TypeScript share: finding Node, installing the packages of
package-lock.json, building the workspaces, and running a command with its output kept.

Without Node the tests FAIL with what is missing (nothing skips), as the broker tests do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
NODE_MAJOR = 20
TIMEOUT = 900  # seconds, for a build or one suite (the 2-core CI box included)
TSC = ROOT / "node_modules" / ".bin" / "tsc"


def missing(reason: str) -> None:
    """Fail with ``reason`` and the way out: a missing Node is never a skip."""
    pytest.fail(
        f"{reason}\nThe TypeScript tests need Node >= {NODE_MAJOR} with npm: install them "
        "(Debian: apt-get install nodejs npm; or nodejs.org).",
        pytrace=False,
    )


def run(args: list[str], what: str, cwd: Path = ROOT) -> str:
    """Run ``args``; its stdout, or fail with its output when it fails. What it starts
    runs Python (e.g. requester.test.ts starts `wirestream rsocket serve`) with this
    interpreter unless WIRESTREAM_PYTHON says otherwise."""
    env = {"WIRESTREAM_PYTHON": sys.executable, **os.environ}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          check=False, env=env)  # fmt: skip
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{output}", pytrace=False)
    return done.stdout


@pytest.fixture(scope="session")
def node() -> str:
    """The node executable, the packages installed and everything built (once)."""
    node = shutil.which("node")
    if node is None:
        missing(f"node is not installed (Node >= {NODE_MAJOR} runs the TypeScript tests)")
        raise AssertionError  # unreachable: missing fails
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    found = re.match(r"v(\d+)\.", version)
    if found is None or int(found.group(1)) < NODE_MAJOR:
        missing(f"node {version} is too old (the TypeScript tests need Node >= {NODE_MAJOR})")
    if not TSC.exists():
        npm = shutil.which("npm")
        if npm is None:
            missing("npm is not installed (it installs the TypeScript packages: npm ci)")
            raise AssertionError
        run([npm, "ci", "--no-audit", "--no-fund"], "npm ci")
    run([node, str(TSC), "-b"], "tsc -b (runtime/, generated/ and tests/typescript)")
    return node
