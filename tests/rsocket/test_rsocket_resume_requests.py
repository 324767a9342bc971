"""Requests made while a resumable session waits for its new transport (issue 30): they
wait for the resumption, as request-response always did, instead of failing with
``IllegalSend`` from an engine that may send nothing but RESUME ("The client must NOT
send any other frame types until resumption succeeds")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.rsocket import RSocketPayload, RSocketHandler, connect, serve
from tests.support.aio_support import run
from tests.support.tcp_proxy import TcpProxy


class Counter(RSocketHandler):
    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        return payload

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        for i in range(int(payload.data)):
            yield b"%d" % i

    async def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[bytes]:
        yield b"first:" + payload.data
        async for item in inbound:
            yield item.data.upper()


async def _parked(proxy: TcpProxy, rs: object) -> None:
    """Cut the transport and keep the session from resuming (the proxy refuses new
    connections) until the client has noticed: it is waiting to resume."""
    proxy.refusing = True
    proxy.cut()
    async with asyncio.timeout(5):
        while getattr(rs, "_connected"):
            await asyncio.sleep(0.005)


@pytest.mark.parametrize("model", ["stream", "channel"])
def test_a_request_made_while_resuming_waits_for_the_resumption(model: str) -> None:
    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Counter(), resume=True) as server:
            async with TcpProxy(int(server.url.rsplit(":", 1)[1])) as proxy:
                url = f"tcp://127.0.0.1:{proxy.port}"
                async with connect(url, resume=True, resume_timeout=10) as rs:
                    assert (await rs.request_response(b"up")).data == b"up"
                    await _parked(proxy, rs)
                    if model == "stream":
                        stream = rs.request_stream(b"3", limit_rate=8)
                        expected = [b"0", b"1", b"2"]
                    else:

                        async def outbound() -> AsyncIterator[bytes]:
                            yield b"a"
                            yield b"b"

                        stream = rs.request_channel(b"x", outbound=outbound(), limit_rate=8)
                        expected = [b"first:x", b"A", b"B"]
                    await asyncio.sleep(0.05)  # still parked: the request waits
                    proxy.refusing = False  # the next attempt resumes
                    got = [p.data async for p in stream]
                    assert got == expected
                    assert rs.resumptions == 1

    run(main(), 30)


def test_a_request_waiting_for_a_resumption_fails_when_the_session_ends() -> None:
    """Every wait has an end: the session's ``resume_timeout`` fails the waiting stream."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Counter(), resume=True) as server:
            async with TcpProxy(int(server.url.rsplit(":", 1)[1])) as proxy:
                url = f"tcp://127.0.0.1:{proxy.port}"
                async with connect(url, resume=True, resume_timeout=0.3) as rs:
                    assert (await rs.request_response(b"up")).data == b"up"
                    await _parked(proxy, rs)
                    stream = rs.request_stream(b"3", limit_rate=8)
                    with pytest.raises(ConnectionLost):
                        async for _ in stream:
                            pass

    run(main(), 30)
