"""The protocols a capture can hold: their names, framing and codecs.

A capture file's header names its protocol.  The name is ``<protocol>/<version>`` with the
IDL's protocol and version, the version's leading ``v`` dropped and ``_`` read as ``.``:
``rsocket/1.0``, ``rsocket/0.2``, ``rsio/0``, ``bpmux/rel``, ``rabbitmq_stream/1``,
``rabbitmq_stream/draft``.  A protocol with a second encoding on the wire (Reactive
Streams' MessagePack) has a protocol per encoding: ``rsio/0+msgpack``.  ``get_protocol``
also accepts the IDL's spelling (``rsocket/v1_0``).

The protocols are the generated packages (``wirestream.generated.<protocol>.<version>``),
and what a capture needs to know about each comes from its codec's module constants, so
a protocol added to the IDL can be captured with no change here:

- ``LENGTH_PREFIX_SIZE``: how ``deframer()`` cuts a byte stream, as the tapped transport
  carries it, into frames (engines always speak the length-prefixed form, see
  ``wirestream.runtime.aio.transport``): by the prefix, or, with 0, by decoding the
  self-delimiting frames with the codec's own stream decoder;
- ``ENCODINGS``: the protocol's names (one per encoding);
- ``NEEDS_SENDER``: decoding a recorded frame needs who sent it (RabbitMQ);
- ``NEEDS_CONTEXT``: decoding needs what earlier frames of the connection announced
  (Reactive Streams' fixed element sizes), which ``track_context`` follows.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, Protocol

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
    (the context tracking of ``CaptureProtocol.deframer``)."""

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
            self._track = codec.track_context
            self._new_context = codec.Context

    def decode(
        self,
        frame: bytes,
        connection_id: int = 0,
        direction: Direction = "in",
        sender: str | None = None,
    ) -> Any:
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
    """One protocol (and encoding) a capture can hold; ``get_protocol`` makes them."""

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

    @classmethod
    def of(cls, name: str, codec_module: str, encoding: str) -> CaptureProtocol:
        """The protocol ``name``: ``codec_module``'s frames in ``encoding``, as its module
        constants describe them."""
        codec = importlib.import_module(codec_module)
        if encoding not in codec.ENCODINGS:
            raise ValueError(f"{codec_module} has no {encoding} encoding")
        # MessagePack values delimit themselves: a stream of them has no length prefix
        prefix: int = codec.LENGTH_PREFIX_SIZE if encoding == "binary" else 0
        return cls(name, codec_module, prefix, encoding, codec.NEEDS_CONTEXT, codec.NEEDS_SENDER)

    def codec(self) -> ModuleType:
        return importlib.import_module(self.codec_module)

    def deframer(self) -> Deframer:
        """A fresh deframer for one direction of one connection."""
        if self.length_prefix:
            return LengthPrefixDeframer(self.length_prefix)
        codec = self.codec()
        stream = codec.MsgpackStreamDecoder if self.encoding == "msgpack" else codec.StreamDecoder
        if not self.contextual:
            return DecodingDeframer(stream(max_frame_size=MAX_FRAME_LENGTH))
        # Frames of one direction decode with the context its earlier frames set, in stream
        # order: a feed decodes a whole chunk before anyone else sees its frames.
        ctx = codec.Context()
        track = codec.track_context
        decoder: _StreamDecoder = stream(max_frame_size=MAX_FRAME_LENGTH, ctx=ctx)
        decoder.after_frame = lambda frame, size: track(frame, ctx)
        return DecodingDeframer(decoder)

    def record_decoder(self) -> RecordDecoder:
        return RecordDecoder(self)


_GENERATED: Final = "wirestream.generated"


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


@functools.cache
def _codec_modules() -> dict[str, str]:
    """Every generated codec package by its capture name (without encoding), found by
    listing the generated folders: no codec is imported."""
    root = importlib.import_module(_GENERATED)
    found: dict[str, str] = {}
    for family in pkgutil.iter_modules(root.__path__):
        if not family.ispkg:
            continue
        package = importlib.import_module(f"{_GENERATED}.{family.name}")  # a docstring only
        for version in pkgutil.iter_modules(package.__path__):
            if version.ispkg:
                module = f"{_GENERATED}.{family.name}.{version.name}"
                found[canonical_name(f"{family.name}/{version.name}")] = module
    return found


@functools.cache
def _protocol(name: str) -> CaptureProtocol | None:
    """The one ``CaptureProtocol`` called ``name`` (canonical): the same object each time,
    so that a tap can tell by identity that a connection speaks its capture's protocol."""
    base, _, encoding = name.partition("+")
    module = _codec_modules().get(base)
    if module is None or encoding == "binary":
        return None
    try:
        return CaptureProtocol.of(name, module, encoding or "binary")
    except ValueError:
        return None  # the codec has no such encoding


@functools.cache
def _all_protocols() -> dict[str, CaptureProtocol]:
    table: dict[str, CaptureProtocol] = {}
    for base, module in _codec_modules().items():
        for encoding in importlib.import_module(module).ENCODINGS:
            protocol = _protocol(base if encoding == "binary" else f"{base}+{encoding}")
            assert protocol is not None
            table[protocol.name] = protocol
    return table


class _Protocols(Mapping[str, CaptureProtocol]):
    """Every protocol a capture can hold, by name.  Listing them imports every codec (a
    tenth of a second), which a process that captures one protocol need not pay: the
    table is read on first use, and ``get_protocol`` never needs it."""

    def __getitem__(self, name: str) -> CaptureProtocol:
        return _all_protocols()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_all_protocols())

    def __len__(self) -> int:
        return len(_all_protocols())

    def __repr__(self) -> str:
        return f"PROTOCOLS({', '.join(self)})"


PROTOCOLS: Final[Mapping[str, CaptureProtocol]] = _Protocols()


def get_protocol(name: str) -> CaptureProtocol:
    """The protocol called ``name``; a ``ValueError`` lists the known ones."""
    protocol = _protocol(canonical_name(name))
    if protocol is None:
        raise ValueError(f"unknown capture protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    return protocol
