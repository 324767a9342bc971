"""``wirestream capture decode|stats|to-pcap`` on a real RSocket session's capture, its
pcapng, a RabbitMQ capture (whose frames decode only with their sender), and broken
input.  About 3 s (one real session, one console-script process)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import wirestream.generated.rabbitmq_stream.v1 as rabbitmq_codec
from tests.support.aio_support import run
from tests.support.pcap_support import Flow, frames_stream, write_pcap
from wirestream.apps.capture_cli import frame_fields, frame_type_name
from wirestream.generated.postgresql import v3 as pg
from wirestream.generated.postgresql.v3 import spark as pg_spark
from wirestream.generated.rabbitmq_stream import draft
from wirestream.generated.rabbitmq_stream.draft import spark as draft_spark
from wirestream.apps.cli import main
from wirestream.apps.demo_responder import EchoResponder
from wirestream.runtime.capture import CaptureWriter, capture_files, get_protocol, iter_records
from wirestream.runtime.rsocket import connect, serve

T0 = 1_700_000_000_000_000_000


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real RSocket session with the demo responder, tapped on both sides (the
    CaptureWriter's path: the rotated files are ``s.NNNNNN.wscap``)."""
    folder = tmp_path_factory.mktemp("cli-session")

    async def main_() -> None:
        with CaptureWriter(folder / "s.wscap", "rsocket/1.0") as capture:
            async with await serve("tcp://127.0.0.1:0", EchoResponder(), capture=capture) as server:
                async with connect(server.url, capture=capture) as rs:
                    assert (await rs.request_response(b"ping")).data == b"ping"
                    assert len([p async for p in rs.request_stream(b"12", limit_rate=5)]) == 12
                    await rs.request_response(bytes(range(256)) * 10)

    run(main_())
    return folder / "s.wscap"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["capture", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def records_of(path: Path) -> list[Any]:
    return [r for file in capture_files(path) for r in iter_records(file)]


def test_decode_prints_one_text_line_per_frame_with_its_type_and_fields(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "decode", str(session))
    assert code == 0 and err == ""
    lines = out.splitlines()
    records = records_of(session)
    assert len(lines) == len(records)
    decoder = get_protocol("rsocket/1.0").record_decoder()
    for line, record in zip(lines, records):
        frame = decoder.decode(record.frame)
        stamp, connection, sender, kind, *_ = line.split(" ")
        assert (int(connection, 16), sender, kind) == (
            record.connection_id,
            record.sender,
            frame_type_name(frame),
        )
        assert stamp.endswith("Z") and stamp.startswith("20")
    assert any(" REQUEST_RESPONSE " in line and 'data="ping"' in line for line in lines)
    assert any("...(2560 bytes)" in line for line in lines)  # long values are cut


def test_decode_json_lines_hold_every_field_in_full(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "decode", str(session), "--format", "json")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    records = records_of(session)
    decoder = get_protocol("rsocket/1.0").record_decoder()
    for line, record in zip(lines, records, strict=True):
        frame = decoder.decode(record.frame)
        assert line["frame"] == frame_fields(frame)
        assert (line["timestamp_ns"], line["connection_id"], line["direction"], line["side"],
                line["sender"], line["length"]) == (record.timestamp_ns, record.connection_id,
                record.direction, record.side, record.sender, len(record.frame))  # fmt: skip
    big = [line for line in lines if line["length"] > 2560]
    assert big and all(bytes.fromhex(line["frame"]["data_hex"]) == bytes(range(256)) * 10
                       for line in big)  # fmt: skip


def test_to_pcap_then_decode_gives_the_captures_lines(
    session: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "s.pcapng"
    code, _, err = cli(capsys, "to-pcap", str(session), str(out_file))
    assert code == 0 and f"to {out_file}" in err
    _, from_capture, _ = cli(capsys, "decode", str(session), "--format", "json")
    code, from_pcap, _ = cli(capsys, "decode", str(out_file), "--format", "json")
    assert code == 0 and from_pcap == from_capture


def test_stats_counts_connections_frames_and_bytes_per_type_and_sender(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "stats", str(session), "--format", "json")
    assert code == 0
    stats = json.loads(out)
    records = records_of(session)
    decoder = get_protocol("rsocket/1.0").record_decoder()
    expected: Counter[tuple[str, str]] = Counter()
    sizes: Counter[tuple[str, str]] = Counter()
    for record in records:
        key = (frame_type_name(decoder.decode(record.frame)), record.sender)
        expected[key] += 1
        sizes[key] += len(record.frame)
    got = {(kind, sender): counts for kind, senders in stats["frame_types"].items()
           for sender, counts in senders.items()}  # fmt: skip
    assert {key: c["frames"] for key, c in got.items()} == dict(expected)
    assert {key: c["bytes"] for key, c in got.items()} == dict(sizes)
    assert stats["connections"] == 2 and stats["frames"] == len(records)
    times = [r.timestamp_ns for r in records]
    assert stats["duration_s"] == (max(times) - min(times)) / 1e9
    code, text_out, _ = cli(capsys, "stats", str(session))
    assert code == 0 and "connections  2" in text_out and "REQUEST_STREAM" in text_out


def rabbitmq_capture(folder: Path) -> Path:
    """Frames whose codes mean different frames from each side: decoding needs the
    sender, which the records' direction and side give."""
    frames = [
        ("out", rabbitmq_codec.PeerPropertiesRequest(correlation_id=1)),
        ("in", rabbitmq_codec.Tune(frame_max=1048576, heartbeat=60)),
        ("out", rabbitmq_codec.Tune(frame_max=1048576, heartbeat=60)),
        ("in", rabbitmq_codec.Heartbeat()),
    ]
    with CaptureWriter(folder / "r.wscap", "rabbitmq_stream/1", max_file_bytes=None) as w:
        for k, (direction, frame) in enumerate(frames):
            w.record(5, direction, frame.to_bytes(), timestamp_ns=T0 + k)  # type: ignore[arg-type]
    return w.files[0]


def test_decode_and_stats_of_a_rabbitmq_capture_and_its_pcap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = rabbitmq_capture(tmp_path)
    code, out, _ = cli(capsys, "decode", str(capture))
    assert code == 0
    assert [line.split(" ")[2:4] for line in out.splitlines()] == [
        ["client", "PEER_PROPERTIES_REQUEST"], ["server", "TUNE"], ["client", "TUNE"],
        ["server", "HEARTBEAT"],
    ]  # fmt: skip
    assert cli(capsys, "to-pcap", str(capture), str(tmp_path / "r.pcapng"))[0] == 0
    code, from_pcap, _ = cli(capsys, "decode", str(tmp_path / "r.pcapng"))
    assert code == 0 and from_pcap == out


def test_a_pcap_needs_the_protocol_and_reads_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = Flow(server_port=7000)
    frame = b"\x00\x00\x00\x01\x10\x00ping"  # REQUEST_RESPONSE, stream 1
    packets = flow.handshake() + flow.send("client", frames_stream([frame]))
    write_pcap(tmp_path / "prod.pcap", [(T0, p) for p in packets], 101)
    code, _, err = cli(capsys, "decode", str(tmp_path / "prod.pcap"))
    assert code == 2 and "--protocol" in err
    code, out, err = cli(capsys, "decode", str(tmp_path / "prod.pcap"),
                         "--protocol", "rsocket/1.0", "--port", "7000")  # fmt: skip
    assert code == 0 and err == ""
    assert out.split(" ")[1:4] == ["0x1", "client", "REQUEST_RESPONSE"]


def test_a_pcap_that_lacks_bytes_is_reported_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = Flow()
    data = flow.send("client", frames_stream([b"a" * 3000]), 1000)
    packets = flow.handshake() + data[:1] + data[2:]
    write_pcap(tmp_path / "holes.pcap", [(T0, p) for p in packets], 101)
    code, out, err = cli(capsys, "stats", str(tmp_path / "holes.pcap"),
                         "--protocol", "rsocket/1.0", "--format", "json")  # fmt: skip
    assert code == 1
    stats = json.loads(out)
    assert stats["pcap"]["problems"] == {"gap": 1} and stats["frames"] == 0
    assert "gap: 1000 bytes missing" in err


def test_a_frame_that_does_not_decode_is_a_malformed_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with CaptureWriter(tmp_path / "bad.wscap", "rsocket/1.0", max_file_bytes=None) as w:
        w.record(1, "out", b"\x00\x00", timestamp_ns=T0)
    code, out, err = cli(capsys, "decode", str(w.files[0]))
    assert code == 1 and " MALFORMED " in out and "1 frame did not decode" in err


def test_usage_errors_exit_2_and_corrupt_files_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], session: Path
) -> None:
    assert cli(capsys, "decode", str(tmp_path / "missing.wscap"))[0] == 2
    assert cli(capsys, "decode", str(session), "--protocol", "nope/1")[0] == 2
    corrupt = tmp_path / "corrupt.wscap"
    data = bytearray(capture_files(session)[0].read_bytes())
    data[60] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    code, _, err = cli(capsys, "decode", str(corrupt))
    assert code == 1 and "corrupt record" in err
    bpmux = tmp_path / "b.wscap"
    with CaptureWriter(bpmux, "bpmux/rel", max_file_bytes=None) as w:
        w.record(1, "out", b"\x01", timestamp_ns=T0)
    code, _, err = cli(capsys, "to-pcap", str(w.files[0]), str(tmp_path / "b.pcapng"))
    assert code == 2 and "--port" in err


@pytest.mark.parametrize("command", ["decode", "stats", "to-pcap"])
def test_help_shows_examples(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"wirestream capture {command}" in out


def test_the_console_script_stops_quietly_when_the_reader_has_seen_enough(tmp_path: Path) -> None:
    """``wirestream capture decode ... | head -1`` on more output than a pipe holds: no
    traceback, exit 0."""
    with CaptureWriter(tmp_path / "many.wscap", "rsocket/1.0", max_file_bytes=None) as w:
        frame = b"\x00\x00\x00\x01\x10\x00" + b"p" * 40
        for k in range(5000):
            w.record(1, "out", frame, timestamp_ns=T0 + k)
    pipeline = subprocess.run(
        f"{sys.executable} -m wirestream capture decode {w.files[0]} | head -1; "
        "exit ${PIPESTATUS[0]}",
        shell=True, capture_output=True, text=True, timeout=60, executable="/bin/bash",
    )  # fmt: skip
    assert len(pipeline.stdout.splitlines()) == 1
    assert pipeline.stderr == "" and pipeline.returncode == 0


@pytest.mark.parametrize(
    ("frame", "name"),
    [
        (pg.Close(name="s1"), "CLOSE"),  # 'C' from the client; 'C' from the server is
        (pg.CommandComplete(tag="SELECT 1"), "COMMAND_COMPLETE"),  # CommandComplete
        (draft.SubscribeRequest(subscription_id=1), "SUBSCRIBE_REQUEST"),  # one key for
        (draft.SubscribeResponse(correlation_id=1), "SUBSCRIBE_RESPONSE"),  # both
    ],
)
def test_frame_type_names_the_frame_not_the_code_it_shares(frame: Any, name: str) -> None:
    """``decode`` and ``stats`` name a frame as the Spark frame log does (its frame's name):
    two frames that share a code (one from each side) keep their own names."""
    spark = pg_spark if type(frame).__module__ == pg.__name__ else draft_spark
    assert frame_type_name(frame) == name == spark.frame_row(frame)[0]
