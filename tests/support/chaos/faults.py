"""The fault injector: at random moments, one open connection of one proxy is cut,
stalled or throttled (tests/support/tcp_proxy.py), for the whole run.

Stalls end before any keepalive or heartbeat limit of the soak's connections (they test
that a pause loses nothing); throttles go down to a few KiB/s, so frames arrive in
pieces and writers meet backpressure.  Every decision comes from the injector's own
``random.Random``, seeded from the soak's seed.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from tests.support.tcp_proxy import TcpProxy

__all__ = ["FaultInjector", "MAX_STALL"]

MAX_STALL = 1.5
"""Seconds: below the RSocket soak clients' max lifetime (10 s) and the RabbitMQ
heartbeat (60 s), so a stall is a pause, not a dead peer."""

KINDS = (("cut", 4), ("stall", 3), ("throttle", 3))


class FaultInjector:
    def __init__(self, proxies: dict[str, TcpProxy], rng: random.Random, interval: float) -> None:
        self.proxies = proxies
        self.rng = rng
        self.interval = interval  # mean seconds between two faults
        self.injected: Counter[str] = Counter()  # "kind" and "kind protocol"

    async def run(self, stop: asyncio.Event) -> None:
        kinds = [kind for kind, weight in KINDS for _ in range(weight)]
        names = sorted(self.proxies)
        while not stop.is_set():
            try:
                async with asyncio.timeout(self.rng.expovariate(1 / self.interval)):
                    await stop.wait()
            except TimeoutError:
                pass
            if stop.is_set():
                return
            name = self.rng.choice(names)
            proxy = self.proxies[name]
            links = proxy.links
            if not links:
                continue
            link = self.rng.choice(sorted(links, key=id))
            kind = self.rng.choice(kinds)
            if kind == "cut":
                proxy.cut_link(link)
            elif kind == "stall":
                proxy.stall_link(link, self.rng.uniform(0.05, MAX_STALL))
            else:
                proxy.throttle_link(link, self.rng.choice((4_096, 32_768, 262_144)),
                                    self.rng.uniform(0.2, 3.0))  # fmt: skip
            self.injected[kind] += 1
            self.injected[f"{kind} {name}"] += 1
