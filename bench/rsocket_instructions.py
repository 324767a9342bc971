"""RSocket per-unit cost in CPU instructions, the figure a shared machine cannot spoil.

Run: ``python -m bench.rsocket_instructions [rr|stream|cycle ...]`` (needs valgrind; not
part of ``make bench``).  Each workload of ``bench.rsocket_runtime`` (client and server in
one process, loopback TCP, 100-byte payloads) runs under ``valgrind --tool=callgrind`` at
two sizes; the difference of the instructions executed, divided by the difference of the
sizes, is the cost of one unit without the interpreter's start-up and imports:

* ``rr``: one request-response, 64 in flight;
* ``stream``: one item of a request-stream (``limit_rate`` 256);
* ``cycle``: one ``async with connect(url): pass``.

Wall-clock ratios (``bench.rsocket_runtime``) move by 2x when other work shares the cores;
instruction counts do not move at all, so a change is measured against its parent by
running this in both checkouts.  (Instructions are not time: a syscall counts only its
user-space part.  Quote both.)
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

from bench.rsocket_runtime import BenchResponder
from wirestream.runtime.rsocket import connect, serve

SIZES = {"rr": (640, 2560), "stream": (2_000, 10_000), "cycle": (50, 250)}
UNITS = {"rr": "request", "stream": "item", "cycle": "connection"}


async def workload(kind: str, n: int) -> None:
    server = await serve("tcp://127.0.0.1:0", BenchResponder())
    try:
        if kind == "rr":
            data = b"y" * 100
            async with connect(server.url) as rs:

                async def worker() -> None:
                    for _ in range(n // 64):
                        await rs.request_response(data)

                await asyncio.gather(*(worker() for _ in range(64)))
        elif kind == "stream":
            async with connect(server.url) as rs:
                async for _ in rs.request_stream(b"%d" % n, limit_rate=256):
                    pass
        else:
            for _ in range(n):
                async with connect(server.url):
                    pass
    finally:
        server.close()
        await server.wait_closed()


def instructions(kind: str, n: int) -> int:
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-m", "bench.rsocket_instructions", "--run", kind, str(n)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from valgrind:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--run"]:
        asyncio.run(workload(argv[1], int(argv[2])))
        return 0
    for kind in argv or list(SIZES):
        small, large = SIZES[kind]
        per_unit = (instructions(kind, large) - instructions(kind, small)) / (large - small)
        print(f"{kind:<7} {per_unit:>10,.0f} instructions per {UNITS[kind]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
