"""The demo's market: a deterministic stream of trades, served over RSocket or published
to a RabbitMQ stream.

Each tick is a msgpack map ``{"symbol": str, "price": float, "qty": int, "ts": Timestamp}``
(``ts`` is msgpack's own Timestamp extension, so it decodes straight into a Spark
``timestamp``).  Prices are a random walk per symbol from a fixed seed, so every run
produces the same trades and the same windows.  ``ts`` is market time: it starts at
``MARKET_OPEN`` and moves 5-15 ms per tick, and one tick in twenty arrives up to three
seconds late, so the query's watermark has out-of-order data to deal with.

Over RSocket (``TickerResponder``), a request-stream's data is the JSON request
``{"count": N}`` (``{}``: unbounded); the responder yields ticks only as REQUEST_N allows,
so a slow consumer slows the market down instead of filling memory.
"""

from __future__ import annotations

import datetime
import itertools
import json
import random
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence

import msgpack

from wirestream.runtime.rsocket.errors import ApplicationError
from wirestream.runtime.rsocket.handler import RSocketPayload, RSocketHandler

__all__ = ["MARKET_OPEN", "SYMBOLS", "TICK_SCHEMA", "ticks", "TickerResponder"]

SYMBOLS = ("ACME", "GLOBEX", "INITECH", "UMBRELLA", "WAYNE")
MARKET_OPEN = datetime.datetime(2026, 11, 20, 9, 30, tzinfo=datetime.timezone.utc)
TICK_SCHEMA = "symbol string, price double, qty long, ts timestamp"
"""The payload schema a query gives the source (``payloadSchema``)."""

_START_PRICES = {"ACME": 101.0, "GLOBEX": 54.0, "INITECH": 12.5, "UMBRELLA": 230.0, "WAYNE": 77.0}


def ticks(count: int | None = None, seed: int = 7) -> Iterator[bytes]:
    """``count`` ticks (None: forever) as msgpack payloads, the same for the same seed."""
    rng = random.Random(seed)
    prices = dict(_START_PRICES)
    clock_us = int(MARKET_OPEN.timestamp() * 1_000_000)
    n = 0
    while count is None or n < count:
        clock_us += rng.randint(5_000, 15_000)
        symbol = rng.choice(SYMBOLS)
        price = max(0.01, prices[symbol] * (1.0 + rng.gauss(0.0, 0.0008)))
        prices[symbol] = price
        late_us = rng.randint(0, 3_000_000) if rng.random() < 0.05 else 0
        stamp = msgpack.Timestamp.from_unix_nano((clock_us - late_us) * 1000)
        yield msgpack.packb(
            {"symbol": symbol, "price": round(price, 4), "qty": rng.randint(1, 500), "ts": stamp}
        )
        n += 1


def parse_request(data: bytes) -> int | None:
    """The tick count a request-stream asks for (None: unbounded)."""
    try:
        request = json.loads(data or b"{}")
    except ValueError:
        raise ApplicationError(f'ticker: request data must be JSON like {{"count": 1000}}, '
                               f"not {data[:40]!r}") from None  # fmt: skip
    count = request.get("count") if isinstance(request, dict) else None
    if count is not None and (not isinstance(count, int) or count < 0):
        raise ApplicationError(f"ticker: count must be a non-negative integer, not {count!r}")
    return count


class TickerResponder(RSocketHandler):
    """Serves ``ticks()`` on request-stream; every request gets the same market.

    ``tape``: the first ticks of ``ticks(seed=seed)``, made beforehand (a recorded market,
    replayed): a request for no more than the tape holds is served from it, so what is
    measured downstream is the pipeline, not the price simulator."""

    def __init__(self, seed: int = 7, tape: Sequence[bytes] | None = None) -> None:
        self.seed = seed
        self.tape = tape
        self.sent = 0
        """Ticks handed to the runtime so far (all requests): what demand allowed."""

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        return self._stream(parse_request(payload.data))

    async def _stream(self, count: int | None) -> AsyncIterator[bytes]:
        tape = self.tape
        if tape is not None and count is not None and count <= len(tape):
            source: Iterable[bytes] = itertools.islice(tape, count)
        else:
            source = ticks(count, self.seed)
        for tick in source:
            self.sent += 1
            yield tick
