"""The TypeScript runtime's frame capture (``CaptureWriter`` of ``@wirestream/rsocket/node``)
against Python's, on one connection between the two runtimes: each side records what it
sent and received, and Python's capture reader reads the TypeScript files as its own
(format version 1, ``wirestream.runtime.capture.format``): what one side sent is, frame for
frame and byte for byte, what the other received, with the sides and directions of the
format's flags, and every frame decodes.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.support.aio_support import run
from tests.support.typescript_support import ROOT
from tests.typescript.test_rsocket_interop import (
    STEP,
    TRANSPORTS,
    start_ts_server,
    stop,
    ts_client,
)
from wirestream.apps.demo_responder import EchoResponder
from wirestream.generated.rsocket import v1_0 as codec
from wirestream.runtime.capture import CaptureWriter, capture_files
from wirestream.runtime.capture.reader import iter_records
from wirestream.runtime.rsocket import connect, serve

WRITER = ROOT / "tests" / "typescript" / "dist" / "rsocket" / "capture_writer.js"


def records(base: Path) -> list[tuple[str, str, int, bytes, int]]:
    """(side, direction, connection, frame, timestamp) of every record of the capture
    files named ``base``, in order."""
    return [
        (r.side, r.direction, r.connection_id, r.frame, r.timestamp_ns)
        for path in capture_files(base)
        for r in iter_records(path)
    ]


def frames(recorded: list[tuple[str, str, int, bytes, int]], direction: str) -> list[bytes]:
    return [frame for _, way, _, frame, _ in recorded if way == direction]


def check_mirrored(ours: Path, theirs: Path, our_side: str, their_side: str) -> int:
    """The two captures of one connection agree; the frames recorded."""
    mine, peer = records(ours), records(theirs)
    assert mine and peer
    assert {side for side, *_ in mine} == {our_side}
    assert {side for side, *_ in peer} == {their_side}
    assert len({connection for _, _, connection, _, _ in mine}) == 1
    assert frames(mine, "out") == frames(peer, "in")
    assert frames(mine, "in") == frames(peer, "out")
    for frame in frames(mine, "out") + frames(mine, "in"):
        codec.decode(frame)  # every record holds exactly one frame the codec takes
    now = time.time_ns()
    assert all(now - 600 * 10**9 < stamp <= now for *_, stamp in mine + peer)
    return len(mine)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_client_capture_mirrors_the_python_servers(
    node: str, transport: str, tmp_path: Path
) -> None:
    """A stream of 10,000 items under request-n: the TypeScript client's capture (client
    side) holds the frames the Python server's capture (server side) holds, directions
    swapped."""

    async def scenario() -> object:
        with CaptureWriter(tmp_path / "py.wscap", "rsocket/1.0") as capture:
            server = await serve(f"{transport}://127.0.0.1:0", EchoResponder(), capture=capture)
            try:
                env = {"WIRESTREAM_CAPTURE": str(tmp_path / "ts.wscap")}
                return await ts_client(node, server.url, "request_stream_backpressure", env=env)
            finally:
                server.close()
                await server.wait_closed()

    result = run(scenario())
    assert isinstance(result, dict) and result["count"] == 10_000
    recorded = check_mirrored(tmp_path / "ts.wscap", tmp_path / "py.wscap", "client", "server")
    assert recorded > 10_000  # the items, REQUEST_Ns, SETUP, the request and the close


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ts_server_capture_mirrors_the_python_clients(
    node: str, transport: str, tmp_path: Path
) -> None:
    """Every interaction model from the Python client: the TypeScript server's capture
    (server side) holds the frames the Python client's capture (client side) holds."""

    async def scenario() -> None:
        env = {"WIRESTREAM_CAPTURE": str(tmp_path / "ts.wscap")}
        server = await start_ts_server(node, transport, env=env)
        try:
            with CaptureWriter(tmp_path / "py.wscap", "rsocket/1.0") as capture:
                async with await connect(server.url, capture=capture) as peer:
                    assert (await peer.request_response(b"hi", b"md")).data == b"hi"
                    items = [item.data async for item in peer.request_stream(b"100")]
                    assert len(items) == 100
                    await peer.fire_and_forget(b"fnf")
                    await peer.metadata_push(b"push")
                    await server.lines(2)  # both arrived: the server printed them
        finally:
            err = await stop(server)
        assert "Error" not in err, err

    run(scenario())
    check_mirrored(tmp_path / "ts.wscap", tmp_path / "py.wscap", "server", "client")


def test_ts_capture_rotates_into_numbered_files_the_python_reader_reads_in_order(
    node: str, tmp_path: Path
) -> None:
    """maxFileBytes: the TypeScript writer's files are `<stem>.000000.wscap`, ... (the
    Python writer's names), each a whole capture with its own header, and read in order
    they are the connection's frames."""

    async def scenario() -> bytes:
        process = await asyncio.create_subprocess_exec(
            node, str(WRITER), str(tmp_path / "caps" / "rot.wscap"), "1000", cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), STEP)
        assert process.returncode == 0, err.decode()
        return out

    files = int(run(scenario()))
    paths = capture_files(tmp_path / "caps" / "rot.wscap")
    assert len(paths) == files > 1
    assert [p.name for p in paths] == [f"rot.{n:06d}.wscap" for n in range(files)]
    assert all(p.stat().st_size <= 1000 for p in paths)
    got = records(tmp_path / "caps" / "rot.wscap")
    assert [frame for *_, frame, _ in got] == [f"frame {i}".encode() for i in range(50)]
    assert [way for _, way, *_ in got] == ["out" if i % 2 else "in" for i in range(50)]
    assert [stamp for *_, stamp in got] == [1_700_000_000_000_000_000 + i for i in range(50)]
    assert {side for side, *_ in got} == {"server"}
