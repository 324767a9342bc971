"""The generated modules are code a reviewer would accept, and the codecs ship alone.

Every ``generated/**/*.py``: no imported name left unused (names listed in ``__all__``
are re-exports, so they count as used), no ``import *``, no line over black's limit
(docstrings included, and no ``# fmt: skip`` to carry one).  And the shipped package does
not need the test-only dependency: every codec, machines and runtime module imports with
hypothesis unavailable (only ``strategies.py`` needs it, the ``strategies`` extra).
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent.parent
GENERATED = ROOT / "generated"
LINE_LENGTH = 100  # [tool.black] line-length in pyproject.toml
MODULES = sorted(GENERATED.rglob("*.py"))


def _bound_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [(alias.asname or alias.name).partition(".")[0] for alias in node.names]
    return [alias.asname or alias.name for alias in node.names]


def _used_names(tree: ast.Module) -> set[str]:
    """Every name the module reads, in code and in (string) annotations."""
    used: set[str] = set()
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        for child in ast.walk(node):
            if isinstance(child, ast.Name):
                used.add(child.id)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                # a quoted annotation ("Frame | None") names what it uses in a string
                try:
                    pending.append(ast.parse(child.value, mode="eval"))
                except SyntaxError:
                    pass
    return used


def _exported(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_there_are_generated_modules() -> None:
    names = {p.name for p in MODULES}
    assert {"__init__.py", "machines.py", "spark.py", "strategies.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_no_unused_imports_and_no_star_imports(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = _used_names(tree) | _exported(tree)
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        for name in _bound_names(node):
            if name == "*":
                problems.append(f"line {node.lineno}: import *")
            elif name not in used:
                problems.append(f"line {node.lineno}: {name} is imported but never used")
    assert not problems, f"{_rel(path)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_lines_fit_black_limit_without_fmt_skip(path: Path) -> None:
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if len(line) > LINE_LENGTH:
            problems.append(f"line {number}: {len(line)} characters")
        if "fmt: skip" in line or "fmt: off" in line:
            problems.append(f"line {number}: black is told to leave it alone")
    assert not problems, f"{_rel(path)}:\n" + "\n".join(problems)


_BLOCK_HYPOTHESIS = """
import importlib, importlib.abc, sys

class NoHypothesis(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ImportError(f"{name} is blocked: the shipped package must not need it")
        return None

sys.meta_path.insert(0, NoHypothesis())
for name in sys.argv[1:]:
    importlib.import_module(name)
try:
    import hypothesis  # noqa: F401  (the block itself works)
except ImportError:
    pass
else:
    raise SystemExit("hypothesis was not blocked")
"""


def _shipped_modules() -> list[str]:
    """Every module of the package but ``strategies``: generated, runtime, codegen and apps
    (the Spark ones too when pyspark is installed: they need the spark extra, never
    hypothesis)."""
    spark = importlib.util.find_spec("pyspark") is not None
    folders = [GENERATED, ROOT / "runtime", ROOT / "codegen", ROOT / "wirestream" / "apps"]
    names = []
    for path in sorted(path for folder in folders for path in folder.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[0] == "wirestream":
            parts = parts[1:]
        if parts[-1] in ("strategies", "__main__") or ("spark" in parts and not spark):
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append("wirestream." + ".".join(parts))
    return names


def test_codecs_machines_and_runtime_import_without_hypothesis() -> None:
    modules = _shipped_modules()
    assert "wirestream.generated.rsocket.v1_0.machines" in modules
    assert "wirestream.runtime.capture.protocols" in modules
    assert "wirestream.apps.cli" in modules
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_HYPOTHESIS, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_strategies_say_they_need_the_extra() -> None:
    for path in GENERATED.rglob("strategies.py"):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert "wirestream[strategies]" in doc, _rel(path)


def test_fitting_long_lines_keeps_every_value_and_fits_them() -> None:
    """``codegen.tidy`` splits long literals (plain, f-strings with fields and escaped
    braces) and wraps long docstrings: the module still computes the same strings."""
    from wirestream.codegen.targets.python.render import format_python

    words = " ".join(f"word{n}" for n in range(40))
    source = (
        f'"""{words}"""\n\n'
        "import struct\n"
        "from typing import Any, Callable\n\n"
        f'PLAIN = "{words}"\n'
        f"def f(x: Any) -> str:\n"
        f'    """{words}\n\n    - {words}\n    """\n'
        f'    return f"{{{{literal}}}} {words} {{x!r}} {{len(str(x)) + 1}} {words} \\n end"\n\n'
        f'TABLE = {{"key": ("{words}", f"{words} {{PLAIN[:3]}}")}}\n'
    )
    fitted = format_python(source)
    assert all(len(line) <= LINE_LENGTH for line in fitted.splitlines()), fitted
    assert "import struct" not in fitted and "Callable" not in fitted

    def run(text: str) -> tuple[object, ...]:
        scope: dict[str, Any] = {}
        exec(compile(text, "m", "exec"), scope)
        doc = " ".join(str(scope["__doc__"]).split())
        fdoc = " ".join(str(scope["f"].__doc__).split())
        return doc, scope["PLAIN"], fdoc, scope["f"](12), scope["TABLE"]

    assert run(fitted) == run(source)
