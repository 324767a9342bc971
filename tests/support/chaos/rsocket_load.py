"""RSocket in the soak: a resumable server behind a proxy; resumable clients that keep one
session for the whole run (every stream must complete, exactly once, in order, through
every cut), and plain clients that connect, run one to three streams at once, and
close, again and again (a cut fails their streams with a typed error)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rsocket import (
    RSocketHandler,
    RSocketPayload,
    RSocketPeer,
    RSocketServer,
    connect,
    serve,
)
from wirestream.runtime.rsocket.options import Limits
from tests.support.chaos.context import CYCLE_LIMIT, LIMITS, STREAM_LIMIT, Soak
from tests.support.chaos.ledger import StreamSpec, consume, element, parse_spec

__all__ = ["start_server", "resumable_client", "plain_client", "LIMITS_RSOCKET"]

LIMITS_RSOCKET = Limits(handshake_timeout=LIMITS.handshake_timeout, frame_timeout=LIMITS.frame_timeout,
                        resume_buffer_size=8 * 1024 * 1024)  # fmt: skip
"""The resume buffer holds what the peer has not acknowledged (KEEPALIVE every 500 ms
here): a fast stream of 100 KB elements leaves several MiB in flight in that time."""

KEEPALIVE = 500  # ms
MAX_LIFETIME = 10_000  # ms: above any stall of the injector (faults.MAX_STALL)


class Numbered(RSocketHandler):
    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        spec = parse_spec(payload.data)
        for index in range(spec.count):
            yield element(spec.tag, index, spec.size)


async def start_server() -> RSocketServer:
    return await serve("tcp://127.0.0.1:0", Numbered(), resume=True, resume_timeout=30.0,
                       limits=LIMITS_RSOCKET)  # fmt: skip


def _data(payload: RSocketPayload) -> bytes:
    return payload.data


async def _streams(
    soak: Soak, rs: RSocketPeer, name: str, rng: random.Random, resumable: bool
) -> None:
    specs = [soak.spec(rng) for _ in range(rng.randint(1, 3))]

    async def one(spec: StreamSpec) -> None:
        slow = rng.random() < 0.3
        try:
            stream = rs.request_stream(
                spec.request(), limit_rate=8 if slow else rng.choice((32, 256))
            )
        except ProtocolError as error:
            # a request made while a resumable session resumes waits for RESUME_OK ("the
            # client must NOT send any other frame until resumption succeeds") and fails
            # typed when the resumption does: the stream never existed, nothing is lost
            soak.ledger.failure(f"{name} request", error)
            return
        await consume(soak.ledger, name, stream, _data, spec, rng=rng, slow=slow,
                      resumable=resumable, limit=STREAM_LIMIT)  # fmt: skip

    await asyncio.gather(*(one(spec) for spec in specs))


async def resumable_client(soak: Soak, url: str, number: int) -> None:
    """One session for the run; its streams must all complete."""
    name = "rsocket-resumable"
    rng = soak.rng(f"{name}-{number}")
    while soak.running():
        try:
            async with asyncio.timeout(CYCLE_LIMIT):
                rs = await connect(url, resume=True, resume_timeout=30.0, keepalive_interval=KEEPALIVE,
                                   max_lifetime=MAX_LIFETIME, limits=LIMITS_RSOCKET)  # fmt: skip
        except ProtocolError as error:  # a cut before the session existed: nothing to resume
            soak.ledger.failure(f"{name} connect", error)
            continue
        except TimeoutError:
            soak.ledger.violation(f"{name} {number}: connect did not end within {CYCLE_LIMIT} s")
            return
        soak.ledger.connections[name] += 1
        try:
            while soak.running():
                await _streams(soak, rs, name, rng, resumable=True)
                await soak.pause(rng)
        finally:
            await _close(soak, name, rs)
        return


async def plain_client(soak: Soak, url: str, number: int) -> None:
    name = "rsocket"
    rng = soak.rng(f"{name}-{number}")
    while soak.running():
        try:
            async with asyncio.timeout(CYCLE_LIMIT):
                rs = await connect(url, keepalive_interval=KEEPALIVE, max_lifetime=MAX_LIFETIME,
                                   limits=LIMITS_RSOCKET)  # fmt: skip
        except ProtocolError as error:
            soak.ledger.failure(f"{name} connect", error)
            continue
        except TimeoutError:
            soak.ledger.violation(f"{name} {number}: connect did not end within {CYCLE_LIMIT} s")
            return
        soak.ledger.connections[name] += 1
        try:
            await soak.pause(rng)
            await _streams(soak, rs, name, rng, resumable=False)
        finally:
            await _close(soak, name, rs)


async def _close(soak: Soak, name: str, rs: RSocketPeer) -> None:
    try:
        async with asyncio.timeout(10.0):
            await rs.close()
    except TimeoutError:
        soak.ledger.violation(f"{name}: close did not end within 10 s")
    except ProtocolError as error:
        soak.ledger.failure(f"{name} close", error)
