"""The Rust codec's ratios (issue 28), in one run: ``python -m bench.rust_ratios`` (``make bench``).

The same RSocket 1.0 PAYLOAD frame (16 B metadata + 100 B data, 125 bytes) decoded and
encoded by:

* the generated Rust crate (``generated/rust/rsocket_v1_0``), streaming length-prefixed
  frames from memory (``Frames``), encoding into a reused buffer;
* a hand-written Rust loop for this one frame type (the floor);
* ``rsocket_rust`` 0.7.5 (its length codec's ``split_to`` then ``Frame::decode``; ``write_to``);

all three timed by ``bench/rust`` (``cargo run --release -- --json``, built here; each loop
observes the decoded frame, and the rounds of the six figures are interleaved so that the
machine's load slows them alike), and
* the generated Python codec (``wirestream.generated.rsocket.v1_0.decode``/``encode``),
  timed here as bench/codec.py times it.

Targets (PASS/MISS): Rust decode >= 50x the generated Python decode, within 1.25x of the
hand-written loop (generated / hand <= 1.25) and >= 2.5x rsocket_rust. Encode is reported
against the same three.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import wirestream.generated.rsocket.v1_0 as rs
from bench.codec import N_SINGLE, frames_per_second

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "bench" / "rust" / "Cargo.toml"


def rust_figures() -> dict[str, float]:
    """ns per frame from bench/rust (release build)."""
    build = ["cargo", "build", "--release", "--quiet", "--manifest-path", str(MANIFEST)]
    subprocess.run(build, check=True)
    binary = ROOT / "bench" / "rust" / "target" / "release" / "wirestream-bench-rust"
    done = subprocess.run([str(binary), "--json"], check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def main() -> int:
    frame = rs.Payload(stream_id=1, next=True, metadata=b"\x07" * 16, data=b"x" * 100)
    wire = rs.encode(frame)
    assert len(wire) == 125 and rs.decode(wire) == frame
    python_decode = 1e9 / frames_per_second(rs.decode, wire, N_SINGLE)
    python_encode = 1e9 / frames_per_second(rs.encode, frame, N_SINGLE)
    ns = rust_figures()
    print("Rust codec (RSocket 1.0 PAYLOAD, 125 B), ns per frame (lower is better)")
    rows = [
        ("decode", ns["decode_generated"], ns["decode_hand"], ns["decode_rsocket_rust"],
         python_decode),
        ("encode", ns["encode_generated"], ns["encode_hand"], ns["encode_rsocket_rust"],
         python_encode),
    ]  # fmt: skip
    print(f"  {'':<8}{'generated':>11}{'hand loop':>11}{'rsocket_rust':>14}{'Python':>10}")
    for name, generated, hand, peer, python in rows:
        print(f"  {name:<8}{generated:>11.1f}{hand:>11.1f}{peer:>14.1f}{python:>10.1f}")
    print()
    print("Summary")
    print("-------")
    decode, encode = rows
    checks = [
        ("Rust decode vs generated Python decode", decode[4] / decode[1], ">=", 50.0),
        ("Rust decode vs hand-written Rust loop (time ratio)", decode[1] / decode[2], "<=", 1.25),
        ("Rust decode vs rsocket_rust", decode[3] / decode[1], ">=", 2.5),
        ("Rust encode vs generated Python encode", encode[4] / encode[1], None, 0.0),
        ("Rust encode vs hand-written Rust loop (time ratio)", encode[1] / encode[2], None, 0.0),
        ("Rust encode vs rsocket_rust", encode[3] / encode[1], None, 0.0),
    ]
    for label, ratio, op, target in checks:
        if op is None:
            print(f"  {label:<56} {ratio:>7.2f}x")
            continue
        met = ratio >= target if op == ">=" else ratio <= target
        verdict = "PASS" if met else "MISS"
        print(f"  {label:<56} {ratio:>7.2f}x  target {op} {target:g}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
