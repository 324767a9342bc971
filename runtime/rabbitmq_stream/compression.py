"""The five sub-entry batch codecs: what the Java client writes, and reading back what
the Java and Go clients write, never holding more than the declared size.

A sub-entry batch is ``<<1:1, CompType:3, 0:4, NumRecs:16, UncompressedLen:32, Len:32,
Data>>`` (PROTOCOL.adoc, Publish); ``Data`` is ONE codec stream over the concatenated
``[uint32 size][message]`` records (the Java client writes every record into one
``OutputStream`` of its codec, then ``flush()`` and ``close()``:
Client.java:1950-2020 ``CompressedEncodedMessageBatch.close``). CompType is the Java
client's ``Compression`` enum (compression/Compression.java): 0 none, 1 gzip, 2 snappy,
3 lz4, 4 zstd. The broker never decompresses: compatibility is each client decoding
what the other wrote. Java's ``DefaultCompressionCodecFactory`` (CompressionUtils.java):

========  ==========================================  ===================================
codec     Java 1.11.0 writes                          here (binding)
========  ==========================================  ===================================
gzip      JDK ``GZIPOutputStream``: one RFC 1952      stdlib ``zlib``, level 6, header
          member, deflate level 6, header             patched to the JDK's OS byte (0xff)
          ``1f8b0800 00000000 00ff``
snappy    xerial ``SnappyFramedOutputStream``:        ``cramjam.snappy`` (its ``compress``
          Google's snappy *framing* format            is that framing; ``compress_raw`` is
          (``ff060000 sNaPpY``, masked CRC-32C)       not)
lz4       lz4-java ``LZ4FrameOutputStream(64 KiB,     ``lz4.frame`` with exactly those
          BLOCK_INDEPENDENCE)``: LZ4 frame, no        settings (cramjam's lz4 cannot pick
          checksums, no content size                  the block size)
zstd      zstd-jni ``ZstdOutputStream``: level 3,     ``zstandard``, level 3, the same
          no checksum, no content size; ``flush()``   flush-a-block-then-end sequence
          ends a block, ``close()`` adds an empty     (cramjam's zstd cannot flush a
          last block                                  block)
========  ==========================================  ===================================

With those settings the output is byte for byte the Java client's (proved by
tests/rabbitmq_stream/test_rabbitmq_stream_compression.py against ``DefaultCompressionCodecFactory``).
Reading accepts what the Go client (``rabbitmq-stream-go-client``,
pkg/stream/aggregation.go) writes too: lz4 frames with a content checksum and 4 MiB
blocks (pierrec/lz4 defaults), zstd frames with a checksum and an 8 MiB window
(klauspost defaults); and, as the Java decoders do, several gzip members, lz4 frames
or zstd frames one after the other.

Decompression never holds more than the declared ``UncompressedLen`` (which the caller
bounds: ``max_batch_size``): output goes into a buffer of that size or is asked for
with that limit, and one more byte is asked for only to tell a stream that goes on
(``UncompressedSizeExceeded``) from one that ends there; snappy's chunk sizes are
added up before anything is inflated. Every failure is precise:
``CorruptCompressedBatch`` (the codec refuses the bytes), ``UncompressedSizeMismatch``
(fewer bytes than declared), ``UncompressedSizeExceeded`` (more). (zstd keeps its
window, at most libzstd's default limit of 128 MiB, as address space: only the pages
it writes, at most the declared size, are touched.)
"""

from __future__ import annotations

import threading
import zlib
from typing import Final

import cramjam
import lz4.frame
import zstandard

from wirestream.generated.rabbitmq_stream.v1 import CompressionType
from wirestream.runtime.rabbitmq_stream.errors import (
    CorruptCompressedBatch,
    UncompressedSizeExceeded,
    UncompressedSizeMismatch,
    UnsupportedCompression,
)

__all__ = ["compress", "decompress", "compression_type", "CODECS"]

CODECS: Final[dict[str, CompressionType]] = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
"""The codecs by the names the Java client's ``Compression`` enum gives them."""


def compression_type(value: str | int) -> CompressionType:
    """``"zstd"`` (any case), ``4`` or ``CompressionType.ZSTD`` -> ``CompressionType``;
    ``ValueError`` naming the five codecs otherwise."""
    if isinstance(value, str):
        kind = CODECS.get(value.lower())
        if kind is not None:
            return kind
    elif value in CompressionType._value2member_map_:
        return CompressionType(value)
    raise ValueError(f"compression {value!r} is none of {', '.join(CODECS)}")


# --- writing: the Java client's bytes --------------------------------------------------

_GZIP_OS: Final = 9  # RFC 1952 header: ID1 ID2 CM FLG MTIME(4) XFL OS
_JDK_OS: Final = 0xFF  # GZIPOutputStream writes OS "unknown"; zlib writes 3 (Unix)
_LZ4_JAVA: Final[dict[str, object]] = dict(  # lz4-java's LZ4FrameOutputStream, as Java uses it
    block_size=lz4.frame.BLOCKSIZE_MAX64KB,  # BLOCKSIZE.SIZE_64KB
    block_linked=False,  # FLG.Bits.BLOCK_INDEPENDENCE
    content_checksum=False,  # not among the FLG bits it sets
    store_size=False,  # the stream does not know the size up front
)
_ZSTD_LEVEL: Final = 3  # zstd-jni's ZstdOutputStream default (Zstd.defaultCompressionLevel)


class _Zstd(threading.local):
    """One zstd context per thread (a context is not safe to share, and costly to make
    per batch)."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_zstd = _Zstd()


def compress(compression: CompressionType, plain: bytes) -> bytes:
    """``plain`` (the concatenated ``[uint32 size][message]`` records) as the Java client
    compresses it with ``compression``."""
    if compression == CompressionType.NONE:
        return plain
    if compression == CompressionType.GZIP:
        deflater = zlib.compressobj(6, zlib.DEFLATED, 31)  # Deflater.DEFAULT_COMPRESSION; gzip
        out = bytearray(deflater.compress(plain))
        out += deflater.flush()
        out[_GZIP_OS] = _JDK_OS
        return bytes(out)
    if compression == CompressionType.SNAPPY:
        return bytes(cramjam.snappy.compress(plain))
    if compression == CompressionType.LZ4:
        framed: bytes = lz4.frame.compress(plain, **_LZ4_JAVA)
        return framed
    if compression == CompressionType.ZSTD:
        # ZstdOutputStream: write, flush() (ends the block), close() (an empty last block).
        stream = _zstd.compressor.compressobj()
        return b"".join((stream.compress(plain), stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK),
                         stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)))  # fmt: skip
    raise ValueError(f"compression {compression!r} is none of {', '.join(CODECS)}")


# --- reading: bounded by the declared size ---------------------------------------------


def decompress(compression: CompressionType, data: bytes, size: int) -> bytes | bytearray:
    """The ``size`` bytes that ``data`` inflates to (``data`` itself for NONE, else a
    ``bytearray`` of exactly ``size`` bytes, the only output buffer made);
    ``CorruptCompressedBatch``, ``UncompressedSizeMismatch`` or
    ``UncompressedSizeExceeded`` otherwise."""
    plain: bytes | bytearray
    if compression == CompressionType.NONE:
        plain = data
    elif compression == CompressionType.GZIP:
        plain = _gunzip(data, size)
    elif compression == CompressionType.SNAPPY:
        plain = _unsnappy(data, size)
    elif compression == CompressionType.LZ4:
        plain = _unlz4(data, size)
    elif compression == CompressionType.ZSTD:
        plain = _unzstd(data, size)
    else:
        raise UnsupportedCompression(f"compression type {int(compression)} is none of 0..4")
    if len(plain) < size:
        raise UncompressedSizeMismatch(
            f"a {compression.name} sub-entry batch declares {size} bytes uncompressed "
            f"but holds {len(plain)}"
        )
    if len(plain) > size:  # only NONE gets here: the codecs stop at ``size``
        raise UncompressedSizeExceeded(
            f"a {compression.name} sub-entry batch declares {size} bytes uncompressed "
            f"but holds {len(plain)}"
        )
    return plain


def _exceeded(codec: str, size: int) -> UncompressedSizeExceeded:
    return UncompressedSizeExceeded(
        f"a {codec} sub-entry batch inflates to more than the {size} bytes it declares"
    )


# gzip and lz4 inflate step by step into the one output buffer: the bindings return new
# bytes objects, so asking for everything at once would hold the output twice (the
# binding's growing buffer, then its final copy), and they copy the input they did not
# consume at each call, so the input goes in slices too.
_IN_STEP: Final = 64 * 1024
_OUT_STEP: Final = 64 * 1024


def _gunzip(data: bytes, size: int) -> bytearray:
    """RFC 1952 members one after the other (GZIPInputStream reads on past the first)."""
    out = bytearray(size)
    filled, pos, end = 0, 0, len(data)
    inflater = zlib.decompressobj(wbits=31)
    tail, pending, fed = b"", False, False
    try:
        while tail or pos < end or pending:
            if inflater.eof:  # the next member starts in what is left
                inflater = zlib.decompressobj(wbits=31)
            if not tail and not pending:
                tail = data[pos : pos + _IN_STEP]
                pos += len(tail)
            limit = min(size - filled, _OUT_STEP) or 1  # (zlib reads 0 as "no limit")
            piece = inflater.decompress(tail, limit)
            fed = True
            if len(piece) > size - filled:
                raise _exceeded("GZIP", size)
            out[filled : filled + len(piece)] = piece
            filled += len(piece)
            pending = len(piece) == limit and not inflater.eof  # more output may wait
            tail = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
    except zlib.error as error:
        raise CorruptCompressedBatch(f"a GZIP sub-entry batch does not inflate: {error}") from None
    if fed and not inflater.eof:
        raise CorruptCompressedBatch("a GZIP sub-entry batch ends inside a member")
    return out if filled == size else out[:filled]


def _unlz4(data: bytes, size: int) -> bytearray:
    """LZ4 frames one after the other (LZ4FrameInputStream reads on past the first)."""
    out = bytearray(size)
    filled, pos, end = 0, 0, len(data)
    frame = lz4.frame.LZ4FrameDecompressor()
    fed = False
    try:
        while True:
            if frame.eof:  # the next frame starts in what is left
                tail = frame.unused_data or b""
                if not tail and pos >= end:
                    break
                frame = lz4.frame.LZ4FrameDecompressor()
            elif frame.needs_input:
                if pos >= end:
                    break
                tail = data[pos : pos + _IN_STEP]
                pos += len(tail)
            else:  # output waits inside the decompressor
                tail = b""
            limit = min(size - filled, _OUT_STEP) or 1
            piece = frame.decompress(tail, max_length=limit)
            fed = True
            if len(piece) > size - filled:
                raise _exceeded("LZ4", size)
            out[filled : filled + len(piece)] = piece
            filled += len(piece)
    except RuntimeError as error:  # python-lz4 reports LZ4F errors so
        raise CorruptCompressedBatch(f"an LZ4 sub-entry batch does not inflate: {error}") from None
    if fed and not frame.eof:
        raise CorruptCompressedBatch("an LZ4 sub-entry batch ends inside a frame")
    return out if filled == size else out[:filled]


def _unzstd(data: bytes, size: int) -> bytearray:
    """zstd frames one after the other (ZstdInputStream reads on past the first),
    inflated straight into the output buffer."""
    out = bytearray(size)
    view = memoryview(out)
    filled = 0
    try:
        reader = _zstd.decompressor.stream_reader(data, read_across_frames=True)
        while filled < size:
            count = reader.readinto(view[filled:])
            if not count:
                break
            filled += count
        if filled == size and reader.read(1):
            raise _exceeded("ZSTD", size)
        if filled < size and not _zstd_frames_end(data):
            raise CorruptCompressedBatch("a ZSTD sub-entry batch ends inside a frame")
    except zstandard.ZstdError as error:
        raise CorruptCompressedBatch(f"a ZSTD sub-entry batch does not inflate: {error}") from None
    finally:
        view.release()
    return out if filled == size else out[:filled]


def _zstd_frames_end(data: bytes) -> bool:
    """Whether the last frame of ``data`` is complete (the stream reader stops quietly
    where the input ends). Only asked of a batch already found short of its size: its
    frames inflate to less than that size."""
    rest = data
    while rest:
        frame = _zstd.decompressor.decompressobj()
        frame.decompress(rest)
        if not frame.eof:
            return False
        rest = frame.unused_data
    return True


def _unsnappy(data: bytes, size: int) -> bytearray:
    """Google's snappy framing format: the chunks' sizes are added up first (nothing is
    inflated when they exceed ``size``), then cramjam inflates into ``size`` bytes and
    checks every chunk's CRC-32C."""
    total = _snappy_frames_size(data, size)
    if total < size:
        raise UncompressedSizeMismatch(
            f"a SNAPPY sub-entry batch declares {size} bytes uncompressed but its chunks "
            f"hold {total}"
        )
    out = bytearray(size)
    try:
        written = cramjam.snappy.decompress_into(data, out)
    except cramjam.DecompressionError as error:
        raise CorruptCompressedBatch(
            f"a SNAPPY sub-entry batch does not inflate: {error}"
        ) from None
    if written != size:
        raise CorruptCompressedBatch(
            f"a SNAPPY sub-entry batch's chunks announce {size} bytes but inflate to {written}"
        )
    return out


_SNAPPY_MAX_CHUNK: Final = 65_536  # framing_format.txt: "at most 65536 bytes" uncompressed


def _snappy_frames_size(data: bytes, size: int) -> int:
    """The uncompressed size the chunks of a framed snappy stream announce
    (framing_format.txt: ``[type:1][length:3 LE][...]``; 0x00 compressed = masked
    CRC-32C + a raw block whose varint preamble is its size; 0x01 uncompressed = CRC +
    the bytes; 0xff stream identifier and 0x80-0xfe skippable; 0x02-0x7f reserved)."""
    total, pos, end = 0, 0, len(data)
    while pos < end:
        if end - pos < 4:
            raise CorruptCompressedBatch("a SNAPPY sub-entry batch ends inside a chunk header")
        kind = data[pos]
        length = data[pos + 1] | data[pos + 2] << 8 | data[pos + 3] << 16
        pos += 4
        if length > end - pos:
            raise CorruptCompressedBatch(
                f"a SNAPPY chunk of {length} bytes overruns the batch ({end - pos} left)"
            )
        if kind == 0x00:
            chunk = _varint(data, pos + 4, pos + length)
        elif kind == 0x01:
            chunk = length - 4
        elif kind >= 0x80:  # 0xff: the stream identifier (cramjam checks it); skippable
            chunk = 0
        else:
            raise CorruptCompressedBatch(f"a SNAPPY chunk of reserved type 0x{kind:02x}")
        if not 0 <= chunk <= _SNAPPY_MAX_CHUNK:
            raise CorruptCompressedBatch(f"a SNAPPY chunk announces {chunk} bytes")
        total += chunk
        if total > size:
            raise _exceeded("SNAPPY", size)
        pos += length
    return total


def _varint(data: bytes, pos: int, end: int) -> int:
    """The little-endian base-128 preamble of a raw snappy block (its size)."""
    value, shift = 0, 0
    while pos < end and shift < 35:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        pos += 1
        shift += 7
    raise CorruptCompressedBatch("a SNAPPY chunk's size preamble is cut or too long")
