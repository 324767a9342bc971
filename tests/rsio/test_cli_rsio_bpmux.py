"""``wirestream rsio ...`` and ``wirestream bpmux ...`` (wirestream/apps/rsio_cli.py,
bpmux_cli.py): the client commands in-process (``amain``) against the demo servers the
``serve`` commands run, started in the test; one test runs both ``serve`` commands as
console scripts and stops them with SIGINT."""

from __future__ import annotations

import io
import json
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from tests.support.aio_support import run
from wirestream.apps.bpmux_cli import EchoHandler
from wirestream.apps.cli import amain
from wirestream.apps.rsio_cli import demo_publishers
from wirestream.runtime import bpmux, rsio

Capture = pytest.CaptureFixture[str]


@asynccontextmanager
async def rsio_server(encoding: str = "binary") -> AsyncIterator[str]:
    server = await rsio.serve("tcp://127.0.0.1:0", publishers=demo_publishers(),
                              encoding=encoding)  # type: ignore[arg-type]  # fmt: skip
    try:
        yield server.url
    finally:
        await server.close()


@asynccontextmanager
async def bpmux_server() -> AsyncIterator[str]:
    async with bpmux.serve("tcp://127.0.0.1:0", EchoHandler()) as server:
        yield server.url


def with_rsio(work: Callable[[str], Awaitable[int]], encoding: str = "binary") -> int:
    async def main() -> int:
        async with rsio_server(encoding) as url:
            return await work(url)

    return run(main())


def with_bpmux(work: Callable[[str], Awaitable[int]]) -> int:
    async def main() -> int:
        async with bpmux_server() as url:
            return await work(url)

    return run(main())


def out(capsys: Capture) -> list[str]:
    return capsys.readouterr().out.splitlines()


# ---------------------------------------------------------------------- rsio


def test_rsio_subscribe_prints_each_element_of_count_in_order(capsys: Capture) -> None:
    assert with_rsio(lambda url: amain(["rsio", "subscribe", url, "count", "--args", "5"])) == 0
    assert out(capsys) == ["0", "1", "2", "3", "4"]


def test_rsio_subscribe_take_cancels_an_unfinished_publisher(capsys: Capture) -> None:
    argv = ["count", "--args", "1000000", "--take", "3", "--limit-rate", "2"]
    assert with_rsio(lambda url: amain(["rsio", "subscribe", url, *argv])) == 0
    assert out(capsys) == ["0", "1", "2"]


def test_rsio_subscribe_speaks_the_msgpack_encoding_too(capsys: Capture) -> None:
    argv = ["echo", "--args", "hi", "--encoding", "msgpack", "--format", "json"]
    code = with_rsio(lambda url: amain(["rsio", "subscribe", url, *argv]), encoding="msgpack")
    assert code == 0
    assert [json.loads(line) for line in out(capsys)] == [{"data": "hi"}]


def test_rsio_subscribe_to_an_unknown_publisher_is_its_onerror_exit_1(capsys: Capture) -> None:
    assert with_rsio(lambda url: amain(["rsio", "subscribe", url, "nope"])) == 1
    assert "the publisher failed: no publisher named 'nope'" in capsys.readouterr().err


def test_rsio_subscribe_with_bad_args_is_the_publishers_onerror_exit_1(capsys: Capture) -> None:
    assert with_rsio(lambda url: amain(["rsio", "subscribe", url, "count", "--args", "x"])) == 1
    assert "must be a decimal count" in capsys.readouterr().err


def test_rsio_subscribe_to_nobody_is_exit_2(capsys: Capture) -> None:
    assert run(amain(["rsio", "subscribe", "tcp://127.0.0.1:1", "count"])) == 2
    assert capsys.readouterr().err.startswith("wirestream: cannot connect")


# ---------------------------------------------------------------------- bpmux


def test_bpmux_request_prints_the_echoed_answer(capsys: Capture) -> None:
    assert with_bpmux(lambda url: amain(["bpmux", "request", url, "ping"])) == 0
    assert out(capsys) == ["ping"]


def test_bpmux_stream_prints_0_to_n_minus_1_and_take_cancels(capsys: Capture) -> None:
    assert with_bpmux(lambda url: amain(["bpmux", "stream", url, "4"])) == 0
    assert out(capsys) == ["0", "1", "2", "3"]
    assert with_bpmux(lambda url: amain(["bpmux", "stream", url, "100000", "--take", "2"])) == 0
    assert out(capsys) == ["0", "1"]


def test_bpmux_message_and_sink_items_reach_the_server_which_prints_them(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\ny\n")))

    async def both(url: str) -> int:
        first = await amain(["bpmux", "message", url, "hello"])
        second = await amain(["bpmux", "sink", url, "up", "a", "--stdin"])
        return first or second

    assert with_bpmux(both) == 0
    assert out(capsys) == ["message: hello", "sink up: a", "sink up: x", "sink up: y"]


def test_bpmux_error_answer_is_one_line_on_stderr_exit_1(capsys: Capture) -> None:
    assert with_bpmux(lambda url: amain(["bpmux", "stream", url, "not-a-number"])) == 1
    assert "the server answered an error: stream data must be a decimal count" in (
        capsys.readouterr().err
    )


def test_bpmux_request_to_nobody_is_exit_2(capsys: Capture) -> None:
    assert run(amain(["bpmux", "request", "tcp://127.0.0.1:1", "x"])) == 2


def test_help_lists_every_protocol_with_examples(capsys: Capture) -> None:
    assert run(amain(["--help"])) == 0
    top = capsys.readouterr().out
    for protocol in ("rsocket", "rabbitmq", "rsio", "bpmux", "generate"):
        assert protocol in top
    for protocol in ("rsio", "bpmux"):
        assert run(amain([protocol, "--help"])) == 0
        assert "examples:" in capsys.readouterr().out


def test_the_serve_console_scripts_listen_answer_and_exit_0_on_sigint() -> None:
    for protocol, client in (("rsio", ["subscribe", "{url}", "count", "--args", "2"]),
                             ("bpmux", ["request", "{url}", "pong"])):  # fmt: skip
        server = subprocess.Popen([sys.executable, "-m", "wirestream", protocol, "serve",
                                   "--port", "0"], stdout=subprocess.PIPE, text=True)  # fmt: skip
        try:
            assert server.stdout is not None
            ready, _, _ = select.select([server.stdout], [], [], 30)  # a wait that ends
            assert ready, f"{protocol} serve printed nothing within 30 s"
            url = server.stdout.readline().split()[-1]
            argv = [part.format(url=url) for part in client]
            done = subprocess.run([sys.executable, "-m", "wirestream", protocol, *argv],
                                  capture_output=True, text=True, timeout=60)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == (["0", "1"] if protocol == "rsio" else ["pong"])
            server.send_signal(signal.SIGINT)
            assert server.wait(30) == 0
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(10)
