"""The cross-language corpus (tests/crosslang/corpus.py), written once per test session.

Python's answers for every protocol version and encoding: the TypeScript codecs must agree
with it (tests/crosslang/test_crosslang.py) and so must the Rust ones
(tests/codegen/test_rust.py, for the versions the Rust target spells). Writing it is one
of the suite's larger costs (1,000 differential frames and 10,000 mutants per variant,
each encoded and decoded), and it is the same on every run (fixed seeds, one per variant:
``test_the_corpus_is_the_same_on_every_run``), so both read one copy; neither changes it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from pathlib import Path

import pytest

from tests.support import shared_services


@pytest.fixture(scope="session")
def crosslang_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole corpus: every variant's file and ``index.json``."""
    # imported here: every session imports this module (tests/conftest.py), and the corpus
    # module brings in every generated package and hypothesis (~0.4 s)
    from tests.crosslang import corpus

    # Under pytest-xdist, written once for all workers: in the folder their temporary
    # folders share, by whichever asks first, the others waiting on the lock.
    root = tmp_path_factory.getbasetemp()
    if shared_services.in_worker():
        root = root.parent
    out = root / "crosslang-corpus"
    with shared_services.start_lock(f"corpus-{root.name}"):
        if not (out / "index.json").exists():
            partial = root / "crosslang-corpus.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            corpus.write(partial)
            partial.rename(out)
    return out


def corpus_subset(whole: Path, names: Collection[str], out: Path) -> Path:
    """``out`` holding the files of the variants ``names`` of the corpus ``whole`` and an
    ``index.json`` naming only them, as ``corpus.write(out, those variants)`` lays them out
    (each variant's cases come from its own seeds, not from the variants before it)."""
    index = json.loads((whole / "index.json").read_text(encoding="utf-8"))
    index["files"] = [f for f in index["files"] if Path(f["file"]).stem in names]
    assert sorted(Path(f["file"]).stem for f in index["files"]) == sorted(names), names
    out.mkdir(parents=True, exist_ok=True)
    for entry in index["files"]:
        shutil.copyfile(whole / entry["file"], out / entry["file"])
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return out
