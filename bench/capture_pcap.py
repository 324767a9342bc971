"""pcap speed: the same frames written and read as a .wscap capture and as pcapng.

    .venv/bin/python -m bench.capture_pcap [FRAMES]

300,000 RSocket PAYLOAD frames of 100 B (by default) over 4 connections, one core: the
capture writer and reader (``runtime.capture``) against the pcapng writer and the pcap
reader (``runtime.capture.pcap``: synthesized TCP out; TCP reassembly and framing back
in), best of 3. The ratio says what reading a tcpdump-style file costs against our own
format, on the same frames, in the same run.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from wirestream.generated.rsocket import v1_0 as rsocket
from wirestream.runtime.capture import CaptureWriter
from wirestream.runtime.capture.pcap import PcapngWriter, PcapReader
from wirestream.runtime.capture.reader import CaptureRecord, iter_records

FRAMES = 300_000
CONNECTIONS = 4
RUNS = 3


def records(n: int) -> list[CaptureRecord]:
    frame = rsocket.encode(rsocket.Payload(stream_id=1, data=b"x" * 100, next=True))
    start = 1_700_000_000_000_000_000
    return [
        CaptureRecord(start + i * 1_000, 1 + i % CONNECTIONS, "out" if i % 2 else "in", frame)
        for i in range(n)
    ]


def best(work: Callable[[], int]) -> tuple[float, int]:
    """(best frames/s, frames) of RUNS runs of ``work`` (which returns its frame count)."""
    rates = []
    count = 0
    for _ in range(RUNS):
        started = time.perf_counter()
        count = work()
        rates.append(count / (time.perf_counter() - started))
    return max(rates), count


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else FRAMES
    frames = records(n)
    folder = Path(tempfile.mkdtemp(prefix="wirestream-bench-pcap-"))
    base, pcapng = folder / "s", folder / "s.pcapng"
    written: list[Path] = []

    def write_wscap() -> int:
        with CaptureWriter(base, "rsocket/1.0", max_file_bytes=None) as capture:
            for r in frames:
                capture.record(r.connection_id, r.direction, r.frame, timestamp_ns=r.timestamp_ns)
            written.append(Path(capture.path))
        return n

    def write_pcapng() -> int:
        with open(pcapng, "wb") as out:
            writer = PcapngWriter(out, "rsocket/1.0")
            for r in frames:
                writer.add(r)
            writer.close()
        return n

    def read_wscap() -> int:
        return sum(1 for _ in iter_records(written[-1]))

    def read_pcap() -> int:
        return sum(1 for _ in PcapReader(pcapng))

    print(f"captures, {n:,} RSocket PAYLOAD frames of 100 B over {CONNECTIONS} connections, "
          f"best of {RUNS}, frames/s, one core")  # fmt: skip
    rows = []
    for label, wscap_work, pcap_work in (("write", write_wscap, write_pcapng),
                                         ("read", read_wscap, read_pcap)):  # fmt: skip
        ours, count_a = best(wscap_work)
        pcap, count_b = best(pcap_work)
        if count_a != n or count_b != n:
            raise RuntimeError(f"{label}: {count_a} and {count_b} frames, expected {n}")
        rows.append((label, ours, pcap))
        print(f"  {label:<6} .wscap {ours:>11,.0f}   pcapng {pcap:>11,.0f}   "
              f"pcapng/.wscap {pcap / ours:4.2f}x")  # fmt: skip
    print(f"  file sizes: .wscap {os.path.getsize(written[-1]) / 1e6:.1f} MB, "
          f"pcapng {os.path.getsize(pcapng) / 1e6:.1f} MB")  # fmt: skip
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
