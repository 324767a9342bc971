"""Reading capture files: the header, the records of a byte range, and split planning.

``iter_records(path, start, end)`` yields the records whose first byte lies in
``[start, end)`` (``wirestream.runtime.capture.format`` says how a reader finds the first one and
why every record is owned by exactly one range); ``plan_ranges`` cuts a file into such
ranges of about N bytes, which is how the Spark source makes partitions.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from typing import Final, NamedTuple

from wirestream.runtime.capture.format import (
    FLAG_OUT,
    FLAG_SERVER,
    FLAGS_RESERVED,
    HEADER_CRC_SPAN,
    MAX_FILE_HEADER_SIZE,
    MAX_FRAME_LENGTH,
    RECORD,
    RECORD_HEADER_SIZE,
    CaptureError,
    Direction,
    FileHeader,
    Side,
    parse_file_header,
)

__all__ = [
    "CaptureRecord",
    "RawRecord",
    "RecordChunk",
    "RecordHeader",
    "read_header",
    "iter_records",
    "scan_records",
    "scan_chunks",
    "plan_ranges",
    "split_ranges",
]

READ_SIZE: Final = 1 << 20
"""Bytes read from the file at a time (a record larger than this is read whole)."""


class CaptureRecord(NamedTuple):
    """One recorded frame: when, which connection, which way, the bytes; then who did
    the recording (``side``) and where the record starts in its file (``offset``)."""

    timestamp_ns: int
    connection_id: int
    direction: Direction
    frame: bytes
    side: Side = "client"
    offset: int = 0

    @property
    def sender(self) -> Side:
        """Who sent the frame: the tapped side if it went out, its peer if it came in."""
        if self.direction == "out":
            return self.side
        return "client" if self.side == "server" else "server"


def read_header(path: str | os.PathLike[str]) -> FileHeader:
    """The file header of the capture at ``path`` (``CaptureError`` if it has none)."""
    with open(path, "rb", buffering=0) as file:
        return parse_file_header(os.pread(file.fileno(), MAX_FILE_HEADER_SIZE, 0), str(path))


def split_ranges(size: int, piece_bytes: int) -> list[tuple[int, int]]:
    """``[0, size)`` cut into consecutive ranges of ``piece_bytes`` (the last shorter)."""
    if piece_bytes < 1:
        raise ValueError(f"piece size must be positive, not {piece_bytes}")
    return [(a, min(a + piece_bytes, size)) for a in range(0, max(size, 1), piece_bytes)]


def plan_ranges(path: str | os.PathLike[str], piece_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges of about ``piece_bytes`` covering the file: each is read with
    ``iter_records(path, start, end)`` and together they yield every record once."""
    return split_ranges(os.path.getsize(path), piece_bytes)


_TORN: Final = -1  # _header_at: a torn final record (the end of the data)
_END: Final = -2  # _header_at: nothing at all at this position


class _Window:
    """A read-ahead window over the file: ``buf`` holds the bytes from offset ``base``."""

    __slots__ = ("fd", "base", "buf", "eof")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.base = 0
        self.buf = b""
        self.eof = False

    def ensure(self, pos: int, n: int) -> int:
        """Make ``buf`` cover ``[pos, pos + n)``; returns how many of those n bytes exist
        (fewer only at the end of the file)."""
        base, buf = self.base, self.buf
        if base <= pos and pos + n <= base + len(buf):
            return n
        keep = buf[pos - base :] if base <= pos <= base + len(buf) else b""
        wanted = max(n - len(keep), READ_SIZE)
        more = os.pread(self.fd, wanted, pos + len(keep))
        self.eof = len(more) < wanted
        self.base, self.buf = pos, keep + more
        return min(n, len(self.buf))


class _Records:
    """The record parser over one open file (see the format's reading rules)."""

    def __init__(self, fd: int, header: FileHeader, path: str) -> None:
        self.window = _Window(fd)
        self.sync = header.sync
        self.path = path

    def corrupt(self, offset: int, why: str) -> CaptureError:
        return CaptureError(f"corrupt record: {why}", path=self.path, offset=offset)

    def header_at(self, pos: int, *, strict: bool = True) -> tuple[int, int, int, int]:
        """(frame length, timestamp, connection id, flags) of the record at ``pos``, or
        (_TORN or _END, 0, 0, 0).  A bad header raises if ``strict``, else gives
        (_END - 1, ...) so that a resync moves on."""
        window = self.window
        have = window.ensure(pos, RECORD_HEADER_SIZE)
        if have < RECORD_HEADER_SIZE:
            if have == 0:
                return _END, 0, 0, 0
            start = pos - window.base
            partial = window.buf[start : start + have]
            if self.sync.startswith(partial[:4]):
                return _TORN, 0, 0, 0
            if not strict:
                return _END - 1, 0, 0, 0
            raise self.corrupt(pos, f"{have} bytes at the end that are not a record")
        i = pos - window.base
        buf = window.buf
        sync, length, timestamp, connection, flags, _, header_crc = RECORD.unpack_from(buf, i)
        if sync != self.sync:
            if not strict:
                return _END - 1, 0, 0, 0
            raise self.corrupt(pos, f"sync marker {sync.hex()}, expected {self.sync.hex()}")
        low, high = HEADER_CRC_SPAN
        if zlib.crc32(memoryview(buf)[i + low : i + high]) != header_crc:
            if not strict:
                return _END - 1, 0, 0, 0
            raise self.corrupt(pos, "header CRC mismatch")
        # The header CRC matched: from here on the fields are what a writer wrote.
        if length > MAX_FRAME_LENGTH:
            raise self.corrupt(
                pos, f"frame length {length} exceeds the maximum of {MAX_FRAME_LENGTH}"
            )
        if flags & FLAGS_RESERVED:
            raise self.corrupt(pos, f"reserved flag bits set ({flags:#04x})")
        return length, timestamp, connection, flags

    def frame_at(self, pos: int, length: int) -> bytes | None:
        """The frame of the record at ``pos`` whose header is valid; None if it is torn."""
        window = self.window
        total = RECORD_HEADER_SIZE + length
        if window.ensure(pos, total) < total:
            return None
        i = pos - window.base
        buf = window.buf
        frame = buf[i + RECORD_HEADER_SIZE : i + total]
        if zlib.crc32(frame) != RECORD.unpack_from(buf, i)[5]:
            raise self.corrupt(pos, "frame CRC mismatch")
        return frame

    def resync(self, start: int) -> int | None:
        """The offset of the first record at or after ``start`` (None: there is none)."""
        window = self.window
        pos = start
        while True:
            window.ensure(pos, RECORD_HEADER_SIZE)
            found = window.buf.find(self.sync, pos - window.base)
            if found < 0:
                if window.eof:
                    return None
                pos = max(pos, window.base + len(window.buf) - 3)  # a marker across reads
                window.ensure(pos, len(window.buf) + READ_SIZE)
                continue
            candidate = window.base + found
            length, timestamp, connection, flags = self.header_at(candidate, strict=False)
            if length == _END - 1:
                pos = candidate + 1  # a marker inside some frame's bytes: not a record
                continue
            if length in (_END, _TORN):
                return None
            if self.frame_at(candidate, length) is None:
                return None  # a genuine header whose frame is torn: the end of the data
            return candidate


RawRecord = tuple[int, int, int, int, bytes]
"""(offset, timestamp_ns, connection id, flags, frame): a record as ``scan_records``
yields it (flags as in the format: ``FLAG_OUT``, ``FLAG_SERVER``)."""

RecordHeader = tuple[bytes, int, int, int, int, int, int]
"""A record's header as ``RECORD`` unpacks it: (sync marker, frame length, timestamp_ns,
connection id, flags, frame CRC, header CRC)."""


class RecordChunk(NamedTuple):
    """Consecutive records of a file, column-wise: ``headers[k]`` and ``frames[k]`` are
    the k-th record's; the first starts at ``offset`` and each follows the one before
    (``offsets()``).  Records that do not lie back to back (frames read from a pcap
    file: ``wirestream.runtime.capture.pcap``) give their offsets in ``starts``."""

    offset: int
    headers: list[RecordHeader]
    frames: list[bytes]
    starts: list[int] | None = None

    def offsets(self) -> list[int]:
        """Where each record starts in the file."""
        if self.starts is not None:
            return self.starts
        starts, pos = [], self.offset
        for header in self.headers:
            starts.append(pos)
            pos += RECORD_HEADER_SIZE + header[1]
        return starts


CHUNK_RECORDS: Final = 10_000
"""Records per ``scan_chunks`` chunk, by default."""


def scan_chunks(
    path: str | os.PathLike[str],
    start: int = 0,
    end: int | None = None,
    records_per_chunk: int = CHUNK_RECORDS,
) -> Iterator[RecordChunk]:
    """The records of ``iter_records(path, start, end)`` in chunks of up to
    ``records_per_chunk``, checked exactly as it checks them (every sync marker, length,
    flags byte, header and frame CRC).  The loop for millions of records (the Spark
    source): per record it unpacks the header, computes the two CRCs, slices the frame and
    appends two list items -- no tuple of its own, no generator step (about half of
    ``scan_records``' cost per record)."""
    if records_per_chunk < 1:
        raise ValueError(f"records_per_chunk must be positive, not {records_per_chunk}")
    name = str(path)
    with open(path, "rb", buffering=0) as file:
        fd = file.fileno()
        header = parse_file_header(os.pread(fd, MAX_FILE_HEADER_SIZE, 0), name)
        records = _Records(fd, header, name)
        stop = float("inf") if end is None else end
        if start <= header.size:
            found: int | None = header.size
        else:
            found = records.resync(start)
        if found is None:
            return
        pos: int = found
        window = records.window
        sync = header.sync
        unpack_from = RECORD.unpack_from
        crc32 = zlib.crc32
        low, high = HEADER_CRC_SPAN
        headers: list[RecordHeader] = []
        frames: list[bytes] = []
        first = pos
        while True:
            # Fast path: whole, valid records already in the window.  Anything else (the
            # window's end, a bad header) goes through the careful path below, which
            # refills the window or raises the precise error.
            buf = window.buf
            view = memoryview(buf)
            size = len(buf)
            i = pos - window.base
            room = records_per_chunk - len(frames)
            add_header, add_frame = headers.append, frames.append
            while i + RECORD_HEADER_SIZE <= size and room:
                record = unpack_from(buf, i)
                marker, length, _, _, flags, frame_crc, header_crc = record
                if (
                    marker != sync
                    or crc32(view[i + low : i + high]) != header_crc
                    or length > MAX_FRAME_LENGTH
                    or flags & FLAGS_RESERVED
                ):
                    break
                if pos >= stop:
                    break  # the careful path checks this header again, then stops
                after = i + RECORD_HEADER_SIZE + length
                if after > size:
                    break
                frame = buf[i + RECORD_HEADER_SIZE : after]
                if crc32(frame) != frame_crc:
                    raise records.corrupt(pos, "frame CRC mismatch")
                add_header(record)
                add_frame(frame)
                pos += after - i
                i = after
                room -= 1
            view.release()
            if not room:
                yield RecordChunk(first, headers, frames)
                headers, frames, first = [], [], pos
                continue
            length, timestamp, connection, flags = records.header_at(pos)
            if length < 0 or pos >= stop:
                # The next range's first record was checked (header) before we stop, so
                # corruption at a boundary fails here instead of being skipped by a resync.
                break
            frame_or_torn = records.frame_at(pos, length)
            if frame_or_torn is None:
                break
            i = pos - window.base
            headers.append(RECORD.unpack_from(window.buf, i))
            frames.append(frame_or_torn)
            pos += RECORD_HEADER_SIZE + length
            if len(frames) == records_per_chunk:
                yield RecordChunk(first, headers, frames)
                headers, frames, first = [], [], pos
        if frames:
            yield RecordChunk(first, headers, frames)


def scan_records(
    path: str | os.PathLike[str], start: int = 0, end: int | None = None
) -> Iterator[RawRecord]:
    """``iter_records`` as plain tuples, for loops over millions of records (the Spark
    source): no object per record beyond the tuple and the frame's bytes."""
    name = str(path)
    with open(path, "rb", buffering=0) as file:
        fd = file.fileno()
        header = parse_file_header(os.pread(fd, MAX_FILE_HEADER_SIZE, 0), name)
        records = _Records(fd, header, name)
        stop = float("inf") if end is None else end
        if start <= header.size:
            found: int | None = header.size
        else:
            found = records.resync(start)
        if found is None:
            return
        pos: int = found
        window = records.window
        sync = header.sync
        unpack_from = RECORD.unpack_from
        crc32 = zlib.crc32
        low, high = HEADER_CRC_SPAN
        while True:
            # Fast path: whole, valid records already in the window.  Anything else (the
            # window's end, a bad header) goes through the careful path below, which
            # refills the window or raises the precise error.
            buf = window.buf
            view = memoryview(buf)
            size = len(buf)
            i = pos - window.base
            while i + RECORD_HEADER_SIZE <= size:
                marker, length, timestamp, connection, flags, frame_crc, header_crc = unpack_from(
                    buf, i
                )
                if (
                    marker != sync
                    or crc32(view[i + low : i + high]) != header_crc
                    or length > MAX_FRAME_LENGTH
                    or flags & FLAGS_RESERVED
                ):
                    break
                if pos >= stop:
                    return  # the next range's first header is checked: see the format
                after = i + RECORD_HEADER_SIZE + length
                if after > size:
                    break
                frame = buf[i + RECORD_HEADER_SIZE : after]
                if crc32(frame) != frame_crc:
                    raise records.corrupt(pos, "frame CRC mismatch")
                yield pos, timestamp, connection, flags, frame
                pos += after - i
                i = after
            view.release()
            length, timestamp, connection, flags = records.header_at(pos)
            if length < 0 or pos >= stop:
                # The next range's first record was checked (header) before we stop, so
                # corruption at a boundary fails here instead of being skipped by a resync.
                return
            frame_or_torn = records.frame_at(pos, length)
            if frame_or_torn is None:
                return
            yield pos, timestamp, connection, flags, frame_or_torn
            pos += RECORD_HEADER_SIZE + length


def iter_records(
    path: str | os.PathLike[str], start: int = 0, end: int | None = None
) -> Iterator[CaptureRecord]:
    """The records of the capture at ``path`` whose first byte lies in ``[start, end)``
    (``end`` None: to the end of the file), in file order.

    A torn final record ends the data quietly; anything else wrong raises
    ``CaptureError`` with the file and the offset.
    """
    for offset, timestamp, connection, flags, frame in scan_records(path, start, end):
        direction: Direction = "out" if flags & FLAG_OUT else "in"
        side: Side = "server" if flags & FLAG_SERVER else "client"
        yield CaptureRecord(timestamp, connection, direction, frame, side, offset)
