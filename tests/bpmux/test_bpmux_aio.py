"""wirestream.runtime.bpmux.aio: two BPMUX peers over real TCP (one test each over memory:// and
ws://): every communication pattern, two-level byte credit (a slow consumer stalls the
sender at its credit, never more buffered than granted), cancel paths, Close and
CancelAll, connection loss and garbage as typed errors, concurrency.  Every test runs
through ``tests.support.aio_support.run`` (no task or socket left behind)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.generated.bpmux.rel import MainCredit
from wirestream.runtime.aio import Listener, StreamCancelled, Transport, listen
from wirestream.runtime.bpmux.aio import (
    BpmuxApplicationError,
    BpmuxPeer,
    BpmuxServer,
    Handler,
    ItemStream,
    ItemWriter,
    connect,
    serve,
)
from wirestream.runtime.errors import ConnectionLost, RemoteProtocolError
from tests.support.aio_support import run

TCP = "tcp://127.0.0.1:0"


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def settle(seconds: float = 0.1) -> None:
    """Give the peers time to send what credit allows (and prove nothing more goes)."""
    await asyncio.sleep(seconds)


class Echo(Handler):
    """Requests upper-cased, "fail" answered with an error; stream N: items 0..N-1;
    sinks collected; duplex items reversed back."""

    def __init__(self) -> None:
        self.sunk: list[bytes] = []
        self.sink_done = asyncio.Event()

    async def on_request(self, data: bytes) -> bytes:
        if data == b"fail":
            raise BpmuxApplicationError(b"failed on purpose")
        if data == b"crash":
            raise KeyError("boom")
        return data.upper()

    async def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
        if data == b"error":
            yield b"first"
            raise BpmuxApplicationError(b"stream broke")
        for i in range(int(data)):
            yield str(i).encode()

    async def on_sink(self, data: bytes, items: ItemStream) -> None:
        async for item in items:
            self.sunk.append(item)
        self.sink_done.set()

    async def on_duplex(self, data: bytes, items: ItemStream, writer: ItemWriter) -> None:
        async for item in items:
            await writer.send(item[::-1])


@contextlib.asynccontextmanager
async def pair(handler: Handler, url: str = TCP, **options: Any
               ) -> AsyncIterator[tuple[BpmuxServer, BpmuxPeer, BpmuxPeer]]:  # fmt: skip
    """A server with ``handler``, a client connected to it, and the server's peer; the
    client closes politely at the end (drops the connection if the test failed)."""
    async with serve(url, handler, **options) as server:
        client = await connect(server.url, **options)
        try:
            yield server, client, await server.accepted()
        except BaseException:
            client.abort()
            raise
        finally:
            await client.close()


# --- patterns --------------------------------------------------------------------------


def test_message_reaches_the_peers_messages_iterator_both_ways() -> None:
    async def main() -> None:
        async with pair(Handler()) as (server, client, accepted):
            await client.send_message(b"to server")
            await accepted.send_message(b"to client")
            assert await anext(accepted.messages()) == b"to server"
            assert await anext(client.messages()) == b"to client"

    run(main())


def test_messages_go_to_on_message_in_order() -> None:
    class Collect(Handler):
        def __init__(self) -> None:
            self.got: list[bytes] = []

        async def on_message(self, data: bytes) -> None:
            await asyncio.sleep(0)
            self.got.append(data)

    async def main() -> None:
        handler = Collect()
        async with pair(handler) as (server, client, _):
            for i in range(300):
                await client.send_message(b"m%d" % i)
            await eventually(lambda: len(handler.got) == 300)
            assert handler.got == [b"m%d" % i for i in range(300)]

    run(main())


def test_request_gets_the_handlers_reply() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, _):
            assert await client.request(b"ping") == b"PING"
            assert await client.request(b"") == b""

    run(main())


def test_handler_error_becomes_an_error_reply_raised_as_application_error() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, _):
            with pytest.raises(BpmuxApplicationError) as chosen:
                await client.request(b"fail")
            assert chosen.value.payload == b"failed on purpose"
            with pytest.raises(BpmuxApplicationError) as crashed:
                await client.request(b"crash")
            assert crashed.value.payload == b"KeyError: 'boom'"
            assert await client.request(b"after") == b"AFTER"  # the connection lives on

    run(main())


def test_requests_work_from_the_accepting_side_too() -> None:
    async def main() -> None:
        async with serve(TCP, Handler()) as server, connect(server.url, Echo()):
            accepted = await server.accepted()
            assert await accepted.request(b"reverse") == b"REVERSE"

    run(main())


def test_a_handler_factory_gets_the_peer_and_can_call_back() -> None:
    class CallBack(Handler):
        def __init__(self, peer: BpmuxPeer) -> None:
            self.peer = peer

        async def on_request(self, data: bytes) -> bytes:
            return b"client said " + await self.peer.request(data)  # a request back

    async def main() -> None:
        async with serve(TCP, CallBack) as server, connect(server.url, Echo()) as client:
            assert await client.request(b"hi") == b"client said HI"

    run(main())


def test_default_handler_refuses_requests_streams_and_duplexes() -> None:
    async def main() -> None:
        async with pair(Handler()) as (server, client, _):
            with pytest.raises(BpmuxApplicationError, match="no request handler"):
                await client.request(b"x")
            with pytest.raises(BpmuxApplicationError, match="no stream handler"):
                async for _ in await client.open_stream(b"x"):
                    pass
            duplex = await client.open_duplex(b"x")
            with pytest.raises(BpmuxApplicationError, match="no duplex handler"):
                async for _ in duplex:
                    pass

    run(main())


def test_stream_delivers_every_item_in_order_then_ends() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, _):
            items = [item async for item in await client.open_stream(b"1000", credit=512)]
            assert items == [str(i).encode() for i in range(1000)]

    run(main())


def test_stream_error_is_raised_after_the_items_before_it() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, _):
            got = []
            with pytest.raises(BpmuxApplicationError) as broke:
                async for item in await client.open_stream(b"error"):
                    got.append(item)
            assert got == [b"first"] and broke.value.payload == b"stream broke"

    run(main())


def test_sink_items_reach_the_handler_then_end() -> None:
    async def main() -> None:
        handler = Echo()
        async with pair(handler, stream_credit=300) as (server, client, _):
            async with await client.open_sink(b"upload") as sink:
                for i in range(500):
                    await sink.send(b"chunk %d" % i)
            await asyncio.wait_for(handler.sink_done.wait(), 5)
            assert handler.sunk == [b"chunk %d" % i for i in range(500)]

    run(main())


def test_sink_from_an_async_generator() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(50):
            yield b"g%d" % i

    async def main() -> None:
        handler = Echo()
        async with pair(handler) as (server, client, _):
            sink = await client.open_sink(b"upload")
            await sink.send_from(chunks())
            await asyncio.wait_for(handler.sink_done.wait(), 5)
            assert handler.sunk == [b"g%d" % i for i in range(50)] and sink.finished

    run(main())


def test_duplex_carries_items_both_ways() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, _):
            async with await client.open_duplex(b"reverse", credit=200) as duplex:
                for word in (b"abc", b"hello", b"xyz"):
                    await duplex.send(word)
                    assert await anext(duplex.items) == word[::-1]
                await duplex.end()
                assert [item async for item in duplex] == []  # the handler ended after our end

    run(main())


def test_greedy_sink_items_travel_with_the_create_packet() -> None:
    async def main() -> None:
        handler = Echo()
        async with pair(handler, greedy=True) as (server, client, _):
            async with await client.open_sink(b"upload", items=[b"early 1", b"early 2"]) as sink:
                await sink.send(b"late")
            await asyncio.wait_for(handler.sink_done.wait(), 5)
            assert handler.sunk == [b"early 1", b"early 2", b"late"]

    run(main())


# --- credit at both levels ---------------------------------------------------------------


def test_slow_message_consumer_stalls_the_sender_at_top_level_credit() -> None:
    async def main() -> None:
        credit = 4096
        async with pair(Handler(), credit=credit) as (server, client, accepted):
            sent = 0

            async def produce() -> None:
                nonlocal sent
                for _ in range(100):
                    await client.send_message(bytes(500))
                    sent += 1

            producer = asyncio.create_task(produce())
            await settle()
            # ~8 messages of 503 bytes fit in 4096 bytes; the rest wait for the consumer.
            assert not producer.done() and sent <= credit // 503
            assert accepted.buffered_message_bytes <= credit
            assert accepted.held_top_level_bytes <= credit
            received = 0
            async for message in accepted.messages():
                assert accepted.held_top_level_bytes <= credit
                received += 1
                if received == 100:
                    break
            await producer

    run(main())


def test_requests_hold_top_level_credit_until_answered() -> None:
    class Blocked(Handler):
        def __init__(self) -> None:
            self.started = 0
            self.release = asyncio.Event()

        async def on_request(self, data: bytes) -> bytes:
            self.started += 1
            await self.release.wait()
            return data

    async def main() -> None:
        handler = Blocked()
        async with pair(handler, credit=1024) as (server, client, accepted):
            calls = [asyncio.create_task(client.request(bytes(100))) for _ in range(30)]
            await settle()
            # A request of 100 bytes costs 103: at most 9 fit in 1024 until answered.
            assert 0 < handler.started <= 1024 // 103
            assert accepted.held_top_level_bytes <= 1024
            handler.release.set()
            assert all(reply == bytes(100) for reply in await asyncio.gather(*calls))
            assert handler.started == 30

    run(main())


def test_slow_stream_consumer_stalls_the_sender_at_inner_credit() -> None:
    class Counting(Handler):
        def __init__(self) -> None:
            self.sent = 0

        async def on_stream(self, data: bytes, writer: ItemWriter) -> None:
            for _ in range(200):
                await writer.send(bytes(100))
                self.sent += 1

    async def main() -> None:
        handler = Counting()
        async with pair(handler) as (server, client, _):
            stream = await client.open_stream(b"", credit=1000)
            await settle()
            # An item of 100 bytes costs 103 (+2 kept back for the InnerEnd): 9 fit in 1000.
            assert handler.sent <= 1000 // 103
            assert stream.buffered_bytes <= stream.credit == 1000
            count = 0
            async for _ in stream:
                assert stream.buffered_bytes <= 1000
                count += 1
                if count % 20 == 0:
                    await asyncio.sleep(0.01)  # a slow consumer: the buffer stays bounded
                    assert stream.buffered_bytes <= 1000
            assert count == 200

    run(main())


def test_slow_sink_consumer_stalls_the_writer_at_inner_credit() -> None:
    class Slow(Handler):
        def __init__(self) -> None:
            self.items: ItemStream | None = None
            self.go = asyncio.Event()
            self.count = 0

        async def on_sink(self, data: bytes, items: ItemStream) -> None:
            self.items = items
            await self.go.wait()
            async for _ in items:
                self.count += 1

    async def main() -> None:
        handler = Slow()
        async with pair(handler, stream_credit=2000) as (server, client, _):
            sink = await client.open_sink(b"")
            writes = 0

            async def write() -> None:
                nonlocal writes
                for _ in range(100):
                    await sink.send(bytes(200))
                    writes += 1
                await sink.end()

            writer = asyncio.create_task(write())
            await settle()
            assert not writer.done() and writes <= 2000 // 203
            assert handler.items is not None and handler.items.buffered_bytes <= 2000
            handler.go.set()
            await writer
            await eventually(lambda: handler.count == 100)

    run(main())


def test_a_message_larger_than_a_quarter_of_the_credit_does_not_deadlock() -> None:
    async def main() -> None:
        async with pair(Handler(), credit=1000) as (server, client, accepted):

            async def produce() -> None:
                for _ in range(10):
                    await client.send_message(bytes(600))  # 603 of 1000 bytes: one at a time

            producer = asyncio.create_task(produce())
            got = [message async for message, _ in zip_count(accepted.messages(), 10)]
            await producer
            assert len(got) == 10

    run(main())


async def zip_count(messages: AsyncIterator[bytes], n: int
                    ) -> AsyncIterator[tuple[bytes, int]]:  # fmt: skip
    i = 0
    async for message in messages:
        yield message, i
        i += 1
        if i == n:
            return


def test_credit_freed_by_a_cheaper_batch_is_used_without_a_grant() -> None:
    """Items are reserved at their single-packet cost (4 bytes + 2 kept for the InnerEnd);
    written as one InnerItems batch they cost less, which frees credit without any grant:
    with 20 bytes, 4 items go at once (11 bytes as a batch) and the waiting 5th must go
    too, while the consumer has not taken anything."""

    class Five(Handler):
        def __init__(self) -> None:
            self.sent = 0

        async def on_stream(self, data: bytes, writer: ItemWriter) -> None:
            for i in range(5):
                await writer.send(b"%d" % i)
                self.sent += 1

    async def main() -> None:
        handler = Five()
        async with pair(handler) as (server, client, _):
            stream = await client.open_stream(b"", credit=20)
            await eventually(lambda: handler.sent == 5)
            await eventually(lambda: stream.buffered == 5)
            assert stream.buffered_bytes <= 20
            assert [item async for item in stream] == [b"0", b"1", b"2", b"3", b"4"]

    run(main(), timeout=10)


@settings(max_examples=15, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=40),
    window=st.integers(450, 3000),
    pauses=st.lists(st.booleans(), min_size=1, max_size=10),
)
def test_buffered_bytes_never_exceed_the_granted_credit(sizes: list[int], window: int,
                                                        pauses: list[bool]) -> None:  # fmt: skip

    class Sizes(Handler):
        async def on_stream(self, data: bytes, writer: ItemWriter) -> None:
            for size in sizes:
                await writer.send(bytes(size))

    async def main() -> None:
        async with pair(Sizes(), url="memory://credit-property") as (server, client, _):
            stream = await client.open_stream(b"", credit=window)
            got = []
            async for item in stream:
                assert stream.buffered_bytes <= window
                got.append(len(item))
                if pauses[len(got) % len(pauses)]:
                    await asyncio.sleep(0)
                    await asyncio.sleep(0)
                assert stream.buffered_bytes <= window
            assert got == sizes

    run(main())


# --- cancel paths ----------------------------------------------------------------------


class Endless(Handler):
    """An endless stream whose end (normal or cancelled) is recorded."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.request_cancelled = asyncio.Event()

    async def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
        try:
            i = 0
            while True:
                yield b"%d" % i
                i += 1
        finally:
            self.closed.set()

    async def on_request(self, data: bytes) -> bytes:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.request_cancelled.set()
            raise
        return b""


def test_break_out_of_a_stream_cancels_the_sender() -> None:
    async def main() -> None:
        handler = Endless()
        async with pair(handler) as (server, client, accepted):
            async for item in await client.open_stream(b""):
                if item == b"5":
                    break
            await asyncio.wait_for(handler.closed.wait(), 5)  # the generator was closed
            await eventually(lambda: not accepted.engine.open_inner_ids())
            assert not client.engine.open_inner_ids()

    run(main())


def test_break_cancels_even_while_the_stream_is_still_held() -> None:
    async def main() -> None:
        handler = Endless()
        async with pair(handler) as (server, client, accepted):
            stream = await client.open_stream(b"")
            assert await anext(stream) == b"0"  # anext keeps the stream open
            async for item in stream:
                assert item == b"1"
                break
            assert stream.finished and stream.buffered_bytes == 0
            await asyncio.wait_for(handler.closed.wait(), 5)

    run(main())


def test_aclose_and_task_cancel_cancel_the_stream() -> None:
    async def main() -> None:
        handler = Endless()
        async with pair(handler) as (server, client, _):
            stream = await client.open_stream(b"")
            await anext(stream)
            await stream.aclose()
            await asyncio.wait_for(handler.closed.wait(), 5)

            handler.closed.clear()
            second = await client.open_stream(b"")

            async def consume_slowly() -> None:
                async for _ in second:
                    await asyncio.sleep(3600)

            consumer = asyncio.create_task(consume_slowly())
            await settle(0.05)
            consumer.cancel()
            with pytest.raises(asyncio.CancelledError):
                await consumer
            del second
            await asyncio.wait_for(handler.closed.wait(), 5)

    run(main())


def test_cancelling_a_request_cancels_the_responder() -> None:
    async def main() -> None:
        handler = Endless()
        async with pair(handler) as (server, client, accepted):
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client.request(b"slow"), 0.1)
            await asyncio.wait_for(handler.request_cancelled.wait(), 5)
            await eventually(lambda: accepted.engine.open_requests() == ([], []))
            assert accepted.held_top_level_bytes == 0  # the cancelled request's credit came back

    run(main())


def test_peer_cancelling_a_sink_stops_our_writer() -> None:
    class TakeTwo(Handler):
        async def on_sink(self, data: bytes, items: ItemStream) -> None:
            await anext(items)
            await anext(items)  # then return: the peer gets InnerCancel

    async def main() -> None:
        async with pair(TakeTwo()) as (server, client, _):
            sink = await client.open_sink(b"")
            with pytest.raises(StreamCancelled):
                while True:  # until the credit runs out and the InnerCancel is seen
                    await sink.send(b"item")
            assert sink.cancelled
            await sink.end()  # no InnerEnd is owed after InnerCancel: a no-op

    run(main())


def test_cancel_all_cancels_our_requests_and_streams() -> None:
    async def main() -> None:
        handler = Endless()
        async with pair(handler) as (server, client, accepted):
            stream = await client.open_stream(b"")
            await anext(stream)
            pending = asyncio.create_task(client.request(b"slow"))
            await settle(0.05)
            client.cancel_all()
            with pytest.raises(StreamCancelled):
                await pending
            assert [item async for item in stream] == []  # ends quietly, buffer dropped
            await asyncio.wait_for(handler.request_cancelled.wait(), 5)
            await asyncio.wait_for(handler.closed.wait(), 5)
            await eventually(lambda: accepted.engine.open_inner_ids() == [])

    run(main())


# --- Close, connection loss, garbage ---------------------------------------------------------


def test_close_ends_both_sides_cleanly() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, accepted):
            await client.send_message(b"last words")
            assert await client.request(b"x") == b"X"
            await client.close()
            # The server answered our Close with its own; then nothing was open: a clean end.
            await accepted.wait_closed()
            assert accepted.error is None and client.error is None
            assert [m async for m in accepted.messages()] == [b"last words"]

    run(main())


def test_close_without_cancel_lets_open_streams_and_requests_finish() -> None:
    class Slow(Echo):
        async def on_request(self, data: bytes) -> bytes:
            await asyncio.sleep(0.05)
            return data.upper()

    async def main() -> None:
        async with pair(Slow()) as (server, client, accepted):
            stream = await client.open_stream(b"300", credit=100)
            pending = asyncio.create_task(client.request(b"late"))
            await settle(0.01)
            closing = asyncio.create_task(client.close(cancel=False))
            assert len([item async for item in stream]) == 300  # Close stops only new ones
            assert await pending == b"LATE"
            await closing
            await accepted.wait_closed()
            assert client.error is None and accepted.error is None  # a clean end both sides

    run(main())


def test_close_with_a_stream_left_open_fails_it_after_the_timeout() -> None:
    class Unread(Handler):
        async def on_sink(self, data: bytes, items: ItemStream) -> None:
            await asyncio.sleep(3600)

    async def main() -> None:
        async with pair(Unread()) as (server, client, accepted):
            sink = await client.open_sink(b"")
            await sink.send(b"one")
            await client.close(timeout=0.05, cancel=False)
            assert client.closed and client.error is None  # our own close
            with pytest.raises(ConnectionLost):
                await sink.send(b"two")  # the connection ended with the sink open
            await accepted.wait_closed()
            assert isinstance(accepted.error, ConnectionLost)  # not a clean end for it

    run(main())


def test_peer_dropping_mid_stream_fails_open_streams_and_requests_with_connection_lost() -> None:
    async def main() -> None:
        handler = Endless()
        async with pair(handler) as (server, client, accepted):
            stream = await client.open_stream(b"", credit=100)
            pending = asyncio.create_task(client.request(b"slow"))
            await anext(stream)
            accepted.abort()
            with pytest.raises(ConnectionLost):
                async for _ in stream:
                    pass
            with pytest.raises(ConnectionLost):
                await pending
            with pytest.raises(ConnectionLost):
                await client.send_message(b"too late")
            with pytest.raises(ConnectionLost):
                async for _ in client.messages():
                    pass

    run(main())


def test_server_closing_mid_sink_fails_the_writer_with_connection_lost() -> None:
    class Never(Handler):
        async def on_sink(self, data: bytes, items: ItemStream) -> None:
            await asyncio.sleep(3600)

    async def main() -> None:
        async with pair(Never(), stream_credit=500) as (server, client, _):
            sink = await client.open_sink(b"")
            sending = asyncio.create_task(sink.send_from(endless_items()))
            await settle(0.05)
            server.close()  # aborts the connection
            with pytest.raises(ConnectionLost):
                await sending
            await server.wait_closed()
            await client.wait_closed()

    run(main())


async def endless_items() -> AsyncIterator[bytes]:
    while True:
        yield b"item"


async def garbage_peer(after: bytes) -> tuple[Listener, asyncio.Event]:
    """A listener that grants credit, reads one packet, then sends ``after`` + garbage."""
    got_request = asyncio.Event()

    async def on_transport(transport: Transport) -> None:
        transport.write(MainCredit(1 << 16).to_bytes())
        while not await transport.read():
            pass
        got_request.set()
        # a Message whose length is a non-canonical VarU64 (0xf8 then a value < 248)
        transport.write(after + b"\x04\xf8\x05hello")
        await transport.read()  # until the peer closes

    return await listen(TCP, on_transport), got_request


def test_garbage_from_the_peer_fails_everything_with_a_remote_protocol_error() -> None:
    async def main() -> None:
        listener, got_request = await garbage_peer(after=b"\x04\x02ok")  # Message "ok" first
        async with listener:
            client = await connect(listener.url)
            pending = asyncio.create_task(client.request(b"anyone?"))
            await got_request.wait()
            with pytest.raises(RemoteProtocolError):
                await pending
            messages = client.messages()
            assert await anext(messages) == b"ok"  # the packet before the garbage counts
            with pytest.raises(RemoteProtocolError):
                await anext(messages)
            assert isinstance(client.error, RemoteProtocolError)
            await client.close()

    run(main())


def test_close_then_garbage_in_one_read_ends_the_server_connection_quietly() -> None:
    """A Close followed by an oversized packet in one read: the engine fails on the
    packet (FrameTooLarge) after delivering the Close.  The answer to a Close is our
    Close -- but the failed engine cannot send, and the ConnectionClosedError used to
    escape the server's connection task ('Unhandled exception in client_connected_cb').
    (Regression, found by the chaos soak's garbage clients.)"""

    async def main() -> None:
        unhandled: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: unhandled.append(context)
        )
        async with serve(TCP, Echo()) as server:
            host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
            reader, writer = await asyncio.open_connection(host, int(port))
            # Close, then a Message declaring 2^25 bytes (over the 16 MiB limit)
            writer.write(b"\x01" + b"\x04\xfb\x02\x00\x00\x00")
            async with asyncio.timeout(5):
                while await reader.read(65_536):
                    pass  # the server ends the connection
            writer.close()
            await eventually(lambda: not server.peers)
            await settle()
        assert not unhandled, unhandled

    run(main())


# --- concurrency, other transports ---------------------------------------------------------


def test_200_concurrent_requests_each_get_their_own_reply() -> None:
    async def main() -> None:
        async with pair(Echo()) as (server, client, _):
            replies = await asyncio.gather(*(client.request(b"r%d" % i) for i in range(200)))
            assert replies == [b"R%d" % i for i in range(200)]

    run(main())


def test_100_concurrent_streams_and_sinks_on_one_connection() -> None:
    async def main() -> None:
        handler = Echo()
        async with pair(handler) as (server, client, _):

            async def one_stream(n: int) -> list[bytes]:
                return [item async for item in await client.open_stream(b"%d" % n, credit=64)]

            async def one_sink(n: int) -> None:
                async with await client.open_sink(b"") as sink:
                    for i in range(n):
                        await sink.send(b"%d" % i)

            streams = await asyncio.gather(*(one_stream(n) for n in range(100)))
            assert streams == [[b"%d" % i for i in range(n)] for n in range(100)]
            await asyncio.gather(*(one_sink(10) for _ in range(100)))
            await eventually(lambda: len(handler.sunk) == 1000)

    run(main())


def test_every_pattern_over_memory_transport() -> None:
    async def main() -> None:
        async with pair(Echo(), url="memory://bpmux-patterns") as (server, client, accepted):
            await client.send_message(b"m")
            assert await anext(accepted.messages()) == b"m"
            assert await client.request(b"q") == b"Q"
            assert [i async for i in await client.open_stream(b"3")] == [b"0", b"1", b"2"]
            async with await client.open_duplex(b"") as duplex:
                await duplex.send(b"ab")
                assert await anext(duplex.items) == b"ba"

    run(main())


def test_every_pattern_over_websocket() -> None:
    async def main() -> None:
        handler = Echo()
        async with pair(handler, url="ws://127.0.0.1:0/bpmux") as (server, client, accepted):
            await client.send_message(b"m")
            assert await anext(accepted.messages()) == b"m"
            assert await client.request(b"q") == b"Q"
            assert len([i async for i in await client.open_stream(b"500", credit=300)]) == 500
            async with await client.open_sink(b"") as sink:
                await sink.send(b"s")
            await asyncio.wait_for(handler.sink_done.wait(), 5)

    run(main())
