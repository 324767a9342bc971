"""``generate`` without rendering what cannot have changed: a content-hash manifest.

Rendering is slow (black formats every Python module), so ``generate`` keeps, in
``<out>/.wirestream-cache.json`` (git-ignored), for every unit and part (``tree.PARTS``)
the hash of everything its files are rendered from and the hash of each file it wrote:

- the generator: the codegen modules and templates that render the part (its renderer's
  imports, followed through ``codegen/``, and the loader's; ``generator_hash``), the
  TypeScript runtime a standalone package carries, and the versions of black, jinja2
  and PyYAML (so an edit of the Wireshark target re-renders no Python);
- the options (``--package``, standalone TypeScript or not) and the part;
- the unit's IDL text and its path as shown (``source``: the files name it);
- for ``docs`` only, the predecessor's IDL text and path (``PROTOCOL.md`` compares the
  two), or that the tree has none.

A part is rendered again unless that hash is the recorded one *and* every file it wrote is
on disk with the recorded content (so a file edited or deleted by hand is repaired); the
shared files are keyed the same way by what they list (protocol, version, title, source
of every unit).  The predecessor and title of a unit are recorded too: they come from its
IDL text, so they are known without parsing while that text is unchanged.

``check`` never uses the manifest: it renders (``tree.render_tree``) and compares.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from collections.abc import Collection
from typing import Any, Final

from wirestream.codegen.frontend.model import Protocol
from wirestream.codegen.targets.typescript.package import RUNTIME_SOURCES
from wirestream.codegen.tree import (
    SHARED,
    Listing,
    Options,
    Unit,
    display_path,
    load_unit,
    owned_by,
    owned_files,
    parts,
    predecessor_of,
    shared_files,
    unit_files,
    units,
)

CACHE: Final = ".wirestream-cache.json"
FORMAT: Final = 1  # of the manifest: another number discards it
CODEGEN: Final = Path(__file__).resolve().parent


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


# The modules that render each part (``tree.PARTS``) and the shared files of a target;
# every key also holds the loader's (``frontend/build.py``: the model every part renders
# from) and ``tree.py``'s own text (it names the files).
ROOTS: Final = {
    "python": "targets/python/render.py",
    "docs": "targets/python/render.py",
    "typescript": "targets/typescript/codec.py",
    "wireshark": "targets/wireshark/dissector.py",
    "shared python": "targets/python/render.py",
    "shared typescript": "targets/typescript/package.py",
}
_IMPORT = re.compile(r"^\s*from wirestream\.codegen((?:\.\w+)*) import (\([^)]*\)|[^\n]*)", re.M)


def generator_hash(part: str) -> str:
    """What of the generator decides ``part``'s text: the codegen modules its renderer
    imports, directly or not (and their packages' ``__init__``), with the templates beside
    them, ``tree.py``, the TypeScript runtime a standalone package carries, and the
    versions of black, jinja2 and PyYAML."""
    digest = hashlib.sha256()
    sources = _closure([CODEGEN / ROOTS[part], CODEGEN / "frontend" / "build.py"])
    sources.add(CODEGEN / "tree.py")
    for folder in {p.parent / "templates" for p in sources}:
        sources.update(folder.glob("*.j2"))
    if part == "shared typescript":
        sources.update(p for p in RUNTIME_SOURCES.rglob("*") if p.is_file()
                       and p.suffix in (".ts", ".json") and "dist" not in p.parts
                       and "node_modules" not in p.parts)  # fmt: skip
    # named (and ordered) relative to their folder, so that any copy hashes alike wherever
    # it lies beside the runtime's sources
    named = {}
    for path in sources:
        base = RUNTIME_SOURCES if path.is_relative_to(RUNTIME_SOURCES) else CODEGEN
        named[f"{base.name}/{path.relative_to(base).as_posix()}"] = path
    for name, path in sorted(named.items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in ("black", "jinja2", "pyyaml"):
        digest.update(f"{name}=={metadata.version(name)}\0".encode())
    return digest.hexdigest()


def _closure(roots: list[Path]) -> set[Path]:
    """``roots`` and every codegen module they import (``from wirestream.codegen.X import
    Y``: module ``X.Y`` when it exists, else ``X``), with each package's ``__init__``."""
    found: set[Path] = set()
    todo = list(roots)
    while todo:
        path = todo.pop()
        if path in found or not path.is_file():
            continue
        found.add(path)
        for folder in path.relative_to(CODEGEN).parents:
            todo.append(CODEGEN / folder / "__init__.py")
        for match in _IMPORT.finditer(path.read_text(encoding="utf-8")):
            base = CODEGEN.joinpath(*match.group(1).split(".")[1:])
            names = re.findall(r"\w+", match.group(2))
            for candidate in [base.with_suffix(".py"), base / "__init__.py",
                              *(base / f"{name}.py" for name in names),
                              *(base / name / "__init__.py" for name in names)]:  # fmt: skip
                if candidate.is_file():
                    todo.append(candidate)
    return found


@dataclass
class Report:
    rendered: list[str] = field(default_factory=list)  # "<unit> <part>" or "shared <target>"
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    files: int = 0  # the files the tree generates (under ``only``: that part of it)


def generate(
    idl_dir: Path,
    out: Path,
    targets: tuple[str, ...],
    options: Options,
    only: str | None = None,
    use_cache: bool = True,
) -> Report:
    """Bring ``out`` to what the tree generates, rendering only what changed (``only``:
    that protocol or version alone; the shared files and other protocols' are left as
    they are)."""
    tree = units(idl_dir)
    chosen = units(idl_dir, only)
    old = _read_manifest(out / CACHE) if use_cache else {}
    gen = {part: generator_hash(part) for part in [*parts(targets), *(f"shared {t}" for t in targets if t in SHARED)]}  # fmt: skip
    texts = {u.name: _sha(u.path.read_bytes()) for u in tree}
    loaded: dict[str, Protocol] = {}
    report = Report()
    expected: dict[str, str] = {}  # every file that must be there: rel -> sha
    to_write: dict[str, str] = {}
    new_units: dict[str, Any] = {
        name: entry for name, entry in old.get("units", {}).items() if only is not None
    }
    listings: list[Listing] = []

    def proto(unit: Unit) -> Protocol:
        if unit.name not in loaded:
            loaded[unit.name] = load_unit(unit)
        return loaded[unit.name]

    for unit in tree:
        entry = old.get("units", {}).get(unit.name, {})
        if entry.get("text") != texts[unit.name]:
            p = proto(unit)  # its text changed (or is new): parse it, the only way to know
            entry = {"text": texts[unit.name], "predecessor": p.predecessor, "title": p.title, "parts": {}}  # fmt: skip
        source = display_path(unit.path)
        listings.append(Listing(unit.protocol, unit.version, entry["title"], source))
        if unit not in chosen:
            continue
        entry = {**entry, "parts": dict(entry["parts"])}
        pred = _unit(tree, unit.protocol, entry["predecessor"])
        pred_key = [display_path(pred.path), texts[pred.name]] if pred else None
        for part in parts(targets):
            key = _sha(json.dumps([FORMAT, gen[part], part, _options_key(part, options), source,
                                   texts[unit.name], pred_key if part == "docs" else None]))  # fmt: skip
            recorded = entry["parts"].get(part, {})
            if recorded.get("key") == key and _on_disk(out, recorded["files"]):
                expected.update(recorded["files"])
                continue
            p = proto(unit)
            files = unit_files(p, predecessor_of(p, tree, loaded), part, options)
            report.rendered.append(f"{unit.name} {part}")
            to_write.update(files)
            hashes = {rel: _sha(text) for rel, text in files.items()}
            expected.update(hashes)
            entry["parts"][part] = {"key": key, "files": hashes}
        new_units[unit.name] = entry

    new_shared: dict[str, Any] = dict(old.get("shared", {})) if only is not None else {}
    if only is None:
        for target in [t for t in targets if t in SHARED]:
            key = _sha(json.dumps([FORMAT, gen[f"shared {target}"], target, _options_key(target, options),
                                   sorted([x.protocol, x.version, x.title, x.source] for x in listings)]))  # fmt: skip
            recorded = old.get("shared", {}).get(target, {})
            if recorded.get("key") == key and _on_disk(out, recorded["files"]):
                expected.update(recorded["files"])
                new_shared[target] = recorded
                continue
            files = shared_files(listings, target, options)
            report.rendered.append(f"shared {target}")
            to_write.update(files)
            hashes = {rel: _sha(text) for rel, text in files.items()}
            expected.update(hashes)
            new_shared[target] = {"key": key, "files": hashes}

    report.written = write_changed(out, to_write)
    report.removed = remove_stale(out, targets, expected, only, {u.protocol for u in tree})
    report.files = len(expected)
    manifest = {"format": FORMAT, "units": new_units, "shared": new_shared}
    if use_cache:
        _write_manifest(out / CACHE, manifest)
    return report


def write_changed(out: Path, files: dict[str, str]) -> list[str]:
    """Write ``files`` (relative to ``out``) whose text differs from what is there: the
    paths written."""
    written = []
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(rel)
    return written


def remove_stale(out: Path, targets: tuple[str, ...], expected: Collection[str],
                 only: str | None, protocols: set[str]) -> list[str]:  # fmt: skip
    """Remove the generated files of ``targets`` that are not ``expected`` (their IDL is
    gone), so the tree mirrors idl/ exactly; with ``only``, that protocol's files only."""
    removed = []
    for rel in owned_files(out, targets):
        if rel in expected or (only is not None and not owned_by(rel, only, protocols)):
            continue
        (out / rel).unlink()
        removed.append(rel)
    return removed


def _unit(tree: list[Unit], protocol: str, version: str | None) -> Unit | None:
    return next((u for u in tree if (u.protocol, u.version) == (protocol, version)), None)


def _options_key(part: str, options: Options) -> list[object]:
    """The options a part's text depends on."""
    if part in ("python", "docs"):
        return [options.package]
    if part == "typescript":
        return [options.standalone_ts]
    return []


def _on_disk(out: Path, hashes: dict[str, str]) -> bool:
    for rel, sha in hashes.items():
        path = out / rel
        if not path.is_file() or _sha(path.read_bytes()) != sha:
            return False
    return True


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
