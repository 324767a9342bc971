"""The Java test peers (tests/support/java/*: Maven projects built by ``make java-peers``).

``java_classpath("rsocket")`` builds every peer once (the Makefile's own rule: Maven
runs only when a pom or a source changed) and returns that peer's classpath,
``target/classes`` + ``target/lib/*``. Without Java or Maven the calling test FAILS with
what is missing (nothing skips), as the broker and TypeScript tests do.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["ROOT", "java_classpath", "missing"]

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD_TIMEOUT = 900  # seconds: a first build downloads ~55 MB into ~/.m2


def missing(reason: str) -> None:
    """Fail with ``reason`` and the way out: a missing Java peer is never a skip."""
    pytest.fail(
        f"{reason}\nThe Java interop tests need a JDK (17+) and Maven: install them "
        "(Debian: apt-get install default-jdk-headless maven).",
        pytrace=False,
    )


def java_classpath(peer: str) -> str:
    """The classpath of tests/support/java/<peer>, built (with every other peer) when stale."""
    for tool in ("java", "mvn", "make"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed (the Java interop tests need Java 17 + Maven)")
    folder = ROOT / "tests" / "support" / "java" / peer
    done = subprocess.run(["make", "-s", "java-peers"], cwd=ROOT, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT, check=False)  # fmt: skip
    if done.returncode != 0 or not (folder / "target" / ".built").exists():
        pytest.fail(f"make java-peers failed:\n{done.stdout}{done.stderr}", pytrace=False)
    return f"{folder / 'target' / 'classes'}:{folder / 'target' / 'lib' / '*'}"
