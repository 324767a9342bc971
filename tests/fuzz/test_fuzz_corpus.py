"""The committed fuzz corpus, replayed without atheris (tests/fuzz/).

Every input of tests/fuzz/corpus/<target>/ goes through the very harness function
atheris runs (``tests.fuzz.targets.target``): what the fuzzer established -- only
``ProtocolError`` escapes a codec or engine, decoded frames encode back, stream
decoders do not care how bytes are cut, engines write only valid frames -- is checked
again on every ``make test``, in a few seconds.  Each input must also stay within the
fuzzer's length limit, finish well within a second and allocate at most a few
megabytes (tracemalloc): no hang and no allocation sized by the peer.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from tests.fuzz.targets import CORPUS, MAX_LEN, NAMES, target

PEAK_BYTES = 4 * 1024 * 1024  # inputs are <= 4 KiB; engines keep 4-64 KiB limits
SECONDS = 1.0


@pytest.mark.parametrize("name", NAMES)
def test_fuzz_corpus_replays_without_findings(name: str) -> None:
    run = target(name)
    run(b"")  # first use reads the vector files and builds the scenario palettes
    paths = sorted((CORPUS / name).iterdir())
    assert paths, f"no committed corpus for {name} (python -m tests.fuzz.seeds)"
    limit = MAX_LEN[name.partition(".")[0]]
    for path in paths:
        data = path.read_bytes()
        assert len(data) <= limit, f"{path.name}: longer than the fuzzer's -max_len"
        tracemalloc.start()
        start = time.perf_counter()
        try:
            run(data)
        finally:
            taken = time.perf_counter() - start
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert taken < SECONDS, f"{path.name}: {taken:.2f} s"
        assert peak < PEAK_BYTES, f"{path.name}: allocated {peak} bytes at peak"
