"""Byte transports under the engines: TCP, TLS, Unix sockets, WebSocket, in-memory.

A ``Transport`` is the smallest thing an engine needs (aioquic's split: the protocol is a
sans-I/O core, the asyncio adapter is thin):

- ``await read() -> bytes``: the next bytes, ``b""`` at EOF;
- ``write(data)`` queues bytes (never blocks) and ``await drain()`` waits while more than
  the high-water mark is queued, so a peer that stops reading stops its sender;
- ``write_eof()`` half-closes, ``close()`` ends politely, ``abort()`` drops the connection.

Failures of the byte stream raise ``wirestream.runtime.errors.ConnectionLost`` (reset, broken pipe,
writing after close); nothing else escapes from here.

WebSocket carries messages, not a byte stream.  With ``message_prefix=3`` (RSocket: "When
using a transport protocol providing framing (WebSocket...), the Frame Length field MUST
NOT be included"), each message is one frame and this adapter adds/removes the 3-byte
length prefix, so engines always speak the length-prefixed form.
"""

from __future__ import annotations

import abc
import asyncio
import collections
from typing import Any, Final

from wirestream.runtime.errors import ConnectionLost

__all__ = [
    "Transport",
    "StreamTransport",
    "WebSocketTransport",
    "MemoryTransport",
    "memory_pair",
    "HIGH_WATER",
    "READ_SIZE",
    "MAX_MESSAGE_SIZE",
]

HIGH_WATER: Final = 256 * 1024
"""Bytes queued for the peer beyond which ``drain()`` waits."""

READ_SIZE: Final = 256 * 1024
"""Largest chunk one ``read()`` returns (the allocation is ours, never the peer's)."""

MAX_MESSAGE_SIZE: Final = (1 << 24) + 1024
"""Largest WebSocket message accepted: one RSocket frame (24-bit length) and slack."""

_RESETS = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, OSError)


class Transport(abc.ABC):
    """One bidirectional byte stream (see the module docstring)."""

    peer: str = "?"
    """Who is at the other end, for messages (host:port, path, memory name)."""

    @abc.abstractmethod
    async def read(self) -> bytes:
        """The next bytes received; ``b""`` once the peer has finished sending."""

    @abc.abstractmethod
    def write(self, data: bytes) -> None:
        """Queue ``data`` for the peer (raises ``ConnectionLost`` once closed)."""

    @abc.abstractmethod
    async def drain(self) -> None:
        """Wait until the queued bytes are below the high-water mark."""

    @abc.abstractmethod
    def write_buffer_size(self) -> int:
        """Bytes queued and not yet taken by the peer (or the OS)."""

    @abc.abstractmethod
    def write_eof(self) -> None:
        """Half-close: we send no more; the peer reads ``b""``; we may still read."""

    @abc.abstractmethod
    def close(self) -> None:
        """Finish sending what is queued, then close."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Drop the connection now, discarding what is queued (a reset for the peer)."""

    @abc.abstractmethod
    async def wait_closed(self) -> None:
        """Wait until the connection is fully closed (never raises)."""

    @property
    @abc.abstractmethod
    def is_closing(self) -> bool:
        """``close()``/``abort()`` was called or the connection is gone."""

    def backed_up(self) -> bool:
        return self.write_buffer_size() > HIGH_WATER

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.peer}>"


# --- asyncio streams: TCP, TLS, Unix ---------------------------------------------------


class StreamTransport(Transport):
    """TCP, TLS or a Unix socket, through asyncio's streams (asyncio sets TCP_NODELAY)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 peer: str = "?") -> None:  # fmt: skip
        self._reader = reader
        self._writer = writer
        self._transport = writer.transport
        self.peer = peer
        # drain() waits above this; asyncio's default (64 KiB) is too eager for bulk streams
        self._transport.set_write_buffer_limits(high=HIGH_WATER)

    async def read(self) -> bytes:
        try:
            return await self._reader.read(READ_SIZE)
        except _RESETS as error:
            raise ConnectionLost(f"{self.peer}: {error}", reason="reset") from error

    def write(self, data: bytes) -> None:
        if self._transport.is_closing():
            raise ConnectionLost(f"{self.peer}: write after close", reason="closed")
        self._transport.write(data)

    async def drain(self) -> None:
        try:
            await self._writer.drain()
        except _RESETS as error:
            raise ConnectionLost(f"{self.peer}: {error}", reason="reset") from error

    def write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size()

    def write_eof(self) -> None:
        if not self._transport.is_closing() and self._writer.can_write_eof():
            self._writer.write_eof()

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        self._transport.abort()

    async def wait_closed(self) -> None:
        try:
            await self._writer.wait_closed()
        except _RESETS:
            pass

    @property
    def is_closing(self) -> bool:
        return self._transport.is_closing()


# --- WebSocket ---------------------------------------------------------------------------


class WebSocketTransport(Transport):
    """A ``websockets`` connection (client or server side) as a byte transport.

    Writes go out through one sender task, in order; ``drain()`` waits for it when more
    than the high-water mark is queued.  Text messages are a peer error (``read`` raises
    ``ConnectionLost``): the protocols here are binary.
    """

    def __init__(self, websocket: Any, *, message_prefix: int | None = None,
                 peer: str = "?") -> None:  # fmt: skip
        self._ws = websocket
        self._prefix = message_prefix
        self.peer = peer
        self._pending: collections.deque[bytes] = collections.deque()
        self._pending_bytes = 0
        self._partial = bytearray()  # prefixed writes not yet a whole frame
        self._wakeup = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self._failure: ConnectionLost | None = None
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())

    async def read(self) -> bytes:
        from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

        try:
            message: bytes | str = await self._ws.recv()
        except ConnectionClosedOK:
            return b""
        except ConnectionClosed as error:
            raise ConnectionLost(f"{self.peer}: {error}", reason="reset") from error
        if isinstance(message, str):
            self.abort()
            raise ConnectionLost(f"{self.peer}: text message on a binary protocol",
                                 reason="protocol")  # fmt: skip
        if self._prefix is not None:
            return len(message).to_bytes(self._prefix, "big") + message
        return bytes(message)

    def write(self, data: bytes) -> None:
        if self._closing or self._failure is not None:
            raise self._failure or ConnectionLost(f"{self.peer}: write after close",
                                                  reason="closed")  # fmt: skip
        if self._prefix is None:
            self._queue(data)
            return
        # Split the engine's length-prefixed frames into one message each.
        buffer = self._partial
        buffer += data
        size, pos = self._prefix, 0
        while len(buffer) - pos >= size:
            length = int.from_bytes(buffer[pos : pos + size], "big")
            if len(buffer) - pos - size < length:
                break
            self._queue(bytes(buffer[pos + size : pos + size + length]))
            pos += size + length
        del buffer[:pos]

    def _queue(self, message: bytes) -> None:
        self._pending.append(message)
        self._pending_bytes += len(message)
        if self._pending_bytes > HIGH_WATER:
            self._drained.clear()
        self._wakeup.set()

    async def _send_loop(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                while not self._pending:
                    if self._closing:
                        await self._ws.close()
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                message = self._pending.popleft()
                self._pending_bytes -= len(message)
                if self._pending_bytes <= HIGH_WATER:
                    self._drained.set()
                await self._ws.send(message)
        except ConnectionClosed as error:
            self._failure = ConnectionLost(f"{self.peer}: {error}", reason="reset")
        finally:
            self._drained.set()

    async def drain(self) -> None:
        await self._drained.wait()
        if self._failure is not None:
            raise self._failure

    def write_buffer_size(self) -> int:
        return self._pending_bytes

    def write_eof(self) -> None:
        self.close()  # WebSocket has no half-close: the closing handshake is the EOF

    def close(self) -> None:
        self._closing = True
        self._wakeup.set()

    def abort(self) -> None:
        self._closing = True
        self._sender.cancel()
        transport = getattr(self._ws, "transport", None)
        if transport is not None:
            transport.abort()

    async def wait_closed(self) -> None:
        try:
            await self._sender
        except (asyncio.CancelledError, Exception):
            pass
        try:
            await self._ws.wait_closed()
        except Exception:
            pass

    @property
    def is_closing(self) -> bool:
        return self._closing or self._failure is not None


# --- in memory ---------------------------------------------------------------------------


class _Pipe:
    """One direction of a memory pair: bytes written by one end, read by the other."""

    __slots__ = ("buffer", "eof", "reset", "readable", "drained")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.eof = False
        self.reset = False
        self.readable = asyncio.Event()
        self.drained = asyncio.Event()
        self.drained.set()


class MemoryTransport(Transport):
    """One end of an in-memory pair (``memory_pair()``), with the same backpressure as
    a socket: ``drain()`` waits while the other end has not read ``HIGH_WATER`` bytes."""

    def __init__(self, incoming: _Pipe, outgoing: _Pipe, peer: str) -> None:
        self._in = incoming
        self._out = outgoing
        self.peer = peer
        self._closed = False
        self._done = asyncio.Event()

    async def read(self) -> bytes:
        pipe = self._in
        while not pipe.buffer:
            if pipe.reset:
                raise ConnectionLost(f"{self.peer}: reset by peer", reason="reset")
            if pipe.eof:
                return b""
            pipe.readable.clear()
            await pipe.readable.wait()
        data = bytes(pipe.buffer[:READ_SIZE])
        del pipe.buffer[:READ_SIZE]
        if len(pipe.buffer) <= HIGH_WATER:
            pipe.drained.set()
        return data

    def write(self, data: bytes) -> None:
        pipe = self._out
        if self._closed or pipe.eof or pipe.reset:
            raise ConnectionLost(f"{self.peer}: write after close", reason="closed")
        if self._in.reset:
            raise ConnectionLost(f"{self.peer}: reset by peer", reason="reset")
        pipe.buffer += data
        pipe.readable.set()
        if len(pipe.buffer) > HIGH_WATER:
            pipe.drained.clear()

    async def drain(self) -> None:
        await self._out.drained.wait()
        if self._in.reset:
            raise ConnectionLost(f"{self.peer}: reset by peer", reason="reset")

    def write_buffer_size(self) -> int:
        return len(self._out.buffer)

    def write_eof(self) -> None:
        self._out.eof = True
        self._out.readable.set()

    def close(self) -> None:
        self.write_eof()
        self._closed = True
        self._done.set()

    def abort(self) -> None:
        # The other end sees a reset, both on reading and writing.
        self._out.reset = True
        self._out.buffer.clear()
        self._out.readable.set()
        self._out.drained.set()
        self._in.reset = True
        self._in.readable.set()
        self._in.drained.set()
        self._closed = True
        self._done.set()

    async def wait_closed(self) -> None:
        await self._done.wait()

    @property
    def is_closing(self) -> bool:
        return self._closed


def memory_pair(name: str = "memory") -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected in-memory transports (client end, server end)."""
    a_to_b, b_to_a = _Pipe(), _Pipe()
    return (MemoryTransport(b_to_a, a_to_b, f"{name}:server"),
            MemoryTransport(a_to_b, b_to_a, f"{name}:client"))  # fmt: skip
