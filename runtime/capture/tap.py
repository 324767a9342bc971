"""Tapping a connection: a ``Transport`` that records every frame it carries.

``CapturedTransport`` sits between an engine's driver and the real transport.  Bytes
pass through untouched; on the way, each direction goes through the protocol's deframer
(``wirestream.runtime.capture.protocols``) and every complete frame becomes one record of the
connection's id.  It sees what the engine sees -- the length-prefixed byte stream, also
over WebSocket (``wirestream.runtime.aio.transport``) -- so a capture is the same whatever the
transport.

Recording never breaks the connection: when a direction stops being a sequence of frames
(garbage from the peer, which the engine is about to report), its remaining bytes are
recorded once as a final undecodable record and that direction is not recorded further.
Frames are recorded when they are written to the transport (out) or read from it (in).
"""

from __future__ import annotations

from typing import Literal

from wirestream.runtime.aio.endpoints import OnTransport
from wirestream.runtime.aio.transport import Transport
from wirestream.runtime.capture.format import Direction, Side
from wirestream.runtime.capture.protocols import get_protocol
from wirestream.runtime.capture.writer import CaptureWriter

__all__ = ["CapturedTransport", "tap", "tap_accepted"]


class CapturedTransport(Transport):
    """``inner``, with every frame in both directions recorded to ``capture``."""

    def __init__(self, inner: Transport, capture: CaptureWriter, side: Side) -> None:
        self.inner = inner
        self.capture = capture
        self.side: Side = side
        self.peer = inner.peer
        self.connection_id = capture.new_connection_id()
        self._incoming = capture.protocol.deframer()
        self._outgoing = capture.protocol.deframer()

    def _record(self, direction: Direction, frames: list[bytes]) -> None:
        capture = self.capture
        if capture.closed:
            return  # the capture was closed before the connection: stop quietly
        for frame in frames:
            capture.record(self.connection_id, direction, frame, side=self.side)

    async def read(self) -> bytes:
        data = await self.inner.read()
        if data:
            self._record("in", self._incoming.feed(data))
        return data

    def write(self, data: bytes) -> None:
        self.inner.write(data)  # first: a write that fails was not sent, so not recorded
        self._record("out", self._outgoing.feed(data))

    async def drain(self) -> None:
        await self.inner.drain()

    def write_buffer_size(self) -> int:
        return self.inner.write_buffer_size()

    def write_eof(self) -> None:
        self.inner.write_eof()

    def close(self) -> None:
        self.inner.close()

    def abort(self) -> None:
        self.inner.abort()

    async def wait_closed(self) -> None:
        await self.inner.wait_closed()

    @property
    def is_closing(self) -> bool:
        return self.inner.is_closing

    def backed_up(self) -> bool:
        return self.inner.backed_up()

    def __repr__(self) -> str:
        return f"<CapturedTransport {self.connection_id:#x} {self.inner!r}>"


def _check(capture: CaptureWriter, protocol: str) -> None:
    if get_protocol(protocol) is not capture.protocol:
        raise ValueError(
            f"capture {capture.base_path} records {capture.protocol.name}; "
            f"this connection speaks {get_protocol(protocol).name}"
        )


def tap(transport: Transport, capture: CaptureWriter | None, *, protocol: str,
        side: Literal["client", "server"]) -> Transport:  # fmt: skip
    """``transport`` recorded to ``capture`` (unchanged when ``capture`` is None).
    ``protocol`` is what the connection speaks; it must be the capture's."""
    if capture is None:
        return transport
    try:
        _check(capture, protocol)
    except ValueError:
        transport.abort()  # the caller never gets it, so nobody else would close it
        raise
    return CapturedTransport(transport, capture, side)


def tap_accepted(on_transport: OnTransport, capture: CaptureWriter | None, *,
                 protocol: str) -> OnTransport:  # fmt: skip
    """A listener callback that taps each accepted transport (as the server side) before
    handing it to ``on_transport``; ``on_transport`` itself when ``capture`` is None.
    Checks ``protocol`` now, so a mismatch fails ``serve``, not each connection."""
    if capture is None:
        return on_transport
    _check(capture, protocol)
    writer = capture

    async def on_tapped(transport: Transport) -> None:
        await on_transport(CapturedTransport(transport, writer, "server"))

    return on_tapped
