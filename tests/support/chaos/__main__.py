"""``python -m tests.support.chaos --minutes N [--seed S] [--scale F]``: the chaos soak for
N minutes at ``SOAK_LOAD`` (times ``--scale``), the report printed; exit status 1 when
any invariant broke.  ``make soak MINUTES=N`` runs it.  Needs the RabbitMQ broker on
5552 (``make broker``)."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys

from tests.support.chaos.soak import Load, run_soak
from tests.support.soak_support import fd_limit

SOAK_LOAD = Load(rsocket_resumable=40, rsocket=80, rsio=80, bpmux=80, rabbitmq_streams=10,
                 bad_clients=8, bad_server_victims=4, fault_interval=0.05, think=30.0,
                 max_stream_bytes=256 * 1024, max_elements=300,
                 rabbitmq_rate=500.0)  # fmt: skip
"""About 310 connections at once, a fault every 50 ms on average.  Each worker idles
30 s on average between its streams (connected), and a stream carries 300 elements and
256 KiB at most: one process serves every side of the 310 connections (client, proxy,
server), some 3,000 elements a second on a shared 2-core machine; with streams of up to
3,162 elements and 4 s pauses, each stream ran at a few elements a second, past its
90 s deadline."""


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.chaos", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=None, help="repeat a run (printed by each)")
    parser.add_argument("--scale", type=float, default=1.0, help="workers times this")
    args = parser.parse_args()
    seed = secrets.randbits(32) if args.seed is None else args.seed
    load = SOAK_LOAD.scaled(args.scale) if args.scale != 1.0 else SOAK_LOAD
    with fd_limit(open_files(load.connections)):
        report = asyncio.run(run_soak(load, args.minutes * 60, seed))
    print(report)
    return 1 if report.violations else 0


def open_files(connections: int) -> int:
    """Four sockets a proxied connection, plus what the process holds and slack."""
    return 4 * connections + 1_024


if __name__ == "__main__":
    sys.exit(main())
