"""BPMUX in the soak: a server whose inner streams carry numbered items, behind a proxy;
clients that connect, open one to three streams at once under inner credit, and close,
again and again.  A cut fails the streams with a typed error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from wirestream.runtime.bpmux.aio import BpmuxServer, Handler, ItemWriter, connect, serve
from wirestream.runtime.errors import ProtocolError
from tests.support.chaos.context import CYCLE_LIMIT, LIMITS, STREAM_LIMIT, Soak
from tests.support.chaos.ledger import StreamSpec, consume, element, parse_spec

__all__ = ["start_server", "client"]


class Numbered(Handler):
    async def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
        spec = parse_spec(data)
        for index in range(spec.count):
            yield element(spec.tag, index, spec.size)


async def start_server() -> BpmuxServer:
    return await serve("tcp://127.0.0.1:0", Numbered(), limits=LIMITS)


def _same(item: bytes) -> bytes:
    return item


async def client(soak: Soak, url: str, number: int) -> None:
    name = "bpmux"
    rng = soak.rng(f"{name}-{number}")
    while soak.running():
        try:
            peer = await connect(url, timeout=10.0, limits=LIMITS)
        except ProtocolError as error:
            soak.ledger.failure(f"{name} connect", error)
            continue
        soak.ledger.connections[name] += 1
        try:
            await soak.pause(rng)
            specs = [soak.spec(rng) for _ in range(rng.randint(1, 3))]

            async def one(spec: StreamSpec) -> None:
                slow = rng.random() < 0.3
                # credit in bytes: from a few items' worth (credit goes back often) to many
                credit = spec.size * rng.choice((2, 8, 64)) + 64
                try:
                    stream = await peer.open_stream(spec.request(), credit=credit)
                except ProtocolError as error:
                    soak.ledger.failure(name, error)
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
