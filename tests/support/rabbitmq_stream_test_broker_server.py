"""The scripted ``TestBroker`` served over TCP on 127.0.0.1, recording what clients send.

    async with TestBrokerServer(version="3.13.0") as server:
        ...connect any client (ours, the Java client) to server.uri...
        server.connections            # one ServedConnection per accepted socket
        server.client_frames(StreamStatsRequest)  # [(frame, raw bytes)] of that type

Every accepted connection gets its own ``TestBroker`` (the server role of the generated
machines); all of them share one ``BrokerState`` (streams, offsets, single-active-consumer
groups), and each advertises the server's own address (OpenResponse
advertised_host/port, Metadata), so a client that connects to a stream's leader (the
Java client's producers and consumers) comes back here. After every read, each
connection's broker delivers what it can (a publish on one connection feeds a
subscription on another) and its bytes are written. Each frame a client sent is kept
as the exact bytes it arrived as (size prefix included) next to its decoded form: the
byte-for-byte comparisons of tests/rabbitmq_stream/test_rabbitmq_stream_features_java.py use those.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, TypeVar

from wirestream.generated.rabbitmq_stream.v1 import Frame, StreamDecoder
from tests.support.rabbitmq_stream_test_broker import BrokerState, TestBroker

__all__ = ["TestBrokerServer", "ServedConnection"]

F = TypeVar("F", bound=Frame)
HOST = "127.0.0.1"
_MAX_FRAME = 16 * 1024 * 1024


@dataclass
class ServedConnection:
    broker: TestBroker
    writer: asyncio.StreamWriter
    raw: list[bytes] = field(default_factory=list)  # each client frame, size prefix included
    closed: bool = False

    def frames(self) -> list[tuple[Any, bytes]]:
        """(decoded frame, exact bytes) of everything the client sent, in order."""
        return list(zip(self.broker.frames, self.raw))


class TestBrokerServer:
    __test__ = False  # not a pytest class

    def __init__(self, *, version: str = "3.13.0", streams: tuple[str, ...] = ()) -> None:
        self.version = version
        self.state = BrokerState()
        self.connections: list[ServedConnection] = []
        self.errors: list[BaseException] = []  # what a broker raised (the connection is dropped)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._streams = streams

    @property
    def uri(self) -> str:
        return f"rabbitmq-stream://guest:guest@{HOST}:{self.port}/%2f"

    async def __aenter__(self) -> TestBrokerServer:
        self._server = await asyncio.start_server(self._accept, HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        for name in self._streams:
            TestBroker(state=self.state).add_stream(name)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for connection in self.connections:
            connection.writer.close()  # the reading task sees the end and finishes
        tasks = list(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=5.0)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()

    def client_frames(self, kind: type[F]) -> list[tuple[F, bytes]]:
        """Every frame of type ``kind`` any client sent, with its exact bytes."""
        return [
            (frame, raw)
            for connection in self.connections
            for frame, raw in connection.frames()
            if type(frame) is kind
        ]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        broker = TestBroker(version=self.version, state=self.state,
                            advertised_host=HOST, advertised_port=self.port)  # fmt: skip
        connection = ServedConnection(broker, writer)
        self.connections.append(connection)
        pending = b""
        try:
            while data := await reader.read(65536):
                pending += data
                while len(pending) >= 4:
                    size = int.from_bytes(pending[:4], "big")
                    if size > _MAX_FRAME or len(pending) < 4 + size:
                        break
                    connection.raw.append(pending[: 4 + size])
                    pending = pending[4 + size :]
                broker.receive_data(data)
                self._flush()
        except (ConnectionError, OSError):
            pass
        except Exception as error:  # a client broke the broker's tables: recorded, dropped
            self.errors.append(error)
        finally:
            connection.closed = True
            broker.connection_lost()
            self._flush()
            writer.close()
            self._tasks.discard(task)

    def _flush(self) -> None:
        """Deliver on every connection (state is shared), then write what each queued."""
        for connection in self.connections:
            if connection.closed:
                continue
            if connection.broker.connection.state.name == "OPEN":
                connection.broker.deliver_all()
            out = connection.broker.data_to_send()
            if out:
                connection.writer.write(out)


def decode_client_frame(raw: bytes) -> Frame:
    """One frame a client sent, decoded (for tests that build expectations)."""
    (frame,) = StreamDecoder(sender="client").feed(raw)
    return frame
