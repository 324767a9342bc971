"""``wirestream diff`` from a shell: files, folders, ``--against`` a git revision (real
git, a throw-away repository), ``--format json``, the exit status and ``--fail-on``.

Everything runs in-process through ``wirestream.apps.cli.main`` except one test that
starts ``python -m wirestream`` and ``python -m wirestream.codegen`` (the entry points).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wirestream.apps.cli import main

ROOT = Path(__file__).parent.parent.parent
CASES = Path(__file__).parent.parent / "idl_diff"
Capture = pytest.CaptureFixture[str]


def case(name: str) -> tuple[str, str]:
    return str(CASES / name / "old.yaml"), str(CASES / name / "new.yaml")


def test_breaking_changes_exit_1_and_the_table_names_rule_readers_reason_and_places(
    capsys: Capture,
) -> None:
    assert main(["diff", *case("frame_added_refused_by_old_readers")]) == 1
    out = capsys.readouterr().out
    assert "1 changes (1 break old readers, 0 break new readers, 0 compatible)" in out
    row = next(line for line in out.splitlines() if "frame-added" in line)
    assert row.split()[:3] == ["BREAKS", "ok", "server"]
    assert "why:   Bye (0x03, sent by client) added; old readers: code 0x03 is unknown" in out
    assert "new.yaml:" in out and "where: (none) -> " in out


def test_fail_on_chooses_which_breaking_changes_count(capsys: Capture) -> None:
    old_only = case("frame_added_refused_by_old_readers")  # breaks old readers only
    assert main(["diff", *old_only, "--fail-on", "new-readers"]) == 0
    assert main(["diff", *old_only, "--fail-on", "old-readers"]) == 1
    assert main(["diff", *old_only, "--fail-on", "none"]) == 0
    assert main(["diff", *case("flag_added")]) == 0  # compatible: nothing counts
    capsys.readouterr()


def test_json_format_holds_every_change_with_both_places(capsys: Capture) -> None:
    assert main(["diff", *case("enum_member_added_closed"), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    (comparison,) = data["comparisons"]
    (change,) = comparison["changes"]
    assert change["rule"] == "enum-member-added"
    assert (change["breaks_old_readers"], change["breaks_new_readers"]) == (True, False)
    assert change["readers"] == ["client"]
    assert change["old"]["file"].endswith("old.yaml") and change["new"]["line"] > 1
    assert comparison["summary"] == {"changes": 1, "breaks_old_readers": 1,
                                     "breaks_new_readers": 0, "compatible": 0}  # fmt: skip
    assert (data["fail_on"], data["failing"]) == ("any", 1)


def test_folders_pair_their_files_by_path(tmp_path: Path, capsys: Capture) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, which in ((old, "old"), (new, "new")):
        (folder / "toy").mkdir(parents=True)
        shutil.copy(CASES / "field_resized" / f"{which}.yaml", folder / "toy" / "v1.yaml")
    shutil.copy(CASES / "flag_added" / "old.yaml", old / "toy" / "gone.yaml")
    shutil.copy(CASES / "flag_added" / "new.yaml", new / "toy" / "fresh.yaml")
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "old/toy/v1.yaml -> " in out and "field-resized" in out
    assert "only in the old tree (not compared): " in out and "gone.yaml" in out
    assert "only in the new tree (not compared): " in out and "fresh.yaml" in out


def git(repo: Path, *argv: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")  # fmt: skip
    subprocess.run(["git", *argv], cwd=repo, env=env, check=True, capture_output=True,
                   timeout=60)  # fmt: skip


def test_against_a_git_revision_compares_the_working_tree_with_the_committed_idl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    repo = tmp_path / "repo"
    (repo / "idl" / "toy").mkdir(parents=True)
    idl = repo / "idl" / "toy" / "v1.yaml"
    shutil.copy(CASES / "enum_member_removed_closed" / "old.yaml", idl)
    git(repo, "init", "-q")
    git(repo, "add", "idl")
    git(repo, "commit", "-q", "-m", "toy v1")
    shutil.copy(CASES / "enum_member_removed_closed" / "new.yaml", idl)
    monkeypatch.chdir(repo / "idl")  # paths are taken from where the command runs
    assert main(["diff", "--against", "HEAD", "."]) == 1
    out = capsys.readouterr().out
    assert out.startswith("HEAD:idl/toy/v1.yaml -> toy/v1.yaml: 1 changes")
    assert "enum-member-removed" in out and "where: HEAD:idl/toy/v1.yaml:" in out
    monkeypatch.chdir(repo)
    assert main(["diff", "--against", "HEAD", "--fail-on", "old-readers"]) == 0  # default: idl
    assert "enum-member-removed" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["diff", "nowhere.yaml", "nowhere-else.yaml"], "nowhere.yaml: no such file or folder"),
    (["diff", str(CASES / "flag_added" / "old.yaml")], "give OLD and NEW"),
    (["diff", str(CASES / "flag_added"), str(CASES / "flag_added" / "new.yaml")],
     "both be files or both be folders"),
    (["diff", "--against", "no-such-revision"], "'no-such-revision' is not a git revision"),
])  # fmt: skip
def test_bad_arguments_are_one_line_on_stderr_exit_2(argv: list[str], message: str,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: Capture) -> None:  # fmt: skip
    monkeypatch.chdir(ROOT)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_malformed_idl_is_reported_with_file_line_and_key_exit_2(tmp_path: Path,
                                                                 capsys: Capture) -> None:  # fmt: skip
    bad = tmp_path / "bad.yaml"
    bad.write_text((CASES / "flag_added" / "new.yaml").read_text().replace("code: 2", "code: x"))
    assert main(["diff", str(CASES / "flag_added" / "old.yaml"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:" in err and "frames.Reply.code: expected an integer" in err


def test_entry_points_wirestream_and_codegen_both_run_diff_with_help_examples() -> None:
    for module in ("wirestream", "wirestream.codegen"):
        done = subprocess.run([sys.executable, "-m", module, "diff", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "wirestream diff --against origin/main" in done.stdout
        assert "--fail-on" in done.stdout
    done = subprocess.run([sys.executable, "-m", "wirestream.codegen", "diff",
                           *case("field_removed")], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 1 and "field-removed" in done.stdout, done.stderr
