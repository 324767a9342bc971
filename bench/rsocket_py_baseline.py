"""RSocket throughput baseline: rsocket-py 0.4.20's client against any RSocket server.

Run: ``python -m bench.rsocket_py_baseline`` -- rsocket-py client against rsocket-py server
(the baseline), over loopback TCP. ``python -m bench.rsocket_py_baseline URL`` points the
rsocket-py client at another server (``tcp://host:port`` or ``ws://host:port/path``),
ours for instance. The functions are the building blocks for the side-by-side runs:

* ``await bench_py_request_stream(url, n_items, payload_size=100, limit_rate=256)`` ->
  msgs/s: one request-stream of ``n_items`` payloads, from REQUEST_STREAM to the last
  payload. The client is rsocket-py's ``AwaitableRSocket.request_stream`` (its
  ``CollectorSubscriber``: initial REQUEST_N = limit_rate, then REQUEST_N(limit_rate) each
  time limit_rate payloads arrived; ``limit_rate=MAX_REQUEST_N`` asks for everything at
  once). Every payload's size is checked.
* ``await bench_py_request_response(url, n_requests, concurrency=1, payload_size=100)`` ->
  req/s: ``concurrency`` tasks each awaiting ``client.request_response`` in a loop (so
  exactly ``concurrency`` requests are in flight); 1 = sequential round trips. Each
  response must echo the request's data.
* ``await start_py_bench_server(stream_publisher="direct" | "generator")`` -> a minimal
  rsocket-py server (``.url``, ``await .close()``).

The contract a server must meet to be benchmarked (rsocket-py's and ours alike):
request-stream data is the ASCII decimal count N; the server sends N payloads of 100 data
bytes (no metadata), the last one with COMPLETE. Request-response echoes the data.

Server publishers: ``"direct"`` (default) is a hand-written reactive-streams Publisher
that emits synchronously inside ``request(n)`` -- the fastest way to feed rsocket-py's
sender; ``"generator"`` is rsocket-py's own ``StreamFromGenerator`` helper (what its
examples use), which spends one event-loop turn per payload and runs at about half the
rate. Both are printed.

Timing: ``time.perf_counter``, best of REPEATS runs per figure, each on a fresh connection
after a warm-up; garbage collector left on (these are end-to-end asyncio figures). Absolute
figures are noisy on a shared machine: compare ratios from one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import websockets
from rsocket.awaitable.awaitable_rsocket import AwaitableRSocket
from rsocket.exceptions import RSocketTransportError
from rsocket.frame import MAX_REQUEST_N
from rsocket.helpers import DefaultPublisherSubscription, create_future, single_transport_provider
from rsocket.payload import Payload
from rsocket.request_handler import BaseRequestHandler
from rsocket.rsocket_client import RSocketClient
from rsocket.rsocket_server import RSocketServer
from rsocket.streams.stream_from_generator import StreamFromGenerator
from rsocket.transports.tcp import TransportTCP
from rsocket.transports.websockets_transport import WebsocketsTransport

__all__ = [
    "PyBenchServer",
    "bench_py_request_response",
    "bench_py_request_stream",
    "main",
    "start_py_bench_server",
]

REPEATS = 3
PAYLOAD_SIZE = 100
N_ITEMS = 20_000  # request-stream payloads per run (~1 s for rsocket-py)
N_SEQUENTIAL = 4_000  # request-response round trips per sequential run (~0.7 s)
N_CONCURRENT = 16_000  # request-response requests per concurrent run (~1.3 s)
CONCURRENCY = 64
STREAM_LIMIT_RATE = 256

# rsocket-py logs (logger "pyrsocket") a harmless error while it closes a connection.
logging.getLogger("pyrsocket").setLevel(logging.CRITICAL)


# --------------------------------------------------------------------------------------
# rsocket-py server
# --------------------------------------------------------------------------------------


class _DirectStream(DefaultPublisherSubscription):  # type: ignore[misc]
    """N payloads of one shared ``data``, emitted synchronously under demand."""

    def __init__(self, count: int, data: bytes) -> None:
        self._left = count
        self._data = data

    def request(self, n: int) -> None:
        for _ in range(min(n, self._left)):
            self._left -= 1
            self._subscriber.on_next(Payload(self._data), self._left == 0)

    def cancel(self) -> None:
        self._left = 0


class _BenchHandler(BaseRequestHandler):  # type: ignore[misc]
    def __init__(self, stream_publisher: str, payload_size: int) -> None:
        super().__init__()
        self._generator = stream_publisher == "generator"
        self._data = b"x" * payload_size

    async def request_response(self, payload: Payload) -> Any:
        return create_future(Payload(payload.data))

    async def request_stream(self, payload: Payload) -> Any:
        count = int(bytes(payload.data))
        data = self._data
        if not self._generator:
            return _DirectStream(count, data)

        def payloads() -> Any:
            for i in range(count):
                yield Payload(data), i == count - 1

        return StreamFromGenerator(payloads)


@dataclass
class PyBenchServer:
    url: str
    _listener: asyncio.Server
    _rsockets: list[Any]

    async def close(self) -> None:
        for rsocket in self._rsockets:
            await rsocket.close()
        self._listener.close()
        await self._listener.wait_closed()


async def start_py_bench_server(
    *, stream_publisher: str = "direct", payload_size: int = PAYLOAD_SIZE
) -> PyBenchServer:
    """A minimal rsocket-py server on 127.0.0.1 (TCP, port 0) meeting the bench contract."""
    if stream_publisher not in ("direct", "generator"):
        raise ValueError(f"stream_publisher is 'direct' or 'generator', not {stream_publisher!r}")
    rsockets: list[Any] = []

    def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        rsockets.append(
            RSocketServer(
                TransportTCP(reader, writer),
                handler_factory=lambda: _BenchHandler(stream_publisher, payload_size),
            )
        )

    listener = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    return PyBenchServer(f"tcp://127.0.0.1:{port}", listener, rsockets)


# --------------------------------------------------------------------------------------
# rsocket-py client
# --------------------------------------------------------------------------------------


async def _pump_websocket(ws_transport: Any, websocket: Any) -> None:
    """rsocket-py's WebsocketsTransport reader and writer over a ``websockets`` connection."""
    reader = asyncio.create_task(ws_transport.consumer_handler(websocket))
    writer = asyncio.create_task(ws_transport.producer_handler(websocket))
    try:
        await asyncio.wait([reader, writer], return_when=asyncio.FIRST_COMPLETED)
    finally:
        reader.cancel()
        writer.cancel()
        await asyncio.gather(reader, writer, return_exceptions=True)
        ws_transport._incoming_frame_queue.put_nowait(RSocketTransportError())


@contextlib.asynccontextmanager
async def _py_client(url: str) -> AsyncIterator[Any]:
    """A plain rsocket-py ``RSocketClient`` (default options) connected to ``url``."""
    parts = urlsplit(url)
    if parts.scheme == "tcp":
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            async with RSocketClient(
                single_transport_provider(TransportTCP(reader, writer))
            ) as client:
                yield client
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
    elif parts.scheme == "ws":
        async with websockets.connect(url) as websocket:
            ws_transport = WebsocketsTransport()
            pump = asyncio.create_task(_pump_websocket(ws_transport, websocket))
            try:
                async with RSocketClient(single_transport_provider(ws_transport)) as client:
                    yield client
            finally:
                await websocket.close()
                await pump
    else:
        raise ValueError(f"the rsocket-py bench client speaks tcp:// and ws://, not {url!r}")


async def _stream_once(client: Any, n_items: int, payload_size: int, limit_rate: int) -> float:
    """Seconds for one request-stream of ``n_items``; checks count and sizes."""
    started = time.perf_counter()
    items = await AwaitableRSocket(client).request_stream(
        Payload(str(n_items).encode()), limit_rate=limit_rate
    )
    elapsed = time.perf_counter() - started
    if len(items) != n_items or any(len(item.data) != payload_size for item in items):
        sizes = sorted({len(item.data) for item in items})
        raise AssertionError(f"expected {n_items} x {payload_size} B, got {len(items)} {sizes}")
    return elapsed


async def bench_py_request_stream(
    url: str,
    n_items: int = N_ITEMS,
    *,
    payload_size: int = PAYLOAD_SIZE,
    limit_rate: int = STREAM_LIMIT_RATE,
    repeats: int = REPEATS,
) -> float:
    """Best msgs/s of ``repeats`` request-streams of ``n_items`` (rsocket-py client)."""
    best = float("inf")
    for _ in range(repeats):
        async with _py_client(url) as client:
            await _stream_once(client, min(1_000, n_items), payload_size, limit_rate)  # warm-up
            best = min(best, await _stream_once(client, n_items, payload_size, limit_rate))
    return n_items / best


async def _request_response_once(
    client: Any, n_requests: int, concurrency: int, payload_size: int
) -> float:
    """Seconds for ``n_requests`` request-responses, ``concurrency`` in flight."""
    data = b"r" * payload_size
    per_task, extra = divmod(n_requests, concurrency)

    async def worker(count: int) -> None:
        for _ in range(count):
            response = await client.request_response(Payload(data))
            if response.data != data:
                raise AssertionError(f"response does not echo the data: {response.data[:20]!r}")

    started = time.perf_counter()
    await asyncio.gather(*(worker(per_task + (i < extra)) for i in range(concurrency)))
    return time.perf_counter() - started


async def bench_py_request_response(
    url: str,
    n_requests: int = N_SEQUENTIAL,
    *,
    concurrency: int = 1,
    payload_size: int = PAYLOAD_SIZE,
    repeats: int = REPEATS,
) -> float:
    """Best req/s of ``repeats`` runs of ``n_requests`` echoes, ``concurrency`` in flight."""
    best = float("inf")
    for _ in range(repeats):
        async with _py_client(url) as client:
            await _request_response_once(client, min(200, n_requests), concurrency, payload_size)
            best = min(
                best,
                await _request_response_once(client, n_requests, concurrency, payload_size),
            )
    return n_requests / best


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


@dataclass
class Figure:
    name: str
    rate: float
    unit: str
    seconds: float  # wall time spent measuring this figure


async def _measure(
    name: str, unit: str, measure: Callable[[], Awaitable[float]], figures: list[Figure]
) -> None:
    started = time.perf_counter()
    rate = await measure()
    figures.append(Figure(name, rate, unit, time.perf_counter() - started))
    print(f"  {name:<66} {rate:>10,.0f} {unit:<6} ({figures[-1].seconds:4.1f} s)", flush=True)


async def run_all(url: str | None) -> list[Figure]:
    """The baseline figures: against ``url``, or rsocket-py's own servers when None."""
    figures: list[Figure] = []
    servers: dict[str, PyBenchServer] = {}
    try:
        if url is None:
            for publisher in ("direct", "generator"):
                servers[publisher] = await start_py_bench_server(stream_publisher=publisher)
        target = url or servers["direct"].url
        where = url or "rsocket-py server"
        print(f"rsocket-py {PAYLOAD_SIZE}-byte payloads, client -> {where}, best of {REPEATS}")
        await _measure(
            f"request-stream {N_ITEMS:,} items, limit_rate {STREAM_LIMIT_RATE}",
            "msg/s",
            lambda: bench_py_request_stream(target, N_ITEMS, limit_rate=STREAM_LIMIT_RATE),
            figures,
        )
        await _measure(
            f"request-stream {N_ITEMS:,} items, request_n MAX (2^31-1)",
            "msg/s",
            lambda: bench_py_request_stream(target, N_ITEMS, limit_rate=MAX_REQUEST_N),
            figures,
        )
        if url is None:
            generator_url = servers["generator"].url
            await _measure(
                f"request-stream {N_ITEMS:,} items, limit_rate {STREAM_LIMIT_RATE}, "
                "StreamFromGenerator",
                "msg/s",
                lambda: bench_py_request_stream(
                    generator_url, N_ITEMS, limit_rate=STREAM_LIMIT_RATE
                ),
                figures,
            )
        await _measure(
            f"request-response {N_SEQUENTIAL:,}, sequential (1 in flight)",
            "req/s",
            lambda: bench_py_request_response(target, N_SEQUENTIAL, concurrency=1),
            figures,
        )
        await _measure(
            f"request-response {N_CONCURRENT:,}, {CONCURRENCY} in flight",
            "req/s",
            lambda: bench_py_request_response(target, N_CONCURRENT, concurrency=CONCURRENCY),
            figures,
        )
    finally:
        for server in servers.values():
            await server.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python -m bench.rsocket_py_baseline [tcp://host:port | ws://host:port/path]")
        return 2
    started = time.perf_counter()
    print(f"rsocket-py baseline -- Python {sys.version.split()[0]}, loopback, higher is better")
    asyncio.run(run_all(args[0] if args else None))
    print(f"  total time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
