"""The TypeScript package around the generated modules: ``package.json``, ``tsconfig.json``
and ``README.md``, and -- for a standalone package -- the runtime it builds against.

This repository's own package (``generated/typescript``) is an npm workspace member that
builds against ``runtime/typescript`` by a project reference.  A standalone package (an IDL
outside this repository) refers to nothing outside its folder: the runtime's sources come
with it in ``runtime/`` (copied from the installed wirestream, which ships them), its
``package.json`` depends on them as ``file:runtime`` (so ``npm install`` links
``node_modules/@wirestream/runtime`` to that folder and installs the runtime's own
dependency, ``@msgpack/msgpack``) and its ``tsconfig.json`` references that folder, so
``npm run build`` (``tsc -b``) builds both, the runtime first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from wirestream.codegen.targets.jinja import environment

PACKAGE: Final = "@wirestream/generated"
RUNTIME: Final = "@wirestream/runtime"
TYPESCRIPT: Final = "5.9.3"  # the compiler a standalone package builds with (this repository's)
# The hand-written runtime: runtime/typescript in a checkout, wirestream/runtime/typescript
# in the wheel (package data); both sit beside codegen/.
RUNTIME_SOURCES: Final = Path(__file__).resolve().parents[3] / "runtime" / "typescript"
RUNTIME_DIR: Final = "runtime"  # its folder in a standalone package

_ENV = environment(Path(__file__).parent / "templates")


def runtime_files() -> dict[str, str]:
    """The runtime package's sources and manifests, as a standalone package carries them."""
    paths = [RUNTIME_SOURCES / "package.json", RUNTIME_SOURCES / "tsconfig.json",
             *sorted((RUNTIME_SOURCES / "src").glob("*.ts"))]  # fmt: skip
    missing = [p for p in paths if not p.is_file()]
    if missing or len(paths) == 2:
        raise FileNotFoundError(
            f"the TypeScript runtime's sources are not installed: {RUNTIME_SOURCES}"
        )
    return {f"{RUNTIME_DIR}/{p.relative_to(RUNTIME_SOURCES).as_posix()}": p.read_text(encoding="utf-8")
            for p in paths}  # fmt: skip


def render_ts_package(versions: list[tuple[str, str, str]], standalone: bool) -> dict[str, str]:
    """``package.json``, ``tsconfig.json`` and ``README.md`` over ``versions`` (protocol,
    version, title), and a standalone package's runtime: relative path -> text."""
    files = {
        name: _ENV.get_template(name + ".j2").render(
            versions=versions, package=PACKAGE, runtime=RUNTIME, standalone=standalone,
            typescript=TYPESCRIPT, runtime_dir=RUNTIME_DIR,
        )
        for name in ("package.json", "tsconfig.json", "README.md")
    }  # fmt: skip
    if standalone:
        files.update(runtime_files())
    return files
