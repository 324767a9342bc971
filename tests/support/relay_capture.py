"""A recording TCP relay for the Wireshark oracle tests (tests/wireshark/test_wireshark_families.py).

``Relay(port)`` listens on 127.0.0.1 (a port of its own) and forwards each connection it
accepts to 127.0.0.1:``port``; every chunk it forwards, either way, becomes a
``CaptureRecord`` (recorded before it is forwarded, so an answer is never recorded before
what it answers).  ``write(path)`` writes them with the capture pcap writer, as TCP
connections to the server's port, for tshark.  Sync sockets and threads: the reference
clients (paho-mqtt, pg8000, PyMySQL) are synchronous.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from types import TracebackType

from wirestream.runtime.capture.pcap import PcapngWriter
from wirestream.runtime.capture.protocols import CaptureProtocol
from wirestream.runtime.capture.reader import CaptureRecord

__all__ = ["Relay"]

T0 = 1_700_000_000 * 10**9
CHUNK = 65536
TIMEOUT = 10.0


class Relay:
    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.records: list[CaptureRecord] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._connections = 0
        self._listener = socket.create_server((host, 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target, timeout=TIMEOUT)
            with self._lock:
                self._connections += 1
                number = self._connections
                self._sockets += [client, server]
            for src, dst, direction in ((client, server, "out"), (server, client, "in")):
                pipe = threading.Thread(target=self._pipe, args=(src, dst, number, direction),
                                        daemon=True)  # fmt: skip
                pipe.start()
                self._threads.append(pipe)

    def _pipe(self, src: socket.socket, dst: socket.socket, number: int, direction: str) -> None:
        while True:
            try:
                data = src.recv(CHUNK)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            with self._lock:
                at = T0 + len(self.records) * 1000
                self.records.append(CaptureRecord(at, number, direction, data, "client"))  # type: ignore[arg-type]
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        """Stop accepting, wait for open connections to end (both sides closed), then close
        what is left."""
        self._closed = True
        self._listener.close()
        for thread in self._threads[1:]:
            thread.join(TIMEOUT)
        for sock in self._sockets:
            sock.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()

    def streams(self) -> dict[tuple[int, str], bytes]:
        """(connection, sender) -> the bytes it sent."""
        out: dict[tuple[int, str], bytes] = {}
        for record in self.records:
            key = (record.connection_id, record.sender)
            out[key] = out.get(key, b"") + record.frame
        return out

    def write(self, path: Path, protocol: CaptureProtocol, server_port: int,
              mss: int = 1460) -> None:  # fmt: skip
        """The records as TCP connections to ``server_port``, in segments of ``mss`` bytes."""
        with open(path, "wb") as out:
            with PcapngWriter(out, protocol, server_port=server_port, mss=mss) as writer:
                for record in self.records:
                    writer.add(record)
