"""Splitting a message into frames of at most ``mtu`` bytes, and putting it back together.

Protocol.md, Fragmentation And Reassembly: "the (F)ollows flag ... indicates if more
fragments follow"; "When a PAYLOAD is fragmented, the Metadata MUST be transmitted
completely before the Data."  The F-flag sequence rules are the ``fragments``
machine's (the engine passes each fragment through it); this module cuts a message into
the frames that carry it and joins them back, with a bound on what a peer can make us
buffer.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from wirestream.runtime.rsocket.errors import FragmentOrderViolated, ReassemblyLimitExceeded
from wirestream.runtime.rsocket.versions import Version

__all__ = ["MIN_MTU", "METADATA_LENGTH_SIZE", "split", "fragment", "Reassembly"]

METADATA_LENGTH_SIZE: Final = 3  # "Metadata Length: (24 bits)"
MIN_MTU: Final = 64  # room for the largest fixed part (10 bytes) and useful content
HEADER_SIZE: Final = 6  # stream id + type/flags: all a 1.0 continuation PAYLOAD adds

Piece = tuple["bytes | None", bytes]


def split(metadata: bytes | None, data: bytes, first_overhead: int, next_overhead: int,
          mtu: int) -> list[Piece]:  # fmt: skip
    """Cut (metadata, data) into per-frame pieces: metadata first, then data.

    ``first_overhead`` / ``next_overhead``: bytes of the first / of every later frame
    besides its metadata and data (header, fixed fields; not the 3-byte Metadata
    Length, which a piece with metadata adds).  A piece's metadata is None when the
    frame carries none (no M flag).  Every frame is at most ``mtu`` bytes.
    """
    pieces: list[Piece] = []
    md_left = metadata
    data_left = data
    overhead = first_overhead
    while True:
        room = mtu - overhead
        piece_md: bytes | None = None
        if md_left is not None:
            room -= METADATA_LENGTH_SIZE
            piece_md, md_left = md_left[:room], md_left[room:]
            room -= len(piece_md)
            if not md_left:
                md_left = None
        piece_data = b""
        if md_left is None and room > 0:
            piece_data, data_left = data_left[:room], data_left[room:]
        pieces.append((piece_md, piece_data))
        if md_left is None and not data_left:
            return pieces
        overhead = next_overhead


def fragment(frame: Any, version: Version, mtu: int) -> list[Any] | None:
    """The frames that carry ``frame`` (a request or a stream message) within ``mtu``
    bytes each, F set on all but the last; None when it fits in one frame."""
    metadata = frame.metadata
    body = len(frame.data) + (len(metadata) + METADATA_LENGTH_SIZE if metadata is not None else 0)
    encoded_size = len(frame.to_bytes())
    if encoded_size <= mtu:
        return None
    first_overhead = encoded_size - body
    continuation_is_payload = version.continuation_is_payload
    next_overhead = HEADER_SIZE if continuation_is_payload else first_overhead
    pieces = split(metadata, frame.data, first_overhead, next_overhead, mtu)
    complete = bool(getattr(frame, "complete", False))
    is_request = type(frame) in version.request_models
    frames = []
    last_index = len(pieces) - 1
    for index, (piece_metadata, piece_data) in enumerate(pieces):
        last = index == last_index
        if index == 0 or not continuation_is_payload:
            piece = copy.copy(frame)  # 0.2 (IDL M3): continuations have the first's type
        else:
            # 1.0: "followed by a sequence of PAYLOAD frames"; N on every fragment of a
            # request (a PAYLOAD needs N or C), C only on the last (IDL M3).
            piece = version.payload(stream_id=frame.stream_id,
                                    next=True if is_request else frame.next)  # fmt: skip
        piece.metadata = piece_metadata
        piece.data = piece_data
        piece.follows = not last
        if hasattr(piece, "complete"):
            piece.complete = complete and last
        frames.append(piece)
    return frames


class Reassembly:
    """The fragments of one message received so far, bounded by ``limit`` bytes;
    ``first`` is the message's first frame (its type and fields make the whole one)."""

    __slots__ = ("limit", "first", "size", "_metadata", "_data", "_has_metadata")

    def __init__(self, limit: int, first: Any) -> None:
        self.limit = limit
        self.first = first
        self.size = 0
        self._metadata: list[bytes] = []
        self._data: list[bytes] = []
        self._has_metadata = False

    def add(self, metadata: bytes | None, data: bytes) -> None:
        """Append one fragment's pieces (raises when the peer breaks the rules)."""
        self.size += len(data) + (len(metadata) if metadata is not None else 0)
        if self.size > self.limit:
            raise ReassemblyLimitExceeded(
                f"a fragmented message exceeds the reassembly limit of {self.limit} bytes"
            )
        if metadata is not None:
            if self._data and any(self._data):
                raise FragmentOrderViolated(
                    "metadata after data: 'the Metadata MUST be transmitted completely before"
                    " the Data'"
                )
            self._has_metadata = True
            self._metadata.append(metadata)
        if data:
            self._data.append(data)

    def result(self) -> tuple[bytes | None, bytes]:
        metadata = b"".join(self._metadata) if self._has_metadata else None
        return metadata, b"".join(self._data)

    def whole(self, last: Any) -> Any:
        """The message, once ``last`` (already ``add``-ed) ended it: the first frame with
        every fragment's metadata and data, and the flags of the sequence."""
        whole = self.first
        whole.metadata, whole.data = self.result()
        whole.follows = False
        if hasattr(whole, "complete") and hasattr(last, "complete"):
            whole.complete = last.complete  # C of the last fragment (IDL M3)
        if hasattr(whole, "next") and hasattr(last, "next"):
            whole.next = whole.next or last.next
        return whole
