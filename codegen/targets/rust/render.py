"""The Rust target's output as a whole: the cargo workspace ``<out>/rust`` (one crate per
protocol version the target spells, ``codec``; the corpus runner, ``corpus``; the workspace
manifest and the pinned toolchain)."""

from __future__ import annotations

import sys
from pathlib import Path

from wirestream.codegen.frontend.model import Protocol
from wirestream.codegen.plan.codec import plan_codec
from wirestream.codegen.plan.machines import MachinesTarget
from wirestream.codegen.targets.rust.codec import (
    _ENV,
    EDITION,
    RUNTIME_CRATE,
    TOOLCHAIN,
    Refused,
    Spell,
    crate_name,
    render_crate,
    rustfmt,
)
from wirestream.codegen.targets.rust.corpus import render_corpus
from wirestream.codegen.targets.rust.frame_log import DIR as FRAME_LOG_DIR
from wirestream.codegen.targets.rust.frame_log import render_frame_log
from wirestream.codegen.targets.rust.fuzz import render_fuzz
from wirestream.codegen.targets.rust.machines import render_machines
from wirestream.codegen.targets.rust.owned import render_owned
from wirestream.codegen.targets.rust.py_pack import DIR as PY_PACK_DIR
from wirestream.codegen.targets.rust.py_pack import render_py_pack

DIR = "rust"  # the cargo workspace's folder under --out


def rust_owned(root: Path) -> list[Path]:
    """What the generator owns under ``<out>/rust``: manifests and sources (not the build
    output ``target/``, nor ``Cargo.lock``, which cargo writes and the repository commits)."""
    if not root.is_dir():
        return []
    owned = [
        root / name for name in ("Cargo.toml", "rust-toolchain.toml") if (root / name).exists()
    ]
    for crate in sorted(p for p in root.iterdir() if (p / "Cargo.toml").is_file()):
        owned += [crate / "Cargo.toml", *(crate / "src").rglob("*.rs")]
    for modules in (FRAME_LOG_DIR, PY_PACK_DIR):
        if (root / modules).is_dir():
            owned += sorted((root / modules).glob("*.rs"))
    return owned


def render_rust(protos: list[Protocol], log: bool = True) -> dict[str, str]:
    """The files of ``generated/rust/``: one crate per protocol version the target spells.

    A version using a construct the target does not spell yet is left out, and the
    workspace manifest (and stderr, unless not ``log``) says which construct; when no version
    can be spelled, the first refusal is raised (``NotImplementedError``)."""
    files: dict[str, str] = {}
    if not protos:
        return files  # an empty tree: no workspace
    members = []
    refused: list[str] = []
    native_refused: list[str] = []
    for proto in protos:
        plan = plan_codec(proto)
        folder = f"{plan.protocol}_{plan.version}"
        machines_plan = MachinesTarget(proto).plan()
        try:
            crate = render_crate(plan, render_machines(plan, machines_plan))
            crate["src/owned.rs"] = rustfmt(render_owned(Spell(plan)))
        except Refused as error:
            if len(protos) == 1:
                raise
            refused.append(str(error))
            if log:
                print(f"{error}: not generated", file=sys.stderr)
            continue
        for rel, text in crate.items():
            files[f"{folder}/{rel}"] = text
        # The native `pack` of each frame class (py_pack.py), for the extension.
        files[f"{PY_PACK_DIR}/{folder}.rs"] = render_py_pack(plan)
        members.append((folder, crate_name(plan), plan, machines_plan))
        # The frame-log mapping of the native extension (frame_log.py): a version it does
        # not map is read by the pure-Python path, as the workspace manifest lists.
        try:
            files[f"{FRAME_LOG_DIR}/{folder}.rs"] = render_frame_log(proto)
        except Refused as error:
            native_refused.append(str(error))
            if log:
                print(f"{error}: not generated", file=sys.stderr)
    if not members:
        raise Refused("; ".join(refused))
    files.update(render_corpus([(m, machines) for _, _, m, machines in members]))
    files.update(render_fuzz([m for _, _, m, _ in members]))
    files["Cargo.toml"] = _ENV.get_template("workspace.toml.j2").render(
        members=[(folder, name, m) for folder, name, m, _ in members],
        runtime=RUNTIME_CRATE,
        edition=EDITION,
        refused=refused,
        native_refused=native_refused,
    )
    files["rust-toolchain.toml"] = _ENV.get_template("rust-toolchain.toml.j2").render(
        toolchain=TOOLCHAIN
    )
    return files
