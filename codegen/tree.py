"""Which files an IDL tree generates, and which of them each IDL file owns.

A protocol version (``idl/<protocol>/<version>.yaml``) is a *unit*: in every target its
files depend on its own IDL and, for ``PROTOCOL.md``, its predecessor's (``unit_files``).
The rest are *shared*: files that list every version (the Python package ``__init__``
files, the TypeScript package's manifests and README) and the TypeScript runtime a
standalone package carries (``shared_files``).  ``generate --only`` and the incremental
build (``incremental.py``) rely on this split: a unit's files are rendered from that unit
alone, so they can be rendered (and skipped) one unit at a time.
"""

from __future__ import annotations

import os

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.frontend.model import Protocol
from wirestream.codegen.targets.python.render import (
    render_docs,
    render_modules,
    render_package_init,
)
from wirestream.codegen.targets.typescript.codec import render_ts_version
from wirestream.codegen.targets.typescript.package import render_ts_package
from wirestream.codegen.targets.rust.render import DIR as RUST_DIR
from wirestream.codegen.targets.rust.render import render_rust, rust_owned
from wirestream.codegen.targets.wireshark.dissector import DIR as WIRESHARK_DIR
from wirestream.codegen.targets.wireshark.dissector import render_dissector

TARGETS: Final = ("python", "typescript", "wireshark")
# Not in ``all``: the Rust target needs rustfmt (a Rust toolchain) where Python, TypeScript
# and the dissectors need nothing, and it still refuses a construct the others spell (the xor
# transform: its decoded bytes are not a slice of the input), so a user's IDL that generates
# everything else would fail there; ``make generate`` asks for it by name.  Its cargo
# workspace is rendered whole (one manifest lists every crate).
EXTRA_TARGETS: Final = ("rust",)
# What a unit renders, target by target, in parts that depend on different inputs: the
# Python modules on the unit's IDL alone, PROTOCOL.md on its predecessor's too.
SHARED: Final = ("python", "typescript")  # the targets with files that list every unit
PARTS: Final = {
    "python": ("python", "docs"),
    "typescript": ("typescript",),
    "wireshark": ("wireshark",),
    "rust": (),
}
TS_DIR: Final = "typescript"  # the npm package's folder under --out
CHECKOUT: Final = Path(__file__).resolve().parent.parent  # a wirestream checkout, when run from one


@dataclass(frozen=True)
class Options:
    """What, besides the IDL, decides the generated text."""

    package: str  # the import name of --out (Python imports)
    standalone_ts: bool  # the TypeScript package builds outside this checkout


@dataclass(frozen=True)
class Unit:
    """One IDL file: ``idl/<protocol>/<version>.yaml``."""

    protocol: str
    version: str
    path: Path

    @property
    def name(self) -> str:
        return f"{self.protocol}/{self.version}"

    def owns(self, rel: str) -> bool:
        """Whether ``rel`` (a path under --out) is one of this unit's files in any target."""
        p, v = self.protocol, self.version
        return (rel.startswith(f"{p}/{v}/") or rel.startswith(f"{TS_DIR}/src/{p}/{v}/")
                or rel == f"{WIRESHARK_DIR}/{p}_{v}.lua")  # fmt: skip


def display_path(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def units(idl_dir: Path, only: str | None = None) -> list[Unit]:
    """The IDL files of the tree, or those ``only`` names (``protocol`` or
    ``protocol/version``); an ``only`` that names none is an error."""
    # (os.walk follows linked folders, as a user's idl/ may link a protocol in; rglob does not)
    paths = sorted(
        Path(folder, name)
        for folder, _, names in os.walk(idl_dir, followlinks=True)
        for name in names
        if name.endswith(".yaml")
    )
    found = [Unit(p.parent.name, p.stem, p) for p in paths if p.is_file()]
    if only is None:
        return found
    chosen = [u for u in found if only in (u.protocol, u.name)]
    if not chosen:
        raise IdlError(
            str(idl_dir), 0, "--only", f"no IDL file is {only!r} (idl/<protocol>/<version>.yaml)"
        )
    return chosen


def workspace_idl(idl_dir: Path) -> bool:
    """Whether ``idl_dir`` is the ``idl/`` of the wirestream checkout this runs from: its
    TypeScript package is then the npm workspace member ``generated/typescript`` (built
    against ``runtime/typescript`` by a project reference, wherever ``--out`` is, so that
    ``make check-generated`` compares like with like); any other IDL gets a standalone
    package that carries the runtime's sources and builds in its own folder."""
    own = CHECKOUT / "runtime" / "typescript" / "tsconfig.json"
    return own.is_file() and idl_dir.resolve() == (CHECKOUT / "idl").resolve()


def default_package(out: Path) -> str:
    """``--package``'s default: ``wirestream.generated`` for this checkout's ``generated/``
    (what ``make generate`` writes), else the folder name of ``out``."""
    if out.resolve() == (CHECKOUT / "generated").resolve() and workspace_idl(CHECKOUT / "idl"):
        return "wirestream.generated"
    return out.resolve().name


def load_unit(unit: Unit) -> Protocol:
    """The model of one IDL file, checked to sit at ``idl/<protocol>/<version>.yaml``."""
    proto = load_protocol(unit.path, display_path(unit.path))
    if (proto.protocol, proto.version) != (unit.protocol, unit.version):
        raise IdlError(proto.source, 1, "protocol/version",
                       f"the file must be idl/{proto.protocol}/{proto.version}.yaml "
                       f"to declare protocol {proto.protocol!r}, version {proto.version!r}")  # fmt: skip
    return proto


def parts(targets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part for target in targets for part in PARTS[target])


def unit_files(
    proto: Protocol, predecessor: Protocol | None, part: str, options: Options
) -> dict[str, str]:
    """One unit's files of ``part`` (``PARTS``): relative path under --out -> text.  Only
    ``docs`` reads ``predecessor``."""
    if part == "python":
        return render_modules(proto, options.package)
    if part == "docs":
        return render_docs(proto, options.package, predecessor)
    if part == "typescript":
        return {f"{TS_DIR}/{rel}": text for rel, text in render_ts_version(proto).items()}
    assert part == "wireshark", part
    return {f"{WIRESHARK_DIR}/{proto.protocol}_{proto.version}.lua": render_dissector(proto)}


@dataclass(frozen=True)
class Listing:
    """What the shared files say of one unit (kept by the incremental build, so the shared
    files are rendered without loading every IDL)."""

    protocol: str
    version: str
    title: str
    source: str


def shared_files(listings: list[Listing], target: str, options: Options) -> dict[str, str]:
    """The files that list every unit of the tree, in ``target``."""
    listings = sorted(listings, key=lambda x: (x.protocol, x.version))
    if target == "typescript":
        versions = [(x.protocol, x.version, x.title) for x in listings]
        package = render_ts_package(versions, options.standalone_ts)
        return {f"{TS_DIR}/{rel}": text for rel, text in package.items()}
    if target != "python":
        return {}
    files: dict[str, str] = {}
    protocols: dict[str, list[Listing]] = {}
    for x in listings:
        protocols.setdefault(x.protocol, []).append(x)
    for name, listed in sorted(protocols.items()):
        members = [(x.version, f"{x.title} (from {x.source})") for x in listed]
        files[f"{name}/__init__.py"] = render_package_init(f"Generated codecs of {name}.", members)
    members = [(name, ", ".join(x.version for x in listed)) for name, listed in sorted(protocols.items())]  # fmt: skip
    files["__init__.py"] = render_package_init("Generated protocol codecs (see idl/).", members)
    return files


def listing(proto: Protocol) -> Listing:
    return Listing(proto.protocol, proto.version, proto.title, proto.source)


def owned_files(out: Path, targets: tuple[str, ...]) -> list[str]:
    """What the generator owns under ``out`` (relative paths): Python modules and the
    Markdown docs; the npm package's sources, manifests and carried runtime (not its build
    output, ``dist/``, nor ``node_modules/``); the dissectors."""
    owned: list[Path] = []
    ts = out / TS_DIR
    if "python" in targets:
        # not under the npm package nor the cargo workspace (whose target/ holds cargo's
        # own files, e.g. the licence .md files of `cargo doc`)
        other = (ts, out / RUST_DIR)
        owned += [
            p
            for p in [*out.rglob("*.py"), *out.rglob("*.md")]
            if not any(o in p.parents for o in other)
        ]
    if "typescript" in targets and ts.is_dir():
        owned += [*(ts / "src").rglob("*.ts"), *(ts / "runtime" / "src").rglob("*.ts")]
        owned += [p for name in ("package.json", "tsconfig.json", "README.md")
                  for p in (ts / name, ts / "runtime" / name) if p.exists()]  # fmt: skip
    if "wireshark" in targets:
        owned += [*(out / WIRESHARK_DIR).glob("*.lua")]
    if "rust" in targets:
        owned += rust_owned(out / RUST_DIR)
    return sorted(p.relative_to(out).as_posix() for p in owned)


def owned_by(rel: str, only: str, protocols: set[str]) -> bool:
    """Whether ``rel`` belongs to ``only`` (``protocol`` or ``protocol/version``) -- also
    to a version whose IDL is gone, so that ``--only <protocol>`` removes a deleted
    version's files.  ``protocols``: every protocol of the tree (a dissector
    ``a_b_v1.lua`` is protocol ``a_b``'s when both ``a`` and ``a_b`` exist)."""
    name, _, version = only.partition("/")
    if version:
        return Unit(name, version, Path()).owns(rel)
    if rel.startswith(f"{name}/") and rel.count("/") >= 2:
        return True
    if rel.startswith(f"{TS_DIR}/src/{name}/"):
        return True
    if rel.startswith(f"{WIRESHARK_DIR}/{name}_"):
        longer = [
            p for p in protocols if len(p) > len(name) and rel.startswith(f"{WIRESHARK_DIR}/{p}_")
        ]
        return not longer
    return False


def render_tree(
    idl_dir: Path, targets: tuple[str, ...], options: Options, only: str | None = None
) -> dict[str, str]:
    """Every file the tree generates in ``targets`` (rendered, no cache): relative path ->
    text.  With ``only``, that protocol's (or version's) own files: the shared files list
    every unit, so they are the whole tree's business."""
    everything = units(idl_dir)
    chosen = units(idl_dir, only)
    protos = {u.name: load_unit(u) for u in (chosen if only is not None else everything)}
    files: dict[str, str] = {}
    for unit in chosen:
        proto = protos[unit.name]
        predecessor = predecessor_of(proto, everything, protos)
        for part in parts(targets):
            files.update(unit_files(proto, predecessor, part, options))
    if only is None:
        listings = [listing(p) for p in protos.values()]
        for target in targets:
            files.update(shared_files(listings, target, options))
    if "rust" in targets:
        rust = render_rust([protos[u.name] for u in chosen])
        files.update({f"{RUST_DIR}/{rel}": text for rel, text in rust.items()})
    return files


def predecessor_of(
    proto: Protocol, tree: list[Unit], loaded: dict[str, Protocol]
) -> Protocol | None:
    """The model of ``proto``'s predecessor when the tree has it.  It may not: one file
    generated alone is fine, and its docs say the notes are missing."""
    if proto.predecessor is None:
        return None
    name = f"{proto.protocol}/{proto.predecessor}"
    unit = next((u for u in tree if u.name == name), None)
    if unit is None:
        return None
    if name not in loaded:
        loaded[name] = load_unit(unit)
    return loaded[name]
