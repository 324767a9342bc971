"""Reactive Streams protocol stream throughput, packed messages on and off.

Run: ``python -m bench.rsio_stream`` (``make bench``).  One measurement: our subscriber
(``wirestream.runtime.rsio.connect`` + ``peer.subscribe``) drains ``n`` elements of 100 bytes from
our publisher (``wirestream.runtime.rsio.serve``, an async generator declared fixed-size with
``Publisher(element_size=100)``) over loopback TCP, binary encoding, ``limit_rate`` 1024.

- packed off: one onNext per element (fixed-size: no length prefix);
- packed on: what the publisher produced in one loop turn goes out as onNextPacked.

The rate is elements received by the application per second, timed from the subscribe
to the last element (the connection is set up before), best of ``REPEATS``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator

from wirestream.runtime.rsio import Publisher, connect, serve

REPEATS = 3
N = 200_000
PAYLOAD = 100
LIMIT_RATE = 1024


async def bench_rsio_stream(packed: bool, n: int = N, payload: int = PAYLOAD,
                            limit_rate: int = LIMIT_RATE) -> float:  # fmt: skip
    """Elements per second of one stream of ``n`` ``payload``-byte elements over loopback
    TCP, our subscriber against our publisher."""
    element = b"x" * payload

    async def source(args: str) -> AsyncIterator[bytes]:
        for _ in range(n):
            yield element

    publishers = {"bench": Publisher(source, element_size=payload)}
    async with await serve("tcp://127.0.0.1:0", publishers=publishers, packed=packed) as server:
        async with await connect(server.url, packed=packed) as peer:
            received = 0
            start = time.perf_counter()
            async for _ in peer.subscribe("bench", limit_rate=limit_rate):
                received += 1
            elapsed = time.perf_counter() - start
    if received != n:
        raise RuntimeError(f"received {received} of {n} elements")
    return n / elapsed


def best_rate(packed: bool, n: int = N) -> float:
    return max(asyncio.run(bench_rsio_stream(packed, n)) for _ in range(REPEATS))


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else N
    print()
    print(f"Reactive Streams protocol: one stream of {n:,} x {PAYLOAD} B elements, loopback TCP,")
    print(
        f"ours (subscriber) vs ours (publisher), binary, limit_rate {LIMIT_RATE}, best of {REPEATS}"
    )
    header = f"  {'packed':<8} {'elements/s':>12} {'MB/s':>8}"
    print(header)
    print("  " + "-" * (len(header) - 2))
    rates = {}
    for packed in (False, True):
        rate = rates[packed] = best_rate(packed, n)
        label = "on" if packed else "off"
        print(f"  {label:<8} {rate:>12,.0f} {rate * PAYLOAD / 1e6:>8.1f}")
    print(f"  packed on / off: {rates[True] / rates[False]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
