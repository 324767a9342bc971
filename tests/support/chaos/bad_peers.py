"""Peers that break the protocol, for the whole soak: clients that send our servers
random bytes or trickle them one at a time, and a server that answers our clients with
random bytes (a stream of them, or a trickle).

Each must be dropped with a typed error within ``BAD_PEER_LIMIT``: the handshake and
frame timeouts of the soak's limits (5 s each) plus slack, while the good connections
go on.  Every decision comes from the peer's own seeded ``random.Random``.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from wirestream.generated.bpmux import rel as bpmux_codec
from wirestream.generated.rsocket import v1_0 as rsocket_codec
from wirestream.runtime import rsio
from wirestream.runtime.bpmux.aio import connect as bpmux_connect
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rsocket import connect as rsocket_connect
from tests.support.chaos.context import LIMITS, Soak
from tests.support.chaos.rsocket_load import LIMITS_RSOCKET

__all__ = ["BadPeers", "BAD_PEER_LIMIT"]

BAD_PEER_LIMIT = 20.0
"""Seconds: the 5 s handshake timeout, or a frame begun and the 5 s frame timeout,
plus a loaded machine's slack."""

TRICKLE_PAUSE = 0.3  # seconds between two bytes of a trickler


class BadPeers:
    def __init__(self, soak: Soak, servers: dict[str, int]) -> None:
        self.soak = soak
        self.servers = servers  # protocol -> port of our server (direct, no proxy)
        self.dropped: Counter[str] = Counter()  # "garbage client rsio", ...
        self._listener: asyncio.Server | None = None
        self._serving: set[asyncio.Task[None]] = set()
        self._trickle_next = False
        self._answered = 0

    # -- clients that misbehave towards our servers

    async def client(self, number: int) -> None:
        rng = self.soak.rng(f"bad-client-{number}")
        while self.soak.running():
            protocol = rng.choice(sorted(self.servers))
            kind = rng.choice(("garbage", "trickle"))
            await self._misbehave(protocol, kind, rng)
            await asyncio.sleep(rng.uniform(0.1, 1.0))

    async def _misbehave(self, protocol: str, kind: str, rng: random.Random) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.servers[protocol])
        sent = bytearray()
        try:
            async with asyncio.timeout(BAD_PEER_LIMIT):
                if kind == "garbage":
                    sent += rng.randbytes(rng.randint(1, 2_048))
                    writer.write(sent)
                    while await reader.read(65_536):
                        pass
                else:
                    while True:
                        byte = rng.randbytes(1)
                        sent += byte
                        writer.write(byte)
                        try:
                            async with asyncio.timeout(TRICKLE_PAUSE):
                                if not await reader.read(65_536):
                                    break
                        except TimeoutError:
                            pass
        except TimeoutError:
            if _valid_by_chance(protocol, bytes(sent)):
                self.dropped[f"{kind} client {protocol} (valid by chance: kept)"] += 1
            else:
                self.soak.ledger.violation(f"the {protocol} server kept a {kind} client over "
                                           f"{BAD_PEER_LIMIT} s")  # fmt: skip
        except OSError:
            pass  # reset by the server: dropped too
        finally:
            writer.transport.abort()
        self.dropped[f"{kind} client {protocol}"] += 1

    # -- a server that misbehaves towards our clients

    async def start_server(self) -> None:
        self._listener = await asyncio.start_server(self._on_client, "127.0.0.1", 0)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        trickle, self._trickle_next = self._trickle_next, not self._trickle_next
        self._answered += 1
        rng = self.soak.rng(f"bad-server-{self._answered}")
        try:
            while not reader.at_eof():
                writer.write(rng.randbytes(1 if trickle else rng.randint(1, 512)))
                await writer.drain()
                await asyncio.sleep(TRICKLE_PAUSE if trickle else 0.05)
        except OSError:
            pass
        finally:
            writer.transport.abort()
            self._serving.discard(task)

    async def victim(self, number: int) -> None:
        """Our clients, dialling the bad server in turn: each must fail, typed, in time."""
        assert self._listener is not None
        url = "tcp://127.0.0.1:%d" % self._listener.sockets[0].getsockname()[1]
        rng = self.soak.rng(f"bad-server-victim-{number}")
        attempts: dict[str, Callable[[], Awaitable[None]]] = {
            "rsocket": lambda: _rsocket_victim(url),
            "rsio": lambda: _rsio_victim(url),
            "bpmux": lambda: _bpmux_victim(url),
        }
        while self.soak.running():
            protocol = rng.choice(sorted(attempts))
            try:
                async with asyncio.timeout(BAD_PEER_LIMIT):
                    await attempts[protocol]()
            except ProtocolError as error:
                self.dropped[f"bad server, {protocol} client"] += 1
                self.soak.ledger.failure(f"{protocol} against a bad server", error)
            except TimeoutError:
                self.soak.ledger.violation(f"our {protocol} client kept talking to a bad server "
                                           f"over {BAD_PEER_LIMIT} s")  # fmt: skip
            except Exception as error:  # noqa: BLE001  (the invariant: nothing outside the tree)
                self.soak.ledger.violation(f"our {protocol} client failed untyped against a bad "
                                           f"server: {error!r}")  # fmt: skip
            else:
                self.soak.ledger.violation(f"our {protocol} client took a bad server's bytes")
            await asyncio.sleep(rng.uniform(0.1, 1.0))

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        for task in list(self._serving):
            task.cancel()
        await asyncio.gather(*self._serving, return_exceptions=True)
        if self._listener is not None:
            await self._listener.wait_closed()


def _valid_by_chance(protocol: str, sent: bytes) -> bool:
    """Whether random bytes happen to be whole, valid frames (measured for BPMUX, whose
    packets are a type byte and varints: ~0.5% of 1-2,048 random bytes).  A server
    rightly keeps such a peer: it said nothing wrong, and a silent peer may stay
    (``DEFAULT_IDLE_TIMEOUT`` is off)."""
    decoders: dict[str, Callable[[], Any]] = {"bpmux": bpmux_codec.StreamDecoder,
                                               "rsocket": rsocket_codec.StreamDecoder}  # fmt: skip
    if protocol not in decoders:
        return False
    decoder = decoders[protocol]()
    try:
        decoder.feed(sent)
    except ProtocolError:
        return False
    return bool(decoder.buffered == 0)


async def _rsocket_victim(url: str) -> None:
    rs = await rsocket_connect(url, keepalive_interval=500, limits=LIMITS_RSOCKET)
    try:
        await rs.request_response(b"anyone?")
    finally:
        await rs.close()


async def _rsio_victim(url: str) -> None:
    peer = await rsio.connect(url, timeout=10.0, limits=LIMITS)
    await peer.close()


async def _bpmux_victim(url: str) -> None:
    peer = await bpmux_connect(url, timeout=10.0, limits=LIMITS)
    try:
        stream = await peer.open_stream(b"anyone?")
        async for _ in stream:
            pass
    finally:
        await peer.close()
