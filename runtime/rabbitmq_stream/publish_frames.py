"""Publish and PublishV2 frames, encoded for the producer's hot path.

'Publish => Key Version PublisherId PublishedMessages' (PROTOCOL.adoc): the messages go
out in as few frames as frame_max allows, each at most ``limit`` bytes. ``encode_publish``
and ``encode_sub_entries`` write the bytes directly: building a frame object per message
cost more than the broker's work per message (tests/rabbitmq_stream/test_rabbitmq_stream_engine_publish.py
proves the bytes identical to ``frame_bytes``). Where ``wirestream.runtime._native`` is built,
``encode_publish`` writes them in Rust (runtime/rust/wirestream-native/src/rabbitmq_chunk.rs),
a fast path that gives up (None) on anything but plain fitting messages, which the Python
loop then encodes or refuses (tests/native/test_native_rabbitmq.py: the same bytes and
errors). ``WIRESTREAM_NATIVE=0`` switches it off.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Final

from wirestream.generated.rabbitmq_stream.v1 import (
    PublishedMessageV2,
    PublishV2,
    SubEntryBatch,
    frame_bytes,
)
from wirestream.runtime._support import native_module
from wirestream.runtime.rabbitmq_stream.errors import MessageTooLarge, PublishingIdNotIncreasing

__all__ = ["encode_publish", "encode_publish_v2", "encode_sub_entries", "entry_fits"]

_PUBLISH_OVERHEAD: Final = 4 + 2 + 2 + 1 + 4  # size, key, version, publisher id, count
_PUBLISH_HEAD: Final = struct.Struct(
    ">IHHBI"
)  # 'Publish => Key Version PublisherId PublishedMessages'
_ENTRY_HEAD: Final = struct.Struct(">QI")  # 'PublishingId => uint64', <<0:1, Size:31>>
_BATCH_HEADER: Final = 1 + 2 + 4 + 4  # type/compression, records, uncompressed, size
_SUB_ENTRY_HEAD: Final = struct.Struct(">QBHII")  # PublishingId, then <<1:1, CompType:3, ...>>


def entry_fits(frame_max: int, message_size: int, filter_value: str | None = None,
               filtered: bool = False) -> bool:  # fmt: skip
    """Whether one message of ``message_size`` bytes fits a Publish frame (PublishV2 when
    ``filtered``) of at most ``frame_max`` bytes (0: no limit) -- the test
    ``encode_publish`` / ``encode_publish_v2`` apply, for a producer that refuses the
    message alone before it is queued with others."""
    if message_size > 0x7FFFFFFF:  # <<0:1, Size:31>>
        return False
    if not frame_max:
        return True
    if filtered:
        encoded = 0 if filter_value is None else len(filter_value.encode())
        return _PUBLISH_OVERHEAD + 8 + 2 + encoded + 4 + message_size <= frame_max
    return _PUBLISH_OVERHEAD + 12 + message_size <= frame_max


NativePublish = Callable[[int, int, list[int], list[bytes]], "bytes | None"]


def _load_native_publish() -> NativePublish | None:
    _native = native_module()
    encode: NativePublish | None = getattr(_native, "rabbitmq_encode_publish", None)
    return encode


native_publish: Final[NativePublish | None] = _load_native_publish()
"""The native ``encode_publish``, when built."""


def _check_last_id(ids: list[int]) -> None:
    if ids and ids[-1] > 0xFFFFFFFFFFFFFFFF:
        raise PublishingIdNotIncreasing(
            f"publishing id {ids[-1]} does not fit 'PublishingId => uint64'"
        )


def encode_publish(
    limit: int,
    publisher_id: int,
    ids: list[int],
    messages: Sequence[bytes],
    *,
    native: NativePublish | None = native_publish,
) -> bytes:
    """Publish frames of simple entries, at most ``limit`` bytes each: the bytes
    ``frame_bytes(Publish(publisher_id, [PublishedMessage(id, SimpleEntry(m))...]))``
    gives, written directly (``native``: the Rust fast path; None: Python only)."""
    _check_last_id(ids)
    if native is not None and type(messages) is list and type(ids) is list:
        try:
            data = native(limit, publisher_id, ids, messages)
        except (OverflowError, TypeError):  # an id or publisher id out of range: below
            data = None
        if data is not None:
            return data
    frames: list[bytes] = []
    parts: list[bytes] = []
    size = _PUBLISH_OVERHEAD
    count = 0
    entry_head = _ENTRY_HEAD.pack
    for pid, message in zip(ids, messages):
        entry_size = 12 + len(message)  # publishing id, <<0:1, Size:31>>, data
        if _PUBLISH_OVERHEAD + entry_size > limit or len(message) > 0x7FFFFFFF:
            raise MessageTooLarge(
                f"a message of {entry_size} bytes (with its headers) does not fit "
                f"frame_max {limit}"
            )
        if count and size + entry_size > limit:
            frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
            frames.extend(parts)
            parts, size, count = [], _PUBLISH_OVERHEAD, 0
        parts.append(entry_head(pid, len(message)))
        parts.append(message)
        size += entry_size
        count += 1
    if count:
        frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
        frames.extend(parts)
    return b"".join(frames)


def encode_publish_v2(
    limit: int,
    publisher_id: int,
    ids: list[int],
    messages: Sequence[bytes],
    filter_values: Sequence[str | None],
) -> bytes:
    """PublishV2 frames of at most ``limit`` bytes: 'PublishedMessage => PublishingId
    FilterValue Message' each."""
    _check_last_id(ids)
    frames: list[bytes] = []
    batch: list[PublishedMessageV2] = []
    size = _PUBLISH_OVERHEAD
    for pid, message, value in zip(ids, messages, filter_values):
        encoded = b"" if value is None else value.encode()
        if len(encoded) > 0x7FFF:
            raise ValueError("'FilterValue => string': at most 32767 bytes (int16 length)")
        entry_size = 8 + 2 + len(encoded) + 4 + len(message)
        if _PUBLISH_OVERHEAD + entry_size > limit or len(message) > 0x7FFFFFFF:
            raise MessageTooLarge(
                f"a message of {entry_size} bytes (with its headers) does not fit "
                f"frame_max {limit}"
            )
        if batch and size + entry_size > limit:
            frames.append(frame_bytes(PublishV2(publisher_id, batch)))
            batch, size = [], _PUBLISH_OVERHEAD
        batch.append(PublishedMessageV2(pid, value, message))
        size += entry_size
    if batch:
        frames.append(frame_bytes(PublishV2(publisher_id, batch)))
    return b"".join(frames)


def encode_sub_entries(
    limit: int, publisher_id: int, ids: list[int], batches: Sequence[SubEntryBatch]
) -> bytes:
    """Publish frames of sub-entry batches, at most ``limit`` bytes each, written
    directly as ``encode_publish`` does for simple entries (the same bytes as
    ``frame_bytes(Publish(publisher_id, [PublishedMessage(id, batch)...]))``)."""
    _check_last_id(ids)
    frames: list[bytes] = []
    parts: list[bytes] = []
    size = _PUBLISH_OVERHEAD
    count = 0
    head = _SUB_ENTRY_HEAD.pack
    for pid, batch in zip(ids, batches):
        entry_size = 8 + _BATCH_HEADER + len(batch.data)
        if _PUBLISH_OVERHEAD + entry_size > limit:
            raise MessageTooLarge(
                f"a sub-entry batch of {entry_size} bytes (with its headers) does not "
                f"fit frame_max {limit}"
            )
        if count and size + entry_size > limit:
            frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
            frames.extend(parts)
            parts, size, count = [], _PUBLISH_OVERHEAD, 0
        flags = 0x80 | (int(batch.compression) << 4)  # <<1:1, CompType:3, 0:4>>
        parts.append(
            head(pid, flags, batch.num_records, batch.uncompressed_length, len(batch.data))
        )
        parts.append(batch.data)
        size += entry_size
        count += 1
    if count:
        frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
        frames.extend(parts)
    return b"".join(frames)
