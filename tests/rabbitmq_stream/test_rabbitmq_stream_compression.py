"""Sub-entry batch codecs (runtime/rabbitmq_stream/compression.py): the Java client's
bytes, the Go client's batches read back, and precise, bounded failures.

The Java side is RabbitMQ's own stream client 1.11.0 (``DefaultCompressionCodecFactory``,
what its Environment uses): tests/support/java/rabbitmq CodecBytes compresses a batch exactly as
``Client.CompressedEncodedMessageBatch.close()`` does and decompresses ours; one JVM run
for the module. The Go side is tests/vectors/rabbitmq_stream_go_codecs (written by the Go
client's codec libraries with its exact calls; main.go there).
"""

from __future__ import annotations

import base64
import random
import struct
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.rabbitmq_java_peer import rabbitmq_java, run_java  # noqa: F401
from tests.support.rabbitmq_stream_test_broker import osiris_chunk
from wirestream.generated.rabbitmq_stream.v1 import CompressionType, SubEntryBatch
from wirestream.runtime.rabbitmq_stream import (
    BatchTooLarge,
    CorruptCompressedBatch,
    MalformedChunk,
    UncompressedSizeExceeded,
    UncompressedSizeMismatch,
    UnsupportedCompression,
    chunk_records,
    sub_entry_batch,
)
from wirestream.runtime.rabbitmq_stream.compression import (
    CODECS,
    compress,
    compression_type,
    decompress,
)

COMPRESSED = [kind for kind in CompressionType if kind != CompressionType.NONE]
IDS = [kind.name.lower() for kind in COMPRESSED]
GO_VECTORS = Path(__file__).parent.parent / "vectors" / "rabbitmq_stream_go_codecs"


def records(messages: list[bytes]) -> bytes:
    """The uncompressed batch: ``[uint32 size][message]`` each."""
    return b"".join(struct.pack(">I", len(m)) + m for m in messages)


def java_payload() -> list[bytes]:
    """Short text, an empty message, 70 KB of random bytes (several lz4 blocks) and
    200 KB of zeros (several zstd blocks)."""
    rng = random.Random(19)
    text = [f"message {i} hello hello".encode() for i in range(300)]
    return [*text, b"", rng.randbytes(70_000), bytes(200_000)]


@pytest.fixture(scope="module")
def java_codecs(rabbitmq_java: str) -> dict[str, Any]:  # noqa: F811
    """One CodecBytes run: the Java client's bytes for ``java_payload``, and its reading
    of ours (``decoded``)."""
    plain = records(java_payload())
    stdin = struct.pack(">I", len(plain)) + plain
    for kind in COMPRESSED:
        ours = compress(kind, plain)
        stdin += struct.pack(">BI", kind, len(ours)) + ours
    answers = run_java(rabbitmq_java, "CodecBytes", stdin=stdin)
    return {
        "plain": plain,
        "written": {a["codec"]: a for a in answers if "compressed" in a},
        "decoded": {a["codec"]: a for a in answers if "compressed" not in a},
    }


# --- the Java client ------------------------------------------------------------------


@pytest.mark.peer
@pytest.mark.parametrize("kind", COMPRESSED, ids=IDS)
def test_our_batch_bytes_equal_the_java_clients(java_codecs: dict[str, Any], kind: Any) -> None:
    """gzip (JDK GZIPOutputStream), snappy (xerial framed), lz4 (lz4-java frame, 64 KiB
    independent blocks) and zstd (zstd-jni, level 3): our compressed batch is byte for
    byte what the Java client writes for the same messages."""
    answer = java_codecs["written"][kind.name.lower()]
    java = base64.b64decode(answer["compressed"])
    assert compress(kind, java_codecs["plain"]) == java, answer["implementation"]


@pytest.mark.peer
@pytest.mark.parametrize("kind", COMPRESSED, ids=IDS)
def test_java_client_batches_read_back(java_codecs: dict[str, Any], kind: Any) -> None:
    java = base64.b64decode(java_codecs["written"][kind.name.lower()]["compressed"])
    plain = java_codecs["plain"]
    assert decompress(kind, java, len(plain)) == plain


@pytest.mark.peer
@pytest.mark.parametrize("kind", COMPRESSED, ids=IDS)
def test_java_client_reads_our_batches(java_codecs: dict[str, Any], kind: Any) -> None:
    answer = java_codecs["decoded"][kind.name.lower()]
    assert "error" not in answer, answer["error"]
    assert base64.b64decode(answer["plain"]) == java_codecs["plain"]


# --- the Go client --------------------------------------------------------------------


def go_batch_records(name: str) -> list[bytes]:
    """The messages main.go writes (``records`` there)."""
    if name == "small":
        return [f"hello from go {i}".encode() for i in range(10)]
    return [(f"record {i:05d} " * 10).encode() for i in range(3000)]


@pytest.mark.parametrize("name", ["small", "large"])
@pytest.mark.parametrize("kind", COMPRESSED, ids=IDS)
def test_go_client_batches_read_back(kind: CompressionType, name: str) -> None:
    """What rabbitmq-stream-go-client writes (lz4 with a content checksum and 4 MiB
    blocks, zstd with a checksum and an 8 MiB window, no content size) reads back."""
    data = (GO_VECTORS / f"{name}.{kind.name.lower()}").read_bytes()
    messages = go_batch_records(name)
    plain = records(messages)
    assert decompress(kind, data, len(plain)) == plain
    batch = SubEntryBatch(kind, len(messages), len(plain), data)
    assert chunk_records(osiris_chunk(0, [batch])) == messages


def test_go_vectors_carry_the_go_settings() -> None:
    """The vectors are what the Go client's defaults write, not what Java's do:
    lz4 FLG/BD 0x64 0x70 (content checksum, 4 MiB blocks), zstd frame header 0x04
    (checksum, no content size) with an 8 MiB window (0x68)."""
    assert (GO_VECTORS / "large.lz4").read_bytes()[4:6] == b"\x64\x70"
    assert (GO_VECTORS / "large.zstd").read_bytes()[4:6] == b"\x04\x68"


# --- round trips and settings ------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(list(CompressionType)),
    messages=st.lists(st.binary(max_size=300), min_size=1, max_size=40),
)
def test_every_codec_round_trips(kind: CompressionType, messages: list[bytes]) -> None:
    batch = sub_entry_batch(messages, kind)
    assert batch.compression == kind and batch.uncompressed_length == len(records(messages))
    assert chunk_records(osiris_chunk(0, [batch])) == messages


def test_frames_written_with_the_java_clients_settings() -> None:
    """Without a Java run: the headers say what lz4-java and zstd-jni write (lz4 FLG
    0x60 = version 1 + independent blocks, BD 0x40 = 64 KiB; zstd no checksum, no
    content size) and gzip has the JDK's header (mtime 0, XFL 0, OS 0xff)."""
    plain = records([b"x" * 1000])
    assert compress(CompressionType.GZIP, plain)[:10] == bytes.fromhex("1f8b08000000000000ff")
    assert compress(CompressionType.SNAPPY, plain)[:10] == b"\xff\x06\x00\x00sNaPpY"
    assert compress(CompressionType.LZ4, plain)[:6] == bytes.fromhex("04224d186040")
    frame = zstandard.get_frame_parameters(compress(CompressionType.ZSTD, plain))
    assert not frame.has_checksum and frame.content_size == zstandard.CONTENTSIZE_UNKNOWN


@pytest.mark.parametrize(
    "value, kind",
    [("none", CompressionType.NONE), ("GZIP", CompressionType.GZIP), ("Snappy", 2),
     (3, CompressionType.LZ4), (CompressionType.ZSTD, CompressionType.ZSTD)],
)  # fmt: skip
def test_compression_named_as_the_java_enum(value: Any, kind: int) -> None:
    assert compression_type(value) == kind
    assert set(CODECS) == {"none", "gzip", "snappy", "lz4", "zstd"}


@pytest.mark.parametrize("value", ["brotli", 5, -1, ""])
def test_unknown_compression_name_is_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="none, gzip, snappy, lz4, zstd"):
        compression_type(value)


# --- precise failures ------------------------------------------------------------------

PLAIN = records([b"hello" * 50, b"", bytes(range(256)) * 4])


def _corrupt(kind: CompressionType) -> list[bytes]:
    """Bytes the codec must refuse: a broken magic, a cut stream, bytes after the end."""
    good = compress(kind, PLAIN)
    broken = bytearray(good)
    broken[1] ^= 0xFF
    cases = [bytes(broken), good[: len(good) // 2], good + b"\x07junk-after"]
    if kind == CompressionType.SNAPPY:  # a chunk whose masked CRC-32C is wrong
        bad_crc = bytearray(good)
        bad_crc[14] ^= 0xFF  # stream id (10 bytes) + chunk header (4) -> the CRC
        cases.append(bytes(bad_crc))
    if kind == CompressionType.LZ4:  # a frame with a content checksum that is wrong
        checked = bytearray(lz4.frame.compress(PLAIN, content_checksum=True))
        checked[-1] ^= 0xFF
        cases.append(bytes(checked))
    if kind == CompressionType.ZSTD:  # a frame with a checksum that is wrong
        checked = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(PLAIN))
        checked[-1] ^= 0xFF
        cases.append(bytes(checked))
    return cases


@pytest.mark.parametrize("kind", COMPRESSED, ids=IDS)
def test_corrupt_batch_is_corrupt_compressed_batch(kind: CompressionType) -> None:
    """Data the codec refuses is ``CorruptCompressedBatch`` (a ``MalformedChunk``: the
    chunk fails, the connection goes on), never the binding's own exception."""
    for data in _corrupt(kind):
        with pytest.raises(CorruptCompressedBatch):
            decompress(kind, data, len(PLAIN))
        batch = SubEntryBatch(kind, 3, len(PLAIN), data)
        with pytest.raises(MalformedChunk):
            chunk_records(osiris_chunk(0, [batch]))


@pytest.mark.parametrize("kind", list(CompressionType), ids=lambda k: k.name.lower())
def test_batch_inflating_short_of_its_declared_size_is_size_mismatch(kind: CompressionType) -> None:
    """'UncompressedLen' one byte more than the stream holds: ``UncompressedSizeMismatch``."""
    with pytest.raises(UncompressedSizeMismatch):
        decompress(kind, compress(kind, PLAIN), len(PLAIN) + 1)


@pytest.mark.parametrize("kind", list(CompressionType), ids=lambda k: k.name.lower())
def test_batch_inflating_past_its_declared_size_is_size_exceeded(kind: CompressionType) -> None:
    """'UncompressedLen' one byte less than the stream holds (or 0):
    ``UncompressedSizeExceeded``."""
    data = compress(kind, PLAIN)
    for declared in (len(PLAIN) - 1, 0):
        with pytest.raises(UncompressedSizeExceeded):
            decompress(kind, data, declared)


BOMB = 32 * 1024 * 1024  # bytes a small batch inflates to
STEPS = 512 * 1024  # gzip/lz4 inflate 64 KiB at a time; a binding holds a few of those


def _bomb(kind: CompressionType) -> bytes:
    zeros = bytes(BOMB)
    if kind == CompressionType.GZIP:
        return zlib.compress(zeros, 9, wbits=31)
    if kind == CompressionType.ZSTD:  # streamed: no content size in the header
        stream = zstandard.ZstdCompressor(level=1).compressobj()
        return stream.compress(zeros) + stream.flush()
    return compress(kind, zeros)


@pytest.mark.parametrize("kind", COMPRESSED, ids=IDS)
def test_decompression_bomb_stops_at_the_declared_size(kind: CompressionType) -> None:
    """A batch that claims 1 MiB but inflates to 32 MiB: ``UncompressedSizeExceeded``,
    and what was allocated on the way (tracemalloc's peak) is the declared size, plus
    the bindings' copies of the compressed input (which the frame bounds) and fixed
    working steps -- nothing that grows with the 32 MiB (snappy refuses from its chunk
    headers before inflating anything)."""
    data = _bomb(kind)
    declared = 1024 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(UncompressedSizeExceeded):
            decompress(kind, data, declared)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < declared + 3 * len(data) + STEPS, (peak, len(data))


def test_batch_over_max_batch_size_is_refused_before_inflating() -> None:
    """'UncompressedLen' above the engine's ``max_batch_size``: ``BatchTooLarge``,
    whatever the codec, before anything is inflated."""
    for kind in COMPRESSED:
        batch = SubEntryBatch(kind, 1, 1 << 30, _bomb(kind)[:100])
        with pytest.raises(BatchTooLarge):
            chunk_records(osiris_chunk(0, [batch]), max_batch_size=1 << 20)


def test_compression_types_5_to_7_are_unsupported_compression() -> None:
    """'CompType:3' has room for 8 values; the Java client's enum ends at 4 (zstd)."""
    for code in (5, 6, 7):
        data = bytes([0x80 | code << 4]) + struct.pack(">HII", 1, 5, 5) + b"\x00\x00\x00\x01a"
        chunk = osiris_chunk(0, [SubEntryBatch(CompressionType.NONE, 1, 5, b"\x00\x00\x00\x01a")])
        chunk.data = data
        chunk.chunk_crc = zlib.crc32(data)
        with pytest.raises(UnsupportedCompression):
            chunk_records(chunk)
