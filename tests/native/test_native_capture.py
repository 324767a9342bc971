"""``wirestream.runtime._native`` gives the pure-Python path's rows and errors.

The capture source reads a ``.wscap`` file natively where the extension is built
(``wirestream.runtime.capture.native``; ``make native``, which ``make test`` runs first).
Here the two paths read the same captures -- every input of the cross-language corpus of
every protocol version decoded natively (golden, golden errors, differential and mutated
frames; the mappings are generated: generated/rust/frame_log), as a capture file and as a
pcapng, and for RSocket 1.0 also frames larger than the reader's window, and corrupt, torn
and split files -- and must give equal Arrow tables in every mode, the same error class
for every refused frame, and the same exception, message and all, where they fail. No Spark session: this is the executor side
of a task (``FrameLogRows``). About a minute, a third of it building the corpora.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.crosslang.corpus import VARIANTS, build
from wirestream.generated.rsocket import v1_0 as codec
from wirestream.runtime.capture import CaptureWriter, get_protocol, native, plan_ranges
from wirestream.runtime.capture.format import (
    FLAG_OUT,
    FLAG_SERVER,
    RECORD_HEADER_SIZE,
    CaptureError,
    Direction,
    Side,
)
from wirestream.runtime.capture.pcap import PcapReader, write_pcapng
from wirestream.runtime.capture.reader import scan_chunks
from wirestream.runtime.errors import DecodeError, ProtocolError
from wirestream.runtime.spark.capture_source import (
    MODES,
    FrameLogRows,
    frame_log_schema,
    pcap_chunks,
    pcap_raw_records,
    spark_module,
)

NAME = "rsocket/1.0"

# Every version the extension decodes (generated/rust/frame_log): all in their binary
# encoding, the contextual ones (MySQL, PostgreSQL, rsio) with each connection's context.
NATIVE = ["bpmux/rel", "mqtt/5", "mysql/10", "postgresql/3", "rabbitmq_stream/1",
          "rabbitmq_stream/draft", "rsio/0", "rsocket/0.2", NAME]  # fmt: skip
# Rust does not spell Reactive Streams' MessagePack encoding.
PURE_ONLY = ["rsio/0+msgpack"]


def test_the_extension_is_built_and_decodes_rsocket() -> None:
    # `make test` builds it (make native) before the tests: a missing one is a build
    # failure to fix, not a reason to test less.
    assert native._native is not None, "wirestream.runtime._native is not built: run `make native`"
    assert NAME in native.native_protocols()
    assert native.available(NAME)


def test_every_binary_version_is_decoded_natively() -> None:
    assert sorted(native.native_protocols()) == sorted(NATIVE)
    assert all(native.available(name) for name in NATIVE)
    assert not any(native.available(name) for name in PURE_ONLY)


def test_the_environment_switch_forces_the_pure_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "0")
    assert not native.available(NAME)
    assert not native.available("rabbitmq_stream/1")


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, bytes]]:
    """(kind, bytes) of every input of the RSocket 1.0 corpus, in the corpus' order."""
    return [(kind, data) for kind, data, _ in corpus_of(NAME)]


_CORPORA: dict[str, list[tuple[str, bytes, str | None]]] = {}


def corpus_of(name: str) -> list[tuple[str, bytes, str | None]]:
    """(kind, bytes, sender) of every input of the corpus of protocol ``name``."""
    if name not in _CORPORA:
        module = get_protocol(name).codec_module.removeprefix("wirestream.generated.")
        (variant,) = [v for v in VARIANTS if v.name == module.replace(".", "_")]
        content = build(variant)
        kinds = ("golden", "golden_errors", "differential", "mutations")
        _CORPORA[name] = [(kind, bytes.fromhex(case["bytes"]), case.get("sender"))
                          for kind in kinds for case in content[kind]]  # fmt: skip
    return _CORPORA[name]


def direction_of(n: int) -> Direction:
    return "out" if n % 3 else "in"


def side_of(direction: Direction, sender: str | None) -> Side:
    """The recording side whose record flags say ``sender`` sent the frame
    (``capture_source._sender``); the client's when no sender is needed."""
    if sender is None:
        return "client"
    if direction == "out":
        return sender
    return "client" if sender == "server" else "server"


def flags_of(n: int, sender: str | None) -> int:
    direction = direction_of(n)
    return (FLAG_OUT if direction == "out" else 0) | (
        FLAG_SERVER if side_of(direction, sender) == "server" else 0
    )


def record(
    path: Path,
    frames: list[bytes],
    max_file_bytes: int | None = None,
    name: str = NAME,
    senders: list[str | None] | None = None,
) -> list[Path]:
    with CaptureWriter(path, name, max_file_bytes=max_file_bytes) as capture:
        for n, frame in enumerate(frames):
            direction = direction_of(n)
            side = side_of(direction, senders[n] if senders else None)
            # Connection ids and times past 2**63 (two's complement in the long column).
            capture.record((n * 0x9E3779B97F4A7C15) % (1 << 64), direction, frame, side=side,
                           timestamp_ns=(n * 0x61C8864680B583EB) % (1 << 64))  # fmt: skip
        return list(capture.files)


def arrow_schema(name: str = NAME) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_module(get_protocol(name)).FRAME_LOG_SCHEMA, timezone="UTC")


def pure(
    path: Path,
    mode: str,
    rows: int = 10_000,
    start: int = 0,
    end: int | None = None,
    name: str = NAME,
) -> Any:
    schema = spark_module(get_protocol(name)).FRAME_LOG_SCHEMA
    chunks = scan_chunks(path, start, end, rows)
    batches = list(FrameLogRows(name, mode).batches(chunks, schema, str(path)))
    return pa.Table.from_batches(batches, schema=arrow_schema(name))


def natively(
    path: Path,
    mode: str,
    rows: int = 10_000,
    start: int = 0,
    end: int | None = None,
    name: str = NAME,
) -> Any:
    log = native.NativeFrameLog(name, mode, arrow_schema(name))
    rows_of = FrameLogRows(name, mode)
    failed = _failed(rows_of, str(path))
    batches = list(native.native_batches(path, start, end, log, rows, failed))
    assert all(b.num_rows <= rows for b in batches)
    return pa.Table.from_batches(batches, schema=arrow_schema(name))


def _failed(rows: FrameLogRows, path: str) -> native.Failure:
    """As FrameLogRows.native_batches reports a refused frame, asserting the classes agree
    (that method raises a DecodeError naming both when they do not)."""

    def failed(offset: int, ts: int, connection: int, flags: int, frame: bytes, name: str) -> None:
        try:
            rows.decode(frame, connection, flags)
        except ProtocolError as error:
            assert type(error).__name__ == name
            rows.malformed(error, path, (offset, ts, connection, flags, frame))
        raise AssertionError(f"{path}: offset {offset}: Python decoded what Rust refused")

    return failed


def assert_same(got: Any, expected: Any, what: object) -> None:
    assert got.schema == expected.schema
    if not got.equals(expected):  # say which row differs
        for k, (a, b) in enumerate(zip(got.to_pylist(), expected.to_pylist())):
            assert a == b, (what, k)
        assert got.num_rows == expected.num_rows, what
    assert got.equals(expected), what


def test_batches_are_whole_arrow_and_outlive_the_frame_log(
    tmp_path: Path, corpus: list[tuple[str, bytes]]
) -> None:
    """The batches cross the Arrow C Data Interface (one ArrowArray tree each): every
    buffer is as long as its layout needs (``validate(full=True)`` reads them all,
    offsets and UTF-8 included), frame columns no row of a batch holds are nulls, and a
    batch kept after the frame log and the later batches are gone still holds its rows
    (its memory is the batch's until pyarrow releases it)."""
    (path,) = record(tmp_path / "corpus.wscap", [data for _, data in corpus])
    log = native.NativeFrameLog(NAME, "PERMISSIVE", arrow_schema())
    failed = _failed(FrameLogRows(NAME, "PERMISSIVE"), str(path))
    batches = list(native.native_batches(path, 0, None, log, 97, failed))
    first = batches[0].to_pylist()
    for batch in batches:
        batch.validate(full=True)
        for name in ("setup", "lease", "resume"):  # columns most batches of 97 lack
            column = batch.column(name)
            held = [t == name.upper() for t in batch.column("frame_type").to_pylist()]
            assert [v is not None for v in column.to_pylist()] == held
    kept = batches[0]
    del log, batches
    for _ in native.native_batches(  # later batches take the recycled buffers
        path, 0, None, native.NativeFrameLog(NAME, "PERMISSIVE", arrow_schema()), 97, failed
    ):
        pass
    assert kept.to_pylist() == first
    assert_same(pa.Table.from_batches([kept]), pure(path, "PERMISSIVE", rows=97).slice(0, 97), 97)


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_every_corpus_input_gives_the_same_rows(
    tmp_path: Path, corpus: list[tuple[str, bytes]], mode: str
) -> None:
    (path,) = record(tmp_path / "corpus.wscap", [data for _, data in corpus])
    expected = pure(path, mode)
    malformed = expected.column("frame_type").to_pylist().count("MALFORMED")
    if mode == "PERMISSIVE":
        assert expected.num_rows == len(corpus) and malformed > 3_000
    else:
        assert expected.num_rows > 5_000 and malformed == 0
    # 10,000 rows: batches as the source makes them; 97: batches that end anywhere;
    # the source's path end to end (FrameLogRows.native_batches).
    assert_same(natively(path, mode), expected, (mode, 10_000))
    assert_same(natively(path, mode, rows=97), pure(path, mode, rows=97), (mode, 97))
    source = FrameLogRows(NAME, mode).native_batches(str(path))
    assert_same(pa.Table.from_batches(list(source), schema=arrow_schema()), expected, mode)


def test_batches_dropped_as_they_come_or_kept_hold_the_same_rows(tmp_path: Path) -> None:
    """A batch's buffers are the extension's memory, recycled once pyarrow lets go of the
    batch: batches kept alive must not change while later ones are built from recycled
    buffers, and those must hold their own rows."""
    (path,) = record(tmp_path / "recycled.wscap", [codec.encode(f) for f in _frames(2500)])
    expected = pure(path, "PERMISSIVE", rows=100).to_pylist()
    log = native.NativeFrameLog(NAME, "PERMISSIVE", arrow_schema())
    failed = _failed(FrameLogRows(NAME, "PERMISSIVE"), str(path))
    one_by_one: list[Any] = []
    for batch in native.native_batches(path, 0, None, log, 100, failed):
        one_by_one.extend(batch.to_pylist())  # the batch is dropped: its buffers recycled
    assert one_by_one == expected
    kept = list(native.native_batches(path, 0, None, log, 100, failed))
    again = list(native.native_batches(path, 0, None, log, 100, failed))
    assert [row for b in kept for row in b.to_pylist()] == expected
    assert [row for b in again for row in b.to_pylist()] == expected


@pytest.mark.parametrize("mode", MODES)
def test_a_pcap_of_the_corpus_gives_the_same_rows_and_errors(
    tmp_path: Path, corpus: list[tuple[str, bytes]], mode: str
) -> None:
    """pcap files: TCP streams reassembled and cut in Python, each frame then decoded and
    written by the extension (FrameLogRows.native_batches with records)."""
    (capture,) = record(tmp_path / "corpus.wscap", [data for _, data in corpus])
    pcapng = tmp_path / "corpus.pcapng"
    assert write_pcapng(capture, pcapng) == len(corpus)
    schema = spark_module(get_protocol(NAME)).FRAME_LOG_SCHEMA
    rows = FrameLogRows(NAME, mode)
    outcomes = []
    for read in ("pure", "native"):
        reader = PcapReader(pcapng)
        try:
            if read == "pure":
                batches = list(rows.batches(pcap_chunks(reader, 997), schema, str(pcapng)))
            else:
                records = pcap_raw_records(reader)
                batches = list(rows.native_batches(str(pcapng), records=records))
            outcomes.append(pa.Table.from_batches(batches, schema=arrow_schema()))
        except DecodeError as error:
            outcomes.append(f"{type(error).__name__}: {error}")
    pure_outcome, native_outcome = outcomes
    if mode == "FAILFAST":
        assert isinstance(pure_outcome, str) and native_outcome == pure_outcome
    else:
        assert_same(native_outcome, pure_outcome, mode)
        assert native_outcome.num_rows > 5_000


LEAN_CASES = [(), ("PAYLOAD", "REQUEST_N", "ERROR"), ("SETUP",), ("UNKNOWN_FRAME", "EXT")]


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("frame_types", LEAN_CASES)
def test_lean_frame_logs_give_the_same_rows_natively(
    tmp_path: Path, corpus: list[tuple[str, bytes]], mode: str, frame_types: tuple[str, ...]
) -> None:
    """The options schema=lean and frameTypes: the extension's full batches projected and
    filtered (FrameLogRows.lean) hold the pure path's rows, which build only the lean
    columns; capture files and a pcap file, batches of 97 rows and of 10,000."""
    from pyspark.sql.pandas.types import to_arrow_schema

    (path,) = record(tmp_path / "corpus.wscap", [data for _, data in corpus])
    pcapng = tmp_path / "corpus.pcapng"
    write_pcapng(path, pcapng)
    lean = frame_log_schema(NAME, True, frame_types)
    lean_arrow = to_arrow_schema(lean, timezone="UTC")
    assert len(lean.names) < len(arrow_schema().names) or not frame_types
    rows = FrameLogRows(NAME, mode, frame_types)
    for chunk in (97, 10_000):
        expected = pa.Table.from_batches(
            rows.batches(scan_chunks(path, records_per_chunk=chunk), lean, str(path)), lean_arrow
        )
        kinds = set(expected.column("frame_type").to_pylist())
        assert kinds <= {*frame_types, "MALFORMED"} or not frame_types
        assert expected.num_rows > (0 if frame_types else 5_000)
        got = pa.Table.from_batches(rows.native_batches(str(path), schema=lean), lean_arrow)
        assert_same(got, expected, (mode, frame_types, chunk))
    records = pcap_raw_records(PcapReader(pcapng))
    got = pa.Table.from_batches(
        rows.native_batches(str(pcapng), schema=lean, records=records), lean_arrow
    )
    assert_same(got, expected, (mode, frame_types, "pcap"))


def test_every_refused_input_gets_the_python_error_class(corpus: list[tuple[str, bytes]]) -> None:
    assert native._native is not None
    log = native._native.FrameLog(NAME, "FAILFAST")
    refused = 0
    for kind, data in corpus:
        try:
            codec.decode(data)
            expected = None
        except ProtocolError as error:
            expected = type(error).__name__
        assert log.add(data, 0, 0, 0) == expected, (kind, data.hex())
        refused += expected is not None
    assert refused > 3_000
    assert log.rows() == len(corpus) - refused


def test_failfast_raises_the_pure_paths_error(
    tmp_path: Path, corpus: list[tuple[str, bytes]]
) -> None:
    """For the first refused input of every error class, after good frames: the same
    DecodeError, its message (file, offset, connection, the codec's own words) and cause."""
    good = [data for kind, data in corpus if kind == "golden"]
    firsts: dict[str, bytes] = {}
    for _, data in corpus:
        try:
            codec.decode(data)
        except ProtocolError as error:
            firsts.setdefault(type(error).__name__, data)
    assert {"Truncated", "TrailingBytes", "UnknownFrameType", "InvalidValue"} <= set(firsts)
    for n, (name, bad) in enumerate(sorted(firsts.items())):
        (path,) = record(tmp_path / f"bad{n}.wscap", [*good, bad, *good])
        with pytest.raises(DecodeError) as by_pure:
            pure(path, "FAILFAST")
        with pytest.raises(DecodeError) as by_native:
            list(FrameLogRows(NAME, "FAILFAST").native_batches(str(path)))
        assert str(by_native.value) == str(by_pure.value), name
        assert type(by_native.value.__cause__) is type(by_pure.value.__cause__)
        assert type(by_native.value.__cause__).__name__ == name


def test_good_captures_fail_nowhere_in_failfast(tmp_path: Path) -> None:
    frames = [codec.encode(f) for f in _frames(3000)]
    (path,) = record(tmp_path / "good.wscap", frames)
    assert_same(natively(path, "FAILFAST"), pure(path, "FAILFAST"), "FAILFAST")


def _frames(n: int) -> list[Any]:
    out: list[Any] = []
    for k in range(n):
        metadata = bytes([k % 256]) * (k % 5) if k % 3 else None
        out.append(codec.Payload(stream_id=k + 1, metadata=metadata, data=b"x" * (k % 40),
                                 next=bool(k % 2), complete=k % 7 == 0))  # fmt: skip
        if k % 50 == 0:
            out.append(codec.Error(stream_id=k, error_code=0x201 + k % 3, data=b"why"))
            out.append(codec.RequestN(stream_id=k + 1, request_n=k + 1))
    return out


def test_frames_larger_than_the_read_window_and_batches_cut_by_data(tmp_path: Path) -> None:
    big = [codec.encode(codec.Payload(stream_id=s, data=bytes([s]) * (3 << 20), next=True))
           for s in range(1, 4)]  # fmt: skip
    small = [codec.encode(f) for f in _frames(200)]
    (path,) = record(tmp_path / "big.wscap", [*small, big[0], *small, big[1], big[2], *small])
    for mode in MODES:
        for rows in (1, 150, 10_000):
            assert_same(natively(path, mode, rows), pure(path, mode, rows), (mode, rows))


@pytest.mark.parametrize("piece", [1, 333, 4096, 1 << 20])
def test_byte_ranges_give_every_record_once(tmp_path: Path, piece: int) -> None:
    frames = [codec.encode(f) for f in _frames(1500)]
    (path,) = record(tmp_path / "ranges.wscap", frames)
    ranges = plan_ranges(path, piece)
    if piece == 1:
        ranges = ranges[:: max(1, len(ranges) // 300)]  # a sample: 1-byte ranges, 300 of them
        for start, end in ranges:
            assert_same(natively(path, "FAILFAST", 64, start, end),
                        pure(path, "FAILFAST", 64, start, end), (start, end))  # fmt: skip
        return
    got = [natively(path, "FAILFAST", 64, a, b) for a, b in ranges]
    expected = [pure(path, "FAILFAST", 64, a, b) for a, b in ranges]
    for (a, b), g, e in zip(ranges, got, expected):
        assert_same(g, e, (a, b))
    assert sum(t.num_rows for t in got) == len(frames)


def corrupted(path: Path, offset: int, value: int) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        (old,) = file.read(1)
        file.seek(offset)
        file.write(bytes([old ^ value]))


def test_corrupt_and_torn_files_fail_or_end_alike(tmp_path: Path) -> None:
    frames = [codec.encode(f) for f in _frames(400)]
    (clean,) = record(tmp_path / "clean.wscap", frames)
    data = clean.read_bytes()
    size = len(data)
    outcomes = []
    # Bytes flipped in the file header, in record headers, syncs, lengths and frames, and
    # the file cut anywhere (torn records at the end are the end of the data).
    spots = [0, 9, 14, 20, *range(40, size, 997), size - 40, size - 3]
    for k, spot in enumerate(spots):
        for how in ("flip", "cut"):
            path = tmp_path / f"{how}{k}.wscap"
            path.write_bytes(data)
            if how == "flip":
                corrupted(path, spot, 0x10)
            else:
                os.truncate(path, spot)
            results = []
            for read in (pure, natively):
                try:
                    results.append(("rows", read(path, "PERMISSIVE").to_pylist()))
                except (CaptureError, DecodeError) as error:
                    results.append(("error", f"{type(error).__name__}: {error}"))
            assert results[0] == results[1], (how, spot)
            outcomes.append(results[0][0])
    assert "error" in outcomes and "rows" in outcomes


def test_a_frame_crc_mismatch_is_the_same_corrupt_record(tmp_path: Path) -> None:
    frames = [codec.encode(f) for f in _frames(100)]
    (path,) = record(tmp_path / "crc.wscap", frames)
    header_size = 8 + 2 + 4 + 1 + len(NAME) + 4
    # The 30th record's last frame byte: its frame CRC no longer matches.
    pos = header_size
    for frame in frames[:30]:
        pos += RECORD_HEADER_SIZE + len(frame)
    corrupted(path, pos + RECORD_HEADER_SIZE + len(frames[30]) - 1, 0x01)
    assert zlib.crc32(b"123456789") == 0xCBF43926
    with pytest.raises(CaptureError) as by_pure:
        pure(path, "PERMISSIVE")
    with pytest.raises(CaptureError) as by_native:
        natively(path, "PERMISSIVE")
    assert str(by_native.value) == str(by_pure.value)
    assert "frame CRC mismatch" in str(by_native.value)


def test_a_frame_longer_than_a_captures_maximum_is_refused_not_wrapped() -> None:
    """Arrow's 32-bit offsets: the extension never lets a batch's data pass 2 GiB."""
    assert native._native is not None
    log = native._native.FrameLog(NAME, "PERMISSIVE")
    with pytest.raises(ValueError, match="at most"):
        log.add(bytes(native._native.MAX_FRAME_LENGTH + 1), 0, 0, 0)
    assert log.rows() == 0
    assert 10_000 <= native._native.ROW_LIMIT <= 1 << 20


def test_a_stale_extension_layout_is_refused() -> None:
    schema = arrow_schema()
    wrong = schema.set(6, pa.field("stream_id", pa.int32(), True))
    with pytest.raises(RuntimeError, match="make native"):
        native.NativeFrameLog(NAME, "FAILFAST", wrong)


# --- every version decoded natively: the generated mappings (generated/rust/frame_log) ----


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("name", NATIVE)
def test_every_versions_corpus_gives_the_same_rows(tmp_path: Path, name: str, mode: str) -> None:
    """Every column of every frame type (lists, nested structs, unions, decimals, enum
    names, flag bits) as the generated ``frame_row`` makes it, over the whole corpus:
    batches of 10,000 rows and of 97 (frame columns absent from a batch), and the
    source's own path; every batch whole Arrow (``validate(full=True)``)."""
    cases = corpus_of(name)
    (path,) = record(tmp_path / "corpus.wscap", [data for _, data, _ in cases], name=name,
                     senders=[sender for _, _, sender in cases])  # fmt: skip
    expected = pure(path, mode, name=name)
    kinds = set(expected.column("frame_type").to_pylist())
    # (MySQL's frames mostly need the phase a real connection's order sets: few decode)
    assert len(kinds - {"MALFORMED"}) >= 2, kinds
    got = natively(path, mode, name=name)
    for batch in got.to_batches():
        batch.validate(full=True)
    assert_same(got, expected, (name, mode, 10_000))
    assert_same(natively(path, mode, rows=97, name=name), pure(path, mode, rows=97, name=name),
                (name, mode, 97))  # fmt: skip
    source = FrameLogRows(name, mode).native_batches(str(path))
    assert_same(pa.Table.from_batches(list(source), schema=arrow_schema(name)), expected, mode)


@pytest.mark.parametrize("name", NATIVE)
def test_every_versions_refused_inputs_get_the_python_error_class(name: str) -> None:
    assert native._native is not None
    log = native._native.FrameLog(name, "FAILFAST")
    rows = FrameLogRows(name, "FAILFAST")
    refused = 0
    for n, (kind, data, sender) in enumerate(corpus_of(name)):
        flags = flags_of(n, sender)
        try:
            rows.decode(data, 0, flags)
            expected = None
        except ProtocolError as error:
            expected = type(error).__name__
        assert log.add(data, 0, 0, flags) == expected, (name, kind, data.hex())
        refused += expected is not None
    assert refused > 100
    assert log.rows() == len(corpus_of(name)) - refused


@pytest.mark.parametrize("name", NATIVE)
def test_every_versions_failfast_raises_the_pure_paths_error(tmp_path: Path, name: str) -> None:
    """The first refused input of every error class, after good frames: the same
    DecodeError, message and cause."""
    cases = corpus_of(name)
    rows = FrameLogRows(name, "FAILFAST")
    golden = [(data, _sent_by(rows, data, sender)) for kind, data, sender in cases
              if kind == "golden"]  # fmt: skip
    good = [(data, sender) for data, sender in golden if sender is not None]
    firsts: dict[str, tuple[bytes, str | None]] = {}
    for n, (_, data, sender) in enumerate(cases):
        try:
            rows.decode(data, 0, flags_of(len(good), sender))
        except ProtocolError as error:
            firsts.setdefault(type(error).__name__, (data, sender))
    assert len(firsts) >= 2, firsts
    raised: set[str] = set()
    for n, (error_name, bad) in enumerate(sorted(firsts.items())):
        frames = [*good, bad, *good]
        (path,) = record(tmp_path / f"bad{n}.wscap", [d for d, _ in frames], name=name,
                         senders=[s for _, s in frames])  # fmt: skip
        with pytest.raises(DecodeError) as by_pure:
            pure(path, "FAILFAST", name=name)
        with pytest.raises(DecodeError) as by_native:
            list(FrameLogRows(name, "FAILFAST").native_batches(str(path)))
        assert str(by_native.value) == str(by_pure.value), error_name
        assert type(by_native.value.__cause__) is type(by_pure.value.__cause__)
        raised.add(type(by_pure.value.__cause__).__name__)
    # a contextual version's good frames change the context the bad ones meet: fewer kinds
    assert len(raised) >= (1 if get_protocol(name).contextual else 2), raised


def _sent_by(rows: FrameLogRows, data: bytes, sender: str | None) -> str | None:
    """The side whose frame ``data`` decodes as (``sender`` when the corpus names one;
    recorded with the flags that say so: ``flags_of``), None when it decodes as neither's."""
    for side in [sender] if sender else ["client", "server"]:
        try:
            rows.decode(data, 0, flags_of(0, side))
        except ProtocolError:
            continue
        return side
    return None


PCAP_PORT = 47_000  # the synthesized server's (BPMUX and MQTT have no well-known port here)


@pytest.mark.parametrize("name", NATIVE)
def test_every_versions_pcap_gives_the_same_rows(tmp_path: Path, name: str) -> None:
    """A pcapng of the corpus: TCP streams reassembled and cut in Python (by the length
    prefix, or by decoding self-delimiting frames), each frame then written by the
    extension with its record's flags (the sender RabbitMQ needs)."""
    cases = corpus_of(name)
    (capture,) = record(tmp_path / "corpus.wscap", [data for _, data, _ in cases], name=name,
                        senders=[sender for _, _, sender in cases])  # fmt: skip
    pcapng = tmp_path / "corpus.pcapng"
    write_pcapng(capture, pcapng, server_port=PCAP_PORT)
    schema = spark_module(get_protocol(name)).FRAME_LOG_SCHEMA
    rows = FrameLogRows(name, "PERMISSIVE")
    expected = pa.Table.from_batches(
        rows.batches(
            pcap_chunks(PcapReader(pcapng, name, server_port=PCAP_PORT), 997), schema, str(pcapng)
        ),
        schema=arrow_schema(name),
    )
    records = pcap_raw_records(PcapReader(pcapng, name, server_port=PCAP_PORT))
    got = pa.Table.from_batches(
        rows.native_batches(str(pcapng), records=records), schema=arrow_schema(name)
    )
    assert_same(got, expected, name)
    assert got.num_rows > 50


CONTEXTUAL = [name for name in NATIVE if get_protocol(name).contextual]


@pytest.mark.parametrize("name", CONTEXTUAL)
def test_contextual_versions_decode_with_each_connections_context(
    tmp_path: Path, name: str
) -> None:
    """The corpus' tracking frames (those that change the context, encoded in step with
    it) and then every other input, on one connection and direction: the extension keeps
    the context in record order as the pure path's ``RecordDecoder`` does, so both decode
    (or refuse) the same frames, in PERMISSIVE and in FAILFAST."""
    module = get_protocol(name).codec_module.removeprefix("wirestream.generated.")
    (variant,) = [v for v in VARIANTS if v.name == module.replace(".", "_")]
    tracking = [bytes.fromhex(case["bytes"]) for case in build(variant)["tracking"]]
    assert tracking, name
    frames = [*tracking, *(data for _, data, _ in corpus_of(name))]
    with CaptureWriter(tmp_path / "one.wscap", name, max_file_bytes=None) as capture:
        for n, frame in enumerate(frames):
            capture.record(7, "in", frame, timestamp_ns=n)
    path = Path(capture.path)
    expected = pure(path, "PERMISSIVE", name=name)
    types = expected.column("frame_type").to_pylist()
    assert types.count("MALFORMED") < len(types), name
    assert_same(natively(path, "PERMISSIVE", name=name), expected, name)
    assert_same(natively(path, "PERMISSIVE", rows=97, name=name),
                pure(path, "PERMISSIVE", rows=97, name=name), name)  # fmt: skip
    outcomes = []
    for read in ("pure", "native"):
        try:
            if read == "pure":
                pure(path, "FAILFAST", name=name)
            else:
                list(FrameLogRows(name, "FAILFAST").native_batches(str(path)))
            outcomes.append("rows")
        except DecodeError as error:
            outcomes.append(f"{error}")
    assert outcomes[0] == outcomes[1], name
