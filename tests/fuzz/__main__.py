"""Run the fuzz targets under atheris, one after the other (``make fuzz``).

    python -m tests.fuzz [--seconds 240] [--runs N] [--target NAME ...] [--merge]

Each target runs in its own process (tests/fuzz/worker.py) for an equal share of
``--seconds`` (or until it has run ``--runs`` inputs), starting from the committed
corpus (tests/fuzz/corpus/<target>/, read only) and what earlier runs found
(out/fuzz/corpus/<target>/, where new inputs go).  libFuzzer bounds every input:
``-max_len`` bytes, ``-timeout`` seconds (a hang is a finding), ``-rss_limit_mb`` of
memory (so is an allocation the input sizes).  A crash is written to
out/fuzz/crashes/<target>-crash-<sha1>; reproduce it with
``python -m tests.fuzz.worker <target> <file>``.  ``--merge`` adds the inputs of
out/fuzz/corpus/ that reach new coverage to the committed corpus (libFuzzer's
``-merge=1``).  One line per target reports inputs, seconds and inputs per second; the
exit status is 1 when any target crashed.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.fuzz.targets import CORPUS, MAX_LEN, NAMES, version_of

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "fuzz"
TIMEOUT = 10  # seconds for one input: far beyond any legitimate one (milliseconds)
RSS_LIMIT_MB = 2048


def _flags(name: str) -> list[str]:
    return [f"-max_len={MAX_LEN[name.partition('.')[0]]}", f"-timeout={TIMEOUT}",
            f"-rss_limit_mb={RSS_LIMIT_MB}", "-print_final_stats=1"]  # fmt: skip


def _worker(name: str) -> list[str]:
    return [sys.executable, "-m", "tests.fuzz.worker", name]


def fuzz(name: str, seconds: int, runs: int | None) -> tuple[int, float, int]:
    """Fuzz one target; returns (inputs run, seconds taken, exit status)."""
    work = OUT / "corpus" / name
    crashes = OUT / "crashes"
    work.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    (CORPUS / name).mkdir(parents=True, exist_ok=True)
    command = [*_worker(name), *_flags(name), f"-artifact_prefix={crashes}/{name}-"]
    command.append(f"-runs={runs}" if runs else f"-max_total_time={seconds}")
    command += [str(work), str(CORPUS / name)]
    log = OUT / f"{name}.log"
    start = time.monotonic()
    with log.open("wb") as sink:
        status = subprocess.run(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT).returncode
    taken = time.monotonic() - start
    text = log.read_text(encoding="utf-8", errors="replace")
    found = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    if not found:
        found = re.findall(r"Done (\d+) runs", text)
    return (int(found[-1]) if found else 0), taken, status


def _launcher(name: str) -> Path:
    """An executable that starts the worker of ``name``: libFuzzer's ``-merge=1`` runs
    its argv[0] again, in child processes, with only libFuzzer's flags."""
    path = OUT / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    python, root = shlex.quote(sys.executable), shlex.quote(str(ROOT))
    path.write_text(f'#!/bin/sh\ncd {root} || exit 1\nWIRESTREAM_FUZZ_ARGV0="$0" '
                    f'exec {python} -m tests.fuzz.worker {name} "$@"\n')  # fmt: skip
    path.chmod(0o755)
    return path


def merge(name: str) -> None:
    """Add what out/fuzz/corpus/<name> covers beyond the committed corpus to it."""
    work = OUT / "corpus" / name
    if not work.is_dir():
        return
    command = [str(_launcher(name)), *_flags(name), "-merge=1", str(CORPUS / name), str(work)]
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seconds", type=int, default=240, help="total time, shared equally")
    parser.add_argument("--runs", type=int, default=None, help="inputs per target instead")
    parser.add_argument("--target", action="append", choices=NAMES, help="default: all")
    parser.add_argument("--merge", action="store_true", help="grow the committed corpus")
    args = parser.parse_args()
    names = args.target or list(NAMES)
    share = max(1, args.seconds // len(names))
    failed = []
    print(f"{'target':32} {'version':22} {'inputs':>10} {'seconds':>8} {'inputs/s':>9}  result")
    for name in names:
        inputs, taken, status = fuzz(name, share, args.runs)
        result = "ok" if status == 0 else f"CRASH (exit {status}; see out/fuzz/{name}.log)"
        if status != 0:
            failed.append(name)
        rate = inputs / taken if taken else 0.0
        print(f"{name:32} {version_of(name):22} {inputs:>10} {taken:>8.1f} {rate:>9.0f}  {result}",
              flush=True)  # fmt: skip
        if args.merge and status == 0:
            merge(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
