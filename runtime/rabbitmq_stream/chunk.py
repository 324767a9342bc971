"""Osiris chunks (Deliver) to messages, and messages to entries (Publish).

PROTOCOL.adoc, Deliver: 'OsirisChunk => MagicVersion ChunkType NumEntries NumRecords
Timestamp Epoch ChunkFirstOffset ChunkCrc DataLength TrailerLength BloomSize Reserved
Messages'. The generated codec has already split the chunk into its entries: a
``SimpleEntry`` (one message) or a ``SubEntryBatch`` (NumRecs messages, each behind a
uint32 size, compressed as the batch's 3-bit type says). Here:

- the CRC: 'ChunkCrc' is the CRC-32 of the entry bytes (osiris:
  ``erlang:crc32(EData)``). The codec does not keep the raw bytes, so the CRC runs
  over the entries' wire form rebuilt field by field (osiris' own layout, below). It
  equals the received bytes as long as the publisher left the 4 reserved bits of a
  sub-entry header at 0, as every client does.
- record offsets: the chunk's first offset plus the record's index, sub-entry records
  counted one by one ('NumRecords').
- compression: none and gzip (zlib); snappy, lz4 and zstd are ``UnsupportedCompression``.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Sequence

from generated.rabbitmq_stream.v1 import (
    CompressionType,
    Entry,
    OsirisChunk,
    SimpleEntry,
    SubEntryBatch,
)
from runtime.rabbitmq_stream.errors import (
    BatchTooLarge,
    ChunkCrcMismatch,
    MalformedChunk,
    UnsupportedCompression,
)

__all__ = ["entries_crc", "chunk_records", "sub_entry_batch", "DEFAULT_MAX_BATCH_SIZE"]

DEFAULT_MAX_BATCH_SIZE = 16 * 1024 * 1024
"""Default limit of one sub-entry batch once uncompressed (bytes)."""

# osiris: <<0:1, Len:31/unsigned>> and <<1:1, CompType:3, 0:4, NumRecs:16,
# UncompressedLen:32, Len:32>>.
_SIMPLE_HEADER = struct.Struct(">I")
_BATCH_HEADER = struct.Struct(">BHII")
_RECORD_SIZE = struct.Struct(">I")


def entries_crc(entries: Sequence[Entry]) -> int:
    """CRC-32 (zlib) of the entries as they are on the wire."""
    crc = 0
    for entry in entries:
        if isinstance(entry, SimpleEntry):
            crc = zlib.crc32(_SIMPLE_HEADER.pack(len(entry.data)), crc)
        else:
            header = _BATCH_HEADER.pack(
                0x80 | (int(entry.compression) << 4),
                entry.num_records,
                entry.uncompressed_length,
                len(entry.data),
            )
            crc = zlib.crc32(header, crc)
        crc = zlib.crc32(entry.data, crc)
    return crc


def chunk_records(
    chunk: OsirisChunk, *, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
) -> list[bytes]:
    """Every record of ``chunk`` in offset order, after checking its CRC and counts.

    Raises ``ChunkCrcMismatch``, ``MalformedChunk``, ``UnsupportedCompression`` or
    ``BatchTooLarge``.
    """
    crc = entries_crc(chunk.entries)
    if crc != chunk.chunk_crc:
        raise ChunkCrcMismatch(
            f"chunk {chunk.chunk_first_offset}: CRC-32 of the entries is 0x{crc:08x}, "
            f"the header says 0x{chunk.chunk_crc:08x}"
        )
    if len(chunk.entries) != chunk.num_entries:
        raise MalformedChunk(
            f"chunk {chunk.chunk_first_offset}: NumEntries is {chunk.num_entries} "
            f"but DataLength holds {len(chunk.entries)} entries"
        )
    records: list[bytes] = []
    for entry in chunk.entries:
        if isinstance(entry, SimpleEntry):
            records.append(entry.data)
        else:
            records.extend(_batch_records(entry, max_batch_size))
    if len(records) != chunk.num_records:
        raise MalformedChunk(
            f"chunk {chunk.chunk_first_offset}: NumRecords is {chunk.num_records} "
            f"but the entries hold {len(records)} records"
        )
    return records


def _batch_records(batch: SubEntryBatch, max_batch_size: int) -> list[bytes]:
    if batch.uncompressed_length > max_batch_size:
        raise BatchTooLarge(
            f"a sub-entry batch of {batch.uncompressed_length} bytes uncompressed exceeds "
            f"the limit of {max_batch_size}"
        )
    if batch.compression == CompressionType.NONE:
        raw = batch.data
    elif batch.compression == CompressionType.GZIP:
        inflater = zlib.decompressobj(wbits=31)  # 31: gzip container (what clients write)
        try:
            raw = inflater.decompress(batch.data, batch.uncompressed_length + 1)
        except zlib.error as error:
            raise MalformedChunk(f"a gzip sub-entry batch does not inflate: {error}") from None
    else:
        raise UnsupportedCompression(
            f"sub-entry batch compressed with {CompressionType(batch.compression).name}: "
            "only NONE and GZIP are supported"
        )
    if len(raw) != batch.uncompressed_length:
        raise MalformedChunk(
            f"a sub-entry batch declares {batch.uncompressed_length} bytes uncompressed "
            f"but holds {len(raw)}"
        )
    records: list[bytes] = []
    pos, end = 0, len(raw)
    while pos < end:
        if end - pos < 4:
            raise MalformedChunk("a sub-entry batch ends inside a record size")
        (size,) = _RECORD_SIZE.unpack_from(raw, pos)
        pos += 4
        if size > end - pos:
            raise MalformedChunk("a sub-entry batch ends inside a record")
        records.append(raw[pos : pos + size])
        pos += size
    if len(records) != batch.num_records:
        raise MalformedChunk(
            f"a sub-entry batch declares {batch.num_records} records but holds {len(records)}"
        )
    return records


def sub_entry_batch(messages: Sequence[bytes], compression: CompressionType) -> SubEntryBatch:
    """Messages as one sub-entry batch (uint32-size-prefixed records, compressed)."""
    if not 0 < len(messages) <= 0xFFFF:
        raise ValueError("a sub-entry batch holds 1..65535 messages")
    raw = b"".join(_RECORD_SIZE.pack(len(message)) + message for message in messages)
    if compression == CompressionType.NONE:
        data = raw
    elif compression == CompressionType.GZIP:
        data = gzip.compress(raw)
    else:
        raise UnsupportedCompression(
            f"cannot compress with {CompressionType(compression).name}: only NONE and GZIP"
        )
    return SubEntryBatch(
        compression=compression, num_records=len(messages), uncompressed_length=len(raw), data=data
    )
