"""The Rust target (``--target rust``): the committed cargo workspace ``generated/rust`` is
what the IDL generates, it is clean by ``cargo fmt --check``, ``cargo clippy -D warnings``,
``cargo test`` and ``cargo doc``, and its codecs answer the cross-language corpus exactly as
Python does (same fields, byte-identical re-encoding, same error class).

The corpus runner is the workspace's ``wirestream-corpus`` binary (its checks are
``codegen/targets/rust/templates/corpus_main.rs.j2``); the last tests break a corpus on
purpose to show the runner notices.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.crosslang import corpus
from tests.support.crosslang_corpus import corpus_subset
from tests.support.protocols import ROOT, VERSIONS
from tests.typescript import machine_cases
from wirestream.codegen.frontend.build import load_protocol, load_protocol_text
from wirestream.codegen.cli import generate_tree
from wirestream.codegen.tree import load_unit, units
from wirestream.codegen.targets.rust.render import render_rust

WORKSPACE = ROOT / "generated" / "rust"
# The runners are built in the dev profile, not release: `cargo test` (in
# test_cargo_fmt_clippy_test_doc) has built every crate in it already, so only the two
# binaries compile, where release (thin LTO, one codegen unit) compiled every crate a second
# time: ~64 s of CPU against ~18 s on a cold target, ~10 s of it given back by slower runs
# (docs/install.md, "Where make test's time goes"). Their job here is correctness, not
# speed (the inputs are counted, not timed), and the dev profile's overflow checks make an
# arithmetic overflow in a codec a panic -- a difference, a finding -- where release would
# wrap. `make fuzz-rust` keeps release.
RUNNER = WORKSPACE / "target" / "debug" / "wirestream-corpus"
# The versions the Rust target spells: every one in idl/ (test_every_protocol_version_has_a_crate).
COVERED = (
    "rsocket_v1_0",
    "rsocket_v0_2",
    "rabbitmq_stream_v1",
    "rabbitmq_stream_draft",
    "bpmux_rel",
    "rsio_v0",
    "mqtt_v5",
    "postgresql_v3",
    "mysql_v10",
)


# Every build here is from scratch on a fresh clone and is thrown away: no incremental
# state and no debug info to write (the dev profile keeps its overflow checks). On a cold
# target, clippy twice + test + doc of the workspace took 69 s of CPU with these against
# 79 s without.
CARGO_ENV = {"CARGO_TERM_COLOR": "never", "CARGO_INCREMENTAL": "0", "CARGO_PROFILE_DEV_DEBUG": "0"}


def cargo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **CARGO_ENV}
    return subprocess.run(["cargo", *args], cwd=WORKSPACE, capture_output=True, text=True,
                          env=env, check=False, timeout=900)  # fmt: skip


def ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"{done.args}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"


def test_the_committed_workspace_is_what_the_idl_generates() -> None:
    files = generate_tree(ROOT / "idl", targets=("rust",))
    assert files, "the Rust target generated nothing"
    for rel, text in files.items():
        path = ROOT / "generated" / rel
        assert path.is_file(), f"missing: {path}"
        assert (
            path.read_text(encoding="utf-8") == text
        ), f"stale: {path} (make it with --target rust)"
    for name in COVERED:
        assert f"rust/{name}/src/lib.rs" in files
    assert (WORKSPACE / "Cargo.lock").is_file()
    toolchain = (WORKSPACE / "rust-toolchain.toml").read_text()
    assert 'channel = "1.95.0"' in toolchain


def test_every_protocol_version_has_a_crate() -> None:
    names = sorted(f"{u.protocol}_{u.version}" for u in units(ROOT / "idl"))
    assert sorted(COVERED) == names
    assert "Not generated yet" not in (WORKSPACE / "Cargo.toml").read_text()


def test_refused_constructs_are_named() -> None:
    """Every IDL is spelled today; a construct the target does not spell (here an IDL edited
    to use one) is refused naming the version and the construct, never spelled wrongly, and
    the workspace says which version it left out."""
    protos = {f"{u.protocol}_{u.version}": load_unit(u) for u in units(ROOT / "idl")}
    text = (ROOT / "idl" / "mysql" / "v10.yaml").read_text(encoding="utf-8")
    divided = text.replace(
        '"(ctx.column_count + 9) / 8"', '"(ctx.column_count + 9) / ctx.param_count"'
    )
    assert divided != text
    broken = load_protocol_text(divided, "idl/mysql/v10.yaml")
    refusal = r"mysql/v10: a division by a value that may be 0 in .* \(BinaryRow.null_bitmap\)"
    with pytest.raises(NotImplementedError, match=refusal):
        render_rust([broken])
    files = render_rust([protos["rsio_v0"], broken], log=False)
    assert "rsio_v0/src/lib.rs" in files and not any(f.startswith("mysql_v10/") for f in files)
    assert "# - Rust target: mysql/v10: a division by a value" in files["Cargo.toml"]


# Every version has a generated frame-log mapping for the native extension
# (generated/rust/frame_log; codegen/targets/rust/frame_log.py), the contextual ones with
# their connections' contexts.
FRAME_LOGS = COVERED
NATIVE_CRATE = ROOT / "runtime" / "rust" / "wirestream-native"


def test_frame_logs_are_generated_for_every_version() -> None:
    """A module per version, headed with its IDL, included by the extension and
    registered in its PROTOCOLS; none refused (the workspace manifest would name it)."""
    found = sorted(p.stem for p in (WORKSPACE / "frame_log").glob("*.rs"))
    assert found == sorted(FRAME_LOGS)
    lib = (NATIVE_CRATE / "src" / "lib.rs").read_text(encoding="utf-8")
    for name in FRAME_LOGS:
        text = (WORKSPACE / "frame_log" / f"{name}.rs").read_text(encoding="utf-8")
        assert text.startswith("// Generated by wirestream codegen from idl/")
        assert f'#[path = "../../../../generated/rust/frame_log/{name}.rs"]' in lib
        assert f"&{name}::PROTOCOL," in lib
    assert "no native frame log" not in (WORKSPACE / "Cargo.toml").read_text(encoding="utf-8")


def test_the_extension_with_its_frame_logs_is_clippy_clean_and_its_unit_tests_pass() -> None:
    """The generated frame-log modules compile only inside the extension: clippy -D
    warnings and rustfmt over that crate (its own workspace, its own target), and its Rust
    unit tests (columns, RabbitMQ chunks, SQL rows) run."""
    env = {**os.environ, **CARGO_ENV}
    for args in (
        ["fmt", "--check"],
        ["clippy", "--locked", "--all-targets", "--", "-D", "warnings"],
        ["test", "--locked", "--quiet"],
    ):
        done = subprocess.run(["cargo", *args], cwd=NATIVE_CRATE, capture_output=True, text=True,
                              env=env, check=False, timeout=900)  # fmt: skip
        ok(done)


def test_crates_are_no_std_and_forbid_unsafe() -> None:
    for name in COVERED:
        lib = (WORKSPACE / name / "src" / "lib.rs").read_text()
        assert "#![no_std]" in lib and "#![forbid(unsafe_code)]" in lib
        assert ".unwrap()" not in lib and "panic!" not in lib and ".expect(" not in lib
        manifest = (WORKSPACE / name / "Cargo.toml").read_text()
        deps = manifest.split("[dependencies]", 1)[1].strip().splitlines()
        # the support crate only; bytes and tokio-util only behind their features
        required = [d.split(" ")[0] for d in deps if "optional = true" not in d]
        assert required == ["wirestream-runtime"], manifest
        assert sorted(d.split(" ")[0] for d in deps if "optional = true" in d) == [
            "bytes",
            "tokio-util",
        ]


def test_cargo_fmt_clippy_test_doc() -> None:
    ok(cargo("fmt", "--all", "--check"))
    ok(cargo("clippy", "--all-targets", "--", "-D", "warnings"))
    ok(cargo("clippy", "--all-targets", "--all-features", "--", "-D", "warnings"))
    ok(cargo("test", "--quiet"))
    ok(cargo("doc", "--no-deps", "--quiet"))


@pytest.fixture(scope="module")
def corpus_dir(crosslang_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The covered versions' part of the session's corpus (tests/support/crosslang_corpus.py:
    written once, for TypeScript too), and the runner built."""
    out = corpus_subset(crosslang_corpus, COVERED, tmp_path_factory.mktemp("rust-corpus"))
    ok(cargo("build", "--quiet", "-p", "wirestream-corpus"))
    return out


def run_corpus(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUNNER), str(directory)], capture_output=True, text=True,
                          check=False, timeout=600)  # fmt: skip


def test_corpus_passes_for_every_covered_version(corpus_dir: Path) -> None:
    done = run_corpus(corpus_dir)
    ok(done)
    lines = done.stdout.splitlines()
    for name in COVERED:
        for kind in ("golden", "differential", "mutations"):
            line = next(x for x in lines if x.startswith(f"{name}.json {kind}:"))
            cases = int(line.split(": ")[1].split(" ")[0])
            assert cases >= (1000 if kind != "golden" else 1) and line.endswith(" 0 differ"), line
    # the contexts: the frames that set and clear them, tracked as Python tracks them
    for name in ("rsio_v0", "postgresql_v3"):
        line = next(x for x in lines if x.startswith(f"{name}.json tracking:"))
        assert int(line.split(": ")[1].split(" ")[0]) >= 100 and line.endswith(" 0 differ"), line


def _broken(corpus_dir: Path, tmp_path: Path, edit: str) -> subprocess.CompletedProcess[str]:
    """The corpus with one rsocket_v1_0 case changed by ``edit``, replayed."""
    content = json.loads((corpus_dir / "rsocket_v1_0.json").read_text())
    frame_case = next(c for c in content["golden"] if "frame" in c and c["frame"]["data"])
    error_case = next(c for c in content["golden_errors"] if c["error"] == "Truncated")
    if edit == "field":
        frame_case["frame"]["stream_id"] += 1
    elif edit == "encoded":
        frame_case["encoded"] = frame_case["encoded"] + "00"
    elif edit == "error":
        error_case["error"] = "InvalidValue"
    else:
        error_case["needed"] += 1
    (tmp_path / "rsocket_v1_0.json").write_text(json.dumps(content))
    index = json.loads((corpus_dir / "index.json").read_text())
    index["files"] = [f for f in index["files"] if f["file"] == "rsocket_v1_0.json"]
    (tmp_path / "index.json").write_text(json.dumps(index))
    return run_corpus(tmp_path)


@pytest.mark.parametrize("edit", ["field", "encoded", "error", "needed"])
def test_the_runner_notices_a_difference(corpus_dir: Path, tmp_path: Path, edit: str) -> None:
    done = _broken(corpus_dir, tmp_path, edit)
    assert done.returncode == 1, done.stdout
    assert " 1 differ" in done.stdout


# --- machines: the outcomes of Python's machines, row for row --------------------------------


@pytest.fixture(scope="module")
def machine_cases_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Python's machine cases (tests/typescript/machine_cases.py: sample frames of every type,
    applied to every machine, role, state and direction), contexts in the corpus's JSON form."""
    cases = []
    for version in VERSIONS:
        widths = corpus.widths(version)
        cases.append(
            machine_cases.version_cases(
                load_protocol(version.idl), lambda _, ctx: corpus.ctx_to_json(ctx, widths)
            )
        )
    out = tmp_path_factory.mktemp("rust-machines") / "machines.json"
    out.write_text(json.dumps(cases), encoding="utf-8")
    ok(cargo("build", "--quiet", "-p", "wirestream-corpus"))
    return out


def run_machines(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUNNER), "--machines", str(path)], capture_output=True, text=True,
                          check=False, timeout=600)  # fmt: skip


def test_machines_agree_with_python(machine_cases_file: Path) -> None:
    done = run_machines(machine_cases_file)
    ok(done)
    lines = done.stdout.splitlines()
    modules = {f"{v.protocol}_{v.version}": f"{v.protocol}/{v.version}" for v in VERSIONS}
    for name in COVERED:
        module = modules[name]
        line = next(x for x in lines if x.startswith(f"{module} machines:"))
        if name == "rabbitmq_stream_draft":  # declares no machines
            assert line.endswith(": none"), line
            continue
        cases = int(line.split(": ")[1].split(" ")[0])
        assert cases >= 2000 and line.endswith(" 0 differ"), line


@pytest.mark.parametrize("edit", ["state", "ignore", "message", "handler"])
def test_the_machine_runner_notices_a_difference(
    machine_cases_file: Path, tmp_path: Path, edit: str
) -> None:
    versions = json.loads(machine_cases_file.read_text())
    version = next(v for v in versions if (v["protocol"], v["version"]) == ("rsocket", "v1_0"))
    rows = [c["outcomes"] for m in version["machines"] for c in m["cases"]]
    row, index = next(
        (r, i) for r in rows for i, o in enumerate(r) if isinstance(o, dict) and "to" in o
    )
    if edit == "state":
        row[index] = {"to": "closed" if row[index]["to"] != "closed" else "connected"}
    elif edit == "ignore":
        row[index] = "IGNORE"
    elif edit == "message":
        version["errors"][0]["message"] += "!"
    else:  # every handler of every machine renamed: dispatch_<role> calls the old names
        for machine in version["machines"]:
            for table in machine["handlers"].values():
                for frame in table:
                    table[frame] += "_renamed"
    path = tmp_path / "machines.json"
    path.write_text(json.dumps([version]))
    done = run_machines(path)
    assert done.returncode == 1, done.stdout
    assert "rsocket/v1_0 machines:" in done.stdout and " 0 differ" not in done.stdout


# --- fuzzing: the corpus replayed, and a short mutation run --------------------------------

FUZZER = WORKSPACE / "target" / "debug" / "wirestream-fuzz"  # dev profile, as RUNNER
# the Python harness's committed corpus (same input layout), and what the Rust runs added
FUZZ_CORPORA = (ROOT / "tests" / "fuzz" / "corpus", ROOT / "tests" / "fuzz" / "rust")


def fuzz(tmp_path: Path, *args: str) -> dict[str, str]:
    ok(cargo("build", "--quiet", "-p", "wirestream-fuzz"))
    corpora = [a for c in FUZZ_CORPORA for a in ("--corpus", str(c))]
    done = subprocess.run([str(FUZZER), *corpora, "--findings", str(tmp_path), *args],
                          capture_output=True, text=True, check=False, timeout=600)  # fmt: skip
    ok(done)
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert sorted(lines) == sorted(COVERED), done.stdout
    assert not any(tmp_path.iterdir()), "findings were written"
    return lines


def test_the_fuzz_corpus_replays_without_a_finding(tmp_path: Path) -> None:
    folders = {f"{v.protocol}_{v.version}": f"codec.{v.protocol}.{v.version}" for v in VERSIONS}
    for name, line in fuzz(tmp_path, "--replay").items():
        committed = sum(1 for c in FUZZ_CORPORA for _ in (c / folders[name]).glob("*"))
        assert committed > 0, name
        assert line.startswith(f"{committed} inputs ({committed} from the corpus)"), line
        assert line.endswith(" 0 findings"), line


def test_a_short_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    for line in fuzz(tmp_path, "--runs", "20000", "--seed", "1").values():
        assert int(line.split(" ")[0]) >= 20000 and line.endswith(" 0 findings"), line


# --- rsocket_rust: byte identity, both ways, for every frame type it encodes ----------------


def test_byte_identity_with_rsocket_rust() -> None:
    """bench/rust/tests/rsocket_rust_identity.rs: identical bytes from both encoders, each
    side's bytes through the other's decoder and encoder unchanged; its departures from the
    spec pinned (METADATA_PUSH without its M flag; panics on EXT, on an unknown type with
    IGNORE and on an overlong metadata length; the stream id's reserved bit kept)."""
    manifest = ROOT / "bench" / "rust" / "Cargo.toml"
    # The dev profile, as the runners above: the identity is a matter of bytes, not speed.
    # On a cold target (bench/rust/target: rsocket_rust and its dependencies) `cargo test`
    # took 32 s of CPU against 76 s with --release (thin LTO, one codegen unit); the same
    # tests pass in both. `make bench` keeps its release build.
    done = cargo("test", "--quiet", "--manifest-path", str(manifest))
    ok(done)
    # rsocket_rust_identity.rs and codec_features.rs (the bytes and tokio-util features)
    assert done.stdout.count("2 passed") == 2 and " failed" not in done.stdout.replace(
        "0 failed", ""
    ), done.stdout
