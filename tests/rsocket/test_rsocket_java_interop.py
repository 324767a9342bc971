"""Resumption, lease, keepalive and the time to the first frame against rsocket-java 1.1.5,
the RSocket reference implementation (tests/support/rsocket_java_peer.py), in both directions.

rsocket-py has no resumption, so these are the tests of our RESUME / RESUME_OK, implied
positions and retransmission against an implementation we did not write.  The transport
is cut by a TCP proxy between the two (tests/support/tcp_proxy.py): whatever is in flight is lost,
often mid-frame, and each side must retransmit from the other's last received position.

Each test starts one JVM (~1 s); the module runs in ~30 s on a 2-core box.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from wirestream.runtime.aio import open_transport
from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.rsocket import (
    ClientSetup,
    ConnectionClosed,
    KeepaliveReceived,
    LeaseReceived,
    NoLease,
    RSocketPayload,
    RSocketConnection,
    RSocketHandler,
    RSocketPeer,
    SetupRejected,
    connect,
    serve,
)
from tests.support.aio_support import run
from tests.support.rsocket_java_peer import JavaClient, JavaServer, rsocket_java  # noqa: F401
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.peer

N = 100_000  # elements of the resumed request-stream
MIN_CUTS = 20
CUT_EVERY = 40_000  # bytes towards the client between two cuts: ~1.3 MB of PAYLOADs, ~30 cuts
REJECTED = 0x202


class Counting(RSocketHandler):
    """Our responder: request-response echoes; request-stream answers the decimal N in its
    data with "0" .. "N-1" (as RSocketJavaPeer's does); ``produced`` counts the elements
    the publisher made (each once: retransmissions come from the resume buffer)."""

    def __init__(self) -> None:
        self.requests = 0
        self.produced = 0

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        self.requests += 1
        return payload

    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        for i in range(int(payload.data)):
            self.produced += 1
            yield str(i).encode()


async def _cut_every(proxy: TcpProxy, step: int) -> None:
    """Cut the connection each time ``step`` more bytes went towards the client."""
    while True:
        await proxy.downstream_reaches(proxy.downstream + step, timeout=60)
        proxy.cut()


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# --- resumption: 100,000 elements, at least 20 cuts, both directions ------------------


def test_our_client_resumes_a_100k_stream_from_rsocket_java_through_20_cuts(
    rsocket_java: str,
) -> None:
    """Resuming Operation, our client -> rsocket-java's server: every element once and in
    order although the transport is cut ~30 times; rsocket-java's publisher made each
    element once (what was lost came again from its resume store, trimmed by our
    KEEPALIVE positions: --cleanup-on-keepalive makes it insist they fall on frame
    boundaries)."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--resume", "--cleanup-on-keepalive")
        async with server, TcpProxy(server.port) as proxy:
            url = f"tcp://127.0.0.1:{proxy.port}"
            async with connect(url, resume=True, keepalive_interval=100) as rs:
                # the first cut after rsocket-java has the SETUP (before, its answer to
                # RESUME is REJECTED_RESUME: test_resume_rejected_by_rsocket_java_...)
                await rs.request_response(b"warm-up")
                started = time.monotonic()
                cutter = asyncio.ensure_future(_cut_every(proxy, CUT_EVERY))
                got: list[int] = []
                try:
                    async for payload in rs.request_stream(str(N).encode(), limit_rate=256):
                        got.append(int(payload.data))
                finally:
                    cutter.cancel()
                elapsed = time.monotonic() - started
                assert got == list(range(N))
                assert proxy.cuts >= MIN_CUTS and rs.resumptions >= MIN_CUTS
                print(f"our client <- rsocket-java: {len(got)} elements, {proxy.cuts} cuts, "
                      f"{rs.resumptions} resumptions, {elapsed:.1f} s")  # fmt: skip
            stats = await server.stats()
            assert stats["streamed"] == N

    run(main(), 120)


def test_rsocket_java_client_resumes_a_100k_stream_from_our_server_through_20_cuts(
    rsocket_java: str,
) -> None:
    """Resuming Operation, rsocket-java's client -> our server: rsocket-java counts every
    element once, in order; our publisher made each once."""

    async def main() -> None:
        handler = Counting()
        async with await serve("tcp://127.0.0.1:0", handler, resume=True) as server:
            async with TcpProxy(_port(server.url)) as proxy:
                client = await JavaClient.start(rsocket_java, proxy.port, "--resume",
                                                "--cleanup-on-keepalive", "--keepalive-ms", "100")  # fmt: skip
                async with client:
                    assert (await client.request_responses(1))["ok"] == 1  # warm-up
                    started = time.monotonic()
                    cutter = asyncio.ensure_future(_cut_every(proxy, CUT_EVERY))
                    try:
                        result = await client.stream(N, 256)
                    finally:
                        cutter.cancel()
                    elapsed = time.monotonic() - started
                    (peer,) = server.peers
                    assert result["error"] is None, result
                    assert (result["elements"], result["out_of_order"], result["last"]) == (
                        N, 0, N - 1,
                    )  # fmt: skip
                    assert proxy.cuts >= MIN_CUTS and peer.resumptions >= MIN_CUTS
                    assert handler.produced == N
                    print(f"rsocket-java client <- our server: {result['elements']} elements, "
                          f"{proxy.cuts} cuts, {peer.resumptions} resumptions, "
                          f"{elapsed:.1f} s")  # fmt: skip

    run(main(), 120)


FRAGMENTED_N = 5_000
ITEM_SIZE = 400  # bytes per element, sent in 64-byte fragments: 7 frames each
MTU = 64


def _item(i: int) -> bytes:
    """Element i as RSocketJavaPeer's --item-size makes it: "i:" and '.' up to ITEM_SIZE."""
    head = b"%d:" % i
    return head + b"." * (ITEM_SIZE - len(head))


class Padded(Counting):
    async def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        for i in range(int(payload.data)):
            self.produced += 1
            yield _item(i)


def test_our_client_resumes_a_fragmented_stream_from_rsocket_java(rsocket_java: str) -> None:
    """Implied Position: positions count "encoded frames ... after any fragmentation is
    applied": rsocket-java fragments every element into 7 frames, cuts fall between (and
    inside) fragments, and the reassembly resumes where the received position says."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--resume", "--cleanup-on-keepalive",
                                        "--mtu", str(MTU), "--item-size", str(ITEM_SIZE))  # fmt: skip
        async with server, TcpProxy(server.port) as proxy:
            url = f"tcp://127.0.0.1:{proxy.port}"
            async with connect(url, resume=True, keepalive_interval=100, mtu=MTU) as rs:
                await rs.request_response(b"warm-up")
                cutter = asyncio.ensure_future(_cut_every(proxy, CUT_EVERY))
                got: list[bytes] = []
                try:
                    request = str(FRAGMENTED_N).encode()
                    async for payload in rs.request_stream(request, limit_rate=64):
                        got.append(payload.data)
                finally:
                    cutter.cancel()
                assert got == [_item(i) for i in range(FRAGMENTED_N)]
                assert proxy.cuts >= MIN_CUTS and rs.resumptions >= MIN_CUTS

    run(main(), 120)


def test_rsocket_java_client_resumes_a_fragmented_stream_from_our_server(
    rsocket_java: str,
) -> None:
    """The same with our server fragmenting (``serve(mtu=64)``) and rsocket-java
    reassembling across the cuts."""

    async def main() -> None:
        handler = Padded()
        async with await serve("tcp://127.0.0.1:0", handler, resume=True, mtu=MTU) as server:
            async with TcpProxy(_port(server.url)) as proxy:
                client = await JavaClient.start(rsocket_java, proxy.port, "--resume",
                                                "--cleanup-on-keepalive", "--keepalive-ms", "100",
                                                "--mtu", str(MTU))  # fmt: skip
                async with client:
                    assert (await client.request_responses(1))["ok"] == 1
                    cutter = asyncio.ensure_future(_cut_every(proxy, CUT_EVERY))
                    try:
                        result = await client.stream(FRAGMENTED_N, 64)
                    finally:
                        cutter.cancel()
                    assert result["error"] is None, result
                    assert (result["elements"], result["out_of_order"]) == (FRAGMENTED_N, 0)
                    assert proxy.cuts >= MIN_CUTS
                    assert handler.produced == FRAGMENTED_N

    run(main(), 120)


def test_our_client_resumes_a_session_no_response_had_confirmed_yet(rsocket_java: str) -> None:
    """rsocket-java's server sends nothing when it accepts a SETUP (no LEASE asked for):
    until the first response our client cannot tell it was accepted (``setup_sent``).  A
    transport lost then is still resumed -- the session exists from the SETUP with a
    token on.  (Regression: our client ended the session with ConnectionLost.)"""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--resume")
        async with server, TcpProxy(server.port) as proxy:
            async with connect(f"tcp://127.0.0.1:{proxy.port}", resume=True) as rs:
                await _until(lambda: proxy.upstream > 0)
                await asyncio.sleep(0.5)  # rsocket-java has read the SETUP by now
                assert rs.engine.state.name == "SETUP_SENT"
                assert proxy.cut() == 1
                got = [int(p.data) async for p in rs.request_stream(b"1000", limit_rate=64)]
                assert got == list(range(1000))
                assert rs.resumptions == 1

    run(main(), 60)


def test_resume_rejected_by_rsocket_java_after_its_session_expired(rsocket_java: str) -> None:
    """rsocket-java keeps a session --session-ms; a RESUME after that gets
    ERROR[REJECTED_RESUME] and our open stream fails with ``SetupRejected`` -- it does not
    wait on."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--resume", "--session-ms", "300")
        async with server, TcpProxy(server.port) as proxy:
            async with connect(f"tcp://127.0.0.1:{proxy.port}", resume=True,
                               resume_timeout=20) as rs:  # fmt: skip
                stream = rs.request_stream(b"100000", limit_rate=8)
                assert (await stream.__anext__()).data == b"0"
                proxy.refusing = True  # the way back is down ...
                proxy.cut()
                await asyncio.sleep(1.0)  # ... for longer than rsocket-java keeps the session
                proxy.refusing = False
                started = time.monotonic()
                with pytest.raises(SetupRejected):
                    async for _ in stream:
                        pass
                assert time.monotonic() - started < 10
                assert rs.closed

    run(main(), 60)


def test_rsocket_java_resume_rejected_after_our_session_expired(rsocket_java: str) -> None:
    """The other way: our server keeps a session ``resume_timeout`` seconds; rsocket-java's
    RESUME after that gets ERROR[REJECTED_RESUME] and its stream fails instead of retrying
    for ever."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Counting(), resume=True,
                               resume_timeout=0.3) as server:  # fmt: skip
            async with TcpProxy(_port(server.url)) as proxy:
                client = await JavaClient.start(rsocket_java, proxy.port, "--resume")
                async with client:
                    assert (await client.request_responses(1))["ok"] == 1
                    stream = asyncio.ensure_future(client.stream(10_000_000, 8, timeout=30))
                    await _until(lambda: proxy.downstream > 1000)
                    proxy.refusing = True
                    proxy.cut()
                    await _until(lambda: not server.peers)  # our session expired
                    proxy.refusing = False
                    result = await stream
                    # rsocket-java reads our ERROR[REJECTED_RESUME] (a RejectedResumeException
                    # it logs as dropped) and fails its open stream with ClosedChannelException
                    assert result["error"] is not None and result["elements"] < 10_000_000
                    assert any("RejectedResumeException (0x4): unknown resume token" in line
                               for line in client.stderr), client.stderr  # fmt: skip

    run(main(), 60)


# --- lease, both directions ---------------------------------------------------------------


def test_our_client_honours_rsocket_javas_lease(rsocket_java: str) -> None:
    """LEASE Frame: "The Requester MUST NOT send more than Number of Requests specified in
    the LEASE frame within the Time-To-Live value" -- rsocket-java grants 3: three
    requests go out, the fourth is refused here (``NoLease``) and never reaches it."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--lease-ttl-ms", "60000",
                                        "--lease-count", "3")  # fmt: skip
        async with server:
            async with connect(server.url, lease=True) as rs:
                await asyncio.wait_for(rs.wait_for_lease(), 10)
                for i in range(3):
                    assert (await rs.request_response(b"r%d" % i)).data == b"r%d" % i
                with pytest.raises(NoLease):
                    await rs.request_response(b"one too many")
            assert (await server.stats())["request_response"] == 3

    run(main(), 60)


def test_rsocket_java_rejects_our_bytes_beyond_its_lease(rsocket_java: str) -> None:
    """Lease Semantics: "A Responder that receives a REQUEST that it can not honor due to
    LEASE restrictions MUST respond with an ERROR[REJECTED]" -- our frames, sent past the
    lease on purpose (the engine would refuse: the requests are written by hand), are read
    by rsocket-java as we meant them."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--lease-ttl-ms", "60000",
                                        "--lease-count", "2")  # fmt: skip
        async with server:
            raw = await _Raw.open(server.port, ClientSetup(lease=True))
            try:
                await raw.until(lambda events: any(isinstance(e, LeaseReceived) for e in events))
                codec = raw.engine.version.codec
                raw.send(b"".join(codec.frame_bytes(codec.RequestResponse(stream_id=i, data=b"x"))
                                  for i in (1, 3, 5)))  # fmt: skip
                # the engine knows nothing of these streams: read the answers as frames
                frames = await raw.frames_until(
                    lambda frames: len([f for f in frames if f.stream_id]) >= 3
                )
            finally:
                await raw.close()
            answers = {f.stream_id: f for f in frames if f.stream_id}
            assert type(answers[1]) is codec.Payload and answers[1].data == b"x"
            assert type(answers[3]) is codec.Payload and answers[3].data == b"x"
            assert type(answers[5]) is codec.Error and answers[5].error_code == REJECTED

    run(main(), 60)


def test_rsocket_java_client_honours_our_lease(rsocket_java: str) -> None:
    """Our server grants 3 requests (``serve(lease=...)``); rsocket-java's requester sends
    3 and refuses the rest itself: our responder sees exactly 3 and rejects none."""

    async def main() -> None:
        handler = Counting()
        async with await serve("tcp://127.0.0.1:0", handler, lease=(60_000, 3)) as server:
            async with await JavaClient.start(rsocket_java, _port(server.url), "--lease") as client:
                assert await client.wait_lease(10_000)
                result = await client.request_responses(5)
                assert (result["ok"], result["missing_lease"], result["rejected"]) == (3, 2, 0)
                assert result["errors"] == []
                assert handler.requests == 3

    run(main(), 60)


def test_lease_semantics_must_be_restarted_upon_a_new_connection(rsocket_java: str) -> None:
    """Resuming Operation: "Leasing semantics are NOT assumed to carry over from previous
    connections when resuming. LEASE semantics MUST be restarted upon a new connection by
    sending a LEASE frame from the server."  rsocket-java's client (lease + resume) used up
    our 3-request lease; after a cut and RESUME our server sends a new LEASE at once, and
    3 more requests pass.  (Regression: the new LEASE waited for the renewal, half a
    time-to-live -- 30 s here -- away, while our engine no longer honoured the old one.)"""

    async def main() -> None:
        handler = Counting()
        async with await serve("tcp://127.0.0.1:0", handler, resume=True,
                               lease=(60_000, 3)) as server:  # fmt: skip
            async with TcpProxy(_port(server.url)) as proxy:
                client = await JavaClient.start(rsocket_java, proxy.port, "--lease", "--resume")
                async with client:
                    assert await client.wait_lease(10_000)
                    first = await client.request_responses(4)
                    assert (first["ok"], first["missing_lease"]) == (3, 1)
                    (peer,) = server.peers
                    assert proxy.cut() == 1
                    await _until(lambda: peer.resumptions == 1)
                    assert await client.wait_lease(5_000)  # a fresh LEASE came
                    second = await client.request_responses(4)
                    assert (second["ok"], second["missing_lease"], second["rejected"]) == (3, 1, 0)
                    assert handler.requests == 6

    run(main(), 60)


def test_lease_semantics_restart_our_client_waits_for_a_new_lease_after_resume(
    rsocket_java: str,
) -> None:
    """The same rule from our client's side, against rsocket-java's server: after RESUME
    the old LEASE no longer counts (``NoLease``) and ``wait_for_lease`` waits for the
    next LEASE instead of returning at once.  rsocket-java sends a LEASE only when its
    lease sender emits one -- it does not restart leasing on RESUME by itself -- so its
    sender here emits every 300 ms.  (Regression: ``wait_for_lease`` returned at once
    after a resume, and the request then failed with NoLease.)"""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--resume", "--lease-ttl-ms", "60000",
                                        "--lease-count", "100", "--lease-every-ms", "300")  # fmt: skip
        async with server, TcpProxy(server.port) as proxy:
            async with connect(f"tcp://127.0.0.1:{proxy.port}", lease=True, resume=True) as rs:
                await asyncio.wait_for(rs.wait_for_lease(), 10)
                assert (await rs.request_response(b"before")).data == b"before"
                proxy.cut()
                await _until(lambda: rs.resumptions == 1)
                with pytest.raises(NoLease):  # the old LEASE does not carry over
                    await rs.request_response(b"right after the resume")
                await asyncio.wait_for(rs.wait_for_lease(), 5)
                assert (await rs.request_response(b"after")).data == b"after"

    run(main(), 60)


# --- keepalive -----------------------------------------------------------------------------


def test_rsocket_java_echoes_our_keepalive_with_its_data(rsocket_java: str) -> None:
    """KEEPALIVE Frame: "Reception of a KEEPALIVE frame with the (R)espond flag set MUST
    cause a client or server to send back a KEEPALIVE with the (R)espond flag NOT set. The
    data in the received KEEPALIVE MUST be echoed back" -- rsocket-java's server answers
    our engine's KEEPALIVE."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java)
        async with server:
            raw = await _Raw.open(server.port, ClientSetup(keepalive_interval=60_000))
            try:
                raw.engine.send_keepalive(b"ping-data")
                raw.flush()
                events = await raw.until(
                    lambda events: any(isinstance(e, KeepaliveReceived) for e in events)
                )
            finally:
                await raw.close()
            (echo,) = [e for e in events if isinstance(e, KeepaliveReceived)]
            assert (echo.data, echo.respond) == (b"ping-data", False)

    run(main(), 60)


def test_rsocket_java_closes_a_client_that_stops_its_keepalives(rsocket_java: str) -> None:
    """SETUP, Max Lifetime: "Time (in milliseconds) that a client will allow a server to
    not respond to a KEEPALIVE before it is assumed to be dead" -- rsocket-java applies it
    to the client too.  Our SETUP says 100 ms / 500 ms and then our engine stays silent:
    rsocket-java closes the connection (without an ERROR frame) after about 500 ms, so it
    read our times as we meant them."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java)
        async with server:
            raw = await _Raw.open(server.port, ClientSetup(keepalive_interval=100,
                                                           max_lifetime=500))  # fmt: skip
            started = time.monotonic()
            try:
                # rsocket-java's server sends KEEPALIVEs of its own (R set, at our
                # interval): left unanswered, like ours that never come
                events = await raw.until(
                    lambda events: any(isinstance(e, ConnectionClosed) for e in events),
                    10,
                    answer=False,
                )
            finally:
                await raw.close()
            elapsed = time.monotonic() - started
            (closed,) = [e for e in events if isinstance(e, ConnectionClosed)]
            assert closed.by_peer
            assert 0.4 <= elapsed < 5, elapsed
            print(f"rsocket-java closed the silent connection after {elapsed:.2f} s with "
                  f"{closed.error_code and hex(closed.error_code)}")  # fmt: skip

    run(main(), 60)


def test_our_client_keepalives_satisfy_rsocket_java(rsocket_java: str) -> None:
    """Our client's periodic KEEPALIVEs (100 ms, Max Lifetime 500 ms) keep an idle
    connection to rsocket-java alive for 3 lifetimes, and rsocket-java's answers keep our
    client from declaring it dead."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java)
        async with server:
            async with connect(server.url, keepalive_interval=100, max_lifetime=500) as rs:
                await asyncio.sleep(1.5)
                assert not rs.closed
                assert (await rs.request_response(b"still here")).data == b"still here"

    run(main(), 60)


def test_rsocket_java_client_keepalives_against_our_server(rsocket_java: str) -> None:
    """rsocket-java's client (100 ms, Max Lifetime 500 ms) would close the connection after
    500 ms without our answers ("No keep-alive acks"): idle for 3 lifetimes, it still gets
    its response."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Counting()) as server:
            client = await JavaClient.start(rsocket_java, _port(server.url),
                                            "--keepalive-ms", "100", "--lifetime-ms", "500")  # fmt: skip
            async with client:
                await asyncio.sleep(1.5)
                result = await client.request_responses(1)
                assert (result["ok"], result["errors"]) == (1, [])

    run(main(), 60)


def test_a_silent_rsocket_java_server_is_found_dead_and_the_session_resumed(
    rsocket_java: str,
) -> None:
    """A transport that goes silent without closing (the proxy drops everything): after
    Max Lifetime without a KEEPALIVE answer our client assumes the connection dead, dials
    again and resumes; the request that was in flight is answered."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--resume")
        async with server, TcpProxy(server.port) as proxy:
            async with connect(f"tcp://127.0.0.1:{proxy.port}", resume=True,
                               keepalive_interval=100, max_lifetime=600) as rs:  # fmt: skip
                assert (await rs.request_response(b"before")).data == b"before"
                assert proxy.freeze() == 1
                started = time.monotonic()
                answer = await asyncio.wait_for(rs.request_response(b"during"), 10)
                assert answer.data == b"during"
                assert rs.resumptions == 1
                # dead Max Lifetime after the last answer heard (<= one interval before the freeze)
                assert 0.6 - 0.1 - 0.15 <= time.monotonic() - started < 8

    run(main(), 60)


# --- the time to the first frame ----------------------------------------------------------


def test_rsocket_java_closes_a_connection_that_sends_no_setup(rsocket_java: str) -> None:
    """rsocket-java's server closes a connection whose first frame does not come within
    its maxTimeToFirstFrame (300 ms here): a silent peer is not kept for ever."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--first-frame-ms", "300")
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            started = time.monotonic()
            try:
                data = await asyncio.wait_for(reader.read(), 10)
            except ConnectionResetError:
                data = b""
            finally:
                writer.close()
            elapsed = time.monotonic() - started
            assert data == b""  # closed without a frame
            assert 0.2 <= elapsed < 5, elapsed  # 300 ms from the accept, less our own delay

    run(main(), 60)


def test_our_late_setup_to_rsocket_java_ends_with_connection_lost(rsocket_java: str) -> None:
    """Our client whose SETUP comes after rsocket-java's maxTimeToFirstFrame finds the
    connection closed: its request fails with ``ConnectionLost`` at once, it does not
    wait on."""

    async def main() -> None:
        server = await JavaServer.start(rsocket_java, "--first-frame-ms", "300")
        async with server:
            transport = await open_transport(server.url)
            await asyncio.sleep(0.8)
            engine = RSocketConnection("client", setup=ClientSetup())
            engine.connect(asyncio.get_running_loop().time())
            peer = RSocketPeer(engine, transport, RSocketHandler())
            started = time.monotonic()
            with pytest.raises(ConnectionLost):
                await asyncio.wait_for(peer.request_response(b"too late"), 10)
            assert time.monotonic() - started < 5
            await peer.close()

    run(main(), 60)


# --- a raw engine on a socket --------------------------------------------------------------


class _Raw:
    """Our sans-I/O client engine on a plain asyncio socket: no keepalive timer, no peer
    logic -- for the tests that send what the asyncio peer would not."""

    def __init__(self, engine: RSocketConnection, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:  # fmt: skip
        self.engine = engine
        self.reader = reader
        self.writer = writer
        self.events: list[Any] = []

    @classmethod
    async def open(cls, port: int, setup: ClientSetup) -> _Raw:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        engine = RSocketConnection("client", setup=setup)
        engine.connect(asyncio.get_running_loop().time())
        raw = cls(engine, reader, writer)
        raw.flush()
        return raw

    def flush(self) -> None:
        self.writer.write(self.engine.data_to_send())

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def _read(self) -> bytes:
        try:
            return await self.reader.read(65536)
        except ConnectionResetError:
            return b""

    async def until(self, done: Callable[[list[Any]], bool], timeout: float = 10, *,
                    answer: bool = True) -> list[Any]:  # fmt: skip
        """Feed what arrives to the engine until ``done(all events so far)``; ``answer``:
        send what the engine queues (its KEEPALIVE echoes)."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout):
            while not done(self.events):
                data = await self._read()
                self.events += self.engine.receive_data(data, loop.time())
                if answer:
                    self.flush()
                if not data:
                    break
        return self.events

    async def frames_until(self, done: Callable[[list[Any]], bool],
                           timeout: float = 10) -> list[Any]:  # fmt: skip
        """Decode what arrives (the engine bypassed) until ``done(all frames so far)``."""
        decoder = self.engine.version.codec.StreamDecoder()
        frames: list[Any] = []
        async with asyncio.timeout(timeout):
            while not done(frames):
                data = await self._read()
                if not data:
                    break
                frames += decoder.feed(data)
        return frames

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


class Echo(RSocketHandler):
    async def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[RSocketPayload]:
        yield payload
        async for item in inbound:
            yield item


def test_a_one_item_channel_from_rsocket_java_is_answered(rsocket_java: str) -> None:
    """rsocket-java sends REQUEST_CHANNEL and its COMPLETE back to back (one read for our
    server): our responder must send nothing illegal in half_closed_remote (no REQUEST_N
    after the requester completed) and answer; the connection lives on for a second one."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Echo()) as server:
            async with await JavaClient.start(rsocket_java, _port(server.url)) as client:
                for _ in range(2):
                    result = await client.channel(1)
                    assert (result["elements"], result["last"], result["error"]) == (1, 0, None)
                result = await client.channel(3)
                assert (result["elements"], result["out_of_order"]) == (3, 0)

    run(main(), 60)


def test_rsocket_java_lease_client_against_a_server_without_leases_is_refused(
    rsocket_java: str,
) -> None:
    """Seed 003 / Protocol.md, SETUP: a server that accepts an L-flag SETUP MUST send a
    LEASE; ours has no lease to give without ``serve(lease=...)`` and refuses the SETUP
    with ERROR[UNSUPPORTED_SETUP], so rsocket-java's requester gets no lease and its
    request fails at once instead of waiting for ever."""

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Counting()) as server:
            async with await JavaClient.start(rsocket_java, _port(server.url), "--lease") as client:
                assert not await client.wait_lease(2_000)
                started = time.monotonic()
                result = await client.request_responses(1)
                assert result["ok"] == 0, result
                assert [e.split(" ")[0] for e in result["errors"]] == ["UnsupportedSetupException"]
                assert time.monotonic() - started < 10

    run(main(), 60)


def test_rsocket_java_client_with_a_resume_token_in_use_is_rejected_with_rejected_setup(
    rsocket_java: str,
) -> None:
    """Seed 003, Resume Operation: "A server should not accept a SETUP with a Token that
    is currently already being used".  Two rsocket-java clients with one token: our
    server answers the second SETUP with ERROR[REJECTED_SETUP] (rsocket-java fails its
    request with RejectedSetupException) and the first client's session goes on."""
    token = "000102030405060708090a0b0c0d0e0f"

    async def main() -> None:
        async with await serve("tcp://127.0.0.1:0", Counting(), resume=True) as server:
            options = ("--resume", "--resume-token", token)
            async with await JavaClient.start(rsocket_java, _port(server.url),
                                              *options) as first:  # fmt: skip
                assert (await first.request_responses(1))["ok"] == 1
                async with await JavaClient.start(rsocket_java, _port(server.url),
                                                  *options) as second:  # fmt: skip
                    result = await second.request_responses(1)
                    assert result["ok"] == 0, result
                    assert [e.split(" ")[0] for e in result["errors"]] == [
                        "RejectedSetupException"
                    ], result
                assert (await first.request_responses(2))["ok"] == 2
                assert len(server.peers) == 1

    run(main(), 60)
