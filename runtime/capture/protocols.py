"""The protocols a capture can hold: their names, framing and codecs.

A capture file's header names its protocol.  The name is ``<protocol>/<version>`` with the
IDL's protocol and version, the version's leading ``v`` dropped and ``_`` read as ``.``:
``rsocket/1.0``, ``rsocket/0.2``, ``rsio/0``, ``bpmux/rel``, ``rabbitmq_stream/1``,
``rabbitmq_stream/draft``.  Reactive Streams frames have two encodings on the wire, so the
MessagePack one is a protocol of its own: ``rsio/0+msgpack``.  ``get_protocol`` also
accepts the IDL's spelling (``rsocket/v1_0``).

For each protocol this module knows how to cut a byte stream, as the tapped transport
carries it, into frames (``deframer()``: engines always speak the length-prefixed form,
see ``wirestream.runtime.aio.transport``), and how to decode recorded frames again
(``record_decoder()``), with what decoding needs besides the bytes: who sent the frame
(RabbitMQ) and what earlier frames of the connection announced (Reactive Streams'
fixed element sizes).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, Protocol, cast

from wirestream.runtime.capture.format import MAX_FRAME_LENGTH, Direction
from wirestream.runtime.errors import DecodeError, FrameTooLarge

__all__ = [
    "CaptureProtocol",
    "PROTOCOLS",
    "get_protocol",
    "Deframer",
    "LengthPrefixDeframer",
    "DecodingDeframer",
    "RecordDecoder",
    "FAILED_TAIL_BYTES",
]

FAILED_TAIL_BYTES: Final = 64 * 1024
"""When a stream cannot be cut into frames any more (garbage from the peer), the bytes
from where it failed are recorded as one last "frame" of that direction, cut to this
size: enough to see what went wrong, never a large buffer."""


class Deframer(Protocol):
    """Cuts one direction of a connection into frames (bytes without a length prefix)."""

    failed: DecodeError | None

    def feed(self, data: bytes) -> list[bytes]: ...


class LengthPrefixDeframer:
    """Frames behind an unsigned big-endian length prefix that does not count itself.

    The generated ``StreamDecoder`` splits the same way, but it decodes every frame; the
    tap only needs the boundaries, must not pay a second decode per frame, and records
    frames the codec would refuse too (the engine reports those).
    """

    def __init__(self, prefix_size: int, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self.prefix_size = prefix_size
        self.max_frame_length = max_frame_length
        self.failed: DecodeError | None = None
        self._buffer = bytearray()
        self._wanted = 0  # bytes the buffer must hold before the next frame is complete

    def feed(self, data: bytes) -> list[bytes]:
        if self.failed is not None:
            return []
        buffer = self._buffer
        buffer += data
        if len(buffer) < self._wanted:
            return []
        frames: list[bytes] = []
        prefix, size, pos = self.prefix_size, len(buffer), 0
        while size - pos >= prefix:
            length = int.from_bytes(buffer[pos : pos + prefix], "big")
            if length > self.max_frame_length:
                self.failed = FrameTooLarge(
                    f"frame declares {length} bytes; the limit is {self.max_frame_length}"
                )
                frames.append(bytes(buffer[pos : pos + FAILED_TAIL_BYTES]))
                buffer.clear()
                return frames
            stop = pos + prefix + length
            if stop > size:
                break
            frames.append(bytes(buffer[pos + prefix : stop]))
            pos = stop
        del buffer[:pos]
        self._wanted = (
            prefix + int.from_bytes(buffer[:prefix], "big") if len(buffer) >= prefix else 0
        )
        return frames


class _StreamDecoder(Protocol):
    after_frame: Callable[[Any, int], None] | None

    def feed(self, data: bytes | bytearray | memoryview) -> list[Any]: ...


class DecodingDeframer:
    """Self-delimiting frames (Reactive Streams, BPMUX): where a frame ends is known only
    by decoding it, so this runs the protocol's own stream decoder and cuts the bytes at
    the sizes its ``after_frame`` hook reports, keeping whatever hook it already had
    (rsio's context tracking, ``wirestream.runtime.rsio.framing``)."""

    def __init__(self, decoder: _StreamDecoder) -> None:
        self.failed: DecodeError | None = None
        self._decoder = decoder
        self._raw = bytearray()
        self._sizes: list[int] = []
        previous = decoder.after_frame

        def after_frame(frame: Any, size: int) -> None:
            if previous is not None:
                previous(frame, size)
            self._sizes.append(size)

        decoder.after_frame = after_frame

    def feed(self, data: bytes) -> list[bytes]:
        if self.failed is not None:
            return []
        raw = self._raw
        raw += data
        try:
            self._decoder.feed(data)
        except DecodeError as error:
            self.failed = error
        frames: list[bytes] = []
        pos = 0
        for size in self._sizes:
            frames.append(bytes(raw[pos : pos + size]))
            pos += size
        self._sizes.clear()
        if self.failed is not None:
            frames.append(bytes(raw[pos : pos + FAILED_TAIL_BYTES]))
            raw.clear()
        else:
            del raw[:pos]
        return frames


class RecordDecoder:
    """Decodes recorded frames of one protocol.  For contextual protocols (rsio) it keeps
    one context per (connection, direction), fed in record order: decode the records of
    a connection in the order they were written."""

    def __init__(self, protocol: CaptureProtocol) -> None:
        self.protocol = protocol
        codec = protocol.codec()
        self._contexts: dict[tuple[int, Direction], Any] = {}
        self._track: Callable[[Any, Any], None] | None = None
        self._needs_sender = protocol.needs_sender
        if protocol.encoding == "msgpack":
            self._decode: Callable[..., Any] = codec.decode_msgpack
        else:
            self._decode = codec.decode
        if protocol.contextual:
            from wirestream.runtime.rsio.framing import track_context

            self._track = track_context
            self._new_context = codec.Context

    def decode(self, frame: bytes, connection_id: int = 0, direction: Direction = "in",
               sender: str | None = None) -> Any:  # fmt: skip
        """The frame object of ``frame`` (a ``DecodeError`` if it is not one)."""
        if self._track is None:
            if self._needs_sender:
                return self._decode(frame, None, sender)
            return self._decode(frame)
        key = (connection_id, direction)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = self._contexts[key] = self._new_context()
        decoded = self._decode(frame, ctx)
        self._track(decoded, ctx)
        return decoded


@dataclass(frozen=True, slots=True)
class CaptureProtocol:
    """One protocol (and encoding) a capture can hold."""

    name: str
    codec_module: str
    """The generated codec package, e.g. ``wirestream.generated.rsocket.v1_0``."""
    length_prefix: int
    """Bytes of the transport's length prefix; 0: frames delimit themselves."""
    encoding: str = "binary"
    contextual: bool = False
    """Frames decode only with what earlier frames of the connection announced, so a
    reader must see a connection's records from its start (no splitting inside a file)."""
    needs_sender: bool = False
    """Some frame codes mean different frames from each side: decoding needs the sender."""

    def codec(self) -> ModuleType:
        return importlib.import_module(self.codec_module)

    def deframer(self) -> Deframer:
        """A fresh deframer for one direction of one connection."""
        if self.length_prefix:
            return LengthPrefixDeframer(self.length_prefix)
        if self.codec_module == "wirestream.generated.rsio.v0":
            import wirestream.generated.rsio.v0 as rsio
            from wirestream.runtime.rsio.framing import Encoding, make_decoder

            encoding: Encoding = "msgpack" if self.encoding == "msgpack" else "binary"
            # make_decoder's result is a generated stream decoder: it has after_frame
            made = make_decoder(encoding, rsio.Context(), MAX_FRAME_LENGTH)
            return DecodingDeframer(cast(_StreamDecoder, made))
        decoder: _StreamDecoder = self.codec().StreamDecoder(max_frame_size=MAX_FRAME_LENGTH)
        return DecodingDeframer(decoder)

    def record_decoder(self) -> RecordDecoder:
        return RecordDecoder(self)


PROTOCOLS: Final[dict[str, CaptureProtocol]] = {
    p.name: p
    for p in (
        # RSocket over TCP: "Frame Length (24 bits)" prefix (Protocol.md, Framing)
        CaptureProtocol("rsocket/1.0", "wirestream.generated.rsocket.v1_0", 3),
        CaptureProtocol("rsocket/0.2", "wirestream.generated.rsocket.v0_2", 3),
        # seed 000, Message framing: "Messages are self-delimiting"
        CaptureProtocol("rsio/0", "wirestream.generated.rsio.v0", 0, contextual=True),
        CaptureProtocol(
            "rsio/0+msgpack", "wirestream.generated.rsio.v0", 0, "msgpack", contextual=True
        ),
        CaptureProtocol("bpmux/rel", "wirestream.generated.bpmux.rel", 0),
        # PROTOCOL.adoc: "Size => uint32 (size without the 4 bytes of the size element)"
        CaptureProtocol(
            "rabbitmq_stream/1", "wirestream.generated.rabbitmq_stream.v1", 4, needs_sender=True
        ),
        CaptureProtocol(
            "rabbitmq_stream/draft",
            "wirestream.generated.rabbitmq_stream.draft",
            4,
            needs_sender=True,
        ),
    )
}


def canonical_name(name: str) -> str:
    """``name`` as the capture format spells it: ``rsocket/v1_0`` -> ``rsocket/1.0``."""
    family, _, version = name.strip().lower().partition("/")
    encoding = ""
    if "+" in version:
        version, _, rest = version.partition("+")
        encoding = "+" + rest
    if version[:1] == "v" and version[1:2].isdigit():
        version = version[1:]
    return f"{family}/{version.replace('_', '.')}{encoding}"


def get_protocol(name: str) -> CaptureProtocol:
    """The protocol called ``name``; a ``ValueError`` lists the known ones."""
    protocol = PROTOCOLS.get(canonical_name(name))
    if protocol is None:
        raise ValueError(f"unknown capture protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    return protocol
