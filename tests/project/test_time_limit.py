"""Every test has a time limit (pyproject.toml, ``[tool.pytest.ini_options]`` ``timeout``,
pytest-timeout): a test that waits forever fails with the stack of every thread, so a hang
in CI names its test and the wait instead of ending the whole run at CI's limit, and the
run goes on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NEVER_RETURNS = """
import threading


def test_waits_for_an_event_nobody_sets() -> None:
    threading.Event().wait()


def test_runs_after_it() -> None:
    pass
"""


def test_every_test_has_a_time_limit(request: pytest.FixtureRequest) -> None:
    config = request.config
    assert config.pluginmanager.hasplugin("timeout")
    assert 0 < float(config.getini("timeout")) <= 900  # well inside CI's 90 minutes
    # fails the test where it waits and keeps the worker (pyproject.toml says why)
    assert config.getini("timeout_method") == "signal"


def test_a_test_that_never_returns_fails_with_its_stack(tmp_path: Path) -> None:
    """The project's own settings (``-c pyproject.toml``), the limit cut to 2 s, in two
    worker processes as ``make test`` runs: the test fails, and the next one still runs."""
    (tmp_path / "test_hang.py").write_text(NEVER_RETURNS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "-o", "timeout=2",
         "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider", str(tmp_path / "test_hang.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "Timeout" in out, out
    assert "test_waits_for_an_event_nobody_sets" in out, out  # the stack names the wait
    assert "1 failed, 1 passed" in out, out  # once: its worker was not lost
