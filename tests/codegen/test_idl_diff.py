"""``wirestream diff``: every rule on one small IDL pair, judged for both directions.

Each folder of tests/idl_diff/ (except expected/) holds ``old.yaml``, ``new.yaml`` and
``expect.yaml``: exactly the changes the diff must report for the pair, each with its
verdict for old readers (new writer -> old reader) and new readers (old writer -> new
reader), whose readers it concerns, and where it is: ``old_at`` / ``new_at`` name the
line marked ``# diff: NAME`` in the old / new file (null: the thing is absent there).
The folder is named after the rule it proves.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from wirestream.apps.cli import main
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.cli import generate_tree
from wirestream.codegen.diff.compare import Change, diff_protocols

HERE = Path(__file__).parent.parent / "idl_diff"
CASES = sorted(p for p in HERE.iterdir() if (p / "expect.yaml").is_file())
MARKER = re.compile(r"#\s*diff:\s*(\w+)")


def markers(path: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = MARKER.search(line)
        if match:
            assert match.group(1) not in found, f"{path}: marker {match.group(1)} twice"
            found[match.group(1)] = number
    return found


def shown(changes: list[Change]) -> str:
    return "\n".join(f"{c.rule} | {c.subject} | {c.verdict} | {c.readers} | {c.old} -> {c.new}"
                     f"\n    {c.reason}" for c in changes)  # fmt: skip


def test_there_is_a_pair_for_every_kind_of_change_the_issue_names() -> None:
    rules = {change["rule"] for case in CASES
             for change in yaml.safe_load((case / "expect.yaml").read_text())["changes"]}  # fmt: skip
    for rule in ("frame-added", "frame-removed", "frame-recoded", "field-added", "field-removed",
                 "field-reordered", "field-retyped", "field-resized", "flag-moved",
                 "presence-changed", "enum-member-added", "enum-member-removed",
                 "framing-changed", "discriminator-changed", "unknown-policy-changed",
                 "machine-send-allowed", "machine-send-refused"):  # fmt: skip
        assert rule in rules


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_each_rule_reports_exactly_its_changes_judged_for_old_and_new_readers(case: Path) -> None:
    old_path, new_path = case / "old.yaml", case / "new.yaml"
    changes = diff_protocols(
        load_protocol(old_path, "old.yaml"), load_protocol(new_path, "new.yaml")
    )
    expected: list[dict[str, Any]] = yaml.safe_load((case / "expect.yaml").read_text())["changes"]
    assert sorted((c.rule, c.subject) for c in changes) == sorted(
        (e["rule"], e["subject"]) for e in expected
    ), shown(changes)
    old_lines, new_lines = markers(old_path), markers(new_path)
    for want in expected:
        (got,) = [c for c in changes if (c.rule, c.subject) == (want["rule"], want["subject"])]
        assert got.breaks_old_readers == (want["old_readers"] == "breaks"), shown([got])
        assert got.breaks_new_readers == (want["new_readers"] == "breaks"), shown([got])
        assert list(got.readers) == want["readers"], shown([got])
        assert got.reason, shown([got])
        for at, place, lines, file in (("old_at", got.old, old_lines, "old.yaml"),
                                       ("new_at", got.new, new_lines, "new.yaml")):  # fmt: skip
            if want[at] is None:
                assert place is None, shown([got])
            else:
                assert place is not None and (place.file, place.line) == (
                    file,
                    lines[want[at]],
                ), shown([got])


# --- the real pairs, reviewed against the seeds ---------------------------------------------

ROOT = Path(__file__).parent.parent.parent
EXPECTED = HERE / "expected"
REAL_PAIRS = [("rsocket", "v0_2", "v1_0"), ("rabbitmq_stream", "draft", "v1")]


@pytest.mark.parametrize("protocol, old, new", REAL_PAIRS, ids=lambda v: v)
def test_real_pair_report_is_the_reviewed_expected_output(
    protocol: str, old: str, new: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``wirestream diff idl/P/OLD.yaml idl/P/NEW.yaml`` (run from the repository root)
    prints exactly tests/idl_diff/expected/P_OLD__NEW.txt (and, with --format json,
    .json). Each change there was checked against the seed of the old version and the
    spec the new file cites; after a deliberate change to the checker or the IDL, review
    the difference and rewrite the files with those two commands."""
    monkeypatch.chdir(ROOT)
    stem = EXPECTED / f"{protocol}_{old}__{new}"
    files = [f"idl/{protocol}/{old}.yaml", f"idl/{protocol}/{new}.yaml"]
    for suffix, extra in ((".txt", []), (".json", ["--format", "json"])):
        assert main(["diff", *files, *extra]) == 1  # both pairs have breaking changes
        out = capsys.readouterr().out
        assert out == stem.with_suffix(suffix).read_text(
            encoding="utf-8"
        ), f"the report of {files} changed: review it, then rewrite {stem}{suffix}"


# --- predecessors and the generated docs ----------------------------------------------------


def test_a_version_generated_without_its_predecessor_says_its_notes_are_missing(
    tmp_path: Path,
) -> None:
    """One file generated alone (the edit workflow) is fine; with its predecessor in the
    tree, the docs compare the two."""
    (tmp_path / "toy").mkdir()
    pair = HERE / "field_resized"
    text = (
        (pair / "new.yaml").read_text().replace("version: v2\n", "version: v2\npredecessor: v1\n")
    )
    (tmp_path / "toy" / "v2.yaml").write_text(text)
    docs = generate_tree(tmp_path, "toy_pkg")["toy/v2/PROTOCOL.md"]
    assert "Its predecessor, `v1`, was not in the IDL tree" in docs
    assert "## Compatibility with" not in docs
    (tmp_path / "toy" / "v1.yaml").write_text((pair / "old.yaml").read_text())
    docs = generate_tree(tmp_path, "toy_pkg")["toy/v2/PROTOCOL.md"]
    assert "## Compatibility with v1\n" in docs and "`field-resized` frame Reply" in docs


@pytest.mark.parametrize("protocol, old, new", REAL_PAIRS, ids=lambda v: v)
def test_protocol_md_of_a_version_with_a_predecessor_has_its_compatibility_notes_and_dissector(
    protocol: str, old: str, new: str
) -> None:
    """generated/P/NEW/PROTOCOL.md (checked fresh by `make check-generated`) holds one
    table row per change the diff reports against the predecessor, and links the
    dissector the `wireshark` target writes; a version without a predecessor has none."""
    text = (ROOT / "generated" / protocol / new / "PROTOCOL.md").read_text(encoding="utf-8")
    changes = diff_protocols(load_protocol(ROOT / "idl" / protocol / f"{old}.yaml"),
                             load_protocol(ROOT / "idl" / protocol / f"{new}.yaml"))  # fmt: skip
    section = text.split(f"## Compatibility with {old}\n", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(changes)
    assert all(f"`{c.rule}` {c.subject}" in row for c, row in zip(changes, rows))
    dissector = f"wireshark/{protocol}_{new}.lua"
    assert f"[`{dissector}`](../../{dissector})" in text
    previous = (ROOT / "generated" / protocol / old / "PROTOCOL.md").read_text(encoding="utf-8")
    assert "## Compatibility with" not in previous
    assert f"(../../wireshark/{protocol}_{old}.lua)" in previous


@pytest.mark.parametrize(
    "path", sorted((ROOT / "idl").rglob("*.yaml")), ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_every_idl_compared_with_itself_has_no_changes(path: Path) -> None:
    """Every construct the IDL has is one the comparison reads (terminators, transforms,
    contexts...): a file against itself is no change, never a crash."""
    proto = load_protocol(path, path.name)
    assert diff_protocols(proto, load_protocol(path, path.name)) == []
