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
                 bad_clients=8, bad_server_victims=4, fault_interval=0.05)  # fmt: skip
"""About 330 connections at once, a fault every 50 ms on average."""


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
