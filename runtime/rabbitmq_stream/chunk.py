"""Osiris chunks (Deliver) to messages, and messages to entries (Publish).

PROTOCOL.adoc, Deliver: 'OsirisChunk => MagicVersion ChunkType NumEntries NumRecords
Timestamp Epoch ChunkFirstOffset ChunkCrc DataLength TrailerLength BloomSize Reserved
Messages'. The generated codec decodes the 48-byte header and hands the entries as the
``data`` bytes osiris sent (idl/rabbitmq_stream/v1.yaml says why). Each entry is a
``SimpleEntry`` (<<0:1, Size:31, Data>>: one message) or a ``SubEntryBatch``
(<<1:1, CompType:3, 0:4, NumRecs:16, UncompressedLen:32, Len:32, Data>>: NumRecs
messages, each behind a uint32 size, compressed as CompType says). Here:

- the CRC: 'ChunkCrc' is the CRC-32 of the entry bytes (osiris:
  ``erlang:crc32(EData)``), checked in one call on the bytes that arrived;
- one pass over the entries, on the hot path of every consumer: a simple entry costs
  a header read and a slice; NumEntries, NumRecords and every size are checked
  against the bytes, so a lying length is ``MalformedChunk``, never an over-read or an
  allocation sized by the peer;
- record offsets: the chunk's first offset plus the record's index, sub-entry records
  counted one by one ('NumRecords');
- compression: the five codecs of the Java client (none, gzip, snappy, lz4, zstd), in
  ``wirestream.runtime.rabbitmq_stream.compression``; a sub-entry batch never inflates
  beyond its declared size, which ``max_batch_size`` bounds (``BatchTooLarge``);
- natively where ``wirestream.runtime._native`` is built (``make native``): the CRC and the split
  in Rust (runtime/rust/wirestream-native/src/rabbitmq_chunk.rs; issue 28 measured 245 us
  per 1,000-entry chunk here against 10 us there), sub-entry batches still decompressed
  here. It is a fast path, not a judge: a chunk it does not find exactly right goes
  through the Python path, which raises the precise error, so both give the same records
  and the same errors (tests/native/test_native_rabbitmq.py). ``WIRESTREAM_NATIVE=0``
  switches it off.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Final

from wirestream.generated.rabbitmq_stream.v1 import (
    CompressionType,
    Entry,
    OsirisChunk,
    SimpleEntry,
    SubEntryBatch,
)
from wirestream.runtime._support import native_module
from wirestream.runtime.rabbitmq_stream.compression import compress, decompress
from wirestream.runtime.rabbitmq_stream.errors import (
    BatchTooLarge,
    ChunkCrcMismatch,
    MalformedChunk,
    UnsupportedCompression,
)

__all__ = [
    "chunk_records",
    "python_chunk_records",
    "native_split",
    "decode_entries",
    "encode_entries",
    "entries_crc",
    "sub_entry_batch",
    "DEFAULT_MAX_BATCH_SIZE",
]

DEFAULT_MAX_BATCH_SIZE = 16 * 1024 * 1024
"""Default limit of one sub-entry batch once uncompressed (bytes)."""

# osiris: <<0:1, Len:31/unsigned>> and <<1:1, CompType:3, 0:4, NumRecs:16,
# UncompressedLen:32, Len:32>>.
_SIMPLE_HEADER = struct.Struct(">I")
_BATCH_HEADER = struct.Struct(">BHII")
_RECORD_SIZE = struct.Struct(">I")

NativeSplit = Callable[[bytes, int, int, int], "tuple[list[Any], bool] | None"]


def _load_native_split() -> NativeSplit | None:
    """The extension's ``rabbitmq_chunk_records``; None where it is not built (or built
    before it had one) or ``WIRESTREAM_NATIVE=0`` (the capture reader's switch too)."""
    _native = native_module()
    split: NativeSplit | None = getattr(_native, "rabbitmq_chunk_records", None)
    return split


native_split: Final[NativeSplit | None] = _load_native_split()
"""The native CRC check and split, when built (``chunk_records`` uses it)."""

BatchSplit = Callable[["bytes | bytearray", int], "list[bytes] | None"]

native_batch_split: Final[BatchSplit | None] = getattr(
    native_module(), "rabbitmq_batch_records", None
)
"""The native split of an uncompressed sub-entry batch into its records, when built:
``chunk_records``' native path uses it (None from it: the Python split, which raises);
24 ns a record of 100 bytes against the Python loop's 316."""


def encode_entries(entries: Sequence[Entry]) -> bytes:
    """Entries as osiris lays them out in a chunk (what ``OsirisChunk.data`` holds)."""
    out: list[bytes] = []
    for entry in entries:
        if isinstance(entry, SimpleEntry):
            out.append(_SIMPLE_HEADER.pack(len(entry.data)))
        else:
            flags = 0x80 | (int(entry.compression) << 4)
            header = (flags, entry.num_records, entry.uncompressed_length, len(entry.data))
            out.append(_BATCH_HEADER.pack(*header))
        out.append(entry.data)
    return b"".join(out)


def entries_crc(entries: Sequence[Entry]) -> int:
    """CRC-32 (zlib) of the entries as they are on the wire."""
    return zlib.crc32(encode_entries(entries))


def decode_entries(data: bytes) -> list[Entry]:
    """The entries of a chunk's ``data`` as typed values (tools and tests; consumers
    use ``chunk_records``). ``MalformedChunk`` when a size overruns the bytes."""
    entries: list[Entry] = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < 4:
            raise MalformedChunk("the chunk data ends inside an entry header")
        (word,) = _SIMPLE_HEADER.unpack_from(data, pos)
        if not word & 0x80000000:
            start = pos + 4
            pos = _entry_end(start, word, end)
            entries.append(SimpleEntry(data[start:pos]))
            continue
        batch, pos = _batch_at(data, pos, end)
        entries.append(batch)
    return entries


def _batch_at(data: bytes, pos: int, end: int) -> tuple[SubEntryBatch, int]:
    """The sub-entry batch whose header starts at ``pos``, and where it ends."""
    if end - pos < _BATCH_HEADER.size:
        raise MalformedChunk("the chunk data ends inside a sub-entry batch header")
    flags, num_records, uncompressed, size = _BATCH_HEADER.unpack_from(data, pos)
    start = pos + _BATCH_HEADER.size
    pos = _entry_end(start, size, end)
    compression = _compression((flags >> 4) & 0x7)
    return SubEntryBatch(compression, num_records, uncompressed, data[start:pos]), pos


def _entry_end(start: int, size: int, end: int) -> int:
    if size > end - start:
        raise MalformedChunk(
            f"an entry of {size} bytes overruns the chunk data ({end - start} bytes left)"
        )
    return start + size


def _compression(code: int) -> CompressionType:
    try:
        return CompressionType(code)
    except ValueError:
        raise UnsupportedCompression(
            f"sub-entry batch compression type {code} is none of 0 (none) .. 4 (zstd)"
        ) from None


def chunk_records(
    chunk: OsirisChunk,
    *,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    split: NativeSplit | None = native_split,
) -> list[bytes]:
    """Every record of ``chunk`` in offset order, after checking its CRC and counts.

    Raises ``ChunkCrcMismatch``, ``MalformedChunk`` (for a compressed batch:
    ``CorruptCompressedBatch``, ``UncompressedSizeMismatch``,
    ``UncompressedSizeExceeded``), ``UnsupportedCompression`` or ``BatchTooLarge``.
    ``split``: the native fast path (None: the Python path only).
    """
    data = chunk.data
    if split is not None and type(data) is bytes:  # the decoder's; a test may build others
        found = split(data, chunk.chunk_crc, chunk.num_entries, chunk.num_records)
        if found is not None:
            items, batches = found
            if not batches:
                return items
            records: list[bytes] = []
            for item in items:
                if type(item) is bytes:
                    records.append(item)
                    continue
                code, num_records, uncompressed, payload = item
                kind = CompressionType(code)
                batch = SubEntryBatch(kind, num_records, uncompressed, payload)
                # A batch that fails raises here what the Python path raises for it: the
                # entries before it are sound (checked natively), so it is the first error.
                records.extend(_batch_records(batch, max_batch_size, native_batch_split))
            return records
    return python_chunk_records(chunk, max_batch_size=max_batch_size)


def python_chunk_records(
    chunk: OsirisChunk, *, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
) -> list[bytes]:
    """``chunk_records`` in Python only: the reference the native path is held to."""
    data = chunk.data
    crc = zlib.crc32(data)
    if crc != chunk.chunk_crc:
        raise ChunkCrcMismatch(
            f"chunk {chunk.chunk_first_offset}: CRC-32 of the entries is 0x{crc:08x}, "
            f"the header says 0x{chunk.chunk_crc:08x}"
        )
    records: list[bytes] = []
    append = records.append
    unpack = _SIMPLE_HEADER.unpack_from
    pos, end, entries = 0, len(data), 0
    while pos < end:
        entries += 1
        if end - pos < 4:
            raise MalformedChunk("the chunk data ends inside an entry header")
        (word,) = unpack(data, pos)
        if word & 0x80000000:  # a sub-entry batch: rare, the general path
            batch, pos = _batch_at(data, pos, end)
            records.extend(_batch_records(batch, max_batch_size))
            continue
        pos += 4
        if word > end - pos:
            raise MalformedChunk(
                f"chunk {chunk.chunk_first_offset}: an entry of {word} bytes overruns the "
                f"chunk data ({end - pos} bytes left)"
            )
        append(data[pos : pos + word])
        pos += word
    if entries != chunk.num_entries:
        raise MalformedChunk(
            f"chunk {chunk.chunk_first_offset}: NumEntries is {chunk.num_entries} "
            f"but DataLength holds {entries} entries"
        )
    if len(records) != chunk.num_records:
        raise MalformedChunk(
            f"chunk {chunk.chunk_first_offset}: NumRecords is {chunk.num_records} "
            f"but the entries hold {len(records)} records"
        )
    return records


def _batch_records(
    batch: SubEntryBatch, max_batch_size: int, split: BatchSplit | None = None
) -> list[bytes]:
    """The records of ``batch``; ``split``: the native split of its uncompressed bytes
    (the loop below only where it says None: a malformed batch, whose error it raises)."""
    if batch.uncompressed_length > max_batch_size:
        raise BatchTooLarge(
            f"a sub-entry batch of {batch.uncompressed_length} bytes uncompressed exceeds "
            f"the limit of {max_batch_size}"
        )
    raw = decompress(batch.compression, batch.data, batch.uncompressed_length)
    if split is not None:
        found = split(raw, batch.num_records)
        if found is not None:
            return found
    records: list[bytes] = []
    view = memoryview(raw)  # a record is one copy out of ``raw``, whatever its type
    pos, end = 0, len(raw)
    while pos < end:
        if end - pos < 4:
            raise MalformedChunk("a sub-entry batch ends inside a record size")
        (size,) = _RECORD_SIZE.unpack_from(raw, pos)
        pos += 4
        if size > end - pos:
            raise MalformedChunk("a sub-entry batch ends inside a record")
        records.append(view[pos : pos + size].tobytes())
        pos += size
    if len(records) != batch.num_records:
        raise MalformedChunk(
            f"a sub-entry batch declares {batch.num_records} records but holds {len(records)}"
        )
    return records


def sub_entry_batch(messages: Sequence[bytes], compression: CompressionType) -> SubEntryBatch:
    """Messages as one sub-entry batch: uint32-size-prefixed records, compressed as the
    Java client does (``compression.compress``)."""
    if not 0 < len(messages) <= 0xFFFF:
        raise ValueError("a sub-entry batch holds 1..65535 messages")
    pack = _RECORD_SIZE.pack
    parts: list[bytes] = []
    for message in messages:
        parts += (pack(len(message)), message)
    raw = b"".join(parts)
    data = compress(compression, raw)
    return SubEntryBatch(
        compression=compression, num_records=len(messages), uncompressed_length=len(raw), data=data
    )
