"""Cross-language conformance: Python writes one corpus (tests/crosslang/corpus.py) and the
TypeScript codecs must give the same frame, bytes or error for every case in it
(tests/typescript/corpus.test.ts, run here by node against the corpus written here).

The tests before the last check the corpus itself: its counts against the issue's floors,
that its JSON form is lossless (Python rebuilds every frame from it and encodes the same
bytes), the integer rule (64-bit IDL types are {"big": ...}), and that it is the same on
every run.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.crosslang import corpus
from tests.support.protocols import ROOT, plain
from wirestream.runtime import errors

TS_TEST = ROOT / "tests" / "typescript" / "dist" / "corpus.test.js"


@pytest.fixture(scope="module")
def corpus_dir(crosslang_corpus: Path) -> Path:
    """The session's corpus (tests/support/crosslang_corpus.py: written once, read here and
    by the Rust target's tests)."""
    return crosslang_corpus


def _load(corpus_dir: Path, variant: corpus.Variant) -> dict[str, Any]:
    content: dict[str, Any] = json.loads((corpus_dir / f"{variant.name}.json").read_text())
    return content


VARIANTS = [pytest.param(v, id=v.name) for v in corpus.VARIANTS]


def test_every_version_and_encoding_has_a_file(corpus_dir: Path) -> None:
    index = json.loads((corpus_dir / "index.json").read_text())
    names = [entry["file"] for entry in index["files"]]
    assert names == [
        "bpmux_rel.json",
        "mqtt_v5.json",
        "mysql_v10.json",
        "postgresql_v3.json",
        "rabbitmq_stream_draft.json",
        "rabbitmq_stream_v1.json",
        "rsio_v0.json",
        "rsio_v0_msgpack.json",
        "rsocket_v0_2.json",
        "rsocket_v1_0.json",
    ]
    assert all(not entry["foreign_errors"] for entry in index["files"]), index


@pytest.mark.parametrize("variant", VARIANTS)
def test_counts_meet_the_floors(corpus_dir: Path, variant: corpus.Variant) -> None:
    content = _load(corpus_dir, variant)
    vectors = variant.version.vectors()
    if variant.msgpack:
        assert len(content["golden"]) == sum("msgpack_hex" in v for v in vectors)
        assert content["golden_errors"] == []
    else:
        assert len(content["golden"]) == len(vectors)
        assert len(content["golden_errors"]) == len(variant.version.vectors("_errors"))
    assert len(content["differential"]) >= 1000
    if variant.version.codec().NEEDS_CONTEXT:
        assert len(content["tracking"]) >= 100
    else:
        assert content["tracking"] == []
    assert len(content["mutations"]) >= 10_000
    keys = {(c["bytes"], json.dumps(c["ctx"]), c["sender"], c.get("startup", False))
            for c in content["mutations"]}  # fmt: skip
    assert len(keys) == len(content["mutations"]), "mutants repeat"
    # Both outcomes are well represented: a corpus of only errors would test little.
    errors_seen = sum("error" in c for c in content["mutations"])
    assert 0.2 < errors_seen / len(content["mutations"]) < 0.9


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_frames_cover_every_frame_type(corpus_dir: Path, variant: corpus.Variant) -> None:
    content = _load(corpus_dir, variant)
    drawn = {c["frame"]["$type"] for c in content["differential"]}
    codec = variant.version.codec()
    assert drawn == {name for name in codec.__all__ if _is_frame(codec, name)}


def _is_frame(codec: Any, name: str) -> bool:
    cls = getattr(codec, name)
    return inspect.isclass(cls) and hasattr(cls, "FRAME_TYPE")


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_json_form_is_lossless(corpus_dir: Path, variant: corpus.Variant) -> None:
    """What the TypeScript test does, done by Python: every frame rebuilt from its JSON
    form is the decoded frame and encodes to the recorded bytes; every error recorded is
    the one decoding raises."""
    content = _load(corpus_dir, variant)
    codec = variant.version.codec()
    for kind in corpus.KINDS:
        for case in content[kind]:
            data = bytes.fromhex(case["bytes"])
            ctx = corpus.ctx_from_json(codec, case["ctx"])
            assert corpus.ctx_to_json(ctx, corpus.widths(variant.version)) == case["ctx"]
            startup = case.get("startup", False)
            if "error" in case:
                with pytest.raises(getattr(errors, case["error"])) as raised:
                    variant.decode(data, ctx, case["sender"], startup)
                assert type(raised.value).__name__ == case["error"]
                continue
            frame = variant.decode(data, ctx, case["sender"], startup)
            built = corpus.from_json(codec, case["frame"])
            assert built == frame, case
            if "tracked" in case:
                running = corpus.ctx_from_json(codec, case["ctx"])
                codec.track_context(frame, running)
                assert (
                    corpus.ctx_to_json(running, corpus.widths(variant.version)) == case["tracked"]
                )
            if "encoded" in case:
                assert variant.encode(built, ctx).hex() == case["encoded"]
            else:
                with pytest.raises(getattr(errors, case["encode_error"])):
                    variant.encode(built, ctx)


@pytest.mark.parametrize("variant", VARIANTS)
def test_golden_cases_are_the_vectors(corpus_dir: Path, variant: corpus.Variant) -> None:
    content = _load(corpus_dir, variant)
    codec = variant.version.codec()
    vectors = {v["name"]: v for v in variant.version.vectors()}
    for case in content["golden"]:
        vector = vectors[case["name"]]
        assert case["bytes"] == vector["msgpack_hex" if variant.msgpack else "hex"]
        assert plain(corpus.from_json(codec, case["frame"])) == vector["fields"]
        if not variant.msgpack:
            assert case["encoded"] == vector.get("encode_hex", vector["hex"])
    vectors = {v["name"]: v for v in variant.version.vectors("_errors")}
    for case in content["golden_errors"]:
        vector = vectors[case["name"]]
        assert case["bytes"] == vector["hex"]
        assert issubclass(getattr(errors, case["error"]), getattr(errors, vector["error"]))


@pytest.mark.parametrize(
    "variant", [pytest.param(v, id=v.name) for v in corpus.VARIANTS if v.name.startswith("rsio")]
)
def test_tracking_sets_overwrites_and_clears(corpus_dir: Path, variant: corpus.Variant) -> None:
    """The tracking stream reaches every way a context value changes."""
    cases = _load(corpus_dir, variant)["tracking"]
    sizes = [len(c["tracked"]["element_size"]) for c in cases]
    before = [len(c["ctx"]["element_size"]) for c in cases]
    assert any(a > b for a, b in zip(sizes, before)), "never set"
    assert any(a < b for a, b in zip(sizes, before)), "never cleared"
    assert any(a == b and c["ctx"] != c["tracked"] for a, b, c in zip(sizes, before, cases))


def test_integers_wider_than_32_bits_are_tagged() -> None:
    versions = {v.version.id: v.version for v in corpus.VARIANTS}
    rsocket = versions["rsocket.v1_0"].codec()
    w = corpus.widths(versions["rsocket.v1_0"])
    keepalive = corpus.to_json(rsocket.Keepalive(stream_id=0, last_received_position=7), w)
    # stream_id: 31 bits of a u32 word; last_received_position: 63 bits of a u64 word.
    assert keepalive == {
        "$type": "Keepalive",
        "stream_id": 0,
        "ignore": False,
        "respond": False,
        "last_received_position": {"big": "7"},
        "data": {"hex": ""},
    }
    rsio = versions["rsio.v0"].codec()
    w = corpus.widths(versions["rsio.v0"])
    assert corpus.to_json(rsio.ClientHello(0, [2**64 - 1]), w) == {
        "$type": "ClientHello",
        "version": {"big": "0"},
        "extensions": [{"big": str(2**64 - 1)}],
    }
    assert corpus.ctx_to_json(rsio.Context({3: 4}), w) == {
        "element_size": [[{"big": "3"}, {"big": "4"}]]
    }
    assert corpus.ctx_to_json(rsocket.Context(), corpus.widths(versions["rsocket.v1_0"])) is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_integer_attribute_has_a_width(variant: corpus.Variant) -> None:
    """The IDL model gives every int attribute of every generated class its width."""
    codec = variant.version.codec()
    w = corpus.widths(variant.version)
    for name, cls in vars(codec).items():
        if not inspect.isclass(cls) or not hasattr(cls, "__match_args__") or name == "Context":
            continue
        hints = inspect.get_annotations(cls)
        for attr in cls.__match_args__:
            hint = str(hints.get(attr, ""))
            if hint.startswith("int") or "[int]" in hint or "int |" in hint:
                # bit fields and flag values (1..63), u24, vbi (28), and whole types
                assert 1 <= w.bits(name, attr) <= 64, (name, attr)


def test_the_corpus_is_the_same_on_every_run(tmp_path: Path) -> None:
    """Fixed seeds: two processes (different hash seeds) write identical files."""
    digests = []
    for hash_seed in ("0", "1"):
        out = tmp_path / hash_seed
        command = [sys.executable, "-m", "tests.crosslang.corpus", str(out), "--differential",
                   "60", "--mutations", "400", "--only", "rsio_v0", "--only", "rabbitmq_stream_v1"]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
        digests.append({p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()})
    assert digests[0] == digests[1]
    assert len(digests[0]) == 3


def test_typescript_agrees_with_python_on_the_corpus(node: str, corpus_dir: Path) -> None:
    """`node` (tests/support/typescript_support.py's fixture) has installed and built the TypeScript
    side, or skipped without Node (failing under CI=true)."""
    assert TS_TEST.exists(), f"tsc -b did not write {TS_TEST}"
    result = subprocess.run(
        [node, "--test", str(TS_TEST)],
        cwd=ROOT,
        env={**os.environ, "WIRESTREAM_CORPUS": str(corpus_dir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, _differences(result.stdout) + result.stderr[-5000:]
    assert "# skipped 0" in result.stdout and "# fail 0" in result.stdout, result.stdout


def _differences(tap: str) -> str:
    """The failures' messages out of node's TAP output (the whole tail when none parse)."""
    blocks, inside = [], False
    for line in tap.splitlines():
        text = line.strip()
        if text.startswith("error: '") and "subtest" in text:
            continue  # a parent's "1 subtest failed"
        if text.startswith("error: |-") or text.startswith("error: '"):
            inside = True
            blocks.append(text.removeprefix("error: |-").strip())
        elif inside and text.startswith(("code:", "name:", "operator:", "stack:", "...")):
            inside = False
        elif inside:
            blocks.append("  " + text)
    found = "\n".join(b for b in blocks if b)
    return found[:20000] if found else tap[-20000:]
