"""The ``rsocket`` streaming source (runtime/spark/rsocket_source.py) and the live-source
machinery it shares with ``rsio`` (runtime/spark/live_source.py).

A real RSocket server runs in this process, in a background thread with its own loop,
publishing numbered msgpack items ``{"n": i}``.  Between the source and the server a
recording proxy decodes what the source sends (REQUEST_STREAM / REQUEST_N), so demand is
checked on the wire, at the server's door.  The driver-side reader is tested directly
(fast, deterministic: the test is the driver), then whole queries on the shared
SparkSession prove the same through Spark.

The helpers here (``BackgroundLoop``, ``RecordingProxy``, ``GrantLog``, ``Numbers``,
``run_query``, ``offsets_of``) are shared with tests/spark/test_spark_rsio_source.py.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import logging
import pickle
import socket
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgpack
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import wirestream.generated.rsocket.v1_0 as wire
from wirestream.runtime.rsocket import RSocketPayload, RSocketHandler, Router, serve
from wirestream.runtime.rsocket.errors import ApplicationError
from wirestream.runtime.rsocket.metadata import ROUTING, find_route, route
from wirestream.runtime.spark.background import BackgroundLoop
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.live_source import DataLossError, LiveRows, LiveSourceError
from wirestream.runtime.spark.payload import PayloadError
from wirestream.runtime.spark.rsocket_source import RSocketDataSource, RSocketStreamReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

T = TypeVar("T")

# ============================================================================ helpers


@pytest.fixture
def background() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop("test server loop")
    try:
        yield loop
    finally:
        loop.close()


class Numbers:
    """The publisher: ``{"n": i}`` for i = 0, 1, ... (msgpack), one sequence per
    subscription.  ``emitted`` counts items pulled from it over all subscriptions (it is
    pulled only when the subscriber's demand allows one more).  Pacing: ``allowed`` caps
    how many a subscription may produce until ``allow(n)`` raises it; ``burst``/``pause``
    make it pause ``pause`` seconds after every ``burst`` items (a publisher's own pace);
    ``count`` ends it; ``fail_after`` ends it with an error."""

    def __init__(self, *, count: int | None = None, allowed: int | None = None,
                 burst: int | None = None, pause: float = 0.0,
                 fail_after: int | None = None) -> None:  # fmt: skip
        self.count = count
        self.allowed = allowed
        self.burst = burst
        self.pause = pause
        self.fail_after = fail_after
        self.emitted = 0
        self.subscriptions = 0
        self._more: asyncio.Event | None = None

    def allow(self, background: BackgroundLoop, more: int) -> None:
        def grant() -> None:
            assert self.allowed is not None
            self.allowed += more
            if self._more is not None:
                self._more.set()

        background.call(grant)

    async def items(self) -> AsyncIterator[bytes]:
        self.subscriptions += 1
        self._more = asyncio.Event()
        for i in itertools.count():
            if self.count is not None and i >= self.count:
                return
            if self.fail_after is not None and i >= self.fail_after:
                raise ApplicationError(f"the publisher broke after {i} items")
            while self.allowed is not None and i >= self.allowed:
                self._more.clear()
                await self._more.wait()
            if self.burst and i and i % self.burst == 0:
                await asyncio.sleep(self.pause)  # the publisher's own pace, not a sync
            self.emitted += 1
            yield msgpack.packb({"n": i})


class NumbersHandler(RSocketHandler):
    """Serves ``Numbers`` on request-stream, and on request-channel after reading the
    requester's side; remembers each request and what came upstream."""

    def __init__(self, numbers: Numbers) -> None:
        self.numbers = numbers
        self.requests: list[RSocketPayload] = []
        self.upstream: list[list[bytes]] = []

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        self.requests.append(payload)
        return self.numbers.items()

    async def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[RSocketPayload]:
        self.requests.append(payload)
        self.upstream.append([item.data async for item in inbound])  # ends: COMPLETE came
        async for data in self.numbers.items():
            yield RSocketPayload(data, b"meta %d" % msgpack.unpackb(data)["n"])


class FrameDecoder(Protocol):
    def feed(self, data: bytes) -> list[Any]: ...


class RecordingProxy:
    """A TCP proxy in front of a server: what clients send is decoded (``decoder()``
    per connection) and each frame is handed to ``on_frame`` before the server gets it."""

    def __init__(self, target: str, decoder: Callable[[], FrameDecoder],
                 on_frame: Callable[[Any], None]) -> None:  # fmt: skip
        host, _, port = target.removeprefix("tcp://").rpartition(":")
        self.target = (host, int(port))
        self.decoder = decoder
        self.on_frame = on_frame
        self.connections = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"tcp://127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        decoder = self.decoder()

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                       decode: FrameDecoder | None) -> None:  # fmt: skip
            try:
                while data := await source.read(65536):
                    if decode is not None:
                        for frame in decode.feed(data):
                            self.on_frame(frame)
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                sink.close()

        try:
            await asyncio.gather(pipe(reader, up_writer, decoder), pipe(up_reader, writer, None))
        finally:
            self._tasks.discard(task)

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@dataclass
class GrantLog:
    """Demand as the server's door sees it: every grant (initial request-n or REQUEST_N)
    with the running total and how many items the publisher had produced by then."""

    numbers: Numbers
    grants: list[tuple[int, int, int]] = field(default_factory=list)  # (n, total, emitted)
    cancels: int = 0
    _total: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def grant(self, n: int) -> None:
        with self._changed:
            self._total += n
            self.grants.append((n, self._total, self.numbers.emitted))
            self._changed.notify_all()

    def cancelled(self) -> None:
        with self._changed:
            self.cancels += 1
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        with self._changed:
            assert self._changed.wait_for(condition, timeout), f"not reached: {self.grants}"

    def rsocket_frame(self, frame: Any) -> None:
        if isinstance(frame, (wire.RequestStream, wire.RequestChannel)):
            self.grant(frame.initial_request_n)
        elif isinstance(frame, wire.RequestN):
            self.grant(frame.request_n)
        elif isinstance(frame, wire.Cancel):
            self.cancelled()

    def assert_bounded_by(self, budget: int) -> None:
        """No grant above the budget, and after each grant the publisher owes at most a
        budget: granted - produced <= budget (produced >= what the source had received
        when it sent the grant, so this bounds the source's outstanding demand)."""
        assert self.grants, "no demand was granted"
        for n, total, emitted in self.grants:
            assert 0 < n <= budget, self.grants
            assert total - emitted <= budget, self.grants


@dataclass
class Server:
    url: str  # the proxy's: where the source connects
    numbers: Numbers
    handler: NumbersHandler
    log: GrantLog


@pytest.fixture
def make_server(background: BackgroundLoop) -> Iterator[Callable[..., Server]]:
    """An RSocket server publishing ``Numbers(**pacing)`` (optionally behind a router
    under route "numbers"), behind a recording proxy."""
    closers: list[Callable[[], Coroutine[Any, Any, None]]] = []

    def make(*, routed: bool = False, **pacing: Any) -> Server:
        numbers = Numbers(**pacing)
        handler = NumbersHandler(numbers)
        answer: RSocketHandler = handler
        if routed:
            router = Router()
            router.stream("numbers")(handler.request_stream)
            router.channel("numbers")(handler.request_channel)
            answer = router
        server = background.run(serve("tcp://127.0.0.1:0", answer))
        log = GrantLog(numbers)
        proxy = RecordingProxy(server.url, lambda: wire.StreamDecoder(1 << 24), log.rsocket_frame)
        url = background.run(proxy.start())

        async def close() -> None:
            await proxy.close()
            server.close()
            await server.wait_closed()

        closers.append(close)
        return Server(url, numbers, handler, log)

    yield make
    for close in closers:
        background.run(close())


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


SCHEMA = StructType(
    [
        StructField("seq", LongType()),
        StructField("received_at", TimestampType()),
        StructField("metadata", BinaryType()),
        StructField("payload", BinaryType()),
    ]
)


def schema_with(payload: Any) -> StructType:
    return StructType([*SCHEMA.fields[:3], StructField("payload", payload)])


@pytest.fixture
def make_reader() -> Iterator[Callable[..., RSocketStreamReader]]:
    """Driver-side readers, as Spark's driver process makes them; stopped at the end
    (and their loop threads must be gone)."""
    readers: list[RSocketStreamReader] = []

    def make(schema: StructType = SCHEMA, **options: str) -> RSocketStreamReader:
        reader = RSocketStreamReader(options, schema)
        readers.append(reader)
        return reader

    yield make
    for reader in readers:
        reader.stop()
    left = [t.name for t in threading.enumerate() if t.name.startswith("wirestream ")]
    assert not left, f"subscription threads left running: {left}"


def plan(reader: Any, start: int, limit: Any = None) -> tuple[int, list[dict[str, Any]]]:
    """One micro-batch as Spark's driver runs it: latestOffset, partitions, read (as an
    executor would), commit.  Returns the end seq and the rows."""
    end = reader.latestOffset({"seq": start}, limit or reader.getDefaultReadLimit())["seq"]
    rows: list[dict[str, Any]] = []
    for part in reader.partitions({"seq": start}, {"seq": end}):
        executor_copy = pickle.loads(pickle.dumps(reader))  # what executors get
        for batch in executor_copy.read(pickle.loads(pickle.dumps(part))):
            rows.extend(batch.to_pylist())
    reader.commit({"seq": end})
    return end, rows


def numbers_of(rows: list[dict[str, Any]]) -> list[int]:
    return [msgpack.unpackb(row["payload"])["n"] for row in rows]


# ============================================================ the driver-side reader


def test_demand_is_topped_up_to_the_budget_per_micro_batch(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader],
    background: BackgroundLoop,
) -> None:  # fmt: skip
    server = make_server(allowed=25)  # 25 items, then the publisher waits for allow()
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="10", maxWaitMs="100")
    ends, numbers = [], []
    start = 0
    for _ in range(3):
        start, rows = plan(reader, start)
        ends.append(start)
        numbers += numbers_of(rows)
    assert ends == [10, 20, 25]  # the third batch stopped waiting after maxWaitMs
    assert numbers == list(range(25))
    # Opening carries the first budget; each later batch requests what the previous one
    # took, so granted - planned is the budget again -- never more.
    server.log.wait_for(lambda: len(server.log.grants) == 3)
    assert [n for n, _, _ in server.log.grants] == [10, 10, 10]
    server.numbers.allow(background, 100)
    start, rows = plan(reader, start)
    server.log.wait_for(lambda: len(server.log.grants) == 4)
    assert [n for n, _, _ in server.log.grants] == [10, 10, 10, 5]
    assert start == 35 and numbers_of(rows) == list(range(25, 35))
    server.log.assert_bounded_by(10)
    assert server.numbers.emitted == 35  # it produced exactly what was asked for


def test_no_demand_is_granted_between_micro_batches_so_the_publisher_waits_for_spark(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server()  # unbounded and fast
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="50", maxWaitMs="2000")
    end, _ = plan(reader, 0)
    assert end == 50
    # However long Spark takes with the batch, the publisher is held at the batch's end:
    # only the next latestOffset grants more.
    server.log.wait_for(lambda: len(server.log.grants) == 1)
    assert server.numbers.emitted == 50
    end, rows = plan(reader, end)
    assert end == 100 and numbers_of(rows) == list(range(50, 100))
    assert server.numbers.emitted == 100


def test_items_are_numbered_from_the_checkpoint_and_stamped_on_arrival(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server(count=3)
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="3")
    end, rows = plan(reader, 1000)  # a restarted query continues the checkpoint's seq
    assert end == 1003
    assert [row["seq"] for row in rows] == [1000, 1001, 1002]
    assert numbers_of(rows) == [0, 1, 2]  # a new subscription: the publisher starts over
    assert all(row["received_at"].tzinfo is not None for row in rows)
    assert rows[0]["metadata"] is None
    assert server.handler.requests == [RSocketPayload(b"", None)]


def test_a_completed_stream_delivers_what_came_then_empty_batches(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    server = make_server(count=15)
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="10", maxWaitMs="100")
    end1, rows1 = plan(reader, 0)
    end2, rows2 = plan(reader, end1)
    with caplog.at_level(logging.WARNING):
        end3, rows3 = plan(reader, end2)
    assert (end1, end2, end3) == (10, 15, 15)
    assert numbers_of(rows1 + rows2) == list(range(15)) and rows3 == []
    assert "completed the stream" in caplog.text


def test_a_stream_error_comes_after_the_items_before_it_naming_the_uri(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server(fail_after=4)
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="10", maxWaitMs="2000")
    end, rows = plan(reader, 0)
    assert end == 4 and numbers_of(rows) == [0, 1, 2, 3]
    with pytest.raises(
        LiveSourceError, match=f"rsocket request-stream {server.url}: .*broke after 4"
    ):
        plan(reader, end)


def test_a_refused_connection_fails_the_first_batch_naming_the_uri(
    make_reader: Callable[..., RSocketStreamReader],
) -> None:
    uri = f"tcp://127.0.0.1:{closed_port()}"
    reader = make_reader(uri=uri)
    with pytest.raises(LiveSourceError, match=f"rsocket request-stream {uri}: cannot subscribe"):
        reader.latestOffset({"seq": 0}, reader.getDefaultReadLimit())


def test_a_route_and_request_data_reach_the_router(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server(routed=True, count=2)
    data = base64.b64encode(b"\x00\x01binary").decode()
    reader = make_reader(uri=server.url, route="numbers", dataBase64=data, maxWaitMs="2000",
                         maxRecordsPerTrigger="2")  # fmt: skip
    end, rows = plan(reader, 0)
    assert numbers_of(rows) == [0, 1]
    (request,) = server.handler.requests
    assert request.data == b"\x00\x01binary"
    assert request.metadata is not None and find_route(request.metadata) == "numbers"


def test_a_channel_sends_the_request_once_completes_its_side_and_reads_the_responder(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server(routed=True, count=3)
    reader = make_reader(uri=server.url, interaction="channel", route="numbers", data="hello",
                         maxRecordsPerTrigger="5", maxWaitMs="2000")  # fmt: skip
    end, rows = plan(reader, 0)
    assert numbers_of(rows) == [0, 1, 2]
    assert [row["metadata"] for row in rows] == [b"meta 0", b"meta 1", b"meta 2"]
    assert server.handler.requests[0].data == b"hello"
    assert server.handler.upstream == [[]]  # nothing after the request; COMPLETE at once


def test_read_all_available_still_reads_one_budget() -> None:
    # Trigger.Once / AvailableNow: a live stream has no "all", demand stays finite.
    reader = RSocketStreamReader({"uri": "tcp://127.0.0.1:1", "maxRecordsPerTrigger": "7"},
                                 SCHEMA)  # fmt: skip
    assert reader.getDefaultReadLimit() == ReadMaxRows(7)
    calls: list[int] = []

    class Taken:
        def take(self, budget: int, max_wait: float) -> list[Any]:
            calls.append(budget)
            return []

    reader._subscription = Taken()  # type: ignore[assignment]
    reader.latestOffset({"seq": 0}, ReadAllAvailable())
    reader.latestOffset({"seq": 0}, ReadMaxRows(3))
    assert calls == [7, 3]


def test_stop_cancels_the_stream_and_closes_the_connection(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server()
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="5")
    plan(reader, 0)
    reader.stop()
    server.log.wait_for(lambda: server.log.cancels == 1)


# ------------------------------------------------------------------ restarts, data loss


def test_fail_on_data_loss_names_the_range_a_previous_run_held(
    make_reader: Callable[..., RSocketStreamReader],
) -> None:
    reader = make_reader(uri="tcp://127.0.0.1:1")
    with pytest.raises(DataLossError, match=r"items seq 100\.\.139 \(40 items\) are lost.*"
                                            "failOnDataLoss to false"):  # fmt: skip
        reader.partitions({"seq": 100}, {"seq": 140})


def test_without_fail_on_data_loss_the_lost_batch_is_empty_and_seq_continues(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    server = make_server(count=5)
    reader = make_reader(uri=server.url, failOnDataLoss="false", maxRecordsPerTrigger="5",
                         maxWaitMs="2000")  # fmt: skip
    with caplog.at_level(logging.WARNING):
        assert reader.partitions({"seq": 100}, {"seq": 140}) == []
    assert "items seq 100..139 (40 items) are lost" in caplog.text
    reader.commit({"seq": 140})
    end, rows = plan(reader, 140)
    assert end == 145 and [row["seq"] for row in rows] == [140, 141, 142, 143, 144]


def test_a_batch_is_held_until_spark_commits_it(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server()
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="4", maxWaitMs="2000")
    first = reader.latestOffset({"seq": 0}, ReadMaxRows(4))
    second = reader.latestOffset(first, ReadMaxRows(4))  # Spark plans before it commits
    assert (first, second) == ({"seq": 4}, {"seq": 8})
    assert [p.first_seq for p in reader.partitions({"seq": 0}, first)] == [0]  # type: ignore[attr-defined]
    reader.commit(first)
    (part,) = reader.partitions(first, second)
    assert isinstance(part, LiveRows) and (part.first_seq, part.end_seq) == (4, 8)
    with pytest.raises(DataLossError, match=r"seq 0\.\.3 "):
        reader.partitions({"seq": 0}, first)  # committed: gone


def test_the_reader_pickles_without_its_subscription(
    make_server: Callable[..., Server], make_reader: Callable[..., RSocketStreamReader]
) -> None:
    server = make_server()
    reader = make_reader(uri=server.url, maxRecordsPerTrigger="3")
    plan(reader, 0)
    copy = pickle.loads(pickle.dumps(reader))
    assert copy._subscription is None and copy._held == [] and copy.request == reader.request


# ------------------------------------------------------------------ payload formats


def rows_of(reader: RSocketStreamReader, payloads: list[bytes]) -> list[dict[str, Any]]:
    part = LiveRows(7, [0] * len(payloads), [None] * len(payloads), payloads)
    return [row for batch in reader.read(part) for row in batch.to_pylist()]


@pytest.mark.parametrize(
    "options, payload_type, raw, value",
    [
        ({}, BinaryType(), b"\xff\x00", b"\xff\x00"),
        ({"payloadFormat": "utf8"}, StringType(), "grüß".encode(), "grüß"),
        (
            {"payloadFormat": "json", "payloadSchema": "n long, s string"},
            StructType([StructField("n", LongType()), StructField("s", StringType())]),
            json.dumps({"n": 5, "s": "x", "extra": 1}).encode(),
            {"n": 5, "s": "x"},
        ),
        (
            {"payloadFormat": "msgpack", "payloadSchema": "n long"},
            StructType([StructField("n", LongType())]),
            msgpack.packb({"n": 9}),
            {"n": 9},
        ),
    ],
)
def test_payload_formats_decode_on_the_executor(
    options: dict[str, str], payload_type: Any, raw: bytes, value: Any
) -> None:
    reader = RSocketStreamReader({"uri": "tcp://127.0.0.1:1", **options}, schema_with(payload_type))
    (row,) = rows_of(reader, [raw])
    assert row["seq"] == 7 and row["payload"] == value


def test_a_bad_payload_fails_naming_its_seq_or_is_null_when_asked() -> None:
    options = {"uri": "tcp://127.0.0.1:1", "payloadFormat": "msgpack", "payloadSchema": "n long"}
    schema = schema_with(StructType([StructField("n", LongType())]))
    with pytest.raises(PayloadError, match="rsocket: payload at seq 8 is not msgpack"):
        rows_of(RSocketStreamReader(options, schema), [msgpack.packb({"n": 1}), b"\xc1"])
    lenient = RSocketStreamReader({**options, "onBadPayload": "null"}, schema)
    assert [row["payload"] for row in rows_of(lenient, [msgpack.packb({"n": 1}), b"\xc1"])] == [
        {"n": 1},
        None,
    ]


# ------------------------------------------------------------------ options


def ddl(**options: str) -> str:
    return RSocketDataSource(options).schema()


def test_the_schema_has_seq_arrival_metadata_and_the_payload_type() -> None:
    assert ddl(uri="tcp://h:1") == (
        "seq long, received_at timestamp, metadata binary, payload binary"
    )
    assert ddl(uri="ws://h:1/rs", payloadFormat="msgpack", payloadSchema="n long").endswith(
        "payload struct<n long>"
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"uri": None}, "option 'uri' is required"),
        ({"uri": "http://h:1"}, "option uri: .*unknown transport scheme 'http'"),
        ({"uri": "tcp://h"}, "option uri: .*needs host:port"),
        ({"uri": "memory://x"}, "memory:// reaches only its own process"),
        ({"interaction": "fire"}, "interaction='fire' is not one of stream, channel"),
        ({"data": "a", "dataBase64": "YQ=="}, "give option data or dataBase64, not both"),
        ({"dataBase64": "not base64!"}, "dataBase64='not base64!' is not base64"),
        ({"route": "x" * 256}, "option route='x+': routing tag"),
        ({"route": "r", "metadataMimeType": "application/json"}, "route needs metadataMimeType"),
        ({"dataMimeType": "text/é"}, "dataMimeType='text/é' is not a MIME type"),
        ({"maxRecordsPerTrigger": "0"}, "maxRecordsPerTrigger=0 is below 1"),
        ({"maxRecordsPerTrigger": str(1 << 31)}, "maxRecordsPerTrigger=2147483648 is above"),
        ({"maxWaitMs": "soon"}, "maxWaitMs='soon' is not an integer"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss='maybe' is not true or false"),
        ({"maxRecordsPerTriger": "5"}, "unknown option 'maxrecordspertriger'"),
        ({"payloadFormat": "msgpack"}, "payloadFormat=msgpack needs option payloadSchema"),
    ],
)
def test_bad_options_are_refused_naming_the_option(
    options: dict[str, str | None], message: str
) -> None:
    given = {"uri": "tcp://127.0.0.1:7878", **options}
    with pytest.raises(SparkOptionError, match="rsocket: .*" + message):
        ddl(**{name: value for name, value in given.items() if value is not None})


def test_routing_metadata_alone_when_the_metadata_mime_type_is_routing() -> None:
    reader = RSocketStreamReader(
        {"uri": "tcp://h:1", "route": "numbers", "metadataMimeType": ROUTING}, SCHEMA
    )
    assert reader.request.metadata == b"\x07numbers"
    composite = RSocketStreamReader({"uri": "tcp://h:1", "route": "numbers"}, SCHEMA)
    assert composite.request.metadata == route("numbers")


def test_a_schema_given_by_the_user_must_have_the_columns() -> None:
    source = RSocketDataSource({"uri": "tcp://h:1"})
    with pytest.raises(SparkOptionError, match="the schema must have the columns seq, "):
        source.streamReader(StructType([StructField("seq", LongType())]))


# ============================================================================ on Spark


@dataclass
class Batch:
    batch_id: int
    rows: list[Row]
    emitted: int  # what the publisher had produced when the batch reached the sink


def run_query(
    spark: SparkSession,
    source: str,
    options: dict[str, str],
    *,
    until: Callable[[list[Batch]], bool],
    checkpoint: Path,
    numbers: Numbers | None = None,
    timeout: float = 120.0,
) -> list[Batch]:
    """Run a streaming query from ``source`` into a collecting foreachBatch until
    ``until(batches)`` holds, then stop it.  Raises the query's error if it fails."""
    batches: list[Batch] = []
    enough = threading.Event()

    def collect(frame: DataFrame, batch_id: int) -> None:
        rows = frame.collect()
        batches.append(Batch(batch_id, rows, numbers.emitted if numbers else 0))
        if until(batches):
            enough.set()

    stream = spark.readStream.format(source).options(**options).load()
    query = (
        stream.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        while not enough.wait(0.2):
            if not query.isActive:
                break
            assert timeout > 0, "the query did not deliver in time"
            timeout -= 0.2
    finally:
        query.stop()
    error = query.exception()
    if error is not None:
        raise error
    return batches


def offsets_of(checkpoint: Path) -> dict[int, int]:
    """batch id -> the end seq Spark wrote in the offset log."""
    ends = {}
    for path in (checkpoint / "offsets").iterdir():
        if path.name.isdigit():
            ends[int(path.name)] = json.loads(path.read_text().splitlines()[-1])["seq"]
    return ends


def total_rows(batches: list[Batch]) -> int:
    return sum(len(batch.rows) for batch in batches)


@pytest.mark.spark
def test_spark_query_gets_each_item_once_in_order_with_demand_per_micro_batch(
    spark: SparkSession, make_server: Callable[..., Server], tmp_path: Path
) -> None:
    budget = 40
    # Bursts of 60, then 0.6 s of silence: some batches fill, some end at maxWaitMs.
    server = make_server(burst=60, pause=0.6)
    batches = run_query(
        spark,
        "rsocket",
        {"uri": server.url, "maxRecordsPerTrigger": str(budget), "maxWaitMs": "300",
         "payloadFormat": "msgpack", "payloadSchema": "n long"},  # fmt: skip
        until=lambda done: total_rows(done) >= 150,
        checkpoint=tmp_path / "checkpoint",
        numbers=server.numbers,
    )
    assert_paced_by_budget(batches, budget)
    server.log.assert_bounded_by(budget)
    assert server.log.grants[0][0] == budget  # REQUEST_STREAM carries the first budget
    assert server.numbers.subscriptions == 1 and server.log.grants  # one subscription


@pytest.mark.spark
def test_spark_prefetch_grants_the_next_budget_while_a_batch_runs_and_stays_within_two(
    spark: SparkSession, make_server: Callable[..., Server], tmp_path: Path
) -> None:
    budget = 40
    server = make_server()  # as fast as demand allows
    batches = run_query(
        spark,
        "rsocket",
        {"uri": server.url, "maxRecordsPerTrigger": str(budget), "maxWaitMs": "2000",
         "prefetch": "true", "payloadFormat": "msgpack", "payloadSchema": "n long"},  # fmt: skip
        until=lambda done: total_rows(done) >= 200,
        checkpoint=tmp_path / "checkpoint",
        numbers=server.numbers,
    )
    rows = [row for batch in batches for row in batch.rows]
    assert [row.seq for row in rows] == list(range(len(rows)))  # once each, in order
    assert [row.payload.n for row in rows] == list(range(len(rows)))
    end, ahead = 0, []
    for batch in batches:
        end += len(batch.rows)
        ahead.append(batch.emitted - end)
        # Granted but not planned is at most a budget, so at most one budget beyond
        # the running batch's end: two beyond what Spark had finished before it.
        assert batch.emitted - end <= budget, (batch, end)
    # The overlap itself: while full batches ran, the publisher produced the next one
    # (without prefetch a full batch leaves no demand: emitted - end <= 0).
    full = [a for a, batch in zip(ahead, batches) if len(batch.rows) == budget]
    assert full and max(full) > 0, ahead
    server.log.assert_bounded_by(budget)


@pytest.mark.spark
def test_spark_query_reads_a_channel_with_route_metadata_and_utf8(
    spark: SparkSession, make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server(routed=True, count=30)
    batches = run_query(
        spark,
        "rsocket",
        {"uri": server.url, "interaction": "channel", "route": "numbers", "data": "hello",
         "maxRecordsPerTrigger": "10", "maxWaitMs": "1000"},  # fmt: skip
        until=lambda done: total_rows(done) >= 30,
        checkpoint=tmp_path / "checkpoint",
    )
    rows = [row for batch in batches for row in batch.rows]
    assert [bytes(row.metadata) for row in rows] == [b"meta %d" % i for i in range(30)]
    assert [msgpack.unpackb(row.payload)["n"] for row in rows] == list(range(30))
    assert server.handler.requests[0].data == b"hello" and server.handler.upstream == [[]]


def assert_restart_semantics(
    spark: SparkSession, source: str, options: dict[str, str], numbers: Numbers, checkpoint: Path
) -> None:
    """Run, crash after planning a batch, restart: failOnDataLoss (default) fails naming
    the lost range; false runs that batch empty and numbering continues."""
    from pyspark.errors import StreamingQueryException

    first = run_query(spark, source, options, until=lambda done: len(done) >= 2,
                      checkpoint=checkpoint)  # fmt: skip
    seqs = [row.seq for batch in first for row in batch.rows]
    assert seqs == list(range(len(seqs)))
    # A crash after Spark planned its last batch and before it committed it: the batch's
    # items lived only in the stopped driver.
    ends = offsets_of(checkpoint)
    last = max(ends)
    for name in (str(last), f".{last}.crc"):  # the commit and Hadoop's checksum of it
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    start = ends.get(last - 1, 0)

    with pytest.raises(StreamingQueryException) as failed:
        run_query(spark, source, options, until=lambda done: False, checkpoint=checkpoint)
    assert f"items seq {start}..{ends[last] - 1} " in str(failed.value)
    assert "failOnDataLoss" in str(failed.value)

    lenient = {**options, "failOnDataLoss": "false"}
    after = run_query(spark, source, lenient, until=lambda done: total_rows(done) >= 20,
                      checkpoint=checkpoint)  # fmt: skip
    assert after[0].batch_id == last and after[0].rows == []  # the lost batch, run empty
    seqs = [row.seq for batch in after for row in batch.rows]
    assert seqs == list(range(ends[last], ends[last] + len(seqs)))  # numbering continues
    assert numbers.subscriptions == 2  # the failed run never got to subscribe


@pytest.mark.spark
def test_spark_restart_fails_on_lost_items_unless_fail_on_data_loss_is_false(
    spark: SparkSession, make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    options = {"uri": server.url, "maxRecordsPerTrigger": "20", "maxWaitMs": "1000"}
    assert_restart_semantics(spark, "rsocket", options, server.numbers, tmp_path / "checkpoint")


@pytest.mark.spark
def test_spark_query_fails_at_start_naming_a_uri_that_refuses(
    spark: SparkSession, tmp_path: Path
) -> None:
    from pyspark.errors import StreamingQueryException

    uri = f"tcp://127.0.0.1:{closed_port()}"
    with pytest.raises(StreamingQueryException, match=f"rsocket request-stream {uri}: cannot"):
        run_query(spark, "rsocket", {"uri": uri}, until=lambda done: False,
                  checkpoint=tmp_path / "checkpoint")  # fmt: skip


@pytest.mark.spark
def test_spark_load_refuses_bad_options_with_the_message(spark: SparkSession) -> None:
    from pyspark.errors import AnalysisException

    reader = spark.readStream.format("rsocket")
    with pytest.raises(AnalysisException, match="rsocket: option 'uri' is required"):
        reader.load()
    with pytest.raises(AnalysisException, match="interaction='fire' is not one of"):
        reader.option("uri", "tcp://h:1").option("interaction", "fire").load()


def assert_paced_by_budget(batches: Sequence[Any], budget: int) -> None:
    """Each item once, in order, numbered from 0; full and short batches both happened;
    and while Spark ran a batch the publisher could not produce beyond its demand: at
    most what the batch left of the budget."""
    rows = [row for batch in batches for row in batch.rows]
    assert [row.seq for row in rows] == list(range(len(rows)))  # once each, in order
    assert [row.payload.n for row in rows] == list(range(len(rows)))
    sizes = [len(batch.rows) for batch in batches]
    assert max(sizes) == budget and min(sizes) < budget, sizes  # both kinds happened
    end = 0
    for batch in batches:
        end += len(batch.rows)
        assert batch.emitted - end <= budget - len(batch.rows), (batch, end)


def test_a_live_batch_is_split_over_the_cores_in_pieces_of_10000_to_100000_items() -> None:
    from wirestream.runtime.spark.live_source import split_count

    cores = os.cpu_count() or 1
    assert split_count(1) == split_count(9_999) == 1  # small batches: one task
    assert split_count(200_000) == max(2, min(cores, 20))
    assert split_count(1_000_000) == max(10, min(cores, 100))  # 100,000 at most a piece
    assert split_count(10_000 * cores) == cores
