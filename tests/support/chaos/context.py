"""What every worker of the soak shares: the ledger, the stop signal, the seed, limits."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from wirestream.runtime.limits import ConnectionLimits
from tests.support.chaos.ledger import MAX_ELEMENTS, MAX_STREAM_BYTES, Ledger, StreamSpec

__all__ = ["Soak", "STREAM_LIMIT", "CYCLE_LIMIT", "LIMITS"]

STREAM_LIMIT = 90.0
"""Seconds a stream may take before it counts as hung: its 2 MiB at most, through a
proxy that may throttle it to 4 KiB/s for 3 s and stall it, on a shared 2-core machine
with hundreds of other streams."""

CYCLE_LIMIT = STREAM_LIMIT + 30.0
"""A whole connection cycle: connect (10 s), its streams, close (the goodbye wait)."""

LIMITS = ConnectionLimits(handshake_timeout=5.0, frame_timeout=5.0)
"""The soak's servers and clients drop a peer that sends no whole frame within 5 s of
connecting or of beginning one (a trickler, a garbage length prefix): short, so a bad
peer shows within the run; long enough for a throttled link (4 KiB/s) to carry a 16 KiB
element."""


@dataclass
class Soak:
    ledger: Ledger
    stop: asyncio.Event
    seed: int
    think: float = 0.0  # mean seconds a worker idles, connected, between its streams
    max_stream_bytes: int = MAX_STREAM_BYTES
    max_elements: int = MAX_ELEMENTS
    rabbitmq_rate: float = 3_000.0  # messages a second per producer, on average

    async def pause(self, rng: random.Random) -> None:
        """Idle (the connection stays open) for a random while, or until the stop: with
        hundreds of connections, most idle at any moment, as in a real fan-in; without
        it one process cannot carry all their streams within the streams' deadline."""
        if self.think <= 0:
            return
        try:
            async with asyncio.timeout(rng.expovariate(1 / self.think)):
                await self.stop.wait()
        except TimeoutError:
            pass

    def spec(self, rng: random.Random) -> StreamSpec:
        return StreamSpec.draw(self.ledger.tag(), rng, max_bytes=self.max_stream_bytes,
                               max_elements=self.max_elements)  # fmt: skip

    def rng(self, name: str) -> random.Random:
        """A worker's own random source: its decisions repeat with the seed whatever the
        interleaving (what the network does to them may not)."""
        return random.Random(f"{self.seed}:{name}")

    def running(self) -> bool:
        return not self.stop.is_set()
