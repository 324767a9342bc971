"""The ``wirestream`` Spark source reading pcap / pcapng files: the pcap round trip.

A real RSocket session with the demo responder, tapped on both sides into one capture,
goes to pcapng (``wirestream.runtime.capture.pcap``) and Spark reads the pcapng into the
same frame log as the capture -- every column of every row, on the Arrow and the row
path.  Then a pcap of real traffic taken by dumpcap (the way tcpdump is used in
production: no wirestream involved in the capture) gives the frame log of the tap's
records but for times and connection ids.  All on the shared local[2] session; about
10 s in all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.aio_support import run
from tests.capture.test_pcap import Dumpcap, free_port, rsocket_session
from wirestream.apps.demo_responder import EchoResponder
from wirestream.runtime.capture import CaptureWriter, capture_files
from wirestream.runtime.capture.pcap import write_pcapng
from wirestream.runtime.rsocket import connect, serve
from wirestream.runtime.spark.errors import SparkOptionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def frame_log(spark: SparkSession, path: Path | str, **options: str) -> list[Any]:
    reader = spark.read.format("wirestream")
    for key, value in options.items():
        reader = reader.option(key, value)
    rows = reader.load(str(path)).collect()
    return sorted(rows, key=lambda row: (row.connection_id, row.capture_time, repr(row)))


@pytest.fixture(scope="module")
def session_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real RSocket session tapped on both sides (two connections of one capture: the
    client's and the server's view), and its pcapng."""
    folder = tmp_path_factory.mktemp("pcap-round-trip")

    async def session() -> None:
        with CaptureWriter(folder / "s.wscap", "rsocket/1.0") as capture:
            async with await serve("tcp://127.0.0.1:0", EchoResponder(), capture=capture) as server:
                async with connect(server.url, capture=capture) as rs:
                    assert (await rs.request_response(b"ping")).data == b"ping"
                    items = [p.data async for p in rs.request_stream(b"50", limit_rate=7)]
                    assert len(items) == 50
                    big = bytes(range(256)) * 1000  # 256 KB: many TCP segments
                    assert (await rs.request_response(big)).data == big
                    await rs.fire_and_forget(b"bye")

    run(session())
    (capture,) = capture_files(folder / "s.wscap")
    write_pcapng(capture, folder / "s.pcapng")
    return capture, folder / "s.pcapng"


@pytest.mark.parametrize("arrow", ["true", "false"])
def test_a_capture_and_its_pcapng_give_the_same_frame_log(
    spark: SparkSession, session_capture: tuple[Path, Path], arrow: str
) -> None:
    capture, pcapng = session_capture
    expected = frame_log(spark, capture, arrow=arrow)
    got = frame_log(spark, pcapng, arrow=arrow)  # protocol and port: from the file
    assert len(expected) > 60 and len({row.connection_id for row in expected}) == 2
    assert got == expected


def test_a_pcap_of_real_traffic_gives_the_taps_frame_log_but_for_times_and_ids(
    spark: SparkSession, tmp_path: Path
) -> None:
    port = free_port()
    with Dumpcap(tmp_path / "prod.pcap", port, "lo", "pcap"):
        rsocket_session(tmp_path, port)
    (tapped,) = capture_files(tmp_path / "tap.wscap")

    def comparable(rows: list[Any], direction: str) -> list[Any]:
        """The rows of one direction in file order, without time and id.  (Across
        directions the order may differ: the tap saw the frames in the client, the
        kernel in between.)"""
        blank = {"capture_time": None, "connection_id": None}
        return [row.asDict(recursive=True) | blank for row in rows if row.direction == direction]

    def in_file_order(path: Path, **options: str) -> list[Any]:
        reader = spark.read.format("wirestream").option("minPartitions", "1")
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(str(path)).collect()  # one partition: file order

    got = in_file_order(tmp_path / "prod.pcap", protocol="rsocket/1.0", serverPort=str(port))
    expected = in_file_order(tapped)
    for direction in ("in", "out"):
        assert comparable(got, direction) == comparable(expected, direction)
    assert {row.connection_id for row in got} == {1}


def test_a_pcap_without_a_protocol_is_refused_at_load(spark: SparkSession, tmp_path: Path) -> None:
    from tests.support.pcap_support import write_pcap

    write_pcap(tmp_path / "t.pcap", [], 1)
    with pytest.raises(Exception, match="does not say which protocol") as info:
        spark.read.format("wirestream").load(str(tmp_path / "t.pcap"))
    del info


def test_a_pcapng_of_another_protocol_than_the_option_is_refused(
    session_capture: tuple[Path, Path],
) -> None:
    from wirestream.runtime.spark.capture_source import make_plan

    _, pcapng = session_capture
    with pytest.raises(SparkOptionError, match="holds rsocket/1.0, but option protocol="):
        make_plan({"path": str(pcapng), "protocol": "bpmux/rel"})
    plan = make_plan({"path": str(pcapng)})
    assert plan.protocol == "rsocket/1.0" and plan.files[0][2:] == ("pcap", 7878)
