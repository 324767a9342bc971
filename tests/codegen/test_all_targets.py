"""Every target takes every IDL the validator accepts.

A user's IDL either fails validation (an ``IdlError`` naming the file, the line and the
key) or generates Python, TypeScript and a Wireshark dissector: no target may meet a
valid IDL it cannot spell and die with a traceback.  This runs every IDL file of the
repository -- ``idl/`` and the IDL trees of the tests (the constructs test protocol, the
``wirestream diff`` pairs, the error cases) -- through the validator and then every
target.

The Python target's last step, black, is replaced here by a parse of what it would format
(``ast.parse``: black refuses only source that does not parse): black is ~80% of the
target's time (~1 min a run of this file), and what it makes of ``idl/`` is compared byte
for byte with the committed ``generated/`` by ``make check-generated``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.targets.python import render as python_render
from wirestream.codegen.targets.python.render import render_protocol
from wirestream.codegen.targets.rust import codec as rust_codec
from wirestream.codegen.targets.rust.codec import Refused
from wirestream.codegen.targets.rust.render import render_rust
from wirestream.codegen.targets.typescript.codec import render_typescript
from wirestream.codegen.targets.wireshark.dissector import render_wireshark

ROOT = Path(__file__).resolve().parent.parent.parent
# IDL files: everything under idl/ and the tests' IDL trees (not the vectors, which are
# YAML too, nor the diff cases' expectations)
IDL_FILES = sorted(
    [*ROOT.glob("idl/*/*.yaml"), *ROOT.glob("tests/idl_*/**/*.yaml")],
    key=lambda p: p.as_posix(),
)
IDL_FILES = [p for p in IDL_FILES if p.name != "expect.yaml"]


def test_the_repository_has_idl_files_of_every_kind() -> None:
    """The list below is not empty by accident (a moved folder would make it so)."""
    names = {p.relative_to(ROOT).parts[0:2] for p in IDL_FILES}
    assert ("idl", "mqtt") in names and ("idl", "mysql") in names
    assert ("tests", "idl_constructs") in names and ("tests", "idl_diff") in names
    assert ("tests", "idl_errors") in names


def _parsed(source: str) -> str:
    ast.parse(source)  # a SyntaxError names the generated line
    return source


@pytest.fixture(autouse=True)
def parse_instead_of_black(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(python_render, "_black", _parsed)
    yield


@pytest.mark.parametrize("path", IDL_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_target_takes_every_valid_idl(path: Path) -> None:
    display = path.relative_to(ROOT).as_posix()
    try:
        proto = load_protocol(path, display)
    except IdlError as error:
        # refused at validation: the error names the file and a line
        assert error.file == display and error.line >= 1, str(error)
        return
    files = render_protocol(proto)
    assert any(name.endswith("__init__.py") for name in files)
    typescript = render_typescript([proto], standalone=True)
    assert any(name.endswith("index.ts") for name in typescript), sorted(typescript)
    lua = render_wireshark([proto])
    assert any(name.endswith(".lua") for name in lua), sorted(lua)


@pytest.mark.parametrize("path", IDL_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_rust_target_spells_every_valid_idl_or_names_what_it_refuses(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Rust target (not yet in ``--target all``) writes a crate, or refuses naming
    itself, the version and the construct: never a traceback. (Its last step, rustfmt, is
    left out, as black is above: what it makes of ``idl/`` is compiled and compared with
    the committed workspace by tests/codegen/test_rust.py.)"""
    monkeypatch.setattr(rust_codec, "rustfmt", lambda source: source)
    display = path.relative_to(ROOT).as_posix()
    try:
        proto = load_protocol(path, display)
    except IdlError:
        return
    try:
        files = render_rust([proto], log=False)
    except Refused as error:
        assert str(error).startswith(f"Rust target: {proto.protocol}/{proto.version}: ")
        assert str(error).endswith(" is not supported yet"), str(error)
        return
    assert f"{proto.protocol}_{proto.version}/src/lib.rs" in files, sorted(files)
