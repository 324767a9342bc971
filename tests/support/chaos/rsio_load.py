"""rsio in the soak: a server publishing numbered elements behind a proxy; clients that
connect, subscribe one to three times at once, and leave with goodbye, again and
again.  rsio has no resumption: a cut fails the subscriptions with a typed error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from wirestream.runtime import rsio
from wirestream.runtime.errors import ProtocolError
from tests.support.chaos.context import CYCLE_LIMIT, LIMITS, STREAM_LIMIT, Soak
from tests.support.chaos.ledger import StreamSpec, consume, element, parse_spec

__all__ = ["start_server", "client"]


async def _numbered(args: str) -> AsyncIterator[bytes]:
    spec = parse_spec(args.encode())
    for index in range(spec.count):
        yield element(spec.tag, index, spec.size)


async def start_server() -> rsio.RsioServer:
    return await rsio.serve("tcp://127.0.0.1:0", publishers={"numbered": _numbered}, limits=LIMITS)


def _same(item: bytes) -> bytes:
    return item


async def client(soak: Soak, url: str, number: int) -> None:
    name = "rsio"
    rng = soak.rng(f"{name}-{number}")
    while soak.running():
        try:
            peer = await rsio.connect(url, timeout=10.0, limits=LIMITS)
        except ProtocolError as error:
            soak.ledger.failure(f"{name} connect", error)
            continue
        soak.ledger.connections[name] += 1
        try:
            await soak.pause(rng)
            specs = [soak.spec(rng) for _ in range(rng.randint(1, 3))]

            async def one(spec: StreamSpec) -> None:
                slow = rng.random() < 0.3
                try:
                    stream = peer.subscribe("numbered", args=spec.request().decode(),
                                            limit_rate=8 if slow else rng.choice((32, 256)))  # fmt: skip
                except ProtocolError as error:  # the connection was cut before it
                    soak.ledger.failure(f"{name} subscribe", error)
                    return
                await consume(soak.ledger, name, stream, _same, spec, rng=rng, slow=slow,
                              resumable=False, limit=STREAM_LIMIT)  # fmt: skip

            await asyncio.gather(*(one(spec) for spec in specs))
        finally:
            try:
                async with asyncio.timeout(CYCLE_LIMIT - STREAM_LIMIT):
                    await peer.close()
            except TimeoutError:
                soak.ledger.violation(f"{name} {number}: close did not end in time")
            except ProtocolError as error:
                soak.ledger.failure(f"{name} close", error)
