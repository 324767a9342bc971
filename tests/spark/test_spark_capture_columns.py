"""The capture source's column-wise Arrow path gives exactly the rows of its row path.

Every protocol's golden vectors (valid and invalid, binary and MessagePack) recorded in a
capture, decoded by ``FrameLogRows.batches`` (Arrow batches built column by column from
record chunks) and by ``FrameLogRows.tuples`` (one tuple per record, the reference),
compared value for value in every mode, with chunks small enough that batches hold one
frame type, several, or only malformed frames.  No Spark session: the two paths are the
executor side of a task (tests/spark/test_spark_capture_source.py runs both through Spark).
Runs in about 2 seconds.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.support.protocols import VERSIONS, Version
from wirestream.runtime.capture import PROTOCOLS, CaptureWriter, get_protocol
from wirestream.runtime.capture.reader import scan_chunks, scan_records
from wirestream.runtime.errors import DecodeError
from wirestream.runtime.spark.capture_source import (
    MODES,
    FrameLogRows,
    frame_log_schema,
    piece_bytes,
    spark_module,
)


def version_of(name: str) -> Version:
    module = get_protocol(name).codec_module
    return next(v for v in VERSIONS if module.endswith(f".{v.protocol}.{v.version}"))


def recorded_frames(name: str) -> list[tuple[bytes, str]]:
    """(bytes, sender) of every golden vector of the protocol, valid and invalid, in the
    protocol's encoding; each goes on its own connection (a fresh context)."""
    protocol = get_protocol(name)
    version = version_of(name)
    key = "msgpack_hex" if protocol.encoding == "msgpack" else "hex"
    frames = []
    for vector in version.vectors() + version.vectors("_errors"):
        if key in vector and not (protocol.contextual and vector.get("ctx")):
            frames.append((bytes.fromhex(vector[key]), vector.get("sender") or "client"))
    return frames


def write(path: Path, name: str, frames: list[tuple[bytes, str]]) -> Path:
    with CaptureWriter(path / "golden.wscap", name, max_file_bytes=None) as capture:
        for n, (frame, sender) in enumerate(frames):
            direction = "out" if n % 3 else "in"
            # The recorded sender is the tapped side for "out", its peer for "in".
            side = sender if direction == "out" else ("server" if sender == "client" else "client")
            capture.record((n << 40) | n, direction, frame, side=side)  # type: ignore[arg-type]
        files = capture.files
    assert len(files) == 1
    return files[0]


def row_table(name: str, mode: str, path: Path) -> pa.Table:
    """The row path's tuples as an Arrow table of the frame log's schema."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(spark_module(get_protocol(name)).FRAME_LOG_SCHEMA, timezone="UTC")
    rows = list(FrameLogRows(name, mode).tuples(scan_records(path), str(path)))
    columns = [pa.array([row[k] for row in rows], type=f.type) for k, f in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def column_table(name: str, mode: str, path: Path, chunk: int) -> pa.Table:
    from pyspark.sql.pandas.types import to_arrow_schema

    frame_log = spark_module(get_protocol(name)).FRAME_LOG_SCHEMA
    chunks = scan_chunks(path, records_per_chunk=chunk)
    batches = list(FrameLogRows(name, mode).batches(chunks, frame_log, str(path)))
    return pa.Table.from_batches(batches, schema=to_arrow_schema(frame_log, timezone="UTC"))


# MySQL's packets are chosen by the phase the receiving machine is in (ctx.phase), which a
# capture reader does not keep: every MySQL vector names its phase, so a capture of them
# would be read in the default phase only (a known gap of the capture reader).
CAPTURE_DECODABLE = [name for name in PROTOCOLS if name != "mysql/10"]


@pytest.mark.parametrize("name", CAPTURE_DECODABLE)
@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_the_column_path_gives_the_row_path_rows_of_every_golden_vector(
    tmp_path: Path, name: str, mode: str
) -> None:
    frames = recorded_frames(name)
    assert frames, f"no golden vectors for {name}"
    path = write(tmp_path, name, frames)
    expected = row_table(name, mode, path)
    assert expected.num_rows > 0
    # 1: every batch one frame (one frame type); 3: mixed types and malformed frames;
    # 10,000: the whole capture in one batch.
    for chunk in (1, 3, 10_000):
        got = column_table(name, mode, path, chunk)
        assert got.schema == expected.schema
        if not got.equals(expected):  # say which row differs
            for k, (a, b) in enumerate(zip(got.to_pylist(), expected.to_pylist())):
                assert a == b, (chunk, k)
            assert got.num_rows == expected.num_rows
        assert got.equals(expected), chunk


@pytest.mark.parametrize("name", ["rsocket/1.0", "rabbitmq_stream/1", "rsio/0"])
def test_failfast_fails_the_column_path_as_the_row_path(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name, recorded_frames(name))
    with pytest.raises(DecodeError) as by_rows:
        row_table(name, "FAILFAST", path)
    with pytest.raises(DecodeError) as by_columns:
        column_table(name, "FAILFAST", path, 4)
    assert str(by_columns.value) == str(by_rows.value)
    assert "offset" in str(by_rows.value)


def test_large_timestamps_and_connection_ids_keep_their_values(tmp_path: Path) -> None:
    """u64 nanoseconds past 2**63 and connection ids past 2**63 (two's complement)."""
    codec = importlib.import_module("wirestream.generated.rsocket.v1_0")
    frame = codec.encode(codec.RequestN(stream_id=5, request_n=9))
    with CaptureWriter(tmp_path / "big.wscap", "rsocket/1.0", max_file_bytes=None) as capture:
        for n, when in enumerate([0, 999, 1000, (1 << 63) + 1234, (1 << 64) - 1]):
            capture.record((1 << 64) - 1 - n, "out", frame, timestamp_ns=when)
        (path,) = capture.files
    for mode in MODES:
        assert column_table("rsocket/1.0", mode, path, 2).equals(
            row_table("rsocket/1.0", mode, path)
        )


def test_partitions_are_equal_pieces_a_multiple_of_min_partitions() -> None:
    mib = 1 << 20
    assert piece_bytes([150 * mib], 64 * mib, 2) == 75 * mib // 2  # 4 pieces, not 64+64+22
    assert piece_bytes([100 * mib], 64 * mib, 2) == 50 * mib  # 2 pieces of 50
    assert piece_bytes([150 * mib], 64 * mib, 1) == 50 * mib  # 3 pieces of 50
    assert piece_bytes([10, 10, 10], 64 * mib, 2) == 15  # files cut at 15 bytes
    assert piece_bytes([1000], 64 * mib, 3) == 334
    assert piece_bytes([0], 64 * mib, 2) == 1


# --- the lean frame log (options schema and frameTypes) ------------------------------


def lean_tables(name: str, mode: str, path: Path, frame_types: tuple[str, ...], chunk: int) -> Any:
    """(row path, column path) tables of the lean frame log of ``frame_types``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    lean = frame_log_schema(name, True, frame_types)
    arrow_schema = to_arrow_schema(lean, timezone="UTC")
    rows = FrameLogRows(name, mode, frame_types)
    tuples = list(rows.tuples(scan_records(path), str(path), lean))
    by_rows = pa.Table.from_arrays(
        [pa.array([t[k] for t in tuples], type=f.type) for k, f in enumerate(arrow_schema)],
        schema=arrow_schema,
    )
    chunks = scan_chunks(path, records_per_chunk=chunk)
    batches = list(FrameLogRows(name, mode, frame_types).batches(chunks, lean, str(path)))
    return by_rows, pa.Table.from_batches(batches, schema=arrow_schema)


@pytest.mark.parametrize("name", CAPTURE_DECODABLE)
def test_the_null_columns_are_null_in_every_row_and_frame_type_names_its_column(
    tmp_path: Path, name: str
) -> None:
    """What the lean frame log leaves out, NULL_COLUMNS (from the IDL's ``frame_log`` and
    the codec's flags), is null in every row of the golden vectors; and a row's
    ``frame_type`` is its frame column's name in upper case (``frameTypes`` relies on it)."""
    spark = spark_module(get_protocol(name))
    full = row_table(name, "DROPMALFORMED", write(tmp_path, name, recorded_frames(name)))
    for column in spark.NULL_COLUMNS:
        assert full.column(column).null_count == full.num_rows, column
    for row in full.to_pylist():
        (held,) = [c for c in spark.FRAME_COLUMNS if row[c] is not None]
        assert row["frame_type"] == held.upper()


@pytest.mark.parametrize("name", CAPTURE_DECODABLE)
@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_the_lean_frame_log_is_the_full_ones_rows_of_its_frame_types_and_columns(
    tmp_path: Path, name: str, mode: str
) -> None:
    path = write(tmp_path, name, recorded_frames(name))
    full = row_table(name, mode, path)
    present = sorted(set(full.column("frame_type").to_pylist()) - {"MALFORMED"})
    for frame_types in ((), tuple(present[:2]), tuple(present[-1:])):
        lean = frame_log_schema(name, True, frame_types)
        kept = set(frame_types) | {"MALFORMED"}
        expected = [
            {k: row[k] for k in lean.names}
            for row in full.to_pylist()
            if not frame_types or row["frame_type"] in kept
        ]
        assert expected
        for chunk in (1, 3, 10_000):
            by_rows, by_columns = lean_tables(name, mode, path, frame_types, chunk)
            assert by_rows.to_pylist() == expected, (frame_types, chunk)
            assert by_columns.equals(by_rows), (frame_types, chunk)
