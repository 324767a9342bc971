"""The ``wirestream`` console script (wirestream/apps/cli.py) and the demo responder it serves.

Client commands run in-process (``amain``, the same code as ``main`` inside the test's
event loop) against a server started in the test; one test runs the installed console
script in subprocesses: ``serve --port 0``, a client, then SIGINT.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from wirestream.apps.cli import PayloadWriter, amain, main
from wirestream.runtime.rsocket import (
    NoLease,
    RSocketPayload,
    RSocketHandler,
    RSocketServer,
    Router,
    SetupRejected,
    connect,
    serve,
)
from wirestream.apps.demo_responder import EchoResponder, parse_count
from wirestream.generated.rsocket.v1_0 import decode
from wirestream.runtime.capture.reader import iter_records
from wirestream.runtime.rsocket.errors import ApplicationError
from wirestream.runtime.rsocket.metadata import ROUTING, route
from tests.support.aio_support import run

Capture = pytest.CaptureFixture[str]


@asynccontextmanager
async def serving(handler: RSocketHandler | None = None, url: str = "tcp://127.0.0.1:0",
                  **options: Any) -> AsyncIterator[RSocketServer]:  # fmt: skip
    async with await serve(url, handler or EchoResponder(), **options) as server:
        yield server


async def cli(*argv: str) -> int:
    return await amain(["rsocket", *argv])


def lines(capsys: Capture) -> list[str]:
    return capsys.readouterr().out.splitlines()


@contextmanager
def stdin_bytes(monkeypatch: pytest.MonkeyPatch, data: bytes) -> Iterator[None]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    yield


def free_port() -> int:
    """A port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# ====================================================================== the commands


def test_request_prints_the_echoed_data(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("request", server.url, "hello")

    assert run(main_()) == 0
    assert lines(capsys) == ["hello"]


def test_request_show_metadata_prints_the_echoed_metadata_after_a_tab(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("request", server.url, "hi", "--metadata", "meta",
                             "--show-metadata")  # fmt: skip

    assert run(main_()) == 0
    assert lines(capsys) == ["hi\tmeta"]


def test_request_reads_data_from_stdin_when_data_is_a_dash(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("request", server.url, "-")

    with stdin_bytes(monkeypatch, b"from stdin"):
        assert run(main_()) == 0
    assert lines(capsys) == ["from stdin"]


def test_stream_of_decimal_n_prints_0_to_n_minus_1_one_per_line(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("stream", server.url, "5")

    assert run(main_()) == 0
    assert lines(capsys) == ["0", "1", "2", "3", "4"]


def test_stream_take_cancels_an_endless_stream_and_limit_rate_bounds_what_is_produced(
    capsys: Capture,
) -> None:
    produced = 0
    stopped = asyncio.Event()

    class Endless(RSocketHandler):
        async def _items(self) -> AsyncIterator[bytes]:
            nonlocal produced
            try:
                while True:
                    produced += 1
                    yield b"x"
            finally:
                stopped.set()

        def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
            return self._items()

    async def main_() -> int:
        async with serving(Endless()) as server:
            code = await cli("stream", server.url, "go", "--take", "3", "--limit-rate", "2")
            await asyncio.wait_for(stopped.wait(), 5)
            return code

    assert run(main_()) == 0
    assert lines(capsys) == ["x", "x", "x"]
    # 3 taken, at most one more REQUEST_N(2) in flight: never the default 256
    assert 3 <= produced <= 6


def test_channel_sends_data_then_each_item_and_prints_the_echo(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("channel", server.url, "first", "second", "third")

    assert run(main_()) == 0
    assert lines(capsys) == ["first", "second", "third"]


def test_channel_with_stdin_sends_each_stdin_line_after_the_items(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("channel", server.url, "first", "item", "--stdin")

    with stdin_bytes(monkeypatch, b"line one\nline two\r\n"):
        assert run(main_()) == 0
    assert lines(capsys) == ["first", "item", "line one", "line two"]


def test_channel_with_stdin_reads_lines_from_a_pipe_file_descriptor(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"one\r\ntwo\nlast without newline")
    os.close(write_end)

    async def main_() -> int:
        async with serving() as server:
            return await cli("channel", server.url, "first", "--stdin")

    with open(read_end) as pipe:
        monkeypatch.setattr(sys, "stdin", pipe)
        assert run(main_()) == 0
    assert lines(capsys) == ["first", "one", "two", "last without newline"]


def test_channel_take_stops_after_k_items(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("channel", server.url, "a", "b", "c", "d", "--take", "2")

    assert run(main_()) == 0
    assert lines(capsys) == ["a", "b"]


def test_fnf_reaches_the_responder_and_prints_nothing(capsys: Capture) -> None:
    responder = EchoResponder()

    async def main_() -> int:
        async with serving(responder) as server:
            return await cli("fnf", server.url, "fire", "--metadata", "m")

    assert run(main_()) == 0
    assert capsys.readouterr().out == ""
    assert list(responder.fire_and_forgets) == [RSocketPayload(b"fire", b"m")]


def test_metadata_push_reaches_the_responder(capsys: Capture) -> None:
    responder = EchoResponder()

    async def main_() -> int:
        async with serving(responder) as server:
            return await cli("metadata-push", server.url, "pushed")

    assert run(main_()) == 0
    assert list(responder.metadata_pushes) == [b"pushed"]


def test_websocket_urls_work_for_client_commands(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving(url="ws://127.0.0.1:0") as server:
            assert server.url.startswith("ws://")
            return await cli("stream", server.url, "3")

    assert run(main_()) == 0
    assert lines(capsys) == ["0", "1", "2"]


def test_version_0_2_client_talks_to_a_0_2_server(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving(version="0.2") as server:
            return await cli("request", server.url, "old", "--version", "0.2")

    assert run(main_()) == 0
    assert lines(capsys) == ["old"]


def test_mtu_fragments_large_requests_and_the_echo_is_whole(capsys: Capture) -> None:
    big = "y" * 1000

    async def main_() -> int:
        async with serving(mtu=64) as server:
            return await cli("request", server.url, big, "--mtu", "64")

    assert run(main_()) == 0
    assert lines(capsys) == [big]


# ====================================================================== routing


def _router() -> Router:
    router = Router()

    @router.response("greet")
    async def greet(payload: RSocketPayload) -> bytes:
        return b"hello " + payload.data

    @router.stream("count.down")
    async def count_down(payload: RSocketPayload) -> AsyncIterator[bytes]:
        for i in reversed(range(int(payload.data))):
            yield b"%d" % i

    return router


def test_route_sends_composite_routing_metadata_that_a_router_dispatches_on(
    capsys: Capture,
) -> None:
    async def main_() -> tuple[int, int]:
        async with serving(_router()) as server:
            first = await cli("request", server.url, "bob", "--route", "greet")
            second = await cli("stream", server.url, "3", "--route", "count.down")
            return first, second

    assert run(main_()) == (0, 0)
    assert lines(capsys) == ["hello bob", "2", "1", "0"]


def test_route_with_routing_metadata_mime_sends_bare_routing_metadata(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving(_router()) as server:
            return await cli("request", server.url, "ann", "--route", "greet",
                             "--metadata-mime", ROUTING)  # fmt: skip

    assert run(main_()) == 0
    assert lines(capsys) == ["hello ann"]


def test_route_metadata_is_what_metadata_route_encodes(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("request", server.url, "x", "--route", "a.b", "--route", "tag2",
                             "--show-metadata", "--format", "hex")  # fmt: skip

    assert run(main_()) == 0
    assert lines(capsys) == [f"{b'x'.hex()}\t{route('a.b', 'tag2').hex()}"]


def test_unknown_route_is_a_server_error_exit_1(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving(_router()) as server:
            return await cli("request", server.url, "x", "--route", "nowhere")

    assert run(main_()) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "APPLICATION_ERROR" in captured.err and "no route 'nowhere'" in captured.err


# ====================================================================== output formats


def _binary_responder() -> RSocketHandler:
    class Binary(RSocketHandler):
        async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
            return RSocketPayload(b"\xff\x00ok", b"\xfemeta")

    return Binary()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], ["0xff006f6b"]),
        (["--show-metadata"], ["0xff006f6b\t0xfe6d657461"]),
        (["--format", "hex", "--show-metadata"], ["ff006f6b\tfe6d657461"]),
        (["--format", "json"], [json.dumps({"data_hex": "ff006f6b", "metadata_hex": "fe6d657461"})]),
    ],
)  # fmt: skip
def test_binary_data_prints_as_hex_in_text_hex_and_json_formats(
    capsys: Capture, options: list[str], expected: list[str]
) -> None:
    async def main_() -> int:
        async with serving(_binary_responder()) as server:
            return await cli("request", server.url, "x", *options)

    assert run(main_()) == 0
    assert lines(capsys) == expected


def test_raw_format_writes_the_data_bytes_and_a_newline() -> None:
    out = io.TextIOWrapper(io.BytesIO())
    writer = PayloadWriter(out, "raw")
    writer.write(RSocketPayload(b"\xff\x00ok"))
    writer.write(RSocketPayload(b"text"))
    assert out.buffer.getvalue() == b"\xff\x00ok\ntext\n"


def test_json_format_prints_utf8_data_as_text_and_absent_metadata_as_null() -> None:
    out = io.StringIO()
    PayloadWriter(out, "json").write(RSocketPayload(b"h\xc3\xa9", None))
    assert json.loads(out.getvalue()) == {"data": "hé", "metadata": None}


def test_text_format_shows_absent_metadata_as_nothing_after_the_tab() -> None:
    out = io.StringIO()
    PayloadWriter(out, "text", show_metadata=True).write(RSocketPayload(b"d", None))
    assert out.getvalue() == "d\t\n"


# ====================================================================== failures


def test_server_error_message_goes_to_stderr_with_exit_1(capsys: Capture) -> None:
    async def main_() -> int:
        async with serving() as server:
            return await cli("stream", server.url, "not a number")

    assert run(main_()) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("wirestream: the server answered ERROR APPLICATION_ERROR")
    assert "decimal count" in captured.err
    assert "Traceback" not in captured.err


def test_rejected_setup_is_exit_1_with_the_servers_reason(capsys: Capture) -> None:
    def refuse(setup: Any) -> tuple[int, str]:
        return 0x003, "go away"

    async def main_() -> int:
        async with serving(setup_policy=refuse) as server:
            return await cli("request", server.url, "x")

    assert run(main_()) == 1
    err = capsys.readouterr().err
    assert "rejected the connection" in err and "REJECTED_SETUP" in err and "go away" in err


def test_timeout_without_an_answer_is_exit_1(capsys: Capture) -> None:
    class Silent(RSocketHandler):
        async def request_response(self, payload: RSocketPayload) -> bytes:
            await asyncio.Event().wait()
            raise ApplicationError("unreachable")

    async def main_() -> int:
        async with serving(Silent()) as server:
            return await cli("request", server.url, "x", "--timeout", "0.2")

    assert run(main_()) == 1
    assert capsys.readouterr().err == "wirestream: no answer within 0.2 s\n"


def test_connection_refused_is_one_line_on_stderr_exit_2(capsys: Capture) -> None:
    url = f"tcp://127.0.0.1:{free_port()}"
    assert run(cli("request", url, "x")) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"wirestream: cannot connect: {url}")
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:80", "tcp://127.0.0.1", "127.0.0.1:7878", "tcp://h:port"]
)
def test_bad_url_is_a_usage_error_exit_2(capsys: Capture, url: str) -> None:
    assert main(["rsocket", "request", url, "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: wirestream rsocket request")
    assert "error: argument URL:" in err


def test_route_and_metadata_together_is_a_usage_error(capsys: Capture) -> None:
    argv = ["rsocket", "request", "tcp://127.0.0.1:1", "x", "--route", "a", "--metadata", "m"]
    assert main(argv) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_serve_on_a_port_in_use_is_exit_1_without_a_traceback(capsys: Capture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run(cli("serve", "--port", str(port))) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"wirestream: cannot listen on tcp://127.0.0.1:{port}")
    assert "Traceback" not in err


def test_help_lists_the_protocols_and_the_rsocket_commands(capsys: Capture) -> None:
    assert main(["--help"]) == 0
    assert "rsocket" in capsys.readouterr().out
    assert main(["rsocket", "--help"]) == 0
    out = capsys.readouterr().out
    for command in ("serve", "request", "fnf", "stream", "channel", "metadata-push"):
        assert command in out


# ====================================================================== demo responder


@pytest.mark.parametrize("data", [b"", b"-1", b"1.5", b"ten", b"\xd9\xa3"])
def test_demo_stream_count_must_be_decimal_digits(data: bytes) -> None:
    with pytest.raises(ApplicationError, match="decimal count"):
        parse_count(data)


def test_demo_stream_count_allows_surrounding_whitespace() -> None:
    assert parse_count(b" 12\n") == 12


# ====================================================================== the console script


def _wirestream() -> str:
    script = Path(sys.executable).parent / "wirestream"
    assert script.exists(), f"{script} missing: run `pip install -e . --no-deps`"
    return str(script)


def _readline(process: subprocess.Popen[str], seconds: float = 15.0) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    assert ready, "the server printed nothing"
    return process.stdout.readline()


def test_console_script_serves_answers_a_client_and_exits_0_on_sigint() -> None:
    wirestream = _wirestream()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    server = subprocess.Popen([wirestream, "rsocket", "serve", "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        first = _readline(server)
        assert first.startswith("listening on tcp://127.0.0.1:"), first
        url = first.split()[-1]
        assert not url.endswith(":0")

        stream = subprocess.run([wirestream, "rsocket", "stream", url, "5"], env=env,
                                capture_output=True, text=True, timeout=30)  # fmt: skip
        assert (stream.returncode, stream.stdout, stream.stderr) == (0, "0\n1\n2\n3\n4\n", "")

        fnf = subprocess.run([wirestream, "rsocket", "fnf", url, "fired"], env=env,
                             capture_output=True, text=True, timeout=30)  # fmt: skip
        assert fnf.returncode == 0
        assert _readline(server) == "fire-and-forget: fired\n"

        # Issue 17: a client asking for leases is refused at once (no lease to grant),
        # not left waiting for a LEASE.
        async def lease_client() -> int:
            async with connect(url, lease=True) as rs:
                with pytest.raises(SetupRejected) as rejected:
                    await asyncio.wait_for(rs.wait_for_lease(), 15)
            return rejected.value.error_code

        assert run(lease_client()) == 0x002  # UNSUPPORTED_SETUP
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=15)
    assert server.returncode == 0
    assert err == ""


def test_serve_with_lease_grants_leasing_clients_n_requests_per_ttl() -> None:
    """``wirestream rsocket serve --lease TTL,N``: a client whose SETUP has the L flag is
    accepted and granted LEASEs of N requests for TTL ms ("If the server accepts the
    contents of the SETUP frame, it MUST send a LEASE frame if the SETUP frame set the L
    flag"); the N+1st request within the TTL is refused by the client's own lease."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    root = Path(__file__).resolve().parents[2]  # `-m` from the checkout: its own code
    server = subprocess.Popen([sys.executable, "-m", "wirestream", "rsocket", "serve",
                               "--port", "0", "--lease", "600000,2"], env=env, cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        first = _readline(server)
        assert first.startswith("listening on tcp://127.0.0.1:"), first
        url = first.split()[-1]

        async def lease_client() -> None:
            async with connect(url, lease=True) as rs:
                await asyncio.wait_for(rs.wait_for_lease(), 15)
                status = rs.lease
                assert status is not None and status.requests_left == 2
                now = asyncio.get_running_loop().time()
                assert now + 590 < status.expires_at <= now + 600
                for data in (b"one", b"two"):
                    assert (await rs.request_response(data)).data == data
                with pytest.raises(NoLease):
                    await rs.request_response(b"three")

        run(lease_client())
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=15)
    assert server.returncode == 0
    assert err == ""


def test_serve_capture_records_every_frame_read_and_sent_in_the_servers_order(
    tmp_path: Path,
) -> None:
    """``wirestream rsocket serve --capture PATH``: each frame the server read (the
    client's) and sent (its own), in the order it did so, in PATH.000000.wscap, complete
    once the server has stopped."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    root = Path(__file__).resolve().parents[2]
    server = subprocess.Popen([sys.executable, "-m", "wirestream", "rsocket", "serve",
                               "--port", "0", "--capture", str(tmp_path / "served.wscap")],
                              env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        url = _readline(server).split()[-1]

        async def client() -> None:
            async with connect(url) as rs:
                assert (await rs.request_response(b"hello")).data == b"hello"
                assert [p.data async for p in rs.request_stream(b"2")] == [b"0", b"1"]

        run(client())
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=15)
    assert (server.returncode, err) == (0, "")
    seen = []
    for record in iter_records(tmp_path / "served.000000.wscap"):
        frame = decode(record.frame)
        data = getattr(frame, "data", b"")
        seen.append((record.sender, type(frame).__name__, frame.stream_id, data))
    assert seen == [
        ("client", "Setup", 0, b""),
        ("client", "RequestResponse", 1, b"hello"),
        ("server", "Payload", 1, b"hello"),
        ("client", "RequestStream", 3, b"2"),
        ("server", "Payload", 3, b"0"),
        ("server", "Payload", 3, b"1"),
        ("server", "Payload", 3, b""),  # COMPLETE
        ("client", "Error", 0, b"bye"),  # CONNECTION_CLOSE
    ]


def test_serve_capture_in_a_folder_that_cannot_be_written_is_exit_1(
    tmp_path: Path, capsys: Capture
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert main(["rsocket", "serve", "--port", "0", "--capture", str(blocked / "x.wscap")]) == 1
    assert "cannot write the capture" in capsys.readouterr().err


@pytest.mark.parametrize("lease", ["60000", "0,5", "5,0", "x,1", f"1,{1 << 31}"])
def test_serve_lease_must_be_ttl_comma_n_both_positive_31_bit(lease: str, capsys: Capture) -> None:
    assert main(["rsocket", "serve", "--lease", lease]) == 2
    assert "TTL" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    ["generate", "check", "validate", "diff", "rsocket", "rabbitmq", "rsio", "bpmux", "capture"],
)
def test_every_command_says_what_it_does_with_examples_in_its_help(
    command: str, capsys: Capture
) -> None:
    assert main([command, "--help"]) == 0
    assert "examples:\n  " in capsys.readouterr().out
