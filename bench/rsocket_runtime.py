"""RSocket end to end: wirestream's asyncio client and server against rsocket-py's, side by
side in one run, over loopback TCP with 100-byte payloads (issue 4).

Run: ``python -m bench.rsocket_runtime`` (part of ``make bench``).

Figures (each best of ``REPEATS`` on a fresh connection after a warm-up, client and server
in this one process, so both implementations pay for both ends on the same core):

* request-stream msgs/s: REQUEST_STREAM for N payloads of 100 bytes until the last one,
  the requester consuming with ``limit_rate`` 256 (rsocket-py: ``AwaitableRSocket``'s
  collector, REQUEST_N 256 per batch; ours: ``async for`` over ``request_stream(...,
  limit_rate=256)``).  Servers: ours publishes from an ``async def`` generator (the way
  our handlers are written); rsocket-py is measured with its ``StreamFromGenerator``
  helper (the way its examples publish) and with a hand-written Publisher that emits
  synchronously inside ``request(n)`` (its fastest path).
* request-response req/s: sequential round trips, and 64 requests in flight.
* connect/close ms: ``async with connect(url): pass`` against our server (TCP connect,
  SETUP, ERROR[CONNECTION_CLOSE], the client's transport closed), beside the same cycle in bare
  asyncio (``open_connection`` to a server that closes on EOF): the floor under it.

Targets (issue 30): ours/rsocket-py >= 10x for request-stream and >= 5x for
request-response; a connect/close cycle <= 0.3 ms.  (Issue 4's were 5x and 3x.)
Ratios compare like with like: each library's idiomatic publisher for streams, and the
64-in-flight figure for request-response (sequential figures are printed too).  The
ratios against rsocket-py's hand-written publisher are printed beside them.

On a shared machine these ratios move by 2x from run to run; ``bench.rsocket_instructions``
counts the instructions one request, item or connection of ours costs (valgrind), the
figure to compare a change with its parent by (docs/rsocket.md, "Speed").
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bench.rsocket_py_baseline import (
    CONCURRENCY,
    N_CONCURRENT,
    N_ITEMS,
    N_SEQUENTIAL,
    PAYLOAD_SIZE,
    REPEATS,
    STREAM_LIMIT_RATE,
    bench_py_request_response,
    bench_py_request_stream,
    start_py_bench_server,
)
from wirestream.runtime.rsocket import RSocketPayload, RSocketHandler, connect, serve

STREAM_TARGET = 10.0
RESPONSE_TARGET = 5.0
CYCLE_TARGET_MS = 0.3
N_CYCLES = 1_000  # connect/close cycles per run
N_OUR_ITEMS = 100_000  # ours is faster: a longer run for a steadier figure


class BenchResponder(RSocketHandler):
    """The benchmark contract: a stream of N 100-byte payloads; request-response echoes."""

    def __init__(self, payload_size: int = PAYLOAD_SIZE) -> None:
        self.item = RSocketPayload(b"x" * payload_size)

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        return payload

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[RSocketPayload]:
        item = self.item
        for _ in range(int(payload.data)):
            yield item


async def bench_our_request_stream(url: str, n_items: int = N_OUR_ITEMS,
                                   limit_rate: int = STREAM_LIMIT_RATE) -> float:  # fmt: skip
    best = float("inf")
    for attempt in range(REPEATS + 1):  # the first is the warm-up
        async with connect(url) as rs:
            count = n_items if attempt else 1_000
            start = time.perf_counter()
            received = 0
            async for payload in rs.request_stream(b"%d" % count, limit_rate=limit_rate):
                if len(payload.data) != PAYLOAD_SIZE:
                    raise AssertionError("wrong payload size")
                received += 1
            elapsed = time.perf_counter() - start
            if received != count:
                raise AssertionError(f"{received} of {count} payloads")
            if attempt:
                best = min(best, elapsed)
    return n_items / best


async def bench_our_request_response(url: str, n_requests: int,
                                     concurrency: int = 1) -> float:  # fmt: skip
    best = float("inf")
    data = b"y" * PAYLOAD_SIZE
    for attempt in range(REPEATS + 1):
        async with connect(url) as rs:
            total = n_requests if attempt else 500
            per_task = total // concurrency

            async def worker() -> None:
                for _ in range(per_task):
                    reply = await rs.request_response(data)
                    if reply.data != data:
                        raise AssertionError("not an echo")

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed = time.perf_counter() - start
            if attempt:
                best = min(best, elapsed / (per_task * concurrency))
    return 1 / best


async def bench_our_connect_close(url: str, n_cycles: int = N_CYCLES) -> float:
    """Seconds per ``async with connect(url): pass`` (best of ``REPEATS``)."""
    best = float("inf")
    for attempt in range(REPEATS + 1):
        count = n_cycles if attempt else 50
        start = time.perf_counter()
        for _ in range(count):
            async with connect(url):
                pass
        elapsed = time.perf_counter() - start
        if attempt:
            best = min(best, elapsed / count)
    return best


async def bench_bare_connect_close(n_cycles: int = N_CYCLES) -> float:
    """Seconds per TCP connect and close in plain asyncio streams (best of ``REPEATS``):
    the server reads to EOF and closes, the client closes and waits for it."""

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()  # not waited for: a task still waiting would be cancelled at the end

    server = await asyncio.start_server(serve_one, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    best = float("inf")
    try:
        for attempt in range(REPEATS + 1):
            count = n_cycles if attempt else 50
            start = time.perf_counter()
            for _ in range(count):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                await writer.wait_closed()
            elapsed = time.perf_counter() - start
            if attempt:
                best = min(best, elapsed / count)
    finally:
        server.close()
        await server.wait_closed()
    return best


@dataclass
class Row:
    figure: str
    ours: float
    theirs: float
    target: float | None
    unit: str

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs

    def line(self) -> str:
        verdict = ""
        if self.target is not None:
            verdict = f"  target >= {self.target:.0f}x: " + (
                "PASS" if self.ratio >= self.target else "MISS"
            )
        return (f"{self.figure:<52} {self.ours:>10,.0f} {self.theirs:>10,.0f} {self.unit:<6}"
                f" {self.ratio:>6.2f}x{verdict}")  # fmt: skip


@dataclass
class CycleRow:
    """A cost per connection (lower is better), beside bare asyncio's."""

    figure: str
    ours_ms: float
    bare_ms: float
    target_ms: float

    def line(self) -> str:
        verdict = "PASS" if self.ours_ms <= self.target_ms else "MISS"
        return (f"{self.figure:<52} {self.ours_ms:>10.3f} {self.bare_ms:>10.3f} {'ms':<6}"
                f" {self.ours_ms / self.bare_ms:>6.2f}x  target <= {self.target_ms} ms: "
                f"{verdict}")  # fmt: skip


async def measure() -> list[Row | CycleRow]:
    py_generator = await start_py_bench_server(stream_publisher="generator")
    py_direct = await start_py_bench_server(stream_publisher="direct")
    ours = await serve("tcp://127.0.0.1:0", BenchResponder())
    try:
        stream_ours = await bench_our_request_stream(ours.url)
        stream_py_gen = await bench_py_request_stream(py_generator.url, N_ITEMS)
        stream_py_direct = await bench_py_request_stream(py_direct.url, N_ITEMS)
        rr_ours_seq = await bench_our_request_response(ours.url, N_SEQUENTIAL * 2)
        rr_py_seq = await bench_py_request_response(py_direct.url, N_SEQUENTIAL)
        rr_ours_conc = await bench_our_request_response(ours.url, N_CONCURRENT * 2, CONCURRENCY)
        rr_py_conc = await bench_py_request_response(py_direct.url, N_CONCURRENT,
                                                     concurrency=CONCURRENCY)  # fmt: skip
        cycle_ours = await bench_our_connect_close(ours.url)
        cycle_bare = await bench_bare_connect_close()
    finally:
        ours.close()
        await ours.wait_closed()
        await py_generator.close()
        await py_direct.close()
    return [
        Row("request-stream (idiomatic publishers)", stream_ours, stream_py_gen,
            STREAM_TARGET, "msg/s"),
        Row("request-stream (vs rsocket-py's hand-written pub.)", stream_ours,
            stream_py_direct, None, "msg/s"),
        Row(f"request-response ({CONCURRENCY} in flight)", rr_ours_conc, rr_py_conc,
            RESPONSE_TARGET, "req/s"),
        Row("request-response (sequential)", rr_ours_seq, rr_py_seq, None, "req/s"),
        CycleRow("connect/close cycle (vs bare asyncio streams)", cycle_ours * 1e3,
                 cycle_bare * 1e3, CYCLE_TARGET_MS),
    ]  # fmt: skip


def main() -> int:
    rows = asyncio.run(measure())
    print("RSocket 1.0 over loopback TCP, 100-byte payloads, client and server in one process")
    print(
        f"{'':<52} {'ours':>10} {'rsocket-py':>10} {'':<6} {'ratio':>7}"
        "  (connect/close: the second column is bare asyncio)"
    )
    for row in rows:
        print(row.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "BenchResponder",
    "bench_bare_connect_close",
    "bench_our_connect_close",
    "bench_our_request_response",
    "bench_our_request_stream",
    "main",
]
