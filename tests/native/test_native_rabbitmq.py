"""The native RabbitMQ chunk split gives the pure-Python path's records and errors (and
the native Publish encoder its bytes and errors).

``chunk_records`` checks a chunk's CRC-32 and splits its entries in Rust where
``wirestream.runtime._native`` is built (runtime/rust/wirestream-native/src/rabbitmq_chunk.rs),
decompressing sub-entry batches of every codec in Python; ``python_chunk_records`` is the
reference. Here both read the same chunks -- every Deliver of the committed fuzz corpora
(as they are, and with their CRC made right so the checks behind it are reached), chunks
of simple entries, of sub-entry batches of each codec (ours, and the Go client's bytes),
mixed, empty -- and thousands of mutations of them (bytes flipped, cut, added; counts
changed; the CRC recomputed or not), and must return the same records or raise the same
exception, class and message.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.rabbitmq_stream_test_broker import osiris_chunk
from wirestream.generated.rabbitmq_stream.v1 import (
    CompressionType,
    Deliver,
    DeliverV2,
    OsirisChunk,
    SimpleEntry,
    SubEntryBatch,
    decode,
)
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rabbitmq_stream import chunk as chunk_module
from wirestream.runtime.rabbitmq_stream.amqp import message as amqp_message
from wirestream.runtime.rabbitmq_stream.amqp import (
    AmqpMessage,
    AmqpValue,
    data_bodies,
    encode_body,
    encode_message,
    python_data_bodies,
)
from wirestream.runtime.rabbitmq_stream.chunk import (
    chunk_records,
    native_batch_split,
    native_split,
    python_chunk_records,
    sub_entry_batch,
)
from wirestream.runtime.rabbitmq_stream.publish_frames import encode_publish, native_publish

TESTS = Path(__file__).resolve().parent.parent
FUZZ_CORPORA = [TESTS / "fuzz" / "corpus" / name
                for name in ("codec.rabbitmq_stream.v1", "engine.rabbitmq_stream")]  # fmt: skip
GO_VECTORS = TESTS / "vectors" / "rabbitmq_stream_go_codecs"
VECTORS = TESTS / "vectors" / "rabbitmq_stream_v1.yaml"
MUTATIONS = 4_000


def test_the_extension_splits_chunks() -> None:
    # `make test` builds it (make native) first: a missing one is a build failure.
    assert native_split is not None, "wirestream.runtime._native is not built: run `make native`"
    chunk = osiris_chunk(7, [SimpleEntry(b"a"), SimpleEntry(b""), SimpleEntry(b"bc")])
    assert native_split(chunk.data, chunk.chunk_crc, 3, 3) == ([b"a", b"", b"bc"], False)
    # chunk_records takes the native path by default
    assert chunk_records.__kwdefaults__["split"] is native_split
    # and splits a sub-entry batch's records natively once it is uncompressed
    assert native_batch_split is not None
    raw = b"".join(struct.pack(">I", len(m)) + m for m in (b"a", b"", b"bc"))
    assert native_batch_split(raw, 3) == [b"a", b"", b"bc"]
    assert native_batch_split(bytearray(raw), 3) == [b"a", b"", b"bc"]
    assert native_batch_split(raw, 2) is None  # the count: Python's split raises
    assert native_batch_split(raw[:-1], 3) is None  # a record overruns


def test_the_native_path_never_judges(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk that is not exactly right comes back None: the Python path raises."""
    assert native_split is not None
    chunk = osiris_chunk(0, [SimpleEntry(b"abc")])
    assert native_split(chunk.data, chunk.chunk_crc ^ 1, 1, 1) is None  # CRC
    assert native_split(chunk.data, chunk.chunk_crc, 2, 1) is None  # NumEntries
    assert native_split(chunk.data, chunk.chunk_crc, 1, 2) is None  # NumRecords
    cut = chunk.data[:-1]
    assert native_split(cut, zlib.crc32(cut), 1, 1) is None  # an entry overruns


def test_the_environment_switch_forces_the_pure_path() -> None:
    import subprocess
    import sys

    code = "from wirestream.runtime.rabbitmq_stream import chunk; print(chunk.native_split)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**__import__("os").environ, "WIRESTREAM_NATIVE": "0"},
                          check=True)  # fmt: skip
    assert done.stdout.strip() == "None"


def outcome(read: Any, chunk: OsirisChunk) -> tuple[str, Any]:
    try:
        return "records", read(chunk)
    except ProtocolError as error:
        return type(error).__name__, str(error)


def corpus_chunks() -> Iterator[OsirisChunk]:
    """Every Deliver's chunk of the golden vectors and the committed fuzz corpora (the
    inputs that decode as one)."""
    for vector in yaml.safe_load(VECTORS.read_text()):
        if vector.get("frame") in ("Deliver", "DeliverV2"):
            yield decode(bytes.fromhex(vector["hex"]), None, "server").chunk
    for folder in FUZZ_CORPORA:
        for path in sorted(folder.iterdir()):
            data = path.read_bytes()
            for start in range(0, max(1, len(data) - 8)):
                try:
                    frame = decode(data[start:], None, "server")
                except (ProtocolError, ValueError, TypeError):
                    continue
                if isinstance(frame, (Deliver, DeliverV2)):
                    yield frame.chunk
                    break


def built_chunks() -> list[OsirisChunk]:
    rng = random.Random(28)
    messages = [rng.randbytes(rng.randrange(0, 300)) for _ in range(60)]
    chunks = [
        osiris_chunk(0, []),
        osiris_chunk(5, [SimpleEntry(m) for m in messages]),
        osiris_chunk(9, [SimpleEntry(b"x" * 100_000), SimpleEntry(b"")]),
    ]
    for kind in CompressionType:
        batch = sub_entry_batch(messages[:20], kind)
        chunks.append(osiris_chunk(0, [batch]))
        mixed = [SimpleEntry(b"first"), batch, SimpleEntry(b"mid"), batch, SimpleEntry(b"")]
        chunks.append(osiris_chunk(100, mixed))
        if kind != CompressionType.NONE:
            data = (GO_VECTORS / f"small.{kind.name.lower()}").read_bytes()
            go = [f"hello from go {i}".encode() for i in range(10)]
            plain = sum(4 + len(m) for m in go)
            chunks.append(osiris_chunk(0, [SubEntryBatch(kind, len(go), plain, data)]))
    return chunks


def mutated(chunk: OsirisChunk, rng: random.Random) -> OsirisChunk:
    data = bytearray(chunk.data)
    how = rng.randrange(6)
    if how == 0 and data:
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif how == 1 and data:
        del data[rng.randrange(len(data)) :]
    elif how == 2:
        data[rng.randrange(len(data) + 1) : 0] = rng.randbytes(rng.randrange(1, 12))
    elif how == 3 and len(data) >= 4:  # an entry header or size word rewritten
        at = rng.randrange(len(data) - 3)
        struct.pack_into(">I", data, at, rng.choice([0, 1, 0x7FFFFFFF, 0x80000000,
                                                     0xF0000000, rng.getrandbits(32)]))  # fmt: skip
    entries, records = chunk.num_entries, chunk.num_records
    if how == 4:
        entries = max(0, min(0xFFFF, entries + rng.choice([-1, 1])))
    if how == 5:
        records = max(0, records + rng.choice([-1, 1, 1000]))
    crc = zlib.crc32(bytes(data)) if rng.random() < 0.8 else chunk.chunk_crc
    return OsirisChunk(chunk_type=chunk.chunk_type, num_entries=entries, num_records=records,
                       timestamp=chunk.timestamp, epoch=chunk.epoch,
                       chunk_first_offset=chunk.chunk_first_offset, chunk_crc=crc,
                       data=bytes(data))  # fmt: skip


def with_crc(chunk: OsirisChunk) -> OsirisChunk:
    return OsirisChunk(chunk_type=chunk.chunk_type, num_entries=chunk.num_entries,
                       num_records=chunk.num_records, timestamp=chunk.timestamp,
                       epoch=chunk.epoch, chunk_first_offset=chunk.chunk_first_offset,
                       chunk_crc=zlib.crc32(chunk.data), data=chunk.data)  # fmt: skip


def test_native_and_python_agree_on_every_chunk() -> None:
    assert native_split is not None
    found = list(corpus_chunks())
    assert len(found) >= 4, "the vectors and the fuzz corpora hold Deliver frames"
    chunks = built_chunks() + found + [with_crc(c) for c in found]
    rng = random.Random(30)
    chunks += [mutated(rng.choice(chunks), rng) for _ in range(MUTATIONS)]
    kinds: dict[str, int] = {}
    native_records = 0
    for chunk in chunks:
        expected = outcome(python_chunk_records, chunk)
        assert outcome(chunk_records, chunk) == expected, chunk
        kinds[expected[0]] = kinds.get(expected[0], 0) + 1
        if native_split(chunk.data, chunk.chunk_crc, chunk.num_entries, chunk.num_records):
            native_records += 1
    # the mix reaches every verdict, and the native path reads a good share itself
    for kind in ("records", "ChunkCrcMismatch", "MalformedChunk"):
        assert kinds.get(kind, 0) >= 20, kinds
    assert len(kinds) >= 5, kinds  # compressed batches' own errors too
    assert native_records >= 200, native_records


def test_a_native_split_that_ignored_the_crc_would_be_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The comparison above can fail: a fast path that skips the CRC check hands over
    records the Python path refuses."""
    assert native_split is not None
    split = native_split

    def careless(data: bytes, crc: int, entries: int, records: int) -> Any:
        return split(data, zlib.crc32(data), entries, records)

    chunk = osiris_chunk(0, [SimpleEntry(b"abc")], crc=1)
    assert outcome(python_chunk_records, chunk)[0] == "ChunkCrcMismatch"
    assert outcome(lambda c: chunk_records(c, split=careless), chunk)[0] == "records"
    assert chunk_module.chunk_records is chunk_records


def test_native_and_python_data_bodies_agree_on_every_record() -> None:
    """``data_bodies`` (natively: ``amqp_data_bodies``) gives ``python_data_bodies``' list:
    the body of each record that is one Data section of up to 255 bytes, None for the
    others (Data of 256 bytes and more, amqp-value, sections before the body), on built
    records and thousands of mutations of them (bytes flipped, cut, added)."""
    assert amqp_message._native_data_bodies is not None, "make native"
    rng = random.Random(31)
    records = [encode_body(rng.randbytes(n)) for n in (0, 1, 100, 254, 255, 256, 1000)]
    records += [encode_body(rng.randbytes(rng.randrange(300))) for _ in range(400)]
    records += [encode_message(AmqpMessage(body=AmqpValue("text"))),
                encode_message(AmqpMessage(body=b"x", application_properties={"k": 1}))]  # fmt: skip
    records += [b"", b"\x00", b"\x00\x53\x75\xa0"]
    for _ in range(MUTATIONS):
        data = bytearray(rng.choice(records))
        how = rng.randrange(3)
        if how == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == 1 and data:
            del data[rng.randrange(len(data)) :]
        else:
            data[rng.randrange(len(data) + 1) : 0] = rng.randbytes(rng.randrange(1, 4))
        records.append(bytes(data))
    expected = python_data_bodies(records)
    assert data_bodies(records) == expected
    assert 200 <= sum(body is not None for body in expected) <= len(records) - 200
    # a list holding anything but bytes is the Python function's
    assert amqp_message._native_data_bodies([b"a", bytearray(b"b")]) is None


def test_native_publish_frames_are_the_python_ones_bytes_and_errors() -> None:
    """``encode_publish`` in Rust writes the Python loop's bytes, frames split at the same
    places; what it gives up on (a message over the limit, not bytes) the Python loop
    encodes or refuses with its own error."""
    assert native_publish is not None, "wirestream.runtime._native is not built: run `make native`"
    rng = random.Random(6)
    cases = 0
    for _ in range(600):
        count = rng.randrange(0, 40)
        messages: list[Any] = [rng.randbytes(rng.choice([0, 1, 5, 100, 300])) for _ in range(count)]
        if messages and rng.random() < 0.1:
            messages[rng.randrange(count)] = bytearray(b"not bytes")
        first = rng.choice([0, 1, 1 << 32, (1 << 64) - count - 1])
        ids = list(range(first, first + count))
        limit = rng.choice([13 + 12, 13 + 12 + 100, 200, 1_000, 4_096, 0xFFFFFFFF])
        publisher = rng.choice([0, 7, 255])

        def encoded(native: Any) -> tuple[str, Any]:
            try:
                return "bytes", encode_publish(limit, publisher, ids, messages, native=native)
            except ProtocolError as error:
                return type(error).__name__, str(error)

        expected = encoded(None)
        assert encoded(native_publish) == expected, (limit, publisher, ids[:1], count)
        cases += expected[0] == "bytes"
    assert cases >= 200
    one = [b"a" * 10, b"b" * 10]
    assert native_publish(4_096, 1, [5, 6], one) == encode_publish(
        4_096, 1, [5, 6], one, native=None
    )
    assert native_publish(30, 1, [5, 6], one) is None  # a message fits no frame: Python's call
