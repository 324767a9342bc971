"""Interop of the TypeScript RSocket peer (@wirestream/rsocket, issue 29) with the Python one.

Nothing is mocked: each side builds and parses every frame with its own codec.

A. The TypeScript client (``tests/typescript/rsocket/client.ts``, one scenario per node
   process, over TCP and WebSocket) against the Python ``serve`` with the demo responder
   that ``wirestream rsocket serve`` runs (``EchoResponder``, whose records say what the
   Python side saw: fire-and-forget and metadata-push payloads, streams left open).
B. The Python client (``connect``) against the TypeScript server
   (``tests/typescript/rsocket/server.ts``, which answers as the demo responder does and
   prints what it was pushed), over TCP and WebSocket.

Both directions cover request-response (with metadata), a 10,000-item request-stream under
request-n backpressure, a channel, fire-and-forget, metadata push, cancel (and, on the
TypeScript side, an AbortSignal), fragmentation (MTU 64 both ways), and an application
error. Every wait is bounded (``aio_support.run``'s timeout and the subprocess's).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import ssl
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.aio_support import run
from tests.support.tcp_proxy import TcpProxy
from tests.support.tls_support import self_signed_certificate
from tests.support.typescript_support import ROOT
from wirestream.apps.demo_responder import EchoResponder
from wirestream.runtime.rsocket import (
    ApplicationError,
    NoLease,
    Router,
    RSocketPayload,
    RSocketPeer,
    SetupRejected,
    connect,
    serve,
)
from wirestream.runtime.rsocket.metadata import (
    AUTHENTICATION,
    DATA_MIME_TYPE,
    ROUTING,
    SimpleAuth,
    decode_accept_mime_types,
    decode_auth,
    decode_composite,
    decode_data_mime_type,
    encode_accept_mime_types,
    encode_auth,
    encode_bearer_auth,
    encode_composite,
    encode_data_mime_type,
    encode_route,
    encode_simple_auth,
    route,
)

CLIENT = ROOT / "tests" / "typescript" / "dist" / "rsocket" / "client.js"
SERVER = ROOT / "tests" / "typescript" / "dist" / "rsocket" / "server.js"
STEP = 60.0  # seconds for one node process (a cold start on a busy 2-core machine)

TRANSPORTS = ["tcp", "ws"]
# the Node socket transports beyond TCP (a smaller set of scenarios: the same TcpTransport)
SOCKET_TRANSPORTS = ["tls", "unix"]
# A: the client's transports; "browser-ws" is the browser entry's WebSocket transport.
CLIENT_TRANSPORTS = ["tcp", "ws", "browser-ws"]


def client_args(node: str, url: str, scenario: str, mtu: int | None, browser: bool) -> list[str]:
    """The command of one client scenario; ``browser``: through the browser entry's
    ``connect`` on the global WebSocket (Node 20 has it behind a flag)."""
    flags = ["--experimental-websocket"] if browser else []
    extra = [str(mtu)] if mtu is not None else []
    return [node, *flags, str(CLIENT), url, scenario, *extra]


def client_env(browser: bool) -> dict[str, str]:
    return {**os.environ, "WIRESTREAM_BROWSER_WS": "1" if browser else "0"}


async def ts_client(
    node: str,
    url: str,
    scenario: str,
    mtu: int | None = None,
    browser: bool = False,
    env: dict[str, str] | None = None,
) -> Any:
    """Run one scenario of the TypeScript client against ``url``; what it printed.
    ``env``: more of its environment (``WIRESTREAM_TLS_CA``)."""
    process = await asyncio.create_subprocess_exec(
        *client_args(node, url, scenario, mtu, browser),
        cwd=ROOT,
        env={**client_env(browser), **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), STEP)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, f"client.js {scenario} failed:\n{err.decode()}"
    return json.loads(out)


async def against_python(
    node: str,
    transport: str,
    scenario: str,
    mtu: int | None = None,
    lease: tuple[int, int] | None = None,
) -> tuple[Any, EchoResponder, int]:
    """The TypeScript client's ``scenario`` against a Python server: its result, the
    responder's records and how many streams the server still had open at the end.
    ``transport`` "browser-ws" is WebSocket through the browser entry."""
    responder = EchoResponder()
    browser = transport == "browser-ws"
    scheme = "ws" if browser else transport
    server = await serve(f"{scheme}://127.0.0.1:0", responder, mtu=mtu, lease=lease)
    try:
        result = await ts_client(node, server.url, scenario, mtu, browser)
        open_streams = sum(len(peer.engine.open_streams) for peer in server.peers)
    finally:
        server.close()
        await server.wait_closed()
    return result, responder, open_streams


# ---------------------------------------------------------------------------- A


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_request_response(node: str, transport: str) -> None:
    result, _, _ = run(against_python(node, transport, "request_response"))
    assert result == {"data": "hello", "metadata": b"md-1".hex()}


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_request_stream_backpressure(node: str, transport: str) -> None:
    """10,000 items in order, never more buffered than the limit rate granted: REQUEST_N
    follows consumption (a slow consumer pauses every 1,000)."""
    result, _, _ = run(against_python(node, transport, "request_stream_backpressure"), 90)
    assert result["count"] == 10_000
    assert result["inOrder"] is True
    assert 0 < result["maxBuffered"] <= result["limitRate"]


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_request_channel(node: str, transport: str) -> None:
    result, _, _ = run(against_python(node, transport, "request_channel"))
    assert result == {"count": 500, "same": True}


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_fire_and_forget(node: str, transport: str) -> None:
    result, responder, _ = run(against_python(node, transport, "fire_and_forget"))
    assert result == {"after": "after"}
    assert [p.data for p in responder.fire_and_forgets] == [b"fnf-from-typescript"]


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_metadata_push(node: str, transport: str) -> None:
    result, responder, _ = run(against_python(node, transport, "metadata_push"))
    assert result == {"after": "after"}
    assert list(responder.metadata_pushes) == [b"push-from-typescript"]


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_cancel(node: str, transport: str) -> None:
    """``break`` sends CANCEL and an AbortSignal does too: the server keeps no stream open
    (its publishers of a million items stopped), and the connection goes on."""
    result, _, open_streams = run(against_python(node, transport, "cancel"))
    assert result["got"] == ["0", "1", "2", "3", "4"]
    assert result["aborted"] == ["0", "1", "2"]
    assert result["abortError"] == "enough"
    assert result["after"] == "still-open"
    assert result["open"] == 0
    assert open_streams == 0


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_fragmentation(node: str, transport: str) -> None:
    """Both sides fragment at MTU 64: 10 kB of data and 1 kB of metadata come back whole."""
    result, _, _ = run(against_python(node, transport, "fragmentation", mtu=64))
    assert result == {"data": True, "metadata": True, "channel": ["same"]}


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_application_error(node: str, transport: str) -> None:
    result, _, _ = run(against_python(node, transport, "application_error"))
    assert result["error"] == "ApplicationError"
    assert result["code"] == 0x201
    assert "decimal count" in result["message"]


@pytest.mark.parametrize("transport", CLIENT_TRANSPORTS)
def test_ts_client_graceful_close(node: str, transport: str) -> None:
    """ERROR Frame, CONNECTION_CLOSE: 'Sender or Receiver of this frame MUST wait for
    outstanding streams to terminate before closing the connection. New requests MAY not be
    accepted.'  The TypeScript client begins a graceful close 100 items into a 2,000-item
    stream: the stream still delivers all 2,000, a new request is refused (NoNewRequests),
    and the connection ends without error."""
    result, _, open_streams = run(against_python(node, transport, "graceful_close"))
    assert result == {"count": 2000, "refused": "NoNewRequests", "error": None, "state": "closed"}
    assert open_streams == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_client_lease(node: str, transport: str) -> None:
    """LEASE Frame: 'The Requester MUST NOT send more than Number of Requests specified in
    the LEASE frame within the Time-To-Live value': the TypeScript client's SETUP asks for
    leases, its requests wait for the Python server's LEASE (3 requests), the fourth is
    refused locally (NoLease)."""
    result, _, _ = run(against_python(node, transport, "lease", lease=(60_000, 3)))
    assert result == {
        "answers": ["leased-0", "leased-1", "leased-2"],
        "fourth": "NoLease",
        "isNoLease": True,
    }


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_client_keepalive_dead_peer(node: str, transport: str) -> None:
    """SETUP, Max Lifetime: 'Time (in milliseconds) that a client will allow a server to not
    respond to a KEEPALIVE before it is assumed to be dead.'  The real Python server
    (``wirestream rsocket serve``) is stopped (SIGSTOP) under the connected client, whose
    Max Lifetime is 1 s: the client ends the connection with ConnectionLost('keepalive')."""

    async def scenario() -> Any:
        server = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "wirestream", "rsocket", "serve", "--port", "0",
            "--transport", transport,
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        client: asyncio.subprocess.Process | None = None
        try:
            assert server.stdout is not None
            line = (await asyncio.wait_for(server.stdout.readline(), STEP)).decode()
            found = re.search(r"listening on (\S+)", line)
            assert found is not None, line
            client = await asyncio.create_subprocess_exec(
                *client_args(node, found.group(1), "keepalive_dead_peer", None, False),
                cwd=ROOT, env=client_env(False),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert client.stdout is not None
            ready = await asyncio.wait_for(client.stdout.readline(), STEP)
            assert ready == b"ready\n", ready
            server.send_signal(signal.SIGSTOP)
            out, err = await asyncio.wait_for(client.communicate(), STEP)
            assert client.returncode == 0, err.decode()
            return json.loads(out)
        finally:
            if client is not None and client.returncode is None:
                client.kill()
                await client.wait()
            server.send_signal(signal.SIGCONT)
            server.kill()
            await server.communicate()

    result = run(scenario(), 90)
    assert result["error"] == "ConnectionLost"
    assert result["reason"] == "keepalive"
    assert "peer assumed dead" in result["message"]
    assert 900 <= result["afterMs"] < 10_000


def test_ts_client_resumes_through_cut_connections(node: str) -> None:
    """Resuming Operation: the TypeScript client negotiates resumption with the Python
    server (``serve(resume=True)``) through a proxy that cuts the TCP connection twice in
    the middle of a 20,000-item stream (RST, whatever is in flight lost); the client dials
    again, sends RESUME, both sides retransmit from the other's implied position, and
    every item arrives once and in order."""

    async def scenario() -> tuple[Any, int]:
        responder = EchoResponder()
        server = await serve("tcp://127.0.0.1:0", responder, resume=True)
        port = int(server.url.rsplit(":", 1)[1])
        proxy = await TcpProxy(port).start()
        client = await asyncio.create_subprocess_exec(
            *client_args(node, f"tcp://127.0.0.1:{proxy.port}", "resume", None, False),
            cwd=ROOT, env=client_env(False),
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
            assert proxy.accepted == 3  # the first connection and one per resumption
            return json.loads(line + rest), cut
        finally:
            if client.returncode is None:
                client.kill()
                await client.wait()
            await proxy.close()
            server.close()
            await server.wait_closed()

    result, cut = run(scenario(), 120)
    assert cut == 2
    assert result == {"count": 20_000, "inOrder": True, "after": "after resuming"}


# ---------------------------------------------------------------------------- B


class TypeScriptServer:
    """``server.js`` as a subprocess: its URL, and the lines it printed after it."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process = process
        self.url = url

    async def lines(self, count: int) -> list[str]:
        assert self.process.stdout is not None
        out = []
        for _ in range(count):
            line = await asyncio.wait_for(self.process.stdout.readline(), STEP)
            out.append(line.decode().rstrip("\n"))
        return out


async def start_ts_server(
    node: str,
    transport: str,
    mtu: int | None = None,
    lease: int | None = None,
    resume: bool = False,
    url: str | None = None,
    env: dict[str, str] | None = None,
) -> TypeScriptServer:
    """``url``: where to listen instead of ``transport``://127.0.0.1:0; ``env``: more of its
    environment (``WIRESTREAM_TLS_CERT``, ``WIRESTREAM_TLS_KEY``)."""
    args = [node, str(SERVER), url or f"{transport}://127.0.0.1:0"]
    if mtu is not None or lease is not None:
        args.append(str(mtu) if mtu is not None else "-")
    if lease is not None:
        args.append(str(lease))
    process = await asyncio.create_subprocess_exec(
        *args,
        cwd=ROOT,
        env={**os.environ, "WIRESTREAM_SERVE_RESUME": "1" if resume else "0", **(env or {})},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    first = await asyncio.wait_for(process.stdout.readline(), STEP)
    found = re.match(r"listening on (\S+)", first.decode())
    if found is None:
        process.kill()
        await process.wait()
        raise AssertionError(f"server.js did not start: {first!r}")
    return TypeScriptServer(process, found.group(1))


async def stop(server: TypeScriptServer) -> str:
    """Close its stdin (it stops), wait; its stderr."""
    process = server.process
    assert process.stdin is not None
    process.stdin.close()
    try:
        _, err = await asyncio.wait_for(process.communicate(), STEP)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return err.decode()


async def with_ts_server(
    node: str,
    transport: str,
    body: Any,
    mtu: int | None = None,
    pushed: int = 0,
    lease: int | None = None,
) -> tuple[Any, list[str]]:
    """Run ``body(peer)`` with a Python client connected to a TypeScript server; its
    result and the ``pushed`` lines the server printed. ``lease``: the server grants
    leases of that many requests and the client asks for them."""
    server = await start_ts_server(node, transport, mtu, lease)
    try:
        async with await connect(server.url, mtu=mtu, lease=lease is not None) as peer:
            result = await body(peer)
            lines = await server.lines(pushed)
    finally:
        err = await stop(server)
    assert "Error" not in err, err
    return result, lines


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_against_ts_server(node: str, transport: str) -> None:
    """Every interaction model, with metadata, from the Python client."""

    async def body(peer: RSocketPeer) -> None:
        answer = await peer.request_response(b"hello", b"md")
        assert (answer.data, answer.metadata) == (b"hello", b"md")
        count = 0
        async for item in peer.request_stream(b"10000", limit_rate=32):
            assert item.data == b"%d" % count
            count += 1
        assert count == 10_000

        async def outbound() -> AsyncIterator[bytes]:
            for i in range(1, 200):
                yield b"c%d" % i

        echoed = [p.data async for p in peer.request_channel(b"c0", outbound=outbound())]
        assert echoed == [b"c%d" % i for i in range(200)]
        await peer.fire_and_forget(b"fnf-from-python")
        await peer.metadata_push(b"push-from-python")

    _, lines = run(with_ts_server(node, transport, body, pushed=2), 90)
    assert lines == ["fire-and-forget: fnf-from-python", "metadata-push: push-from-python"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_cancel_against_ts_server(node: str, transport: str) -> None:
    """The Python client cancels a million-item stream after 3; the TypeScript publisher
    stops (the connection then answers at once) and no stream is left."""

    async def body(peer: RSocketPeer) -> int:
        seen = 0
        async for _ in peer.request_stream(b"1000000", limit_rate=4):
            seen += 1
            if seen == 3:
                break
        answer = await peer.request_response(b"still-open")
        assert answer.data == b"still-open"
        return len(peer.engine.open_streams)

    left, _ = run(with_ts_server(node, transport, body))
    assert left == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_fragmentation_against_ts_server(node: str, transport: str) -> None:
    """MTU 64 on both sides: a 10 kB request with 1 kB of metadata, and a stream of them."""
    data = bytes(i % 251 for i in range(10_000))
    metadata = bytes((i * 7) % 256 for i in range(1_000))

    async def body(peer: RSocketPeer) -> None:
        answer = await peer.request_response(data, metadata)
        assert answer.data == data and answer.metadata == metadata
        echoed = [p async for p in peer.request_channel(data, metadata)]
        assert [(p.data, p.metadata) for p in echoed] == [(data, metadata)]

    run(with_ts_server(node, transport, body, mtu=64))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_application_error_from_ts_server(node: str, transport: str) -> None:
    async def body(peer: RSocketPeer) -> None:
        with pytest.raises(ApplicationError, match="decimal count"):
            async for _ in peer.request_stream(b"not a number"):
                pass

    run(with_ts_server(node, transport, body))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_lease_from_ts_server(node: str, transport: str) -> None:
    """The TypeScript server grants the Python client (SETUP with L) a LEASE of 2 requests:
    both are answered, the third is refused by the client (NoLease); the client's own
    LEASE to the server (the client-side responder's) is accepted."""

    async def body(peer: RSocketPeer) -> None:
        await peer.wait_for_lease()
        for i in range(2):
            assert (await peer.request_response(b"r%d" % i)).data == b"r%d" % i
        with pytest.raises(NoLease):
            await peer.request_response(b"one too many")

    run(with_ts_server(node, transport, body, lease=2))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_lease_setup_refused_without_leasing(node: str, transport: str) -> None:
    """'it MUST send a LEASE frame if the SETUP frame set the L flag': a server that grants
    none refuses such a SETUP with ERROR[UNSUPPORTED_SETUP] (as rsocket-java does)."""

    async def scenario() -> None:
        server = await start_ts_server(node, transport)
        try:
            peer = await connect(server.url, lease=True)
            with pytest.raises(SetupRejected) as refused:
                await peer.wait_for_lease()
            assert refused.value.error_code == 0x002
            await peer.close()
        finally:
            await stop(server)

    run(scenario())


def test_python_client_resumes_against_ts_server(node: str) -> None:
    """Resuming Operation, the TypeScript server's side: it keeps the Python client's
    session (``resume=True``) when a proxy cuts the connection twice in a 20,000-item
    stream, answers the client's RESUME with RESUME_OK, hands the session to the new
    connection and retransmits from the client's position: every item once and in order."""

    async def scenario() -> tuple[int, int]:
        server = await start_ts_server(node, "tcp", resume=True)
        try:
            proxy = await TcpProxy(int(server.url.rsplit(":", 1)[1])).start()
            try:
                async with await connect(f"tcp://127.0.0.1:{proxy.port}", resume=True) as peer:
                    count = 0
                    async for item in peer.request_stream(b"20000", limit_rate=256):
                        assert item.data == b"%d" % count
                        count += 1
                        if count in (2_000, 10_000):
                            assert proxy.cut() == 1
                    answer = await peer.request_response(b"after resuming")
                    assert answer.data == b"after resuming"
                return count, proxy.accepted
            finally:
                await proxy.close()
        finally:
            await stop(server)

    count, accepted = run(scenario(), 90)
    assert (count, accepted) == (20_000, 3)


# ---------------------------------------------------------------------------- metadata

METADATA_CODEC = ROOT / "tests" / "typescript" / "dist" / "rsocket" / "metadata_codec.js"


async def metadata_codec(node: str, *args: str) -> Any:
    process = await asyncio.create_subprocess_exec(
        node, str(METADATA_CODEC), *args, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), STEP)
    assert process.returncode == 0, err.decode()
    return json.loads(out)


def test_ts_composite_metadata_and_routing_bytes_match_python(node: str) -> None:
    """CompositeMetadata.md and Routing.md: the TypeScript encoders write the bytes Python's
    do (well-known ids as one byte with M set, other names as length-1 and US-ASCII, a
    reserved id kept, 24-bit lengths, 1-byte tag lengths)."""
    got = run(metadata_codec(node, "encode"))
    assert {k: got[k] for k in ("route", "route_two_tags", "encode_route", "composite")} == {
        "route": route("orders.get").hex(),
        "route_two_tags": route("a", "bé").hex(),
        "encode_route": encode_route("x", "y" * 255).hex(),
        "composite": encode_composite(
            [
                ("application/json", b"{}"),
                ("text/x-custom", b"abc"),
                (0x7A, b""),
                (ROUTING, encode_route("r")),
            ]
        ).hex(),
    }


def test_ts_decodes_python_composite_metadata(node: str) -> None:
    """Composite metadata Python wrote, read back by TypeScript: entries in order, a
    reserved well-known id kept ("it can be safely skipped"), routes found; truncated
    bytes are a MetadataTruncated (a MalformedMetadata, a DecodeError)."""
    data = encode_composite(
        [(ROUTING, encode_route("one", "two")), (0x29, b"\x01"), ("a/b", b"zz")]
    )
    got = run(metadata_codec(node, "decode", data.hex()))
    assert got == {
        "entries": [
            [ROUTING, encode_route("one", "two").hex(), None],
            ["unknown/41", "01", 0x29],
            ["a/b", b"zz".hex(), None],
        ],
        "routes": ["one", "two"],
    }
    assert run(metadata_codec(node, "decode", data[:-1].hex())) == {"error": "MetadataTruncated"}


def test_ts_auth_and_mime_metadata_bytes_match_python(node: str) -> None:
    """Security/Simple.md, Bearer.md, WellKnownAuthTypes.md and
    PerStreamDataMimeTypesDefinition.md: the TypeScript encoders write Python's bytes (A/M
    flag and id for well-known types, length-1 and name for others, the 16-bit username
    length, UTF-8 credentials)."""
    got = run(metadata_codec(node, "encode"))
    assert {k: v for k, v in got.items() if "auth" in k or "mime" in k} == {
        "simple_auth": encode_simple_auth("alice", "pässwörd").hex(),
        "bearer_auth": encode_bearer_auth("tøken.😀").hex(),
        "custom_auth": encode_auth("x-hmac", b"\x01\x02\xff").hex(),
        "reserved_auth": encode_auth(5, b"\x09").hex(),
        "data_mime": encode_data_mime_type("application/json").hex(),
        "data_mime_custom": encode_data_mime_type("application/x.custom+cbor").hex(),
        "accept_mimes": encode_accept_mime_types(["text/plain", "x/y", 0x50]).hex(),
    }


def test_ts_decodes_python_auth_and_mime_metadata(node: str) -> None:
    """What Python's encoders wrote, TypeScript reads to the same values; bytes that break
    an extension's layout are the same MalformedMetadata leaf on both sides."""

    def ts(mode: str, data: bytes) -> Any:
        return run(metadata_codec(node, mode, data.hex()))

    assert ts("auth", encode_simple_auth("bob", "pw")) == {
        "kind": "simple", "username": "bob", "password": "pw",
    }  # fmt: skip
    assert ts("auth", encode_bearer_auth("jwt.x.y")) == {"kind": "bearer", "token": "jwt.x.y"}
    assert ts("auth", encode_auth("x-hmac", b"\x00\x01")) == {
        "kind": "unknown", "authType": "x-hmac", "payload": "0001", "reservedId": None,
    }  # fmt: skip
    assert ts("auth", encode_auth(9, b"")) == {
        "kind": "unknown", "authType": "unknown/9", "payload": "", "reservedId": 9,
    }  # fmt: skip
    assert ts("mime", encode_data_mime_type("text/x-custom")) == {"value": "text/x-custom"}
    accepted = encode_accept_mime_types(["application/json", 0x60, "a/b"])
    assert ts("accept", accepted) == {"value": ["application/json", "unknown/96", "a/b"]}
    for mode, data, decoder in (
        ("auth", b"\x80\x00\x05abc", decode_auth),  # username past the end
        ("auth", b"\x80\x00\x01u\xff", decode_auth),  # password not UTF-8
        ("auth", b"\x00\xff", decode_auth),  # type name not US-ASCII
        ("mime", b"\x85\x85", decode_data_mime_type),  # one MIME type, then more bytes
        ("accept", b"\x85\x09ab", decode_accept_mime_types),  # name past the end
    ):
        with pytest.raises(Exception) as python_error:
            decoder(data)
        assert ts(mode, data) == {"error": type(python_error.value).__name__}, data


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_client_auth_and_mime_metadata_reach_python_router(node: str, transport: str) -> None:
    """Authentication.md and PerStreamDataMimeTypesDefinition.md end to end: the TypeScript
    client's composite metadata (a route, simple credentials, the data MIME type and the
    accepted ones) is read by a Python Router's handler with Python's decoders."""
    router = Router()

    @router.response("whoami")
    async def whoami(payload: RSocketPayload) -> bytes:
        entries = {e.mime_type: e.content for e in decode_composite(payload.metadata or b"")}
        auth = decode_auth(entries[AUTHENTICATION])
        assert isinstance(auth, SimpleAuth)
        accepted = decode_accept_mime_types(entries["message/x.rsocket.accept-mime-types.v0"])
        data_mime = decode_data_mime_type(entries[DATA_MIME_TYPE])
        return f"{auth.username}:{auth.password}:{data_mime}:{','.join(accepted)}".encode()

    async def scenario() -> Any:
        server = await serve(f"{transport}://127.0.0.1:0", router)
        try:
            return await ts_client(node, server.url, "auth_metadata")
        finally:
            server.close()

    answer = run(scenario())["answer"]
    assert answer == "alice:s3cret:application/json:text/plain,application/x.custom"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_client_routes_to_python_router(node: str, transport: str) -> None:
    """Routing.md end to end: the TypeScript client's composite metadata (MIME type
    COMPOSITE_METADATA in its SETUP) reaches the Python Router's route; an unknown route
    is an APPLICATION_ERROR "no route"."""
    router = Router()

    @router.response("shout")
    async def shout(payload: RSocketPayload) -> bytes:
        return payload.data.upper() + b"!"

    async def scenario() -> Any:
        server = await serve(f"{transport}://127.0.0.1:0", router)
        try:
            return await ts_client(node, server.url, "routing")
        finally:
            server.close()
            await server.wait_closed()

    result = run(scenario())
    assert result["answer"] == "HELLO!"
    assert "no route" in result["unrouted"]


def test_python_client_cancels_an_unbounded_stream_of_the_ts_server(node: str) -> None:
    """Request-n 2^31-1 ("unbounded") on a stream of 100 million: the TypeScript publisher
    never waits for credit, yet it lets the transport read between batches, so the
    client's CANCEL after 1,000 items stops it and the connection answers at once."""

    async def body(peer: RSocketPeer) -> None:
        seen = 0
        async for _ in peer.request_stream(b"100000000", limit_rate=2**31 - 1):
            seen += 1
            if seen == 1_000:
                break
        answer = await asyncio.wait_for(peer.request_response(b"still-open"), 10)
        assert answer.data == b"still-open"

    run(with_ts_server(node, "tcp", body), 60)


# ---------------------------------------------------------------------------- TLS, Unix


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for 127.0.0.1, shared by the TLS tests."""
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.mark.parametrize("transport", SOCKET_TRANSPORTS)
def test_ts_client_over_tls_and_unix_sockets(
    node: str, transport: str, certificate: tuple[Path, Path]
) -> None:
    """The Node transports beyond TCP and WebSocket, against the Python server: TLS (the
    client verifies the server's certificate against the CA it is given, by name) and a
    Unix domain socket; a request-response and a 10,000-item stream under request-n."""
    cert, key = certificate
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ssl.load_cert_chain(cert, key)

    async def scenario() -> tuple[Any, Any]:
        with tempfile.TemporaryDirectory() as folder:
            url = f"unix://{folder}/rsocket.sock" if transport == "unix" else "tls://127.0.0.1:0"
            server = await serve(
                url, EchoResponder(), ssl=server_ssl if transport == "tls" else None
            )
            env = {"WIRESTREAM_TLS_CA": str(cert)}
            try:
                answer = await ts_client(node, server.url, "request_response", env=env)
                stream = await ts_client(node, server.url, "request_stream_backpressure", env=env)
            finally:
                server.close()
                await server.wait_closed()
            return answer, stream

    answer, stream = run(scenario(), 120)
    assert answer == {"data": "hello", "metadata": b"md-1".hex()}
    assert (stream["count"], stream["inOrder"]) == (10_000, True)


def test_ts_client_refuses_a_tls_server_it_does_not_trust(node: str, tmp_path: Path) -> None:
    """tls:// verifies by default: a server whose certificate is not from the CA the client
    was given is refused (ConnectionLost naming the certificate problem), no SETUP sent."""
    (tmp_path / "server").mkdir()
    (tmp_path / "other").mkdir()
    cert, key = self_signed_certificate(tmp_path / "server")
    other, _ = self_signed_certificate(tmp_path / "other")
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ssl.load_cert_chain(cert, key)

    async def scenario() -> tuple[int | None, bytes]:
        server = await serve("tls://127.0.0.1:0", EchoResponder(), ssl=server_ssl)
        try:
            process = await asyncio.create_subprocess_exec(
                *client_args(node, server.url, "request_response", None, False),
                cwd=ROOT,
                env={**client_env(False), "WIRESTREAM_TLS_CA": str(other)},
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(process.communicate(), STEP)
            return process.returncode, err
        finally:
            server.close()
            await server.wait_closed()

    code, err = run(scenario(), 90)
    assert code == 1
    assert b"ConnectionLost" in err and b"certificate" in err


@pytest.mark.parametrize("transport", SOCKET_TRANSPORTS)
def test_python_client_against_ts_server_over_tls_and_unix_sockets(
    node: str, transport: str, certificate: tuple[Path, Path]
) -> None:
    """The TypeScript server on TLS (its certificate from the PEM files it is given) and on
    a Unix domain socket (the socket file gone once it stops), the Python client on it."""
    cert, key = certificate
    client_ssl = ssl.create_default_context(cafile=str(cert))

    async def scenario() -> tuple[bytes, int, bool]:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "rsocket.sock"
            server = await start_ts_server(
                node,
                transport,
                url=f"unix://{path}" if transport == "unix" else None,
                env={"WIRESTREAM_TLS_CERT": str(cert), "WIRESTREAM_TLS_KEY": str(key)},
            )
            try:
                ssl_context = client_ssl if transport == "tls" else None
                async with await connect(server.url, ssl=ssl_context) as peer:
                    answer = await peer.request_response(b"hello")
                    count = 0
                    async for item in peer.request_stream(b"10000", limit_rate=32):
                        assert item.data == b"%d" % count
                        count += 1
            finally:
                err = await stop(server)
            assert "Error" not in err, err
            return answer.data, count, path.exists()

    data, count, left = run(scenario(), 120)
    assert (data, count) == (b"hello", 10_000)
    assert not left


# ---------------------------------------------------------------------------- EXT


class ExtResponder(EchoResponder):
    """The demo responder that also takes EXT frames of extended type 0x100."""

    extensions = frozenset({0x100})

    def __init__(self) -> None:
        super().__init__()
        self.exts: list[tuple[int, RSocketPayload, int]] = []
        self.ext_arrived = asyncio.Event()

    async def on_ext(self, extended_type: int, payload: RSocketPayload, stream_id: int) -> None:
        self.exts.append((extended_type, payload, stream_id))
        self.ext_arrived.set()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_client_ext_both_ways(node: str, transport: str) -> None:
    """EXT (Extension Frame): the TypeScript client declares the types its onExt takes
    (connect's handler.extensions) and sends one with the I flag clear, which the Python
    server takes because it declared it; the server's EXT of the client's type reaches the
    client's onExt with its data, metadata and stream id."""

    async def scenario() -> tuple[Any, ExtResponder]:
        responder = ExtResponder()
        server = await serve(f"{transport}://127.0.0.1:0", responder)
        try:
            client = asyncio.create_task(ts_client(node, server.url, "ext"))
            await asyncio.wait_for(responder.ext_arrived.wait(), STEP)
            (peer,) = server.peers
            await peer.send_ext(0x101, b"ext-from-python", b"pm", ignore=False)
            result = await client
        finally:
            server.close()
            await server.wait_closed()
        return result, responder

    result, responder = run(scenario(), 90)
    [(extended_type, payload, stream_id)] = responder.exts
    assert (extended_type, payload.data, payload.metadata, stream_id) == (
        0x100,
        b"ext-from-typescript",
        b"m",
        0,
    )
    assert result["answer"] == "after-ext"
    assert result["got"] == [
        {"type": 0x101, "data": "ext-from-python", "metadata": b"pm".hex(), "stream": 0}
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_client_ext_to_ts_server(node: str, transport: str) -> None:
    """The TypeScript server's handler declares EXT 0x100 (serve takes a handler object's
    extensions): the Python client's EXT with the I flag clear reaches its onExt, and the
    connection goes on."""

    async def body(peer: RSocketPeer) -> bytes:
        await peer.send_ext(0x100, b"ext-from-python", ignore=False)
        answer = await peer.request_response(b"after-ext")
        return answer.data

    data, lines = run(with_ts_server(node, transport, body, pushed=1), 90)
    assert data == b"after-ext"
    assert lines == ["ext: 0x100 ext-from-python stream 0"]
