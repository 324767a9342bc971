"""Interop of the TypeScript RSocket peer (@wirestream/rsocket) with rsocket-java 1.1.5,
the RSocket reference implementation (tests/support/rsocket_java_peer.py: its Netty TCP
server and client in a JVM of their own; nothing mocked).

A. The TypeScript client (``tests/typescript/rsocket/client.ts``) against the rsocket-java
   server: request-response with metadata, 10,000 items under request-n, a channel, cancel
   and AbortSignal, and resumption through a proxy that cuts the connection twice in a
   100,000-element stream (every element once and in order).
B. The rsocket-java client against the TypeScript server
   (``tests/typescript/rsocket/server.ts``): request-responses, a request-stream under its
   ``limitRate`` and a channel.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.support.aio_support import run
from tests.support.rsocket_java_peer import JavaClient, JavaServer, rsocket_java  # noqa: F401
from tests.support.tcp_proxy import TcpProxy
from tests.support.typescript_support import ROOT
from tests.typescript.test_rsocket_interop import (
    STEP,
    client_args,
    client_env,
    start_ts_server,
    stop,
    ts_client,
)


async def against_java(node: str, classpath: str, scenario: str) -> tuple[Any, dict[str, Any]]:
    """The TypeScript client's ``scenario`` against an rsocket-java server; its result and
    the server's counts."""
    async with await JavaServer.start(classpath) as server:
        result = await ts_client(node, server.url, scenario)
        stats = await server.stats()
    return result, stats


def test_ts_client_request_response_with_rsocket_java(node: str, rsocket_java: str) -> None:
    result, stats = run(against_java(node, rsocket_java, "request_response"), 90)
    assert result == {"data": "hello", "metadata": b"md-1".hex()}
    assert stats["request_response"] == 1


def test_ts_client_request_stream_backpressure_with_rsocket_java(
    node: str, rsocket_java: str
) -> None:
    """10,000 elements in order from rsocket-java's Flux, never more buffered than the
    limit rate (its publisher runs only as our REQUEST_N allows)."""
    result, stats = run(against_java(node, rsocket_java, "request_stream_backpressure"), 90)
    assert result["count"] == 10_000 and result["inOrder"] is True
    assert 0 < result["maxBuffered"] <= result["limitRate"]
    assert stats["streamed"] == 10_000


def test_ts_client_request_channel_with_rsocket_java(node: str, rsocket_java: str) -> None:
    result, stats = run(against_java(node, rsocket_java, "request_channel"), 90)
    assert result == {"count": 500, "same": True}
    assert stats["request_channel"] == 1


def test_ts_client_cancel_with_rsocket_java(node: str, rsocket_java: str) -> None:
    """CANCEL after 5 of a million (and an AbortSignal after 3): rsocket-java's publisher
    stops far short of a million, and the connection goes on."""
    result, stats = run(against_java(node, rsocket_java, "cancel"), 90)
    assert result["got"] == ["0", "1", "2", "3", "4"]
    assert result["aborted"] == ["0", "1", "2"]
    assert result["after"] == "still-open"
    assert stats["request_stream"] == 2
    assert stats["streamed"] < 1_000


def test_ts_client_resumes_100k_with_rsocket_java(node: str, rsocket_java: str) -> None:
    """Resuming Operation against the reference implementation: an rsocket-java server with
    resumption, a proxy that cuts the TCP connection twice during a 100,000-element stream;
    the TypeScript client RESUMEs each time and every element arrives once and in order."""

    async def scenario() -> tuple[Any, int, int]:
        async with await JavaServer.start(rsocket_java, "--resume") as server:
            proxy = await TcpProxy(server.port).start()
            env = {**client_env(False), "WIRESTREAM_RESUME_TOTAL": "100000"}
            client = await asyncio.create_subprocess_exec(
                *client_args(node, f"tcp://127.0.0.1:{proxy.port}", "resume", None, False),
                cwd=ROOT, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            try:
                assert client.stdout is not None
                cut = 0
                while True:
                    line = await asyncio.wait_for(client.stdout.readline(), STEP)
                    if line != b"cut\n":
                        break
                    cut += proxy.cut()
                rest, err = await asyncio.wait_for(client.communicate(), STEP)
                assert client.returncode == 0, err.decode()
                return json.loads(line + rest), cut, proxy.accepted
            finally:
                if client.returncode is None:
                    client.kill()
                    await client.wait()
                await proxy.close()

    result, cut, accepted = run(scenario(), 180)
    assert cut == 2 and accepted == 3
    assert result == {"count": 100_000, "inOrder": True, "after": "after resuming"}


def test_rsocket_java_client_against_ts_server(node: str, rsocket_java: str) -> None:
    """rsocket-java's client: 100 request-responses, a 10,000-element stream under its
    limitRate(64), and a 500-element channel, all answered by the TypeScript server."""

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        server = await start_ts_server(node, "tcp")
        try:
            port = int(server.url.rsplit(":", 1)[1])
            async with await JavaClient.start(rsocket_java, port) as client:
                answers = await client.request_responses(100)
                stream = await client.stream(10_000, 64)
                channel = await client.channel(500)
        finally:
            await stop(server)
        return answers, stream, channel

    answers, stream, channel = run(scenario(), 120)
    assert answers["ok"] == 100 and answers["errors"] == [], answers
    assert (stream["elements"], stream["out_of_order"], stream["last"]) == (10_000, 0, 9_999)
    assert stream["error"] is None, stream
    assert (channel["elements"], channel["out_of_order"], channel["last"]) == (500, 0, 499)
    assert channel["error"] is None, channel


async def _cut_every(proxy: TcpProxy, step: int) -> None:
    """Cut the connection each time ``step`` more bytes went towards the client."""
    while True:
        await proxy.downstream_reaches(proxy.downstream + step, timeout=60)
        proxy.cut()


def test_rsocket_java_client_resumes_100k_from_ts_server(node: str, rsocket_java: str) -> None:
    """Resuming Operation, rsocket-java's client -> the TypeScript server: a proxy cuts the
    connection every 40,000 bytes towards the client during a 100,000-element stream;
    rsocket-java RESUMEs each time and counts every element once, in order."""

    async def scenario() -> tuple[dict[str, Any], int]:
        server = await start_ts_server(node, "tcp", resume=True)
        try:
            proxy = await TcpProxy(int(server.url.rsplit(":", 1)[1])).start()
            try:
                client = await JavaClient.start(
                    rsocket_java, proxy.port, "--resume", "--keepalive-ms", "100"
                )
                async with client:
                    assert (await client.request_responses(1))["ok"] == 1  # warm-up
                    cutter = asyncio.ensure_future(_cut_every(proxy, 40_000))
                    try:
                        result = await client.stream(100_000, 256)
                    finally:
                        cutter.cancel()
                return result, proxy.cuts
            finally:
                await proxy.close()
        finally:
            await stop(server)

    result, cuts = run(scenario(), 170)
    assert result["error"] is None, result
    assert (result["elements"], result["out_of_order"], result["last"]) == (100_000, 0, 99_999)
    assert cuts >= 10
