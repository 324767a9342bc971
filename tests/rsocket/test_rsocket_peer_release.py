"""A closed RSocket peer is freed by reference counting alone: nothing of a connection
that is over for good waits for the cycle collector (issue 30: freeing a closed peer's
reference cycles was 27% of a connect/close cycle).  ``PeerConnection._release`` breaks
the cycles the driver's callbacks, the event table, the lease waiters and the engine's
generated dispatch (``RSocketConnection.release``) make."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rsocket import (
    RSocketConnection,
    RSocketPayload,
    RSocketHandler,
    connect,
    serve,
)
from tests.support.aio_support import run


class Echo(RSocketHandler):
    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        return payload


def test_closed_peers_are_freed_without_the_cycle_collector() -> None:
    async def main() -> list[weakref.ref[Any]]:
        server = await serve("tcp://127.0.0.1:0", Echo())
        refs: list[weakref.ref[Any]] = []
        try:
            gc.disable()
            async with connect(server.url) as client:
                assert (await client.request_response(b"hi")).data == b"hi"
                (server_peer,) = server.peers
                for peer in (client, server_peer):
                    refs += [weakref.ref(peer), weakref.ref(peer.engine),
                             weakref.ref(peer.driver)]  # fmt: skip
                del server_peer, peer
            for _ in range(20):  # the server's side ends once it reads our close
                if not server.peers:
                    break
                await asyncio.sleep(0.01)
            del client
        finally:
            server.close()
            await server.wait_closed()
        return refs

    alive: list[Any] = []

    async def closed_then_checked() -> None:
        refs = await main()
        await asyncio.sleep(0)  # the transports' connection_lost callbacks
        alive.extend(ref() for ref in refs if ref() is not None)

    try:
        run(closed_then_checked())  # (its leak check collects garbage: checked before)
    finally:
        gc.enable()
    assert not alive, f"kept alive by reference cycles: {alive}"


def test_release_is_for_a_closed_engine() -> None:
    engine = RSocketConnection("client")
    engine.connect()
    try:
        engine.release()
    except LocalProtocolError:
        pass
    else:
        raise AssertionError("release() of an open engine must refuse")
    engine.close()
    engine.release()
    assert engine.closed
