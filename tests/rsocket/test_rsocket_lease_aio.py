"""Leases under asyncio, our client against our leasing server: ``wait_for_lease`` waits
for a LEASE that allows a request now, the current lease is observable, and the opt-in
bounded queue of requests waiting for a LEASE (``LeaseQueue``).

Lease Semantics: "The Requester MUST NOT send more than Number of Requests specified in
the LEASE frame within the Time-To-Live value in the LEASE"; LEASE Frame: "When a LEASE
expires due to time, the value of the Number of Requests that a Requester may make is
implicitly 0"; "The last received LEASE frame overrides all previous LEASE frame values".
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.aio_support import run
from wirestream.runtime.rsocket import (
    LeaseDeadlineExceeded,
    LeaseQueue,
    LeaseQueueFull,
    NoLease,
    RSocketHandler,
    RSocketPayload,
    RSocketPeer,
    RSocketServer,
    connect,
    serve,
)

TCP = "tcp://127.0.0.1:0"
WAIT = 5.0  # seconds: every wait below ends long before (or the test fails)
LONG = 600_000  # ms: a LEASE that does not expire during a test (nor is renewed)


class Counting(RSocketHandler):
    """Echoes; streams ``int(data)`` items; counts the requests that reached it."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        self.requests.append(payload.data)
        return payload

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        self.requests.append(payload.data)
        for i in range(int(payload.data)):
            yield str(i).encode()


async def _until(condition: object, timeout: float = WAIT) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.005)


async def _still_waiting(wait: asyncio.Future[None]) -> None:
    """``wait`` has not ended after a few loop turns and a moment (no LEASE came)."""
    await asyncio.sleep(0.1)
    assert not wait.done(), "returned although no LEASE allows a request"


async def _leased(
    handler: Counting, lease: tuple[int, int], **connect_options: object
) -> tuple[RSocketServer, RSocketPeer, RSocketPeer]:
    server = await serve(TCP, handler, lease=lease)
    client = await connect(server.url, lease=True, **connect_options)  # type: ignore[arg-type]
    await asyncio.wait_for(client.wait_for_lease(), WAIT)
    (server_side,) = server.peers
    return server, client, server_side


@pytest.mark.parametrize("how", ["spent", "expired"])
def test_wait_for_lease_waits_for_a_lease_that_allows_a_request_now(how: str) -> None:
    """A LEASE whose Number of Requests is used up, or whose Time-To-Live has passed,
    allows nothing: ``wait_for_lease`` waits for the next one (it used to return at once
    once any LEASE had ever come, leaving a client that got ``NoLease`` only polling)."""

    async def main() -> None:
        handler = Counting()
        server, client, server_side = await _leased(handler, (LONG, 1))
        async with server, client:
            if how == "expired":  # replace the LEASE with one of 300 ms, once it is here
                server_side.send_lease(300, 1)
                await _until(lambda: client.lease is not None and client.lease.expires_at
                             < asyncio.get_running_loop().time() + 1)  # fmt: skip
            if how == "spent":
                assert (await client.request_response(b"one")).data == b"one"
            else:
                status = client.lease
                assert status is not None
                await asyncio.sleep(max(0.0, status.expires_at - asyncio.get_running_loop().time()))
            with pytest.raises(NoLease):
                await client.request_response(b"refused")
            wait = asyncio.ensure_future(client.wait_for_lease())
            await _still_waiting(wait)
            server_side.send_lease(LONG, 2)
            await asyncio.wait_for(wait, WAIT)
            status = client.lease
            assert status is not None and status.requests_left == 2
            assert (await client.request_response(b"two")).data == b"two"

    run(main())


def test_the_current_lease_is_observable_requests_left_and_expiry() -> None:
    """``peer.lease``: the last LEASE's requests left and its expiry (the loop's clock:
    reception plus Time-To-Live); None before the first and without leasing."""

    async def main() -> None:
        handler = Counting()
        async with await serve(TCP, handler) as plain:
            async with connect(plain.url) as unleased:
                assert unleased.lease is None
        server, client, server_side = await _leased(handler, (LONG, 3))
        async with server, client:
            status = client.lease
            assert status is not None and status.requests_left == 3
            now = asyncio.get_running_loop().time()
            assert now < status.expires_at <= now + LONG / 1000
            assert status.allows(now)
            await client.request_response(b"one")
            await client.request_response(b"two")
            status = client.lease
            assert status is not None and status.requests_left == 1
            server_side.send_lease(2_000, 7)
            await _until(lambda: client.lease is not None and client.lease.requests_left == 7)
            status = client.lease
            assert status is not None
            later = asyncio.get_running_loop().time()
            assert later < status.expires_at <= later + 2.0
            assert not status.allows(status.expires_at)

    run(main())


def test_requests_queued_for_a_lease_go_in_order_when_one_allows_them_bounded_and_each_with_a_deadline() -> (
    None
):
    """``connect(lease_queue=LeaseQueue(max_pending, deadline))``: a request that no
    LEASE allows waits (instead of ``NoLease``), at most ``max_pending`` of them, in order;
    beyond that ``LeaseQueueFull`` at once; the next LEASE lets as many go as it allows;
    one still waiting at its deadline fails with ``LeaseDeadlineExceeded`` and was never
    sent (the responder never saw it).  A queued stream opens once a LEASE allows it."""

    async def main() -> None:
        handler = Counting()
        queue = LeaseQueue(max_pending=2, deadline=1.0)
        server, client, server_side = await _leased(handler, (LONG, 1), lease_queue=queue)
        async with server, client:
            assert (await client.request_response(b"first")).data == b"first"
            queued = asyncio.ensure_future(client.request_response(b"queued"))
            stream = client.request_stream(b"3")  # queued too: returned at once
            await _until(lambda: client.lease_waiting == 2)
            with pytest.raises(LeaseQueueFull):
                await client.request_response(b"refused: the queue is full")
            server_side.send_lease(LONG, 1)  # one request: the first in line
            assert (await asyncio.wait_for(queued, WAIT)).data == b"queued"
            assert client.lease_waiting == 1
            with pytest.raises(LeaseDeadlineExceeded):
                async for _ in stream:
                    pass
            assert client.lease_waiting == 0
            assert handler.requests == [b"first", b"queued"]
            later = client.request_stream(b"3")  # waits, then goes with the next LEASE
            await _until(lambda: client.lease_waiting == 1)
            server_side.send_lease(LONG, 5)
            assert [p.data async for p in later] == [b"0", b"1", b"2"]
            assert handler.requests == [b"first", b"queued", b"3"]

    run(main())


def test_the_lease_queue_ends_with_the_connection() -> None:
    """Every wait has a way to end: requests waiting for a LEASE fail with the
    connection's end (``ConnectionLost``) when it closes, not only at their deadline."""

    async def main() -> None:
        handler = Counting()
        queue = LeaseQueue(max_pending=4, deadline=60.0)
        server, client, _ = await _leased(handler, (LONG, 1), lease_queue=queue)
        async with server:
            await client.request_response(b"first")
            waiting = asyncio.ensure_future(client.request_response(b"waits"))
            stream = client.request_stream(b"3")
            await _until(lambda: client.lease_waiting == 2)
            await client.close()
            for failed in (waiting, anext(stream)):
                with pytest.raises(Exception) as ended:
                    await asyncio.wait_for(failed, WAIT)
                assert type(ended.value).__name__ == "ConnectionLost", ended.value
            assert handler.requests == [b"first"]

    run(main())
