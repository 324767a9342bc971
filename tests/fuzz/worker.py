"""One fuzz target under atheris (libFuzzer) in this process:

    python -m tests.fuzz.worker <target> [libFuzzer flags] [corpus folders]

``python -m tests.fuzz`` (``make fuzz``) starts one of these per target with the flags
that bound it; run it directly to reproduce a crash (``... <target> crash-<sha1>``).
The wirestream modules are imported under ``atheris.instrument_imports`` so libFuzzer
sees which branches of the codecs and engines an input reached.

Once the target is loaded, the process may map at most ``HEADROOM_MB`` more memory
(``RLIMIT_AS``): an input that makes a decoder or engine allocate beyond that -- an
allocation sized by the peer -- fails with ``MemoryError``, which libFuzzer reports as
a crash, whatever the allocator.  (libFuzzer's own ``-malloc_limit_mb`` needs a
sanitizer's malloc hooks, which a CPython process does not have; its
``-rss_limit_mb`` stays on as a second net.)
"""

from __future__ import annotations

import os
import resource
import sys

import atheris

HEADROOM_MB = 512


def _limit_memory(headroom_mb: int) -> None:
    with open("/proc/self/status", encoding="ascii") as status:
        size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size_kb * 1024 + headroom_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    name = sys.argv[1]
    with atheris.instrument_imports(include=["wirestream"]):
        from tests.fuzz.targets import target

        run = target(name)
    run(b"")  # first use: the scenario palettes and vector files are read now
    _limit_memory(HEADROOM_MB)
    # argv[0] is what libFuzzer runs again for -merge=1 (tests/fuzz/__main__.py's launcher)
    atheris.Setup([os.environ.get("WIRESTREAM_FUZZ_ARGV0", sys.argv[0]), *sys.argv[2:]], run)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
