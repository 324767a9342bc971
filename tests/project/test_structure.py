"""The package's shape: no import circles, and one error tree for every protocol.

An import circle is two modules that need each other (directly or around a ring),
counting imports made inside functions and under ``TYPE_CHECKING`` too: those only hide
the circle from Python's import order, not from a reader.  ``from pkg import submodule``
is an edge to the submodule, not to the package's ``__init__``.
"""

from __future__ import annotations

import ast
import subprocess
import asyncio
from pathlib import Path

import pytest

from wirestream.runtime import errors
from wirestream.runtime.aio import StreamCancelled
from wirestream.runtime.bpmux import BpmuxApplicationError
from wirestream.runtime.rsio import errors as rsio_errors
from wirestream.runtime.rsocket import errors as rsocket_errors

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = {"codegen": "wirestream.codegen", "runtime": "wirestream.runtime",
            "wirestream/apps": "wirestream.apps"}  # fmt: skip

KNOWN_CIRCLES: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            submodules = {f"{base}.{alias.name}" for alias in node.names}
            submodules &= modules.keys()
            targets.update(submodules)
            if len(submodules) < len(node.names):
                targets.add(base)
    return {target for target in targets if target in modules and target != name}


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    circles = set(_circles(graph))
    assert not circles - KNOWN_CIRCLES, [sorted(circle) for circle in circles - KNOWN_CIRCLES]
    assert not KNOWN_CIRCLES - circles, "a known circle is gone: drop it from KNOWN_CIRCLES"


def test_one_stream_error_for_every_protocol() -> None:
    """``except wirestream.runtime.errors.StreamError`` catches each protocol's."""
    assert rsio_errors.StreamError is errors.StreamError
    assert issubclass(rsocket_errors.RSocketStreamError, errors.StreamError)
    assert issubclass(rsocket_errors.ApplicationError, errors.StreamError)
    error = rsocket_errors.RSocketStreamError(0x201, "boom")
    assert (error.error_code, error.message, str(error)) == (0x201, "boom", "boom")
    assert rsio_errors.StreamError("gone").message == "gone"
    # BPMUX's error answer (ResponseError / InnerError payload) is one too
    assert issubclass(BpmuxApplicationError, errors.StreamError)
    assert BpmuxApplicationError(b"no").message == "no"


def test_one_reassembly_limit_error() -> None:
    assert rsocket_errors.ReassemblyLimitExceeded is errors.ReassemblyLimitExceeded
    assert rsio_errors.ReassemblyLimitExceeded is errors.ReassemblyLimitExceeded


def test_stream_cancelled_is_a_protocol_error_not_a_task_cancellation() -> None:
    assert StreamCancelled is errors.StreamCancelled
    assert issubclass(StreamCancelled, errors.ProtocolError)
    # a cancellation breaks no rule, and cancels no task
    assert not issubclass(StreamCancelled, errors.LocalProtocolError)
    assert not issubclass(StreamCancelled, errors.RemoteProtocolError)
    assert not issubclass(StreamCancelled, asyncio.CancelledError)


def test_the_library_does_not_import_the_applications() -> None:
    """wirestream.apps (the command, the demo, the ticker) sits on the library: arrows
    point from the applications to codegen and runtime, never back."""
    modules = _modules()
    wrong = {
        (name, target)
        for name, path in modules.items()
        if not name.startswith("wirestream.apps")
        for target in _imports(name, path, modules)
        if target.startswith("wirestream.apps")
    }
    assert wrong == set()


@pytest.mark.parametrize("protocol", ["rsocket", "rsio", "bpmux", "rabbitmq_stream"])
def test_every_protocol_package_has_the_same_files(protocol: str) -> None:
    """The sans-I/O engine, the asyncio peer, the events and the errors of a protocol
    are in files of the same names in every protocol package."""
    package = ROOT / "runtime" / protocol
    for expected in ("engine.py", "events.py", "errors.py"):
        assert (package / expected).is_file(), f"runtime/{protocol}/{expected}"
    assert (package / "aio.py").is_file() or (package / "aio" / "__init__.py").is_file()


# The compiler's rooms, in the order a protocol passes through them: each stage imports
# only the stages before it (the CLI, codegen's own entry, may import all of them).
CODEGEN_STAGES = ["frontend", "plan", "diff", "targets"]


def test_codegen_stages_import_only_earlier_stages() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        parts = name.split(".")
        if parts[:2] != ["wirestream", "codegen"] or len(parts) < 4:
            continue
        stage = CODEGEN_STAGES.index(parts[2])
        for target in _imports(name, path, modules):
            tparts = target.split(".")
            if tparts[:2] == ["wirestream", "codegen"] and len(tparts) > 2:
                if tparts[2] not in CODEGEN_STAGES or CODEGEN_STAGES.index(tparts[2]) > stage:
                    wrong.append(f"{name} -> {target}")
    assert not wrong


def test_the_checkout_has_no_links() -> None:
    """One path per file: the import names map onto the top-level folders (setup.py), so
    tracebacks, grep and checkouts on systems without links see each file once."""
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, check=True, text=True,
                            capture_output=True).stdout.splitlines()  # fmt: skip
    links = [line.split("\t", 1)[1] for line in listed if line.startswith("120000")]
    assert links == []


# Engines split by scope (h2's H2Connection / H2Stream): a reader holds one part at a time.
MAX_CLASS_LINES = 600
MAX_MODULE_LINES = 800


def test_no_runtime_class_or_module_is_too_long() -> None:
    long = []
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    long.append(f"{rel}: class {node.name}, {size} lines")
    assert not long


def test_no_two_public_classes_share_a_name() -> None:
    """A name in the public API means one class: ``ConnectionClosed`` is RSocket's, and
    the other protocols' say whose they are (``RsioConnectionClosed``,
    ``BrokerConnectionClosed``...), so a reader, an import or the API reference never
    has to guess which one is meant."""
    owners: dict[str, list[str]] = {}
    for name, path in _modules().items():
        if not name.startswith("wirestream.runtime."):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                owners.setdefault(node.name, []).append(name)
    shared = {cls: mods for cls, mods in owners.items() if len(mods) > 1}
    assert not shared, shared
