"""Recovery and faults of the asyncio RabbitMQ stream client against the real broker.

Issue 5: 'Reconnect without loss: when the connection drops, the producer reconnects,
queries its sequence and re-sends unconfirmed messages; dedup means the stream holds
each message once. The consumer resumes from its last offset.' The connection is cut
three ways: by the broker (``close_stream_connections``: the ``{shutdown, Reason}``
call behind ``rabbitmqctl close_connection``; RabbitMQ 3.10.8 answers it with a FIN and
no CloseRequest), by the network (``FrameCapture.close_all()``: both sockets reset), and
by a ``Relay`` defined here that can stop forwarding without closing (a dead broker
that only heartbeats reveal), refuse new connections, or hold one direction.

Needs the broker on 127.0.0.1:5552 (``make broker``): without it these tests SKIP with
the reason, unless CI=true, where they FAIL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from wirestream.generated.rabbitmq_stream.v1 import CloseRequest
from wirestream.runtime.errors import ConnectionLost, TransportTimeout
from wirestream.runtime.rabbitmq_stream.aio import Client, Producer, connect
from tests.support import rabbitmq_broker_ctl as ctl
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_capture import FrameCapture
from tests.support.rabbitmq_stream_client_support import (
    HOST,
    PORT,
    URI,
    error_of,
    fresh_stream,
    unique,
    until,
    uri,
)

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

E = TypeVar("E", bound=BaseException)


async def _failure(awaitable: Awaitable[Any], *kinds: type[E]) -> E:
    """The exception ``awaitable`` raises, checked to be one of ``kinds``."""
    error = await error_of(awaitable)
    assert isinstance(error, kinds), f"expected {kinds}, got {error!r}"
    return error


def _body(index: int) -> bytes:
    """100 bytes carrying ``index`` (8 digits first)."""
    return b"%08d" % index + b"." * 92


def _index(body: bytes) -> int:
    assert len(body) == 100, body
    return int(body[:8])


@asynccontextmanager
async def _fresh_stream() -> AsyncIterator[str]:
    """A new stream (unique name), deleted afterwards, through an admin connection of
    its own, so the connection under test carries nothing else."""
    async with await connect(URI, reconnect=False) as admin:
        async with fresh_stream(admin, {"max-length-bytes": 200_000_000}, prefix="recovery") as s:
            yield s


async def _read_stream(stream: str, timeout: float = 0.5) -> list[tuple[int, int]]:
    """(offset, body index) of every message of ``stream``, read from "first" on a
    direct connection until nothing more arrives for ``timeout`` seconds."""
    seen: list[tuple[int, int]] = []
    async with await connect(URI, reconnect=False) as reader:
        consumer = await reader.consumer(stream, "first")
        try:
            while True:
                try:
                    async with asyncio.timeout(timeout):
                        message = await anext(consumer)
                except TimeoutError:
                    return seen
                seen.append((message.offset, _index(message.body)))
        finally:
            await consumer.close()


def _assert_exactly_once_in_order(seen: list[tuple[int, int]], count: int) -> None:
    """Offsets 0..count-1, each carrying the index equal to its offset, nothing after."""
    assert len(seen) == count, f"{len(seen)} messages in the stream, {count} published"
    wrong = [(offset, index) for position, (offset, index) in enumerate(seen)
             if offset != position or index != position]  # fmt: skip
    assert not wrong, f"first out of place (offset, index): {wrong[:5]}"


# ------------------------------------------------------------------------------------
# A relay we control: forwards, black-holes, holds one direction, refuses, resets.


class _End(asyncio.Protocol):
    """One socket of a relayed connection; what it receives goes to ``peer``."""

    def __init__(self, relay: Relay, upward: bool) -> None:
        self.relay = relay
        self.upward = upward  # True: the client's socket (its bytes go up to the broker)
        self.peer: _End | None = None
        self.transport: asyncio.Transport | None = None
        self.pending: list[bytes] = []
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.relay.forwarding(self.upward):
            transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.pending.append(data)
            return
        peer.transport.write(data)
        if self.upward:
            self.relay.bytes_up += len(data)

    def flush_pending(self) -> None:
        for data in self.pending:
            self.data_received(data)
        self.pending.clear()

    def eof_received(self) -> bool:
        return False  # close this socket; connection_lost closes the peer

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.transport.is_closing():
            peer.transport.close()

    def set_reading(self, reading: bool) -> None:
        if self.transport is not None:
            if reading:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()


class Relay:
    """A TCP relay to the broker on ``port`` (0: any) with faults on demand.

    ``black_hole()``: nothing is forwarded either way and nothing is closed (a broker
    or network gone silent), also for connections accepted meanwhile; ``resume()``
    forwards again. ``hold_down()``: the broker's bytes stop (its answers and
    confirms), the client's still reach it; ``hold_up()``: the reverse. ``refuse()``: stop listening and reset
    every connection (the port refuses); ``listen()`` accepts again on the same port.
    ``reset_all()``: reset every connection (a network drop)."""

    def __init__(self, upstream: tuple[str, int] = (HOST, PORT)) -> None:
        self.upstream = upstream
        self.port = 0
        self.ends: list[_End] = []
        self.bytes_up = 0
        self._up = True  # forwarding client -> broker
        self._down = True  # forwarding broker -> client
        self._server: asyncio.Server | None = None
        self._connects: set[asyncio.Task[None]] = set()

    def forwarding(self, upward: bool) -> bool:
        return self._up if upward else self._down

    async def __aenter__(self) -> Relay:
        await self.listen()
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()

    async def listen(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, HOST, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def _accept(self) -> _End:
        client_end = _End(self, upward=True)
        self.ends.append(client_end)
        task = asyncio.get_running_loop().create_task(self._connect_upstream(client_end))
        self._connects.add(task)
        task.add_done_callback(self._connects.discard)
        return client_end

    async def _connect_upstream(self, client_end: _End) -> None:
        server_end = _End(self, upward=False)
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(lambda: server_end, *self.upstream)
        except OSError:
            if client_end.transport is not None:
                client_end.transport.abort()
            return
        self.ends.append(server_end)
        client_end.peer, server_end.peer = server_end, client_end
        if client_end.transport is None or client_end.transport.is_closing():
            assert server_end.transport is not None
            server_end.transport.close()
            return
        if self._up:
            client_end.flush_pending()

    def _apply(self) -> None:
        for end in self.ends:
            end.set_reading(self.forwarding(end.upward))
            if end.upward and self._up:
                end.flush_pending()

    def black_hole(self) -> None:
        self._up = self._down = False
        self._apply()

    def hold_up(self) -> None:
        self._up = False
        self._apply()

    def hold_down(self) -> None:
        self._down = False
        self._apply()

    def resume(self) -> None:
        self._up = self._down = True
        self._apply()

    def reset_all(self) -> None:
        for end in self.ends:
            if end.transport is not None:
                end.transport.abort()

    async def refuse(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self.reset_all()

    async def aclose(self) -> None:
        await self.refuse()
        for task in list(self._connects):
            task.cancel()
        await asyncio.gather(*self._connects, return_exceptions=True)
        await asyncio.gather(*(end.closed for end in self.ends if end.transport is not None))


# ------------------------------------------------------------------------------------
# 1, 2. Producers through three drops during a 100,000-message publish.

COUNT = 100_000
DROPS_AT = (15_000, 45_000, 75_000)


class _Publishing:
    """What the publishing loop and the dropping task share."""

    def __init__(self) -> None:
        self.sent = 0
        self.slow = False  # while a drop is on its way: publish slowly so it lands mid-run
        self.unconfirmed_at_drop: list[int] = []


async def _drop_during(
    client: Client,
    producer: Producer,
    state: _Publishing,
    drop: Callable[[], Awaitable[None]],
) -> None:
    """At each of ``DROPS_AT`` messages sent: cut the connection, then wait until the
    client has opened the next one. The publisher slows down meanwhile, so every cut
    lands while messages are still being sent."""
    for number, at in enumerate(DROPS_AT, start=1):
        await until(lambda: state.sent >= at, timeout=60)
        state.slow = True
        state.unconfirmed_at_drop.append(producer.unconfirmed)
        await drop()
        await until(lambda: client.connections >= number + 1, timeout=30)
        state.slow = False


async def _drops_landed(state: _Publishing) -> None:
    """The publish does not end while a drop is on its way: under load ``rabbitmqctl
    eval`` takes seconds, and a publisher that finished meanwhile (once 1 in 3 runs at
    load 13, more often since the Publish frames are written natively) had the drop
    cancelled, failing the test with CancelledError instead of testing the drop."""
    await until(lambda: len(state.unconfirmed_at_drop) == len(DROPS_AT) and not state.slow,
                timeout=60)  # fmt: skip


async def _publish_one_by_one(producer: Producer, state: _Publishing) -> list[asyncio.Future[int]]:
    futures = []
    for index in range(COUNT):
        futures.append(await producer.send(_body(index)))
        state.sent = index + 1
        if state.slow and index % 200 == 0:
            await asyncio.sleep(0.02)  # bursts at ~10,000 messages/s
    await _drops_landed(state)
    await producer.flush()
    return futures


async def _publish_in_batches(producer: Producer, state: _Publishing) -> list[int]:
    """``send_many`` of 500 messages at a time; the publishing ids of all."""
    ids: list[int] = []
    confirmations = []
    for start in range(0, COUNT, 500):
        batch = await producer.send_many(_body(i) for i in range(start, start + 500))
        confirmations.append(batch)
        ids.extend(batch.publishing_ids)
        state.sent = start + 500
        if state.slow:
            await asyncio.sleep(0.05)  # ~10,000 messages/s
    await _drops_landed(state)
    for batch in confirmations:
        await batch  # raises on any failed message
        assert batch.confirmed == 500 and not batch.errors
    return ids


@dataclass
class _Path:
    """How the client reaches the broker: directly, or through the capture or the relay
    (the one a drop acts on)."""

    via: str  # "direct" | "capture" | "relay"
    connection_name: str
    capture: FrameCapture
    relay: Relay

    @property
    def port(self) -> int:
        return {"direct": PORT, "capture": self.capture.port, "relay": self.relay.port}[self.via]


Drop = Callable[[_Path], Awaitable[None]]


async def _lossless_publish(drop: Drop, via: str, *, batches: bool = False) -> Producer:
    """Publish ``COUNT`` messages with three ``drop``s during the publish; check that
    every message was confirmed with its publishing id and that the stream holds
    each once, in order. Returns the (closed) producer for its counters."""
    async with _fresh_stream() as stream, FrameCapture() as cap, Relay() as relay:
        path = _Path(via, unique("recovery-producer"), cap, relay)
        client = await connect(uri(path.port), connection_name=path.connection_name)
        async with client:
            producer = await client.producer(stream, reference=unique("recovery-ref"))
            state = _Publishing()
            dropping = asyncio.create_task(
                _drop_during(client, producer, state, lambda: drop(path))
            )
            try:
                if batches:
                    ids = await _publish_in_batches(producer, state)
                else:
                    futures = await _publish_one_by_one(producer, state)
                    # every future resolved with its publishing id; none failed
                    ids = [future.result() for future in futures]
            finally:
                if not dropping.done():
                    dropping.cancel()
                await asyncio.gather(dropping, return_exceptions=True)
            await dropping  # a failed drop fails the test
            assert client.connections == 1 + len(DROPS_AT), "each drop made a new connection"
            assert ids == list(range(1, COUNT + 1))
            assert producer.unconfirmed == 0 and producer.error is None
            await producer.close()
        _assert_exactly_once_in_order(await _read_stream(stream), COUNT)
    return producer


async def _broker_closes(path: _Path) -> None:
    """``rabbitmqctl close_connection``'s call, through ``rabbitmqctl eval``."""
    closed = await asyncio.to_thread(ctl.close_stream_connections, path.connection_name)
    assert len(closed) == 1, f"the broker closed {closed}"


async def _broker_closes_what_it_never_got(path: _Path) -> None:
    """The relay keeps the client's bytes while the broker closes the connection:
    what the client sent meanwhile never reaches the broker."""
    path.relay.hold_up()
    try:
        await _broker_closes(path)
    finally:
        path.relay.resume()


async def _network_resets(path: _Path) -> None:
    path.capture.close_all()


def test_publish_of_100k_survives_three_broker_closes_with_each_message_stored_once() -> None:
    """Issue 5: 'kills the connection (server side, e.g. rabbitmqctl close_connection)
    three times during a 100,000-message publish and then proves the stream holds
    exactly 100,000 unique messages in order'. (The broker confirms what it has
    before closing, so few messages are unconfirmed at these drops; the next tests
    make sure many are.)"""
    run(_lossless_publish(_broker_closes, "direct"), timeout=120)


def test_publish_of_100k_resends_what_the_broker_never_got_before_closing() -> None:
    """The same, with the client's last bytes before each broker close lost on the way:
    those messages are re-sent on the next connection (QueryPublisherSequence tells
    which) and stored once."""
    producer = run(_lossless_publish(_broker_closes_what_it_never_got, "relay"), timeout=120)
    assert producer.resent >= len(DROPS_AT) * 200, producer.resent


def test_publish_of_100k_survives_three_network_resets_with_each_message_stored_once() -> None:
    """The same with the network dropping the connection (both sockets reset) while
    the window of unconfirmed messages is full: re-sent messages the broker already
    had are deduplicated."""
    producer = run(_lossless_publish(_network_resets, "capture"), timeout=120)
    assert producer.resent > 0


def test_send_many_of_100k_survives_three_network_resets_with_each_message_stored_once() -> None:
    """The same with ``send_many`` batches of 500 (each message its own publishing id)."""
    producer = run(_lossless_publish(_network_resets, "capture", batches=True), timeout=120)
    assert producer.resent > 0


# ------------------------------------------------------------------------------------
# 3. Without a reference: nothing lost, duplicates possible.


def test_producer_without_reference_resends_unconfirmed_so_nothing_is_lost() -> None:
    """Without a reference the broker does not deduplicate ('the broker keeps track of
    the publishing ids per publisher reference'), but the producer still holds and
    re-sends every unconfirmed message after a drop: every index is stored at least
    once. Duplicates are possible (a message stored whose confirm the drop took)."""

    async def main() -> None:
        count = 30_000
        async with _fresh_stream() as stream, FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client:
                producer = await client.producer(stream)
                futures = []
                for index in range(count):
                    futures.append(await producer.send(_body(index)))
                    if index in (5_000, 15_000, 25_000):
                        cap.close_all()  # messages just sent are unconfirmed here
                await producer.flush()
                assert [f.result() for f in futures] == list(range(1, count + 1))
                assert client.connections == 4
                assert producer.resent > 0
                await producer.close()
            seen = [index for _, index in await _read_stream(stream)]
        assert set(seen) == set(range(count)), "every index stored at least once"
        assert len(seen) >= count

    run(main(), timeout=60)


async def _withheld_confirms_then_reset(reference: str | None) -> tuple[list[int], Producer]:
    """Publish 1,000 messages while the broker's answers are held back (so the broker
    stores them and no confirm arrives), then reset the connection and let the client
    recover. Returns the indices stored in the stream, and the producer."""
    count = 1_000
    async with _fresh_stream() as stream, Relay() as relay:
        async with await connect(uri(relay.port)) as client:
            producer = await client.producer(stream, reference=reference)
            relay.hold_down()
            futures = [await producer.send(_body(i)) for i in range(count)]
            async with await connect(URI, reconnect=False) as watcher:
                await until(lambda: relay.bytes_up > count * 100, timeout=10)
                # the broker has stored them all (a consumer on another connection sees them)
                consumer = await watcher.consumer(stream, "first")
                for _ in range(count):
                    await anext(consumer)
                await consumer.close()
            assert producer.unconfirmed == count, "no confirm got through"
            relay.resume()
            relay.reset_all()
            assert [await f for f in futures] == list(range(1, count + 1))
            assert client.connections == 2
            await producer.close()
        return [index for _, index in await _read_stream(stream)], producer


def test_stored_but_unconfirmed_messages_are_not_stored_again_with_a_reference() -> None:
    """'Deduplication': after the reconnect the producer asks QueryPublisherSequence,
    counts the ids up to the broker's sequence as confirmed and re-sends none of them:
    the stream holds each message once."""

    async def main() -> None:
        seen, producer = await _withheld_confirms_then_reset(unique("recovery-ref"))
        assert seen == list(range(1_000))
        assert producer.resent == 0

    run(main(), timeout=60)


def test_stored_but_unconfirmed_messages_are_stored_twice_without_a_reference() -> None:
    """Without a reference nothing tells the producer what the broker stored: it
    re-sends every unconfirmed message and the stream holds them twice. This is the
    documented price of publishing without a reference (at-least-once)."""

    async def main() -> None:
        seen, producer = await _withheld_confirms_then_reset(None)
        assert producer.resent == 1_000
        assert seen == list(range(1_000)) * 2

    run(main(), timeout=60)


# ------------------------------------------------------------------------------------
# 4. Consumers resume from their last offset.


def test_consumer_resumes_after_its_last_offset_through_broker_close_and_network_reset() -> None:
    """Issue 5: 'The consumer resumes from its last offset.' Two drops while reading
    50,000 messages (the broker closes the connection, then the network resets it):
    every offset 0..49,999 arrives exactly once, in order. The broker's forced close
    is a FIN with no CloseRequest frame before it."""

    async def main() -> None:
        count = 50_000
        connection_name = unique("recovery-consumer")
        async with _fresh_stream() as stream, FrameCapture() as cap:
            async with await connect(URI, reconnect=False) as filler:
                producer = await filler.producer(stream)
                await producer.send_many(_body(i) for i in range(count))
                await producer.flush()
                await producer.close()
            async with await connect(uri(cap.port), connection_name=connection_name) as client:
                consumer = await client.consumer(stream, "first", max_buffered=200)
                offsets: list[int] = []
                slow = False

                async def drop(at: int, how: Callable[[], Awaitable[None]], done: int) -> None:
                    nonlocal slow
                    await until(lambda: len(offsets) >= at, timeout=30)
                    slow = True
                    await how()
                    await until(lambda: consumer.resubscribed >= done, timeout=30)
                    slow = False

                async def broker_close() -> None:
                    assert len(await asyncio.to_thread(ctl.close_stream_connections,
                                                       connection_name)) == 1  # fmt: skip

                async def network_reset() -> None:
                    cap.close_all()

                async def drops() -> None:
                    await drop(10_000, broker_close, 1)
                    await drop(30_000, network_reset, 2)

                dropping = asyncio.create_task(drops())
                try:
                    async for message in consumer:
                        assert _index(message.body) == message.offset
                        offsets.append(message.offset)
                        if slow:
                            await asyncio.sleep(0.001)
                        if len(offsets) == count:
                            break
                    await dropping
                finally:
                    dropping.cancel()
                    await asyncio.gather(dropping, return_exceptions=True)
                assert offsets == list(range(count))
                assert consumer.resubscribed == 2 and client.connections == 3
                await consumer.close()
        broker_closed = cap.connections[0]
        assert broker_closed.server_ended == "eof"
        assert not [f for f in broker_closed.server_frames if isinstance(f, CloseRequest)]

    run(main(), timeout=90)


def test_flush_during_recovery_waits_for_the_confirms_of_the_resent_messages() -> None:
    """``flush``: 'Wait until every message sent so far is confirmed or refused'. Called
    while the client is reconnecting, it waits for the re-sent messages' confirms on the
    next connection instead of failing with the dead connection's error."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            async with await connect(uri(relay.port)) as client:
                producer = await client.producer(stream, reference=unique("recovery-ref"))
                relay.hold_down()
                futures = [await producer.send(_body(i)) for i in range(100)]
                relay.resume()
                await relay.refuse()
                await until(lambda: not client.is_open, timeout=5)
                flushing = asyncio.create_task(producer.flush())
                await asyncio.sleep(0.3)
                try:
                    assert not flushing.done(), "flush ended while the messages were unconfirmed"
                    await relay.listen()
                    await asyncio.wait_for(flushing, 10)
                finally:
                    flushing.cancel()
                    await asyncio.gather(flushing, return_exceptions=True)
                assert producer.unconfirmed == 0
                assert [f.result() for f in futures] == list(range(1, 101))
                await producer.close()
            assert [index for _, index in await _read_stream(stream)] == list(range(100))

    run(main(), timeout=30)


def test_send_waiting_on_a_full_socket_when_the_connection_drops_still_returns_its_future() -> None:
    """``send`` queues the message and then waits while the socket is backed up. When
    the connection drops during that wait the message is held and re-sent after the
    recovery, so ``send`` must hand back its future (which resolves on the next
    connection), not raise the dead connection's error and leave the caller unable to
    tell what happened to a message that will in fact be stored."""

    async def main() -> None:
        body = b"x" * 10_000
        async with _fresh_stream() as stream, Relay() as relay:
            async with await connect(uri(relay.port)) as client:
                producer = await client.producer(stream, reference=unique("recovery-ref"))
                relay.hold_up()  # nothing the client writes leaves the relay
                futures: list[asyncio.Future[int]] = []

                async def publish() -> None:
                    for _ in range(2_000):
                        futures.append(await producer.send(body))

                publishing = asyncio.create_task(publish())
                try:
                    await until(client.backed_up, timeout=10)
                    sent = len(futures)
                    await asyncio.sleep(0.2)
                    assert len(futures) == sent and not publishing.done(), "not blocked"
                    relay.resume()
                    relay.reset_all()
                    await asyncio.wait_for(asyncio.shield(publishing), 20)
                finally:
                    publishing.cancel()
                    await asyncio.gather(publishing, return_exceptions=True)
                await producer.flush()
                assert [f.result() for f in futures] == list(range(1, 2_001))
                assert client.connections == 2
                await producer.close()
            async with await connect(URI, reconnect=False) as reader:
                consumer = await reader.consumer(stream, "first")
                offsets = [(await anext(consumer)).offset for _ in range(2_000)]
                await consumer.close()
            assert offsets == list(range(2_000))

    run(main(), timeout=60)


# ------------------------------------------------------------------------------------
# 5. A broker gone silent: heartbeats.


async def _silenced_client(
    stream: str, relay: Relay
) -> tuple[Client, Producer, asyncio.Future[int], float]:
    """A client (heartbeat=1, no recovery) with a producer, one message confirmed, then
    the relay black-holed and one more message sent: (client, producer, its future,
    when the silence began)."""
    client = await connect(uri(relay.port), heartbeat=1, reconnect=False)
    assert client.heartbeat == 1
    producer = await client.producer(stream)
    await producer.send_wait(b"before the silence")
    relay.black_hole()
    silent_since = asyncio.get_running_loop().time()
    pending = await producer.send(b"into the silence")
    return client, producer, pending, silent_since


def test_silent_connection_fails_unconfirmed_messages_with_heartbeat_reason_within_4_s() -> None:
    """PROTOCOL.adoc, Tune: 'Heartbeat => uint32 // in seconds, 0 means no heartbeat';
    the client counts the broker dead after two silent intervals. With heartbeat=1 and
    no recovery, an unconfirmed message fails with ConnectionLost(reason "heartbeat")
    some 2 s after the relay stops forwarding (without closing anything); so does any
    later send, and ``client.error`` says why."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            client, producer, pending, silent_since = await _silenced_client(stream, relay)
            async with client:
                failed = await _failure(pending, ConnectionLost)
                detected_after = asyncio.get_running_loop().time() - silent_since
                assert failed.reason == "heartbeat"
                assert 1.5 <= detected_after <= 4.0, detected_after
                flushed = await _failure(producer.flush(), ConnectionLost)
                assert flushed.reason == "heartbeat"
                refused = await _failure(producer.send(b"after"), ConnectionLost)
                assert refused.reason == "heartbeat"
                assert isinstance(client.error, ConnectionLost)
                assert client.error.reason == "heartbeat"
                relay.resume()

    run(main(), timeout=30)


def test_silent_connection_fails_a_pending_request_with_heartbeat_reason() -> None:
    """A request waiting for its answer when the heartbeat declares the broker dead
    fails with the same ConnectionLost(reason "heartbeat") as everything else."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            client, _, pending, silent_since = await _silenced_client(stream, relay)
            async with client:
                raised = await _failure(client.metadata(stream), ConnectionLost)
                detected_after = asyncio.get_running_loop().time() - silent_since
                await _failure(pending, ConnectionLost)
                assert 1.5 <= detected_after <= 4.0, detected_after
                assert raised.reason == "heartbeat", raised
                relay.resume()

    run(main(), timeout=30)


def test_silent_connection_is_replaced_once_the_network_forwards_again() -> None:
    """With reconnect=True the heartbeat-detected drop starts the recovery; once the
    relay forwards again (new connections included) the client reconnects and the
    message sent into the silence is confirmed, stored once."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            client = await connect(uri(relay.port), heartbeat=1, timeout=2.0)
            async with client:
                producer = await client.producer(stream, reference=unique("recovery-ref"))
                await producer.send_wait(_body(0))
                relay.black_hole()
                pending = await producer.send(_body(1))
                await until(lambda: not client.is_open, timeout=5)
                await asyncio.sleep(1.0)  # recovery attempts meet the silence too
                assert not pending.done()
                relay.resume()
                assert await asyncio.wait_for(pending, 15) == 2
                assert client.connections == 2 and client.error is None
                await producer.close()
            assert await _read_stream(stream) == [(0, 0), (1, 1)]

    run(main(), timeout=40)


# ------------------------------------------------------------------------------------
# 6. Recovery that gives up.


def test_recovery_gives_up_after_recovery_timeout_and_fails_what_was_pending() -> None:
    """reconnect=True, recovery_timeout=2 s and the port refusing: the client gives up
    (``client.error``), unconfirmed messages fail, the recovery task ends (run() checks
    that no task is left) and the client still closes."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            client = await connect(uri(relay.port), recovery_timeout=2.0, timeout=2.0)
            producer = await client.producer(stream)
            await producer.send_wait(b"before")
            held = await producer.send(b"held at the drop")
            await relay.refuse()
            loop = asyncio.get_running_loop()
            dropped_at = loop.time()
            await _failure(held, ConnectionLost, TransportTimeout)
            await until(lambda: client.error is not None, timeout=10)
            gave_up_after = loop.time() - dropped_at
            assert 1.5 <= gave_up_after <= 4.0, gave_up_after
            assert isinstance(client.error, (ConnectionLost, TransportTimeout, OSError))
            assert client.closed and not client.is_open
            await _failure(producer.send(b"after giving up"), ConnectionLost, TransportTimeout)
            await _failure(client.metadata(stream), ConnectionLost, TransportTimeout)
            await client.close()

    run(main(), timeout=30)


def test_requests_waiting_for_recovery_fail_as_soon_as_it_gives_up() -> None:
    """A request and a send issued while the client is recovering wait for the
    connection; when the recovery gives up they must fail then (with the client's
    error), not a ``timeout`` later."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            # timeout=5: waiting for the connection lasts at most 2 + 5 s, so a waiter
            # still there 1 s after the give-up (at ~2 s) is one the give-up missed
            client = await connect(uri(relay.port), recovery_timeout=2.0, timeout=5.0)
            producer = await client.producer(stream)
            await producer.send_wait(b"before")
            await relay.refuse()
            await until(lambda: not client.is_open, timeout=5)
            request = asyncio.create_task(client.metadata(stream))
            send = asyncio.create_task(producer.send(b"during the recovery"))
            await until(lambda: client.error is not None, timeout=10)
            loop = asyncio.get_running_loop()
            gave_up_at = loop.time()
            try:
                done, _ = await asyncio.wait({request, send}, timeout=1.0)
                assert done == {request, send}, (
                    f"still waiting 1 s after the client gave up: "
                    f"{[t.get_coro() for t in {request, send} - done]}"
                )
                for task in (request, send):
                    assert isinstance(task.exception(), (ConnectionLost, TransportTimeout))
            finally:
                await asyncio.gather(request, send, return_exceptions=True)
                assert loop.time() - gave_up_at < 30
                await client.close()

    run(main(), timeout=40)


# ------------------------------------------------------------------------------------
# 7. Requests racing a drop; producers and consumers created while recovering.


@pytest.mark.parametrize("cut", ["with the request", "after the broker got it"])
def test_request_racing_a_drop_fails_with_connection_lost_then_works_again(cut: str) -> None:
    """A request in flight when the connection drops fails with ConnectionLost (its
    answer can never come) instead of waiting; the client recovers and the same request
    succeeds on the new connection."""

    async def main() -> None:
        name = unique("recovery-raced")
        async with Relay() as relay:
            async with await connect(uri(relay.port), timeout=10.0) as client:
                loop = asyncio.get_running_loop()
                if cut == "after the broker got it":
                    relay.hold_down()
                    before = relay.bytes_up
                    request = asyncio.create_task(client.create_stream(name))
                    await until(lambda: relay.bytes_up > before, timeout=5)
                    relay.resume()
                else:
                    request = asyncio.create_task(client.create_stream(name))
                    await asyncio.sleep(0)  # the request is issued, not yet written
                relay.reset_all()
                cut_at = loop.time()
                await _failure(request, ConnectionLost)
                assert loop.time() - cut_at < 1.0
                await client.create_stream(name, exist_ok=True)
                assert await client.stream_exists(name)
                assert client.connections == 2
                await client.delete_stream(name)

    run(main(), timeout=30)


def test_producer_and_consumer_created_during_recovery_work_once_it_reconnects() -> None:
    """``client.producer`` / ``client.consumer`` called while the port refuses wait for
    the recovery, then declare/subscribe on the new connection and work."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            async with await connect(uri(relay.port), timeout=5.0) as client:
                await relay.refuse()
                await until(lambda: not client.is_open, timeout=5)
                creating_producer = asyncio.create_task(client.producer(stream))
                creating_consumer = asyncio.create_task(client.consumer(stream, "first"))
                await asyncio.sleep(0.5)
                assert not creating_producer.done() and not creating_consumer.done()
                await relay.listen()
                producer = await asyncio.wait_for(creating_producer, 10)
                consumer = await asyncio.wait_for(creating_consumer, 10)
                assert client.connections == 2
                assert await producer.send_wait(b"after the recovery") == 1
                message = await asyncio.wait_for(anext(consumer), 10)
                assert (message.offset, message.body) == (0, b"after the recovery")
                await consumer.close()
                await producer.close()

    run(main(), timeout=30)


# ------------------------------------------------------------------------------------
# 8. Closing while recovering.


def test_close_during_recovery_stops_it_and_fails_what_was_pending() -> None:
    """``close()`` while the client is re-dialling a refusing port: the recovery task
    ends (run() checks no task is left), the unconfirmed message fails with
    ConnectionLost, and so do a request and a send waiting for the connection."""

    async def main() -> None:
        async with _fresh_stream() as stream, Relay() as relay:
            client = await connect(uri(relay.port), recovery_timeout=60.0, timeout=10.0)
            producer = await client.producer(stream)
            await producer.send_wait(b"before")
            held = await producer.send(b"held at the drop")
            await relay.refuse()
            await until(lambda: not client.is_open, timeout=5)
            request = asyncio.create_task(client.metadata(stream))
            send = asyncio.create_task(producer.send(b"during the recovery"))
            await asyncio.sleep(0.3)  # a few refused attempts
            loop = asyncio.get_running_loop()
            closing_at = loop.time()
            await asyncio.wait_for(client.close(), 5)
            assert loop.time() - closing_at < 1.0
            await _failure(held, ConnectionLost)
            try:
                done, _ = await asyncio.wait({request, send}, timeout=1.0)
                assert done == {request, send}, "still waiting 1 s after close()"
                for task in (request, send):
                    assert isinstance(task.exception(), ConnectionLost)
            finally:
                for task in (request, send):
                    task.cancel()
                await asyncio.gather(request, send, return_exceptions=True)
            assert not client.is_open and client.closed

    run(main(), timeout=30)
