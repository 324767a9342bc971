"""Native batch decoding: capture records -> frame-log record batches, in Rust.

``wirestream.runtime._native`` (``runtime/rust/wirestream-native``, built by ``make native``; docs/rust.md,
"Native batch decoding") reads a capture's records with the generated Rust codecs and
writes the Arrow buffers of the protocol's Spark frame log (``FRAME_LOG_SCHEMA``);
``NativeFrameLog`` assembles them into a ``pyarrow.RecordBatch`` of exactly the schema's
types, with no cast and no Python object per frame.

It decodes every protocol version in its binary encoding (``native_protocols``: all but
``rsio/0+msgpack``), each through a frame-log mapping generated from the same plan as its
``spark.py`` (``generated/rust/frame_log``); a contextual version (MySQL, PostgreSQL,
Reactive Streams) with each connection's context, fed in record order as
``RecordDecoder`` feeds it.

This module is the one place that imports the extension for captures (RabbitMQ chunks:
``wirestream.runtime.rabbitmq_stream.chunk``).  Where it is not built (no Rust
on the machine) or does not decode the protocol, ``available`` says False and the caller
(the Spark capture source, ``wirestream capture stats``: ``count_records``) takes the
pure-Python path; setting ``WIRESTREAM_NATIVE=0`` in the environment forces that path
everywhere.  Both paths give the same rows and raise the same errors
(``tests/native/test_native_capture.py``): the records are checked by the same careful
path (``reader._Records``), and a frame the Rust codec refuses is decoded again by the
Python codec, whose exception is the one raised.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from wirestream.runtime.capture.format import (
    MAX_FILE_HEADER_SIZE,
    CaptureError,
    parse_file_header,
)
from wirestream.runtime.capture.reader import _Records

if TYPE_CHECKING:
    from wirestream.runtime._native import Counts, FrameLog

_native: ModuleType | None
try:
    from wirestream.runtime import _native
except ImportError:  # not built: `make native` (needs cargo); the pure-Python path is used
    _native = None

__all__ = [
    "ENV",
    "NativeFrameLog",
    "available",
    "count_records",
    "native_batches",
    "native_protocols",
    "record_batches",
]

ENV: Final = "WIRESTREAM_NATIVE"
"""``WIRESTREAM_NATIVE=0``: never use the extension (the pure-Python path everywhere)."""

_U64_MAX: Final = (1 << 64) - 1

T = TypeVar("T")

Failure = Callable[[int, int, int, int, bytes, str], None]
"""(offset, timestamp_ns, connection id, flags, frame, class name) of a frame the native
codec refused in FAILFAST mode: raises the Python path's error for it."""


def native_protocols() -> frozenset[str]:
    """The protocols the built extension decodes (empty when it is not built)."""
    if _native is None:
        return frozenset()
    return frozenset(_native.PROTOCOLS)


def available(protocol: str) -> bool:
    """Whether ``protocol``'s captures are read natively here (built, decoded natively,
    not switched off by ``WIRESTREAM_NATIVE=0``)."""
    return os.environ.get(ENV, "1") != "0" and protocol in native_protocols()


class NativeFrameLog:
    """One protocol's frame log built by the extension, a record batch at a time."""

    def __init__(self, protocol: str, mode: str, arrow_schema: Any) -> None:
        if _native is None:
            raise RuntimeError("wirestream.runtime._native is not built: run `make native`")
        self.log: FrameLog = _native.FrameLog(protocol, mode)
        self.schema = arrow_schema
        _check_layout(self.log.layout(), arrow_schema, protocol)

    def rows(self) -> int:
        return self.log.rows()

    def batch(self) -> Any:
        """The rows written so far as a record batch (the builder starts afresh).  The
        extension exports it through the Arrow C Data Interface and pyarrow imports it in
        one call, with the Spark schema it was checked against (``_check_layout``): its
        buffers are the extension's memory, lent (no copy), given back when pyarrow lets
        go of the batch."""
        import pyarrow as pa

        _, address = self.log.export()
        return pa.RecordBatch._import_from_c(address, self.schema)


def _check_layout(layout: Any, arrow_schema: Any, protocol: str) -> None:
    """The extension's columns must be the schema's, type for type: a mismatch (an
    extension built before an IDL change) is refused here, never cast batch by batch."""
    common, frames = layout
    built = [*common, *((name, "struct", True) for name, _ in frames)]
    expected = [
        (f.name, "struct" if f.type.num_fields else str(f.type), f.nullable) for f in arrow_schema
    ]
    for (name, fields), field in zip(frames, list(arrow_schema)[len(common) :]):
        expected.extend((f.name, str(f.type), f.nullable) for f in field.type)
        built.extend(fields)
    if built != expected:
        wrong = next((b, e) for b, e in zip(built + [None], expected + [None]) if b != e)
        raise RuntimeError(
            f"wirestream.runtime._native's frame log of {protocol} is not the Spark schema's "
            f"(built {wrong[0]}, schema {wrong[1]}): rebuild it with `make native`"
        )


def native_batches(
    path: str | os.PathLike[str],
    start: int,
    end: int | None,
    log: NativeFrameLog,
    rows_per_batch: int,
    failed: Failure,
) -> Iterator[Any]:
    """The record batches of the records ``reader.scan_chunks(path, start, end)`` yields,
    of up to ``rows_per_batch`` rows: the extension reads the file and runs the fast path
    (``scan_file``), ``reader._Records`` the careful one where it stops (a torn or bad
    record, the range's end), so every check and every error is the pure path's."""
    return _scan(path, start, end, log.log, rows_per_batch, failed, log.batch)


def _scan(
    path: str | os.PathLike[str],
    start: int,
    end: int | None,
    log: FrameLog,
    rows_per_batch: int,
    failed: Failure,
    take: Callable[[], T],
) -> Iterator[T]:
    """``native_batches``' reading, each full batch's rows handed to ``take`` (which
    exports them, or drops them: ``count_records``)."""
    if rows_per_batch < 1:
        raise ValueError(f"rows_per_batch must be positive, not {rows_per_batch}")
    assert _native is not None
    name = str(path)
    scan_file = log.scan_file
    with open(path, "rb", buffering=0) as file:
        fd = file.fileno()
        header = parse_file_header(os.pread(fd, MAX_FILE_HEADER_SIZE, 0), name)
        records = _Records(fd, header, name)
        stop = _U64_MAX if end is None else end
        found = header.size if start <= header.size else records.resync(start)
        if found is None:
            return
        pos: int = found
        checked = -1  # the position the careful path last found a whole record at
        while True:
            room = rows_per_batch - log.rows()
            next_pos, why, class_name = scan_file(name, pos, stop, header.sync, room)
            if why == _native.SCAN_FULL:
                pos = next_pos
                yield take()
                continue
            if why == _native.SCAN_FRAME_CRC:
                raise records.corrupt(next_pos, "frame CRC mismatch")
            if why == _native.SCAN_MALFORMED:
                length, timestamp, connection, flags = records.header_at(next_pos)
                frame = records.frame_at(next_pos, length)
                assert frame is not None  # the extension decoded it: it is whole
                failed(next_pos, timestamp, connection, flags, frame, str(class_name))
                raise CaptureError(  # failed() raises: the two decoders would disagree here
                    f"the native decoder refused the frame ({class_name}), the Python one not",
                    path=name,
                    offset=next_pos,
                )
            if next_pos == checked:
                raise RuntimeError(f"{name}: the native reader stalled at offset {next_pos}")
            pos = next_pos
            # The careful path, over its own window: the precise error, or the end of the
            # range or of the data (a record the extension could not take for any other
            # reason is taken on the next round: `checked` stops a loop).
            length, _, _, _ = records.header_at(pos)
            if length < 0 or pos >= stop:
                break
            if records.frame_at(pos, length) is None:
                break
            checked = pos
        if log.rows():
            yield take()


def record_batches(
    records: Iterable[tuple[int, int, int, int, bytes]],
    log: NativeFrameLog,
    rows_per_batch: int,
    failed: Failure,
) -> Iterator[Any]:
    """The record batches of records read elsewhere -- ``(offset, timestamp_ns,
    connection id, flags, frame)``, a pcap file's (``pcap_raw_records``) -- of up to
    ``rows_per_batch`` rows: each frame decoded and written by the extension (frames are
    at most ``MAX_FRAME_LENGTH``: the pcap reader's deframers refuse longer ones)."""
    return _add(records, log.log, rows_per_batch, failed, log.batch)


def _add(
    records: Iterable[tuple[int, int, int, int, bytes]],
    log: FrameLog,
    rows_per_batch: int,
    failed: Failure,
    take: Callable[[], T],
) -> Iterator[T]:
    """``record_batches``' adding, each full batch's rows handed to ``take``."""
    if rows_per_batch < 1:
        raise ValueError(f"rows_per_batch must be positive, not {rows_per_batch}")
    add, fits, rows = log.add, log.fits, log.rows
    for offset, timestamp, connection, flags, frame in records:
        if rows() >= rows_per_batch or not fits(len(frame)):
            yield take()
        class_name = add(frame, timestamp, connection, flags)
        if class_name is not None:
            failed(offset, timestamp, connection, flags, frame, class_name)
            raise CaptureError(  # failed() raises: the two decoders would disagree here
                f"the native decoder refused the frame ({class_name}), the Python one not",
                offset=offset,
            )
    if rows():
        yield take()


_COUNT_ROWS: Final = 10_000
"""Rows ``count_records`` lets the frame log build before dropping them."""


def count_records(
    protocol: str,
    paths: Iterable[str | os.PathLike[str]] = (),
    records: Iterable[tuple[int, int, int, int, bytes]] | None = None,
) -> Counts:
    """``wirestream capture stats``' counts of the capture files ``paths`` (or of
    ``records``, a pcap file's: ``(offset, timestamp_ns, connection id, flags, frame)``),
    every frame decoded by the extension (``available(protocol)`` must say so), none kept
    (``_native.Counts`` says what the tuple holds): a frame that does not decode counts as
    MALFORMED (PERMISSIVE), a corrupt record raises ``CaptureError`` as reading it in
    Python does (the same careful path)."""
    if _native is None:
        raise RuntimeError("wirestream.runtime._native is not built: run `make native`")
    log: FrameLog = _native.FrameLog(protocol, "PERMISSIVE")
    log.count()

    def never(*_: object) -> None:  # PERMISSIVE: no frame is refused
        raise AssertionError("a PERMISSIVE frame log refused a frame")

    for path in paths:
        for _ in _scan(path, 0, None, log, _COUNT_ROWS, never, log.discard):
            pass
    if records is not None:
        for _ in _add(records, log, _COUNT_ROWS, never, log.discard):
            pass
    return log.counts()
