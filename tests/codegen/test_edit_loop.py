"""The edit loop: ``generate`` renders only what an IDL change affects and writes nothing
for an unchanged tree; ``--only`` touches one protocol's (or version's) own files and
nothing else; ``check --only``; the CLI's defaults are what ``make generate`` runs.

A small IDL tree of its own (two protocols, one with two versions) keeps these fast; the
timings of the real tree are the report's business (``farm-bench``), not a test's.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.project.test_install import TOY_IDL
from wirestream.codegen import incremental
from wirestream.codegen.cli import main
from wirestream.codegen.targets.cache_dir import TextMemo
from wirestream.codegen.targets.python import render
from wirestream.codegen.tree import TARGETS, Options, Unit, default_package

ROOT = Path(__file__).resolve().parent.parent.parent
OPTIONS = Options("edit_gen", standalone_ts=True)
TOY_V2 = TOY_IDL.replace("version: v1", "version: v2\npredecessor: v1")
OTHER = TOY_IDL.replace("protocol: toy", "protocol: other")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``idl/toy/v1``, ``idl/toy/v2`` (v1's successor) and ``idl/other/v1``, generated
    (every target) into ``out/``."""
    for rel, text in (("toy/v1", TOY_IDL), ("toy/v2", TOY_V2), ("other/v1", OTHER)):
        path = tmp_path / "idl" / f"{rel}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    report = generate(tmp_path)
    assert len(report.rendered) == 3 * 4 + 2  # 3 units x 4 parts, shared python + typescript
    return tmp_path


def generate(root: Path, only: str | None = None) -> incremental.Report:
    return incremental.generate(root / "idl", root / "out", TARGETS, OPTIONS, only)


def snapshot(out: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``out`` (the manifest aside): its modification time and bytes."""
    return {p.relative_to(out).as_posix(): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(out.rglob("*")) if p.is_file() and p.name != incremental.CACHE}  # fmt: skip


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / "idl" / f"{rel}.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_an_unchanged_tree_renders_and_writes_nothing(tree: Path) -> None:
    before = snapshot(tree / "out")
    report = generate(tree)
    assert (report.rendered, report.written, report.removed) == ([], [], [])
    assert snapshot(tree / "out") == before


def test_a_one_line_edit_renders_only_that_versions_outputs(tree: Path) -> None:
    before = snapshot(tree / "out")
    edit(tree, "other/v1", "doc: Asks for a Pong.", "doc: Asks for a Pong, politely.")
    report = generate(tree)
    assert sorted(report.rendered) == [f"other/v1 {part}" for part in
                                       ("docs", "python", "typescript", "wireshark")]  # fmt: skip
    changed = {rel for rel, seen in snapshot(tree / "out").items() if before.get(rel) != seen}
    assert changed == set(report.written) and changed
    assert all(Unit("other", "v1", Path()).owns(rel) for rel in changed), changed


def test_an_edit_of_a_predecessor_renders_its_successors_docs_too(tree: Path) -> None:
    """v2's PROTOCOL.md says what changed from v1: it is v1's business too, v2's code not."""
    edit(tree, "toy/v1", "{name: nonce, type: u32}\n      - {name: note",
         "{name: nonce, type: u16}\n      - {name: note")  # fmt: skip
    report = generate(tree)
    assert "toy/v2 docs" in report.rendered
    assert not {"toy/v2 python", "toy/v2 typescript", "toy/v2 wireshark"} & set(report.rendered)
    assert "u16" in (tree / "out" / "toy/v2/PROTOCOL.md").read_text(encoding="utf-8")


def test_a_title_edit_renders_the_files_that_list_every_version(tree: Path) -> None:
    edit(tree, "toy/v2", "title: Toy protocol", "title: Toy protocol, second edition")
    report = generate(tree)
    assert {"shared python", "shared typescript"} <= set(report.rendered)
    assert "second edition" in (tree / "out" / "toy" / "__init__.py").read_text(encoding="utf-8")


def test_a_file_changed_by_hand_is_rendered_again(tree: Path) -> None:
    lua = tree / "out" / "wireshark" / "toy_v1.lua"
    good = lua.read_bytes()
    lua.write_text("-- edited by hand\n", encoding="utf-8")
    (tree / "out" / "toy" / "v2" / "spark.py").unlink()
    report = generate(tree)
    assert sorted(report.rendered) == ["toy/v1 wireshark", "toy/v2 python"]
    assert lua.read_bytes() == good and (tree / "out" / "toy" / "v2" / "spark.py").is_file()


def test_a_change_of_the_generator_renders_what_it_renders(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generator's own sources and templates are in the keys, each part's own: in a
    copy of codegen/, an edit of the Wireshark template re-renders every dissector and
    nothing else; an edit of the loader every part."""
    copy = tree / "codegen"
    shutil.copytree(incremental.CODEGEN, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(incremental, "CODEGEN", copy)
    assert generate(tree).rendered == []  # the copy hashes as the original
    template = copy / "targets" / "wireshark" / "templates" / "dissector.lua.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert sorted(generate(tree).rendered) == ["other/v1 wireshark", "toy/v1 wireshark", "toy/v2 wireshark"]  # fmt: skip
    loader = copy / "frontend" / "loader.py"
    loader.write_text(loader.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert len(generate(tree).rendered) == 3 * 4 + 2


def test_only_touches_that_protocols_own_files(tree: Path) -> None:
    """``--only toy`` after edits of both protocols: toy's files are rendered, other's and
    the files that list every protocol (TypeScript package.json, README, tsconfig, the
    Python package __init__ files) are left as they were."""
    before = snapshot(tree / "out")
    edit(tree, "toy/v1", "doc: Answers a Ping.", "doc: Answers a Ping at once.")
    edit(tree, "other/v1", "doc: Answers a Ping.", "doc: Answers a Ping at once.")
    edit(tree, "toy/v2", "title: Toy protocol", "title: Toy protocol, second edition")
    report = generate(tree, only="toy")
    changed = {rel for rel, seen in snapshot(tree / "out").items() if before.get(rel) != seen}
    toy = [Unit("toy", "v1", Path()), Unit("toy", "v2", Path())]
    assert changed and all(any(u.owns(rel) for u in toy) for rel in changed), changed
    assert all(unit.startswith("toy/") for unit in report.rendered)
    # check --only agrees: toy is fresh, other is stale, the shared files are not toy's
    out, idl = str(tree / "out"), str(tree / "idl")
    check = ["check", "--idl", idl, "--out", out, "--package", OPTIONS.package]
    assert main([*check, "--only", "toy"]) == 0
    assert main([*check, "--only", "toy/v1"]) == 0
    assert main([*check, "--only", "other"]) == 1
    assert main(check) == 1  # the title is in toy/__init__.py and the TypeScript README
    # then one version only: other/v1's files, nothing else
    before = snapshot(tree / "out")
    generate(tree, only="other/v1")
    changed = {rel for rel, seen in snapshot(tree / "out").items() if before.get(rel) != seen}
    assert changed and all(Unit("other", "v1", Path()).owns(rel) for rel in changed), changed
    assert main([*check, "--only", "other"]) == 0
    generate(tree)
    assert main(check) == 0


def test_cargos_own_files_under_the_rust_workspace_are_not_the_generators(tree: Path) -> None:
    """``cargo doc`` writes Markdown licences under ``<out>/rust/target/``: neither ``check``
    (as "not generated from any IDL") nor ``generate`` (as stale) may claim them."""
    licence = tree / "out" / "rust" / "target" / "doc" / "static.files" / "LICENSE-0a1b.md"
    licence.parent.mkdir(parents=True)
    licence.write_text("cargo's\n", encoding="utf-8")
    out, idl = str(tree / "out"), str(tree / "idl")
    assert main(["check", "--idl", idl, "--out", out, "--package", OPTIONS.package]) == 0
    report = generate(tree)
    assert report.removed == [] and licence.read_text(encoding="utf-8") == "cargo's\n"


def test_only_removes_the_files_of_a_deleted_version_of_that_protocol(tree: Path) -> None:
    (tree / "idl" / "toy" / "v2.yaml").unlink()
    before = snapshot(tree / "out")
    report = generate(tree, only="toy")
    assert "toy/v2/__init__.py" in report.removed and "wireshark/toy_v2.lua" in report.removed
    assert all("toy/v2/" in rel or rel == "wireshark/toy_v2.lua" for rel in report.removed)
    assert snapshot(tree / "out") == {k: v for k, v in before.items() if k not in report.removed}
    # a name no IDL has is an error, not a run that would remove that version's files
    assert main(["generate", "--idl", str(tree / "idl"), "--out", str(tree / "out"),
                 "--only", "toy/v2"]) == 2  # fmt: skip


def test_the_cli_defaults_are_what_make_generate_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """``make generate`` runs the bare command; its defaults are every target of idl/
    into generated/ as wirestream.generated, whatever the folder's name."""
    recipe = re.search(r"^generate: venv\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None and recipe.group(1) == "$(BIN)/python -m wirestream.codegen generate"
    monkeypatch.chdir(ROOT)
    assert default_package(Path("generated")) == "wirestream.generated"
    assert default_package(Path("elsewhere") / "generated") == "generated"
    seen: dict[str, object] = {}

    def record(idl: Path, out: Path, targets: tuple[str, ...], options: Options,
               only: str | None, use_cache: bool) -> incremental.Report:  # fmt: skip
        seen.update(idl=idl, out=out, targets=targets, options=options, only=only)
        return incremental.Report()

    monkeypatch.setattr(incremental, "generate", record)
    assert main(["generate"]) == 0
    assert seen == {"idl": Path("idl"), "out": Path("generated"), "targets": TARGETS,
                    "options": Options("wirestream.generated", False), "only": None}  # fmt: skip


def test_formatted_python_is_kept_by_what_was_formatted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """black's results are reused only for the same source and the same formatter."""
    monkeypatch.setenv("WIRESTREAM_CACHE_DIR", str(tmp_path))
    memo = TextMemo("format", b"black 1")
    assert memo.get("x  =  1\n") is None
    memo.put("x  =  1\n", "x = 1\n")
    assert memo.get("x  =  1\n") == "x = 1\n"
    assert memo.get("x  =  2\n") is None
    assert TextMemo("format", b"black 2").get("x  =  1\n") is None
    source = "import os\nimport sys\nprint( sys.argv )\n"
    assert render.format_python(source) == "import sys\n\nprint(sys.argv)\n"
    assert render._FORMATTED.get(source) == "import sys\n\nprint(sys.argv)\n"
