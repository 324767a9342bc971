"""The capture file format (version 1): what a writer appends and a reader may assume.

A capture file records the frames of one protocol, in both directions, of any number of
connections.  It is append-only: a file header, then records, nothing else.  Every
integer is unsigned and big-endian (network order, as in the protocols captured).
CRC-32 is the IEEE/zlib polynomial (``zlib.crc32``, ``binascii.crc32``; the CRC of
``b"123456789"`` is ``0xCBF43926``).

File header (written once, when the file is created)::

    offset  size  field
    0       8     magic: the bytes 57 53 43 41 50 0D 0A 1A ("WSCAP\\r\\n\\x1a"; the CR LF
                  and ^Z show a file mangled by a text-mode copy)
    8       2     format version: 1
    10      4     sync marker: 4 bytes the writer drew at random for this file
    14      1     n: length of the protocol name (1..255)
    15      n     protocol name, ASCII, e.g. "rsocket/1.0" (``wirestream.runtime.capture.protocols``)
    15+n    4     CRC-32 of bytes 0 .. 15+n (everything above)

Records start at offset 19+n and follow each other with no gap.  A record::

    offset  size  field
    0       4     sync marker (the file's, from the header)
    4       4     L: length of the frame in bytes (at most MAX_FRAME_LENGTH)
    8       8     time the tap saw the frame, in nanoseconds since the Unix epoch (UTC)
    16      8     connection id (unique per connection within a writer; see the writer)
    24      1     flags: bit 0 direction (0 = in, received by the tapped side;
                  1 = out, sent by it); bit 1 side (0 = the tapped side is the client,
                  i.e. it connected; 1 = it is the server, it accepted); bits 2-7 are 0
    25      4     CRC-32 of the L frame bytes
    29      4     CRC-32 of record bytes 4 .. 29 (length, time, id, flags, frame CRC)
    33      L     the frame: exactly the bytes the protocol's generated ``decode`` takes,
                  without the transport's length prefix (RSocket's 24-bit or RabbitMQ's
                  32-bit length; Reactive Streams and BPMUX frames delimit themselves)

So who *sent* a frame is ``side`` when the direction is out, the other side when it is
in (RabbitMQ's codec needs it: some codes mean different frames from each side).

Reading sequentially from the first record, a reader checks at each record boundary:
the sync marker, the header CRC, ``L <= MAX_FRAME_LENGTH``, then the frame CRC; any
mismatch is a corrupt file (``CaptureError`` naming the file and the record's offset).
The one exception is the end: a writer that died while appending leaves a *torn* final
record -- fewer than 33 bytes that begin like a sync marker, or a complete header whose
frame runs past the end of the file -- which a reader takes as the end of the data.
(The header CRC is what tells a torn frame from a corrupt length.)  A length is never
trusted before its header CRC matched and it is within the maximum, so a reader never
allocates more than ``MAX_FRAME_LENGTH`` bytes for one record.

Splitting.  A byte range ``[a, b)`` of a file owns the records whose first byte lies in
it, so any cut of ``[0, size)`` into ranges yields every record exactly once.  A reader
starting at ``a`` past the header scans for the sync marker, checks the header CRC of each
candidate and starts at the first that passes (a random marker and a 32-bit CRC make a
false start inside a frame's bytes a 2**-64 event per byte); a candidate whose header
passes but whose frame CRC fails is a corrupt record, not a false start.  It reads
sequentially until the next record starts at or after ``b``, and checks that record's
header too: so a corrupt record at a boundary fails the range before it, never vanishes.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from typing import Final, Literal

from wirestream.runtime.errors import DecodeError

__all__ = [
    "MAGIC",
    "FORMAT_VERSION",
    "MAX_FRAME_LENGTH",
    "RECORD_HEADER_SIZE",
    "Direction",
    "Side",
    "FileHeader",
    "CaptureError",
    "encode_file_header",
    "parse_file_header",
    "encode_record",
    "new_sync_marker",
]

MAGIC: Final = b"WSCAP\r\n\x1a"
FORMAT_VERSION: Final = 1
MAX_FRAME_LENGTH: Final = 1 << 26
"""64 MiB: above every generated codec's default frame limit (16 MiB) with room for
RabbitMQ brokers configured with a larger frame_max; the largest allocation a reader
makes for one record."""

Direction = Literal["in", "out"]
Side = Literal["client", "server"]

FLAG_OUT: Final = 0x01
FLAG_SERVER: Final = 0x02
FLAGS_RESERVED: Final = 0xFC

_FIXED_HEADER = struct.Struct(">8sH4sB")  # magic, version, sync marker, name length
_CRC = struct.Struct(">I")
RECORD = struct.Struct(">4sIQQBII")
"""sync, length, timestamp_ns, connection id, flags, frame CRC, header CRC."""
RECORD_HEADER_SIZE: Final = RECORD.size  # 33
RECORD_BODY = struct.Struct(">IQQBI")
"""The header fields covered by the header CRC (record bytes 4 .. 29)."""
HEADER_CRC_SPAN: Final = (4, 29)
MAX_FILE_HEADER_SIZE: Final = _FIXED_HEADER.size + 255 + _CRC.size


class CaptureError(DecodeError):
    """A capture file that is not one, or is corrupt: ``path`` and ``offset`` (of the file
    header or of the record) say where.  A ``DecodeError``: bytes that are not what the
    format says, like a malformed frame."""

    def __init__(self, message: str, *, path: str = "", offset: int = 0) -> None:
        where = f"{path}: " if path else ""
        super().__init__(f"{where}offset {offset}: {message}")
        self.path = path
        self.offset = offset


@dataclass(frozen=True, slots=True)
class FileHeader:
    """A capture file's header: the protocol, the sync marker, where records start."""

    protocol: str
    sync: bytes
    size: int
    """Bytes of the header: the offset of the first record."""
    version: int = FORMAT_VERSION


def new_sync_marker() -> bytes:
    return os.urandom(4)


def encode_file_header(protocol: str, sync: bytes) -> bytes:
    name = protocol.encode("ascii")
    if not 1 <= len(name) <= 255:
        raise ValueError(f"protocol name {protocol!r} must be 1 to 255 ASCII characters")
    if len(sync) != 4:
        raise ValueError("the sync marker is 4 bytes")
    head = _FIXED_HEADER.pack(MAGIC, FORMAT_VERSION, sync, len(name)) + name
    return head + _CRC.pack(zlib.crc32(head))


def parse_file_header(data: bytes, path: str = "") -> FileHeader:
    """The header at the start of ``data`` (the file's first bytes, at least the whole
    header when the file has one); ``CaptureError`` if it is not a capture file's."""
    fixed = _FIXED_HEADER.size
    if len(data) < fixed:
        raise CaptureError(
            f"not a capture file: {len(data)} bytes, shorter than a header", path=path
        )
    magic, version, sync, length = _FIXED_HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise CaptureError(f"not a capture file: starts with {magic!r}, not {MAGIC!r}", path=path)
    if version != FORMAT_VERSION:
        raise CaptureError(
            f"capture format version {version} is not supported (this reader knows "
            f"{FORMAT_VERSION})",
            path=path,
        )
    end = fixed + length
    if length == 0 or len(data) < end + _CRC.size:
        raise CaptureError("truncated file header", path=path)
    (crc,) = _CRC.unpack_from(data, end)
    if crc != zlib.crc32(data[:end]):
        raise CaptureError("file header CRC mismatch", path=path)
    try:
        protocol = data[fixed:end].decode("ascii")
    except UnicodeDecodeError:
        raise CaptureError("protocol name is not ASCII", path=path) from None
    return FileHeader(protocol, bytes(sync), end + _CRC.size, version)


def encode_record(
    sync: bytes,
    timestamp_ns: int,
    connection_id: int,
    direction: Direction,
    side: Side,
    frame: bytes,
) -> bytes:
    """One record's bytes (the format above).  ``frame`` must be within the maximum."""
    flags = (FLAG_OUT if direction == "out" else 0) | (FLAG_SERVER if side == "server" else 0)
    body = RECORD_BODY.pack(len(frame), timestamp_ns, connection_id, flags, zlib.crc32(frame))
    return b"".join((sync, body, _CRC.pack(zlib.crc32(body)), frame))
