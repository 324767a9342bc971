"""The dispatch is typed: a generated ``bind_<role>`` takes the engine as the scope's
handler protocol, so ``mypy --strict`` refuses an engine with a handler missing or taking
another frame -- before any frame arrives, and without the engine's tests running.

Each case type-checks a tiny engine against ``wirestream.generated.rsio.v0``'s
``ConnectionMachine.bind_server`` (handlers ``on_connection_client_hello`` and
``on_connection_goodbye``): the complete one passes, one missing a handler or taking the
wrong frame fails, and mypy's error names the handler.  The last case removes a handler
from a copy of the rsio engine itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import ConnectionMachine

ROOT = Path(__file__).resolve().parents[2]

HEADER = """
from wirestream.generated.rsio.v0 import ClientHello, Goodbye, Subscribe
from wirestream.generated.rsio.v0.machines import ConnectionMachine


class Tiny:
"""
HELLO = """
    def on_connection_client_hello(self, frame: ClientHello, events: list[object]) -> None:
        events.append(frame)
"""
GOODBYE = """
    def on_connection_goodbye(self, frame: Goodbye, events: list[object]) -> None:
        events.append(frame)
"""
WRONG_GOODBYE = """
    def on_connection_goodbye(self, frame: Subscribe, events: list[object]) -> None:
        events.append(frame)
"""
BIND = """

bound = ConnectionMachine.bind_server(Tiny())
"""


# mypy runs no import hooks: it reads `wirestream` from the tree of tools/package_tree.sh,
# which spells setup.py's package map (as `make typecheck` does)
MYPY_ENV = {
    **os.environ,
    "MYPYPATH": subprocess.run([str(ROOT / "tools" / "package_tree.sh")], check=True,
                               capture_output=True, text=True).stdout.strip(),
}  # fmt: skip


def mypy(tmp_path: Path, source: str, name: str = "tiny.py") -> subprocess.CompletedProcess[str]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(tmp_path / ".mypy_cache"), str(path)],
        cwd=ROOT, capture_output=True, text=True, check=False, env=MYPY_ENV,
    )  # fmt: skip


def test_a_complete_engine_type_checks(tmp_path: Path) -> None:
    result = mypy(tmp_path, HEADER + HELLO + GOODBYE + BIND)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_missing_handler_fails_type_checking_and_is_named(tmp_path: Path) -> None:
    result = mypy(tmp_path, HEADER + HELLO + BIND)
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"Tiny" is missing following "ConnectionServerHandlers" protocol member' in (
        result.stdout
    )
    assert "on_connection_goodbye" in result.stdout


def test_a_handler_taking_another_frame_fails_type_checking(tmp_path: Path) -> None:
    result = mypy(tmp_path, HEADER + HELLO + WRONG_GOODBYE + BIND)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'expected "ConnectionServerHandlers"' in result.stdout
    assert "def on_connection_goodbye(self, frame: Subscribe" in result.stdout


def test_an_engine_missing_a_handler_fails_type_checking(tmp_path: Path) -> None:
    """The rsio engine, one handler deleted: mypy points at the engine's binding."""
    source = (ROOT / "runtime" / "rsio" / "engine.py").read_text(encoding="utf-8")
    alias = "    on_connection_client_hello = _on_hello\n"
    assert alias in source
    result = mypy(tmp_path, source.replace(alias, ""), "rsio_engine.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"RsioConnection" is missing following "ConnectionServerHandlers"' in result.stdout
    assert "on_connection_client_hello" in result.stdout


def test_the_binder_maps_each_frame_to_the_engines_method() -> None:
    """What the binder returns at run time: HANDLERS' frames, bound methods of ``h``."""

    class Recorder:
        def __init__(self) -> None:
            self.seen: list[object] = []

        def on_connection_client_hello(self, frame: rsio.ClientHello) -> None:
            self.seen.append(frame)

        def on_connection_goodbye(self, frame: rsio.Goodbye) -> None:
            self.seen.append(frame)

    recorder = Recorder()
    bound = ConnectionMachine.bind_server(recorder)
    assert set(bound) == set(ConnectionMachine.HANDLERS["server"])
    goodbye = rsio.Goodbye("bye")
    bound[rsio.Goodbye](goodbye)
    assert recorder.seen == [goodbye]
    with pytest.raises(AttributeError, match="on_connection_client_hello"):
        ConnectionMachine.bind_server(object())
