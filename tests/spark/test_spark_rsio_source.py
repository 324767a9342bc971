"""The ``rsio`` streaming source (runtime/spark/rsio_source.py): a Reactive Streams
subscription with demand per micro-batch.

A real rsio server runs in this process (background thread, own loop) publishing numbered
msgpack elements ``{"n": i}``; a recording proxy decodes what the source sends (subscribe
with its initialDemand, request(n), cancel).  The machinery shared with ``rsocket``
(runtime/spark/live_source.py) is tested in depth in tests/spark/test_spark_rsocket_source.py;
here: the rsio wiring, both encodings, and the same guarantees through Spark.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack
import pytest
from pyspark.sql.types import BinaryType, LongType, StructField, StructType, TimestampType

import wirestream.generated.rsio.v0 as wire
from wirestream.runtime import rsio
from wirestream.runtime.rsio.framing import make_decoder
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.live_source import DataLossError, LiveSourceError
from wirestream.runtime.spark.rsio_source import RsioDataSource, RsioStreamReader
from tests.spark.test_spark_rsocket_source import (
    assert_paced_by_budget,
    BackgroundLoop,
    GrantLog,
    Numbers,
    RecordingProxy,
    assert_restart_semantics,
    closed_port,
    numbers_of,
    plan,
    run_query,
    total_rows,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = StructType(
    [
        StructField("seq", LongType()),
        StructField("received_at", TimestampType()),
        StructField("payload", BinaryType()),
    ]
)


@pytest.fixture
def background() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop("test server loop")
    try:
        yield loop
    finally:
        loop.close()


class RsioGrantLog(GrantLog):
    def rsio_frame(self, frame: Any) -> None:
        if isinstance(frame, wire.Subscribe):
            self.grant(frame.initial_demand)
        elif isinstance(frame, wire.Request):
            self.grant(frame.demand)
        elif isinstance(frame, wire.Cancel):
            self.cancelled()


@dataclass
class Server:
    url: str  # the proxy's: where the source connects
    numbers: Numbers
    log: RsioGrantLog
    args: list[str] = field(default_factory=list)


@pytest.fixture
def make_server(background: BackgroundLoop) -> Iterator[Callable[..., Server]]:
    """An rsio server publishing ``Numbers(**pacing)`` as "numbers", behind a recording
    proxy that decodes the client's messages in ``encoding``."""
    closers: list[Callable[[], Coroutine[Any, Any, None]]] = []

    def make(*, encoding: rsio.Encoding = "binary", **pacing: Any) -> Server:
        numbers = Numbers(**pacing)
        log = RsioGrantLog(numbers)
        made = Server("", numbers, log)

        def publish(args: str) -> AsyncIterator[bytes]:
            made.args.append(args)
            return numbers.items()

        server = background.run(
            rsio.serve("tcp://127.0.0.1:0", publishers={"numbers": publish}, encoding=encoding)
        )
        proxy = RecordingProxy(
            server.url, lambda: make_decoder(encoding, wire.Context(), 1 << 24), log.rsio_frame
        )
        made.url = background.run(proxy.start())

        async def close() -> None:
            await proxy.close()
            await server.close()

        closers.append(close)
        return made

    yield make
    for close in closers:
        background.run(close())


@pytest.fixture
def make_reader() -> Iterator[Callable[..., RsioStreamReader]]:
    readers: list[RsioStreamReader] = []

    def make(**options: str) -> RsioStreamReader:
        reader = RsioStreamReader({"publisher": "numbers", **options}, SCHEMA)
        readers.append(reader)
        return reader

    yield make
    for reader in readers:
        reader.stop()
    left = [t.name for t in threading.enumerate() if t.name.startswith("wirestream ")]
    assert not left, f"subscription threads left running: {left}"


# ============================================================ the driver-side reader


@pytest.mark.parametrize("encoding", ["binary", "msgpack"])
def test_demand_is_topped_up_to_the_budget_per_micro_batch(
    encoding: rsio.Encoding, make_server: Callable[..., Server],
    make_reader: Callable[..., RsioStreamReader], background: BackgroundLoop,
) -> None:  # fmt: skip
    server = make_server(encoding=encoding, allowed=25)
    reader = make_reader(uri=server.url, encoding=encoding, maxRecordsPerTrigger="10",
                         maxWaitMs="100")  # fmt: skip
    start, numbers = 0, []
    for expected_end in (10, 20, 25):  # the third batch stops waiting after maxWaitMs
        start, rows = plan(reader, start)
        assert start == expected_end
        numbers += numbers_of(rows)
    assert numbers == list(range(25))
    server.numbers.allow(background, 100)
    start, rows = plan(reader, start)
    assert start == 35 and numbers_of(rows) == list(range(25, 35))
    server.log.wait_for(lambda: len(server.log.grants) == 4)
    # subscribe carries the first budget as initialDemand; then what each batch took
    assert [n for n, _, _ in server.log.grants] == [10, 10, 10, 5]
    server.log.assert_bounded_by(10)
    assert server.numbers.emitted == 35


def test_args_reach_the_publisher_and_stop_cancels(
    make_server: Callable[..., Server], make_reader: Callable[..., RsioStreamReader]
) -> None:
    server = make_server()
    reader = make_reader(uri=server.url, args="from=now", maxRecordsPerTrigger="3")
    end, rows = plan(reader, 0)
    assert end == 3 and numbers_of(rows) == [0, 1, 2] and server.args == ["from=now"]
    reader.stop()
    server.log.wait_for(lambda: server.log.cancels == 1)


def test_an_unknown_publisher_fails_naming_the_uri_and_the_publisher(
    make_server: Callable[..., Server], make_reader: Callable[..., RsioStreamReader]
) -> None:
    server = make_server()
    reader = make_reader(uri=server.url, publisher="nope", maxWaitMs="2000")
    with pytest.raises(
        LiveSourceError, match=f"rsio {server.url} publisher 'nope': .*no publisher named 'nope'"
    ):
        plan(reader, 0)


def test_a_refused_connection_fails_the_first_batch_naming_the_uri(
    make_reader: Callable[..., RsioStreamReader],
) -> None:
    uri = f"tcp://127.0.0.1:{closed_port()}"
    reader = make_reader(uri=uri)
    with pytest.raises(LiveSourceError, match=f"rsio {uri} publisher 'numbers': cannot subscribe"):
        plan(reader, 0)


def test_fail_on_data_loss_names_the_subscription_and_the_range(
    make_reader: Callable[..., RsioStreamReader],
) -> None:
    reader = make_reader(uri="tcp://127.0.0.1:1")
    with pytest.raises(DataLossError, match=r"rsio tcp://127.0.0.1:1 publisher 'numbers': "
                                            r"items seq 5\.\.9 \(5 items\) are lost"):  # fmt: skip
        reader.partitions({"seq": 5}, {"seq": 10})


def test_the_schema_has_seq_arrival_and_the_payload_type() -> None:
    source = RsioDataSource({"uri": "tcp://h:1", "publisher": "p", "payloadFormat": "utf8"})
    assert source.schema() == "seq long, received_at timestamp, payload string"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"publisher": None}, "option 'publisher' is required"),
        ({"publisher": "a?b"}, "option publisher='a\\?b' must be a non-empty name without '\\?'"),
        ({"publisher": ""}, "option publisher='' must be a non-empty name"),
        ({"encoding": "json"}, "encoding='json' is not one of binary, msgpack"),
        ({"uri": "memory://x"}, "memory:// reaches only its own process"),
        ({"maxWaitMs": "-1"}, "maxWaitMs=-1 is below 0"),
        ({"route": "x"}, "unknown option 'route'"),
    ],
)
def test_bad_options_are_refused_naming_the_option(
    options: dict[str, str | None], message: str
) -> None:
    given = {"uri": "tcp://127.0.0.1:7878", "publisher": "numbers", **options}
    source = RsioDataSource({name: value for name, value in given.items() if value is not None})
    with pytest.raises(SparkOptionError, match="rsio: .*" + message):
        source.schema()


# ============================================================================ on Spark


@pytest.mark.spark
def test_spark_query_gets_each_element_once_in_order_with_demand_per_micro_batch(
    spark: SparkSession, make_server: Callable[..., Server], tmp_path: Path
) -> None:
    budget = 40
    server = make_server(encoding="msgpack", burst=60, pause=0.6)
    batches = run_query(
        spark,
        "rsio",
        {"uri": server.url, "publisher": "numbers", "encoding": "msgpack",
         "maxRecordsPerTrigger": str(budget), "maxWaitMs": "300",
         "payloadFormat": "msgpack", "payloadSchema": "n long"},  # fmt: skip
        until=lambda done: total_rows(done) >= 150,
        checkpoint=tmp_path / "checkpoint",
        numbers=server.numbers,
    )
    assert_paced_by_budget(batches, budget)
    server.log.assert_bounded_by(budget)
    assert server.log.grants[0][0] == budget  # subscribe's initialDemand
    assert server.numbers.subscriptions == 1


@pytest.mark.spark
def test_spark_restart_fails_on_lost_items_unless_fail_on_data_loss_is_false(
    spark: SparkSession, make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    options = {"uri": server.url, "publisher": "numbers", "maxRecordsPerTrigger": "20",
               "maxWaitMs": "1000"}  # fmt: skip
    assert_restart_semantics(spark, "rsio", options, server.numbers, tmp_path / "checkpoint")


@pytest.mark.spark
def test_spark_query_fails_at_start_naming_a_uri_that_refuses(
    spark: SparkSession, tmp_path: Path
) -> None:
    from pyspark.errors import StreamingQueryException

    uri = f"tcp://127.0.0.1:{closed_port()}"
    with pytest.raises(StreamingQueryException, match=f"rsio {uri} publisher 'numbers': cannot"):
        run_query(spark, "rsio", {"uri": uri, "publisher": "numbers"}, until=lambda done: False,
                  checkpoint=tmp_path / "checkpoint")  # fmt: skip


@pytest.mark.spark
def test_spark_load_refuses_bad_options_with_the_message(spark: SparkSession) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="rsio: option 'publisher' is required"):
        spark.readStream.format("rsio").option("uri", "tcp://h:1").load()
