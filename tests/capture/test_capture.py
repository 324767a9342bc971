"""wirestream.runtime.capture: the capture file format, the writer's rotation, reading byte ranges,
and tapping real TCP connections of every protocol.

The format's rules (``wirestream.runtime.capture.format``) each have a test named after them; the
round trip and the split law are hypothesis properties.  The TCP tests put a plain
recording proxy between the peers, so "what was sent" is what crossed the wire, not what
the tap believes it saw.
"""

from __future__ import annotations

import asyncio
import struct
import tempfile
import zlib
from unittest import mock
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wirestream.generated.bpmux.rel as bpmux_codec
import wirestream.generated.rabbitmq_stream.v1 as rabbitmq_codec
import wirestream.generated.rsio.v0 as rsio_codec
import wirestream.generated.rsocket.v1_0 as rsocket_codec
from wirestream.runtime import rsio
from wirestream.runtime.aio import memory_pair
from wirestream.runtime.bpmux import aio as bpmux
from wirestream.runtime.capture import (
    MAX_FRAME_LENGTH,
    PROTOCOLS,
    CaptureError,
    CaptureRecord,
    CaptureWriter,
    capture_files,
    get_protocol,
    iter_records,
    plan_ranges,
    read_header,
    split_ranges,
    tap,
)
from wirestream.runtime.capture import format as fmt
from wirestream.runtime.capture.protocols import FAILED_TAIL_BYTES, LengthPrefixDeframer
from wirestream.runtime.errors import DecodeError, EncodeError
from wirestream.runtime.rsocket import connect as rsocket_connect
from wirestream.runtime.rsocket import serve as rsocket_serve
from wirestream.apps.demo_responder import EchoResponder
from tests.support.aio_support import run

Row = tuple[int, int, str, str, bytes]  # timestamp, connection, direction, side, frame

rows = st.lists(
    st.tuples(
        st.integers(0, 2**64 - 1),
        st.integers(0, 2**64 - 1),
        st.sampled_from(["in", "out"]),
        st.sampled_from(["client", "server"]),
        st.binary(max_size=200),
    ),
    max_size=25,
)


def write(folder: Path, records: list[Row], **options: Any) -> CaptureWriter:
    options.setdefault("max_file_bytes", None)
    with CaptureWriter(folder / "cap.wscap", "rsocket/1.0", **options) as writer:
        for timestamp, connection, direction, side, frame in records:
            writer.record(connection, direction, frame, side=side,  # type: ignore[arg-type]
                          timestamp_ns=timestamp)  # fmt: skip
    return writer


def as_rows(records: list[CaptureRecord]) -> list[Row]:
    return [(r.timestamp_ns, r.connection_id, r.direction, r.side, r.frame) for r in records]


def read_all(paths: list[Path]) -> list[CaptureRecord]:
    return [record for path in paths for record in iter_records(path)]


def offsets(path: Path) -> list[int]:
    return [record.offset for record in iter_records(path)]


# --- the format --------------------------------------------------------------------


@given(rows)
def test_records_round_trip(records: list[Row]) -> None:
    """Every record written is read back, field for field, in order."""
    with tempfile.TemporaryDirectory() as folder:
        writer = write(Path(folder), records)
        assert writer.files == [Path(folder) / "cap.000000.wscap"]
        assert as_rows(read_all(writer.files)) == records


def test_file_header_names_the_protocol_and_a_sync_marker(tmp_path: Path) -> None:
    writer = write(tmp_path, [(1, 2, "out", "client", b"x")])
    header = read_header(writer.files[0])
    assert header.protocol == "rsocket/1.0"
    assert header.version == fmt.FORMAT_VERSION == 1
    data = writer.files[0].read_bytes()
    assert data[:8] == b"WSCAP\r\n\x1a"
    assert data[header.size : header.size + 4] == header.sync  # the first record's marker


def test_record_layout_is_the_documented_one(tmp_path: Path) -> None:
    """The bytes of a record, field by field, as the format docstring lists them (a
    reader written from the text alone reads them)."""
    writer = write(tmp_path, [(1_700_000_000_123456789, 0x0102, "in", "server", b"hello")])
    data = writer.files[0].read_bytes()
    header = read_header(writer.files[0])
    record = data[header.size :]
    assert record[0:4] == header.sync
    assert struct.unpack(">I", record[4:8]) == (5,)
    assert struct.unpack(">Q", record[8:16]) == (1_700_000_000_123456789,)
    assert struct.unpack(">Q", record[16:24]) == (0x0102,)
    assert record[24] == 0b10  # in, the tapped side is the server
    assert struct.unpack(">I", record[25:29]) == (zlib.crc32(b"hello"),)
    assert struct.unpack(">I", record[29:33]) == (zlib.crc32(record[4:29]),)
    assert record[33:] == b"hello"
    assert zlib.crc32(b"123456789") == 0xCBF43926  # the CRC the docstring names


def test_sender_is_the_side_for_out_and_the_other_side_for_in() -> None:
    record = CaptureRecord(0, 1, "in", b"", "client")
    assert record.sender == "server"
    assert record._replace(direction="out").sender == "client"
    assert record._replace(side="server").sender == "client"


def test_not_a_capture_file_is_an_error_at_offset_0(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"just some text, long enough to be a header")
    with pytest.raises(CaptureError, match=r"notes.txt: offset 0: not a capture file") as error:
        list(iter_records(path))
    assert error.value.offset == 0 and error.value.path == str(path)


def test_an_unknown_format_version_is_refused(tmp_path: Path) -> None:
    writer = write(tmp_path, [])
    data = bytearray(writer.files[0].read_bytes())
    data[8:10] = b"\x00\x02"
    writer.files[0].write_bytes(bytes(data))
    with pytest.raises(CaptureError, match="format version 2 is not supported"):
        read_header(writer.files[0])


def test_a_writer_refuses_a_frame_above_the_maximum(tmp_path: Path) -> None:
    with CaptureWriter(tmp_path / "c.wscap", "rsocket/1.0") as writer:
        with pytest.raises(EncodeError, match="exceeds the format's maximum"):
            writer.record(1, "out", bytes(MAX_FRAME_LENGTH + 1))


KNOWN = ["rsocket/1.0", "rsocket/0.2", "rsio/0", "rsio/0+msgpack", "bpmux/rel",
         "rabbitmq_stream/1", "rabbitmq_stream/draft", "mqtt/5", "postgresql/3",
         "mysql/10"]  # fmt: skip


def test_unknown_protocol_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown capture protocol 'smtp/1'; known: ") as caught:
        CaptureWriter(tmp_path / "c.wscap", "smtp/1")
    listed = str(caught.value).partition("known: ")[2].split(", ")
    assert sorted(listed) == sorted(KNOWN)


def test_the_protocols_are_the_generated_packages_in_each_of_their_encodings() -> None:
    assert sorted(PROTOCOLS) == sorted(KNOWN)
    assert all(PROTOCOLS[name] is get_protocol(name) for name in KNOWN)
    with pytest.raises(ValueError, match="unknown capture protocol 'rsocket/1.0\\+msgpack'"):
        get_protocol("rsocket/1.0+msgpack")  # RSocket has one encoding
    with pytest.raises(ValueError, match="unknown capture protocol"):
        get_protocol("rsocket/1.0+binary")  # the first encoding has no suffix


@pytest.mark.parametrize("name", KNOWN)
def test_framing_facts_are_the_codecs_own(name: str) -> None:
    """The capture reads each protocol's framing from its generated codec's constants
    (idl/<protocol>/<version>.yaml: framing, encodings, context, frame senders)."""
    protocol = get_protocol(name)
    codec = protocol.codec()
    assert protocol.codec_module == codec.__name__
    assert protocol.encoding in codec.ENCODINGS
    binary = protocol.encoding == "binary"
    assert protocol.length_prefix == (codec.LENGTH_PREFIX_SIZE if binary else 0)
    assert protocol.needs_sender is codec.NEEDS_SENDER
    assert protocol.contextual is codec.NEEDS_CONTEXT


def test_the_framing_facts_say_what_the_specs_say() -> None:
    # RSocket over TCP: "Frame Length (24 bits)" (Protocol.md, Framing); RabbitMQ:
    # "Size => uint32"; rsio and BPMUX frames delimit themselves.
    # MQTT, PostgreSQL and MySQL frames say their own length in their header (no transport
    # prefix); PostgreSQL's and MySQL's layouts depend on context, and PostgreSQL's codes
    # mean different messages from each side ('D' DataRow / Describe ...).
    assert {name: get_protocol(name).length_prefix for name in KNOWN} == {
        "rsocket/1.0": 3, "rsocket/0.2": 3, "rsio/0": 0, "rsio/0+msgpack": 0, "bpmux/rel": 0,
        "rabbitmq_stream/1": 4, "rabbitmq_stream/draft": 4, "mqtt/5": 0, "postgresql/3": 0,
        "mysql/10": 0,
    }  # fmt: skip
    assert {name for name in KNOWN if get_protocol(name).contextual} == {
        "rsio/0", "rsio/0+msgpack", "postgresql/3", "mysql/10"
    }  # fmt: skip
    assert {name for name in KNOWN if get_protocol(name).needs_sender} == {
        "rabbitmq_stream/1", "rabbitmq_stream/draft", "postgresql/3"
    }  # fmt: skip


def test_protocol_names_accept_the_idl_spelling() -> None:
    assert get_protocol("rsocket/v1_0").name == "rsocket/1.0"
    assert get_protocol("RabbitMQ_Stream/v1").name == "rabbitmq_stream/1"
    assert get_protocol("rsio/v0+msgpack").name == "rsio/0+msgpack"


# --- rotation ----------------------------------------------------------------------


@given(rows, st.integers(60, 600))
def test_rotation_keeps_each_file_within_max_file_bytes(records: list[Row], limit: int) -> None:
    """A file is closed before a record would take it past the limit; a record larger
    than the limit goes alone into a file; nothing is lost or reordered."""
    with tempfile.TemporaryDirectory() as folder:
        writer = write(Path(folder), records, max_file_bytes=limit)
        assert as_rows(read_all(writer.files)) == records
        for path in writer.files:
            if len(offsets(path)) > 1:
                assert path.stat().st_size <= limit
        assert [p.name for p in writer.files] == [
            f"cap.{n:06d}.wscap" for n in range(len(writer.files))
        ]


def test_max_files_keeps_the_newest_files(tmp_path: Path) -> None:
    frames = [bytes([n]) * 50 for n in range(20)]
    with CaptureWriter(tmp_path / "cap.wscap", "rsocket/1.0", max_file_bytes=200,
                       max_files=3) as writer:  # fmt: skip
        for frame in frames:
            writer.record(1, "out", frame)
    kept = capture_files(tmp_path / "cap.wscap")
    assert len(kept) == 3 and kept == writer.files[-3:]
    assert [r.frame for r in read_all(kept)] == frames[-len(read_all(kept)) :]


def test_a_new_writer_never_appends_to_an_existing_file(tmp_path: Path) -> None:
    first = write(tmp_path, [(1, 1, "out", "client", b"a")])
    second = write(tmp_path, [(2, 2, "out", "client", b"b")])
    assert [p.name for p in first.files + second.files] == ["cap.000000.wscap", "cap.000001.wscap"]
    assert [r.frame for r in read_all(capture_files(tmp_path / "cap.wscap"))] == [b"a", b"b"]


def test_connection_ids_are_distinct_within_and_across_writers(tmp_path: Path) -> None:
    with CaptureWriter(tmp_path / "a.wscap", "rsocket/1.0") as a:
        with CaptureWriter(tmp_path / "b.wscap", "rsocket/1.0") as b:
            ids = [a.new_connection_id(), a.new_connection_id(), b.new_connection_id()]
    assert len(set(ids)) == 3
    assert ids[1] == ids[0] + 1


# --- splitting: the law ------------------------------------------------------------


@given(rows, st.integers(1, 3000))
def test_split_ranges_yield_every_record_exactly_once_in_order(
    records: list[Row], piece: int
) -> None:
    """For any piece size, the ranges' records, concatenated, are the file's records."""
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), records).files[0]
        pieces = [list(iter_records(path, a, b)) for a, b in plan_ranges(path, piece)]
        assert [r for piece_records in pieces for r in piece_records] == list(iter_records(path))


@given(rows, st.lists(st.integers(0, 10_000), max_size=12))
def test_any_cut_of_the_file_yields_every_record_exactly_once(
    records: list[Row], cuts: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), records).files[0]
        size = path.stat().st_size
        points = sorted({0, size, *(c % (size + 1) for c in cuts)})
        got = [r for a, b in zip(points, points[1:]) for r in iter_records(path, a, b)]
        assert as_rows(got) == records


MARKER = b"\xa5\x5a\xa5\x5a"


@given(
    st.lists(
        st.lists(
            st.one_of(
                st.just(MARKER),
                st.binary(max_size=40).map(lambda tail: MARKER + tail),  # header-like junk
                st.binary(max_size=20),
            ),
            max_size=6,
        ).map(b"".join),
        max_size=15,
    ),
    st.integers(1, 500),
)
def test_a_sync_marker_inside_frame_bytes_is_not_a_record_boundary(
    frames: list[bytes], piece: int
) -> None:
    """Resync checks the header CRC of a candidate: markers (and header-shaped junk) in a
    frame's bytes never start a record."""
    with mock.patch("wirestream.runtime.capture.writer.new_sync_marker", lambda: MARKER):
        with tempfile.TemporaryDirectory() as folder:
            records = [(n, 7, "out", "client", frame) for n, frame in enumerate(frames)]
            path = write(Path(folder), records).files[0]
            assert read_header(path).sync == MARKER
            got = [r for a, b in plan_ranges(path, piece) for r in iter_records(path, a, b)]
            assert as_rows(got) == records


def test_split_ranges_cover_the_file() -> None:
    assert split_ranges(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert split_ranges(0, 4) == [(0, 0)]
    with pytest.raises(ValueError):
        split_ranges(10, 0)


# --- the end of the data and corruption --------------------------------------------


def test_a_torn_final_record_is_the_end_of_the_data(tmp_path: Path) -> None:
    """A writer that died while appending: every cut inside the last record (header or
    frame) reads as the records before it, whole or split."""
    records: list[Row] = [(n, 1, "in", "client", bytes([n]) * 20) for n in range(4)]
    path = write(tmp_path, records).files[0]
    data = path.read_bytes()
    last = offsets(path)[-1]
    for cut in range(last + 1, len(data)):
        path.write_bytes(data[:cut])
        assert as_rows(list(iter_records(path))) == records[:-1], cut
        for a, b in plan_ranges(path, 37):
            for record in iter_records(path, a, b):
                assert record.offset < last


@given(st.data())
@settings(max_examples=100)
def test_a_corrupt_byte_anywhere_is_an_error_naming_the_file_and_the_record(
    data: st.DataObject,
) -> None:
    """Any single changed byte in any record: the whole-file read fails at that record's
    offset, and so does some range of every split (never silently skipped)."""
    records: list[Row] = [(n, 3, "out", "server", bytes([n]) * (n * 7 % 30)) for n in range(6)]
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), records).files[0]
        original = path.read_bytes()
        starts = offsets(path)
        position = data.draw(st.integers(read_header(path).size, len(original) - 1))
        flip = data.draw(st.integers(1, 255))
        damaged = bytearray(original)
        damaged[position] ^= flip
        path.write_bytes(bytes(damaged))
        owner = max(start for start in starts if start <= position)
        with pytest.raises(CaptureError) as whole:
            list(iter_records(path))
        assert whole.value.offset == owner and str(path) in str(whole.value)
        piece = data.draw(st.integers(1, len(original)))
        with pytest.raises(CaptureError) as split:
            for a, b in plan_ranges(path, piece):
                list(iter_records(path, a, b))
        assert split.value.offset == owner


def test_a_corrupt_file_header_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, [(1, 1, "out", "client", b"x")]).files[0]
    data = bytearray(path.read_bytes())
    data[16] ^= 0xFF  # inside the protocol name
    path.write_bytes(bytes(data))
    with pytest.raises(CaptureError, match="file header CRC mismatch"):
        list(iter_records(path))


def test_an_oversized_length_is_an_error_not_an_allocation(tmp_path: Path) -> None:
    """A length above MAX_FRAME_LENGTH is refused even when its header CRC matches (a
    broken writer), before anything of that size is read."""
    path = write(tmp_path, [(1, 1, "out", "client", b"ok")]).files[0]
    sync = read_header(path).sync
    body = fmt.RECORD_BODY.pack(MAX_FRAME_LENGTH + 1, 2, 1, 1, 0)
    forged = sync + body + struct.pack(">I", zlib.crc32(body))
    start = path.stat().st_size
    with open(path, "ab") as file:
        file.write(forged + b"\0" * 64)
    with pytest.raises(CaptureError, match=rf"offset {start}: .*exceeds the maximum") as error:
        list(iter_records(path))
    assert error.value.offset == start


# --- deframers -----------------------------------------------------------------------


@given(st.lists(st.binary(max_size=300), max_size=10), st.data())
def test_length_prefix_deframer_cuts_any_chunking_into_the_frames(
    frames: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(len(f).to_bytes(3, "big") + f for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    deframer = LengthPrefixDeframer(3)
    got: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        got += deframer.feed(stream[a:b])
    assert got == frames


@pytest.mark.parametrize("name", ["bpmux/rel", "rsio/0", "rsio/0+msgpack"])
@given(data=st.data())
@settings(max_examples=50)
def test_self_delimiting_deframers_cut_any_chunking_into_the_frames(
    name: str, data: st.DataObject
) -> None:
    protocol = get_protocol(name)
    codec = protocol.codec()
    strategies = __import__(f"{protocol.codec_module}.strategies", fromlist=["frames"])
    drawn = data.draw(st.lists(strategies.frames(), max_size=6))
    # Frames that need no negotiated context, and no Subscribed: the fixed element sizes it
    # announces are covered by the TCP test, where the stream really announces them.
    frames = [f for f, ctx in drawn if ctx == codec.Context()
              and not isinstance(f, (rsio_codec.Subscribed, rsio_codec.OnNextPacked))]  # fmt: skip
    encode = codec.encode_msgpack if protocol.encoding == "msgpack" else codec.encode
    encoded = [encode(f) for f in frames]
    stream = b"".join(encoded)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    deframer = protocol.deframer()
    got: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        got += deframer.feed(stream[a:b])
    assert got == encoded


def test_garbage_ends_a_direction_with_one_record_of_what_could_not_be_framed() -> None:
    deframer = get_protocol("bpmux/rel").deframer()
    good = bpmux_codec.encode(bpmux_codec.MainCredit(credit=5))
    got = deframer.feed(good + b"\xff" * 10)
    assert got[0] == good and got[1] == b"\xff" * 10 and len(got) == 2
    assert isinstance(deframer.failed, DecodeError)
    assert deframer.feed(b"more") == []
    huge = LengthPrefixDeframer(4)
    assert huge.feed(b"\xff\xff\xff\xff" + b"x" * (FAILED_TAIL_BYTES * 2))[0][:4] == b"\xff" * 4
    assert huge.failed is not None


def test_tap_refuses_a_capture_of_another_protocol(tmp_path: Path) -> None:
    async def main() -> None:
        client, server = memory_pair()
        with CaptureWriter(tmp_path / "c.wscap", "rsocket/1.0") as capture:
            with pytest.raises(ValueError, match="records rsocket/1.0; .* speaks bpmux/rel"):
                tap(client, capture, protocol="bpmux/rel", side="client")
        assert client.is_closing  # aborted: nobody else holds it
        server.close()

    run(main())


# --- real TCP exchanges --------------------------------------------------------------


class RecordingProxy:
    """A TCP proxy that forwards bytes both ways unchanged and keeps them: ``up`` what
    the client sent, ``down`` what the server sent.  ``finished()`` waits until both
    directions have ended (each side read the other's EOF)."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.up = bytearray()
        self.down = bytearray()
        self._tasks: list[asyncio.Task[None]] = []
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"tcp://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        try:
            await asyncio.gather(self._pump(reader, up_writer, self.up),
                                 self._pump(up_reader, writer, self.down))  # fmt: skip
        finally:
            for w in (writer, up_writer):
                w.close()
                try:
                    await w.wait_closed()
                except OSError:
                    pass

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    sink: bytearray) -> None:  # fmt: skip
        try:
            while data := await reader.read(65536):
                sink += data
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except OSError:
            writer.transport.abort()

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(self._accept(reader, writer)))

    async def finished(self) -> None:
        await asyncio.gather(*self._tasks)

    async def __aenter__(self) -> RecordingProxy:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def reframe(name: str, frames: list[bytes]) -> bytes:
    """The byte stream the frames were cut from (the length prefix put back)."""
    prefix = get_protocol(name).length_prefix
    return b"".join((len(f).to_bytes(prefix, "big") if prefix else b"") + f for f in frames)


def check_capture(name: str, folder: Path, proxy: RecordingProxy,
                  wire_decode: Callable[[bytes, str], list[Any]]) -> None:  # fmt: skip
    """The capture holds one client-side and one server-side connection whose frames
    are the bytes that crossed the proxy, and decode to what the generated stream
    decoder makes of those bytes."""
    files = capture_files(folder / "cap.wscap")
    assert [read_header(path).protocol for path in files] == [name]
    records = read_all(files)
    by_side: dict[str, list[CaptureRecord]] = {"client": [], "server": []}
    for record in records:
        by_side[record.side].append(record)
    assert len({r.connection_id for r in by_side["client"]}) == 1
    assert len({r.connection_id for r in by_side["server"]}) == 1
    assert by_side["client"][0].connection_id != by_side["server"][0].connection_id
    sent = {"client": bytes(proxy.up), "server": bytes(proxy.down)}
    assert sent["client"] and sent["server"]
    for side, own in by_side.items():
        for sender in ("client", "server"):
            frames = [r for r in own if r.sender == sender]
            assert reframe(name, [r.frame for r in frames]) == sent[sender], (side, sender)
            decoder = get_protocol(name).record_decoder()
            decoded = [decoder.decode(r.frame, r.connection_id, r.direction, r.sender)
                       for r in frames]  # fmt: skip
            assert decoded == wire_decode(sent[sender], sender), (side, sender)
    stamps = [r.timestamp_ns for r in records]
    assert all(stamp > 1_600_000_000 * 10**9 for stamp in stamps)


@asynccontextmanager
async def captured(folder: Path, name: str) -> AsyncIterator[CaptureWriter]:
    with CaptureWriter(folder / "cap.wscap", name) as capture:
        yield capture


def test_rsocket_tcp_exchange_is_captured_as_sent(tmp_path: Path) -> None:
    async def main() -> None:
        async with captured(tmp_path, "rsocket/1.0") as capture:
            async with await rsocket_serve("tcp://127.0.0.1:0", EchoResponder(),
                                           capture=capture) as server:  # fmt: skip
                async with RecordingProxy(port_of(server.url)) as proxy:
                    async with rsocket_connect(proxy.url, capture=capture) as rs:
                        assert (await rs.request_response(b"ping")).data == b"ping"
                        got = [p.data async for p in rs.request_stream(b"5", limit_rate=2)]
                        assert got == [b"0", b"1", b"2", b"3", b"4"]
                        await rs.fire_and_forget(b"bye")
                    await proxy.finished()
        check_capture("rsocket/1.0", tmp_path, proxy,
                      lambda data, sender: rsocket_codec.StreamDecoder().feed(data))  # fmt: skip

    run(main())


@pytest.mark.parametrize("encoding", ["binary", "msgpack"])
def test_rsio_tcp_exchange_is_captured_as_sent(tmp_path: Path, encoding: str) -> None:
    """With fixed-size elements, so decoding the records needs the connection's context."""

    async def ints(args: str) -> AsyncIterator[bytes]:
        for n in range(50):
            yield n.to_bytes(4, "big")

    async def words(args: str) -> AsyncIterator[bytes]:
        for word in (b"a", b"bb", b"ccc"):
            yield word

    name = "rsio/0+msgpack" if encoding == "msgpack" else "rsio/0"

    async def main() -> None:
        publishers: dict[str, rsio.Publisher | Any] = {
            "ints": rsio.Publisher(ints, element_size=4),
            "words": words,
        }
        async with captured(tmp_path, name) as capture:
            async with await rsio.serve("tcp://127.0.0.1:0", publishers=publishers,
                                        encoding=encoding, packed=True,  # type: ignore[arg-type]
                                        capture=capture) as server:  # fmt: skip
                async with RecordingProxy(port_of(server.url)) as proxy:
                    async with await rsio.connect(proxy.url, capture=capture,
                                                  encoding=encoding) as peer:  # type: ignore[arg-type]  # fmt: skip
                        assert len([e async for e in peer.subscribe("ints", limit_rate=16)]) == 50
                        assert [e async for e in peer.subscribe("words")] == [b"a", b"bb", b"ccc"]
                    await proxy.finished()

        def decode(data: bytes, sender: str) -> list[Any]:
            ctx = rsio_codec.Context()
            decoder: Any = (rsio_codec.MsgpackStreamDecoder(ctx=ctx) if encoding == "msgpack"
                            else rsio_codec.StreamDecoder(ctx=ctx))  # fmt: skip
            decoder.after_frame = lambda frame, size: rsio_codec.track_context(frame, ctx)
            return list(decoder.feed(data))

        check_capture(name, tmp_path, proxy, decode)

    run(main())


def test_bpmux_tcp_exchange_is_captured_as_sent(tmp_path: Path) -> None:
    class Upper(bpmux.Handler):
        async def on_request(self, data: bytes) -> bytes:
            return data.upper()

    async def main() -> None:
        async with captured(tmp_path, "bpmux/rel") as capture:
            async with bpmux.serve("tcp://127.0.0.1:0", Upper(), capture=capture) as server:
                async with RecordingProxy(port_of(server.url)) as proxy:
                    async with bpmux.connect(proxy.url, capture=capture) as peer:
                        assert await peer.request(b"abc") == b"ABC"
                        assert await peer.request(b"x" * 3000) == b"X" * 3000
                    await proxy.finished()
        check_capture("bpmux/rel", tmp_path, proxy,
                      lambda data, sender: bpmux_codec.StreamDecoder().feed(data))  # fmt: skip

    run(main())


@pytest.mark.usefixtures("rabbitmq_broker")
def test_rabbitmq_stream_exchange_with_the_broker_is_captured_as_sent(tmp_path: Path) -> None:
    from wirestream.runtime.rabbitmq_stream.aio import connect as rabbitmq_connect
    from tests.support.rabbitmq_stream_client_support import PORT, fresh_stream, uri

    async def main() -> None:
        async with captured(tmp_path, "rabbitmq_stream/1") as capture:
            async with RecordingProxy(PORT) as proxy:
                port = port_of(proxy.url)
                client = await rabbitmq_connect(uri(port), capture=capture, reconnect=False)
                async with client:
                    async with fresh_stream(client, prefix="ws-capture") as stream:
                        producer = await client.producer(stream)
                        await asyncio.gather(*[await producer.send(b"m%d" % n) for n in range(5)])
                        await producer.close()
                await proxy.finished()
        files = capture_files(tmp_path / "cap.wscap")
        records = read_all(files)
        assert {r.side for r in records} == {"client"}
        for sender, sent in (("client", bytes(proxy.up)), ("server", bytes(proxy.down))):
            frames = [r for r in records if r.sender == sender]
            assert reframe("rabbitmq_stream/1", [r.frame for r in frames]) == sent
            decoder = get_protocol("rabbitmq_stream/1").record_decoder()
            decoded = [decoder.decode(r.frame, sender=r.sender) for r in frames]
            wire = rabbitmq_codec.StreamDecoder(sender=sender).feed(sent)
            assert decoded == wire and decoded
        names = {type(decoder.decode(r.frame, sender=r.sender)).__name__ for r in records}
        assert {"Publish", "PublishConfirm", "CreateRequest", "DeleteResponse"} <= names

    run(main())


def test_each_connection_of_a_server_gets_its_own_id(tmp_path: Path) -> None:
    async def main() -> None:
        async with captured(tmp_path, "rsocket/1.0") as capture:
            async with await rsocket_serve("tcp://127.0.0.1:0", EchoResponder(),
                                           capture=capture) as server:  # fmt: skip
                for _ in range(3):
                    async with rsocket_connect(server.url) as rs:
                        await rs.request_response(b"x")
        ids = {r.connection_id for r in read_all(capture_files(tmp_path / "cap.wscap"))}
        assert len(ids) == 3

    run(main())


def test_websocket_connections_are_captured_without_the_transport_framing(tmp_path: Path) -> None:
    """Over WebSocket each message is one frame with no length prefix on the wire; the
    tap sees the engines' length-prefixed form, so the records are the same frames."""

    async def main() -> None:
        async with captured(tmp_path, "rsocket/1.0") as capture:
            async with await rsocket_serve("ws://127.0.0.1:0/rs", EchoResponder(),
                                           capture=capture) as server:  # fmt: skip
                async with rsocket_connect(server.url, capture=capture) as rs:
                    assert (await rs.request_response(b"over ws")).data == b"over ws"
                # the server has read everything the client sent once its peer is gone
                async with asyncio.timeout(10):
                    while server.peers:
                        await asyncio.sleep(0.005)

    run(main())
    records = read_all(capture_files(tmp_path / "cap.wscap"))
    decoded = {(r.side, r.sender): [rsocket_codec.decode(x.frame) for x in records
                                    if (x.side, x.sender) == (r.side, r.sender)]
               for r in records}  # fmt: skip
    assert decoded[("client", "client")] == decoded[("server", "client")]
    assert decoded[("client", "server")] == decoded[("server", "server")]
    assert [type(f).__name__ for f in decoded[("client", "client")]][:2] == [
        "Setup", "RequestResponse"]  # fmt: skip
    assert decoded[("client", "server")][0].data == b"over ws"
