"""Splitting a message into frames of at most ``mtu`` bytes, and putting it back together.

Protocol.md, Fragmentation And Reassembly: "the (F)ollows flag ... indicates if more
fragments follow"; "When a PAYLOAD is fragmented, the Metadata MUST be transmitted
completely before the Data."  Which frame type carries which piece, and the F-flag
sequence rules, are the ``fragments`` machine's and the engine's; this module only
cuts and joins bytes, with a bound on what a peer can make us buffer.
"""

from __future__ import annotations

from typing import Final

from wirestream.runtime.rsocket.errors import FragmentOrderViolated, ReassemblyLimitExceeded

__all__ = ["MIN_MTU", "METADATA_LENGTH_SIZE", "split", "Reassembly"]

METADATA_LENGTH_SIZE: Final = 3  # "Metadata Length: (24 bits)"
MIN_MTU: Final = 64  # room for the largest fixed part (10 bytes) and useful content

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


class Reassembly:
    """The fragments of one message received so far, bounded by ``limit`` bytes."""

    __slots__ = ("limit", "size", "_metadata", "_data", "_has_metadata")

    def __init__(self, limit: int) -> None:
        self.limit = limit
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
