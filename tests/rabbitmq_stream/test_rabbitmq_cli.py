"""``wirestream rabbitmq ...`` (wirestream/apps/rabbitmq_cli.py) against the real broker.

The commands run in-process (``amain``: the same code as the console script inside the
test's event loop); stdin is replaced by a pipe-less text stream for ``publish``. One
test runs the installed console script to show stdin from a real pipe works.
"""

from __future__ import annotations

import io
import time
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest

from tests.support.aio_support import run
from tests.support.rabbitmq_broker_ctl import add_super_stream, delete_super_stream
from tests.support.rabbitmq_stream_client_support import URI, unique
from tests.support.rabbitmq_stream_test_broker_server import TestBrokerServer
from wirestream.runtime.rabbitmq_stream.aio import connect
from wirestream.runtime.rabbitmq_stream.amqp import (
    AmqpMessage,
    AmqpValue,
    encode_body,
    encode_message,
)
from wirestream.runtime.rabbitmq_stream.routing import hash_partition
from wirestream.apps.cli import amain

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

Capture = pytest.CaptureFixture[str]


async def rabbitmq(*argv: str) -> int:
    return await amain(["rabbitmq", *argv, "--uri", URI])


def wirestream(*argv: str) -> int:
    return run(rabbitmq(*argv))


def publish(monkeypatch: pytest.MonkeyPatch, stream: str, data: bytes, *options: str) -> int:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    return wirestream("publish", stream, *options)


@contextmanager
def new_stream(*options: str) -> Iterator[str]:
    stream = unique("ws-cli")
    assert wirestream("create", stream, *options) == 0
    try:
        yield stream
    finally:
        wirestream("delete", stream, "--missing-ok")


def out_lines(capsys: Capture) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_publish_sends_each_stdin_line_and_consume_prints_them_in_order(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    with new_stream() as stream:
        assert publish(monkeypatch, stream, b"one\ntwo\r\nthree") == 0
        assert "published 3" in capsys.readouterr().err
        assert wirestream("consume", stream, "--offset", "first", "--count", "3") == 0
        assert out_lines(capsys) == ["one", "two", "three"]


def test_publish_with_a_reference_stores_each_line_once_when_the_input_is_published_again(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    with new_stream() as stream:
        assert publish(monkeypatch, stream, b"a\nb\n", "--reference", "loader") == 0
        assert publish(monkeypatch, stream, b"a\nb\nc\nd\n", "--reference", "loader") == 0
        assert "published 2, 2 stored before (skipped)" in capsys.readouterr().err
        assert wirestream("consume", stream, "--offset", "first", "--idle", "1") == 0
        assert out_lines(capsys) == ["a", "b", "c", "d"]


def test_consume_with_a_reference_resumes_after_the_offset_it_stored(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    with new_stream() as stream:
        assert publish(monkeypatch, stream, b"1\n2\n3\n4\n5\n") == 0
        capsys.readouterr()
        assert wirestream("consume", stream, "--reference", "reader", "--count", "2") == 0
        assert wirestream("consume", stream, "--reference", "reader", "--count", "2") == 0
        assert wirestream("consume", stream, "--reference", "reader", "--idle", "1") == 0
        assert out_lines(capsys) == ["1", "2", "3", "4", "5"]


def test_consume_json_gives_offset_timestamp_and_data_and_hex_for_binary(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    with new_stream() as stream:
        assert publish(monkeypatch, stream, b"text\n\xff\xfe\n") == 0
        capsys.readouterr()
        assert wirestream("consume", stream, "--offset", "first", "--count", "2",
                          "--format", "json") == 0  # fmt: skip
        rows = [json.loads(line) for line in out_lines(capsys)]
        assert [row["offset"] for row in rows] == [0, 1]
        assert rows[0]["data"] == "text" and rows[1]["data_hex"] == "fffe"
        now_ms = datetime.now(timezone.utc).timestamp() * 1000
        assert all(abs(row["timestamp"] - now_ms) < 600_000 for row in rows)
        assert (
            wirestream("consume", stream, "--offset", "1", "--count", "1", "--format", "hex") == 0
        )
        assert out_lines(capsys) == ["fffe"]


def test_consume_from_an_iso_time_starts_at_the_chunks_written_since(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    with new_stream() as stream:
        assert publish(monkeypatch, stream, b"old\n") == 0
        time.sleep(1.2)  # the old chunk is well before `since` (timestamps: ms)
        since = datetime.now(timezone.utc).isoformat()
        assert publish(monkeypatch, stream, b"new\n") == 0
        capsys.readouterr()
        assert wirestream("consume", stream, "--offset", since, "--idle", "1") == 0
        assert out_lines(capsys) == ["new"]


def test_info_shows_leader_and_first_and_last_offset_and_a_dash_for_an_empty_stream(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    with new_stream() as stream:
        assert wirestream("info", stream, "--format", "json") == 0
        empty = json.loads(out_lines(capsys)[0])
        assert empty["exists"] and empty["first_offset"] is None and empty["last_offset"] is None
        assert empty["leader"].endswith(":5552")
        assert publish(monkeypatch, stream, b"x\ny\nz\n") == 0
        capsys.readouterr()
        assert wirestream("info", stream) == 0
        assert out_lines(capsys) == [
            f"{stream}: leader {empty['leader']}, replicas -, first offset 0, last offset 2"
        ]


def test_info_on_a_missing_stream_says_so_and_exits_1(capsys: Capture) -> None:
    assert wirestream("info", "ws-cli-no-such-stream") == 1
    assert out_lines(capsys) == ["ws-cli-no-such-stream: no such stream"]


def test_create_passes_retention_arguments_to_the_broker(capsys: Capture) -> None:
    with new_stream("--max-age", "1h", "--max-length-bytes", "1000000",
                    "--argument", "stream-max-segment-size-bytes=500000") as stream:  # fmt: skip
        # 3.10.8: creating it again with other arguments is PRECONDITION_FAILED, and
        # --exist-ok does not hide that (the stream is not what was asked for)
        assert wirestream("create", stream, "--exist-ok") == 1
        assert "PRECONDITION_FAILED" in capsys.readouterr().err


def test_create_of_an_existing_stream_is_exit_1_unless_exist_ok(capsys: Capture) -> None:
    with new_stream() as stream:
        assert wirestream("create", stream) == 1
        assert "STREAM_ALREADY_EXISTS" in capsys.readouterr().err
        assert wirestream("create", stream, "--exist-ok") == 0


def test_delete_of_a_missing_stream_is_exit_1_unless_missing_ok(capsys: Capture) -> None:
    assert wirestream("delete", "ws-cli-no-such-stream") == 1
    assert "STREAM_DOES_NOT_EXIST" in capsys.readouterr().err
    assert wirestream("delete", "ws-cli-no-such-stream", "--missing-ok") == 0


def test_super_stream_partitions_and_route_answer_from_the_brokers_bindings(
    capsys: Capture,
) -> None:
    name = unique("ws-cli-super")
    add_super_stream(name, 3)
    try:
        assert wirestream("super-stream", "partitions", name) == 0
        assert out_lines(capsys) == [f"{name}-0", f"{name}-1", f"{name}-2"]
        assert wirestream("super-stream", "route", name, "2") == 0
        assert out_lines(capsys) == [f"{name}-2"]
        assert wirestream("super-stream", "route", name, "nowhere") == 1
        assert "goes to no partition" in capsys.readouterr().err
    finally:
        delete_super_stream(name)


def test_super_stream_create_and_delete_on_a_broker_before_3_13_say_how_to_do_it_there(
    capsys: Capture,
) -> None:
    assert wirestream("super-stream", "create", unique("ws-cli-super"), "--partitions", "2") == 1
    err = capsys.readouterr().err
    assert "needs RabbitMQ 3.13.0 or later; the broker is RabbitMQ 3.10.8" in err
    assert "rabbitmq-streams add_super_stream" in err
    assert wirestream("super-stream", "delete", "anything") == 1
    assert "rabbitmq-streams delete_super_stream" in capsys.readouterr().err


def test_publish_to_a_super_stream_routes_each_line_by_its_key_as_the_java_client_hashes_it(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    name = unique("ws-cli-super")
    add_super_stream(name, 3)
    try:
        lines = [f"customer-{n % 7},{n}" for n in range(40)]
        data = "".join(line + "\n" for line in lines).encode()
        options = ("--super-stream", "--key-delimiter", ",", "--reference", "loader")
        assert publish(monkeypatch, name, data, *options) == 0
        assert publish(monkeypatch, name, data, *options) == 0  # stored once
        assert "published 0, 40 stored before (skipped)" in capsys.readouterr().err
        assert wirestream("consume", name, "--super-stream", "--offset", "first", "--idle", "1",
                          "--format", "json") == 0  # fmt: skip
        rows = [json.loads(line) for line in out_lines(capsys)]
        partitions = [f"{name}-{i}" for i in range(3)]
        expected = {line: hash_partition(line.split(",")[0], partitions) for line in lines}
        assert {row["data"]: row["partition"] for row in rows} == expected
        assert len(rows) == len(lines)
        for partition in partitions:  # in order within each partition
            mine = [row["data"] for row in rows if row["partition"] == partition]
            assert mine == [line for line in lines if expected[line] == partition]
    finally:
        delete_super_stream(name)


def test_consume_a_super_stream_with_a_reference_resumes_each_partition_where_it_stopped(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    name = unique("ws-cli-super")
    add_super_stream(name, 2)
    try:
        data = "".join(f"k{n}\n" for n in range(20)).encode()
        assert publish(monkeypatch, name, data, "--super-stream") == 0
        capsys.readouterr()
        seen: list[str] = []
        for _ in range(3):
            assert wirestream("consume", name, "--super-stream", "--reference", "reader",
                              "--count", "7", "--idle", "1") == 0  # fmt: skip
            seen += out_lines(capsys)
        assert sorted(seen) == sorted(f"k{n}" for n in range(20))
    finally:
        delete_super_stream(name)


def test_an_unreachable_broker_is_one_line_on_stderr_exit_2(capsys: Capture) -> None:
    code = run(amain(["rabbitmq", "info", "s", "--uri", "rabbitmq-stream://127.0.0.1:1/"]))
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("wirestream: cannot connect to rabbitmq-stream://127.0.0.1:1/")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["consume", "s", "--offset", "yesterday"],
        ["create", "s", "--argument", "no-equals-sign"],
        ["info", "s", "--uri", "amqp://localhost"],
        ["consume", "s", "--count", "-1"],
        ["create", "s", "--max-age", "forever"],  # 3.10.8 would drop the connection
    ],
)
def test_bad_options_are_usage_errors_exit_2(argv: list[str], capsys: Capture) -> None:
    assert run(amain(["rabbitmq", *argv])) == 2
    assert "error:" in capsys.readouterr().err


def test_help_lists_the_rabbitmq_commands_with_examples(capsys: Capture) -> None:
    assert run(amain(["rabbitmq", "--help"])) == 0
    out = capsys.readouterr().out
    for command in ("create", "delete", "info", "publish", "consume", "super-stream"):
        assert command in out
    assert "examples:" in out and "wirestream rabbitmq publish" in out


def test_the_console_script_publishes_lines_from_a_real_pipe_and_consumes_them() -> None:
    stream = unique("ws-cli")
    script = [sys.executable, "-m", "wirestream", "rabbitmq"]
    try:
        subprocess.run([*script, "create", stream, "--uri", URI], check=True, timeout=60)
        seq = subprocess.Popen(["seq", "1000"], stdout=subprocess.PIPE)
        published = subprocess.run([*script, "publish", stream, "--uri", URI], stdin=seq.stdout,
                                   capture_output=True, text=True, timeout=60)  # fmt: skip
        seq.wait(10)
        assert published.returncode == 0, published.stderr
        assert "published 1000" in published.stderr
        consumed = subprocess.run([*script, "consume", stream, "--offset", "first", "--count",
                                   "1000", "--uri", URI], capture_output=True, text=True,
                                  timeout=60)  # fmt: skip
        assert consumed.returncode == 0, consumed.stderr
        assert consumed.stdout.split() == [str(n) for n in range(1, 1001)]
    finally:
        subprocess.run([*script, "delete", stream, "--missing-ok", "--uri", URI], timeout=60)


def test_info_adds_the_brokers_stream_stats_on_a_broker_that_has_them(capsys: Capture) -> None:
    async def main() -> int:
        async with TestBrokerServer(version="3.13.0", streams=("s",)) as server:
            return await amain(["rabbitmq", "info", "s", "--uri", server.uri, "--format", "json"])

    assert run(main()) == 0
    [row] = [json.loads(line) for line in out_lines(capsys)]
    assert row["exists"] and row["first_offset"] is None
    assert set(row["stats"]) >= {"first_chunk_id", "committed_chunk_id"}


def test_consume_prints_a_body_it_cannot_decode_as_the_stored_bytes_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    """An amqp-value string body (what other clients' "string" messages are) is not one
    Data section: the record is printed as stored, with a note on stderr, and the
    messages after it are printed too (it used to end the command with exit 1)."""

    async def publish_value(stream: str) -> bytes:
        stored = encode_message(AmqpMessage(body=AmqpValue("a string")))
        async with await connect(URI, reconnect=False) as client:
            producer = await client.producer(stream, raw=True)
            await (await producer.send(stored))
            await (await producer.send(encode_body(b"after")))
            await producer.close()
        return stored

    with new_stream() as stream:
        stored = run(publish_value(stream))
        capsys.readouterr()
        assert wirestream("consume", stream, "--offset", "first", "--count", "2",
                          "--format", "hex") == 0  # fmt: skip
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [stored.hex(), b"after".hex()]
        assert "offset 0" in captured.err and "printed as the stored bytes" in captured.err
